// Package metrics registers the manager's Prometheus metrics in the
// component-base legacy registry, which the metrics server serves:
//   - client-go workqueue metrics per named queue (workqueue_depth, _adds_total,
//     _queue_duration_seconds, _work_duration_seconds, _retries_total,
//     _unfinished_work_seconds, _longest_running_processor_seconds);
//   - client-go REST client metrics (rest_client_requests_total, latencies);
//   - leader election and reflector metrics;
//   - reconcile totals, errors and durations per controller, whether this
//     manager leads, whether the network backend is up, and the build's
//     identity (below).
//
// Importing this package installs the client-go metrics providers; it must be
// imported before any workqueue is created, which the controller package
// guarantees by importing it.
package metrics

import (
	"time"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go REST, workqueue, leader election metrics

	"github.com/kube-sample/controller-manager/internal/version"
)

const subsystem = "controller"

var (
	reconcileTotal = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem: subsystem,
		Name:      "reconcile_total",
		Help: "Number of reconciliations (syncs of one key) per controller and result: success, error, or waiting (retried " +
			"with backoff while the object waits for what only others can give, a quota or a network to import, as its condition says).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"controller", "result"})

	reconcileErrors = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "reconcile_errors_total",
		Help:           "Number of reconciliations that returned an error, per controller.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"controller"})

	reconcileDuration = k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "reconcile_duration_seconds",
		Help:           "Time one reconciliation takes, per controller.",
		Buckets:        []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"controller"})

	leaderStatus = k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
		Subsystem:      subsystem,
		Name:           "manager_is_leader",
		Help:           "1 while this manager holds the leader lease (or runs without leader election), else 0.",
		StabilityLevel: k8smetrics.ALPHA,
	})

	networkBackendUp = k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Subsystem: subsystem,
		Name:      "network_backend_up",
		Help: "1 while the network controller's backend answers, 0 while it is down as a whole (unreachable, " +
			"credentials refused, no usable endpoint); absent until its first scan.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"backend"})

	networkLeftBehind = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem: subsystem,
		Name:      "network_left_behind_total",
		Help: "Number of Networks released (deleted from Kubernetes) whose backend network could not be deleted or " +
			"detached, left in the backend with a Warning Event BackendLeftBehind naming it, per Ready reason that kept " +
			"the controller from it (its Secret gone or invalid, or acting in another project).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"reason"})

	buildInfo = k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Subsystem:      subsystem,
		Name:           "manager_build_info",
		Help:           "Always 1; its labels say which build runs: version, commit, build date (the commit's) and Go version.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"version", "commit", "build_date", "go_version"})
)

func init() {
	legacyregistry.MustRegister(reconcileTotal, reconcileErrors, reconcileDuration, leaderStatus, networkBackendUp, networkLeftBehind, buildInfo)
	v := version.Get()
	buildInfo.WithLabelValues(v.Version, v.Commit, v.BuildDate, v.GoVersion).Set(1)
}

// The results of a reconciliation (controller_reconcile_total's result).
const (
	ResultSuccess = "success"
	ResultError   = "error"
	ResultWaiting = "waiting"
)

// ObserveReconcile records one reconciliation of controller and its result.
func ObserveReconcile(controller string, d time.Duration, result string) {
	if result == ResultError {
		reconcileErrors.WithLabelValues(controller).Inc()
	}
	reconcileTotal.WithLabelValues(controller, result).Inc()
	reconcileDuration.WithLabelValues(controller).Observe(d.Seconds())
}

// SetLeader records whether this manager leads.
func SetLeader(leading bool) {
	if leading {
		leaderStatus.Set(1)
	} else {
		leaderStatus.Set(0)
	}
}

// SetNetworkBackendUp records whether the network backend named backend is up.
func SetNetworkBackendUp(backend string, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	networkBackendUp.WithLabelValues(backend).Set(v)
}

// NetworkLeftBehind counts a Network released with its backend network
// left in the backend, for reason.
func NetworkLeftBehind(reason string) {
	networkLeftBehind.WithLabelValues(reason).Inc()
}
