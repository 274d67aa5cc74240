package traffic

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// gateway creates the Gateway gw of Traefik in the test's namespace.
func (e *env) gateway() gatewayclient.Interface {
	e.T.Helper()
	return traefik.Gateway(e.T, cfg, e.NS, "gw")
}

// routeAccepted reports whether Traefik marked the HTTPRoute name accepted
// by Gateway gw.
func (e *env) routeAccepted(ctx context.Context, client gatewayclient.Interface, name string) (bool, error) {
	route, err := client.GatewayV1().HTTPRoutes(e.NS).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, p := range route.Status.Parents {
		if string(p.ControllerName) == dataplane.GatewayController && p.ParentRef.Name == "gw" &&
			meta.IsStatusConditionTrue(p.Conditions, string(gatewayv1.RouteConditionAccepted)) {
			return true, nil
		}
	}
	return false, nil
}

// waitGatewayRoute waits until GET http://host/path through Traefik's
// Gateway entrypoint reaches backend.
func (e *env) waitGatewayRoute(host, path, backend, what string) {
	e.T.Helper()
	framework.Eventually(e.T, routeTimeout, fmt.Sprintf("%s: http://%s%s via the Gateway reaches backend %s", what, host, path, backend), func(ctx context.Context) (bool, error) {
		r, err := traefik.GetGateway(ctx, host, path)
		if err != nil {
			return false, err
		}
		if r.Status != 200 || r.Backend != backend {
			return false, fmt.Errorf("got %s", r)
		}
		return true, nil
	})
}

// TestGatewayRoute: a Service annotated for a Gateway gets an HTTPRoute that
// Traefik accepts and serves on the Gateway's listener, and no Ingress.
func TestGatewayRoute(t *testing.T) {
	e := setup(t)
	gw := e.gateway()
	e.webService("web", map[string]string{"ingress/http": "true", "ingress/gateway": "gw"})
	e.waitGatewayRoute(e.host("web"), "/", "web", "annotated for Gateway gw")
	framework.Eventually(t, timeout, "traefik marks the route Accepted", func(ctx context.Context) (bool, error) {
		return e.routeAccepted(ctx, gw, "web")
	})
	if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an Ingress exists for a Service on a Gateway (err %v)", err)
	}
	e.noRoute(e.host("web"), "/", "the Ingress entrypoint, with no Ingress")

	// A listener the Gateway does not have: Traefik refuses the route, and
	// the Service says so with Traefik's reason.
	e.Annotate("web", map[string]*string{"ingress/gateway-listener": ptr.To("nope")})
	e.WaitEvent("web", corev1.EventTypeWarning, "HTTPRouteNotAccepted", dataplane.GatewayController, "NoMatchingParent")
}

// TestMoveToGatewayWithoutAGap moves a Service from Ingress to HTTPRoute
// under a steady stream of requests through both entrypoints: the Ingress
// is deleted only after Traefik accepted the route, the settle time passed
// and the DNS drain after its withdrawal from external-dns passed; until
// then the Ingress's entrypoint serves every request, and from then on the
// Gateway's does.
func TestMoveToGatewayWithoutAGap(t *testing.T) {
	const settle, drain = 2 * time.Second, 2 * time.Second
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, drain })
	gw := e.gateway()
	e.webService("web", map[string]string{"ingress/http": "true"})
	host := e.host("web")
	e.waitRoute(host, "/", "web", "the Ingress")

	type result struct {
		at time.Time
		ok bool
		r  string
	}
	var (
		mu             sync.Mutex
		viaGW, viaIng  []result
		accepted, gone time.Time
		// notAccepted is when the last request that found the route not
		// yet Accepted was sent: Traefik accepted it after that.
		notAccepted time.Time
	)
	ctx, cancel := context.WithCancel(e.Ctx)
	var wg sync.WaitGroup
	stream := func(get func(context.Context, string, string) (dataplane.Response, error), out *[]result) {
		defer wg.Done()
		for ctx.Err() == nil {
			r, err := get(ctx, host, "/")
			if ctx.Err() != nil {
				return
			}
			res := result{at: time.Now(), ok: err == nil && r.Status == 200 && r.Backend == "web", r: fmt.Sprint(r, err)}
			mu.Lock()
			*out = append(*out, res)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond) // the stream's pace, not a wait for a condition
		}
	}
	wg.Add(3)
	go stream(traefik.GetGateway, &viaGW)
	go stream(traefik.Get, &viaIng)
	go func() { // notes when the route is Accepted and when the Ingress is gone
		defer wg.Done()
		for ctx.Err() == nil {
			sent := time.Now()
			ok, err := e.routeAccepted(ctx, gw, "web")
			_, ingErr := e.Client.NetworkingV1().Ingresses(e.NS).Get(ctx, "web", metav1.GetOptions{})
			mu.Lock()
			if err == nil && ok && accepted.IsZero() {
				accepted = time.Now()
			}
			if err == nil && !ok {
				notAccepted = sent
			}
			if apierrors.IsNotFound(ingErr) && gone.IsZero() {
				gone = time.Now()
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()

	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	// The stream runs on until the Ingress is gone and 20 more requests
	// went through the Gateway.
	framework.Eventually(t, timeout, "the Ingress deleted, then 20 requests via the Gateway", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if gone.IsZero() {
			return false, nil
		}
		n := 0
		for _, r := range viaGW {
			if r.at.After(gone) {
				n++
			}
		}
		return n >= 20, nil
	})
	cancel()
	wg.Wait()

	// Traefik accepted the route after notAccepted (and this test saw it
	// by accepted, a poll later); the Ingress was gone by `gone`. So the
	// settle time and the drain are kept if gone - notAccepted >= settle +
	// drain, a bound that holds whatever the polls' delays.
	if accepted.IsZero() || notAccepted.IsZero() || gone.Sub(notAccepted) < settle+drain {
		t.Fatalf("the Ingress went by %v, less than the settle time %v and the drain %v after the route was last seen not Accepted (%v; seen Accepted at %v)", gone, settle, drain, notAccepted, accepted)
	}
	// The Ingress's entrypoint serves every request until the Ingress goes
	// (at most a poll of this test after; a request in that window may see
	// the Ingress gone).
	var ingBefore int
	for _, r := range viaIng {
		if r.at.Before(gone.Add(-10 * time.Millisecond)) {
			ingBefore++
			if !r.ok {
				t.Errorf("request via the Ingress at %v before it went failed: %s", gone.Sub(r.at), r.r)
			}
		}
	}
	// The Gateway's entrypoint serves from the first success on, and every
	// request once the Ingress is gone.
	var firstOK time.Time
	var gwAfter int
	for _, r := range viaGW {
		if r.ok && firstOK.IsZero() {
			firstOK = r.at
		}
		if !firstOK.IsZero() || r.at.After(gone) {
			gwAfter++
			if !r.ok {
				t.Errorf("request via the Gateway at %v after it first served (or after the Ingress went) failed: %s", r.at.Sub(firstOK), r.r)
			}
		}
	}
	if firstOK.IsZero() || !firstOK.Before(gone) {
		t.Errorf("the Gateway first served at %v, not before the Ingress went at %v", firstOK, gone)
	}
	t.Logf("Accepted -> the Gateway serves: %v (traefik's own delay); Accepted -> Ingress deleted: %v; requests via the Ingress before it went: %d, via the Gateway once it served: %d, none failed",
		firstOK.Sub(accepted).Round(time.Millisecond), gone.Sub(accepted).Round(time.Millisecond), ingBefore, gwAfter)
}
