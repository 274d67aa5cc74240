// Package prom runs a real Prometheus (bin/prometheus, built from the
// pinned module by hack/build-tools.sh prometheus) on 127.0.0.1 for tests:
// it scrapes the targets it is given, evaluates rule files (the manager's
// shipped alert rules: RulesFile), and tells which alerts are pending or
// firing, from its own HTTP API (/api/v1/alerts), as an operator's
// Prometheus would.
package prom

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// Target is one endpoint Prometheus scrapes.
type Target struct {
	// Job is its job label; empty: "controller-manager".
	Job string
	// Addr is host:port: on loopback, or (the node e2e, Prometheus run in
	// the node's network namespace) a Pod's address.
	Addr string
	// Path is the metrics path; empty: /metrics.
	Path string
	// HTTPS scrapes over TLS, without verifying the certificate (the
	// manager's is self-signed unless given one), as the ServiceMonitor of
	// config/prometheus does.
	HTTPS bool
	// BearerTokenFile, when set, is sent as the bearer token of every
	// scrape (a ServiceAccount token bound to the metrics-reader role).
	BearerTokenFile string
	// Labels are added to every series of the target (e.g. namespace, as
	// a ServiceMonitor's scrape adds it).
	Labels map[string]string
}

// Options configure Start.
type Options struct {
	// Binary is the prometheus executable; empty: <repo>/bin/prometheus.
	Binary string
	// Dir holds the configuration, the TSDB and the log; empty: a new
	// temporary directory, removed by Stop.
	Dir string
	// Targets are scraped every ScrapeInterval.
	Targets []Target
	// RuleFiles are loaded and evaluated every EvaluationInterval.
	RuleFiles []string
	// ScrapeInterval and EvaluationInterval: 0 means 1s, so that an alert
	// fires within its `for` and a second or two.
	ScrapeInterval, EvaluationInterval time.Duration
}

// Prometheus is a running Prometheus.
type Prometheus struct {
	// URL is its HTTP API and UI, http://127.0.0.1:<port>.
	URL string

	proc    *framework.Process
	dir     string
	rmDir   bool
	stop    sync.Once
	cfgPath string

	mu   sync.Mutex // SetTargets
	opts Options
}

// RulesFile writes the manager's shipped alert rules (the spec of
// config/prometheus's PrometheusRule, framework.AlertRulesFile) to
// dir/alerts.yaml and returns its path, for Options.RuleFiles.
func RulesFile(dir string) (string, error) {
	b, err := framework.AlertRulesFile()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "alerts.yaml")
	return p, os.WriteFile(p, b, 0o644)
}

// ScaledRulesFile writes framework.ScaledAlertRulesFile(factor), the
// shipped rules with every duration divided by factor and their alerts
// labelled framework.TimeScaleLabel, to dir/alerts-scaled.yaml and returns
// its path, for Options.RuleFiles (beside RulesFile's, or alone).
func ScaledRulesFile(dir string, factor int) (string, error) {
	b, err := framework.ScaledAlertRulesFile(factor)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "alerts-scaled.yaml")
	return p, os.WriteFile(p, b, 0o644)
}

// Start starts Prometheus with o on a free loopback port and waits until
// it is ready and has loaded every rule file without error.
func Start(ctx context.Context, o Options) (*Prometheus, error) {
	if o.Binary == "" {
		root, err := framework.RepoRoot()
		if err != nil {
			return nil, err
		}
		o.Binary = filepath.Join(root, "bin", "prometheus")
	}
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, fmt.Errorf("%s not found: run `make tools` (hack/build-tools.sh prometheus) first", o.Binary)
	}
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = time.Second
	}
	if o.EvaluationInterval <= 0 {
		o.EvaluationInterval = time.Second
	}
	p := &Prometheus{dir: o.Dir, opts: o}
	if p.dir == "" {
		d, err := os.MkdirTemp("", "prometheus-")
		if err != nil {
			return nil, err
		}
		p.dir, p.rmDir = d, true
	}
	cfg, err := config(o)
	if err != nil {
		p.cleanup()
		return nil, err
	}
	cfgPath := filepath.Join(p.dir, "prometheus.yml")
	p.cfgPath = cfgPath
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		p.cleanup()
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		p.cleanup()
		return nil, err
	}
	p.URL = "http://" + addr
	args := []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(p.dir, "data"),
		"--storage.tsdb.retention.time=1d",
		"--web.listen-address=" + addr,
		"--log.level=info",
	}
	p.proc, err = framework.StartProcess("prometheus", o.Binary, args, framework.ProcessOptions{
		Dir: p.dir, LogPath: filepath.Join(p.dir, "prometheus.log"),
		SysProcAttr: processAttr()})
	if err != nil {
		p.cleanup()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.proc.Exited(); exited {
			return false, fmt.Errorf("prometheus exited: %v", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/-/ready", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err == nil {
		err = p.rulesLoaded(ctx, len(o.RuleFiles))
	}
	if err != nil {
		logs := p.Logs()
		p.Stop()
		return nil, fmt.Errorf("prometheus not ready: %w; its log:\n%s", err, logs)
	}
	return p, nil
}

// SetTargets makes Prometheus scrape targets instead of the targets it
// had: it rewrites its configuration, makes it reload it (SIGHUP, as
// `kill -HUP` does), and waits until its active targets are these. The
// jobs whose targets did not change keep being scraped without a gap, and
// the rules keep their alerts' state. A job removed is scraped no more,
// but Prometheus writes no staleness marker for it: its series stay
// visible for the lookback (5 minutes), so read a job's alerts while it is
// scraped. It is safe for concurrent use.
func (p *Prometheus) SetTargets(ctx context.Context, targets []Target) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.opts
	o.Targets = append([]Target(nil), targets...)
	cfg, err := config(o)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.cfgPath, cfg, 0o644); err != nil {
		return err
	}
	if err := p.proc.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("reloading prometheus: %w", err)
	}
	want := map[string]bool{}
	for _, t := range o.Targets {
		want[scrapeURL(t)] = true
	}
	var last []TargetHealth
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.proc.Exited(); exited {
			return false, fmt.Errorf("prometheus exited: %v", err)
		}
		active, err := p.Targets(ctx)
		if err != nil {
			return false, nil
		}
		last = active
		seen := map[string]bool{}
		for _, a := range active {
			if !want[a.ScrapeURL] {
				return false, nil
			}
			seen[a.ScrapeURL] = true
		}
		return len(seen) == len(want), nil
	})
	if err != nil {
		return fmt.Errorf("prometheus did not take its new targets: %w; active: %+v; its log:\n%s", err, last, p.Logs())
	}
	p.opts = o
	return nil
}

// scrapeURL is the URL Prometheus reports for scraping t.
func scrapeURL(t Target) string {
	scheme, path := "http", t.Path
	if t.HTTPS {
		scheme = "https"
	}
	if path == "" {
		path = "/metrics"
	}
	return scheme + "://" + t.Addr + path
}

// config returns the prometheus.yml of o.
func config(o Options) ([]byte, error) {
	type tlsConfig struct {
		InsecureSkipVerify bool `json:"insecure_skip_verify"`
	}
	type authorization struct {
		CredentialsFile string `json:"credentials_file"`
	}
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type scrapeConfig struct {
		JobName        string         `json:"job_name"`
		Scheme         string         `json:"scheme"`
		MetricsPath    string         `json:"metrics_path"`
		TLSConfig      *tlsConfig     `json:"tls_config,omitempty"`
		Authorization  *authorization `json:"authorization,omitempty"`
		StaticConfigs  []staticConfig `json:"static_configs"`
		ScrapeInterval string         `json:"scrape_interval"`
		ScrapeTimeout  string         `json:"scrape_timeout"`
	}
	var scrapes []scrapeConfig
	for i, t := range o.Targets {
		if _, _, err := net.SplitHostPort(t.Addr); err != nil {
			return nil, fmt.Errorf("target %d: %w", i, err)
		}
		sc := scrapeConfig{JobName: t.Job, Scheme: "http", MetricsPath: t.Path,
			StaticConfigs:  []staticConfig{{Targets: []string{t.Addr}, Labels: t.Labels}},
			ScrapeInterval: o.ScrapeInterval.String(), ScrapeTimeout: o.ScrapeInterval.String()}
		if sc.JobName == "" {
			sc.JobName = "controller-manager"
		}
		if sc.MetricsPath == "" {
			sc.MetricsPath = "/metrics"
		}
		if t.HTTPS {
			sc.Scheme, sc.TLSConfig = "https", &tlsConfig{InsecureSkipVerify: true}
		}
		if t.BearerTokenFile != "" {
			sc.Authorization = &authorization{CredentialsFile: t.BearerTokenFile}
		}
		// Several targets of one job share one scrape config.
		if i > 0 && scrapes[len(scrapes)-1].JobName == sc.JobName && scrapes[len(scrapes)-1].Scheme == sc.Scheme {
			last := &scrapes[len(scrapes)-1]
			last.StaticConfigs = append(last.StaticConfigs, sc.StaticConfigs...)
			continue
		}
		scrapes = append(scrapes, sc)
	}
	return yaml.Marshal(map[string]any{
		"global": map[string]any{
			"scrape_interval":     o.ScrapeInterval.String(),
			"evaluation_interval": o.EvaluationInterval.String(),
		},
		"rule_files":     o.RuleFiles,
		"scrape_configs": scrapes,
	})
}

var client = &http.Client{Timeout: 5 * time.Second}

// get GETs path of the API into v (the "data" of its answer).
func (p *Prometheus) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("GET %s: %s: %w", path, resp.Status, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body.Error)
	}
	return json.Unmarshal(body.Data, v)
}

// Alert is an alert as Prometheus's API reports it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// State is "pending" (its `for` not yet over) or "firing".
	State    string    `json:"state"`
	ActiveAt time.Time `json:"activeAt"`
	Value    string    `json:"value"`
}

// Name is the alert's name.
func (a Alert) Name() string { return a.Labels["alertname"] }

func (a Alert) String() string {
	return fmt.Sprintf("%s %s %v (active since %s, value %s)", a.Name(), a.State, a.Labels, a.ActiveAt.Format(time.RFC3339), a.Value)
}

// Alerts returns the alerts pending or firing now (/api/v1/alerts).
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := p.get(ctx, "/api/v1/alerts", &data); err != nil {
		return nil, err
	}
	return data.Alerts, nil
}

// Firing returns the alerts firing now.
func (p *Prometheus) Firing(ctx context.Context) ([]Alert, error) {
	all, err := p.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var out []Alert
	for _, a := range all {
		if a.State == "firing" {
			out = append(out, a)
		}
	}
	return out, nil
}

// WaitFiring waits until the alert name fires with labels including match,
// and returns it; ctx bounds the wait. The error lists what was active.
func (p *Prometheus) WaitFiring(ctx context.Context, name string, match map[string]string) (Alert, error) {
	var found Alert
	var last []Alert
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		firing, err := p.Firing(ctx)
		if err != nil {
			return false, nil
		}
		last = firing
		for _, a := range firing {
			if a.Name() == name && includes(a.Labels, match) {
				found = a
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return Alert{}, fmt.Errorf("%s%v not firing: %w; firing: %v", name, match, err, last)
	}
	return found, nil
}

// WaitResolved waits until no alert name with labels including match is
// pending or firing, and returns when it saw that; ctx bounds the wait. The
// error lists what was active.
func (p *Prometheus) WaitResolved(ctx context.Context, name string, match map[string]string) (time.Time, error) {
	var last []Alert
	var at time.Time
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		all, err := p.Alerts(ctx)
		if err != nil {
			return false, nil
		}
		last, at = all, time.Now()
		for _, a := range all {
			if a.Name() == name && includes(a.Labels, match) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("%s%v still active: %w; active: %v", name, match, err, last)
	}
	return at, nil
}

// Evaluated waits until Prometheus has evaluated every rule group after
// after (their lastEvaluation, /api/v1/rules): an alert not active then is
// not active on the data scraped before after.
func (p *Prometheus) Evaluated(ctx context.Context, after time.Time) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var data struct {
			Groups []struct {
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"groups"`
		}
		if err := p.get(ctx, "/api/v1/rules", &data); err != nil {
			return false, nil
		}
		for _, g := range data.Groups {
			if !g.LastEvaluation.After(after) {
				return false, nil
			}
		}
		return len(data.Groups) > 0, nil
	})
}

func includes(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TargetHealth is a scrape target's state (/api/v1/targets).
type TargetHealth struct {
	ScrapeURL string `json:"scrapeUrl"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// Targets returns the active targets and their last scrape's outcome.
func (p *Prometheus) Targets(ctx context.Context) ([]TargetHealth, error) {
	var data struct {
		ActiveTargets []TargetHealth `json:"activeTargets"`
	}
	if err := p.get(ctx, "/api/v1/targets", &data); err != nil {
		return nil, err
	}
	return data.ActiveTargets, nil
}

// Query evaluates the instant query expr now and returns each series'
// labels and value (/api/v1/query).
func (p *Prometheus) Query(ctx context.Context, expr string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: a %s, not a vector", expr, data.ResultType)
	}
	var out []Sample
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", expr, r.Value[1], err)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}

// Sample is a series of a query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// rulesLoaded waits until Prometheus reports the groups of files rule
// files, each rule healthy so far (/api/v1/rules): a file it could not
// load is in its log, not in its API.
func (p *Prometheus) rulesLoaded(ctx context.Context, files int) error {
	if files == 0 {
		return nil
	}
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var data struct {
			Groups []struct {
				File  string `json:"file"`
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := p.get(ctx, "/api/v1/rules", &data); err != nil {
			return false, nil
		}
		seen := map[string]bool{}
		for _, g := range data.Groups {
			seen[g.File] = true
			for _, r := range g.Rules {
				if r.Health == "err" {
					return false, fmt.Errorf("rule %s of %s: %s", r.Name, g.File, r.LastError)
				}
			}
		}
		return len(seen) >= files, nil
	})
}

// Stop terminates Prometheus and removes its temporary directory.
func (p *Prometheus) Stop() {
	p.stop.Do(func() {
		if p.proc != nil {
			_ = p.proc.Stop(10 * time.Second)
		}
		p.cleanup()
	})
}

func (p *Prometheus) cleanup() {
	if p.rmDir {
		_ = os.RemoveAll(p.dir)
	}
}

// Logs returns Prometheus's log so far (the last 64 KiB).
func (p *Prometheus) Logs() string { return p.proc.Logs(64 << 10) }

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
