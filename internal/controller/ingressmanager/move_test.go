package ingressmanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// syncFixture is a test controller whose caches hold what the test put in
// the fake API servers, as the informers would, and whose Gateway API is
// served.
type syncFixture struct {
	t *testing.T
	c *Controller
	testClients
	routes cache.Indexer
	// gateways holds Gateways gw and gw2 of namespace default, programmed
	// with an address.
	gateways cache.Indexer
	// server is the API server's clock, as the cut-over fixture's fakes
	// answer a dry-run patch (see serverClock).
	server serverClock
}

func newSyncFixture(t *testing.T) *syncFixture {
	t.Helper()
	c, clients := newTestControllerClients(t)
	routes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	gateways := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, name := range []string{"gw", "gw2"} {
		if err := gateways.Add(programmedGateway(name)); err != nil {
			t.Fatal(err)
		}
	}
	c.gateway.gateways.Store(&gateways)
	c.gateway.routes.Store(&routes)
	c.gateway.markKnown()
	return &syncFixture{t: t, c: c, testClients: clients, routes: routes, gateways: gateways}
}

// addService creates svc in the API server and, when cached, in the cache.
func (f *syncFixture) addService(svc *corev1.Service, cached bool) {
	f.t.Helper()
	if _, err := f.kube.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	if cached {
		if err := f.c.services.Add(svc); err != nil {
			f.t.Fatal(err)
		}
	}
}

// addIngress creates the Ingress svc asks for (when on a Gateway: the one
// it had before) as the controller does, and caches it as mutate changes
// it (status, deletion), as later versions of it would reach the cache.
func (f *syncFixture) addIngress(svc *corev1.Service, mutate func(*networkingv1.Ingress)) {
	f.t.Helper()
	onIngress := svc.DeepCopy()
	onIngress.Annotations[AnnotationGateway] = ""
	desired, err := f.c.builder.Parse(onIngress).Ingress()
	if err != nil {
		f.t.Fatal(err)
	}
	desired.UID = "ingress-uid"
	addOwned(f, f.kube.NetworkingV1().Ingresses(desired.Namespace).Create, f.c.ingresses, desired, mutate)
}

// addRoute is addIngress for the HTTPRoute to Gateway gw.
func (f *syncFixture) addRoute(svc *corev1.Service, mutate func(*gatewayv1.HTTPRoute)) {
	f.t.Helper()
	onGateway := svc.DeepCopy()
	onGateway.Annotations[AnnotationGateway] = "gw"
	desired, err := f.c.builder.Parse(onGateway).HTTPRoute()
	if err != nil {
		f.t.Fatal(err)
	}
	desired.UID, desired.Generation = "route-uid", 1
	addOwned(f, f.gateway.GatewayV1().HTTPRoutes(desired.Namespace).Create, f.routes, desired, mutate)
}

// addOwned creates desired with create, as the controller does, and adds
// what the API server answered to indexer as mutate changes it.
func addOwned[T object](f *syncFixture, create func(context.Context, T, metav1.CreateOptions) (T, error), indexer cache.Indexer, desired T, mutate func(T)) {
	f.t.Helper()
	obj, err := create(context.Background(), desired, metav1.CreateOptions{FieldManager: "test"})
	if err != nil {
		f.t.Fatal(err)
	}
	obj = obj.DeepCopyObject().(T)
	if mutate != nil {
		mutate(obj)
	}
	if err := indexer.Add(obj); err != nil {
		f.t.Fatal(err)
	}
}

// writes lists the writes both API servers received, as "delete ingresses".
func (f *syncFixture) writes() []string {
	var out []string
	for _, a := range slices.Concat(f.kube.Actions(), f.gateway.Actions()) {
		if p, ok := a.(k8stesting.PatchActionImpl); ok && len(p.PatchOptions.DryRun) > 0 {
			continue // stores nothing
		}
		if !a.Matches("get", a.GetResource().Resource) && !a.Matches("list", a.GetResource().Resource) && !a.Matches("watch", a.GetResource().Resource) &&
			a.GetResource().Resource != "services" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// events drains the Events recorded so far and returns them.
func (f *syncFixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// reasons drains the Events recorded so far and returns their reasons.
func (f *syncFixture) reasons() []string {
	var out []string
	for _, e := range f.events() {
		var typ, reason string
		fmt.Sscan(e, &typ, &reason)
		out = append(out, reason)
	}
	return out
}

// clearActions forgets what the fakes received so far (the fixture's own
// writes).
func (f *syncFixture) clearActions() {
	f.kube.ClearActions()
	f.gateway.ClearActions()
}

func (f *syncFixture) sync(svc *corev1.Service) error {
	return f.c.sync(context.Background(), cache.MetaObjectToName(svc))
}

// syncExpecting adds svc to the API server and the cache, syncs it, and
// checks the writes the fakes received, as writes lists them.
func (f *syncFixture) syncExpecting(svc *corev1.Service, want []string) {
	f.t.Helper()
	f.addService(svc, true)
	f.clearActions()
	if err := f.sync(svc); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	if got := f.writes(); !slices.Equal(got, want) {
		f.t.Errorf("writes = %q, want %q", got, want)
	}
}

// markDeleting marks an object deleted while a finalizer holds it.
func markDeleting[T metav1.Object](o T) {
	o.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1000, 0)})
	o.SetFinalizers([]string{"example.com/load-balancer"})
}

func withAddress(ing *networkingv1.Ingress) {
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "198.51.100.10"}}
}

// acceptedAt sets Accepted=True by one Gateway controller for Gateway gw,
// observed at generation gen.
func acceptedAt(gen int64) func(*gatewayv1.HTTPRoute) {
	return func(r *gatewayv1.HTTPRoute) {
		r.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef:      gatewayv1.ParentReference{Name: "gw"},
			ControllerName: "example.com/gateway",
			Conditions:     []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: gen}},
		}}
	}
}

// servedAt is acceptedAt with the references resolved too: a route that
// serves.
func servedAt(gen int64) func(*gatewayv1.HTTPRoute) {
	return func(r *gatewayv1.HTTPRoute) {
		acceptedAt(gen)(r)
		r.Status.Parents[0].Conditions = append(r.Status.Parents[0].Conditions,
			metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", ObservedGeneration: gen})
	}
}

func both[T any](fs ...func(T)) func(T) {
	return func(o T) {
		for _, f := range fs {
			f(o)
		}
	}
}

// TestMoveNeverTrustsAnObjectBeingDeleted: in a move between Ingress and
// HTTPRoute the new home must be live and current before the old one goes:
// an object being deleted (held by a finalizer, its status as it was) is
// never ready, never the new home, and never deleted again; a route's
// Accepted counts only for the route's generation.
func TestMoveNeverTrustsAnObjectBeingDeleted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gateway string // the Service's ingress/gateway
		enabled bool
		ingress func(*networkingv1.Ingress) // nil: none
		route   func(*gatewayv1.HTTPRoute)  // nil: none
		want    []string                    // writes
		reason  string                      // an Event expected, if any
		notWant string                      // an Event not expected, if any
	}{
		{name: "back on Ingress: an Ingress with an address replaces the route",
			gateway: "", enabled: true, ingress: withAddress, route: servedAt(1),
			want: []string{"delete httproutes"}, reason: ReasonHTTPRouteDeleted},
		{name: "back on Ingress: an Ingress being deleted, with its old address, does not replace the route",
			gateway: "", enabled: true, ingress: both(withAddress, markDeleting[*networkingv1.Ingress]), route: servedAt(1),
			reason: ReasonWaitingForIngress, notWant: ReasonHTTPRouteDeleted},
		{name: "on a Gateway: an accepted route replaces the Ingress",
			gateway: "gw", enabled: true, ingress: withAddress, route: servedAt(1),
			want: []string{"delete ingresses"}, reason: ReasonIngressDeleted},
		{name: "on a Gateway: a route being deleted, with its old Accepted=True, does not replace the Ingress",
			gateway: "gw", enabled: true, ingress: withAddress, route: both(servedAt(1), markDeleting[*gatewayv1.HTTPRoute]),
			reason: ReasonWaitingForHTTPRoute, notWant: ReasonIngressDeleted},
		{name: "on a Gateway: Accepted=True of an older generation of the route does not replace the Ingress",
			gateway: "gw", enabled: true, ingress: withAddress, route: both(servedAt(1), func(r *gatewayv1.HTTPRoute) { r.Generation = 2 }),
			reason: ReasonWaitingForHTTPRoute, notWant: ReasonIngressDeleted},
		{name: "on a Gateway: an Ingress being deleted is not deleted again once the route is accepted",
			gateway: "gw", enabled: true, ingress: both(withAddress, markDeleting[*networkingv1.Ingress]), route: servedAt(1),
			notWant: ReasonIngressDeleted},
		{name: "back on Ingress: a route being deleted is not deleted again once the Ingress has an address",
			gateway: "", enabled: true, ingress: withAddress, route: both(servedAt(1), markDeleting[*gatewayv1.HTTPRoute]),
			notWant: ReasonHTTPRouteDeleted},
		{name: "annotation removed: an Ingress being deleted is not deleted again",
			gateway: "", enabled: false, ingress: markDeleting[*networkingv1.Ingress],
			notWant: ReasonIngressDeleted},
		{name: "annotation removed: a route being deleted is not deleted again",
			gateway: "gw", enabled: false, route: markDeleting[*gatewayv1.HTTPRoute],
			notWant: ReasonHTTPRouteDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t)
			svc := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
			svc.ResourceVersion = "1"
			if tc.ingress != nil {
				f.addIngress(svc, tc.ingress)
			}
			if tc.route != nil {
				f.addRoute(svc, tc.route)
			}
			if !tc.enabled {
				delete(svc.Annotations, AnnotationHTTP)
			}
			f.syncExpecting(svc, tc.want)
			reasons := f.reasons()
			if tc.reason != "" && !slices.Contains(reasons, tc.reason) {
				t.Errorf("Events %v, want one %s", reasons, tc.reason)
			}
			if tc.notWant != "" && slices.Contains(reasons, tc.notWant) {
				t.Errorf("Events %v, want no %s", reasons, tc.notWant)
			}
		})
	}
}

// TestServiceAbsentFromTheCacheIsConfirmed: an Ingress or HTTPRoute whose
// Service is not in the cache is deleted only once the API server confirms
// the Service is gone (or is another Service now): a cache behind the API
// server must not delete a live Service's object.
func TestServiceAbsentFromTheCacheIsConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		live    func(*corev1.Service) *corev1.Service // the Service the API server has, nil for none
		getErr  error
		want    []string
		wantErr bool
	}{
		{name: "the API server has the Service: its objects stay",
			live: func(s *corev1.Service) *corev1.Service { return s }},
		{name: "the API server has no such Service: its objects go",
			want: []string{"delete ingresses", "delete httproutes"}},
		{name: "the API server has another Service of that name: the old one's objects go",
			live: func(s *corev1.Service) *corev1.Service { s.UID = "another-uid"; return s },
			want: []string{"delete ingresses", "delete httproutes"}},
		{name: "the API server cannot be asked: nothing goes, the sync is retried",
			getErr: apierrors.NewServiceUnavailable("etcd is away"), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t)
			svc := service(nil, port("http", 80))
			f.addIngress(svc, nil)
			f.addRoute(svc, nil)
			if tc.live != nil {
				f.addService(tc.live(svc.DeepCopy()), false)
			}
			f.clearActions()
			if tc.getErr != nil {
				f.kube.PrependReactor("get", "services", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.getErr })
			}
			err := f.sync(svc)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, tc.getErr)) {
				t.Fatalf("sync: %v, want error %v", err, tc.getErr)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			gets := 0
			for _, a := range f.kube.Actions() {
				if a.Matches("get", "services") {
					gets++
				}
			}
			if gets != 1 {
				t.Errorf("%d GETs of the Service, want 1 (one live read for both objects)", gets)
			}
		})
	}
}

// TestServiceAbsentWithNothingToDeleteIsNotRead: a sync of a Service absent
// from the cache that finds nothing to delete (nothing cached, or only what
// is being deleted already) costs no read.
func TestServiceAbsentWithNothingToDeleteIsNotRead(t *testing.T) {
	f := newSyncFixture(t)
	svc := service(nil, port("http", 80))
	f.addIngress(svc, markDeleting[*networkingv1.Ingress])
	f.clearActions()
	if err := f.sync(svc); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	if got := f.kube.Actions(); len(got) != 0 {
		t.Errorf("actions = %v, want none", got)
	}
}

// TestEveryGatewayControllerIsReportedOnce: two Gateway controllers that
// refuse one route give one HTTPRouteNotAccepted Event each, once, however
// often the Service is synced.
func TestEveryGatewayControllerIsReportedOnce(t *testing.T) {
	f := newSyncFixture(t)
	svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
	svc.ResourceVersion = "1"
	f.addService(svc, true)
	refused := func(controller, reason string) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{
			ParentRef:      gatewayv1.ParentReference{Name: "gw"},
			ControllerName: gatewayv1.GatewayController(controller),
			Conditions:     []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: 1}},
		}
	}
	f.addRoute(svc, func(r *gatewayv1.HTTPRoute) {
		r.Status.Parents = []gatewayv1.RouteParentStatus{refused("example.com/a", "NotAllowedByListeners"), refused("example.com/b", "NoMatchingParent")}
	})
	for range 4 {
		if err := f.sync(svc); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, r := range f.reasons() {
		if r == ReasonHTTPRouteNotAccepted {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d %s Events over 4 syncs, want 2 (one per Gateway controller)", n, ReasonHTTPRouteNotAccepted)
	}
}

// TestAccessControlKeepsTheIngress: a Service whose ingress/annotations
// restrict access with keys only an Ingress controller enforces is never
// served by an HTTPRoute alone: on a Gateway it keeps its Ingress (the move
// waits), and one already on a route goes back to an Ingress, the route kept
// until the Ingress has an address. Acknowledging the keys lets it move.
func TestAccessControlKeepsTheIngress(t *testing.T) {
	auth := `{"nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/auth-secret": "basic-auth"}`
	onGateway := func(extra map[string]string) *corev1.Service {
		svc := service(map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: auth}, port("http", 80))
		for k, v := range extra {
			svc.Annotations[k] = v
		}
		return svc
	}
	for _, tc := range []struct {
		name    string
		svc     *corev1.Service
		ingress func(*networkingv1.Ingress) // nil: none
		route   func(*gatewayv1.HTTPRoute)  // nil: none
		want    []string
		reasons []string
	}{
		{name: "on its Ingress: it stays, with no route made",
			svc: onGateway(nil), ingress: withAddress,
			reasons: []string{ReasonAccessControlOnIngress}},
		{name: "on a route: an Ingress again, the route kept",
			svc: onGateway(nil), route: servedAt(1),
			want: []string{"create ingresses"}, reasons: []string{ReasonAccessControlOnIngress, ReasonIngressCreated}},
		{name: "on a route, its new Ingress without an address yet: the route stays",
			svc: onGateway(nil), ingress: func(*networkingv1.Ingress) {}, route: servedAt(1),
			reasons: []string{ReasonAccessControlOnIngress, ReasonWaitingForIngress}},
		{name: "on a route, its new Ingress has an address: the route goes",
			svc: onGateway(nil), ingress: withAddress, route: servedAt(1),
			want: []string{"delete httproutes"}, reasons: []string{ReasonAccessControlOnIngress, ReasonHTTPRouteDeleted}},
		{name: "acknowledged only in part: it stays",
			svc: onGateway(map[string]string{AnnotationGatewayAcknowledged: "nginx.ingress.kubernetes.io/auth-type"}), ingress: withAddress,
			reasons: []string{ReasonAccessControlOnIngress}},
		{name: "acknowledged: the route is made, and the Ingress goes once it is accepted",
			svc:     onGateway(map[string]string{AnnotationGatewayAcknowledged: "nginx.ingress.kubernetes.io/auth-secret, nginx.ingress.kubernetes.io/auth-type"}),
			ingress: withAddress, route: servedAt(1),
			want: []string{"delete ingresses"}, reasons: []string{ReasonCarriedToHTTPRoute, ReasonIngressDeleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t)
			f.c.settling.settle = 0
			if tc.ingress != nil {
				f.addIngress(tc.svc, tc.ingress)
			}
			if tc.route != nil {
				f.addRoute(tc.svc, tc.route)
			}
			f.syncExpecting(tc.svc, tc.want)
			if got := f.reasons(); !slices.Equal(got, tc.reasons) {
				t.Errorf("Events = %q, want %q", got, tc.reasons)
			}
		})
	}
}

// refsAt sets the route's ResolvedRefs condition for Gateway gw, observed
// at generation gen, beside what the route already reports.
func refsAt(gen int64, status metav1.ConditionStatus) func(*gatewayv1.HTTPRoute) {
	return func(r *gatewayv1.HTTPRoute) {
		if len(r.Status.Parents) == 0 {
			r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: "example.com/gateway"}}
		}
		r.Status.Parents[0].Conditions = append(r.Status.Parents[0].Conditions,
			metav1.Condition{Type: "ResolvedRefs", Status: status, Reason: "BackendNotFound", ObservedGeneration: gen})
	}
}

// TestMoveWaitsForARouteThatServes: the Ingress a Service moves away from
// is withdrawn from DNS and retired only once the route serves: Accepted
// and ResolvedRefs true, both for the route's current generation, for its
// Gateway. A route accepted whose backend cannot be resolved answers 500:
// the Ingress stays, and stays in (or goes back to) DNS.
func TestMoveWaitsForARouteThatServes(t *testing.T) {
	withdrawnIngress := withdrawn[*networkingv1.Ingress](testNow.Add(-10 * time.Second))
	for _, tc := range []struct {
		name    string
		ingress []func(*networkingv1.Ingress)
		route   []func(*gatewayv1.HTTPRoute)
		want    []string // writes
		reasons []string // Events expected
		notWant []string // Events not expected
	}{
		{name: "Accepted with ResolvedRefs=True: the Ingress is withdrawn",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route:   []func(*gatewayv1.HTTPRoute){acceptedAt(1), refsAt(1, metav1.ConditionTrue)},
			want:    []string{"patch ingresses"}, reasons: []string{ReasonWithdrawnFromDNS}},
		{name: "Accepted with ResolvedRefs=False: the Ingress stays in DNS",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route:   []func(*gatewayv1.HTTPRoute){acceptedAt(1), refsAt(1, metav1.ConditionFalse)},
			reasons: []string{ReasonWaitingForHTTPRoute, ReasonHTTPRouteRefsNotResolved}, notWant: []string{ReasonWithdrawnFromDNS, ReasonIngressDeleted}},
		{name: "Accepted with no ResolvedRefs reported: the Ingress stays in DNS",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route:   []func(*gatewayv1.HTTPRoute){acceptedAt(1)},
			reasons: []string{ReasonWaitingForHTTPRoute}, notWant: []string{ReasonWithdrawnFromDNS, ReasonIngressDeleted}},
		{name: "ResolvedRefs=True of an older generation: the Ingress stays in DNS",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route: []func(*gatewayv1.HTTPRoute){acceptedAt(2), refsAt(1, metav1.ConditionTrue), func(r *gatewayv1.HTTPRoute) {
				r.Generation = 2
			}},
			reasons: []string{ReasonWaitingForHTTPRoute}, notWant: []string{ReasonWithdrawnFromDNS, ReasonIngressDeleted}},
		{name: "Accepted and resolved for another Gateway only: the Ingress stays in DNS",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route: []func(*gatewayv1.HTTPRoute){acceptedAt(1), refsAt(1, metav1.ConditionTrue), func(r *gatewayv1.HTTPRoute) {
				r.Status.Parents[0].ParentRef.Name = "other"
			}},
			reasons: []string{ReasonWaitingForHTTPRoute}, notWant: []string{ReasonWithdrawnFromDNS, ReasonIngressDeleted}},
		{name: "Accepted with ResolvedRefs=False mid-drain: the Ingress is returned to DNS, not deleted",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawnIngress},
			route:   []func(*gatewayv1.HTTPRoute){acceptedAt(1), refsAt(1, metav1.ConditionFalse)},
			want:    []string{"patch ingresses"}, reasons: []string{ReasonWaitingForHTTPRoute, ReasonReturnedToDNS}, notWant: []string{ReasonIngressDeleted}},
		{name: "Accepted with ResolvedRefs=False after the drain: the Ingress is returned to DNS, not deleted",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-2 * testDrain))},
			route:   []func(*gatewayv1.HTTPRoute){acceptedAt(1), refsAt(1, metav1.ConditionFalse)},
			want:    []string{"patch ingresses"}, reasons: []string{ReasonReturnedToDNS}, notWant: []string{ReasonIngressDeleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
			svc.ResourceVersion = "1"
			f.addIngress(svc, both(tc.ingress...))
			f.syncIngressToServer()
			f.addRoute(svc, both(tc.route...))
			// Settled: only readiness decides.
			f.c.settling.since[settleKey{svc: cache.MetaObjectToName(svc)}] = readySince{uid: "route-uid", at: testNow.Add(-time.Hour)}
			f.addService(svc, true)
			f.clearActions()
			_ = requeued(t, f.sync(svc))
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			reasons := f.reasons()
			for _, r := range tc.reasons {
				if !slices.Contains(reasons, r) {
					t.Errorf("Events %v, want one %s", reasons, r)
				}
			}
			for _, r := range tc.notWant {
				if slices.Contains(reasons, r) {
					t.Errorf("Events %v, want no %s", reasons, r)
				}
			}
		})
	}
}

// TestMoveJudgesNoObjectItJustWrote: a sync that writes the object that
// is to serve (a new generation of the route, a changed Ingress) decides
// nothing more on it: the status it has is of the version the write
// replaced (Accepted=True of the old generation, an address for the old
// host), so the old object of a move is neither withdrawn nor deleted, and
// a Service with that object alone gets no URL for its new host, until the
// write's own event brings the Service back.
func TestMoveJudgesNoObjectItJustWrote(t *testing.T) {
	twoPatches := func(kind string) []string { return []string{"patch " + kind, "patch " + kind} } // ownership, then the apply
	for _, tc := range []struct {
		name    string
		gateway string
		drain   time.Duration
		ingress bool // an Ingress with an address is cached
		route   bool // a route Accepted and resolved for its generation 1 is cached
		want    []string
		event   string // the write's Event
	}{
		{name: "to a Gateway, the route rewritten for a new host: the Ingress is not withdrawn",
			gateway: "gw", drain: testDrain, ingress: true, route: true, want: twoPatches("httproutes"), event: ReasonHTTPRouteUpdated},
		{name: "to a Gateway without a drain, the route rewritten for a new host: the Ingress is not deleted",
			gateway: "gw", ingress: true, route: true, want: twoPatches("httproutes"), event: ReasonHTTPRouteUpdated},
		{name: "back on Ingress, the Ingress rewritten for a new host: the route is not withdrawn",
			gateway: "", drain: testDrain, ingress: true, route: true, want: twoPatches("ingresses"), event: ReasonIngressUpdated},
		{name: "on a route alone, rewritten for a new host: no URL for the new host yet",
			gateway: "gw", route: true, want: twoPatches("httproutes"), event: ReasonHTTPRouteUpdated},
		{name: "on an Ingress alone, rewritten for a new host: no URL for the new host yet",
			gateway: "", ingress: true, want: twoPatches("ingresses"), event: ReasonIngressUpdated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, tc.drain)
			alone := tc.ingress != tc.route
			if alone {
				f.c.builder.urlAnnotation = AnnotationURL
			}
			svc := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
			svc.ResourceVersion = "1"
			if tc.ingress {
				f.addIngress(svc, withAddress)
			}
			if tc.route {
				f.addRoute(svc, servedAt(1))
			}
			newUID := types.UID("route-uid")
			if tc.gateway == "" {
				newUID = "ingress-uid"
			}
			f.c.settling.since[settleKey{svc: cache.MetaObjectToName(svc)}] = readySince{uid: newUID, at: testNow.Add(-time.Hour)}
			svc.Annotations[AnnotationHost] = "new.example.com"
			if alone {
				svc.Annotations[AnnotationURL] = "http://example.com/"
			}
			f.addService(svc, true)
			f.clearActions()
			_ = requeued(t, f.sync(svc))
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			reasons := f.reasons()
			if !slices.Contains(reasons, tc.event) {
				t.Errorf("Events %v, want one %s", reasons, tc.event)
			}
			for _, r := range []string{ReasonWithdrawnFromDNS, ReasonIngressDeleted, ReasonHTTPRouteDeleted} {
				if slices.Contains(reasons, r) {
					t.Errorf("Events %v, want no %s", reasons, r)
				}
			}
			for _, a := range f.kube.Actions() {
				if a.Matches("patch", "services") {
					t.Errorf("the Service's URL was written in the sync that wrote what serves it")
				}
			}
		})
	}
}
