// Command scraper is the e2e tests' client Pod: it GETs a URL over HTTPS,
// as Prometheus scrapes the manager's /metrics through its Service, with
// the Pod's ServiceAccount token as bearer token when -token-file names one,
// and prints the response's status and the metric names of its body.
// Like Prometheus, which scrapes again at the next interval, it tries again
// when no response comes (a connection to an endpoint that just went away,
// while kube-proxy's rules catch up), up to -attempts times.
//
// The manager's certificate is self-signed unless one is mounted
// (docs/deploying.md), so the server is not verified (as a ServiceMonitor
// with insecureSkipVerify); what is tested is who may read, not TLS trust.
package main

import (
	"bufio"
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	url := flag.String("url", "", "the URL to GET (https://...)")
	tokenFile := flag.String("token-file", "", "file holding the bearer token to send; empty sends none")
	attempts := flag.Int("attempts", 10, "how many times to try when no response comes")
	flag.Parse()
	for i := 1; ; i++ {
		err := scrape(*url, *tokenFile)
		if err == nil {
			return
		}
		fmt.Fprintf(os.Stderr, "scraper: attempt %d: %v\n", i, err)
		if i == *attempts {
			os.Exit(1)
		}
		time.Sleep(time.Second)
	}
}

func scrape(url, tokenFile string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if tokenFile != "" {
		token, err := os.ReadFile(tokenFile)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	c := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // see the package comment
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var names []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.Sort(names)
	fmt.Printf("status: %d\n", resp.StatusCode)
	fmt.Printf("metrics: %s\n", strings.Join(names, " "))
	return nil
}
