package app

import (
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
)

// Thresholds of the throttle's log lines, client-go's: a wait longer than
// longThrottle is logged at -v=3, one longer than extraLongThrottle also at
// the default level, at most once per extraLongLogInterval.
const (
	longThrottle         = 50 * time.Millisecond
	extraLongThrottle    = time.Second
	extraLongLogInterval = 10 * time.Second
)

// throttle returns a wrapper of the manager's transport that holds each API
// request until limiter lets it go: --kube-api-qps and --kube-api-burst, one
// budget for every client of the manager.
//
// It stands in for client-go's own limiter (rest.Config.QPS/RateLimiter),
// which holds requests the same way but first builds each request's URL
// template for its rest_client_rate_limiter_duration_seconds metric
// whether anything waited or not: a path join and split per request, which
// shows in the allocation profile of a cold start over thousands of
// Services. The wrapper reports the same metric and the same log lines
// from the request it already has.
func throttle(limiter flowcontrol.RateLimiter) func(http.RoundTripper) http.RoundTripper {
	lastLog := new(atomic.Int64)
	return func(rt http.RoundTripper) http.RoundTripper {
		return &throttledTransport{limiter: limiter, next: rt, lastLog: lastLog}
	}
}

type throttledTransport struct {
	limiter flowcontrol.RateLimiter
	next    http.RoundTripper
	// lastLog is when an extra-long wait was last logged (UnixNano), one
	// for every transport of the limiter.
	lastLog *atomic.Int64
}

func (t *throttledTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	start := time.Now()
	if err := t.limiter.Wait(ctx); err != nil {
		return nil, err
	}
	waited := time.Since(start)
	metrics.RateLimiterLatency.Observe(ctx, req.Method, *req.URL, waited)
	if waited > longThrottle {
		logger := klog.FromContext(ctx)
		kv := []any{"delay", waited, "reason", "client-side throttling (--kube-api-qps), not priority and fairness", "verb", req.Method, "URL", req.URL.String()}
		logger.V(3).Info("Waited before sending request", kv...)
		if last := t.lastLog.Load(); waited > extraLongThrottle && start.Sub(time.Unix(0, last)) >= extraLongLogInterval &&
			t.lastLog.CompareAndSwap(last, start.UnixNano()) {
			logger.Info("Waited before sending request", kv...)
		}
	}
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go's transport debugging see the
// transport underneath.
func (t *throttledTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
