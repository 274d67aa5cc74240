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

// TestColdNotesFloor: the cold convergence targets name the informer
// floor's cold/(N/L) when the peer phase ran it, and nothing else does.
func TestColdNotesFloor(t *testing.T) {
	ours := Contender{Name: contenderOurs, L: 2000, ColdSeconds: 6, Ratio: 1.2, PeakRSS: 1, WritesPerObject: 1}
	peer := Contender{Name: contenderPeer, L: 2000, ColdSeconds: 15, Ratio: 3, PeakRSS: 2, WritesPerObject: 1}
	floor := Contender{Name: contenderFloor, L: 2000, ColdSeconds: 5.5, Ratio: 1.1, PeakRSS: 1, WritesPerObject: 1}
	notes := func(contenders ...Contender) map[string]string {
		r := &Result{N: 10000, Peer: contenders}
		r.computeTargets()
		out := map[string]string{}
		for _, tg := range r.Targets {
			out[tg.Name] = tg.Note
		}
		return out
	}
	got := notes(ours, peer, floor)
	const fresh = "cold convergence on a fresh control plane"
	if want := "the informer floor on fresh control planes: 1.10 x N/L (5.50s, N/L=5.00s)"; got[fresh] != want {
		t.Errorf("note of %q = %q, want %q", fresh, got[fresh], want)
	}
	if got := notes(ours, peer); got[fresh] != "" {
		t.Errorf("without the floor, note of %q = %q, want none", fresh, got[fresh])
	}
}
