package bench

import "testing"

// TestMedianRun: the median start of an odd count is the middle one; of an
// even count the higher of the two middle ones, never the flattering one.
func TestMedianRun(t *testing.T) {
	for name, tc := range map[string]struct {
		ratios []float64
		want   float64
	}{
		"no start":                          {nil, 0},
		"one start":                         {[]float64{1.2}, 1.2},
		"three starts, in any order":        {[]float64{1.4, 1.1, 1.2}, 1.2},
		"two starts: the higher of the two": {[]float64{1.1, 1.3}, 1.3},
	} {
		var runs []ColdRun
		for _, r := range tc.ratios {
			runs = append(runs, ColdRun{Ratio: r, Seconds: 10 * r})
		}
		if got := medianRun(runs); got.Ratio != tc.want || got.Seconds != 10*tc.want {
			t.Errorf("%s: medianRun(%v) = %+v, want the start of ratio %v", name, tc.ratios, got, tc.want)
		}
	}
}

// TestMedianContender: every figure is the median of the starts', the
// writes those of the start that wrote the most.
func TestMedianContender(t *testing.T) {
	runs := []Contender{
		{Name: "c", L: 1000, ColdSeconds: 3, Ratio: 3, PeakRSS: 30, CPUSeconds: 2, WritesPerObject: 1, IngressWrites: map[string]int64{"POST": 10}},
		{Name: "c", L: 900, ColdSeconds: 1, Ratio: 0.9, PeakRSS: 50, CPUSeconds: 1, WritesPerObject: 1.2, IngressWrites: map[string]int64{"POST": 12}},
		{Name: "c", L: 1100, ColdSeconds: 2, Ratio: 2.2, PeakRSS: 40, CPUSeconds: 3, WritesPerObject: 1, IngressWrites: map[string]int64{"POST": 10}},
	}
	got := medianContender(runs)
	if got.L != 1000 || got.ColdSeconds != 2 || got.Ratio != 2.2 || got.PeakRSS != 40 || got.CPUSeconds != 2 ||
		got.WritesPerObject != 1.2 || got.IngressWrites["POST"] != 12 || len(got.Runs) != 3 {
		t.Errorf("medianContender = %+v, want the medians L 1000, cold 2s, ratio 2.2, RSS 40, CPU 2s, the writes of the second start, and 3 runs", got)
	}
}

// TestColdNotesFloor: the cold convergence readings name the informer
// floor's cold/(N/L) when the peer phase ran it, and nothing else does.
func TestColdNotesFloor(t *testing.T) {
	ours := Contender{Name: ContenderOurs, L: 2000, ColdSeconds: 6, Ratio: 1.2, PeakRSS: 1, WritesPerObject: 1}
	peer := Contender{Name: ContenderPeer, L: 2000, ColdSeconds: 15, Ratio: 3, PeakRSS: 2, WritesPerObject: 1}
	floor := Contender{Name: ContenderFloor, L: 2000, ColdSeconds: 5.5, Ratio: 1.1, PeakRSS: 1, WritesPerObject: 1}
	got := targets(ours, peer, floor)
	const fresh = "cold convergence on a fresh control plane"
	if want := "the informer floor on fresh control planes: 1.10 x N/L (5.50s, N/L=5.00s)"; got[fresh].Note != want {
		t.Errorf("note of %q = %q, want %q", fresh, got[fresh].Note, want)
	}
	if !got[fresh].Reading {
		t.Errorf("%q = %+v, want a reading without a goal", fresh, got[fresh])
	}
	if got := targets(ours, peer); got[fresh].Note != "" {
		t.Errorf("without the floor, note of %q = %q, want none", fresh, got[fresh].Note)
	}
}

// targets runs computeTargets on a peer phase of contenders, by name.
func targets(contenders ...Contender) map[string]Target {
	r := &Result{N: 10000, Peer: contenders}
	r.computeTargets()
	out := map[string]Target{}
	for _, tg := range r.Targets {
		out[tg.Name] = tg
	}
	return out
}

// TestGoalsAgainstTheFloor: the manager is held to the informer floor and
// the controller-runtime peer measured in the same run.
func TestGoalsAgainstTheFloor(t *testing.T) {
	floor := Contender{Name: ContenderFloor, ColdSeconds: 10, CPUSeconds: 2, PeakRSS: 100}
	peer := Contender{Name: ContenderPeer, ColdSeconds: 30, CPUSeconds: 5, PeakRSS: 110}
	const (
		cold = "cold time against the informer floor's"
		cpu  = "CPU until settled against the informer floor's"
		rss  = "peak RSS below the informer floor's and the controller-runtime peer's"
		fast = "cold at least 2.5x faster than the controller-runtime peer"
	)
	tests := []struct {
		name string
		ours Contender
		met  map[string]bool
	}{
		{"at the goals", Contender{ColdSeconds: 11, CPUSeconds: 2.6, PeakRSS: 99},
			map[string]bool{cold: true, cpu: true, rss: true, fast: true}},
		{"just past each goal", Contender{ColdSeconds: 12.01, CPUSeconds: 2.61, PeakRSS: 100},
			map[string]bool{cold: false, cpu: false, rss: false, fast: false}},
		{"below the peer's memory but not the floor's", Contender{ColdSeconds: 10, CPUSeconds: 2, PeakRSS: 105},
			map[string]bool{cold: true, cpu: true, rss: false, fast: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.ours.Name = ContenderOurs
			got := targets(tc.ours, peer, floor)
			for name, want := range tc.met {
				tg, ok := got[name]
				if !ok {
					t.Fatalf("no target %q among %v", name, got)
				}
				if tg.Met != want || tg.Reading {
					t.Errorf("%q = %+v, want met %v", name, tg, want)
				}
			}
			for _, name := range []string{"cold convergence on a fresh control plane"} {
				if !got[name].Reading {
					t.Errorf("%q = %+v, want a reading, not a goal", name, got[name])
				}
			}
		})
	}
	if got := targets(Contender{Name: ContenderOurs, ColdSeconds: 1, PeakRSS: 1}, peer); got[cold].Name != "" || got["peak RSS below the controller-runtime peer's"].Name == "" {
		t.Errorf("without the floor: %v, want no floor goal and RSS against the peer alone", got)
	}
}
