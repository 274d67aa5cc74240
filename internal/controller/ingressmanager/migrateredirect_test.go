package ingressmanager

import (
	"reflect"
	"slices"
	"strings"
	"testing"

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

// TestMigrationHTTPSRedirect: ingress-nginx's redirect of plain HTTP to
// HTTPS (ssl-redirect, its default on the class nginx, force-ssl-redirect)
// on a migrated Ingress: its route on the one HTTPS listener, a redirect
// route on the plain-HTTP listeners answering each of its paths with 308
// to https, never in external-dns; or, where that cannot be rendered, the
// keys block saying why.
func TestMigrationHTTPSRedirect(t *testing.T) {
	nginxClass := func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("nginx") }
	http := listener("http", gatewayv1.HTTPProtocolType, "")
	http.Port = 80
	https := listener("https", gatewayv1.HTTPSProtocolType, "*.example.com")
	standard := gatewayWith(http, https)
	ssl := "nginx.ingress.kubernetes.io/ssl-redirect"
	force := "nginx.ingress.kubernetes.io/force-ssl-redirect"
	all308 := sets.New(features.SupportHTTPRouteSchemeRedirect, features.SupportHTTPRoute308RedirectStatusCode)
	for _, tc := range []struct {
		name      string
		ing       *networkingv1.Ingress
		gateway   *gatewayv1.Gateway
		invisible bool
		supported sets.Set[features.FeatureName]
		// https is the listener of the route ("": the whole Gateway) and
		// http those of the redirect route (nil: no redirect route).
		https    string
		http     []string
		matches  []string // the redirect rule's "<type> <path>"
		blocking []string
		acked    []string
		why      string // a word of the first blocking key's why
		effect   string // a word of ssl-redirect's effect, when carried
	}{
		{name: "class nginx with TLS, ssl-redirect not set: its default, true",
			ing: userIngress(nginxClass, withTLS("shop.example.com")), gateway: standard, supported: all308,
			https: "https", http: []string{"http"}, matches: []string{"PathPrefix /"}, effect: "not set, ingress-nginx's default"},
		{name: "ssl-redirect true, the class not nginx",
			ing: userIngress(withTLS("shop.example.com"), withAnnotations(ssl, "true")), gateway: standard,
			https: "https", http: []string{"http"}, matches: []string{"PathPrefix /"}, effect: "308"},
		{name: "another class with TLS and no key: no redirect (only ingress-nginx's default)",
			ing: userIngress(withTLS("shop.example.com")), gateway: standard},
		{name: "ssl-redirect false: none",
			ing: userIngress(nginxClass, withTLS("shop.example.com"), withAnnotations(ssl, "false")), gateway: standard},
		{name: "ssl-redirect true without TLS: nothing to redirect",
			ing: userIngress(withAnnotations(ssl, "true")), gateway: standard, effect: "nothing"},
		{name: "force-ssl-redirect without TLS: every host, on the HTTPS listener that takes it",
			ing: userIngress(withAnnotations(force, "true")), gateway: standard,
			https: "https", http: []string{"http"}, matches: []string{"PathPrefix /"}},
		{name: "the paths of the route, each once, app-root's \"/\" too",
			ing: userIngress(nginxClass, withTLS("shop.example.com"), withAnnotations("nginx.ingress.kubernetes.io/app-root", "/app"),
				withPaths(ingressPath("/a", networkingv1.PathTypePrefix, "web", 80, ""), ingressPath("/b", networkingv1.PathTypeExact, "web", 80, ""))),
			gateway: standard, https: "https", http: []string{"http"}, matches: []string{"Exact /", "PathPrefix /a", "Exact /b"}},
		{name: "every plain-HTTP listener that takes the hosts, in the Gateway's order",
			ing: userIngress(nginxClass, withTLS("shop.example.com")),
			gateway: gatewayWith(listener("plain-a", gatewayv1.HTTPProtocolType, "shop.example.com"), https,
				listener("plain-other", gatewayv1.HTTPProtocolType, "other.example.org"), listener("plain-b", gatewayv1.HTTPProtocolType, "*.example.com")),
			https: "https", http: []string{"plain-a", "plain-b"}, matches: []string{"PathPrefix /"}},
		{name: "the listener named, HTTPS: the route's",
			ing:     userIngress(nginxClass, withTLS("shop.example.com"), withAnnotations(AnnotationGatewayListener, "https-b")),
			gateway: gatewayWith(http, https, listener("https-b", gatewayv1.HTTPSProtocolType, "")),
			https:   "https-b", http: []string{"http"}, matches: []string{"PathPrefix /"}},
		{name: "two HTTPS listeners take the host and none is named: blocks",
			ing:      userIngress(nginxClass, withTLS("shop.example.com")),
			gateway:  gatewayWith(http, https, listener("https-b", gatewayv1.HTTPSProtocolType, "")),
			blocking: []string{ssl}, why: "name the one to use"},
		{name: "the listener named is plain HTTP: the redirect and spec.tls block",
			ing:     userIngress(nginxClass, withTLS("shop.example.com"), withAnnotations(AnnotationGatewayListener, "http")),
			gateway: standard, blocking: []string{ssl, tlsKey}, why: "is no HTTPS listener"},
		{name: "no plain-HTTP listener: blocks",
			ing:     userIngress(nginxClass, withTLS("shop.example.com")),
			gateway: gatewayWith(https), blocking: []string{ssl}, why: "no plain-HTTP listener"},
		{name: "no plain-HTTP listener, acknowledged: the route on the whole Gateway, no redirect",
			ing:     userIngress(nginxClass, withTLS("shop.example.com"), withAnnotations(AnnotationGatewayAcknowledged, ssl)),
			gateway: gatewayWith(https), acked: []string{ssl}},
		{name: "hosts with TLS and without: blocks (ssl-redirect redirects only the first)",
			ing: userIngress(nginxClass, withTLS("shop.example.com"), withRule("plain.example.com",
				ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""))),
			gateway: standard, blocking: []string{ssl}, why: "make one Ingress for each"},
		{name: "no single HTTPS listener takes every host: blocks",
			ing: userIngress(withAnnotations(force, "true"), withRule("shop.example.org",
				ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""))),
			gateway:  gatewayWith(http, https, listener("https-org", gatewayv1.HTTPSProtocolType, "*.example.org")),
			blocking: []string{force}, why: "no HTTPS listener"},
		{name: "the Gateway not watched: blocks",
			ing: userIngress(withAnnotations(force, "true")), invisible: true, blocking: []string{force}, why: "does not watch"},
		{name: "the Gateway not there: blocks",
			ing: userIngress(withAnnotations(force, "true")), blocking: []string{force}, why: "does not exist"},
		{name: "the class does not list 308: blocks, saying it is the default",
			ing: userIngress(nginxClass, withTLS("shop.example.com")), gateway: standard,
			supported: sets.New(features.SupportHTTPRouteSchemeRedirect), blocking: []string{ssl}, why: "not set, ingress-nginx's default"},
		{name: "a name too long for the redirect route: blocks",
			ing:     userIngress(withAnnotations(force, "true"), func(i *networkingv1.Ingress) { i.Name = strings.Repeat("w", 250) }),
			gateway: standard, blocking: []string{force}, why: "longer than 253"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
			m := renderMigration(migrationInput{Ingress: tc.ing, Services: map[string]*corev1.Service{"web": svc}, Gateway: tc.gateway,
				GatewayVisible: !tc.invisible, Supported: tc.supported})
			if got := keysOf(m.Blocking); !slices.Equal(got, tc.blocking) {
				t.Fatalf("blocking %q, want %q (%s)", got, tc.blocking, describeBlocking(m.Blocking))
			}
			if len(tc.blocking) > 0 {
				if !strings.Contains(m.Blocking[0].Why, tc.why) {
					t.Errorf("why %q, want it to say %q", m.Blocking[0].Why, tc.why)
				}
				if m.RedirectRoute != nil {
					t.Errorf("a redirect route while blocked: %+v", m.RedirectRoute)
				}
				return
			}
			if got := keysOf(m.Acknowledged); !slices.Equal(got, tc.acked) {
				t.Errorf("acknowledged %q, want %q", got, tc.acked)
			}
			if tc.effect != "" {
				key := ssl
				if _, ok := m.Carried.Effects[key]; !ok {
					key = force
				}
				if e := m.Carried.Effects[key]; !strings.Contains(e, tc.effect) {
					t.Errorf("effect of %s %q, want it to say %q", key, e, tc.effect)
				}
			}
			if m.Route == nil {
				t.Fatalf("no route: %q %v", m.Unsupported, m.Problems)
			}
			if got := ptr.Deref(m.Route.Spec.ParentRefs[0].SectionName, ""); string(got) != tc.https || len(m.Route.Spec.ParentRefs) != 1 {
				t.Errorf("the route's parents %+v, want one on listener %q", m.Route.Spec.ParentRefs, tc.https)
			}
			if tc.http == nil {
				if m.RedirectRoute != nil {
					t.Errorf("a redirect route: %+v", m.RedirectRoute)
				}
				return
			}
			rr := m.RedirectRoute
			if rr == nil {
				t.Fatal("no redirect route")
			}
			checkRedirectRoute(t, tc.ing, m.Route, rr)
			var listeners []string
			for _, p := range rr.Spec.ParentRefs {
				if p.Name != "gw" || p.SectionName == nil {
					t.Errorf("parent %+v: not a listener of gw", p)
					continue
				}
				listeners = append(listeners, string(*p.SectionName))
			}
			if !slices.Equal(listeners, tc.http) {
				t.Errorf("redirect route on %q, want %q", listeners, tc.http)
			}
			var matches []string
			for _, mt := range rr.Spec.Rules[0].Matches {
				matches = append(matches, string(ptr.Deref(mt.Path.Type, ""))+" "+ptr.Deref(mt.Path.Value, ""))
			}
			if !slices.Equal(matches, tc.matches) {
				t.Errorf("redirect matches %q, want %q", matches, tc.matches)
			}
		})
	}
}

// checkRedirectRoute checks what every redirect route made from ing for
// route has: its name, no owner, the marker, external-dns kept off it,
// the route's hostnames, one rule of one filter redirecting to https with
// 308 and no backend.
func checkRedirectRoute(t *testing.T, ing *networkingv1.Ingress, route, rr *gatewayv1.HTTPRoute) {
	t.Helper()
	if rr.Name != ing.Name+"-https-redirect" || rr.Namespace != ing.Namespace || len(rr.OwnerReferences) != 0 {
		t.Errorf("redirect route %s/%s, owners %v", rr.Namespace, rr.Name, rr.OwnerReferences)
	}
	if rr.Annotations[AnnotationMigratedFrom] != string(ing.UID) {
		t.Errorf("marker %q, want the Ingress's UID", rr.Annotations[AnnotationMigratedFrom])
	}
	for _, k := range externalDNSControllerKeys {
		if rr.Annotations[k] != redirectDNSController {
			t.Errorf("%s = %q: external-dns would publish the redirect route", k, rr.Annotations[k])
		}
	}
	if !slices.Equal(rr.Spec.Hostnames, route.Spec.Hostnames) {
		t.Errorf("redirect hostnames %q, want the route's %q", rr.Spec.Hostnames, route.Spec.Hostnames)
	}
	want := []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestRedirect,
		RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{Scheme: ptr.To("https"), StatusCode: ptr.To(308)}}}
	if len(rr.Spec.Rules) != 1 || !reflect.DeepEqual(rr.Spec.Rules[0].Filters, want) || len(rr.Spec.Rules[0].BackendRefs) != 0 {
		t.Errorf("redirect rules %+v, want one redirecting to https with 308", rr.Spec.Rules)
	}
}

// redirectGateway is Gateway gw programmed, with a plain-HTTP listener
// and an HTTPS one for *.example.com.
func redirectGateway() *gatewayv1.Gateway {
	http := listener("http", gatewayv1.HTTPProtocolType, "")
	http.Port = 80
	return programmedGateway("gw", func(gw *gatewayv1.Gateway) {
		gw.Spec = gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{http, listener("https", gatewayv1.HTTPSProtocolType, "*.example.com")}}
	})
}

// tlsIngress is the user's Ingress web of the class nginx with TLS for
// its host: ingress-nginx's default redirect to HTTPS applies.
func tlsIngress(changes ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	return userIngress(append([]func(*networkingv1.Ingress){func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("nginx") },
		withTLS("shop.example.com")}, changes...)...)
}

// servedOnEachParent has every parent of the route accept it and resolve
// its references, at generation gen.
func servedOnEachParent(gen int64) func(*gatewayv1.HTTPRoute) {
	return func(r *gatewayv1.HTTPRoute) {
		r.Generation = gen
		r.Status.Parents = nil
		for _, p := range r.Spec.ParentRefs {
			r.Status.Parents = append(r.Status.Parents, gatewayv1.RouteParentStatus{ParentRef: p, ControllerName: "example.com/gateway",
				Conditions: []metav1.Condition{
					{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: gen},
					{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", ObservedGeneration: gen},
				}})
		}
	}
}

// addRenderedRoutes creates, in the fake API server and the cache, the
// routes the controller renders on redirectGateway: the route of ing if
// route is not nil, the redirect route of tlsIngress (of ing's name and
// UID) if redirect is not nil, each as its mutations change it.
func (f *syncFixture) addRenderedRoutes(ing *networkingv1.Ingress, route, redirect []func(*gatewayv1.HTTPRoute)) {
	f.t.Helper()
	render := func(ing *networkingv1.Ingress) *Migration {
		m := renderMigration(migrationInput{Ingress: ing, Gateway: redirectGateway(), GatewayVisible: true})
		if m.Route == nil {
			f.t.Fatalf("no route for %s: %q %v %s", ing.Name, m.Unsupported, m.Problems, describeBlocking(m.Blocking))
		}
		return m
	}
	for _, r := range []struct {
		obj    *gatewayv1.HTTPRoute
		mutate []func(*gatewayv1.HTTPRoute)
	}{{render(ing).Route, route}, {render(tlsIngress()).RedirectRoute, redirect}} {
		if r.mutate == nil {
			continue
		}
		if r.obj == nil {
			f.t.Fatal("no redirect route for tlsIngress")
		}
		r.obj.UID, r.obj.Generation = types.UID(r.obj.Name+"-uid"), 1
		r.obj.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("test")}
		addOwned(f, f.gateway.GatewayV1().HTTPRoutes(r.obj.Namespace).Create, f.routes, r.obj, both(r.mutate...))
	}
}

// TestMigrationRedirectSync: the sync of a user's Ingress whose move
// carries ingress-nginx's redirect to HTTPS: the redirect route first,
// and until each of its listeners accepts it the Ingress stays (returned
// to external-dns if withdrawn) and its route is not made; then the
// route, on the HTTPS listener. Without the redirect any more, the
// redirect route goes once the route no longer needs it; someone else's
// route of its name is left alone and keeps the Ingress.
func TestMigrationRedirectSync(t *testing.T) {
	const routeUID = "web-uid"
	onHTTPS := func(r *gatewayv1.HTTPRoute) {
		if s := ptr.Deref(r.Spec.ParentRefs[0].SectionName, ""); s != "https" {
			panic("the route is not on the HTTPS listener: " + s)
		}
	}
	optedOut := func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }
	noRedirect := withAnnotations(nginxSSLRedirect, "false")
	usersRoute := func(r *gatewayv1.HTTPRoute) {
		r.Annotations = map[string]string{"team": "other"}
		r.ManagedFields = nil
	}
	for _, tc := range []struct {
		name      string
		ing       *networkingv1.Ingress
		ingress   []func(*networkingv1.Ingress)
		rendered  *networkingv1.Ingress // the Ingress the routes in place were rendered for; nil: ing
		route     []func(*gatewayv1.HTTPRoute)
		redirect  []func(*gatewayv1.HTTPRoute)
		want      []string
		events    []string
		created   string // the route created, if any
		requeue   bool
		state     string
		notSettle bool
	}{
		{name: "the redirect route first, not the route",
			ing: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress},
			want: []string{"create httproutes"}, created: "web-https-redirect", events: []string{ReasonHTTPRouteCreated}, state: stateMoving},
		{name: "the redirect route not accepted on its listener: the Ingress kept, no route",
			ing: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress}, redirect: []func(*gatewayv1.HTTPRoute){},
			events: []string{ReasonWaitingForHTTPRoute}, state: stateMoving},
		{name: "the redirect route accepted: the route made, on the HTTPS listener",
			ing: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress}, redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)},
			want: []string{"create httproutes"}, created: "web", events: []string{ReasonHTTPRouteCreated}, state: stateMoving},
		{name: "both serve and settled: the Ingress withdrawn",
			ing: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress},
			route: []func(*gatewayv1.HTTPRoute){onHTTPS, servedOnEachParent(1)}, redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)},
			want: []string{"patch ingresses"}, events: []string{ReasonWithdrawnFromDNS}, requeue: true, state: stateMoving},
		{name: "moved, the redirect route gone: made again, the Ingress returned to external-dns meanwhile",
			ing: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route: []func(*gatewayv1.HTTPRoute){onHTTPS, servedOnEachParent(1)},
			want:  []string{"patch ingresses", "create httproutes"}, created: "web-https-redirect",
			events: []string{ReasonHTTPRouteCreated, ReasonReturnedToDNS}, state: stateMoving},
		{name: "someone else's route of the redirect's name: untouched, a Warning, the Ingress kept",
			ing: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress}, redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1), usersRoute},
			events: []string{ReasonHTTPRouteExists}, state: stateMoving},
		{name: "the redirect no longer asked, the route not yet off the HTTPS listener: the route rewritten, the redirect route kept",
			ing: tlsIngress(noRedirect), rendered: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route: []func(*gatewayv1.HTTPRoute){onHTTPS, servedOnEachParent(1)}, redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)},
			// the route's first update: its create's fields moved to the
			// controller's apply (a JSON patch, see writer.update), then the apply
			want: []string{"patch httproutes", "patch httproutes"}, events: []string{ReasonHTTPRouteUpdated}, state: stateMoving},
		{name: "the redirect no longer asked, the route serving on the whole Gateway: the redirect route deleted",
			ing: tlsIngress(noRedirect), ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)}, redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)},
			want: []string{"delete httproutes"}, events: []string{ReasonHTTPRouteDeleted, ReasonMovedToHTTPRoute}, state: stateMoved},
		{name: "opted out, the route still there: the redirect route kept while it drains",
			ing: tlsIngress(optedOut), rendered: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress},
			route:    []func(*gatewayv1.HTTPRoute){onHTTPS, servedOnEachParent(1), withdrawn[*gatewayv1.HTTPRoute](testNow)},
			redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)}, requeue: true},
		{name: "opted out, the route gone: the redirect route deleted",
			ing: tlsIngress(optedOut), rendered: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress},
			redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)},
			want:     []string{"delete httproutes"}, events: []string{ReasonHTTPRouteDeleted}},
		{name: "opted out, someone else's route of the redirect's name: untouched",
			ing: tlsIngress(optedOut), rendered: tlsIngress(), ingress: []func(*networkingv1.Ingress){withAddress},
			redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1), usersRoute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			if err := f.gateways.Update(redirectGateway()); err != nil {
				t.Fatal(err)
			}
			ing := f.addUserIngress(tc.ing, tc.ingress...)
			rendered := tc.rendered
			if rendered == nil {
				rendered = tc.ing
			}
			f.addRenderedRoutes(rendered, tc.route, tc.redirect)
			f.settled(ing, routeUID)
			f.clearActions()
			err := f.syncMigration(ing)
			if got := requeued(t, err) > 0; got != tc.requeue {
				t.Errorf("requeued %v, want %v", got, tc.requeue)
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
				switch a := a.(type) {
				case k8stesting.CreateActionImpl:
					r, ok := a.Object.(*gatewayv1.HTTPRoute)
					if !ok || r.Name != tc.created {
						t.Errorf("created %v, want HTTPRoute %s", a.Object, tc.created)
						continue
					}
					if r.Name == "web" {
						onHTTPS(r)
					} else {
						checkRedirectRoute(t, ing, &gatewayv1.HTTPRoute{Spec: gatewayv1.HTTPRouteSpec{Hostnames: []gatewayv1.Hostname{"shop.example.com"}}}, r)
					}
				case k8stesting.DeleteActionImpl:
					if a.Resource.Resource == "httproutes" && a.Name != "web-https-redirect" {
						t.Errorf("deleted HTTPRoute %s", a.Name)
					}
				}
			}
		})
	}
}
