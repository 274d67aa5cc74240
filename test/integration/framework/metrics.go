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

// QueueMark is a point from which to tell whether the in-process
// controller of the same name has synced every key added to its queue.
type QueueMark struct {
	name        string
	adds, syncs float64
}

// MarkQueue marks the workqueue (and controller) name now.
func MarkQueue(name string) QueueMark {
	m := QueueMark{name: name}
	m.adds, m.syncs = m.counts()
	return m
}

func (m QueueMark) counts() (adds, syncs float64) {
	adds, _ = InProcessMetric("workqueue_adds_total", map[string]string{"name": m.name})
	syncs, _ = InProcessMetric("controller_reconcile_total", map[string]string{"controller": m.name})
	return adds, syncs
}

// Idle reports whether every key added since the mark has been synced
// (a key added again while it syncs counts twice, and is synced twice).
func (m QueueMark) Idle() bool {
	adds, syncs := m.counts()
	depth, _ := InProcessMetric("workqueue_depth", map[string]string{"name": m.name})
	return depth == 0 && adds-m.adds == syncs-m.syncs
}
