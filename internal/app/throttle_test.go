package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// TestThrottleHoldsEveryRequest: each request through the throttle takes
// its turn from the limiter before it is sent; one whose context ends while
// the limiter holds it is never sent.
func TestThrottleHoldsEveryRequest(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
	defer srv.Close()
	limiter := &stepLimiter{steps: make(chan string, 10), open: true}
	client := &http.Client{Transport: throttle(limiter)(srv.Client().Transport)}
	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if waits, n := len(limiter.steps), served.Load(); waits != 3 || n != 3 {
		t.Fatalf("3 requests: %d waits, %d served; want 3 and 3", waits, n)
	}

	limiter.open = false
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a request the limiter held until its context ended was answered")
	}
	if waits, n := len(limiter.steps), served.Load(); waits != 4 || n != 3 {
		t.Errorf("a held request: %d waits, %d served in all; want 4 and 3 (held, never sent)", waits, n)
	}
}

// TestClientsThrottleInTheTransport: with a QPS every client of the manager
// sends through the throttle and client-go's own limiter is off (it would
// hold each request a second time); a negative QPS is no limit at all.
func TestClientsThrottleInTheTransport(t *testing.T) {
	for _, tc := range []struct {
		qps       float32
		throttled bool
	}{{qps: 20, throttled: true}, {qps: -1}} {
		c, err := newClients(ClientsConfig{QPS: tc.qps, Burst: 30}, &rest.Config{Host: "https://127.0.0.1:6443"})
		if err != nil {
			t.Fatal(err)
		}
		for name, client := range map[string]rest.Interface{
			"core": c.core.RESTClient(), "networking": c.networking.RESTClient(), "coordination": c.coordination.RESTClient(),
			"samplecrd": c.sample.SamplecrdV1().RESTClient(), "gateway": c.gateway.RESTClient(),
		} {
			if l := client.GetRateLimiter(); l != nil {
				t.Errorf("QPS %v: the %s client has client-go's rate limiter %T, want none", tc.qps, name, l)
			}
			if got := throttled(client.(*rest.RESTClient).Client.Transport); got != tc.throttled {
				t.Errorf("QPS %v: the %s client's transport throttles: %v, want %v", tc.qps, name, got, tc.throttled)
			}
		}
	}
}

// throttled reports whether rt or a transport it wraps is the throttle.
func throttled(rt http.RoundTripper) bool {
	for rt != nil {
		if _, ok := rt.(*throttledTransport); ok {
			return true
		}
		w, ok := rt.(utilnet.RoundTripperWrapper)
		if !ok {
			return false
		}
		rt = w.WrappedRoundTripper()
	}
	return false
}
