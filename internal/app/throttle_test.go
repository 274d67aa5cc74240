package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			"leader election core": c.leaderElection.core.RESTClient(), "leader election coordination": c.leaderElection.coordination.RESTClient(),
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

// TestLeaderElectionNotBehindTheWorkers: the Lease's renewal never waits
// behind the workers in the throttle: leader election has its own client,
// with its own rate limiter (of the same --kube-api-qps/--kube-api-burst,
// as kube-controller-manager's) and its own connection. With the workers'
// budget spent, a Lease request is still sent at once.
func TestLeaderElectionNotBehindTheWorkers(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	// One request, then one every 1000s.
	c, err := newClients(ClientsConfig{QPS: 0.001, Burst: 1}, &rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.core.Services("default").Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the workers' first request: %v, want it answered (NotFound)", err)
	}
	// The workers' next request would wait far past its deadline: the
	// limiter refuses it at once, unsent.
	if _, err := c.core.Services("default").Get(ctx, "b", metav1.GetOptions{}); err == nil || apierrors.IsNotFound(err) {
		t.Fatalf("the workers' second request: %v, want it held by their spent budget", err)
	}
	if n := served.Load(); n != 1 {
		t.Fatalf("%d requests served, want 1", n)
	}
	if c.leaderElection.coordination.RESTClient() == c.coordination.RESTClient() || c.leaderElection.core.RESTClient() == c.core.RESTClient() {
		t.Error("leader election shares the workers' clients")
	}
	if _, err := c.leaderElection.coordination.Leases("kube-system").Get(ctx, "controller-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Lease request with the workers' budget spent: %v, want it sent and answered (NotFound)", err)
	}
}
