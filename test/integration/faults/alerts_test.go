package faults

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/prom"
)

// The alerts the manager ships, against the real manager under the faults
// they name. One real Prometheus serves the package (bin/prometheus,
// started by the first test that needs it): it scrapes the managers of
// these tests over HTTPS with a ServiceAccount token bound to
// config/default's metrics-reader ClusterRole, as config/prometheus's
// ServiceMonitor does, each test's managers as a job of their own with the
// label namespace=<the test's namespace>; and it evaluates two rule files,
// the shipped rules as they are, and the same rules with time compressed
// timeScale times (framework.ScaledAlertRulesFile: every for and every
// window divided, nothing else changed, which test/alerts'
// TestScaledRulesDifferInDurationsAlone proves), whose alerts carry the
// label time_scale="1/30". An alert of 3 minutes fires in 6 seconds of
// the scaled copy; the shipped rules tell what a real Prometheus makes of
// the same samples in real time (a failover shorter than NoLeader's 3m
// never fires it). Every alert is read from Prometheus's own API.

// timeScale is the factor by which the scaled copy compresses time: 3m
// becomes 6s, a [30m] window [1m].
const timeScale = 30

// The intervals of the package's Prometheus (prom.Start's defaults), and
// what a poll of its API and a loaded machine add: an alert fires within
// its for plus a scrape and an evaluation interval of its first sample,
// give or take alertSlack.
const (
	scrapeInterval = time.Second
	evalInterval   = time.Second
	alertSlack     = 3 * time.Second
	// quietWithin bounds how long an alert may stay pending in a steady
	// state: a scrape or two that failed on a loaded machine.
	quietWithin = 5 * time.Second
)

var alerting struct {
	once  sync.Once
	err   error
	p     *prom.Prometheus
	dir   string
	token string                   // the file holding the scrape token
	forOf map[string]time.Duration // each alert's for in the scaled copy

	mu   sync.Mutex
	jobs map[string][]prom.Target
}

// packagePrometheus returns the package's Prometheus, started on first use.
func packagePrometheus(t *testing.T) *prom.Prometheus {
	t.Helper()
	alerting.once.Do(func() { alerting.err = startPrometheus() })
	if alerting.err != nil {
		t.Fatalf("starting the package's Prometheus: %v", alerting.err)
	}
	return alerting.p
}

func startPrometheus() error {
	dir, err := os.MkdirTemp("", "faults-prometheus-")
	if err != nil {
		return err
	}
	alerting.dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	token, err := metricsReaderToken(ctx)
	if err != nil {
		return err
	}
	alerting.token = filepath.Join(dir, "token")
	if err := os.WriteFile(alerting.token, []byte(token), 0o600); err != nil {
		return err
	}
	shipped, err := prom.RulesFile(dir)
	if err != nil {
		return err
	}
	scaled, err := prom.ScaledRulesFile(dir, timeScale)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(scaled)
	if err != nil {
		return err
	}
	groups, err := framework.ParseAlertRules(b)
	if err != nil {
		return err
	}
	alerting.forOf = map[string]time.Duration{}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.For != "" {
				d, err := time.ParseDuration(r.For)
				if err != nil {
					return fmt.Errorf("%s: for %q: %w", r.Alert, r.For, err)
				}
				alerting.forOf[r.Alert] = d
			}
		}
	}
	alerting.p, err = prom.Start(ctx, prom.Options{Dir: dir, RuleFiles: []string{shipped, scaled},
		ScrapeInterval: scrapeInterval, EvaluationInterval: evalInterval})
	return err
}

// stopPrometheus stops the package's Prometheus, if a test started it.
func stopPrometheus() {
	if alerting.p != nil {
		alerting.p.Stop()
	}
	if alerting.dir != "" {
		_ = os.RemoveAll(alerting.dir)
	}
}

// metricsReaderToken returns a token of a ServiceAccount of a namespace of
// its own bound to config/default's metrics-reader ClusterRole, as
// docs/deploying.md tells Prometheus's account to be.
func metricsReaderToken(ctx context.Context) (string, error) {
	admin := framework.Config(cfg)
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return "", err
	}
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "prometheus-"}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	objs, err := framework.Manifests()
	if err != nil {
		return "", err
	}
	var role *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "metrics-reader") {
			role = o
		}
	}
	if role == nil {
		return "", fmt.Errorf("config/default has no ClusterRole *metrics-reader")
	}
	apply := []*unstructured.Unstructured{role} // Apply waits until the binding's rules are granted
	for _, o := range []runtime.Object{
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "prometheus"}},
		&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: ns.Name + "-prometheus"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.GetName()},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: "prometheus"}}},
	} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return "", err
		}
		apply = append(apply, &unstructured.Unstructured{Object: m})
	}
	if err := framework.Apply(ctx, admin, apply, false); err != nil {
		return "", err
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// setScrapeJob makes the package's Prometheus scrape targets as job
// (none: stop scraping it).
func setScrapeJob(ctx context.Context, job string, targets []prom.Target) error {
	alerting.mu.Lock()
	defer alerting.mu.Unlock()
	if alerting.jobs == nil {
		alerting.jobs = map[string][]prom.Target{}
	}
	if len(targets) == 0 {
		delete(alerting.jobs, job)
	} else {
		alerting.jobs[job] = targets
	}
	var all []prom.Target
	for _, j := range slices.Sorted(maps.Keys(alerting.jobs)) {
		all = append(all, alerting.jobs[j]...)
	}
	return alerting.p.SetTargets(ctx, all)
}

// handedOut are the ports fixedLoopbackAddr gave, never given twice.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// fixedLoopbackAddr returns 127.0.0.1:<port> with a port free now, below
// the range the kernel takes the local ports of outgoing connections from:
// a replica restarted on it finds it free again, whatever connections the
// machine opened meanwhile.
func fixedLoopbackAddr(t *testing.T) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &low)
	}
	from := 10000
	if low <= from+1000 {
		from = 1024
	}
	for range 100 {
		port := from + rand.IntN(low-from)
		if handedOut.ports[port] {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			handedOut.ports[port] = true
			return addr
		}
	}
	t.Fatalf("no free loopback port below %d", low)
	return ""
}

// replica is a manager process whose metrics server keeps one address
// across restarts, as a Pod's does: the instance label Prometheus gives its
// series stays, so a restart is the same target's process start time
// changing. With leader election, each run has an identity of its own,
// <id>_<run>, as the default <hostname>_<random> of a restarted container
// is.
type replica struct {
	t           *testing.T
	id          string
	addr        string
	env         map[string]string
	kubeconfig  string
	ns          string
	leaderElect bool
	extra       []string
	runs        []*process
}

func newReplica(t *testing.T, id, kubeconfig, ns string, env map[string]string, leaderElect bool, extra ...string) *replica {
	return &replica{t: t, id: id, addr: fixedLoopbackAddr(t), env: env, kubeconfig: kubeconfig, ns: ns, leaderElect: leaderElect, extra: extra}
}

// start starts the replica's next run, as the kubelet starts a container
// again.
func (r *replica) start() *process {
	r.t.Helper()
	name := fmt.Sprintf("%s_%d", r.id, len(r.runs)+1)
	extra := r.extra
	if r.leaderElect {
		extra = append(leaderArgs(r.ns, name), extra...)
	}
	p := startProcess(r.t, name, r.env, scrapedManagerArgs(r.kubeconfig, r.ns, r.addr, extra...)...)
	r.runs = append(r.runs, p)
	return p
}

// run is the replica's current run; identity is its Lease identity.
func (r *replica) run() *process    { return r.runs[len(r.runs)-1] }
func (r *replica) identity() string { return r.run().Name }

// kill kills the current run (SIGKILL) and waits for it to exit.
func (r *replica) kill() { r.run().Kill() }

// alertWatch reads, from the package's Prometheus, the alerts of one
// test's managers: those of its namespace, and those of no namespace
// (ControllerManagerMetricsAbsent).
type alertWatch struct {
	t   *testing.T
	p   *prom.Prometheus
	ns  string
	job string
}

// watchAlerts makes the package's Prometheus scrape replicas, as job
// controller-manager-<ns> with the label namespace=<ns> (the namespace a
// ServiceMonitor's scrape gives), until the test ends, and waits until it
// has scraped each of them.
func watchAlerts(t *testing.T, ns string, replicas ...*replica) *alertWatch {
	t.Helper()
	w := &alertWatch{t: t, p: packagePrometheus(t), ns: ns, job: "controller-manager-" + ns}
	var targets []prom.Target
	for _, r := range replicas {
		targets = append(targets, prom.Target{Job: w.job, Addr: r.addr, HTTPS: true, BearerTokenFile: alerting.token,
			Labels: map[string]string{"namespace": ns}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := setScrapeJob(ctx, w.job, targets); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := setScrapeJob(ctx, w.job, nil); err != nil {
			t.Errorf("removing the scrape job: %v", err)
		}
	})
	w.waitScraped(`controller_manager_build_info`, len(replicas))
	return w
}

// waitScraped waits until expr, on the test's job, has n series.
func (w *alertWatch) waitScraped(expr string, n int) {
	w.t.Helper()
	q := w.on(expr)
	framework.Eventually(w.t, time.Minute, fmt.Sprintf("Prometheus to have %d series of %s", n, q), func(ctx context.Context) (bool, error) {
		got, err := w.p.Query(ctx, q)
		return err == nil && len(got) == n, err
	})
}

// on restricts the selector that begins expr (a metric name, with or
// without label matchers) to the test's job.
func (w *alertWatch) on(expr string) string {
	sel := fmt.Sprintf(`job=%q`, w.job)
	end := strings.IndexFunc(expr, func(r rune) bool { return r != '_' && r != ':' && !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if end < 0 {
		return expr + "{" + sel + "}"
	}
	if name, rest := expr[:end], expr[end:]; strings.HasPrefix(rest, "{") {
		return name + "{" + sel + "," + rest[1:]
	}
	return expr[:end] + "{" + sel + "}" + expr[end:]
}

// value returns the value of the one series of expr on the test's job.
func (w *alertWatch) value(expr string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := w.p.Query(ctx, w.on(expr))
	if err != nil {
		return 0, err
	}
	if len(got) != 1 {
		return 0, fmt.Errorf("%s: %d series, want 1", w.on(expr), len(got))
	}
	return got[0].Value, nil
}

func scaled(a prom.Alert) bool { return a.Labels[framework.TimeScaleLabel] != "" }

// rules names the rule file an alert comes from.
func rules(a prom.Alert) string {
	if scaled(a) {
		return "scaled"
	}
	return "shipped"
}

// mine returns the alerts of the test's namespace and those of none.
func (w *alertWatch) mine(all []prom.Alert) []prom.Alert {
	var out []prom.Alert
	for _, a := range all {
		if ns := a.Labels["namespace"]; ns == w.ns || ns == "" {
			out = append(out, a)
		}
	}
	return out
}

// alerts returns the test's alerts now.
func (w *alertWatch) alerts() []prom.Alert {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := w.p.Alerts(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	return w.mine(all)
}

// quiet checks the steady state: once Prometheus has evaluated the rules
// on a scrape made after the call, no alert of the test's managers (nor
// one of no namespace) fires, of either rule file, and none stays pending
// for longer than quietWithin (a pending alert that clears at once is a
// scrape that failed on a loaded machine, not a state). shippedActive are
// alerts of the shipped rules that may stay active: their windows outlast
// the test (the fault still inside a [30m] or [5m] window).
func (w *alertWatch) quiet(state string, shippedActive ...string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.p.Evaluated(ctx, time.Now().Add(scrapeInterval)); err != nil {
		w.t.Fatalf("Prometheus evaluating its rules: %v", err)
	}
	var active, allowed, firing []string
	framework.EventuallyEvery(w.t, 200*time.Millisecond, quietWithin, fmt.Sprintf("steady state (%s): no alert active", state), func(context.Context) (bool, error) {
		active, allowed = nil, nil
		for _, a := range w.alerts() {
			switch {
			case !scaled(a) && slices.Contains(shippedActive, a.Name()):
				allowed = append(allowed, rules(a)+" "+a.String())
			case a.State == "firing":
				firing = append(firing, rules(a)+" "+a.String())
			default:
				active = append(active, rules(a)+" "+a.String())
			}
		}
		if len(firing) > 0 {
			return true, nil
		}
		if len(active) > 0 {
			return false, fmt.Errorf("pending:\n%s", strings.Join(active, "\n"))
		}
		return true, nil
	})
	if len(firing) > 0 {
		w.t.Errorf("steady state (%s): firing:\n%s", state, strings.Join(firing, "\n"))
		return
	}
	w.t.Logf("steady state (%s): no alert pending or firing%s", state, strings.TrimSuffix(" but "+strings.Join(allowed, "; "), " but "))
}

// onlyFiring checks that no alert of the test's managers fires but names,
// of either rule file.
func (w *alertWatch) onlyFiring(names ...string) {
	w.t.Helper()
	var other []string
	for _, a := range w.alerts() {
		if a.State == "firing" && !slices.Contains(names, a.Name()) {
			other = append(other, rules(a)+" "+a.String())
		}
	}
	if len(other) > 0 {
		w.t.Errorf("firing besides %v:\n%s", names, strings.Join(other, "\n"))
	}
}

// scaledMatch is match with the test's namespace and the scaled copy's
// label.
func (w *alertWatch) scaledMatch(match map[string]string) map[string]string {
	m := maps.Clone(match)
	if m == nil {
		m = map[string]string{}
	}
	m["namespace"] = w.ns
	m[framework.TimeScaleLabel] = fmt.Sprintf("1/%d", timeScale)
	return m
}

// expected names an alert of the scaled copy for the test's managers, by
// name and labels (besides the namespace).
type expected struct {
	name  string
	match map[string]string
}

// fires waits (at most timeout) until every alert of want fires in the
// scaled copy, watching them together so that each is seen firing when it
// begins to; checks that each fired within its for plus a scrape and an
// evaluation interval of going active; and logs how long after fault (when
// the fault began) each went active and fired.
func (w *alertWatch) fires(fault time.Time, timeout time.Duration, want ...expected) []prom.Alert {
	w.t.Helper()
	got := make([]prom.Alert, len(want))
	seen := make([]time.Time, len(want))
	var last []prom.Alert
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		all, err := w.p.Alerts(ctx)
		if err != nil {
			return false, nil
		}
		now, done := time.Now(), true
		last = all
		for i, e := range want {
			if !seen[i].IsZero() {
				continue
			}
			m := w.scaledMatch(e.match)
			for _, a := range all {
				if a.Name() == e.name && a.State == "firing" && includes(a.Labels, m) {
					got[i], seen[i] = a, now
				}
			}
			done = done && !seen[i].IsZero()
		}
		return done, nil
	})
	if err != nil {
		w.t.Fatalf("%+v not all firing: %v; active: %v", want, err, last)
	}
	for i, a := range got {
		forDur := alerting.forOf[a.Name()]
		if took, bound := seen[i].Sub(a.ActiveAt), forDur+scrapeInterval+evalInterval+alertSlack; took > bound {
			w.t.Errorf("%s fired %v after it went active, more than its for (%v) plus a scrape and an evaluation interval (and %v of slack)",
				a.Name(), took.Round(time.Millisecond), forDur, alertSlack)
		}
		forText := fmt.Sprintf("its scaled for %v, standing for %v", forDur, forDur*timeScale)
		if forDur == 0 {
			forText = "no for: it fires on its first evaluation"
		}
		w.t.Logf("ALERT %s fired: active %v after the fault began, firing %v after that (%s); %v after the fault: %s",
			a.Name(), a.ActiveAt.Sub(fault).Round(100*time.Millisecond), seen[i].Sub(a.ActiveAt).Round(100*time.Millisecond), forText,
			seen[i].Sub(fault).Round(100*time.Millisecond), a)
	}
	return got
}

// includes reports whether labels has every label of match.
func includes(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// resolves waits (at most timeout) until the scaled copy's alert name is
// no longer active for the test's managers with labels including match,
// and logs how long after end (when the fault ended) it resolved.
func (w *alertWatch) resolves(name string, match map[string]string, end time.Time, timeout time.Duration) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	at, err := w.p.WaitResolved(ctx, name, w.scaledMatch(match))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Logf("ALERT %s resolved %v after the fault ended", name, at.Sub(end).Round(100*time.Millisecond))
}
