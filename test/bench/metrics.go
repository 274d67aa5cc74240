package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is a scrape: samples in exposition order.
type metrics []sample

// parseMetrics parses the Prometheus text exposition format (comments and
// blank lines skipped; timestamps ignored).
func parseMetrics(r io.Reader) (metrics, error) {
	var out metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d %q: %w", lineNo, line, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return out, nil
}

func parseSample(line string) (sample, error) {
	s := sample{}
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return s, fmt.Errorf("no metric name and value")
	}
	s.name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		s.labels = map[string]string{}
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if rest == "" {
				return s, fmt.Errorf("unterminated labels")
			}
			if rest[0] == '}' {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return s, fmt.Errorf("bad label near %q", rest)
			}
			key := strings.TrimSpace(rest[:eq])
			rest = rest[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[j])
					}
					continue
				}
				if c == '"' {
					rest = rest[j+1:]
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value of %q", key)
			}
			s.labels[key] = val.String()
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("bad value %q: %w", fields[0], err)
	}
	s.value = v
	return s, nil
}

// sum adds the values of the samples named name whose labels include match.
func (m metrics) sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range m {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// has reports whether a sample named name exists.
func (m metrics) has(name string) bool {
	for _, s := range m {
		if s.name == name {
			return true
		}
	}
	return false
}

// label returns the value of label key on the first sample named name.
func (m metrics) label(name, key string) string {
	for _, s := range m {
		if s.name == name {
			return s.labels[key]
		}
	}
	return ""
}

// writeVerbs are the apiserver_request_total verbs that change state.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// requestCounts is apiserver_request_total summed by "VERB resource[/subresource]",
// plus the CPU seconds used by the API server and etcd (keys cpuAPIServer
// and cpuEtcd, whose "verb" is not a write).
type requestCounts map[string]float64

const (
	cpuAPIServer = "CPU kube-apiserver"
	cpuEtcd      = "CPU etcd"
)

// controlPlaneCPU is the CPU seconds of the API server and etcd.
func (c requestCounts) controlPlaneCPU() float64 { return c[cpuAPIServer] + c[cpuEtcd] }

// apiRequests reads apiserver_request_total and the process CPU from the
// API server's /metrics, and etcd's process CPU from etcdMetrics.
func apiRequests(ctx context.Context, rc rest.Interface, etcdMetrics string) (requestCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	m, err := parseMetrics(strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	out := requestCounts{cpuAPIServer: m.sum("process_cpu_seconds_total", nil)}
	if etcdMetrics != "" {
		em, err := scrape(ctx, etcdMetrics)
		if err != nil {
			return nil, err
		}
		out[cpuEtcd] = em.sum("process_cpu_seconds_total", nil)
	}
	for _, s := range m {
		if s.name != "apiserver_request_total" {
			continue
		}
		res := s.labels["resource"]
		if sub := s.labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		verb := s.labels["verb"]
		if verb == "DELETE" && s.labels["scope"] != "resource" {
			// A deletecollection is a DELETE on the collection.
			verb = "DELETECOLLECTION"
		}
		out[verb+" "+res] += s.value
	}
	if !m.has("apiserver_request_total") {
		return nil, fmt.Errorf("the API server's /metrics has no apiserver_request_total")
	}
	return out, nil
}

// diff returns after - before, keeping non-zero entries.
func (after requestCounts) diff(before requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// writes sums the write verbs on the given resources (e.g. "ingresses").
func (c requestCounts) writes(resources ...string) int64 {
	var n float64
	for k, v := range c {
		verb, res, _ := strings.Cut(k, " ")
		if !writeVerbs[verb] {
			continue
		}
		for _, r := range resources {
			if res == r {
				n += v
			}
		}
	}
	return int64(n)
}

// byVerb returns the write counts on resource by verb.
func (c requestCounts) byVerb(resource string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range c {
		verb, res, _ := strings.Cut(k, " ")
		if writeVerbs[verb] && res == resource {
			out[verb] += int64(v)
		}
	}
	return out
}

// scrape reads a Prometheus endpoint over loopback HTTP.
func scrape(ctx context.Context, url string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
