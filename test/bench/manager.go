package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// managerProcess is the real controller-manager binary, run as a separate
// process against the benchmark's control plane.
type managerProcess struct {
	*framework.Process
	metricsURL string
	readyURL   string
	// controller is the one controller it runs ("": ingress-manager),
	// whose queue idle waits for.
	controller string
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startManager starts the manager with ingress-manager only, scoped to the
// benchmark namespace, serving metrics and health on free loopback ports;
// its output goes to <tmp>/<name>.log.
func (r *run) startManager(name string, extra ...string) (*managerProcess, error) {
	return r.startManagerOn(r.kubeconfig, name, extra...)
}

// startManagerOn is startManager against the cluster of kubeconfig.
func (r *run) startManagerOn(kubeconfig, name string, extra ...string) (*managerProcess, error) {
	return r.startController(kubeconfig, name, "ingress-manager", benchNamespace, append(slices.Clone(r.cfg.ManagerArgs), extra...)...)
}

// startController starts the manager with only the controller ctrl,
// scoped to namespace ns, serving metrics and health on free loopback
// ports; its output goes to <tmp>/<name>.log.
func (r *run) startController(kubeconfig, name, ctrl, ns string, extra ...string) (*managerProcess, error) {
	mp, err := freePort()
	if err != nil {
		return nil, err
	}
	hp, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + ctrl,
		"--namespace=" + ns,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", mp),
		"--metrics-secure=false", // the harness scrapes plain HTTP on loopback
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", hp),
	}
	args = append(args, extra...)
	p, err := r.startProcess(name, r.managerBin, args,
		fmt.Sprintf("http://127.0.0.1:%d/metrics", mp), fmt.Sprintf("http://127.0.0.1:%d/readyz", hp))
	if p != nil {
		p.controller = ctrl
	}
	return p, err
}

// startProcess starts bin with args, its output going to <tmp>/<name>.log;
// metricsURL and readyURL are where it serves /metrics and /readyz ("":
// none).
func (r *run) startProcess(name, bin string, args []string, metricsURL, readyURL string) (*managerProcess, error) {
	r.cfg.logf("starting %s: %s %s", name, filepath.Base(bin), strings.Join(args, " "))
	// Own process group (a terminal's Ctrl-C reaches the harness, which
	// stops the process itself); killed if the harness dies.
	p, err := framework.StartProcess(name, bin, args, framework.ProcessOptions{
		LogPath:     filepath.Join(r.tmp, name+".log"),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return nil, err
	}
	return &managerProcess{Process: p, metricsURL: metricsURL, readyURL: readyURL}, nil
}

// stop sends SIGTERM and waits for the manager to exit (SIGKILL after
// timeout). It is safe to call more than once.
func (p *managerProcess) stop(timeout time.Duration) error {
	if p == nil {
		return nil
	}
	if err := p.Stop(timeout); err != nil {
		return fmt.Errorf("manager %s: %w (log: %s)", p.Name, err, p.Logs(2000))
	}
	return nil
}

// errIfExited fails when the manager is no longer running.
func (p *managerProcess) errIfExited() error {
	if exited, err := p.Exited(); exited {
		return fmt.Errorf("manager %s exited unexpectedly: %v; log ends with:\n%s", p.Name, err, p.Logs(2000))
	}
	return nil
}

// waitReady polls /readyz until it answers 200 and returns when it did.
func (p *managerProcess) waitReady(ctx context.Context) (time.Time, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.errIfExited(); err != nil {
			return time.Time{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.readyURL, nil)
		if err != nil {
			return time.Time{}, err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("manager %s not ready: %w", p.Name, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

func (p *managerProcess) metrics(ctx context.Context) (metrics, error) {
	if err := p.errIfExited(); err != nil {
		return nil, err
	}
	return scrape(ctx, p.metricsURL)
}

// counters are cumulative figures of the manager process, and the machine's
// CPU use when they were read.
type counters struct {
	cpu, rateLimited float64
	machine          cpuSample
}

func (p *managerProcess) counters(ctx context.Context) (counters, error) {
	m, err := p.metrics(ctx)
	if err != nil {
		return counters{}, err
	}
	return counters{
		machine:     sampleCPU(),
		cpu:         m.sum("process_cpu_seconds_total", nil),
		rateLimited: m.sum("rest_client_rate_limiter_duration_seconds_sum", nil),
	}, nil
}

// syncs is the number of ingress-manager reconciliations so far.
func (p *managerProcess) syncs(ctx context.Context) (int64, error) {
	m, err := p.metrics(ctx)
	if err != nil {
		return 0, err
	}
	return int64(m.sum("controller_reconcile_total", map[string]string{"controller": "ingress-manager"})), nil
}

// readyIdle waits until the manager is ready, then until it is idle: the
// start of a phase that measures only what comes after.
func (p *managerProcess) readyIdle(ctx context.Context) error {
	if _, err := p.waitReady(ctx); err != nil {
		return err
	}
	return p.idle(ctx)
}

// idle waits until the manager's queue is empty and nothing is in flight.
func (p *managerProcess) idle(ctx context.Context) error {
	for {
		m, err := p.metrics(ctx)
		if err != nil {
			return err
		}
		sel := map[string]string{"name": p.queue()}
		if m.has("workqueue_depth") && m.sum("workqueue_depth", sel) == 0 && m.sum("workqueue_unfinished_work_seconds", sel) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("manager %s still busy: %w", p.Name, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// queue is the name of the workqueue of the controller p runs.
func (p *managerProcess) queue() string {
	if p.controller == "" {
		return "ingress-manager"
	}
	return p.controller
}

const gcCyclesMetric = "go_gc_cycles_total_gc_cycles_total"

// gcCycles is the number of garbage collections the manager completed.
func (p *managerProcess) gcCycles(ctx context.Context) (float64, error) {
	m, err := p.metrics(ctx)
	if err != nil {
		return 0, err
	}
	if !m.has(gcCyclesMetric) {
		return 0, errors.New("the manager's /metrics has no " + gcCyclesMetric)
	}
	return m.sum(gcCyclesMetric, nil), nil
}

// heap reads the manager's memory. The state to measure was reached when
// the manager had completed since GC cycles; heap first waits (at most
// gcWait) for a later one, so that the live heap is that of this state.
func (p *managerProcess) heap(ctx context.Context, gcWait time.Duration, since float64, services, ingresses int) (Heap, error) {
	h := Heap{Objects: services, Ingresses: ingresses}
	m, err := p.metrics(ctx)
	if err != nil {
		return h, err
	}
	if !m.has("go_gc_heap_live_bytes") || !m.has(gcCyclesMetric) {
		return h, errors.New("the manager's /metrics has no go_gc_heap_live_bytes or " + gcCyclesMetric)
	}
	deadline := time.Now().Add(gcWait)
	for m.sum(gcCyclesMetric, nil) <= since && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return h, context.Cause(ctx)
		case <-time.After(500 * time.Millisecond):
		}
		if m, err = p.metrics(ctx); err != nil {
			return h, err
		}
	}
	h.GCAfterState = m.sum(gcCyclesMetric, nil) > since
	h.HeapLive = int64(m.sum("go_gc_heap_live_bytes", nil))
	h.HeapInuse = int64(m.sum("go_memstats_heap_inuse_bytes", nil))
	h.HeapAlloc = int64(m.sum("go_memstats_heap_alloc_bytes", nil))
	mem, err := processMemory(p.Pid())
	if err != nil {
		return h, fmt.Errorf("reading the manager's memory: %w", err)
	}
	h.PeakRSS, h.RSS = mem.peak, mem.current
	return h, nil
}
