package ingressmanager

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// addUserIngress creates ing in the fake API server and caches it as
// mutate changes it (its status, its withdrawal), the server getting the
// annotations the cache has.
func (f *syncFixture) addUserIngress(ing *networkingv1.Ingress, mutate ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	f.t.Helper()
	created, err := f.kube.NetworkingV1().Ingresses(ing.Namespace).Create(context.Background(), ing, metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		f.t.Fatal(err)
	}
	created = created.DeepCopy()
	created.UID, created.ResourceVersion = ing.UID, "1"
	both(mutate...)(created)
	if _, err := f.kube.NetworkingV1().Ingresses(ing.Namespace).Update(context.Background(), created, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	if err := f.c.ingresses.Add(created); err != nil {
		f.t.Fatal(err)
	}
	return created
}

// addMigratedRoute creates the route the controller renders for ing, as
// mutate changes it, in the fake API server and the cache.
func (f *syncFixture) addMigratedRoute(ing *networkingv1.Ingress, mutate ...func(*gatewayv1.HTTPRoute)) {
	f.t.Helper()
	m := renderMigration(migrationInput{Ingress: ing, GatewayVisible: true, Translate: func(map[string]string, sets.Set[features.FeatureName]) Carried { return Carried{} }})
	if m.Route == nil {
		f.t.Fatalf("no route for %s: %q %v", ing.Name, m.Unsupported, m.Problems)
	}
	desired := m.Route
	desired.UID, desired.Generation = "route-uid", 1
	desired.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("test")}
	addOwned(f, f.gateway.GatewayV1().HTTPRoutes(desired.Namespace).Create, f.routes, desired, both(mutate...))
}

// madeBy is the managedFields entry of a route's create by fieldManager,
// which set its ingress/migrated-from ("test": the fixture controller's).
func madeBy(fieldManager string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: fieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "gateway.networking.k8s.io/v1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:` + AnnotationMigratedFrom + `":{}}},"f:spec":{"f:rules":{}}}`)}}
}

func (f *syncFixture) syncMigration(ing *networkingv1.Ingress) error {
	return f.c.syncMigration(context.Background(), cache.MetaObjectToName(ing))
}

// settled marks the route ready for the settle time already.
func (f *syncFixture) settled(ing *networkingv1.Ingress, uid string) {
	f.c.settling.since[settleKey{svc: cache.MetaObjectToName(ing), migration: true}] = readySince{uid: types.UID(uid), at: testNow.Add(-time.Hour)}
}

// TestMigrationSync: the sync of a user's Ingress that asks to move, one
// case per step and branch: the writes the fakes receive, the Events on
// the Ingress, the requeue and the state the metric reports.
func TestMigrationSync(t *testing.T) {
	usersRoute := func(r *gatewayv1.HTTPRoute) { r.Annotations = map[string]string{"team": "other"} }
	olderIngresss := func(r *gatewayv1.HTTPRoute) { r.Annotations[AnnotationMigratedFrom] = "a-deleted-ingress" }
	optedOut := func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }
	for _, tc := range []struct {
		name      string
		ing       *networkingv1.Ingress
		ingress   []func(*networkingv1.Ingress)
		route     []func(*gatewayv1.HTTPRoute) // nil: none
		notSettle bool
		back      bool     // the move is back to the Ingress: it is the one settled
		want      []string // writes
		events    []string
		after     time.Duration
		state     string
	}{
		{name: "asking: its route is made, nothing else",
			ing: userIngress(), ingress: []func(*networkingv1.Ingress){withAddress},
			want: []string{"create httproutes"}, events: []string{ReasonHTTPRouteCreated}, state: stateMoving},
		{name: "the route not accepted yet: the Ingress is kept, in DNS",
			ing: userIngress(), ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){},
			events: []string{ReasonWaitingForHTTPRoute}, state: stateMoving},
		{name: "the route serves, just now: the settle time first",
			ing: userIngress(), ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			notSettle: true, after: 5 * time.Second, state: stateMoving},
		{name: "the route serves and settled: the Ingress is withdrawn from external-dns",
			ing: userIngress(), ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want: []string{"patch ingresses"}, events: []string{ReasonWithdrawnFromDNS}, after: testDrain, state: stateMoving},
		{name: "mid-drain: nothing written, a requeue",
			ing: userIngress(), ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-20 * time.Second))},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1)}, after: 40 * time.Second, state: stateDraining},
		{name: "drained: the Ingress stays, withdrawn, and is said moved",
			ing: userIngress(), ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1)}, events: []string{ReasonMovedToHTTPRoute}, state: stateMoved},
		{name: "drained, with ingress/delete-after-move: the Ingress is deleted as it was",
			ing:     userIngress(withAnnotations(AnnotationDeleteAfterMove, "true")),
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1)}, want: []string{"delete ingresses"}, events: []string{ReasonIngressDeleted}, state: stateMoved},
		{name: "someone else's route of the name: untouched, a Warning, the Ingress kept in DNS",
			ing: userIngress(), ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1), usersRoute},
			want:  []string{"patch ingresses"}, events: []string{ReasonHTTPRouteExists, ReasonReturnedToDNS}, state: stateBlocked},
		{name: "the route of an Ingress of the name deleted before: not its, a Warning",
			ing: userIngress(), ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1), olderIngresss},
			events: []string{ReasonHTTPRouteExists}, state: stateBlocked},
		{name: "keys the route cannot carry: no route, a Warning",
			ing:    userIngress(withAnnotations("nginx.ingress.kubernetes.io/configuration-snippet", "more_set_headers \"X: y\";")),
			events: []string{ReasonMigrationBlocked}, state: stateBlocked},
		{name: "keys that block, its route made before and serving: back on the Ingress, the route withdrawn",
			ing:     userIngress(withAnnotations("nginx.ingress.kubernetes.io/configuration-snippet", "x")),
			ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			back: true, want: []string{"patch httproutes"}, events: []string{ReasonMigrationBlocked, ReasonWithdrawnFromDNS}, after: testDrain, state: stateBlocked},
		{name: "a shape the rendering does not handle: nothing written, a Warning",
			ing:    userIngress(withPaths(ingressPath("/x", networkingv1.PathTypeImplementationSpecific, "web", 80, ""))),
			events: []string{ReasonMigrationUnsupported}, state: stateBlocked},
		{name: "a bad ingress/gateway: nothing written, a Warning",
			ing:    userIngress(withAnnotations(AnnotationGateway, "Bad_Gateway")),
			events: []string{ReasonInvalidGateway}, state: stateBlocked},
		{name: "no longer asking, withdrawn, its route there: returned to external-dns first",
			ing:     userIngress(optedOut),
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1)}, want: []string{"patch ingresses"}, events: []string{ReasonReturnedToDNS}},
		{name: "no longer asking, in DNS with an address: its route withdrawn, to be deleted after the drain",
			ing: userIngress(optedOut), ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			back: true, want: []string{"patch httproutes"}, events: []string{ReasonWithdrawnFromDNS}, after: testDrain},
		{name: "no longer asking, its route drained: the route is deleted",
			ing: userIngress(optedOut), ingress: []func(*networkingv1.Ingress){withAddress},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-2 * testDrain))},
			want:  []string{"delete httproutes"}, events: []string{ReasonHTTPRouteDeleted}},
		{name: "no longer asking, no address: the route is kept",
			ing: userIngress(optedOut), route: []func(*gatewayv1.HTTPRoute){servedAt(1)}, events: []string{ReasonWaitingForIngress}},
		{name: "no longer asking, someone else's route: nothing",
			ing: userIngress(optedOut), ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1), usersRoute}},
		{name: "never asking: nothing", ing: userIngress(optedOut), ingress: []func(*networkingv1.Ingress){withAddress}},
		{name: "a Service's own Ingress: not a migration; its ingress/gateway said to be ignored",
			ing: userIngress(func(i *networkingv1.Ingress) {
				i.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: testUID, Controller: ptr.To(true)}}
			}), events: []string{ReasonGatewayOnServiceIngress}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			ing := f.addUserIngress(tc.ing, tc.ingress...)
			if tc.route != nil {
				f.addMigratedRoute(userIngress(), tc.route...)
				f.syncRouteToServerAs("web")
			}
			if settled := "route-uid"; !tc.notSettle {
				if tc.back {
					settled = string(ing.UID)
				}
				f.settled(ing, settled)
			}
			f.clearActions()
			err := f.syncMigration(ing)
			if got := requeued(t, err); got != tc.after {
				t.Errorf("requeued after %v, want %v", got, tc.after)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			if got := f.reasons(); !slices.Equal(got, tc.events) {
				t.Errorf("Events %q, want %q", got, tc.events)
			}
			state, _ := f.c.migrations.states.Load(cache.MetaObjectToName(ing))
			if s, _ := state.(string); s != tc.state {
				t.Errorf("state %q, want %q", s, tc.state)
			}
			for _, a := range f.allActions() {
				d, ok := a.(k8stesting.DeleteActionImpl)
				if !ok {
					continue
				}
				p := d.DeleteOptions.Preconditions
				switch d.Resource.Resource {
				case "ingresses":
					if p == nil || ptr.Deref(p.UID, "") != ing.UID || ptr.Deref(p.ResourceVersion, "") != ing.ResourceVersion {
						t.Errorf("the user's Ingress deleted with preconditions %+v, want its UID and resourceVersion", p)
					}
				case "httproutes":
					// Held by its marker alone, the route is deleted only
					// as it was cached: not once its user took it.
					route, _, _ := f.routes.GetByKey("default/" + d.Name)
					if p == nil || route == nil || p.ResourceVersion == nil || ptr.Deref(p.UID, "") != route.(*gatewayv1.HTTPRoute).UID ||
						*p.ResourceVersion != route.(*gatewayv1.HTTPRoute).ResourceVersion {
						t.Errorf("the route made from the Ingress deleted with preconditions %+v, want its UID and resourceVersion", p)
					}
				}
			}
		})
	}
}

// syncRouteToServerAs is syncRouteToServer for the route name.
func (f *syncFixture) syncRouteToServerAs(name string) {
	f.t.Helper()
	routes := f.gateway.GatewayV1().HTTPRoutes("default")
	sendToServer(f.t, f.routes, routes.Get, routes.Update, name)
}

// TestMigrationIngressGone: the Ingress gone (deleted by its user, or once
// moved) leaves its route alone; withdrawn from external-dns, the route is
// returned to it, being all that can serve the hosts.
func TestMigrationIngressGone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route []func(*gatewayv1.HTTPRoute)
		want  []string
	}{
		{"in DNS: nothing written", []func(*gatewayv1.HTTPRoute){servedAt(1)}, nil},
		{"withdrawn: returned to external-dns", []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow)}, []string{"patch httproutes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			ing := userIngress()
			f.addMigratedRoute(ing, tc.route...)
			f.syncRouteToServerAs("web")
			f.c.migrations.states.Store(cache.MetaObjectToName(ing), stateDraining)
			f.clearActions()
			if err := f.syncMigration(ing); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			if _, ok := f.c.migrations.states.Load(cache.MetaObjectToName(ing)); ok {
				t.Error("the state of an Ingress gone is still reported")
			}
		})
	}
}

// TestMigrationHandlers: which events queue a user's Ingress's key: its
// own when it asks to move or did, its route's, its backend Services' and
// its Gateway's; never a Service's own Ingress.
func TestMigrationHandlers(t *testing.T) {
	c := newTestController(t)
	asking := userIngress()
	other := userIngress(func(i *networkingv1.Ingress) { i.Name, i.UID, i.Annotations = "plain", "plain-uid", nil })
	owned := userIngress(func(i *networkingv1.Ingress) {
		i.Name, i.Annotations = "owned", nil // with ingress/gateway it is queued to be warned of (TestGatewayOnServiceIngressWarns)
		i.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "owned", UID: "s", Controller: ptr.To(true)}}
	})
	for _, ing := range []*networkingv1.Ingress{asking, other, owned} {
		if err := c.ingresses.Add(ing); err != nil {
			t.Fatal(err)
		}
	}
	migrationsQueued := func() map[string]bool {
		out := map[string]bool{}
		for c.migrations.loop.Queue.Len() > 0 {
			k, _ := c.migrations.loop.Queue.Get()
			out[k.String()] = true
			c.migrations.loop.Queue.Done(k)
		}
		return out
	}
	c.enqueueOwned(asking)
	c.enqueueOwned(other)
	c.enqueueOwned(owned)
	c.enqueueOwned(cache.DeletedFinalStateUnknown{Key: "default/web", Obj: asking})
	if got := migrationsQueued(); len(got) != 1 || !got["default/web"] {
		t.Errorf("Ingress events queued %v, want default/web alone", got)
	}
	c.enqueueOwned(&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: map[string]string{AnnotationMigratedFrom: "x"}}})
	c.enqueueOwned(&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}})
	if got := migrationsQueued(); len(got) != 1 || !got["default/web"] {
		t.Errorf("route events queued %v, want default/web alone", got)
	}
	c.enqueueOwned(cache.DeletedFinalStateUnknown{Key: "default/web", Obj: &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}})
	if got := migrationsQueued(); len(got) != 1 || !got["default/web"] {
		t.Errorf("someone else's route in the place of an Ingress's that asks to move, deleted: queued %v, want default/web", got)
	}
	c.serviceChanged(service(nil)) // default/my-nginx: no backend of any
	c.serviceChanged(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	c.gatewayChanged(cache.ObjectName{Namespace: "default", Name: "gw"})
	c.gatewayChanged(cache.ObjectName{Namespace: "default", Name: "gw2"})
	if got := migrationsQueued(); len(got) != 1 || !got["default/web"] {
		t.Errorf("Service and Gateway events queued %v, want default/web alone", got)
	}
	c.updateIngress(asking, asking) // a resync
	c.updateIngress(other, other)
	if got := migrationsQueued(); len(got) != 1 || !got["default/web"] {
		t.Errorf("resyncs queued %v, want default/web alone", got)
	}
}

// TestMigrationEventsNameKeysNotValues: what blocks is said by key and
// why, never by value (an annotation may hold a token: an auth URL with
// credentials, a snippet).
func TestMigrationEventsNameKeysNotValues(t *testing.T) {
	const secret = "s3cr3t-t0ken"
	f := newCutoverFixture(t, testDrain)
	ing := f.addUserIngress(userIngress(withAnnotations(
		"nginx.ingress.kubernetes.io/auth-url", "https://user:"+secret+"@auth.example.com/check",
		"nginx.ingress.kubernetes.io/configuration-snippet", "proxy_set_header Authorization \"Bearer "+secret+"\";",
	)), withAddress)
	if err := f.syncMigration(ing); err != nil {
		t.Fatal(err)
	}
	events := f.events()
	for _, e := range events {
		if strings.Contains(e, secret) {
			t.Errorf("an Event shows an annotation's value: %s", e)
		}
		if !strings.Contains(e, "nginx.ingress.kubernetes.io/auth-url") {
			t.Errorf("an Event does not name the key that blocks: %s", e)
		}
	}
	if n := len(events); n != 1 {
		t.Errorf("%d Events, want one Warning", n)
	}
}

// TestMigrationEventsHideCredentialsOfBadValues: a value quoted to say why
// it blocks (a redirect URL that is not of the form a RequestRedirect
// takes) never shows credentials it holds, in the Event nor in the plan.
func TestMigrationEventsHideCredentialsOfBadValues(t *testing.T) {
	const secret = "s3cr3t-t0ken"
	for key, ann := range map[string][]string{
		"permanent-redirect": {"nginx.ingress.kubernetes.io/permanent-redirect", "https://admin:" + secret + "@login.example.com/"},
		"temporal-redirect":  {"nginx.ingress.kubernetes.io/temporal-redirect", "https://admin:" + secret + "@login.example.com/"},
		"cors-allow-origin": {"nginx.ingress.kubernetes.io/enable-cors", "true",
			"nginx.ingress.kubernetes.io/cors-allow-origin", "https://ok.example.com, https://admin:" + secret + "@login.example.com"},
		"cors-allow-origin, long": {"nginx.ingress.kubernetes.io/enable-cors", "true",
			"nginx.ingress.kubernetes.io/cors-allow-origin", "https://admin:" + secret + "@login" + strings.Repeat(".example", 30) + ".com"},
	} {
		t.Run(key, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			ing := f.addUserIngress(userIngress(withAnnotations(ann...)), withAddress)
			if err := f.syncMigration(ing); err != nil {
				t.Fatal(err)
			}
			events := f.events()
			for _, e := range events {
				if strings.Contains(e, secret) {
					t.Errorf("an Event shows the credentials of a value: %s", e)
				}
			}
			if len(events) == 0 {
				t.Error("no Event")
			}
			for _, b := range translateIngressAnnotations(ing.Annotations, nil).Blocking {
				if strings.Contains(b.Why, secret) {
					t.Errorf("%s blocks with the credentials of its value: %s", b.Key, b.Why)
				}
			}
		})
	}
}

// TestMigrationForgedMarkerIsNotOurs: a route of the Ingress's name that
// carries ingress/migrated-from with the Ingress's UID (anyone who reads
// the Ingress knows it) but that the controller did not make (its field
// manager does not own the annotation) is someone else's: never updated,
// withdrawn nor deleted, whether the Ingress asks to move or stopped.
func TestMigrationForgedMarkerIsNotOurs(t *testing.T) {
	forged := func(r *gatewayv1.HTTPRoute) { r.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("kubectl")} }
	optedOut := func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }
	for _, tc := range []struct {
		name    string
		ing     *networkingv1.Ingress
		ingress []func(*networkingv1.Ingress)
		route   []func(*gatewayv1.HTTPRoute)
		events  []string
	}{
		{name: "no longer asking, in DNS: the forged route is not withdrawn",
			ing: userIngress(optedOut), ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1), forged}},
		{name: "no longer asking, the forged route withdrawn long ago: not deleted",
			ing: userIngress(optedOut), ingress: []func(*networkingv1.Ingress){withAddress},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1), forged, withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-2 * testDrain))}},
		{name: "asking, with delete-after-move: the forged route does not take the Ingress's place",
			ing:     userIngress(withAnnotations(AnnotationDeleteAfterMove, "true")),
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1), forged}, events: []string{ReasonHTTPRouteExists, ReasonReturnedToDNS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			ing := f.addUserIngress(tc.ing, tc.ingress...)
			f.addMigratedRoute(userIngress(), tc.route...)
			f.syncRouteToServerAs("web")
			if migrationWanted(ing) {
				f.settled(ing, "route-uid")
			} else {
				f.settled(ing, string(ing.UID))
			}
			f.clearActions()
			requeued(t, f.syncMigration(ing))
			for _, w := range f.writes() {
				if strings.HasSuffix(w, "httproutes") || w == "delete ingresses" {
					t.Errorf("wrote %s: the forged route taken for the Ingress's own", w)
				}
			}
			if got := f.reasons(); !slices.Equal(got, tc.events) {
				t.Errorf("Events %q, want %q", got, tc.events)
			}
		})
	}
	ing := userIngress()
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Annotations: map[string]string{AnnotationMigratedFrom: string(ing.UID)}}}
	if isMigratedFrom(route, ing, "test") {
		t.Error("a route no field manager of ours made is taken for the Ingress's own")
	}
}

// TestMigrationIdentityChangesMidMove: what the move is of changes once
// the Ingress is withdrawn and drained: its rules (the route serves the old
// ones), its Gateway (the route is on the old one). The Ingress is not
// deleted by ingress/delete-after-move, nor said moved, before the route
// made from it as it is now serves.
func TestMigrationIdentityChangesMidMove(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ingress func(*networkingv1.Ingress)
	}{
		{"new rules after the move", withPaths(ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""), ingressPath("/api", networkingv1.PathTypePrefix, "api", 8080, ""))},
		{"another Gateway after the move", withAnnotations(AnnotationGateway, "gw2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			ing := f.addUserIngress(userIngress(withAnnotations(AnnotationDeleteAfterMove, "true"), tc.ingress), withAddress,
				withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain)))
			f.addMigratedRoute(userIngress(), servedAt(1)) // as made from the Ingress before the change
			f.syncRouteToServerAs("web")
			f.settled(ing, "route-uid")
			f.clearActions()
			err := f.syncMigration(ing)
			var after time.Duration
			if err != nil {
				after = requeued(t, err)
			}
			_ = after
			for _, w := range f.writes() {
				if w == "delete ingresses" {
					t.Errorf("the Ingress deleted while its route serves what it was, not what it is")
				}
			}
			for _, r := range f.reasons() {
				if r == ReasonMovedToHTTPRoute || r == ReasonIngressDeleted {
					t.Errorf("Event %s while the route does not serve the Ingress as it is", r)
				}
			}
			state, _ := f.c.migrations.states.Load(cache.MetaObjectToName(ing))
			if state == stateMoved {
				t.Errorf("state %v while the route does not serve the Ingress as it is", state)
			}
		})
	}
}

// TestMigrationIngressGoneForgedRoute: the Ingress gone, a route of its
// name that carries ingress/migrated-from and the withdrawal marks but
// that the controller did not make is not written.
func TestMigrationIngressGoneForgedRoute(t *testing.T) {
	f := newCutoverFixture(t, testDrain)
	ing := userIngress()
	f.addMigratedRoute(ing, servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow), func(r *gatewayv1.HTTPRoute) {
		r.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("kubectl")}
	})
	f.syncRouteToServerAs("web")
	f.clearActions()
	if err := f.syncMigration(ing); err != nil {
		t.Fatal(err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes = %q to a route the controller did not make", got)
	}
}

// TestGatewayOnServiceIngressWarns: ingress/gateway on the Ingress a
// Service controls is not read (the Service moves it by its own
// annotations): its events queue it, its sync writes nothing and says so
// once by a Warning on the Ingress; removed, the Ingress's events no
// longer queue it.
func TestGatewayOnServiceIngressWarns(t *testing.T) {
	f := newCutoverFixture(t, testDrain)
	owned := func(i *networkingv1.Ingress) {
		i.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: testUID, Controller: ptr.To(true)}}
	}
	ing := f.addUserIngress(userIngress(owned), withAddress)
	f.clearActions()
	queued := func() bool {
		n := f.c.migrations.loop.Queue.Len()
		for f.c.migrations.loop.Queue.Len() > 0 {
			k, _ := f.c.migrations.loop.Queue.Get()
			f.c.migrations.loop.Queue.Done(k)
		}
		return n > 0
	}
	f.c.enqueueOwned(ing)
	if !queued() {
		t.Fatal("a Service's Ingress with ingress/gateway is not queued")
	}
	for range 2 {
		if err := f.syncMigration(ing); err != nil {
			t.Fatal(err)
		}
	}
	events := f.events()
	if len(events) != 1 || !strings.Contains(events[0], ReasonGatewayOnServiceIngress) || !strings.Contains(events[0], "set ingress/gateway on Service web") {
		t.Errorf("Events %q, want one %s naming Service web", events, ReasonGatewayOnServiceIngress)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes %q, want none", got)
	}
	plain := ing.DeepCopy()
	delete(plain.Annotations, AnnotationGateway)
	if err := f.c.ingresses.Update(plain); err != nil {
		t.Fatal(err)
	}
	f.c.enqueueOwned(plain)
	if !queued() {
		t.Fatal("removing ingress/gateway does not bring the Ingress back, to forget what was said")
	}
	if err := f.syncMigration(plain); err != nil {
		t.Fatal(err)
	}
	f.c.enqueueOwned(plain)
	if queued() {
		t.Error("a Service's Ingress without ingress/gateway, nothing said of it, is queued")
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("Events %q after the annotation's removal", events)
	}
}
