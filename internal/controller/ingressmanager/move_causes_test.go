package ingressmanager

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// refuse makes a fake answer verb on resource with a webhook's denial;
// patchType, when set, narrows it to patches of that type.
func refuse(f *k8stesting.Fake, verb, resource string, patchType types.PatchType) {
	f.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if p, ok := a.(k8stesting.PatchAction); ok && patchType != "" && p.GetPatchType() != patchType {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "my-nginx",
			errWebhook)
	})
}

var errWebhook = apierrors.NewBadRequest(`admission webhook "policy.example.com" denied the request`)

// TestNeverNoPublishedObject (issue 49 item 2): mid-drain, the old object
// withdrawn from external-dns while the new one served, a new object that
// is gone and not made again (its create refused, someone else's object in
// its place) or only just made leaves the old object as the only one that
// serves: it is returned to external-dns at once instead of staying
// withdrawn with no record pointing anywhere.
func TestNeverNoPublishedObject(t *testing.T) {
	usersOwn := func(r *gatewayv1.HTTPRoute) { r.OwnerReferences = nil }
	for _, tc := range []struct {
		name     string
		gateway  string
		ingress  []func(*networkingv1.Ingress) // nil: none
		route    []func(*gatewayv1.HTTPRoute)  // nil: none
		refuse   func(f *syncFixture)
		restored string // the resource returned to external-dns
		wantErr  bool
	}{
		{name: "on a Gateway, the route gone mid-drain and its create refused", gateway: "gw",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-10 * time.Second))},
			refuse:  func(f *syncFixture) { refuse(&f.gateway.Fake, "create", "httproutes", "") }, restored: "ingresses", wantErr: true},
		{name: "on a Gateway, the route gone mid-drain and made again", gateway: "gw",
			ingress:  []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-10 * time.Second))},
			restored: "ingresses"},
		{name: "on a Gateway, someone else's route in its place", gateway: "gw",
			ingress:  []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-10 * time.Second))},
			route:    []func(*gatewayv1.HTTPRoute){servedAt(1), usersOwn},
			restored: "ingresses"},
		{name: "back on Ingress, the Ingress gone mid-drain and its create refused", gateway: "",
			route:  []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-10 * time.Second))},
			refuse: func(f *syncFixture) { refuse(&f.kube.Fake, "create", "ingresses", "") }, restored: "httproutes", wantErr: true},
		{name: "on a Gateway, the route's update refused while it does not serve", gateway: "gw",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-10 * time.Second))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1), func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = nil }, func(r *gatewayv1.HTTPRoute) { r.Generation = 2 }},
			refuse:  func(f *syncFixture) { refuse(&f.gateway.Fake, "patch", "httproutes", types.ApplyPatchType) }, restored: "ingresses", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			svc := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
			svc.ResourceVersion = "1"
			if tc.ingress != nil {
				f.addIngress(svc, both(tc.ingress...))
				f.syncIngressToServer()
			}
			if tc.route != nil {
				f.addRoute(svc, both(tc.route...))
				f.syncRouteToServer()
			}
			if tc.refuse != nil {
				tc.refuse(f)
			}
			f.addService(svc, true)
			f.clearActions()
			err := f.sync(svc)
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync: %v, want an error: %v", err, tc.wantErr)
			}
			if !slices.Contains(f.writes(), "patch "+tc.restored) {
				t.Errorf("writes = %q, want the withdrawn %s returned to external-dns", f.writes(), tc.restored)
			}
			if reasons := f.reasons(); !slices.Contains(reasons, ReasonReturnedToDNS) {
				t.Errorf("Events %v, want one %s", reasons, ReasonReturnedToDNS)
			}
			var ann map[string]string
			if tc.restored == "ingresses" {
				live, err := f.kube.NetworkingV1().Ingresses("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				ann = live.Annotations
			} else {
				ann = f.liveRoute().Annotations
			}
			if withdrawalMarked(&metav1.ObjectMeta{Annotations: ann}) {
				t.Errorf("the only object that serves is still withdrawn: %v", ann)
			}
		})
	}
}

// TestURLOnlyForWhatServes (issue 49 item 4): the URL is written for the
// host the Service's target serves, never for a host nothing serves yet:
// not when the update to the new host was refused, and not when the new
// object was only just made while the old one serves the old host.
func TestURLOnlyForWhatServes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gateway string
		ingress bool // an Ingress for example.com, with an address
		route   bool // a route for example.com, served
		refuse  func(f *syncFixture)
	}{
		{name: "on an Ingress, its update to the new host refused", ingress: true,
			refuse: func(f *syncFixture) { refuse(&f.kube.Fake, "patch", "ingresses", types.ApplyPatchType) }},
		{name: "on a route, its update to the new host refused", gateway: "gw", route: true,
			refuse: func(f *syncFixture) { refuse(&f.gateway.Fake, "patch", "httproutes", types.ApplyPatchType) }},
		{name: "moving to a Gateway with a new host, the route just made", gateway: "gw", ingress: true},
		{name: "moving back to an Ingress with a new host, the Ingress just made", gateway: "", route: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			f.c.builder.urlAnnotation = AnnotationURL
			svc := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
			svc.ResourceVersion = "1"
			if tc.ingress {
				f.addIngress(svc, withAddress)
			}
			if tc.route {
				f.addRoute(svc, servedAt(1))
			}
			if tc.refuse != nil {
				tc.refuse(f)
			}
			svc.Annotations[AnnotationHost] = "new.example.com"
			svc.Annotations[AnnotationURL] = "http://example.com/"
			f.addService(svc, true)
			f.clearActions()
			_ = f.sync(svc)
			for _, a := range f.kube.Actions() {
				if a.Matches("patch", "services") {
					t.Errorf("the URL was written for new.example.com, which nothing serves yet: %s", a.(k8stesting.PatchAction).GetPatch())
				}
			}
		})
	}
}

// servedBy is servedAt for Gateway gw, added to what the route's status
// says of other parents.
func servedBy(gw string, gen int64) func(*gatewayv1.HTTPRoute) {
	return func(r *gatewayv1.HTTPRoute) {
		st := gatewayv1.RouteParentStatus{
			ParentRef:      gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw)},
			ControllerName: "example.com/gateway",
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: gen},
				{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", ObservedGeneration: gen},
			},
		}
		r.Status.Parents = slices.DeleteFunc(r.Status.Parents, func(p gatewayv1.RouteParentStatus) bool { return string(p.ParentRef.Name) == gw })
		r.Status.Parents = append(r.Status.Parents, st)
	}
}

// TestMoveBetweenGatewaysMakeBeforeBreak (issue 49 item 3): a Service whose
// Gateway changes (ingress/gateway, ingress/listener, --ingress-gateway)
// keeps the Gateway it leaves as a parent of its route until the new one
// serves it and went on serving it for the settle time: the route is
// never left to a Gateway that does not serve it.
func TestMoveBetweenGatewaysMakeBeforeBreak(t *testing.T) {
	f := newCutoverFixture(t, testDrain)
	svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
	svc.ResourceVersion = "1"
	f.addRoute(svc, servedAt(1))
	svc.Annotations[AnnotationGateway] = "gw2"
	f.addService(svc, true)
	parents := func() []string {
		t.Helper()
		var out []string
		for _, p := range f.liveRoute().Spec.ParentRefs {
			out = append(out, string(p.Name))
		}
		return out
	}
	// cache puts the server's route into the cache at generation gen, with
	// status.
	cacheRoute := func(gen int64, status ...func(*gatewayv1.HTTPRoute)) {
		t.Helper()
		live := f.liveRoute()
		live.Generation = gen
		live.Status = gatewayv1.HTTPRouteStatus{}
		both(status...)(live)
		if err := f.routes.Update(live); err != nil {
			t.Fatal(err)
		}
	}
	step := func(name string, wantWrites int, wantAfter time.Duration, want ...string) {
		t.Helper()
		f.clearActions()
		if got := requeued(t, f.sync(svc)); got != wantAfter {
			t.Errorf("%s: requeued after %v, want %v", name, got, wantAfter)
		}
		if got := f.writes(); len(got) != wantWrites {
			t.Errorf("%s: writes %q, want %d", name, got, wantWrites)
		}
		if got := parents(); !slices.Equal(got, want) {
			t.Errorf("%s: parents %q, want %q", name, got, want)
		}
	}
	step("the Gateway changed: the new one first, the old one kept", 2, 0, "gw2", "gw")
	cacheRoute(2, servedBy("gw", 2))
	step("the new Gateway has not accepted it: nothing changes", 0, 0, "gw2", "gw")
	cacheRoute(2, servedBy("gw", 2), func(r *gatewayv1.HTTPRoute) {
		servedBy("gw2", 2)(r)
		r.Status.Parents[1].Conditions[1].Status = metav1.ConditionFalse // ResolvedRefs
	})
	step("the new Gateway accepts it but cannot resolve its backend: nothing changes", 0, 0, "gw2", "gw")
	cacheRoute(2, servedBy("gw", 2), servedBy("gw2", 2))
	step("the new Gateway serves it: kept for the settle time", 0, 5*time.Second, "gw2", "gw")
	f.c.settling.since[settleKey{svc: cache.MetaObjectToName(svc), parents: true}] = readySince{uid: "route-uid", at: testNow.Add(-time.Hour)}
	step("settled: the old Gateway dropped", 1, 0, "gw2")
}

// TestMoveWaitsForAGatewayThatServes (issue 49, the serving rule): a route
// its Gateway accepted and resolved does not serve while the Gateway is
// not programmed or has no address: the Ingress is kept in external-dns
// (returned to it when withdrawn), the URL is not written; once the
// Gateway serves, the move goes on.
func TestMoveWaitsForAGatewayThatServes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gateway *gatewayv1.Gateway // nil: gone
	}{
		{name: "provisioning", gateway: programmedGateway("gw", func(g *gatewayv1.Gateway) { g.Status.Conditions[0].Status = metav1.ConditionFalse })},
		{name: "without an address", gateway: programmedGateway("gw", func(g *gatewayv1.Gateway) { g.Status.Addresses = nil })},
		{name: "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			f.c.builder.urlAnnotation = AnnotationURL
			if err := f.gateways.Delete(programmedGateway("gw")); err != nil {
				t.Fatal(err)
			}
			if tc.gateway != nil {
				if err := f.gateways.Add(tc.gateway); err != nil {
					t.Fatal(err)
				}
			}
			svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
			svc.ResourceVersion = "1"
			f.addIngress(svc, both(withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-10*time.Second))))
			f.syncIngressToServer()
			f.addRoute(svc, servedAt(1))
			f.c.settling.since[settleKey{svc: cache.MetaObjectToName(svc)}] = readySince{uid: "route-uid", at: testNow.Add(-time.Hour)}
			f.syncExpecting(svc, []string{"patch ingresses"})
			if reasons := f.reasons(); !slices.Contains(reasons, ReasonWaitingForHTTPRoute) || !slices.Contains(reasons, ReasonReturnedToDNS) {
				t.Errorf("Events %v, want %s and %s", reasons, ReasonWaitingForHTTPRoute, ReasonReturnedToDNS)
			}
			for _, a := range f.kube.Actions() {
				if a.Matches("patch", "services") {
					t.Errorf("the URL was written while the Gateway does not serve")
				}
			}

			// The Gateway serves: the Ingress is withdrawn.
			if err := f.gateways.Add(programmedGateway("gw")); err != nil {
				t.Fatal(err)
			}
			live, err := f.kube.NetworkingV1().Ingresses("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.c.ingresses.Update(live); err != nil {
				t.Fatal(err)
			}
			if got := requeued(t, f.sync(svc)); got != 5*time.Second {
				t.Errorf("the Gateway serving: requeued after %v, want the settle time", got)
			}
			f.c.settling.since[settleKey{svc: cache.MetaObjectToName(svc)}] = readySince{uid: "route-uid", at: testNow.Add(-time.Hour)}
			f.clearActions()
			_ = requeued(t, f.sync(svc))
			if got := f.writes(); !slices.Equal(got, []string{"patch ingresses"}) {
				t.Errorf("the Gateway serving: writes %q, want the Ingress withdrawn", got)
			}
			if reasons := f.reasons(); !slices.Contains(reasons, ReasonWithdrawnFromDNS) {
				t.Errorf("the Gateway serving: Events %v, want %s", reasons, ReasonWithdrawnFromDNS)
			}
		})
	}
}

// TestMoveBetweenListeners: two references to one Gateway may share a
// route only when each names another listener (the Gateway API's rule): a
// move between listeners keeps the old one meanwhile, a move between the
// whole Gateway and one of its listeners rewrites the parent in place (the
// API server would refuse both at once).
func TestMoveBetweenListeners(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to string // ingress/gateway-listener ("": none)
		want     []string
	}{
		{name: "listener a to listener b", from: "a", to: "b", want: []string{"b", "a"}},
		{name: "the whole Gateway to listener b", from: "", to: "b", want: []string{"b"}},
		{name: "listener a to the whole Gateway", from: "a", to: "", want: []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			svc := service(map[string]string{AnnotationGateway: "gw", AnnotationGatewayListener: tc.from}, port("http", 80))
			svc.ResourceVersion = "1"
			f.addRoute(svc, servedAt(1))
			svc.Annotations[AnnotationGatewayListener] = tc.to
			f.addService(svc, true)
			if err := f.sync(svc); err != nil {
				t.Fatalf("sync: %v", err)
			}
			live := f.liveRoute()
			var got []string
			for _, p := range live.Spec.ParentRefs {
				if p.Name != "gw" {
					t.Errorf("parent %s, want gw", p.Name)
				}
				got = append(got, string(ptr.Deref(p.SectionName, "")))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("listeners of the parents %q, want %q", got, tc.want)
			}
		})
	}
}

// TestInvalidTargetWithdrawnAloneIsReturned: a target whose annotations
// are invalid is left as it is, but one withdrawn from external-dns (the
// Service moved away from it and back, or its replacement went away) that
// still serves, and is the only object left, must be returned to
// external-dns: never no published object. Here the Service asked for a
// Gateway with an Ingress-only setting that is bad (ignored by its route,
// so the move went on and withdrew the Ingress), then the HTTPRoute CRD
// was removed (or the Service went back to its Ingress and the route was
// deleted): the Ingress serves alone and stayed withdrawn, no record.
func TestInvalidTargetWithdrawnAloneIsReturned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gateway string
		bad     map[string]string
		served  bool // the Gateway API is served
	}{
		{name: "on a Gateway, a bad ingress/class, the HTTPRoute CRD removed", gateway: "gw",
			bad: map[string]string{AnnotationClass: "Not_A_Class"}},
		{name: "on a Gateway, a bad ingress/tls-secret, the HTTPRoute CRD removed", gateway: "gw",
			bad: map[string]string{AnnotationTLSSecret: "Not_A_Secret"}},
		{name: "back on Ingress with a bad ingress/class, the route gone", gateway: "", served: true,
			bad: map[string]string{AnnotationClass: "Not_A_Class"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			ann := map[string]string{AnnotationGateway: tc.gateway}
			for k, v := range tc.bad {
				ann[k] = v
			}
			svc := service(ann, port("http", 80))
			svc.ResourceVersion = "1"
			// The Ingress the annotations made before they went bad.
			good := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
			f.addIngress(good, both(withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-10*time.Second))))
			f.syncIngressToServer()
			if !tc.served {
				f.c.gateway.routes.Store(nil)
				f.c.gateway.gateways.Store(nil)
			}
			f.addService(svc, true)
			f.clearActions()
			_ = requeued(t, f.sync(svc))
			live, err := f.kube.NetworkingV1().Ingresses("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if withdrawalMarked(live) {
				t.Errorf("the Ingress, which serves alone, is still withdrawn from external-dns: %v (writes %q)", live.Annotations, f.writes())
			}
			if reasons := f.reasons(); !slices.Contains(reasons, ReasonReturnedToDNS) {
				t.Errorf("Events %v, want %s", reasons, ReasonReturnedToDNS)
			}
		})
	}
}

// TestPiledUpParentsKeepTheGatewayThatServes: a route whose Gateway
// changed again and again before any new one served piles up parents, up
// to the Gateway API's 32. Once full, the next change must not drop the
// parent that still routes the Service (the one its Gateway accepted) to
// keep ones that never did: make-before-break would break.
func TestPiledUpParentsKeepTheGatewayThatServes(t *testing.T) {
	f := newCutoverFixture(t, testDrain)
	svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
	svc.ResourceVersion = "1"
	f.addRoute(svc, func(r *gatewayv1.HTTPRoute) {
		// The Service was on gw, then asked for g1, g2, ... g31, none of
		// which accepted it: gw, accepted, is last.
		first := r.Spec.ParentRefs[0]
		var parents []gatewayv1.ParentReference
		for i := 31; i >= 1; i-- {
			p := *first.DeepCopy()
			p.Name = gatewayv1.ObjectName(fmt.Sprintf("g%d", i))
			parents = append(parents, p)
		}
		r.Spec.ParentRefs = append(parents, first)
		r.Generation = 32
		servedBy("gw", 31)(r)
	})
	f.syncRouteToServer()
	svc.Annotations[AnnotationGateway] = "g32"
	f.addService(svc, true)
	if err := f.sync(svc); err != nil {
		t.Fatalf("sync: %v", err)
	}
	live := f.liveRoute()
	var names []string
	for _, p := range live.Spec.ParentRefs {
		names = append(names, string(p.Name))
	}
	if len(names) > maxParentRefs {
		t.Errorf("%d parents, more than the Gateway API admits", len(names))
	}
	if len(names) == 0 || names[0] != "g32" || !slices.Contains(names, "gw") {
		t.Errorf("parents %q; want g32 first and gw, the Gateway that serves the route, kept", names)
	}
}

// TestAccessControlRemovedFreesTheService: access control keys the
// controller itself put on the Ingress (from ingress/annotations) are not
// "set on the Ingress directly": once removed from ingress/annotations the
// Service moves to its route, even when the Ingress is not rewritten first
// (an Ingress-only setting is bad, so nothing is written to the Ingress,
// which is retired anyway). Before, the key left on the Ingress was taken
// for one set by hand and held the Service on its Ingress for good.
func TestAccessControlRemovedFreesTheService(t *testing.T) {
	f := newSyncFixture(t)
	f.c.settling.settle = 0
	svc := service(map[string]string{AnnotationGateway: "gw",
		AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/auth-type": "basic"}`}, port("http", 80))
	svc.ResourceVersion = "1"
	// The Ingress the controller made while ingress/annotations had the
	// key (and it held the Service on its Ingress).
	f.addIngress(svc, withAddress)
	// The key removed; an Ingress-only setting bad meanwhile.
	delete(svc.Annotations, AnnotationAnnotations)
	svc.Annotations[AnnotationTLSSecret] = "Not_A_Secret"
	f.syncExpecting(svc, []string{"create httproutes"})
	if reasons := f.reasons(); slices.Contains(reasons, ReasonAccessControlOnIngress) {
		t.Errorf("Events %v: the key the controller put on the Ingress from ingress/annotations is taken for one set on it by hand", reasons)
	}
}

// liveRoute returns the HTTPRoute the fake API server holds.
func (f *syncFixture) liveRoute() *gatewayv1.HTTPRoute {
	f.t.Helper()
	live, err := f.gateway.GatewayV1().HTTPRoutes("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return live
}
