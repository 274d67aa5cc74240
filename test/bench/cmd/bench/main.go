// Command bench runs the benchmark suite (`make bench`): it starts a fresh
// local control plane, measures the API server's limit and the controllers
// against it, prints a table and writes the figures as JSON to
// <out>/<UTC timestamp>-<commit>.json (an incomplete run goes to <out>/tmp/).
// Results accumulate: `make docs` renders every one of them into
// docs/benchmarks.md.
//
// Usage: go run ./test/bench/cmd/bench [-n 1000] [-out bench-results] [flags]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kube-sample/controller-manager/test/bench"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

func main() {
	// The routable step needs backends on an address the API server accepts
	// in EndpointSlices: the whole run happens in a private network
	// namespace when one can be made (else that step is skipped).
	os.Exit(dataplane.Main(run))
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func run() int {
	root, err := framework.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	n := flag.Int("n", 1000, "Number of objects (Services, Ingresses) per phase.")
	cfg := bench.DefaultConfig(0)
	out := flag.String("out", filepath.Join(root, "bench-results"), "Directory of the JSON results (<timestamp>-<commit>.json; `make docs` renders them into docs/benchmarks.md).")
	table := flag.String("table", "", "Only print the table of this results file (no run).")
	var managerArgs listFlag
	flag.Var(&managerArgs, "manager-arg", "Extra controller-manager flag for the ingress-manager runs (repeatable), e.g. -manager-arg=--ingress-manager-workers=32.")
	flag.StringVar(&cfg.ManagerBinary, "manager", "", "A built controller-manager binary; default: build ./cmd/controller-manager.")
	flag.IntVar(&cfg.ColdRuns, "cold-runs", cfg.ColdRuns, "Cold starts of the ingress-manager phase and of each contender of the peer phase, each against the direct create rate measured just before it; the median is reported.")
	flag.DurationVar(&cfg.RestartWindow, "restart-window", cfg.RestartWindow, "How long writes are counted after a restart on converged state.")
	flag.DurationVar(&cfg.IdleWindow, "idle-window", cfg.IdleWindow, "How long writes are counted when idle.")
	flag.DurationVar(&cfg.IdleResync, "idle-resync", cfg.IdleResync, "The manager's --resync-period in the restart and idle windows.")
	flag.DurationVar(&cfg.SteadyWindow, "steady-window", cfg.SteadyWindow, "How long the steady-state generator runs at each rate.")
	flag.IntVar(&cfg.Routable, "routable", cfg.Routable, "Services of the event -> routable step (through Traefik, bin/traefik); 0 skips it.")
	flag.Float64Var(&cfg.RoutableRate, "routable-rate", cfg.RoutableRate, "Annotations per second of the event -> routable step.")
	flag.IntVar(&cfg.Networks, "networks", cfg.Networks, "Networks per network case.")
	conc := flag.String("concurrency", "1,4,16,64", "Client concurrencies of the limit phase.")
	flag.IntVar(&cfg.NeutronNetworks, "neutron-networks", cfg.NeutronNetworks, "Networks per neutron case (real Neutron of TEST_OPENSTACK_DIR; `make bench` starts one); 0 skips the phase.")
	flag.IntVar(&cfg.NeutronRestartNetworks, "neutron-restart-networks", cfg.NeutronRestartNetworks, "Converged Networks of the neutron phase's restart; 0 skips it.")
	flag.IntVar(&cfg.NeutronImportNetworks, "neutron-import-networks", cfg.NeutronImportNetworks, "Networks made in Neutron beforehand and imported by ID, by Unmanaged and by Managed Networks, in the neutron phase's import case; 0 skips it.")
	neutronWorkers := flag.String("neutron-workers", "1,4,16,64", "Worker counts (and direct-client concurrencies) of the neutron phase.")
	skip := flag.String("skip", "", "Comma-separated phases not to run: "+strings.Join(phases, ", ")+" (for quick tuning runs).")
	only := flag.String("only", "", "Comma-separated phases to run, every other one skipped (as -skip names them); the manager at N=0 always starts.")
	flag.BoolVar(&cfg.Scale, "scale", false, "A point of the ingress-manager's scale curve at N: only one cold start, the annotation removal and its memory at N=0 and with N Services cached, and the cold starts of the manager and the informer floor on fresh control planes; no limit sweep, re-add, recreate, restart, idle, controller-runtime peer, steady, routable, httproute, network or neutron.")
	flag.IntVar(&cfg.Pods, "pods", 0, "Pods of the podlogger phase (pod-logger alone, on Pods created directly: cache sync, memory per Pod, update -> log line lag, CPU per update); 0 skips it.")
	flag.Float64Var(&cfg.PodUpdateRate, "pod-update-rate", cfg.PodUpdateRate, "Pod updates per second of the podlogger phase, each to its own Pod.")
	flag.DurationVar(&cfg.PodUpdateWindow, "pod-update-window", cfg.PodUpdateWindow, "How long the podlogger phase's updates run (at most one per Pod).")
	flag.IntVar(&cfg.ScaleNetworks, "scale-networks", 0, "Networks of the network-scale phase (the manager binary's network controller on its memory backend: time to Ready, RSS, and an in-process restart on converged state); 0 skips it.")
	flag.DurationVar(&cfg.GCWait, "gc-wait", cfg.GCWait, "Longest wait for a manager GC before a heap reading.")
	flag.StringVar(&cfg.CPUProfileDir, "cpuprofile", "", "Directory for a CPU profile of the manager over each cold start but the last (cold-<i>.pprof), and what it allocated by then (cold-<i>.allocs.pprof); `go tool pprof` reads them. Empty: none.")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench: unexpected arguments %q\n", flag.Args())
		return 2
	}
	if *table != "" {
		b, err := os.ReadFile(*table)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		var res bench.Result
		if err := json.Unmarshal(b, &res); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", *table, err)
			return 1
		}
		res.WriteTable(os.Stdout)
		return 0
	}
	cfg.N = *n
	if cfg.Concurrencies, err = positiveInts("concurrency", *conc); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if cfg.NeutronWorkers, err = positiveInts("neutron-workers", *neutronWorkers); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	cfg.OpenStackDir = os.Getenv("TEST_OPENSTACK_DIR")
	cfg.Skip = map[string]bool{}
	skipped, err := phaseList("skip", *skip)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	for _, s := range skipped {
		cfg.Skip[s] = true
	}
	if *only != "" {
		kept, err := phaseList("only", *only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 2
		}
		for _, p := range phases {
			if !slices.Contains(kept, p) {
				cfg.Skip[p] = true
			}
		}
	}
	cfg.ManagerArgs = managerArgs
	cfg.Log = os.Stderr

	// Ctrl-C or SIGTERM stops the run; everything started is stopped and
	// removed before exiting.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	res, err := bench.Run(ctx, cfg)
	if res == nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	res.WriteTable(os.Stdout)
	dir := *out
	if err != nil {
		dir = filepath.Join(*out, "tmp")
	}
	path, werr := res.WriteJSON(dir)
	if werr != nil {
		fmt.Fprintln(os.Stderr, "bench: writing results:", werr)
		return 1
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: incomplete run (partial results in %s): %v\n", path, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "bench: results written to %s (%s)\n", path, time.Since(res.Started).Round(time.Second))
	return 0
}

// phases are the names -skip and -only take.
var phases = []string{"limit", "ingress-manager", "steady", "routable", "peer", "httproute", "network", "neutron", "podlogger", "network-scale"}

// phaseList parses the comma-separated phases of flag name.
func phaseList(name, list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		switch s = strings.TrimSpace(s); {
		case s == "":
		case slices.Contains(phases, s):
			out = append(out, s)
		default:
			return nil, fmt.Errorf("-%s: unknown phase %q (%s)", name, s, strings.Join(phases, ", "))
		}
	}
	return out, nil
}

// positiveInts parses the comma-separated list of flag name.
func positiveInts(name, list string) ([]int, error) {
	var out []int
	for _, c := range strings.Split(list, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("-%s: %q is not a positive integer", name, c)
		}
		out = append(out, v)
	}
	return out, nil
}
