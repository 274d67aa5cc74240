package traffic

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// The tests of this file prove, through Traefik's Gateway provider, the
// rule of docs/ingress-manager.md's "When an object serves" and what hangs
// on it: an accepted route whose backend Traefik cannot resolve never
// retires the Ingress; a route gone mid-drain that cannot be made again
// returns the Ingress to external-dns; a move between listeners keeps the
// old one until the new one serves.

// result is one request of a stream.
type result struct {
	sent, at time.Time
	ok       bool
	r        string
}

// stream sends GET http://host/ through one of Traefik's entrypoints every
// few milliseconds until stopped, and records whether each reached backend.
type stream struct {
	mu      sync.Mutex
	results []result
	cancel  context.CancelFunc
	done    chan struct{}
}

func startStream(ctx context.Context, get func(context.Context, string, string) (dataplane.Response, error), host, backend string) *stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &stream{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			sent := time.Now()
			r, err := get(ctx, host, "/")
			if ctx.Err() != nil {
				return
			}
			res := result{sent: sent, at: time.Now(), ok: err == nil && r.Status == 200 && r.Backend == backend, r: fmt.Sprint(r, err)}
			s.mu.Lock()
			s.results = append(s.results, res)
			s.mu.Unlock()
			time.Sleep(5 * time.Millisecond) // the stream's pace, not a wait for a condition
		}
	}()
	return s
}

// since counts the requests sent after t.
func (s *stream) since(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.results {
		if r.sent.After(t) {
			n++
		}
	}
	return n
}

// stop ends the stream and returns its results.
func (s *stream) stop() []result {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.results)
}

// failedBefore returns the requests of results sent before t that did not
// reach the backend, and how many were sent before t.
func failedBefore(results []result, t time.Time) (failed []string, n int) {
	for _, r := range results {
		if !r.sent.Before(t) {
			continue
		}
		n++
		if !r.ok {
			failed = append(failed, fmt.Sprintf("%s: %s", r.sent.Format(time.StampMilli), r.r))
		}
	}
	return failed, n
}

// observation is the Service's Ingress and HTTPRoute as the API server had
// them at one moment (nil: none).
type observation struct {
	at    time.Time
	ing   *networkingv1.Ingress
	route *gatewayv1.HTTPRoute
}

// watcher reads the Ingress and the HTTPRoute of one name every few
// milliseconds until stopped.
type watcher struct {
	mu     sync.Mutex
	obs    []observation
	cancel context.CancelFunc
	done   chan struct{}
}

func (e *env) watch(gw gatewayclient.Interface, name string) *watcher {
	ctx, cancel := context.WithCancel(e.Ctx)
	w := &watcher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ; ctx.Err() == nil; time.Sleep(10 * time.Millisecond) { // the watcher's pace
			o := observation{at: time.Now()}
			route, err := gw.GatewayV1().HTTPRoutes(e.NS).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				o.route = route
			} else if !apierrors.IsNotFound(err) {
				continue // no observation: the next read tells
			}
			ing, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				o.ing = ing
			} else if !apierrors.IsNotFound(err) {
				continue
			}
			w.mu.Lock()
			w.obs = append(w.obs, o)
			w.mu.Unlock()
		}
	}()
	return w
}

// wait waits until an observation satisfies cond, and returns the first
// that does.
func (w *watcher) wait(t *testing.T, within time.Duration, what string, cond func(observation) bool) observation {
	t.Helper()
	var found observation
	framework.Eventually(t, within, what, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, o := range w.obs {
			if cond(o) {
				found = o
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// hold checks every observation until `until` with check, failing the test
// at the first one check refuses. It is an observation window for a
// property that must hold throughout (nothing happens), not a wait for one
// that comes.
func (w *watcher) hold(t *testing.T, until time.Time, what string, check func(observation) error) {
	t.Helper()
	seen := 0
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		w.mu.Lock()
		obs := w.obs[seen:]
		seen = len(w.obs)
		w.mu.Unlock()
		for _, o := range obs {
			if err := check(o); err != nil {
				t.Fatalf("%s: at %s: %v", what, o.at.Format(time.StampMilli), err)
			}
			if !o.at.Before(until) {
				return
			}
		}
		<-tick.C
	}
}

// stop ends the watcher and returns every observation.
func (w *watcher) stop() []observation {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.obs)
}

// traefikConditions returns Traefik's Accepted and ResolvedRefs conditions
// on route for its parent Gateway gw (listener section; "" for the whole
// Gateway), when they are of the route's current generation.
func traefikConditions(route *gatewayv1.HTTPRoute, gw, section string) (accepted, resolved *metav1.Condition) {
	if route == nil {
		return nil, nil
	}
	for _, p := range route.Status.Parents {
		if string(p.ControllerName) != dataplane.GatewayController || string(p.ParentRef.Name) != gw || string(ptr.Deref(p.ParentRef.SectionName, "")) != section {
			continue
		}
		for i, c := range p.Conditions {
			if c.ObservedGeneration != route.Generation {
				continue
			}
			switch c.Type {
			case string(gatewayv1.RouteConditionAccepted):
				accepted = &p.Conditions[i]
			case string(gatewayv1.RouteConditionResolvedRefs):
				resolved = &p.Conditions[i]
			}
		}
	}
	return accepted, resolved
}

// parentServes reports whether Traefik reports route Accepted with its
// references resolved on parent gw/section, for its current generation.
func parentServes(route *gatewayv1.HTTPRoute, gw, section string) bool {
	acc, res := traefikConditions(route, gw, section)
	return acc != nil && acc.Status == metav1.ConditionTrue && res != nil && res.Status == metav1.ConditionTrue
}

// sections lists the listeners (sectionName) of route's parents, in order.
func sections(route *gatewayv1.HTTPRoute) []string {
	if route == nil {
		return nil
	}
	var out []string
	for _, p := range route.Spec.ParentRefs {
		out = append(out, string(ptr.Deref(p.SectionName, "")))
	}
	return out
}

// dnsMarks lists the annotations of a withdrawal from external-dns that obj
// carries (none while external-dns may publish it, for a Service that set
// no controller annotation of its own).
func dnsMarks(obj metav1.Object) []string {
	var out []string
	for _, k := range []string{ingressmanager.AnnotationExternalDNSController, ingressmanager.AnnotationExternalDNSControllerLegacy,
		ingressmanager.AnnotationDNSWithdrawn, ingressmanager.AnnotationDNSControllerSaved} {
		if v, ok := obj.GetAnnotations()[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// waitGatewayStatus waits until GET http://host/ through Traefik's Gateway
// entrypoint gets status from Traefik itself (no backend answered).
func (e *env) waitGatewayStatus(host string, status int, what string) {
	e.T.Helper()
	e.waitGatewayStatusAt(0, host, status, what)
}

// TestRefsNotResolvedKeepsTheIngress (issue 49, item 1): a route Traefik
// accepts but whose backend it cannot resolve (the Service's port speaks a
// protocol, its appProtocol, that Traefik's Gateway provider cannot:
// ResolvedRefs=False, UnsupportedProtocol; the route answers 500) does not
// serve, so the Ingress stays: under a steady stream of requests it answers
// every one, and it is neither withdrawn from external-dns nor deleted
// while Traefik reports ResolvedRefs=False, for longer than the settle time
// and the drain together; the Service gets the Warning
// HTTPRouteRefsNotResolved with Traefik's reason. Once the port is fixed,
// the move completes.
func TestRefsNotResolvedKeepsTheIngress(t *testing.T) {
	const settle, drain = 2 * time.Second, 2 * time.Second
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, drain })
	gw := e.gateway()
	e.webService("web", map[string]string{"ingress/http": "true"})
	host := e.host("web")
	// Traefik's Ingress provider does not read appProtocol: the Ingress
	// serves with it.
	framework.SetAppProtocol(t, e.Client, e.NS, "web", ptr.To("example.com/custom"))
	e.waitRoute(host, "/", "web", "the Ingress, its Service's port with an appProtocol")

	viaIng := startStream(e.Ctx, traefik.Get, host, "web")
	w := e.watch(gw, "web")
	defer w.stop()
	annotated := time.Now()
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})

	unresolved := w.wait(t, timeout, "traefik accepts the route and cannot resolve its backend", func(o observation) bool {
		acc, res := traefikConditions(o.route, "gw", "")
		return acc != nil && acc.Status == metav1.ConditionTrue && res != nil && res.Status == metav1.ConditionFalse
	})
	_, res := traefikConditions(unresolved.route, "gw", "")
	t.Logf("traefik: Accepted=True, ResolvedRefs=False (%s: %s) %v after the annotation", res.Reason, res.Message, unresolved.at.Sub(annotated).Round(time.Millisecond))
	e.waitGatewayStatus(host, 500, "the route whose backend traefik cannot resolve")
	e.WaitEvent("web", corev1.EventTypeWarning, ingressmanager.ReasonHTTPRouteRefsNotResolved, dataplane.GatewayController, res.Reason)

	// Taken for serving, the route would have the Ingress withdrawn a
	// settle time after Traefik accepted it, and deleted a drain later.
	w.hold(t, unresolved.at.Add(settle+drain+time.Second), "while traefik reports ResolvedRefs=False", func(o observation) error {
		switch {
		case o.ing == nil:
			return fmt.Errorf("the Ingress is gone")
		case o.ing.DeletionTimestamp != nil:
			return fmt.Errorf("the Ingress is being deleted")
		case len(dnsMarks(o.ing)) > 0:
			return fmt.Errorf("the Ingress is withdrawn from external-dns: %v", dnsMarks(o.ing))
		}
		if _, res := traefikConditions(o.route, "gw", ""); res != nil && res.Status == metav1.ConditionTrue {
			return fmt.Errorf("traefik resolved the route's references, which nothing changed")
		}
		return nil
	})
	e.route(host, "/", "web", "the Ingress, while the route cannot resolve its backend")
	// The Service says why.
	e.WaitEvent("web", corev1.EventTypeNormal, ingressmanager.ReasonWaitingForHTTPRoute, "resolves the references")

	// Fixed: the route serves, and the move completes.
	fixed := time.Now()
	framework.SetAppProtocol(t, e.Client, e.NS, "web", nil)
	gone := w.wait(t, settle+drain+timeout, "the Ingress deleted once the route serves", func(o observation) bool {
		return o.at.After(fixed) && o.ing == nil
	})
	e.waitGatewayRoute(host, "/", "web", "the route, its backend resolved")
	framework.Eventually(t, timeout, "20 requests via the Ingress's entrypoint after the Ingress went", func(context.Context) (bool, error) {
		return viaIng.since(gone.at) >= 20, nil
	})
	results := viaIng.stop()
	// A request in the last poll before `gone` may have found the Ingress
	// gone already.
	failed, n := failedBefore(results, gone.at.Add(-20*time.Millisecond))
	if len(failed) > 0 {
		t.Errorf("%d of %d requests via the Ingress before it went failed:\n  %s", len(failed), n, strings.Join(failed, "\n  "))
	}
	unresolvedFor := 0
	for _, r := range results {
		if r.sent.After(unresolved.at) && r.sent.Before(fixed) {
			unresolvedFor++
		}
	}
	t.Logf("requests via the Ingress while the route could not resolve its backend: %d; before the Ingress went: %d, none failed; fix -> Ingress deleted: %v",
		unresolvedFor, n, gone.at.Sub(fixed).Round(time.Millisecond))
}

// TestRouteGoneMidDrainReturnsTheIngress (issue 49, item 2): mid-drain (the
// Ingress withdrawn from external-dns, the route serving), the route is
// deleted and cannot be made again (a ValidatingAdmissionPolicy refuses
// every create of an HTTPRoute in the namespace): the Ingress, the only
// object that still serves, is returned to external-dns (its controller
// annotations and ingress/dns-withdrawn removed; Event ReturnedToDNS), is
// not deleted, and answers every request of a steady stream throughout.
func TestRouteGoneMidDrainReturnsTheIngress(t *testing.T) {
	// The drain is never waited for: the route goes while it runs.
	const settle, drain = time.Second, time.Minute
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, drain })
	gw := e.gateway()
	e.webService("web", map[string]string{"ingress/http": "true"})
	host := e.host("web")
	e.waitRoute(host, "/", "web", "the Ingress")

	viaIng := startStream(e.Ctx, traefik.Get, host, "web")
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	e.WaitIngress("web", "the Ingress withdrawn from external-dns, draining", func(ing *networkingv1.Ingress) error {
		if ing.Annotations[ingressmanager.AnnotationDNSWithdrawn] == "" {
			return fmt.Errorf("not withdrawn: %v", dnsMarks(ing))
		}
		return nil
	})
	e.waitGatewayRoute(host, "/", "web", "the route")

	framework.DenyCreates(t, e.Client, e.NS, gatewayv1.GroupName, "httproutes", func(ctx context.Context) error {
		probe := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: "admission-probe"}}
		_, err := gw.GatewayV1().HTTPRoutes(e.NS).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	deleted := time.Now()
	if err := gw.GatewayV1().HTTPRoutes(e.NS).Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the route: %v", err)
	}
	framework.Eventually(t, timeout, "the Ingress returned to external-dns", func(context.Context) (bool, error) {
		// Not the poll's context: a read cut short by its deadline would
		// hide what the Ingress was last seen with.
		ing, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if marks := dnsMarks(ing); len(marks) > 0 {
			return false, fmt.Errorf("still %v", marks)
		}
		return true, nil
	})
	returned := time.Since(deleted)
	e.WaitEvent("web", corev1.EventTypeNormal, ingressmanager.ReasonReturnedToDNS, "Ingress web")
	if _, err := gw.GatewayV1().HTTPRoutes(e.NS).Get(e.Ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the route is there again, despite the policy (err %v)", err)
	}
	e.waitGatewayStatus(host, 404, "the route gone")

	framework.Eventually(t, timeout, "20 requests via the Ingress after it was returned", func(context.Context) (bool, error) {
		return viaIng.since(deleted.Add(returned)) >= 20, nil
	})
	results := viaIng.stop()
	failed, n := failedBefore(results, time.Now())
	if len(failed) > 0 {
		t.Errorf("%d of %d requests via the Ingress failed:\n  %s", len(failed), n, strings.Join(failed, "\n  "))
	}
	if ing, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web", metav1.GetOptions{}); err != nil || ing.DeletionTimestamp != nil {
		t.Errorf("the Ingress, the only object that serves, is not there to stay (err %v)", err)
	}
	t.Logf("route deleted -> Ingress returned to external-dns: %v; %d requests via the Ingress, none failed", returned.Round(time.Millisecond), n)
}

// TestMoveBetweenListenersMakeBeforeBreak (issue 49, item 3): a Service on
// listener a of Traefik's Gateway (one entrypoint) moves to its listener b
// (another entrypoint) under a steady stream of requests through both: the
// route has both parents, b first, until Traefik reports b serving it and
// the settle time passed; every request through a succeeds until then, and
// through b from its first success on; then only b is left, and a no
// longer routes the host.
func TestMoveBetweenListenersMakeBeforeBreak(t *testing.T) {
	const settle = 2 * time.Second
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle = settle })
	gw := traefik.GatewayWithListeners(t, cfg, e.NS, "gw", traefik.Listener("a", 0), traefik.Listener("b", 1))
	viaA := func(ctx context.Context, host, path string) (dataplane.Response, error) {
		return traefik.GetGatewayAt(ctx, 0, host, path)
	}
	viaB := func(ctx context.Context, host, path string) (dataplane.Response, error) {
		return traefik.GetGatewayAt(ctx, 1, host, path)
	}
	e.webService("web", map[string]string{"ingress/http": "true", "ingress/gateway": "gw", "ingress/gateway-listener": "a"})
	host := e.host("web")
	framework.Eventually(t, routeTimeout, "listener a serves", func(ctx context.Context) (bool, error) {
		return serves(ctx, viaA, host) == "", nil
	})
	if got := serves(e.Ctx, viaB, host); got == "" {
		t.Fatalf("listener b serves the route attached to listener a")
	}

	streamA := startStream(e.Ctx, viaA, host, "web")
	streamB := startStream(e.Ctx, viaB, host, "web")
	w := e.watch(gw, "web")
	defer w.stop()
	annotated := time.Now()
	e.Annotate("web", map[string]*string{"ingress/gateway-listener": ptr.To("b")})
	dropped := w.wait(t, settle+timeout, "the route on listener b alone", func(o observation) bool {
		return o.at.After(annotated) && slices.Equal(sections(o.route), []string{"b"})
	})
	framework.Eventually(t, timeout, "20 requests via listener b after a was dropped", func(context.Context) (bool, error) {
		return streamB.since(dropped.at) >= 20, nil
	})
	e.waitGatewayStatusAt(0, host, 404, "listener a, dropped")
	resA, resB := streamA.stop(), streamB.stop()
	obs := w.stop()

	// The route had both parents meanwhile; b was last seen not serving
	// (by this test's polls) at notServed, and a was dropped after that by
	// at least the settle time.
	var both bool
	var notServed time.Time
	for _, o := range obs {
		if !o.at.Before(dropped.at) {
			break
		}
		both = both || slices.Equal(sections(o.route), []string{"b", "a"})
		if !parentServes(o.route, "gw", "b") {
			notServed = o.at
		}
	}
	if !both {
		t.Errorf("the route never had both listeners as parents (b first, then a) before a was dropped")
	}
	if d := dropped.at.Sub(notServed); d < settle {
		t.Errorf("listener a was dropped %v after listener b was last seen not serving the route, less than the settle time %v", d, settle)
	}
	// Through a: every request until a was dropped (a request in the
	// last poll before may have found it gone).
	failed, nA := failedBefore(resA, dropped.at.Add(-20*time.Millisecond))
	if len(failed) > 0 {
		t.Errorf("%d of %d requests via listener a before it was dropped failed:\n  %s", len(failed), nA, strings.Join(failed, "\n  "))
	}
	// Through b: every request from the first that succeeded.
	firstOK := slices.IndexFunc(resB, func(r result) bool { return r.ok })
	if firstOK < 0 || !resB[firstOK].at.Before(dropped.at) {
		t.Fatalf("listener b did not serve before listener a was dropped at %v", dropped.at)
	}
	var failedB []string
	for _, r := range resB[firstOK:] {
		if !r.ok {
			failedB = append(failedB, fmt.Sprintf("%s: %s", r.sent.Format(time.StampMilli), r.r))
		}
	}
	if len(failedB) > 0 {
		t.Errorf("%d requests via listener b after it first served failed:\n  %s", len(failedB), strings.Join(failedB, "\n  "))
	}
	t.Logf("annotation -> b serves: %v; b last seen not serving -> a dropped: %v; requests via a before it was dropped: %d, via b once it served: %d, none failed",
		resB[firstOK].at.Sub(annotated).Round(time.Millisecond), dropped.at.Sub(notServed).Round(time.Millisecond), nA, len(resB)-firstOK)
}

// serves returns "" when GET http://host/ through via reaches backend web,
// else what it got.
func serves(ctx context.Context, via func(context.Context, string, string) (dataplane.Response, error), host string) string {
	r, err := via(ctx, host, "/")
	if err != nil {
		return err.Error()
	}
	if r.Status != 200 || r.Backend != "web" {
		return r.String()
	}
	return ""
}

// waitGatewayStatusAt is waitGatewayStatus through Gateway entrypoint i.
func (e *env) waitGatewayStatusAt(i int, host string, status int, what string) {
	e.T.Helper()
	framework.Eventually(e.T, routeTimeout, fmt.Sprintf("%s: http://%s/ via Gateway entrypoint %d gets %d from traefik", what, host, i, status), func(ctx context.Context) (bool, error) {
		r, err := traefik.GetGatewayAt(ctx, i, host, "/")
		if err != nil {
			return false, err
		}
		if r.Status != status || r.Backend != "" {
			return false, fmt.Errorf("got %s", r)
		}
		return true, nil
	})
}
