package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is a scrape: samples in exposition order within each family.
type metrics []sample

// parseMetrics parses the Prometheus text exposition format with expfmt and
// flattens it back into its lines: a histogram or summary gives its
// _bucket (or quantile), _sum and _count samples, as in the text.
func parseMetrics(r io.Reader) (metrics, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	var out metrics
	for _, name := range sortedKeys(families) {
		for _, m := range families[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			add := func(suffix string, value float64, extra ...string) {
				ls := maps.Clone(labels)
				for i := 0; i+1 < len(extra); i += 2 {
					ls[extra[i]] = extra[i+1]
				}
				out = append(out, sample{name: name + suffix, labels: ls, value: value})
			}
			switch {
			case m.Counter != nil:
				add("", m.GetCounter().GetValue())
			case m.Gauge != nil:
				add("", m.GetGauge().GetValue())
			case m.Untyped != nil:
				add("", m.GetUntyped().GetValue())
			case m.Histogram != nil:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add("_bucket", float64(b.GetCumulativeCount()), "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))
				}
				add("_sum", h.GetSampleSum())
				add("_count", float64(h.GetSampleCount()))
			case m.Summary != nil:
				q := m.GetSummary()
				for _, x := range q.GetQuantile() {
					add("", x.GetValue(), "quantile", strconv.FormatFloat(x.GetQuantile(), 'g', -1, 64))
				}
				add("_sum", q.GetSampleSum())
				add("_count", float64(q.GetSampleCount()))
			}
		}
	}
	return out, nil
}

// sum adds the values of the samples named name whose labels include match.
func (m metrics) sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range m {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// has reports whether a sample named name exists.
func (m metrics) has(name string) bool {
	for _, s := range m {
		if s.name == name {
			return true
		}
	}
	return false
}

// label returns the value of label key on the first sample named name.
func (m metrics) label(name, key string) string {
	for _, s := range m {
		if s.name == name {
			return s.labels[key]
		}
	}
	return ""
}

// writeVerbs are the apiserver_request_total verbs that change state.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// requestCounts is apiserver_request_total summed by "VERB resource[/subresource]",
// plus the CPU seconds used by the API server and etcd (keys cpuAPIServer
// and cpuEtcd, whose "verb" is not a write).
type requestCounts map[string]float64

const (
	cpuAPIServer = "CPU kube-apiserver"
	cpuEtcd      = "CPU etcd"
)

// controlPlaneCPU is the CPU seconds of the API server and etcd.
func (c requestCounts) controlPlaneCPU() float64 { return c[cpuAPIServer] + c[cpuEtcd] }

// apiRequests reads apiserver_request_total and the process CPU from the
// API server's /metrics, and etcd's process CPU from etcdMetrics.
func apiRequests(ctx context.Context, rc rest.Interface, etcdMetrics string) (requestCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	m, err := parseMetrics(strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	out := requestCounts{cpuAPIServer: m.sum("process_cpu_seconds_total", nil)}
	if etcdMetrics != "" {
		em, err := scrape(ctx, etcdMetrics)
		if err != nil {
			return nil, err
		}
		out[cpuEtcd] = em.sum("process_cpu_seconds_total", nil)
	}
	for _, s := range m {
		if s.name != "apiserver_request_total" {
			continue
		}
		res := s.labels["resource"]
		if sub := s.labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		verb := s.labels["verb"]
		if verb == "DELETE" && s.labels["scope"] != "resource" {
			// A deletecollection is a DELETE on the collection.
			verb = "DELETECOLLECTION"
		}
		out[verb+" "+res] += s.value
	}
	if !m.has("apiserver_request_total") {
		return nil, fmt.Errorf("the API server's /metrics has no apiserver_request_total")
	}
	return out, nil
}

// diff returns after - before, keeping non-zero entries.
func (after requestCounts) diff(before requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// writes sums the write verbs on the given resources (e.g. "ingresses").
func (c requestCounts) writes(resources ...string) int64 {
	var n float64
	for k, v := range c {
		verb, res, _ := strings.Cut(k, " ")
		if !writeVerbs[verb] {
			continue
		}
		for _, r := range resources {
			if res == r {
				n += v
			}
		}
	}
	return int64(n)
}

// byVerb returns the write counts on resource by verb.
func (c requestCounts) byVerb(resource string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range c {
		verb, res, _ := strings.Cut(k, " ")
		if writeVerbs[verb] && res == resource {
			out[verb] += int64(v)
		}
	}
	return out
}

// scrape reads a Prometheus endpoint over loopback HTTP.
func scrape(ctx context.Context, url string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
