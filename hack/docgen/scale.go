package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/kube-sample/controller-manager/test/bench"
)

// The N of the scale goal: per-object figures at scaleTo at most
// bench.ScaleFlatness times those at scaleFrom.
const (
	scaleFrom = 10000
	scaleTo   = 100000
)

// scaleMin is the least N of the curve: below it a fixed part of the
// manager's memory, spread over few Services, hides the per-object figure.
const scaleMin = 1000

// scalePoints returns, for each N, the newest run's scale point that has
// the figure of has, sorted by N.
func scalePoints(runs []run, has func(bench.ScalePoint) bool) []bench.ScalePoint {
	byN := map[int]bench.ScalePoint{}
	for _, r := range runs { // oldest first: the newest wins
		if p, ok := r.ScalePoint(); ok && has(p) && r.Error == "" && p.N >= scaleMin {
			byN[p.N] = p
		}
	}
	var out []bench.ScalePoint
	for _, p := range byN {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b bench.ScalePoint) int { return a.N - b.N })
	return out
}

func hasCold(p bench.ScalePoint) bool   { return p.ColdVersusFloor > 0 }
func hasMemory(p bench.ScalePoint) bool { return p.HeapBytesPerService != 0 }

// scaleChart is a curve against N (log scale) of the newest complete run
// at each N: one series per name, its y from the scale point.
func scaleChart(runs []run, title, ylabel string, has func(bench.ScalePoint) bool, series []scaleSeries, lines ...line) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "Services (N), log scale; the newest complete run at each N"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min = 0
	points := scalePoints(runs, has)
	var args []any
	for _, s := range series {
		var xys plotter.XYs
		for _, pt := range points {
			xys = append(xys, plotter.XY{X: float64(pt.N), Y: s.y(pt)})
		}
		if len(xys) > 0 {
			args = append(args, s.name, xys)
		}
	}
	if len(args) > 0 {
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return nil, err
		}
	}
	addLines(p, lines...)
	// The log scale needs a positive range, also with no point yet.
	p.X.Min, p.X.Max = 500, 200000
	if len(points) > 0 {
		p.X.Min = math.Min(p.X.Min, float64(points[0].N)/2)
		p.X.Max = math.Max(p.X.Max, float64(points[len(points)-1].N)*2)
	}
	p.Legend.Top = true
	p.Y.Max = max(p.Y.Max*1.4, 1)
	p.Add(plotter.NewGrid())
	return p, nil
}

// scaleSeries is one curve of a scale chart.
type scaleSeries struct {
	name string
	y    func(bench.ScalePoint) float64
}

func scaleMemoryChart(runs []run) (*plot.Plot, error) {
	return scaleChart(runs, "Manager memory per cached Service against N", "bytes per Service", hasMemory, []scaleSeries{
		{"Go heap live after GC", func(p bench.ScalePoint) float64 { return p.HeapBytesPerService }},
		{"peak RSS", func(p bench.ScalePoint) float64 { return p.RSSBytesPerService }},
	})
}

func scaleCPUChart(runs []run) (*plot.Plot, error) {
	return scaleChart(runs, "CPU per Service of a cold start against N", "CPU ms per Service, until the writes settle", hasCold, []scaleSeries{
		{"controller-manager", func(p bench.ScalePoint) float64 { return p.CPUmsPerObject }},
		{"informer floor", func(p bench.ScalePoint) float64 { return p.FloorCPUmsPerObject }},
	})
}

func scaleColdChart(runs []run) (*plot.Plot, error) {
	return scaleChart(runs, "Cold time against the informer floor's, against N", "manager cold / floor cold", hasCold, []scaleSeries{
		{"cold time / floor's", func(p bench.ScalePoint) float64 { return p.ColdVersusFloor }},
	}, line{"cold goal", bench.ColdVersusFloor})
}

// scaleSection is the page's scale section: the newest point at each N,
// the scale goal against a committed run pair, and the pod-logger and
// network-scale figures of every run that measured them.
func scaleSection(runs []run) string {
	var s strings.Builder
	s.WriteString("| N | run | cold / floor's | CPU per Service (floor's) | Go heap per cached Service | peak RSS per cached Service |\n|---|---|---|---|---|---|\n")
	byN := map[int]run{}
	for _, r := range runs {
		if p, ok := r.ScalePoint(); ok && r.Error == "" && p.N >= scaleMin {
			byN[p.N] = r
		}
	}
	ns := make([]int, 0, len(byN))
	for n := range byN {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	for _, n := range ns {
		r := byN[n]
		p, _ := r.ScalePoint()
		cold, cpu, heap, rss := "", "", "", ""
		if hasCold(p) {
			cold = fmt.Sprintf("%.2f", p.ColdVersusFloor)
			cpu = fmt.Sprintf("%.3f ms (%.3f ms)", p.CPUmsPerObject, p.FloorCPUmsPerObject)
		}
		if hasMemory(p) {
			heap, rss = fmt.Sprintf("%.0f B", p.HeapBytesPerService), fmt.Sprintf("%.0f B", p.RSSBytesPerService)
		}
		fmt.Fprintf(&s, "| %d | %s | %s | %s | %s | %s |\n", n, runLink(r), cold, cpu, heap, rss)
	}
	if len(ns) == 0 {
		s.WriteString("| | no complete run has the figures yet | | | | |\n")
	}

	s.WriteString("\n| scale goal | runs | Go heap per Service | peak RSS per Service | CPU per Service | met |\n|---|---|---|---|---|---|\n")
	goal := fmt.Sprintf("per-object memory and CPU at N=%d at most %.2f x N=%d's", scaleTo, bench.ScaleFlatness, scaleFrom)
	from, to, ok := scalePair(runs)
	if !ok {
		fmt.Fprintf(&s, "| %s | no committed pair of complete runs at N=%d and N=%d, each with the cold starts and the memory readings, on machines of the same cores | | | | not measured |\n", goal, scaleFrom, scaleTo)
	} else {
		pf, _ := from.ScalePoint()
		pt, _ := to.ScalePoint()
		met := true
		cell := func(a, b float64, unit string) string {
			ratio := b / a
			if !(a > 0) || ratio > bench.ScaleFlatness {
				met = false
			}
			return fmt.Sprintf("%.4g %s -> %.4g %s (x %.2f)", a, unit, b, unit, ratio)
		}
		heap := cell(pf.HeapBytesPerService, pt.HeapBytesPerService, "B")
		rss := cell(pf.RSSBytesPerService, pt.RSSBytesPerService, "B")
		cpu := cell(pf.CPUmsPerObject, pt.CPUmsPerObject, "ms")
		if pf.FloorCPUmsPerObject > 0 && pt.FloorCPUmsPerObject > 0 {
			// For reading: how the informer floor's own CPU per object grew.
			cpu += fmt.Sprintf("; the floor's %.4g ms -> %.4g ms (x %.2f)", pf.FloorCPUmsPerObject, pt.FloorCPUmsPerObject, pt.FloorCPUmsPerObject/pf.FloorCPUmsPerObject)
		}
		verdict := "yes"
		if !met {
			verdict = "**no**"
		}
		fmt.Fprintf(&s, "| %s | %s, %s | %s | %s | %s | %s |\n", goal, runLink(from), runLink(to), heap, rss, cpu, verdict)
	}

	s.WriteString("\n| pod-logger run | Pods | caches synced | every Pod logged once (CPU) | Go heap per Pod | peak RSS per Pod | update -> log line p50 / p99 (rate) | CPU per update | log bytes per update |\n|---|---|---|---|---|---|---|---|---|\n")
	listed := false
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		p := r.PodLogger
		if p == nil || r.Error != "" {
			continue
		}
		listed = true
		u := p.Updates
		fmt.Fprintf(&s, "| %s | %d | %.2fs | %.2fs (%.2f CPU-s) | %.0f B | %.0f B | %.1f ms / %.1f ms (%.0f/s, %d missing) | %.3f ms | %.0f B |\n",
			runLink(r), p.Pods, p.CacheSyncSeconds, p.StartupSeconds, p.StartupCPUSeconds, p.HeapBytesPerPod, p.RSSBytesPerPod,
			u.P50ms, u.P99ms, u.AchievedRate, u.Missing, u.CPUPerEventMs, u.LogBytesPerEvent)
	}
	if !listed {
		s.WriteString("| no complete run has the podlogger phase yet | | | | | | | | |\n")
	}

	s.WriteString("\n| network-scale run | Networks | every Network Ready | API writes per Network | CPU until settled | peak RSS | restart: every Network synced | restart: API writes | restart: backend writes |\n|---|---|---|---|---|---|---|---|---|\n")
	listed = false
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		p := r.NetworkScale
		if p == nil || r.Error != "" {
			continue
		}
		listed = true
		restart, writes, backend := "", "", ""
		if rs := p.Restart; rs != nil {
			restart, writes, backend = fmt.Sprintf("%.2fs", rs.Seconds), fmt.Sprint(rs.Writes), fmt.Sprint(rs.BackendWrites)
		}
		fmt.Fprintf(&s, "| %s | %d | %.2fs | %.2f | %.2f CPU-s | %.1f MiB | %s | %s | %s |\n",
			runLink(r), p.Networks, p.ReadySeconds, p.WritesPerNetwork, p.CPUSeconds, mib(p.PeakRSS), restart, writes, backend)
	}
	if !listed {
		s.WriteString("| no complete run has the network-scale phase yet | | | | | | | | |\n")
	}
	return s.String()
}

// scalePair is the run pair of the scale goal: the newest complete run at
// N=scaleTo with a whole scale point, and the run at N=scaleFrom of the same
// commit, else the newest, on a machine of as many cores.
func scalePair(runs []run) (from, to run, ok bool) {
	whole := func(r run, n int) bool {
		p, ok := r.ScalePoint()
		return ok && r.Error == "" && r.N == n && hasCold(p) && hasMemory(p)
	}
	for i := len(runs) - 1; i >= 0 && !ok; i-- {
		if whole(runs[i], scaleTo) {
			to, ok = runs[i], true
		}
	}
	if !ok {
		return run{}, run{}, false
	}
	found := false
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if !whole(r, scaleFrom) || r.Machine.Cores != to.Machine.Cores {
			continue
		}
		if !found || (r.Commit == to.Commit && from.Commit != to.Commit) {
			from, found = r, true
		}
	}
	return from, to, found
}

// runLink links a run's details on the page.
func runLink(r run) string {
	return fmt.Sprintf("[%s `%s`](#%s)", r.Started.Format("2006-01-02 15:04"), r.Commit, strings.ToLower(anchor(r)))
}
