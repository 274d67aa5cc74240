package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-sample/controller-manager/test/bench"
)

// scaleRun is a complete run at n with every figure of the scale curve:
// per Service, heap bytes, peak RSS bytes and CPU ms.
func scaleRun(n int, commit string, heap, rss, cpuMs float64) run {
	r := run{File: commit + ".json"}
	r.N, r.Commit, r.Machine.Cores = n, commit, 2
	r.Started = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	r.Peer = []bench.Contender{
		{Name: bench.ContenderOurs, ColdSeconds: 1.1, CPUSeconds: cpuMs * float64(n) / 1000},
		{Name: bench.ContenderFloor, ColdSeconds: 1, CPUSeconds: cpuMs * float64(n) / 2000},
	}
	r.Memory.Empty = bench.Heap{PeakRSS: 30 << 20, HeapLive: 3 << 20}
	r.Memory.Services = bench.Heap{PeakRSS: 30<<20 + int64(rss)*int64(n), HeapLive: 3<<20 + int64(heap)*int64(n)}
	r.Memory.BytesPerService = heap
	return r
}

func TestScaleGoal(t *testing.T) {
	tests := []struct {
		name string
		runs []run
		want string
	}{
		{"no run at 100k", []run{scaleRun(10000, "aaaaaaa", 1300, 2000, 0.3)}, "| not measured |"},
		{"flat within 10%", []run{scaleRun(10000, "aaaaaaa", 1300, 2000, 0.3), scaleRun(100000, "aaaaaaa", 1400, 2100, 0.32)}, "| yes |"},
		{"heap per Service grows by more than 10%", []run{scaleRun(10000, "aaaaaaa", 1300, 2000, 0.3), scaleRun(100000, "aaaaaaa", 1500, 2000, 0.3)}, "| **no** |"},
		{"CPU per Service grows by more than 10%", []run{scaleRun(10000, "aaaaaaa", 1300, 2000, 0.3), scaleRun(100000, "aaaaaaa", 1300, 2000, 0.4)}, "| **no** |"},
		{"the 10k run of the same commit is preferred", []run{
			scaleRun(10000, "aaaaaaa", 1300, 2000, 0.3), scaleRun(10000, "bbbbbbb", 1000, 2000, 0.3), scaleRun(100000, "aaaaaaa", 1400, 2100, 0.32),
		}, "| yes |"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := scaleSection(tc.runs)
			var goal string
			for _, l := range strings.Split(got, "\n") {
				if strings.HasPrefix(l, "| per-object memory and CPU") {
					goal = l
				}
			}
			if !strings.HasSuffix(goal, tc.want) {
				t.Errorf("scale goal row = %q, want it to end with %q; section:\n%s", goal, tc.want, got)
			}
		})
	}
}
