package framework

import (
	"k8s.io/component-base/metrics/legacyregistry"
)

// InProcessMetric sums the counters and gauges named name whose labels
// include match, as the managers running in this process report them (the
// registry their metrics server serves); ok is false when there is none.
func InProcessMetric(name string, match map[string]string) (sum float64, ok bool) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, false
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			matches := true
			for k, v := range match {
				matches = matches && labels[k] == v
			}
			if !matches {
				continue
			}
			ok = true
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum, ok
}
