package prom

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// exposition is a tiny /metrics endpoint in this process: the manager's
// build info, a process start time a test changes as a restart would, and
// a gauge of the test's own rule.
type exposition struct {
	mu    sync.Mutex
	start float64
	value float64
}

func (e *exposition) set(f func(e *exposition)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e)
}

func (e *exposition) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, `# TYPE controller_manager_build_info gauge
controller_manager_build_info{build_date="2030-01-01T00:00:00Z",commit="abc",go_version="go1.26.8",version="v0.0.0-test"} 1
# TYPE process_start_time_seconds gauge
process_start_time_seconds %g
# TYPE helper_test_value gauge
helper_test_value %g
`, e.start, e.value)
}

const testRules = `groups:
- name: helper-test
  rules:
  - alert: HelperTestValueHigh
    expr: helper_test_value > 1
    for: 2s
    labels:
      severity: warning
    annotations:
      summary: 'helper_test_value is {{ $value }}'
`

// A real Prometheus started by the helper scrapes an endpoint of this
// process and evaluates the shipped rules with a rule of the test's own:
// in the steady state nothing fires; the test's alert goes pending, fires
// after its for, and resolves when the value drops; two restarts (the
// process start time changing twice) fire the shipped
// ControllerManagerRestarting, read from Prometheus's own API.
func TestPrometheusScrapesEvaluatesAndReportsAlerts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exp := &exposition{start: 1000}
	srv := httptest.NewServer(exp)
	defer srv.Close()

	dir := t.TempDir()
	own := filepath.Join(dir, "test-rules.yaml")
	if err := os.WriteFile(own, []byte(testRules), 0o644); err != nil {
		t.Fatal(err)
	}
	shipped, err := RulesFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(ctx, Options{
		Targets:   []Target{{Addr: strings.TrimPrefix(srv.URL, "http://"), Labels: map[string]string{"namespace": "controller-manager-system"}}},
		RuleFiles: []string{own, shipped},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") {
		t.Errorf("Prometheus listens at %s, want loopback", p.URL)
	}

	// Scraped: the build info is in, with the target's labels.
	waitQuery(ctx, t, p, `controller_manager_build_info{job="controller-manager",namespace="controller-manager-system"}`, 1)
	// ControllerManagerMetricsAbsent pends from the evaluations before the
	// first scrape until one after it.
	var active []Alert
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		active, err = p.Alerts(ctx)
		return err == nil && len(active) == 0, nil
	}); err != nil {
		t.Fatalf("still active once scraped: %v", active)
	}
	// A few evaluations of the steady state: nothing fires, nothing pends.
	evalsFrom := time.Now()
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		active, err := p.Alerts(ctx)
		if err != nil {
			return false, err
		}
		if len(active) > 0 {
			return false, fmt.Errorf("active in the steady state: %v", active)
		}
		return time.Since(evalsFrom) > 3*time.Second, nil
	}); err != nil {
		t.Fatal(err)
	}
	if targets, err := p.Targets(ctx); err != nil || len(targets) != 1 || targets[0].Health != "up" {
		t.Errorf("targets %+v (%v), want the endpoint, up", targets, err)
	}

	// The test's own rule: pending for its 2s, then firing, then resolved.
	exp.set(func(e *exposition) { e.value = 5 })
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		active, err := p.Alerts(ctx)
		return err == nil && len(active) == 1 && active[0].Name() == "HelperTestValueHigh" && active[0].State == "pending", nil
	}); err != nil {
		t.Errorf("HelperTestValueHigh never pending: %v", err)
	}
	a, err := p.WaitFiring(ctx, "HelperTestValueHigh", map[string]string{"severity": "warning", "namespace": "controller-manager-system"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Annotations["summary"] != "helper_test_value is 5" {
		t.Errorf("summary %q, want the rendered template", a.Annotations["summary"])
	}
	exp.set(func(e *exposition) { e.value = 0 })
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		active, err := p.Alerts(ctx)
		return err == nil && len(active) == 0, nil
	}); err != nil {
		t.Errorf("HelperTestValueHigh not resolved: %v", err)
	}

	// Two restarts, each scraped: the shipped rule fires.
	for _, start := range []float64{2000, 3000} {
		exp.set(func(e *exposition) { e.start = start })
		waitQuery(ctx, t, p, `process_start_time_seconds{job="controller-manager"}`, start)
	}
	a, err = p.WaitFiring(ctx, "ControllerManagerRestarting", map[string]string{"job": "controller-manager", "namespace": "controller-manager-system"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "restarted 2 times in 30 minutes"; !strings.Contains(a.Annotations["summary"], want) {
		t.Errorf("summary %q does not say %q", a.Annotations["summary"], want)
	}
	if !strings.HasSuffix(a.Annotations["runbook_url"], "#controllermanagerrestarting") {
		t.Errorf("runbook_url %q", a.Annotations["runbook_url"])
	}
}

// waitQuery waits until expr's one series has the value want.
func waitQuery(ctx context.Context, t *testing.T, p *Prometheus, expr string, want float64) {
	t.Helper()
	var got []Sample
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = p.Query(ctx, expr)
		return err == nil && len(got) == 1 && got[0].Value == want, nil
	}); err != nil {
		t.Fatalf("%s = %+v, want %v: %v; Prometheus's log:\n%s", expr, got, want, err, p.Logs())
	}
}

// A rule file that does not load keeps Start from returning a Prometheus
// that would evaluate nothing, and says why.
func TestStartRefusesABadRuleFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("groups:\n- name: bad\n  rules:\n  - alert: Bad\n    expr: sum(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Start(ctx, Options{RuleFiles: []string{bad}})
	if err == nil {
		p.Stop()
		t.Fatal("started with a rule file that does not parse")
	}
	if !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("error %q does not name the file", err)
	}
}

// SetTargets makes a running Prometheus scrape other targets: a job added
// is scraped, an alert of another job keeps its state through the reload
// (the fault suite's tests add and remove their jobs while others' alerts
// pend), and a job removed is scraped no more. The scaled copy of the
// shipped rules loads beside them.
func TestSetTargetsKeepsAlertsThroughReloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first, second := &exposition{start: 1000}, &exposition{start: 1000}
	srv1, srv2 := httptest.NewServer(first), httptest.NewServer(second)
	defer srv1.Close()
	defer srv2.Close()
	dir := t.TempDir()
	own := filepath.Join(dir, "test-rules.yaml")
	if err := os.WriteFile(own, []byte(testRules), 0o644); err != nil {
		t.Fatal(err)
	}
	scaled, err := ScaledRulesFile(dir, 30)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(ctx, Options{RuleFiles: []string{own, scaled}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	target := func(job string, srv *httptest.Server) Target {
		return Target{Job: job, Addr: strings.TrimPrefix(srv.URL, "http://")}
	}

	if err := p.SetTargets(ctx, []Target{target("first", srv1)}); err != nil {
		t.Fatal(err)
	}
	first.set(func(e *exposition) { e.value = 5 })
	a, err := p.WaitFiring(ctx, "HelperTestValueHigh", map[string]string{"job": "first"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetTargets(ctx, []Target{target("first", srv1), target("second", srv2)}); err != nil {
		t.Fatal(err)
	}
	waitQuery(ctx, t, p, `controller_manager_build_info{job="second"}`, 1)
	if err := p.Evaluated(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	firing, err := p.Firing(ctx)
	if err != nil || len(firing) != 1 || !firing[0].ActiveAt.Equal(a.ActiveAt) {
		t.Errorf("after adding a job: firing %v (%v), want %s still, active since %s", firing, err, a.Name(), a.ActiveAt)
	}
	first.set(func(e *exposition) { e.value = 0 })
	if _, err := p.WaitResolved(ctx, "HelperTestValueHigh", map[string]string{"job": "first"}); err != nil {
		t.Error(err)
	}

	if err := p.SetTargets(ctx, []Target{target("second", srv2)}); err != nil {
		t.Fatal(err)
	}
	if targets, err := p.Targets(ctx); err != nil || len(targets) != 1 || !strings.Contains(targets[0].ScrapeURL, srv2.Listener.Addr().String()) {
		t.Errorf("targets %+v (%v), want the second alone", targets, err)
	}
	// Its last sample ages: no scrape since. (Prometheus writes no
	// staleness marker for a job removed from its configuration: the
	// series stays visible for its lookback, 5 minutes.)
	waitQuery(ctx, t, p, `time() - timestamp(helper_test_value{job="first"}) > bool 3`, 1)
}
