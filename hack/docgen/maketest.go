package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// makeTestRun is one record of hack/time-make-test.sh.
type makeTestRun struct {
	Commit   string `json:"commit"`
	Started  string `json:"started"`
	GoCaches string `json:"goCaches"`
	Machine  struct {
		Cores    int   `json:"cores"`
		RAMBytes int64 `json:"ramBytes"`
	} `json:"machine"`
	Result  string `json:"result"`
	Seconds int    `json:"seconds"`
	Phases  []struct {
		Name    string `json:"name"`
		Seconds int    `json:"seconds"`
	} `json:"phases"`
	SlowestPackages []struct {
		Package string  `json:"package"`
		Seconds float64 `json:"seconds"`
	} `json:"slowestPackages"`
}

// makeTestTimes writes docs/reference/make-test.md from the records of
// bench-results/make-test/, oldest first.
func makeTestTimes(root string, files map[string][]byte) error {
	paths, err := filepath.Glob(filepath.Join(root, "bench-results", "make-test", "*.json"))
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header("bench-results/make-test/*.json, the records of hack/time-make-test.sh"))
	b.WriteString("# How long `make test` takes\n\n" +
		"Each row is one `make test` as CI runs it (`CI=true .ci/run`) on a fresh clone of the commit, timed by " +
		"`hack/time-make-test.sh` on a quiet machine, with Go's module and build caches empty (as on a new machine) or " +
		"warm. Phases: **tools** (`hack/build-tools.sh`: kube-apiserver, etcd, Traefik, Helm, external-dns, Prometheus " +
		"and promtool from the Go module proxy), **checks** (`make verify`: gofmt, go vet, generated code, the release " +
		"check), **tests** (`go test` of every package, with the real Keystone + Neutron up), **e2e and fuzz** " +
		"(`make test-e2e` on a real node, the fuzz targets beside it). Minutes.\n\n" +
		"| started (UTC) | commit | Go caches | machine | result | total | tools | checks | tests | e2e and fuzz | slowest packages (s) |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range paths {
		name := filepath.Base(p)
		m := resultName.FindStringSubmatch(name)
		if m == nil {
			return fmt.Errorf("bench-results/make-test/%s: want <UTC start>-<commit>.json, as hack/time-make-test.sh writes", name)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var r makeTestRun
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("bench-results/make-test/%s: %w", name, err)
		}
		if r.Commit != m[2] {
			return fmt.Errorf("bench-results/make-test/%s: its commit is %q, its name says %q", name, r.Commit, m[2])
		}
		phases := map[string]string{}
		for _, ph := range r.Phases {
			phases[ph.Name] = minutes(ph.Seconds)
		}
		var slow []string
		for _, s := range r.SlowestPackages {
			slow = append(slow, fmt.Sprintf("%s %.0f", strings.TrimPrefix(s.Package, "test/integration/"), s.Seconds))
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %d cores, %.0f GiB | %s | **%s** | %s | %s | %s | %s | %s |\n",
			strings.Replace(strings.TrimSuffix(r.Started, "Z"), "T", " ", 1), r.Commit, r.GoCaches, r.Machine.Cores,
			float64(r.Machine.RAMBytes)/(1<<30), r.Result, minutes(r.Seconds),
			phases["tools"], phases["checks"], phases["tests"], phases["e2e and fuzz"], strings.Join(slow, ", "))
	}
	files["docs/reference/make-test.md"] = []byte(b.String())
	return nil
}

// minutes is s seconds as minutes and seconds.
func minutes(s int) string {
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
