package metrics

import (
	"strings"
	"sync"
	"time"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Gauges read at each scrape from what a running controller holds (its
// caches, its clouds), rather than set as things happen: a value that
// depends on the clock (how long past its drain a move is) or on many
// objects (Networks by reason) is then always current, and what no running
// controller reports is absent, so a standby, which runs no controller,
// reports none of them and nothing is counted twice.
var (
	networks = newReported(subsystem+"_networks",
		"Number of Networks by namespace and by the status and reason of their Ready condition (ready is Unknown, "+
			"reason empty, before the first sync); reported by the running network controller.",
		"network_namespace", "ready", "reason")

	networkCloudUp = newReported(subsystem+"_network_cloud_up",
		"Per cloud entry of the Networks' own credentials (cloud names it as conditions and Events do) and per namespace "+
			"of the Networks that use it (their Secret resolves to it, or they are bound to it): 1 while its backend answers, "+
			"0 while it is down (credentials refused, unreachable); absent until its first scan and once no Network uses it. "+
			"The manager's own cloud is controller_network_backend_up.",
		"backend", "cloud", "network_namespace")

	ingressMovesDraining = newReported(subsystem+"_ingress_moves_draining",
		"Number of Ingresses (kind Ingress) or HTTPRoutes (kind HTTPRoute) that a Service moved away from, withdrawn from "+
			"external-dns and not deleted yet; reported by the running ingress-manager.",
		"kind")

	ingressMoveOverdue = newReported(subsystem+"_ingress_move_drain_overdue_seconds",
		"How long past its DNS drain (--ingress-move-dns-drain) the oldest Ingress or HTTPRoute of a move, withdrawn "+
			"from external-dns, is still there; 0 when none is past it.",
		"kind")

	ingressMigrations = newReported(subsystem+"_ingress_migrations",
		"Number of users' Ingresses that ask to move to an HTTPRoute (ingress/gateway), by state: blocked (they stay on "+
			"their Ingress: keys the route cannot carry, a shape it cannot express, a bad annotation, another route of the "+
			"name, or no Gateway API), moving (the route made, the Ingress still in external-dns until the route serves and "+
			"settled), draining (withdrawn from external-dns, the DNS drain running) and moved (drained, the Ingress kept "+
			"withdrawn); reported by the running ingress-manager.",
		"state")
)

func init() {
	legacyregistry.CustomMustRegister(networks, networkCloudUp, ingressMovesDraining, ingressMoveOverdue, ingressMigrations)
}

// ReportIngressMigrations makes count a source of
// controller_ingress_migrations until stop is called: at each scrape it
// calls add once per Ingress that asks to move, with its state. Every
// state of states is reported, 0 when no Ingress is in it.
func ReportIngressMigrations(states []string, count func(add func(state string))) (stop func()) {
	return ingressMigrations.add(func(set func(v float64, labels ...string)) {
		n := map[string]float64{}
		for _, s := range states {
			n[s] = 0
		}
		count(func(state string) { n[state]++ })
		for s, v := range n {
			set(v, s)
		}
	})
}

// ReportNetworks makes count a source of controller_networks until stop is
// called: at each scrape it calls add once per Network (or group of them).
func ReportNetworks(count func(add func(namespace, ready, reason string))) (stop func()) {
	return networks.add(func(set func(v float64, labels ...string)) {
		n := map[[3]string]float64{}
		count(func(namespace, ready, reason string) { n[[3]string{namespace, ready, reason}]++ })
		for k, v := range n {
			set(v, k[:]...)
		}
	})
}

// ReportNetworkClouds makes clouds a source of controller_network_cloud_up
// until stop is called: at each scrape it calls add once per cloud entry
// and namespace.
func ReportNetworkClouds(clouds func(add func(backend, cloud, namespace string, up bool))) (stop func()) {
	return networkCloudUp.add(func(set func(v float64, labels ...string)) {
		clouds(func(backend, cloud, namespace string, up bool) {
			v := 0.0
			if up {
				v = 1
			}
			set(v, backend, cloud, namespace)
		})
	})
}

// ReportIngressMoves makes moves a source of controller_ingress_moves_draining
// and controller_ingress_move_drain_overdue_seconds until stop is called: at
// each scrape it calls add once per withdrawn object of kind, with how long
// past its drain it is (negative while it drains). Both kinds are always
// reported, 0 when none drains.
func ReportIngressMoves(kinds []string, moves func(add func(kind string, overdue time.Duration))) (stop func()) {
	collect := func() (draining, overdue map[string]float64) {
		draining, overdue = map[string]float64{}, map[string]float64{}
		for _, k := range kinds {
			draining[k], overdue[k] = 0, 0
		}
		moves(func(kind string, late time.Duration) {
			draining[kind]++
			overdue[kind] = max(overdue[kind], late.Seconds())
		})
		return draining, overdue
	}
	stopDraining := ingressMovesDraining.add(func(set func(v float64, labels ...string)) {
		draining, _ := collect()
		for k, v := range draining {
			set(v, k)
		}
	})
	stopOverdue := ingressMoveOverdue.add(func(set func(v float64, labels ...string)) {
		_, overdue := collect()
		for k, v := range overdue {
			set(v, k)
		}
	})
	return func() { stopDraining(); stopOverdue() }
}

// reported is a gauge family whose samples its sources compute at each
// scrape. Two sources reporting the same labels (two managers in one
// process, as tests run them) give the larger value: what one controller
// sees, not a sum of the same objects seen twice.
type reported struct {
	k8smetrics.BaseStableCollector
	desc *k8smetrics.Desc

	mu      sync.Mutex
	next    int
	sources map[int]func(set func(v float64, labels ...string))
}

func newReported(name, help string, labels ...string) *reported {
	return &reported{
		desc:    k8smetrics.NewDesc(name, help, labels, nil, k8smetrics.ALPHA, ""),
		sources: map[int]func(set func(v float64, labels ...string)){},
	}
}

// add registers a source; the returned func removes it.
func (r *reported) add(source func(set func(v float64, labels ...string))) (remove func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	r.sources[id] = source
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.sources, id)
	}
}

// DescribeWithStability implements k8smetrics.StableCollector.
func (r *reported) DescribeWithStability(ch chan<- *k8smetrics.Desc) { ch <- r.desc }

// CollectWithStability implements k8smetrics.StableCollector.
func (r *reported) CollectWithStability(ch chan<- k8smetrics.Metric) {
	r.mu.Lock()
	sources := make([]func(set func(v float64, labels ...string)), 0, len(r.sources))
	for _, s := range r.sources {
		sources = append(sources, s)
	}
	r.mu.Unlock()
	type sample struct {
		v      float64
		labels []string
	}
	samples := map[string]sample{}
	for _, source := range sources {
		source(func(v float64, labels ...string) {
			k := strings.Join(labels, "\xff")
			if s, ok := samples[k]; ok && s.v >= v {
				return
			}
			samples[k] = sample{v: v, labels: labels}
		})
	}
	for _, s := range samples {
		ch <- k8smetrics.NewLazyConstMetric(r.desc, k8smetrics.GaugeValue, s.v, s.labels...)
	}
}
