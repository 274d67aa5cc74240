package bench

import (
	"testing"
	"time"
)

func TestParsePodLogLine(t *testing.T) {
	near := time.Date(2026, 11, 27, 11, 40, 0, 0, time.Local)
	tests := []struct {
		name      string
		line      string
		near      time.Time
		want      podLogLine
		wantFound bool
	}{
		{
			"an update",
			`I1127 11:40:00.123456   12345 podlogger.go:97] "Sync/Add/Update for Pod pod-000001" pod="bench-pods/pod-000001" event="updated" changes="metadata or spec only"`,
			near,
			podLogLine{at: time.Date(2026, 11, 27, 11, 40, 0, 123456000, time.Local), pod: "pod-000001", event: "updated"},
			true,
		},
		{
			"a line of the new year read on the 31st of December",
			`I0101 00:00:01.000000   12345 podlogger.go:97] "Sync/Add/Update for Pod p" pod="ns/p" event="added"`,
			time.Date(2026, 12, 31, 23, 59, 59, 0, time.Local),
			podLogLine{at: time.Date(2027, 1, 1, 0, 0, 1, 0, time.Local), pod: "p", event: "added"},
			true,
		},
		{"another line", `I1127 11:40:00.123456   12345 manager.go:186] "Caches synced: ready"`, near, podLogLine{}, false},
		{"not klog's header", `"Sync/Add/Update for Pod p"`, near, podLogLine{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parsePodLogLine(tc.line, tc.near)
			if ok != tc.wantFound || !got.at.Equal(tc.want.at) || got.pod != tc.want.pod || got.event != tc.want.event {
				t.Errorf("parsePodLogLine() = %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantFound)
			}
		})
	}
}

func TestScalePoint(t *testing.T) {
	r := Result{N: 1000,
		Peer: []Contender{
			{Name: ContenderOurs, ColdSeconds: 2, CPUSeconds: 1.5},
			{Name: ContenderFloor, ColdSeconds: 1.6, CPUSeconds: 1},
		},
		Memory: Memory{
			Empty:           Heap{PeakRSS: 30 << 20, HeapLive: 3 << 20},
			Services:        Heap{PeakRSS: 32 << 20, HeapLive: 4 << 20},
			BytesPerService: 1048.576,
		},
	}
	p, ok := r.ScalePoint()
	want := ScalePoint{N: 1000, ColdSeconds: 2, FloorColdSeconds: 1.6, ColdVersusFloor: 1.25, CPUmsPerObject: 1.5, FloorCPUmsPerObject: 1,
		HeapBytesPerService: 1048.576, RSSBytesPerService: 2097.152}
	if !ok || p != want {
		t.Errorf("ScalePoint() = %+v, %v; want %+v", p, ok, want)
	}
	if _, ok := (&Result{N: 1000}).ScalePoint(); ok {
		t.Errorf("a run without the peer phase or memory readings has no scale point")
	}
}
