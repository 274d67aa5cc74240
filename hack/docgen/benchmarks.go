package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/kube-sample/controller-manager/test/bench"
)

// benchmarksPage is the hand-written frame of docs/benchmarks.md: what
// `make bench` measures and how to read it, never a figure.
//
//go:embed benchmarks.md.tmpl
var benchmarksPage string

// resultName is <UTC start>-<commit>.json, as the bench harness names its
// results.
var resultName = regexp.MustCompile(`^(\d{8}T\d{6}Z)-([0-9a-f]{7,40}(?:-dirty)?)\.json$`)

// run is one result file.
type run struct {
	File string
	bench.Result
}

// label names a run on a chart's axis, with its machine's cores: ratios
// to N/L depend on how many cores the control plane and the controller
// share.
func (r run) label() string {
	return fmt.Sprintf("%s\n%s\nN=%d, %d cores", r.Started.Format("01-02"), r.Commit, r.N, r.Machine.Cores)
}

// benchmarks writes docs/benchmarks.md and its charts from bench-results/.
func benchmarks(root string, files map[string][]byte) error {
	runs, err := loadResults(filepath.Join(root, "bench-results"))
	if err != nil {
		return err
	}
	charts := map[string]func([]run) (*plot.Plot, error){
		"cold-convergence.svg": coldChart,
		"versus-floor.svg":     floorChart,
		"memory.svg":           memoryChart,
		"scale-memory.svg":     scaleMemoryChart,
		"scale-cpu.svg":        scaleCPUChart,
		"scale-cold.svg":       scaleColdChart,
	}
	for name, chart := range charts {
		p, err := chart(runs)
		if err != nil {
			return fmt.Errorf("chart %s: %w", name, err)
		}
		w, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, "svg")
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if _, err := w.WriteTo(&b); err != nil {
			return err
		}
		files["docs/benchmarks/"+name] = b.Bytes()
	}

	var summary, details strings.Builder
	summary.WriteString("| run | commit | N | machine | other processes' CPU | L (creates/s) | cold x N/L | HTTPRoute cold x N/L_route | Go heap per cached Service | outcome |\n")
	summary.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		outcome := "complete"
		if r.Error != "" {
			outcome = "incomplete: " + r.Error
		}
		cold, route, heap := "", "", ""
		for _, p := range r.Ingress.Phases {
			if p.Name == "cold" {
				cold = fmt.Sprintf("%.2f", p.Ratio)
			}
		}
		if r.HTTPRoute != nil && r.HTTPRoute.Cold.Ratio > 0 {
			route = fmt.Sprintf("%.2f", r.HTTPRoute.Cold.Ratio)
		}
		if r.Memory.BytesPerService > 0 {
			heap = fmt.Sprintf("%.0f B", r.Memory.BytesPerService)
		}
		fmt.Fprintf(&summary, "| [%s](#%s) | `%s` | %d | %s | %.0f%% | %.0f | %s | %s | %s | %s |\n",
			r.Started.Format("2006-01-02 15:04"), strings.ToLower(anchor(r)), r.Commit, r.N, machine(r.Machine), 100*r.Machine.OtherCPU, r.Limit.L, cold, route, heap, cell(outcome))

		fmt.Fprintf(&details, "\n### %s\n\n[`bench-results/%s`](../bench-results/%s)\n\n", anchor(r), r.File, r.File)
		r.WriteTable(&details)
	}

	var page bytes.Buffer
	page.WriteString(header("bench-results/*.json"))
	tmpl, err := template.New("benchmarks").Parse(benchmarksPage)
	if err != nil {
		return err
	}
	if err := tmpl.Execute(&page, map[string]string{"Summary": summary.String(), "Runs": details.String(), "Scale": scaleSection(runs)}); err != nil {
		return err
	}
	files["docs/benchmarks.md"] = bytes.TrimRight(page.Bytes(), "\n")
	files["docs/benchmarks.md"] = append(files["docs/benchmarks.md"], '\n')
	return nil
}

// anchor is the heading of a run's details, also its link target.
func anchor(r run) string {
	return strings.TrimSuffix(r.File, ".json")
}

func machine(m bench.Machine) string {
	return fmt.Sprintf("%d cores, %s, %.1f GiB", m.Cores, m.CPUModel, float64(m.RAMBytes)/(1<<30))
}

// loadResults reads every result of dir, oldest first; each must name its
// commit, in its file name and its content alike.
func loadResults(dir string) ([]run, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var runs []run
	for _, p := range paths {
		name := filepath.Base(p)
		m := resultName.FindStringSubmatch(name)
		if m == nil {
			return nil, fmt.Errorf("bench-results/%s: want <UTC start>-<commit>.json, as `make bench` writes", name)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		r := run{File: name}
		if err := json.Unmarshal(b, &r.Result); err != nil {
			return nil, fmt.Errorf("bench-results/%s: %w", name, err)
		}
		if r.Commit != m[2] {
			return nil, fmt.Errorf("bench-results/%s: its commit is %q, its name says %q", name, r.Commit, m[2])
		}
		runs = append(runs, r)
	}
	return runs, nil // Glob sorts: oldest first
}

// coldChart: each run's cold convergence as a multiple of the time the API
// server itself needs for the same creates (N/L), against that limit.
func coldChart(runs []run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Cold convergence per run, as a multiple of the API server's own time (N/L)"
	p.Y.Label.Text = "time / (N/L)"
	p.Y.Min = 0
	var names []string
	var ingress, floor, route plotter.XYs
	for i, r := range runs {
		names = append(names, r.label())
		for _, ph := range r.Ingress.Phases {
			if ph.Name == "cold" && ph.Ratio > 0 {
				ingress = append(ingress, plotter.XY{X: float64(i), Y: ph.Ratio})
			}
		}
		if f, ok := r.Contender(bench.ContenderFloor); ok && f.Ratio > 0 {
			floor = append(floor, plotter.XY{X: float64(i), Y: f.Ratio})
		}
		if r.HTTPRoute != nil && r.HTTPRoute.Cold.Ratio > 0 {
			route = append(route, plotter.XY{X: float64(i), Y: r.HTTPRoute.Cold.Ratio})
		}
	}
	p.NominalX(names...)
	if err := addScatters(p, "Ingresses (x N/L)", ingress, "informer floor, fresh control planes (x N/L)", floor,
		"HTTPRoutes (x N/L_route)", route); err != nil {
		return nil, err
	}
	addLines(p, line{"the API server's limit", 1})
	p.Legend.Top = true
	p.Y.Max = max(p.Y.Max*1.3, 1.5) // room for the legend above the points
	p.Add(plotter.NewGrid())
	return p, nil
}

// floorChart: per run that measured the informer floor, the manager's cold
// time, CPU until settled and peak RSS as multiples of the floor's, against
// their goals.
func floorChart(runs []run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "The manager against the informer floor of the same run"
	p.Y.Label.Text = "manager / floor"
	p.Y.Min = 0
	var names []string
	var cold, cpu, rss plotter.XYs
	for _, r := range runs {
		ours, ok1 := r.Contender(bench.ContenderOurs)
		floor, ok2 := r.Contender(bench.ContenderFloor)
		if !ok1 || !ok2 || floor.ColdSeconds <= 0 || floor.CPUSeconds <= 0 || floor.PeakRSS <= 0 {
			continue
		}
		x := float64(len(names))
		names = append(names, r.label())
		cold = append(cold, plotter.XY{X: x, Y: ours.ColdSeconds / floor.ColdSeconds})
		cpu = append(cpu, plotter.XY{X: x, Y: ours.CPUSeconds / floor.CPUSeconds})
		rss = append(rss, plotter.XY{X: x, Y: float64(ours.PeakRSS) / float64(floor.PeakRSS)})
	}
	if len(names) == 0 {
		names = []string{"no run measured the floor"}
	}
	p.NominalX(names...)
	if err := addScatters(p, "cold time", cold, "CPU until settled", cpu, "peak RSS", rss); err != nil {
		return nil, err
	}
	addLines(p, line{"cold goal", bench.ColdVersusFloor}, line{"CPU goal", bench.CPUVersusFloor}, line{"RSS goal (below)", 1})
	p.Legend.Top = true
	p.Y.Max = max(p.Y.Max*1.4, 2)
	p.Add(plotter.NewGrid())
	return p, nil
}

// line is a horizontal line of a chart's legend.
type line struct {
	name string
	y    float64
}

// addLines draws each of lines across p, dashed, in its own color.
func addLines(p *plot.Plot, lines ...line) {
	for i, l := range lines {
		f := plotter.NewFunction(func(float64) float64 { return l.y })
		f.Dashes = plotutil.Dashes(i)
		f.Color = plotutil.Color(i + 3)
		p.Add(f)
		p.Legend.Add(l.name, f)
	}
}

// memoryChart: the manager's peak RSS against the number of cached
// Services, from every run's memory readings.
func memoryChart(runs []run) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Manager memory against N"
	p.X.Label.Text = "Services cached (N)"
	p.Y.Label.Text = "peak RSS (MiB)"
	p.X.Min, p.Y.Min = 0, 0
	var services, full plotter.XYs
	for _, r := range runs {
		m := r.Memory
		if m.Empty.PeakRSS > 0 {
			services = append(services, plotter.XY{X: 0, Y: mib(m.Empty.PeakRSS)})
		}
		if m.Services.PeakRSS > 0 {
			services = append(services, plotter.XY{X: float64(m.Services.Objects), Y: mib(m.Services.PeakRSS)})
		}
		if m.Full.PeakRSS > 0 {
			full = append(full, plotter.XY{X: float64(m.Full.Objects), Y: mib(m.Full.PeakRSS)})
		}
	}
	if err := addScatters(p, "N Services (and N=0)", services, "N Services + their Ingresses", full); err != nil {
		return nil, err
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p, nil
}

// addScatters adds the named series that have points (plotutil refuses an
// empty one: a series a run did not measure), as plotutil.AddScatters.
func addScatters(p *plot.Plot, series ...any) error {
	var keep []any
	for i := 0; i+1 < len(series); i += 2 {
		if xys := series[i+1].(plotter.XYs); len(xys) > 0 {
			keep = append(keep, series[i], xys)
		}
	}
	return plotutil.AddScatters(p, keep...)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
