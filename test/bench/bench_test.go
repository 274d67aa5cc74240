package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// TestResultNamesItsCommit: every result file says which source it measured.
func TestResultNamesItsCommit(t *testing.T) {
	r := newResult(Config{N: 1})
	if !regexp.MustCompile(`^[0-9a-f]{7,}(-dirty)?$`).MatchString(r.Commit) {
		t.Errorf("commit = %q, want git's short commit, -dirty when the tree differs", r.Commit)
	}
	if want := regexp.MustCompile(`^\d{8}T\d{6}Z-` + regexp.QuoteMeta(r.Commit) + `\.json$`); !want.MatchString(r.FileName()) {
		t.Errorf("file name = %q, want <timestamp>-<commit>.json", r.FileName())
	}
	if r.Machine.Cores < 1 || r.Machine.RAMBytes <= 0 {
		t.Errorf("machine = %+v, want cores and memory", r.Machine)
	}
}

// The routable step needs the private network namespace of dataplane.Main.
func TestMain(m *testing.M) { os.Exit(dataplane.Main(m.Run)) }

// managerBuildFlags are the go build flags of the smoke test's manager.
var managerBuildFlags []string

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestSmoke runs the whole benchmark at N=20 with short windows, so that
// the harness cannot rot: every phase must complete and produce sane
// figures (no timing is checked).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and builds the manager")
	}
	const n = 20
	cfg := Config{
		N:                n,
		Concurrencies:    []int{1, 4},
		ColdRuns:         2,
		BuildFlags:       managerBuildFlags,
		RestartWindow:    3 * time.Second,
		IdleWindow:       2 * time.Second,
		IdleResync:       500 * time.Millisecond,
		SteadyRates:      []float64{20},
		SteadyLFraction:  0.05,
		SteadyWindow:     time.Second,
		Routable:         10,
		RoutableRate:     20,
		Networks:         5,
		NetworkLatencies: []time.Duration{0, 10 * time.Millisecond},
		NetworkWorkers:   []int{1, 4},
		Pods:             20,
		PodUpdateRate:    20,
		PodUpdateWindow:  time.Second,
		ScaleNetworks:    20,
		Settle:           200 * time.Millisecond,
		PhaseTimeout:     2 * time.Minute,
		Log:              testWriter{t},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("bench run failed: %v", err)
	}

	if !strings.HasPrefix(res.Versions.KubeAPIServer, "v1.") || !strings.HasPrefix(res.Versions.Etcd, "v3.") || res.Versions.ManagerGo == "" {
		t.Errorf("versions = %+v", res.Versions)
	}
	if res.Machine.Cores < 1 || res.Machine.RAMBytes <= 0 || res.Machine.LoadStart < 0 || res.Machine.LoadEnd < 0 {
		t.Errorf("machine = %+v", res.Machine)
	}
	var steps []string
	for _, s := range res.Steps {
		steps = append(steps, s.Name+" "+s.Outcome)
	}
	if want := []string{"manager at N=0 done", "limit done", "ingress-manager done", "peer done", "httproute done", "network done", "neutron skipped", "podlogger done", "network-scale done"}; !slices.Equal(steps, want) {
		t.Errorf("steps = %q, want %q", steps, want)
	}

	lim := res.Limit
	for name, rates := range map[string][]Rate{"creates": lim.Creates, "updates": lim.Updates, "deletes": lim.Deletes} {
		if len(rates) != len(cfg.Concurrencies) {
			t.Errorf("limit %s: %d rates, want one per concurrency %v", name, len(rates), cfg.Concurrencies)
		}
		for _, r := range rates {
			if r.Objects != n || !(r.PerSecond > 0) {
				t.Errorf("limit %s: %+v, want %d objects at a positive rate", name, r, n)
			}
		}
	}
	if !(lim.L > 0 && lim.LUpdate > 0 && lim.LDelete > 0 && lim.LApply > 0) {
		t.Errorf("limits = %+v, want all positive", lim)
	}

	// Every Ingress needs at least one write: fewer means the counting is
	// broken (the controller's own tests check the exact counts).
	wantPhases := []string{"cold", "remove", "re-add", "recreate"}
	if len(res.Ingress.Phases) != len(wantPhases) {
		t.Fatalf("phases = %+v, want %v", res.Ingress.Phases, wantPhases)
	}
	for i, p := range res.Ingress.Phases {
		if p.Name != wantPhases[i] || !(p.Seconds > 0) || !(p.Ratio > 0) || p.WritesPerObject < 1 {
			t.Errorf("phase %d = %+v, want %s with a positive time and at least 1 Ingress write per object", i, p, wantPhases[i])
		}
	}
	if cold := res.Ingress.Phases[0]; !(cold.CacheSyncSeconds > 0) || cold.IngressWrites["POST"] < n || len(cold.Runs) != cfg.ColdRuns {
		t.Errorf("cold = %+v, want a time to caches synced, at least %d creates, and %d starts", cold, n, cfg.ColdRuns)
	} else {
		for _, run := range cold.Runs {
			if !(run.L > 0) || !(run.Seconds > 0) || !(run.Ratio > 0) {
				t.Errorf("cold start %+v, want a positive L, time and ratio", run)
			}
		}
		if m := medianRun(cold.Runs); cold.Ratio != m.Ratio || cold.Seconds != m.Seconds {
			t.Errorf("cold = %+v, want the ratio and time of the median start %+v", cold, m)
		}
	}
	if rs := res.Ingress.Restart; rs.Seconds < cfg.RestartWindow.Seconds() || rs.Syncs < n {
		t.Errorf("restart = %+v, want a %v window in which the manager synced all %d Services", rs, cfg.RestartWindow, n)
	}
	if idle := res.Ingress.Idle; idle.Seconds < cfg.IdleWindow.Seconds() || idle.Syncs < n {
		t.Errorf("idle = %+v, want a %v window with at least one resync of the %d Services", idle, cfg.IdleWindow, n)
	}
	if len(res.Ingress.Steady) != 2 {
		t.Errorf("steady = %+v, want 2 rates (20/s and 0.05 L)", res.Ingress.Steady)
	}
	for _, s := range res.Ingress.Steady {
		if s.Events < 1 || s.Missing != 0 || !(s.AchievedRate > 0) || s.P50ms > s.P99ms || s.P99ms > s.Maxms || s.WritesPerEvent < 1 {
			t.Errorf("steady = %+v, want every event to yield an Ingress, and ordered percentiles", s)
		}
	}

	switch x := res.Ingress.Routable; {
	case x == nil:
		t.Errorf("no routable result")
	case x.Skipped != "" && os.Getenv("CI") == "true":
		t.Errorf("CI=true, but the routable step was skipped: %s", x.Skipped)
	case x.Skipped != "":
		t.Logf("routable step skipped: %s", x.Skipped)
	case x.Services != cfg.Routable || x.Missing != 0 || !(x.RouteP50 > 0) || x.RouteP50 > x.RouteP99 || x.RouteP99 > x.RouteMax || x.IngressP50 > x.IngressP99:
		t.Errorf("routable = %+v, want every Service routed, with ordered percentiles", x)
	}

	if rt := res.HTTPRoute; rt == nil || rt.Creates.Objects != n || !(rt.Creates.PerSecond > 0) || !(rt.Cold.Seconds > 0) || !(rt.Cold.Ratio > 0) ||
		rt.Cold.Writes["POST"] < n || rt.Cold.IngressWrites != 0 {
		t.Errorf("httproute = %+v, want a direct create rate and a cold phase with at least %d HTTPRoute creates and no Ingress write", rt, n)
	}

	var names []string
	for _, c := range res.Peer {
		names = append(names, c.Name)
		// Each contender writes every Ingress once at least; ours and the
		// floor exactly once (the peer may retry a create its cache did not
		// show yet).
		if !(c.L > 0) || !(c.FirstSeconds > 0) || c.ColdSeconds < c.FirstSeconds || c.PeakRSS <= 0 || c.FileRSS <= 0 || c.FileRSS >= c.PeakRSS || !(c.CPUSeconds > 0) ||
			c.IngressWrites["POST"] < n || (c.Name != ContenderPeer && c.WritesPerObject != 1) {
			t.Errorf("contender %+v, want a positive L, first and cold times, peak RSS, a smaller part of it of files, CPU, and at least %d Ingress creates (exactly for ours and the floor)", c, n)
		}
		if len(c.Runs) != cfg.ColdRuns {
			t.Errorf("contender %s: %d starts, want %d", c.Name, len(c.Runs), cfg.ColdRuns)
		}
	}

	if want := []string{ContenderOurs, ContenderPeer, ContenderFloor}; !slices.Equal(names, want) {
		t.Errorf("peer phase contenders = %q, want %q", names, want)
	}

	mem := res.Memory
	for name, h := range map[string]Heap{"N=0": mem.Empty, "Services": mem.Services, "full": mem.Full} {
		if h.PeakRSS <= 0 || h.RSS <= 0 || h.HeapLive <= 0 || h.HeapInuse <= 0 || h.HeapAlloc <= 0 {
			t.Errorf("memory %s = %+v, want positive figures", name, h)
		}
	}

	if len(res.Network) != len(cfg.NetworkLatencies)*len(cfg.NetworkWorkers) {
		t.Errorf("network = %+v, want one case per latency and worker count", res.Network)
	}
	for _, c := range res.Network {
		if c.Networks != cfg.Networks || !(c.PerSecond > 0) || c.WritesPerNetwork < 1 {
			t.Errorf("network case %+v, want %d Networks at a positive rate with at least one write each", c, cfg.Networks)
		}
	}
	if p := res.PodLogger; p == nil {
		t.Errorf("no podlogger result")
	} else {
		u := p.Updates
		if p.Pods != cfg.Pods || !(p.CreateSeconds > 0) || !(p.CacheSyncSeconds > 0) || p.StartupSeconds < p.CacheSyncSeconds ||
			p.Empty.PeakRSS <= 0 || p.Full.PeakRSS <= 0 || p.Full.HeapLive <= 0 || p.Full.Objects != cfg.Pods {
			t.Errorf("podlogger = %+v, want %d Pods, positive times and memory readings", p, cfg.Pods)
		}
		if u.Events != 20 || u.Missing != 0 || !(u.AchievedRate > 0) || !(u.P50ms > 0) || u.P50ms > u.P99ms || u.P99ms > u.Maxms || !(u.LogBytesPerEvent > 0) {
			t.Errorf("podlogger updates = %+v, want every update logged, ordered positive lags, and log bytes", u)
		}
	}
	if ns := res.NetworkScale; ns == nil {
		t.Errorf("no network-scale result")
	} else if ns.Networks != cfg.ScaleNetworks || !(ns.ReadySeconds > 0) || ns.ReadySeconds < ns.CacheSyncSeconds || ns.WritesPerNetwork < 1 || ns.PeakRSS <= 0 ||
		ns.Restart == nil || !(ns.Restart.Seconds > 0) || ns.Restart.BackendWrites != 0 {
		t.Errorf("network-scale = %+v (restart %+v), want %d Networks Ready, at least a write each, and a restart without backend writes", ns, ns.Restart, cfg.ScaleNetworks)
	}
	if sp := res.Scale; sp == nil || sp.N != n || !(sp.ColdVersusFloor > 0) || !(sp.CPUmsPerObject > 0) || !(sp.FloorCPUmsPerObject > 0) || sp.HeapBytesPerService == 0 {
		t.Errorf("scale point = %+v, want the cold time and CPU against the floor's and the heap per Service", sp)
	}

	if len(res.Targets) < 5 {
		t.Errorf("targets = %+v, want every target of the issue evaluated", res.Targets)
	}

	// JSON written and parseable, with the same figures.
	path, err := res.WriteJSON(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("results JSON does not parse: %v", err)
	}
	if back.N != n || back.Limit.L != lim.L || len(back.Ingress.Phases) != len(wantPhases) || back.Memory.Full.HeapLive != mem.Full.HeapLive {
		t.Errorf("JSON round trip lost figures: %s", b)
	}
	var table bytes.Buffer
	res.WriteTable(&table)
	for _, want := range []string{"**L** (best)", "cold", "steady state", "per cached Service", "controller-runtime peer", "Networks/s", "scale point", "per cached Pod", "every Network Ready", "target"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	t.Logf("\n%s", table.String())
}
