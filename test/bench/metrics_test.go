package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseMetrics(t *testing.T) {
	in := `# HELP apiserver_request_total Counter
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="networking.k8s.io",resource="ingresses",scope="resource",subresource="",verb="APPLY",version="v1"} 12
apiserver_request_total{code="409",component="apiserver",group="networking.k8s.io",resource="ingresses",scope="resource",subresource="",verb="APPLY",version="v1"} 1
apiserver_request_total{code="200",resource="networks",subresource="status",verb="PUT"} 3
apiserver_request_total{code="200",resource="pods",verb="LIST"} 7
weird{a="x\"y\\z",b="1"} 2.5e+00 1700000000
go_gc_heap_live_bytes 1.2345e+06
`
	m, err := parseMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.sum("apiserver_request_total", map[string]string{"resource": "ingresses"}); got != 13 {
		t.Errorf("ingress requests = %v, want 13", got)
	}
	if got := m.sum("go_gc_heap_live_bytes", nil); got != 1234500 {
		t.Errorf("heap live = %v", got)
	}
	if got := m.label("weird", "a"); got != `x"y\z` {
		t.Errorf("escaped label = %q", got)
	}
	for _, bad := range []string{`x{a="1"`, `x{a=1} 2`, `x`, `x{a="1"} nope`} {
		if _, err := parseMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMetrics(%q) = nil error", bad)
		}
	}
}

func TestRequestCounts(t *testing.T) {
	before := requestCounts{"APPLY ingresses": 5, "PUT leases": 1, "LIST services": 3}
	after := requestCounts{"APPLY ingresses": 15, "DELETE ingresses": 2, "PUT leases": 4, "LIST services": 9, "POST events": 10, "PUT networks/status": 1}
	d := after.diff(before)
	if got := d.writes("ingresses"); got != 12 {
		t.Errorf("ingress writes = %d, want 12", got)
	}
	if got := d.writes("events", "networks/status"); got != 11 {
		t.Errorf("event+status writes = %d, want 11", got)
	}
	if got := writesButLeases(d); got != 23 {
		t.Errorf("writes but leases = %d, want 23", got)
	}
	if got := d.byVerb("ingresses"); got["APPLY"] != 10 || got["DELETE"] != 2 || len(got) != 2 {
		t.Errorf("by verb = %v", got)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 0: time.Millisecond} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
}
