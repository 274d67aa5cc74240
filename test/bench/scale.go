package bench

import (
	"fmt"
	"io"
)

// ScalePoint is the ingress-manager at one N, per object: the figures of
// the scale curve. Any run with the peer phase (the manager's and the
// informer floor's cold starts) or the memory readings has one;
// Config.Scale runs only what it needs.
type ScalePoint struct {
	N int `json:"n"`
	// ColdVersusFloor is the manager's cold time over the informer
	// floor's, medians of their starts on fresh control planes.
	ColdSeconds      float64 `json:"cold_seconds,omitempty"`
	FloorColdSeconds float64 `json:"floor_cold_seconds,omitempty"`
	ColdVersusFloor  float64 `json:"cold_versus_floor,omitempty"`
	// CPUmsPerObject is the manager's CPU until its writes settled, per
	// Service, in ms (median of its starts); FloorCPUmsPerObject the
	// floor's.
	CPUmsPerObject      float64 `json:"cpu_ms_per_object,omitempty"`
	FloorCPUmsPerObject float64 `json:"floor_cpu_ms_per_object,omitempty"`
	// HeapBytesPerService is the live heap per cached Service
	// (Memory.BytesPerService), RSSBytesPerService the peak RSS per cached
	// Service: (RSS at N Services - RSS at N=0) / N.
	HeapBytesPerService float64 `json:"heap_bytes_per_service,omitempty"`
	RSSBytesPerService  float64 `json:"peak_rss_bytes_per_service,omitempty"`
}

// ScaleFlatness is the scale goal: from 10k to 100k Services, each
// per-object figure at most this times its value at 10k.
const ScaleFlatness = 1.10

// Scale returns the run's scale point, if it measured any of its figures.
func (r *Result) ScalePoint() (ScalePoint, bool) {
	p := ScalePoint{N: r.N}
	if r.N <= 0 {
		return p, false
	}
	n := float64(r.N)
	ours, ok1 := r.Contender(ContenderOurs)
	floor, ok2 := r.Contender(ContenderFloor)
	if ok1 && ok2 && ours.ColdSeconds > 0 && floor.ColdSeconds > 0 {
		p.ColdSeconds, p.FloorColdSeconds = ours.ColdSeconds, floor.ColdSeconds
		p.ColdVersusFloor = ours.ColdSeconds / floor.ColdSeconds
		p.CPUmsPerObject = 1000 * ours.CPUSeconds / n
		p.FloorCPUmsPerObject = 1000 * floor.CPUSeconds / n
	}
	m := r.Memory
	if m.Services.HeapLive > 0 && m.Empty.HeapLive > 0 {
		p.HeapBytesPerService = m.BytesPerService
		p.RSSBytesPerService = float64(m.Services.PeakRSS-m.Empty.PeakRSS) / n
	}
	return p, p.ColdVersusFloor > 0 || p.HeapBytesPerService != 0
}

// writeScaleTables prints the scale figures of the run: its scale point,
// the podlogger and the network-scale phases.
func (r *Result) writeScaleTables(out io.Writer, row func(...string), sep func(int), flush func()) {
	if p := r.Scale; p != nil {
		row(fmt.Sprintf("scale point, N=%d", p.N), "cold / floor's", "CPU per Service (floor's)", "Go heap per cached Service", "peak RSS per cached Service")
		sep(5)
		cold, cpu := "", ""
		if p.ColdVersusFloor > 0 {
			cold = fmt.Sprintf("%.2f (%.2fs vs %.2fs)", p.ColdVersusFloor, p.ColdSeconds, p.FloorColdSeconds)
			cpu = fmt.Sprintf("%.3f ms (%.3f ms)", p.CPUmsPerObject, p.FloorCPUmsPerObject)
		}
		heap, rss := "", ""
		if p.HeapBytesPerService != 0 {
			heap, rss = fmt.Sprintf("%.0f B", p.HeapBytesPerService), fmt.Sprintf("%.0f B", p.RSSBytesPerService)
		}
		row("controller-manager", cold, cpu, heap, rss)
		flush()
	}
	if p := r.PodLogger; p != nil {
		row(fmt.Sprintf("pod-logger, %d Pods", p.Pods), "figure")
		sep(2)
		row("Pods created by the harness", fmt.Sprintf("%.1fs", p.CreateSeconds))
		row("start to caches synced (/readyz)", fmt.Sprintf("%.2fs", p.CacheSyncSeconds))
		row("start to every Pod logged once", fmt.Sprintf("%.2fs, %.2f CPU-s", p.StartupSeconds, p.StartupCPUSeconds))
		row("peak RSS, N=0 / with the Pods", fmt.Sprintf("%s / %s", mib(p.Empty.PeakRSS), mib(p.Full.PeakRSS)))
		row("Go heap live, N=0 / with the Pods", fmt.Sprintf("%s / %s", mib(p.Empty.HeapLive), mib(p.Full.HeapLive)))
		row("**per cached Pod**: heap, peak RSS", fmt.Sprintf("**%.0f B**, %.0f B", p.HeapBytesPerPod, p.RSSBytesPerPod))
		u := p.Updates
		if u.Events > 0 {
			row(fmt.Sprintf("update -> log line, %d updates at %.0f/s (achieved %.1f/s)", u.Events, u.TargetRate, u.AchievedRate),
				fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms, missing %d", u.P50ms, u.P99ms, u.Maxms, u.Missing))
			row("manager CPU per update (its idle CPU apart), log bytes per update", fmt.Sprintf("%.3f ms, %.0f B (other processes: %.0f%% of the CPU)", u.CPUPerEventMs, u.LogBytesPerEvent, 100*u.OtherCPU))
		}
		flush()
	}
	if p := r.NetworkScale; p != nil {
		row(fmt.Sprintf("network, %d Networks, memory backend", p.Networks), "figure")
		sep(2)
		row("Networks created by the harness", fmt.Sprintf("%.1fs", p.CreateSeconds))
		row("start to caches synced (/readyz)", fmt.Sprintf("%.2fs", p.CacheSyncSeconds))
		row("**start to every Network Ready**", fmt.Sprintf("**%.2fs**", p.ReadySeconds))
		row("API writes per Network (Network and status)", fmt.Sprintf("%.2f (%s)", p.WritesPerNetwork, verbs(p.Writes)))
		row("manager CPU until settled, peak RSS", fmt.Sprintf("%.2f CPU-s, %s", p.CPUSeconds, mib(p.PeakRSS)))
		if rs := p.Restart; rs != nil && rs.Seconds > 0 {
			row("restart on the converged Networks (in-process): start to every Network synced", fmt.Sprintf("%.2fs", rs.Seconds))
			row("restart: API writes, backend writes, backend reads", fmt.Sprintf("%d (%s), %d, %d", rs.Writes, verbs(rs.ByVerb), rs.BackendWrites, rs.BackendReads))
		}
		flush()
	}
}

// podRate and podWindow are the settings of the podlogger phase's
// updates, when it runs.
func podRate(cfg Config) float64 {
	if cfg.Pods <= 0 {
		return 0
	}
	return cfg.PodUpdateRate
}

func podWindow(cfg Config) float64 {
	if cfg.Pods <= 0 {
		return 0
	}
	return cfg.PodUpdateWindow.Seconds()
}
