package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
)

// Result is the outcome of one run; it is written as JSON.
type Result struct {
	Started         time.Time `json:"started"`
	Finished        time.Time `json:"finished"`
	DurationSeconds float64   `json:"duration_seconds"`
	N               int       `json:"n"`
	// Commit is the source tree the run measured: `git rev-parse --short
	// HEAD`, with "-dirty" when tracked files differed from it.
	Commit string `json:"commit"`
	Error  string `json:"error,omitempty"`
	// Steps are the run's top-level phases in order, with how each ended,
	// so that an incomplete run shows where it stopped.
	Steps    []Step        `json:"steps,omitempty"`
	Versions Versions      `json:"versions"`
	Machine  Machine       `json:"machine"`
	Settings Settings      `json:"settings"`
	Limit    Limit         `json:"limit"`
	Ingress  Ingress       `json:"ingress_manager"`
	Memory   Memory        `json:"memory"`
	Network  []NetCase     `json:"network"`
	Neutron  []NeutronCase `json:"neutron,omitempty"`
	// NeutronRestart is the neutron phase's restart with converged Networks.
	NeutronRestart *NeutronRestart `json:"neutron_restart,omitempty"`
	// NeutronImport is the neutron phase's import case, one per policy.
	NeutronImport []NeutronImport `json:"neutron_import,omitempty"`
	HTTPRoute     *RouteResult    `json:"httproute,omitempty"`
	// Peer is the cold start of ingress-manager and of its
	// controller-runtime peer, each on a fresh control plane.
	Peer []Contender `json:"peer,omitempty"`
	// Scale is the run's point of the scale curve (ScalePoint).
	Scale        *ScalePoint   `json:"scale_point,omitempty"`
	PodLogger    *PodLogger    `json:"podlogger,omitempty"`
	NetworkScale *NetworkScale `json:"network_scale,omitempty"`
	Targets      []Target      `json:"targets"`
}

// Step is one top-level phase of a run.
type Step struct {
	Name    string    `json:"name"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Outcome is "done", "skipped" or "failed"; Detail says why it was
	// skipped or failed.
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// Versions of what ran.
type Versions struct {
	KubeAPIServer string `json:"kube_apiserver"`
	Etcd          string `json:"etcd"`
	Go            string `json:"go"`
	ManagerGo     string `json:"manager_go,omitempty"`
}

// Settings are the knobs the run used.
type Settings struct {
	ManagerArgs      []string `json:"manager_args"`
	Concurrencies    []int    `json:"limit_concurrencies"`
	RestartWindowS   float64  `json:"restart_window_seconds"`
	IdleWindowS      float64  `json:"idle_window_seconds"`
	IdleResyncS      float64  `json:"idle_resync_seconds"`
	SteadyWindowS    float64  `json:"steady_window_seconds"`
	NetworksPerCase  int      `json:"networks_per_case"`
	ManagerBuildArgs []string `json:"manager_build_flags,omitempty"`
	// Scale: only what the scale curve needs (Config.Scale).
	Scale            bool    `json:"scale,omitempty"`
	PodUpdateRate    float64 `json:"pod_update_rate,omitempty"`
	PodUpdateWindowS float64 `json:"pod_update_window_seconds,omitempty"`
}

// Rate is a throughput at one client concurrency.
type Rate struct {
	Concurrency int     `json:"concurrency"`
	Objects     int     `json:"objects"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"per_second"`
	// CPUms is the CPU the API server and etcd used per object, in ms:
	// the cost of one request, whatever else runs on the machine.
	CPUms float64 `json:"control_plane_cpu_ms_per_object"`
}

// Limit is what a direct client gets from the API server.
type Limit struct {
	Creates []Rate `json:"creates"`
	Updates []Rate `json:"updates"`
	Deletes []Rate `json:"deletes"`
	// Applies are server-side-apply creates at the concurrency of the best
	// creates, for analysis: what a create would cost if ingress-manager
	// created by apply (it creates with a plain create, and applies only
	// changes, for this cost).
	Applies []Rate `json:"applies"`
	// L is the best creates/s; LUpdate, LDelete, LApply likewise.
	L       float64 `json:"l_creates_per_second"`
	LUpdate float64 `json:"l_updates_per_second"`
	LDelete float64 `json:"l_deletes_per_second"`
	LApply  float64 `json:"l_applies_per_second"`
	// OtherCPU is the share of the machine's CPU other processes used
	// during the limit phase.
	OtherCPU float64 `json:"other_processes_cpu_share"`
}

// Phase is one ingress-manager convergence phase.
type Phase struct {
	Name string `json:"name"`
	// Seconds from the start (manager start, or the harness's first
	// write) until the independent watch saw the end state.
	Seconds float64 `json:"seconds"`
	// HarnessSeconds is how long the harness's own writes took (remove,
	// re-add: N patches; recreate: one deletecollection).
	HarnessSeconds float64 `json:"harness_seconds,omitempty"`
	// CacheSyncSeconds: manager start to /readyz (cold only).
	CacheSyncSeconds float64 `json:"cache_sync_seconds,omitempty"`
	// Ratio is Seconds / (N/L): 1.0 is as fast as the API server creates.
	Ratio float64 `json:"ratio_to_n_over_l"`
	// RatioApply is Seconds / (N/LApply): against the rate of
	// server-side-apply creates, for analysis.
	RatioApply float64 `json:"ratio_to_n_over_l_apply,omitempty"`
	// CPUms is the control plane's CPU (API server + etcd) per object, in
	// ms, and CPURatio its ratio to that of a direct create at L: the
	// phase's cost to the API server, independent of the machine's load.
	CPUms    float64 `json:"control_plane_cpu_ms_per_object"`
	CPURatio float64 `json:"control_plane_cpu_ratio_to_create"`
	// IngressWrites are the manager's writes of Ingresses, by verb.
	IngressWrites   map[string]int64 `json:"ingress_writes"`
	WritesPerObject float64          `json:"ingress_writes_per_object"`
	// EventWrites are the manager's writes of Events.
	EventWrites int64 `json:"event_writes"`
	// ManagerCPUSeconds is the CPU time the manager used in the phase, and
	// RateLimitedSeconds how long its requests waited for its client-side
	// rate limiter (summed over requests).
	ManagerCPUSeconds float64 `json:"manager_cpu_seconds"`
	// OtherCPU is the share of the machine's CPU other processes used
	// during the phase.
	OtherCPU           float64 `json:"other_processes_cpu_share"`
	RateLimitedSeconds float64 `json:"manager_rate_limited_seconds"`
	// OtherWrites are every other write in the API server during the
	// phase (the harness's own, the API server's leases), by verb+resource.
	OtherWrites map[string]int64 `json:"other_writes,omitempty"`
	// Runs are the cold phase's starts (see Config.ColdRuns), each against
	// the direct create rate measured just before it; Seconds and Ratio
	// are then those of the median run, and every other figure is the
	// last run's.
	Runs []ColdRun `json:"runs,omitempty"`
}

// ColdRun is one cold start of a repeated measurement: L is the direct
// create rate (Ingresses/s at concurrency 64) measured on the same control
// plane just before it, Seconds from the start to the N-th Ingress seen,
// Ratio is Seconds / (N/L).
type ColdRun struct {
	L       float64 `json:"l"`
	Seconds float64 `json:"seconds"`
	Ratio   float64 `json:"ratio"`
}

// medianRun returns the run of the median Ratio (of two middle ones, the
// higher: the figure never flatters).
func medianRun(runs []ColdRun) ColdRun {
	if len(runs) == 0 {
		return ColdRun{}
	}
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b ColdRun) int { return cmpF(a.Ratio, b.Ratio) })
	return sorted[len(sorted)/2]
}

// ratios formats the runs' ratios in the order they ran.
func ratios(runs []ColdRun) string {
	var out []string
	for _, r := range runs {
		out = append(out, fmt.Sprintf("%.2f", r.Ratio))
	}
	return strings.Join(out, ", ")
}

// RouteResult is the HTTPRoute phase: ingress-manager with --ingress-gateway
// against the API server's own rate for HTTPRoutes.
type RouteResult struct {
	// Creates is the direct client's rate of HTTPRoute creates (L_route).
	Creates Rate       `json:"direct_creates"`
	Cold    RoutePhase `json:"cold"`
}

// RoutePhase is a manager started on N Services that ask for a Gateway.
type RoutePhase struct {
	Seconds          float64 `json:"seconds"`
	CacheSyncSeconds float64 `json:"cache_sync_seconds"`
	// Ratio is Seconds / (N/L_route).
	Ratio           float64          `json:"ratio_to_n_over_l_route"`
	Writes          map[string]int64 `json:"httproute_writes"`
	WritesPerObject float64          `json:"httproute_writes_per_object"`
	IngressWrites   int64            `json:"ingress_writes"`
	EventWrites     int64            `json:"event_writes"`
	CPUms           float64          `json:"control_plane_cpu_ms_per_object"`
}

// Window is a write count over a quiet period.
type Window struct {
	Seconds float64 `json:"seconds"`
	// Writes are every write but the API server's own lease renewals.
	Writes   int64            `json:"writes"`
	ByVerb   map[string]int64 `json:"writes_by_verb_resource,omitempty"`
	Resync   float64          `json:"resync_seconds,omitempty"`
	Syncs    int64            `json:"manager_syncs"`
	CacheSyn float64          `json:"cache_sync_seconds,omitempty"`
}

// Steady is the latency at one event rate.
type Steady struct {
	TargetRate   float64 `json:"target_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	Events       int     `json:"events"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
	Maxms        float64 `json:"max_ms"`
	// GeneratorLagMs is how late the open-loop generator sent its worst
	// event (it should be ~0: the generator keeps its schedule).
	GeneratorLagMs float64 `json:"generator_lag_ms"`
	Missing        int     `json:"missing"`
	WritesPerEvent float64 `json:"ingress_writes_per_event"`
	OtherCPU       float64 `json:"other_processes_cpu_share"`
}

// Ingress holds the ingress-manager figures.
type Ingress struct {
	Phases  []Phase  `json:"phases"`
	Restart Window   `json:"restart"`
	Idle    Window   `json:"idle"`
	Steady  []Steady `json:"steady_state"`
	// Routable is nil when the step was not asked for.
	Routable *Routable `json:"routable,omitempty"`
}

// Heap is the manager's memory at one point.
type Heap struct {
	Objects int `json:"services"`
	// Ingresses cached alongside.
	Ingresses int `json:"ingresses"`
	// PeakRSS is VmHWM of the manager process, RSS VmRSS at the reading.
	PeakRSS int64 `json:"peak_rss_bytes"`
	RSS     int64 `json:"rss_bytes"`
	// HeapLive is go_gc_heap_live_bytes: the heap marked live by the last
	// GC, i.e. the Go heap in use after GC.
	HeapLive  int64 `json:"heap_live_after_gc_bytes"`
	HeapInuse int64 `json:"heap_inuse_bytes"`
	HeapAlloc int64 `json:"heap_alloc_bytes"`
	// GCAfterState: a GC completed after the state was reached (else the
	// live heap is that of an earlier GC).
	GCAfterState bool `json:"gc_after_state"`
}

// Memory holds the manager's memory figures.
type Memory struct {
	Empty    Heap `json:"n0"`
	Services Heap `json:"n_services_no_ingresses"`
	Full     Heap `json:"n_services_and_ingresses"`
	// BytesPerService is (Services.HeapLive - Empty.HeapLive) / N.
	BytesPerService float64 `json:"heap_bytes_per_service"`
	// BytesPerPair is (Full.HeapLive - Empty.HeapLive) / N: a Service and
	// its Ingress.
	BytesPerPair float64 `json:"heap_bytes_per_service_and_ingress"`
}

// NetCase is one network throughput case.
type NetCase struct {
	LatencyMs float64 `json:"backend_latency_ms"`
	Workers   int     `json:"workers"`
	Networks  int     `json:"networks"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"networks_per_second"`
	// Writes per Network (finalizer + status), and Events.
	WritesPerNetwork float64 `json:"writes_per_network"`
}

// NeutronCase is one case of the neutron phase.
type NeutronCase struct {
	Workers  int     `json:"workers"`
	Networks int     `json:"networks"`
	Seconds  float64 `json:"seconds"`
	// PerSecond is Networks to Ready per second; DirectPerSecond the rate
	// of a direct client making the same Neutron requests at the same
	// concurrency; Ratio the first over the second.
	PerSecond       float64 `json:"networks_per_second"`
	DirectPerSecond float64 `json:"direct_per_second"`
	Ratio           float64 `json:"ratio"`
	// RequestsPerNetwork counts every Neutron API request the controller
	// made for the Networks (its start's List apart), from Neutron's
	// access log.
	RequestsPerNetwork float64 `json:"neutron_requests_per_network"`
	// RequestKinds counts those requests by method, resource, query keys
	// and status (requestKind): what a retry added shows there.
	RequestKinds map[string]int `json:"neutron_request_kinds,omitempty"`
}

// NeutronRestart is a manager restarted with Networks converged in Neutron:
// the Neutron requests (from Neutron's access log) until it has synced
// every one again.
type NeutronRestart struct {
	Networks int `json:"networks"`
	Requests int `json:"neutron_requests"`
	// PageSize is the backend's List page size.
	PageSize int      `json:"page_size"`
	Paths    []string `json:"requests,omitempty"`
	// ConvergeSeconds is how long the Networks took to converge before
	// the restart (their creation, not measured against a goal).
	ConvergeSeconds float64 `json:"converge_seconds,omitempty"`
}

// NeutronImport is the neutron phase's import case: Networks of Policy
// importing, by ID, networks made in Neutron beforehand.
type NeutronImport struct {
	Policy   string  `json:"policy"`
	Networks int     `json:"networks"`
	Workers  int     `json:"workers"`
	Seconds  float64 `json:"seconds"`
	// PerSecond is Networks to Ready per second.
	PerSecond float64 `json:"networks_per_second"`
	// RequestsPerNetwork counts the Neutron requests of binding them (the
	// start's List apart), from Neutron's access log; RequestKinds by
	// kind (requestKind).
	RequestsPerNetwork float64        `json:"neutron_requests_per_network"`
	RequestKinds       map[string]int `json:"neutron_request_kinds,omitempty"`
	// RestartRequests counts the Neutron requests of a manager restarted
	// with them all bound, until it synced every one again.
	RestartRequests int      `json:"restart_requests"`
	RestartPaths    []string `json:"restart_requests_kinds,omitempty"`
}

// importRestartBudget is the most requests a restart with n converged
// imports of policy may take: the List's (restartBudget), and for
// Unmanaged ones, whose networks carry no tag of ours, a list of networks
// and one of subnets per 100 of them.
func importRestartBudget(policy string, n, page int) int {
	if policy == "Unmanaged" {
		return restartBudget(0, page) + 2*((n+99)/100)
	}
	return restartBudget(n, page)
}

// importBindBudget is the most Neutron requests binding one import of
// policy may take: the network's GET and its subnets' list, and for
// Managed the network's claim (its UID tag added alone, the tags read
// back: race-free against another claim) and a tag write each for the
// network and the subnet.
func importBindBudget(policy string) float64 {
	if policy == "Unmanaged" {
		return 2
	}
	return 6
}

func importBindTarget(policy string) string { return fmt.Sprintf("<= %.0f", importBindBudget(policy)) }

func importRestartTarget(policy string) string {
	if policy == "Unmanaged" {
		return "<= 2 x N/100 + a few"
	}
	return "<= N/page + a few"
}

// restartBudget is the most requests a restart with n converged Networks
// may take: one paginated List of networks and one of subnets (each n/page
// pages and a last, short or empty, one), and a few.
func restartBudget(n, page int) int { return 2*(n/page+1) + 2 }

// Target is one goal the run is checked against, and whether it met it.
type Target struct {
	Name     string `json:"name"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
	// Reading marks a figure reported for reading, with no goal.
	Reading bool   `json:"reading,omitempty"`
	Note    string `json:"note,omitempty"`
}

func newResult(cfg Config) *Result {
	return &Result{
		Started: time.Now().UTC(),
		N:       cfg.N,
		Commit:  sourceCommit(),
		Versions: Versions{
			Go: machineInfo().GoVersion,
		},
		Machine: machineInfo(),
		Settings: Settings{
			ManagerArgs:      append([]string{}, cfg.ManagerArgs...),
			Concurrencies:    cfg.Concurrencies,
			RestartWindowS:   cfg.RestartWindow.Seconds(),
			IdleWindowS:      cfg.IdleWindow.Seconds(),
			IdleResyncS:      cfg.IdleResync.Seconds(),
			SteadyWindowS:    cfg.SteadyWindow.Seconds(),
			NetworksPerCase:  cfg.Networks,
			ManagerBuildArgs: cfg.BuildFlags,
			Scale:            cfg.Scale,
			PodUpdateRate:    podRate(cfg),
			PodUpdateWindowS: podWindow(cfg),
		},
	}
}

func (r *Result) phase(name string) *Phase {
	for i := range r.Ingress.Phases {
		if r.Ingress.Phases[i].Name == name {
			return &r.Ingress.Phases[i]
		}
	}
	return nil
}

// Goals against the informer floor and the controller-runtime peer, each
// measured in the same run, on fresh control planes, taking turns: a
// controller cannot be faster than the floor (the list, the watch and the
// creates any informer-based controller makes), so a goal stated against
// N/L alone can lie below what the machine allows.
const (
	ColdVersusFloor = 1.10 // the manager's cold time, at most this x the floor's
	CPUVersusFloor  = 1.3  // the manager's CPU until settled, at most this x the floor's
	FasterThanPeer  = 2.5  // the peer's cold time, at least this x the manager's
)

// computeTargets fills Targets from the figures.
func (r *Result) computeTargets() {
	r.Targets = nil
	if cold := r.phase("cold"); cold != nil {
		r.Targets = append(r.Targets, Target{
			Name: "cold convergence", Target: "reading: x N/L",
			Measured: coldMeasured(cold, r.N, r.Limit.L), Met: true, Reading: true, Note: r.coldNotes(),
		})
	}
	ours, haveOurs := r.Contender(ContenderOurs)
	peer, havePeer := r.Contender(ContenderPeer)
	floor, haveFloor := r.Contender(ContenderFloor)
	if haveOurs {
		r.Targets = append(r.Targets, Target{
			Name: "cold convergence on a fresh control plane", Target: "reading: x N/L",
			Measured: contenderMeasured(ours, r.N), Met: true, Reading: true, Note: r.coldNotes(),
		})
	}
	if haveOurs && haveFloor {
		r.Targets = append(r.Targets,
			Target{
				Name: "cold time against the informer floor's", Target: fmt.Sprintf("<= %.2f x floor", ColdVersusFloor),
				Measured: fmt.Sprintf("%.2f x (%.2fs vs %.2fs)", ours.ColdSeconds/floor.ColdSeconds, ours.ColdSeconds, floor.ColdSeconds),
				Met:      ours.ColdSeconds > 0 && floor.ColdSeconds > 0 && ours.ColdSeconds <= ColdVersusFloor*floor.ColdSeconds,
			},
			Target{
				Name: "CPU until settled against the informer floor's", Target: fmt.Sprintf("<= %.1f x floor", CPUVersusFloor),
				Measured: fmt.Sprintf("%.2f x (%.2f vs %.2f CPU-s)", ours.CPUSeconds/floor.CPUSeconds, ours.CPUSeconds, floor.CPUSeconds),
				Met:      ours.CPUSeconds > 0 && floor.CPUSeconds > 0 && ours.CPUSeconds <= CPUVersusFloor*floor.CPUSeconds,
			})
	}
	if haveOurs && havePeer {
		rss := Target{
			Name: "peak RSS below the controller-runtime peer's", Target: "< peer",
			Measured: fmt.Sprintf("%s vs %s", mib(ours.PeakRSS), mib(peer.PeakRSS)),
			Met:      ours.PeakRSS > 0 && ours.PeakRSS < peer.PeakRSS,
		}
		if haveFloor {
			rss.Name, rss.Target = "peak RSS below the informer floor's and the controller-runtime peer's", "< floor, < peer"
			rss.Measured = fmt.Sprintf("%s vs %s and %s", mib(ours.PeakRSS), mib(floor.PeakRSS), mib(peer.PeakRSS))
			rss.Met = rss.Met && ours.PeakRSS < floor.PeakRSS
		}
		r.Targets = append(r.Targets, rss, Target{
			Name: fmt.Sprintf("cold at least %.1fx faster than the controller-runtime peer", FasterThanPeer), Target: fmt.Sprintf(">= %.1fx", FasterThanPeer),
			Measured: fmt.Sprintf("%.2fx (%.2fs vs %.2fs)", peer.ColdSeconds/ours.ColdSeconds, ours.ColdSeconds, peer.ColdSeconds),
			Met:      ours.ColdSeconds > 0 && peer.ColdSeconds >= FasterThanPeer*ours.ColdSeconds,
		})
	}
	worst := 0.0
	var names []string
	for _, p := range r.Ingress.Phases {
		if p.WritesPerObject > worst {
			worst = p.WritesPerObject
		}
		names = append(names, fmt.Sprintf("%s %.2f", p.Name, p.WritesPerObject))
	}
	if len(names) > 0 {
		r.Targets = append(r.Targets, Target{
			Name: "writes per converged object", Target: "1.00",
			Measured: strings.Join(names, ", "), Met: worst <= 1.0 && worst > 0,
			Note: "Ingress writes; Events are counted apart",
		})
	}
	if r.Ingress.Restart.Seconds > 0 {
		r.Targets = append(r.Targets, Target{
			Name: "writes on restart", Target: "0",
			Measured: fmt.Sprintf("%d in %.0fs", r.Ingress.Restart.Writes, r.Ingress.Restart.Seconds),
			Met:      r.Ingress.Restart.Writes == 0,
		})
	}
	if r.Ingress.Idle.Seconds > 0 {
		r.Targets = append(r.Targets, Target{
			Name: "writes when idle (resync on)", Target: "0",
			Measured: fmt.Sprintf("%d in %.0fs, %d syncs", r.Ingress.Idle.Writes, r.Ingress.Idle.Seconds, r.Ingress.Idle.Syncs),
			Met:      r.Ingress.Idle.Writes == 0 && r.Ingress.Idle.Syncs > 0,
		})
	}
	if r.Memory.Services.HeapLive > 0 && r.Memory.Empty.HeapLive > 0 {
		r.Targets = append(r.Targets, Target{
			Name: "Go heap per cached Service", Target: "<= 2 KiB",
			Measured: withIngress(fmt.Sprintf("%.0f B", r.Memory.BytesPerService), r.Memory),
			Met:      r.Memory.BytesPerService <= 2048, Note: heapNote(r.N),
		})
	}
	if rt := r.HTTPRoute; rt != nil && rt.Cold.Seconds > 0 {
		r.Targets = append(r.Targets,
			Target{
				Name: "HTTPRoute cold convergence", Target: "<= 1.15 x N/L_route",
				Measured: fmt.Sprintf("%.2f x N/L_route (%.2fs, N/L_route=%.2fs)", rt.Cold.Ratio, rt.Cold.Seconds, float64(r.N)/rt.Creates.PerSecond),
				Met:      rt.Cold.Ratio > 0 && rt.Cold.Ratio <= 1.15,
			},
			Target{
				Name: "HTTPRoute writes per converged object", Target: "1.00",
				Measured: fmt.Sprintf("%.2f %s", rt.Cold.WritesPerObject, verbs(rt.Cold.Writes)),
				Met:      rt.Cold.WritesPerObject > 0 && rt.Cold.WritesPerObject <= 1.0 && rt.Cold.IngressWrites == 0,
			})
	}
	if len(r.Neutron) > 0 {
		minRatio, maxReqs := math.Inf(1), 0.0
		var ratios, reqs []string
		for _, c := range r.Neutron {
			minRatio, maxReqs = math.Min(minRatio, c.Ratio), math.Max(maxReqs, c.RequestsPerNetwork)
			ratios = append(ratios, fmt.Sprintf("%.2f", c.Ratio))
			reqs = append(reqs, fmt.Sprintf("%.1f", c.RequestsPerNetwork))
		}
		r.Targets = append(r.Targets,
			Target{Name: "neutron: controller / direct client Networks/s", Target: ">= 0.9 at every worker count",
				Measured: strings.Join(ratios, ", "), Met: minRatio >= 0.9},
			Target{Name: "neutron: requests per new Network", Target: "<= 5",
				Measured: strings.Join(reqs, ", "), Met: maxReqs <= 5})
	}
	if rs := r.NeutronRestart; rs != nil {
		r.Targets = append(r.Targets, Target{
			Name: fmt.Sprintf("neutron: requests of a restart with %d converged Networks", rs.Networks), Target: "<= N/page + a few",
			Measured: fmt.Sprintf("%d (page %d)", rs.Requests, rs.PageSize), Met: rs.Requests <= restartBudget(rs.Networks, rs.PageSize),
		})
	}
	for _, c := range r.NeutronImport {
		r.Targets = append(r.Targets,
			Target{Name: fmt.Sprintf("neutron: requests to bind a %s import", c.Policy), Target: importBindTarget(c.Policy),
				Measured: fmt.Sprintf("%.2f", c.RequestsPerNetwork), Met: c.RequestsPerNetwork > 0 && c.RequestsPerNetwork <= importBindBudget(c.Policy)},
			Target{Name: fmt.Sprintf("neutron: requests of a restart with %d %s imports", c.Networks, c.Policy), Target: importRestartTarget(c.Policy),
				Measured: fmt.Sprint(c.RestartRequests), Met: c.RestartRequests <= importRestartBudget(c.Policy, c.Networks, neutron.DefaultPageSize)})
	}
	for _, s := range r.Ingress.Steady {
		if s.TargetRate == 50 {
			r.Targets = append(r.Targets, Target{
				Name: "steady-state p99 at 50 events/s", Target: "<= 20 ms",
				Measured: fmt.Sprintf("%.1f ms", s.P99ms), Met: s.Events > 0 && s.Missing == 0 && s.P99ms <= 20,
			})
		}
	}
}

// FileName is the result's file name, <UTC start time>-<commit>.json: every
// result names the source it measured.
func (r *Result) FileName() string {
	commit := r.Commit
	if commit == "" {
		commit = "unknown"
	}
	return r.Started.Format("20060102T150405Z") + "-" + commit + ".json"
}

// WriteJSON writes the result to dir/FileName() and returns the path.
func (r *Result) WriteJSON(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.FileName())
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// WriteTable prints the human summary as Markdown tables, which
// docs/benchmarks.md (make docs) shows for every result.
func (r *Result) WriteTable(out io.Writer) {
	w := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	row := func(cells ...string) { fmt.Fprintln(w, "| "+strings.Join(cells, "\t| ")+"\t|") }
	sep := func(n int) { row(strings.Split(strings.Repeat("---,", n), ",")[:n]...) }
	flush := func() { w.Flush(); fmt.Fprintln(out) }

	m := r.Machine
	fmt.Fprintf(out, "Measured %s at commit %s, N=%d, on %d cores (%s), %.1f GiB RAM; load average (1 min) %.2f at start, %.2f at end;\n"+
		"other processes used %.0f%% of the CPU during the run (the benchmark's own processes excluded).\n",
		r.Started.Format("2006-01-02 15:04 UTC"), r.Commit, r.N, m.Cores, m.CPUModel, float64(m.RAMBytes)/(1<<30), m.LoadStart, m.LoadEnd, 100*m.OtherCPU)
	fmt.Fprintf(out, "kube-apiserver %s, etcd %s, %s; run took %.0fs.\n\n", r.Versions.KubeAPIServer, r.Versions.Etcd, r.Versions.Go, r.DurationSeconds)
	if r.Error != "" {
		fmt.Fprintf(out, "INCOMPLETE: %s\n\n", r.Error)
	}

	if len(r.Steps) > 0 {
		row("step", "started", "seconds", "outcome")
		sep(4)
		for _, s := range r.Steps {
			outcome := s.Outcome
			if s.Detail != "" {
				outcome += ": " + s.Detail
			}
			row(s.Name, s.Started.Format("15:04:05"), fmt.Sprintf("%.1f", s.Seconds), outcome)
		}
		flush()
	}

	if len(r.Limit.Creates) > 0 {
		row("API server limit (direct client)", "concurrency", "creates/s", "updates/s", "deletes/s", "control plane CPU per create")
		sep(6)
		for i, c := range r.Limit.Creates {
			u, d := "", ""
			if i < len(r.Limit.Updates) {
				u = fmt.Sprintf("%.0f", r.Limit.Updates[i].PerSecond)
			}
			if i < len(r.Limit.Deletes) {
				d = fmt.Sprintf("%.0f", r.Limit.Deletes[i].PerSecond)
			}
			row("", fmt.Sprint(c.Concurrency), fmt.Sprintf("%.0f", c.PerSecond), u, d, fmt.Sprintf("%.2f ms", c.CPUms))
		}
		for _, a := range r.Limit.Applies {
			row("server-side apply creates", fmt.Sprint(a.Concurrency), fmt.Sprintf("%.0f", a.PerSecond), "", "", fmt.Sprintf("%.2f ms", a.CPUms))
		}
		row("**L** (best)", "", fmt.Sprintf("**%.0f**", r.Limit.L), fmt.Sprintf("%.0f", r.Limit.LUpdate), fmt.Sprintf("%.0f", r.Limit.LDelete),
			fmt.Sprintf("(other processes: %.0f%% of the CPU)", 100*r.Limit.OtherCPU))
		flush()
	}

	if len(r.Ingress.Phases) > 0 {
		row("ingress-manager phase", "time", "time / (N/L) (and / (N/L_apply))", "Ingress writes/object", "Ingress writes by verb", "Event writes", "control plane CPU/object (x create)", "manager CPU", "other processes' CPU")
		sep(9)
		for _, p := range r.Ingress.Phases {
			t := fmt.Sprintf("%.2fs", p.Seconds)
			if p.CacheSyncSeconds > 0 {
				t += fmt.Sprintf(" (caches synced %.2fs)", p.CacheSyncSeconds)
			}
			if p.HarnessSeconds > 0 {
				t += fmt.Sprintf(" (harness writes %.2fs)", p.HarnessSeconds)
			}
			ratio := fmt.Sprintf("%.2f (%.2f)", p.Ratio, p.RatioApply)
			if len(p.Runs) > 1 {
				ratio = fmt.Sprintf("median %.2f of %s, each against its own L (%.2f)", p.Ratio, ratios(p.Runs), p.RatioApply)
			}
			row(p.Name, t, ratio, fmt.Sprintf("%.2f", p.WritesPerObject), verbs(p.IngressWrites), fmt.Sprint(p.EventWrites),
				fmt.Sprintf("%.2f ms (%.2f)", p.CPUms, p.CPURatio), fmt.Sprintf("%.1fs", p.ManagerCPUSeconds), fmt.Sprintf("%.0f%%", 100*p.OtherCPU))
		}
		flush()
	}

	if r.Ingress.Restart.Seconds > 0 {
		row("ingress-manager converged", "window", "API writes (but the API server's leases)", "writes by verb", "manager syncs in the window")
		sep(5)
		x := r.Ingress.Restart
		row(fmt.Sprintf("restart (caches synced %.2fs, resync %gs)", x.CacheSyn, x.Resync), fmt.Sprintf("%.0fs", x.Seconds), fmt.Sprint(x.Writes), verbs(x.ByVerb), fmt.Sprint(x.Syncs))
		if x := r.Ingress.Idle; x.Seconds > 0 {
			row(fmt.Sprintf("idle (resync %gs)", x.Resync), fmt.Sprintf("%.0fs", x.Seconds), fmt.Sprint(x.Writes), verbs(x.ByVerb), fmt.Sprint(x.Syncs))
		}
		flush()
	}

	if len(r.Ingress.Steady) > 0 {
		row("steady state: event -> Ingress", "target rate/s", "achieved/s", "events", "p50", "p99", "max", "missing", "other processes' CPU")
		sep(9)
		for _, s := range r.Ingress.Steady {
			row("", fmt.Sprintf("%.0f", s.TargetRate), fmt.Sprintf("%.1f", s.AchievedRate), fmt.Sprint(s.Events),
				fmt.Sprintf("%.1f ms", s.P50ms), fmt.Sprintf("%.1f ms", s.P99ms), fmt.Sprintf("%.1f ms", s.Maxms), fmt.Sprint(s.Missing),
				fmt.Sprintf("%.0f%%", 100*s.OtherCPU))
		}
		flush()
	}

	if x := r.Ingress.Routable; x != nil {
		if x.Skipped != "" {
			fmt.Fprintf(out, "event -> routable: not measured: %s\n\n", x.Skipped)
		} else {
			row("event -> routable through Traefik", "rate/s", "Services", "event -> Ingress p50", "p99", "event -> routable p50", "p99", "max", "missing")
			sep(9)
			row(fmt.Sprintf("(traefik providersThrottleDuration %.0f ms, probe every %.0f ms)", x.ThrottleMs, x.ProbeMs), fmt.Sprintf("%.0f", x.Rate), fmt.Sprint(x.Services),
				fmt.Sprintf("%.1f ms", x.IngressP50), fmt.Sprintf("%.1f ms", x.IngressP99),
				fmt.Sprintf("%.1f ms", x.RouteP50), fmt.Sprintf("%.1f ms", x.RouteP99), fmt.Sprintf("%.1f ms", x.RouteMax), fmt.Sprint(x.Missing))
			flush()
		}
	}

	mem := r.Memory
	if mem.Empty.PeakRSS > 0 {
		row("manager memory", "peak RSS", "Go heap live after GC", "heap in use", "GC after state")
		sep(5)
		for _, h := range []struct {
			name string
			h    Heap
		}{{"N=0", mem.Empty}, {fmt.Sprintf("N=%d Services, no Ingresses", mem.Services.Objects), mem.Services}, {fmt.Sprintf("N=%d Services + Ingresses", mem.Full.Objects), mem.Full}} {
			if h.h.PeakRSS == 0 {
				continue
			}
			row(h.name, mib(h.h.PeakRSS), mib(h.h.HeapLive), mib(h.h.HeapInuse), fmt.Sprint(h.h.GCAfterState))
		}
		row("**per cached Service**", "", fmt.Sprintf("**%.0f B**", mem.BytesPerService), "", "")
		if mem.Full.HeapLive > 0 { // a -scale run does not read it
			row("per Service + its Ingress", "", fmt.Sprintf("%.0f B", mem.BytesPerPair), "", "")
		}
		flush()
	}

	if len(r.Peer) > 0 {
		title := fmt.Sprintf("cold start, N=%d, each on a fresh control plane", r.N)
		if k := len(r.Peer[0].Runs); k > 1 {
			title = fmt.Sprintf("cold start, N=%d, each on a fresh control plane (median of %d starts)", r.N, k)
		}
		row(title, "L (creates/s)", "cold", "cold / (N/L)", "first Ingress", "peak RSS (of files)", "CPU", "Ingress writes/object")
		sep(8)
		for _, c := range r.Peer {
			row(c.Name, fmt.Sprintf("%.0f", c.L), fmt.Sprintf("%.2fs", c.ColdSeconds), fmt.Sprintf("%.2f", c.Ratio), fmt.Sprintf("%.2fs", c.FirstSeconds),
				peakRSS(c), fmt.Sprintf("%.2fs", c.CPUSeconds), fmt.Sprintf("%.2f (%s)", c.WritesPerObject, verbs(c.IngressWrites)))
		}
		flush()
	}

	if len(r.Network) > 0 {
		lats := []float64{}
		workers := []int{}
		for _, c := range r.Network {
			if !slices.Contains(lats, c.LatencyMs) {
				lats = append(lats, c.LatencyMs)
			}
			if !slices.Contains(workers, c.Workers) {
				workers = append(workers, c.Workers)
			}
		}
		head := []string{"network: Networks/s to Ready"}
		for _, wk := range workers {
			head = append(head, fmt.Sprintf("%d workers", wk))
		}
		row(head...)
		sep(len(head))
		for _, l := range lats {
			cells := []string{fmt.Sprintf("backend latency %.0f ms", l)}
			for _, wk := range workers {
				cell := ""
				for _, c := range r.Network {
					if c.LatencyMs == l && c.Workers == wk {
						cell = fmt.Sprintf("%.0f", c.PerSecond)
					}
				}
				cells = append(cells, cell)
			}
			row(cells...)
		}
		flush()
	}

	if len(r.Neutron) > 0 {
		row("neutron (real): workers", "Networks", "controller Networks/s to Ready", "direct client /s", "controller / direct", "Neutron requests / Network")
		sep(6)
		for _, c := range r.Neutron {
			row(fmt.Sprint(c.Workers), fmt.Sprint(c.Networks), fmt.Sprintf("%.1f", c.PerSecond), fmt.Sprintf("%.1f", c.DirectPerSecond),
				fmt.Sprintf("%.2f", c.Ratio), fmt.Sprintf("%.1f", c.RequestsPerNetwork))
		}
		flush()
	}
	if rs := r.NeutronRestart; rs != nil {
		row("neutron (real): restart", "converged Networks", "Neutron requests", "List page size", "converging them took")
		sep(5)
		converge := ""
		if rs.ConvergeSeconds > 0 {
			converge = fmt.Sprintf("%.0fs", rs.ConvergeSeconds)
		}
		row("restarted manager", fmt.Sprint(rs.Networks), fmt.Sprint(rs.Requests), fmt.Sprint(rs.PageSize), converge)
		flush()
	}

	if len(r.NeutronImport) > 0 {
		row("neutron (real): import by ID", "Networks", "Networks/s to Ready", "Neutron requests / Network", "restart: Neutron requests")
		sep(5)
		for _, c := range r.NeutronImport {
			row(c.Policy, fmt.Sprint(c.Networks), fmt.Sprintf("%.1f", c.PerSecond), fmt.Sprintf("%.2f", c.RequestsPerNetwork), fmt.Sprint(c.RestartRequests))
		}
		flush()
	}

	if rt := r.HTTPRoute; rt != nil {
		row("httproute", "seconds", "x N/L_route", "HTTPRoute writes / object", "control plane CPU ms / object")
		sep(5)
		row(fmt.Sprintf("direct creates (L_route, concurrency %d)", rt.Creates.Concurrency), fmt.Sprintf("%.2f", rt.Creates.Seconds), "1.00", "1.00", fmt.Sprintf("%.2f", rt.Creates.CPUms))
		row("cold (--ingress-gateway)", fmt.Sprintf("%.2f", rt.Cold.Seconds), fmt.Sprintf("%.2f", rt.Cold.Ratio), fmt.Sprintf("%.2f (%s)", rt.Cold.WritesPerObject, verbs(rt.Cold.Writes)), fmt.Sprintf("%.2f", rt.Cold.CPUms))
		flush()
	}

	r.writeScaleTables(out, row, sep, flush)

	if len(r.Targets) > 0 {
		row("target", "wanted", "measured", "met")
		sep(4)
		for _, t := range r.Targets {
			met := "yes"
			switch {
			case t.Reading:
				met = "(no goal)"
			case !t.Met:
				met = "**no**"
			}
			if t.Note != "" {
				met += " (" + t.Note + ")"
			}
			row(t.Name, t.Target, t.Measured, met)
		}
		flush()
	}
}

func verbs(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// coldMeasured says what the cold phase measured: the median of its runs
// with each run's ratio, or (results before runs) its one start.
func coldMeasured(cold *Phase, n int, l float64) string {
	if len(cold.Runs) == 0 {
		return fmt.Sprintf("%.2f x N/L (%.2fs, N/L=%.2fs); %.2f x N/L_apply", cold.Ratio, cold.Seconds, float64(n)/l, cold.RatioApply)
	}
	m := medianRun(cold.Runs)
	return fmt.Sprintf("median %.2f x N/L of %d starts (%s); median start %.2fs, N/L=%.2fs", cold.Ratio, len(cold.Runs), ratios(cold.Runs), m.Seconds, float64(n)/m.L)
}

// contenderMeasured is coldMeasured of a contender of the peer phase.
func contenderMeasured(c Contender, n int) string {
	if len(c.Runs) < 2 {
		return fmt.Sprintf("%.2f x N/L (%.2fs, N/L=%.2fs)", c.Ratio, c.ColdSeconds, float64(n)/c.L)
	}
	var runs []ColdRun
	for _, r := range c.Runs {
		runs = append(runs, ColdRun{L: r.L, Seconds: r.ColdSeconds, Ratio: r.Ratio})
	}
	return fmt.Sprintf("median %.2f x N/L of %d starts (%s)", c.Ratio, len(c.Runs), ratios(runs))
}

// Contender returns the peer phase's contender name, when it ran.
func (r *Result) Contender(name string) (Contender, bool) {
	for _, c := range r.Peer {
		if c.Name == name {
			return c, true
		}
	}
	return Contender{}, false
}

// coldNotes is the note of the cold convergence readings: the informer
// floor's cold/(N/L) when the peer phase ran it, what a controller could
// reach at best on the same machine.
func (r *Result) coldNotes() string {
	if floor, ok := r.Contender(ContenderFloor); ok && floor.Ratio > 0 {
		return "the informer floor on fresh control planes: " + contenderMeasured(floor, r.N)
	}
	return ""
}

func heapNote(n int) string {
	if n < 10000 {
		return fmt.Sprintf("a fixed ~1 MiB is spread over N=%d Services; see the N=10,000 run", n)
	}
	return ""
}

// withIngress adds the heap per Service and its Ingress to measured, when
// the run read it (a -scale run does not).
func withIngress(measured string, m Memory) string {
	if m.Full.HeapLive <= 0 {
		return measured
	}
	return fmt.Sprintf("%s (with its Ingress: %.0f B)", measured, m.BytesPerPair)
}

// peakRSS is a contender's peak RSS and the part of its resident set that
// maps files (the executable's pages), when measured.
func peakRSS(c Contender) string {
	if c.FileRSS <= 0 {
		return mib(c.PeakRSS)
	}
	return fmt.Sprintf("%s (%s)", mib(c.PeakRSS), mib(c.FileRSS))
}
