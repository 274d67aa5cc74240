// Package bench is the benchmark suite of `make bench`: it measures the
// controllers against the API server's own limit on a fresh local control
// plane (envtest: the project's kube-apiserver and etcd on 127.0.0.1).
//
//   - limit: a direct client (protobuf, no client-side rate limit) creates,
//     updates and deletes N Ingresses like the ones ingress-manager writes,
//     at several concurrencies, while an informer watches them (as the
//     independent watcher watches the phases it times); L is the best
//     creates/s;
//   - ingress-manager, as the real controller-manager binary in its own
//     process: cold start, annotation removal, re-add, recreate after the
//     Ingresses are deleted, restart and idle write counts, steady-state
//     event -> Ingress latency under an open-loop generator, all observed by
//     an independent watch;
//   - network, in-process on the memory backend with injected latency:
//     Networks/s to Ready against the worker count;
//   - neutron, in-process against the real Neutron of hack/openstack-up.sh:
//     Networks/s to Ready against the worker count, beside a direct
//     gophercloud client's rate for the same requests, and Neutron API
//     requests per Network, and of a restart with converged Networks, both
//     from Neutron's own access log; and Networks importing existing
//     networks (Unmanaged, Managed): to Ready, requests per Network, and
//     the requests of a restart with them;
//   - memory: the manager's peak RSS and live Go heap after GC, at N=0 and N;
//   - scale points, off by default (scale.go): Config.Scale keeps only what
//     the ingress-manager's curve against N needs; podlogger (Config.Pods)
//     is pod-logger alone on Pods created directly: cache sync, memory per
//     Pod, update -> log line lag and CPU per update; network-scale
//     (Config.ScaleNetworks) is the network controller's binary on its
//     memory backend: time to Ready, RSS, and a restart on converged state.
//
// API writes come from the API server's apiserver_request_total. Benchmarks
// report; they never fail on a timing.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// Config is one benchmark run.
type Config struct {
	// N is the number of objects (Services, Ingresses) of each phase.
	N int
	// Concurrencies of the limit phase.
	Concurrencies []int
	// ManagerBinary is a built controller-manager; empty: build one.
	ManagerBinary string
	// BuildFlags are extra `go build` flags for the manager (e.g. -race).
	BuildFlags []string
	// ManagerArgs are extra controller-manager flags for every
	// ingress-manager run (e.g. --ingress-manager-workers=32).
	ManagerArgs []string
	// ColdRuns is how many times each cold start (the ingress-manager's,
	// and each contender's of the peer phase) is measured, each against
	// the direct create rate measured just before it; the median is
	// reported. On a machine of two cores the API server, etcd and the
	// controller share, one start can take half as long again as the next.
	// 0 means defaultColdRuns.
	ColdRuns int
	// RestartWindow is how long writes are counted after a restart.
	RestartWindow time.Duration
	// IdleWindow is how long writes are counted when idle, with the
	// informers resyncing every IdleResync.
	IdleWindow, IdleResync time.Duration
	// SteadyRates are the fixed event rates (per second) of the steady
	// state; SteadyLFraction adds the rate fraction*L (0: none).
	SteadyRates     []float64
	SteadyLFraction float64
	// SteadyWindow is how long the generator runs at each rate.
	SteadyWindow time.Duration
	// Networks is the number of Networks of each network case.
	Networks         int
	NetworkLatencies []time.Duration
	NetworkWorkers   []int
	// GCWait bounds the wait for a garbage collection of the manager
	// after the state to measure was reached (the Go runtime forces one
	// every 2 minutes). 0: read the heap as of the last GC, whenever it was.
	GCWait time.Duration
	// Settle is the interval at which the API server's write counters are
	// read until they stop moving, after a phase converged.
	Settle time.Duration
	// PhaseTimeout bounds every wait; 0: derived from N.
	PhaseTimeout time.Duration
	// Routable is the number of Services of the event -> routable step
	// (0: none), annotated at RoutableRate per second.
	Routable     int
	RoutableRate float64
	// NeutronNetworks is the number of Networks of each neutron case (0:
	// no neutron phase), against the real OpenStack whose state directory
	// (hack/openstack-up.sh) is OpenStackDir, at each of NeutronWorkers.
	NeutronNetworks int
	NeutronWorkers  []int
	// NeutronRestartNetworks is the number of converged Networks of the
	// neutron phase's restart (0: none).
	NeutronRestartNetworks int
	// NeutronImportNetworks is the number of networks of the neutron
	// phase's import case (0: none), made in Neutron beforehand and
	// imported by ID, once by Unmanaged and once by Managed Networks.
	NeutronImportNetworks int
	OpenStackDir          string
	// Scale keeps only what the scale curve needs (scale.go): one cold
	// start of the ingress-manager phase, its annotation removal and its
	// memory at N=0 and with N Services cached, and the cold starts of the manager and the informer
	// floor on fresh control planes; the limit sweep, the re-add, recreate,
	// restart and idle steps, the controller-runtime peer, and the steady,
	// routable, httproute, network and neutron phases are skipped.
	Scale bool
	// Pods is the number of Pods of the podlogger phase (0: no phase),
	// PodUpdateRate the rate (per second) of its Pod updates, each to its
	// own Pod, for PodUpdateWindow.
	Pods            int
	PodUpdateRate   float64
	PodUpdateWindow time.Duration
	// ScaleNetworks is the number of Networks of the network-scale phase
	// (0: no phase).
	ScaleNetworks int
	// Skip names phases not to run: "ingress-manager", "steady", "routable", "peer", "httproute", "network", "neutron", "podlogger", "network-scale".
	Skip map[string]bool
	// CPUProfileDir, when set, receives a CPU profile of the manager over
	// each cold start but the last (cold-<i>.pprof), and what it allocated
	// by then (cold-<i>.allocs.pprof), from its --profiling endpoint.
	CPUProfileDir string
	// Log receives progress lines (nil: discarded).
	Log io.Writer
}

// DefaultConfig is the configuration of `make bench`.
func DefaultConfig(n int) Config {
	return Config{
		N:                      n,
		Concurrencies:          []int{1, 4, 16, 64},
		ColdRuns:               defaultColdRuns,
		RestartWindow:          60 * time.Second,
		IdleWindow:             30 * time.Second,
		IdleResync:             5 * time.Second,
		SteadyRates:            []float64{10, 50},
		SteadyLFraction:        0.5,
		SteadyWindow:           10 * time.Second,
		Routable:               100,
		RoutableRate:           10,
		Networks:               256,
		NetworkLatencies:       []time.Duration{0, 10 * time.Millisecond, 100 * time.Millisecond},
		NetworkWorkers:         []int{1, 4, 16, 64},
		NeutronNetworks:        64,
		NeutronWorkers:         []int{1, 4, 16, 64},
		NeutronRestartNetworks: 1000,
		PodUpdateRate:          100,
		PodUpdateWindow:        30 * time.Second,
		NeutronImportNetworks:  200,
		GCWait:                 150 * time.Second,
		Settle:                 time.Second,
	}
}

// defaultColdRuns is Config.ColdRuns's default.
const defaultColdRuns = 5

func (c *Config) coldRuns() int {
	if c.ColdRuns > 0 {
		return c.ColdRuns
	}
	return defaultColdRuns
}

func (c *Config) phaseTimeout() time.Duration {
	if c.PhaseTimeout > 0 {
		return c.PhaseTimeout
	}
	return 2*time.Minute + time.Duration(c.N)*30*time.Millisecond
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
}

// Namespaces of the benchmark.
const (
	limitNamespace = "bench-limit"
	benchNamespace = "bench"
)

// etcdQuota is the benchmark etcd's --quota-backend-bytes: etcd's largest
// recommended quota.
const etcdQuota = 8 << 30

// scaleSkips are the phases Config.Scale skips.
var scaleSkips = []string{"limit", "steady", "routable", "httproute", "network", "neutron"}

// errSkipped is returned by a phase that cannot run here.
var errSkipped = errors.New("skipped")

// run is the state of one benchmark run.
type run struct {
	cfg        *Config
	res        *Result
	admin      *rest.Config // protobuf, no client-side limit
	client     kubernetes.Interface
	env        *envtest.Environment
	envStarted bool // env is to be stopped
	tmp        string
	// cleanups run when the run ends, last first (before tmp goes).
	cleanups   []func()
	managerBin string
	kubeconfig string
	l          float64
	// createCPUms is the control plane CPU per create at L.
	createCPUms float64
	// w is the independent watcher of the ingress-manager phases.
	w *watcher
	// empty is the N=0 manager, started before the limit phase.
	empty       *managerProcess
	emptyCycles float64
}

// Run runs the benchmark. It starts a fresh control plane and stops
// everything it started (processes, control plane, temporary files) before
// returning, also on error and when ctx is cancelled (Ctrl-C). The partial
// result is returned with the error.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	if cfg.N < 1 {
		return nil, fmt.Errorf("n must be at least 1, got %d", cfg.N)
	}
	// envtest logs through controller-runtime's logger, which otherwise
	// complains on stderr that it was never set.
	ctrllog.SetLogger(logr.Discard())
	if cfg.Scale {
		cfg.Skip = maps.Clone(cfg.Skip)
		if cfg.Skip == nil {
			cfg.Skip = map[string]bool{}
		}
		for _, p := range scaleSkips {
			cfg.Skip[p] = true
		}
	}
	r := &run{cfg: &cfg, res: newResult(cfg)}
	res = r.res
	cpu0 := sampleCPU()
	defer func() {
		r.res.Machine.OtherCPU = cpu0.otherShare(sampleCPU())
		r.res.Machine.LoadEnd = loadAvg1()
		r.res.Finished = time.Now().UTC()
		r.res.DurationSeconds = r.res.Finished.Sub(r.res.Started).Seconds()
		if err != nil {
			r.res.Error = err.Error()
		}
		if p, ok := r.res.ScalePoint(); ok {
			r.res.Scale = &p
		}
		r.res.computeTargets()
	}()

	if r.tmp, err = os.MkdirTemp("", "bench-"); err != nil {
		return res, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(r.tmp)
	defer func() {
		for i := len(r.cleanups) - 1; i >= 0; i-- {
			r.cleanups[i]()
		}
	}()

	if err := r.buildManager(ctx); err != nil {
		return res, err
	}
	defer func() {
		if !r.envStarted {
			return
		}
		cfg.logf("stopping the control plane")
		if stopErr := r.env.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", stopErr)
		}
	}()
	if err := r.startControlPlane(ctx); err != nil {
		return res, err
	}

	defer func() {
		if stopErr := r.empty.stop(stopTimeout); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	for _, phase := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"manager at N=0", r.startEmpty},
		{"limit", r.limit},
		{"ingress-manager", r.ingressManager},
		{"peer", r.peerPhase},
		{"httproute", r.httpRoutePhase},
		{"network", r.network},
		{"neutron", r.neutronPhase},
		{"podlogger", r.podLoggerPhase},
		{"network-scale", r.networkScale},
	} {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("interrupted before the %s phase: %w", phase.name, context.Cause(ctx))
		}
		step := Step{Name: phase.name, Started: time.Now().UTC(), Outcome: "skipped", Detail: "-skip"}
		if cfg.Skip[phase.name] {
			r.res.Steps = append(r.res.Steps, step)
			continue
		}
		cfg.logf("=== %s", phase.name)
		err := phase.run(ctx)
		step.Seconds, step.Detail = time.Since(step.Started).Seconds(), ""
		switch {
		case errors.Is(err, errSkipped):
			step.Outcome, step.Detail, err = "skipped", err.Error(), nil
		case err != nil:
			step.Outcome, step.Detail = "failed", err.Error()
		default:
			step.Outcome = "done"
		}
		r.res.Steps = append(r.res.Steps, step)
		cfg.logf("=== %s %s in %.1fs", phase.name, step.Outcome, step.Seconds)
		if err != nil {
			return res, fmt.Errorf("%s: %w", phase.name, err)
		}
	}
	return res, nil
}

// buildManager builds the real controller-manager binary (unless given).
func (r *run) buildManager(ctx context.Context) error {
	if r.cfg.ManagerBinary != "" {
		r.managerBin = r.cfg.ManagerBinary
		return nil
	}
	r.managerBin = filepath.Join(r.tmp, "controller-manager")
	return r.goBuild(ctx, r.managerBin, "./cmd/controller-manager")
}

// startControlPlane starts etcd and kube-apiserver with the project's CRDs
// and writes an admin kubeconfig for the manager process.
func (r *run) startControlPlane(ctx context.Context) error {
	cp, err := r.freshControlPlane(ctx, "kubeconfig")
	if cp != nil {
		r.env, r.envStarted = cp.env, true
	}
	if err != nil {
		return err
	}
	r.kubeconfig, r.admin, r.client = cp.kubeconfig, cp.admin, cp.client
	v, err := r.client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the API server version: %w", err)
	}
	r.res.Versions.KubeAPIServer = v.GitVersion
	r.res.Versions.Etcd = etcdVersion(ctx, filepath.Join(cp.env.BinaryAssetsDirectory, "etcd"))
	return nil
}

// controlPlane is a running etcd and kube-apiserver of the benchmark.
type controlPlane struct {
	env *envtest.Environment
	// kubeconfig is the path of an admin kubeconfig for processes.
	kubeconfig string
	admin      *rest.Config // protobuf, no client-side limit
	client     kubernetes.Interface
}

// freshControlPlane starts etcd and kube-apiserver with the project's CRDs,
// writes an admin kubeconfig for processes to <tmp>/<kubeconfig> and
// creates the benchmark's namespaces. When the control plane started, it
// is returned (to be stopped) also with an error.
func (r *run) freshControlPlane(ctx context.Context, kubeconfig string) (*controlPlane, error) {
	env, err := framework.Environment()
	if err != nil {
		return nil, err
	}
	// The harness deletes all N Ingresses in one deletecollection, which
	// outlasts the API server's default one-minute request timeout at large
	// N on a slow machine; a request still in flight at the phase's own
	// deadline is cut off by the harness.
	env.ControlPlane.GetAPIServer().Configure().Set("request-timeout", r.cfg.phaseTimeout().String())
	// etcd's default 2 GiB quota holds the objects of a scale point, but
	// not with the history of the cold starts' creates and deletes between
	// the API server's compactions; past the quota etcd refuses writes.
	if env.ControlPlane.Etcd == nil {
		env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.FormatInt(etcdQuota, 10))
	r.cfg.logf("starting etcd and kube-apiserver")
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	cp := &controlPlane{env: env, admin: directConfig(cfg)}
	user, err := env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return cp, fmt.Errorf("adding the manager's user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return cp, fmt.Errorf("writing the manager's kubeconfig: %w", err)
	}
	cp.kubeconfig = filepath.Join(r.tmp, kubeconfig)
	if err := os.WriteFile(cp.kubeconfig, kc, 0o600); err != nil {
		return cp, err
	}
	if cp.client, err = kubernetes.NewForConfig(cp.admin); err != nil {
		return cp, err
	}
	for _, ns := range []string{limitNamespace, benchNamespace} {
		if err := createNamespace(ctx, cp.client, ns); err != nil {
			return cp, err
		}
	}
	return cp, nil
}

// counts reads the API server's request counters and the control plane's CPU.
func (r *run) counts(ctx context.Context) (requestCounts, error) {
	etcd := ""
	if u := r.env.ControlPlane.Etcd.URL; u != nil {
		etcd = u.String() + "/metrics"
	}
	return apiRequests(ctx, r.client.CoreV1().RESTClient(), etcd)
}

// directConfig is cfg for a client with no client-side rate limit that
// speaks protobuf: the fastest a client can drive the API server.
func directConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS = -1
	c.Burst = 0
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.UserAgent = "bench"
	return c
}

var etcdVersionRE = regexp.MustCompile(`etcd Version:\s*(\S+)`)

func etcdVersion(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	if m := etcdVersionRE.FindSubmatch(out); m != nil {
		return "v" + strings.TrimPrefix(string(m[1]), "v")
	}
	return "unknown"
}

// percentile returns the p-th percentile (0..100) of sorted durations,
// nearest-rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}
