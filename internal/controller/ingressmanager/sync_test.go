package ingressmanager

import (
	"context"
	"net/http"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestSync: the sync seam, sample-controller style: a Service and what the
// caches hold in, the writes the fake API servers receive and the Events
// out. One case per branch of the switch on the intent's target.
func TestSync(t *testing.T) {
	type gatewayAPI int
	const (
		served gatewayAPI = iota
		notServed
		notAnswered
	)
	foreign := func(ing *networkingv1.Ingress) {
		ing.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "d", Controller: ptr.To(true)}}
	}
	for _, tc := range []struct {
		name       string
		ann        map[string]string
		disabled   bool
		deleting   bool
		gatewayAPI gatewayAPI
		ingress    func(*networkingv1.Ingress) // the Ingress cached, nil for none
		route      func(*gatewayv1.HTTPRoute)  // the HTTPRoute cached, nil for none
		want       []string                    // writes
		events     []string                    // Event reasons
	}{
		{name: "a new Service gets its Ingress",
			want: []string{"create ingresses"}, events: []string{ReasonIngressCreated}},
		{name: "a converged Ingress costs no write", ingress: func(*networkingv1.Ingress) {}},
		{name: "no ingress/http: its Ingress goes", disabled: true, ingress: func(*networkingv1.Ingress) {},
			want: []string{"delete ingresses"}, events: []string{ReasonIngressDeleted}},
		{name: "no ingress/http and nothing made: nothing", disabled: true},
		{name: "no ingress/http and someone else's Ingress of the name: left alone", disabled: true, ingress: foreign},
		{name: "an Ingress of a deleted Service of the name: replaced", ingress: func(ing *networkingv1.Ingress) {
			ing.OwnerReferences[0].UID = "a-deleted-service"
		}, want: []string{"delete ingresses", "create ingresses"}, events: []string{ReasonIngressDeleted, ReasonIngressCreated}},
		{name: "a bad annotation: nothing written, one Warning",
			ann: map[string]string{AnnotationPath: "api"}, events: []string{ReasonInvalidPath}},
		{name: "someone else's Ingress in the way: left alone, one Warning", ingress: foreign,
			events: []string{ReasonIngressExists}},
		{name: "a Service being deleted: its objects are the garbage collector's", deleting: true},
		{name: "on a Gateway: an HTTPRoute, the Ingress kept until it is accepted",
			ann: map[string]string{AnnotationGateway: "gw"}, ingress: func(*networkingv1.Ingress) {},
			want: []string{"create httproutes"}, events: []string{ReasonHTTPRouteCreated}},
		{name: "on a Gateway, someone else's HTTPRoute in the way: left alone, one Warning",
			ann: map[string]string{AnnotationGateway: "gw"}, route: func(r *gatewayv1.HTTPRoute) { r.OwnerReferences = nil },
			events: []string{ReasonHTTPRouteExists}},
		{name: "on a Gateway, with Ingress-only annotations: the route, and a Warning that they are ignored",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationClass: "Bad_Class", AnnotationTLSSecret: "cert"},
			want: []string{"create httproutes"}, events: []string{ReasonIgnoredForRoute, ReasonHTTPRouteCreated}},
		{name: "on a Gateway, with keys the translation table carries: the route, and a Normal naming them",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/rewrite-target": "/"}`},
			want: []string{"create httproutes"}, events: []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated}},
		{name: "on a Gateway, with keys only an Ingress controller reads that the table does not: the route, and a Warning naming them",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"cert-manager.io/cluster-issuer": "letsencrypt"}`},
			want: []string{"create httproutes"}, events: []string{ReasonIgnoredForRoute, ReasonHTTPRouteCreated}},
		{name: "on a Gateway, with keys an HTTPRoute cannot carry: an Ingress, and a Warning",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/limit-rps": "5"}`},
			want: []string{"create ingresses"}, events: []string{ReasonNotCarried, ReasonIngressCreated}},
		{name: "on a Gateway, with access control and keys an HTTPRoute cannot carry: an Ingress, and one Warning",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/limit-rps": "5",
				"nginx.ingress.kubernetes.io/auth-url": "https://auth.example.com"}`},
			want: []string{"create ingresses"}, events: []string{ReasonAccessControlOnIngress, ReasonIngressCreated}},
		{name: "on a Gateway, with a key of the table set on the Ingress itself: no route, the Ingress stays, and a Warning",
			ann: map[string]string{AnnotationGateway: "gw"}, ingress: func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{"nginx.ingress.kubernetes.io/proxy-body-size": "8m"}
			}, events: []string{ReasonNotCarried}},
		{name: "on a Gateway, with access control only an Ingress enforces: an Ingress, and a Warning",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/whitelist-source-range": "192.0.2.0/24"}`},
			want: []string{"create ingresses"}, events: []string{ReasonAccessControlOnIngress, ReasonIngressCreated}},
		{name: "on a Gateway, with F5 NGINX basic auth in ingress/annotations: an Ingress, and a Warning",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"nginx.org/basic-auth-secret": "users"}`},
			want: []string{"create ingresses"}, events: []string{ReasonAccessControlOnIngress, ReasonIngressCreated}},
		{name: "on a Gateway, with access control set on the Ingress itself: no route, the Ingress stays, and a Warning",
			ann: map[string]string{AnnotationGateway: "gw"}, ingress: func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{"nginx.ingress.kubernetes.io/auth-url": "https://auth.example.com/check"}
			}, events: []string{ReasonAccessControlOnIngress}},
		{name: "on a Gateway, with access control set on the Ingress itself and acknowledged: the route",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationGatewayAcknowledged: "nginx.com/jwt-key"},
			ingress: func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{"nginx.com/jwt-key": "jwk"}
			}, want: []string{"create httproutes"}, events: []string{ReasonHTTPRouteCreated}},
		{name: "on a Gateway, the Ingress moved off with its own access control being deleted: the route",
			ann: map[string]string{AnnotationGateway: "gw"}, ingress: func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{"appprotect.f5.com/app-protect-enable": "True"}
				markDeleting(ing)
			}, want: []string{"create httproutes"}, events: []string{ReasonHTTPRouteCreated}},
		{name: "on a Gateway, with access control acknowledged: the route without it, and a Normal saying it is left off",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/whitelist-source-range": "192.0.2.0/24"}`,
				AnnotationGatewayAcknowledged: "nginx.ingress.kubernetes.io/whitelist-source-range"},
			ingress: func(*networkingv1.Ingress) {},
			want:    []string{"create httproutes"}, events: []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated}},
		{name: "on a Gateway, with an access key of a family the table does not read acknowledged: the route with it, and a Warning that it is ignored",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"haproxy.org/allow-list": "192.0.2.0/24"}`,
				AnnotationGatewayAcknowledged: "haproxy.org/allow-list"},
			ingress: func(*networkingv1.Ingress) {},
			want:    []string{"create httproutes"}, events: []string{ReasonIgnoredForRoute, ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated}},
		{name: "on an Ingress, a route-only problem does not matter",
			ann:  map[string]string{AnnotationPathType: "ImplementationSpecific", AnnotationGatewayListener: "Bad_Listener"},
			want: []string{"create ingresses"}, events: []string{ReasonIngressCreated}},
		{name: "ingress/annotations with the controller's own ingress/dns-withdrawn: nothing written, one Warning",
			ann:     map[string]string{AnnotationAnnotations: `{"ingress/dns-withdrawn": "2030-01-01T00:00:00Z"}`},
			ingress: func(*networkingv1.Ingress) {}, events: []string{ReasonInvalidAnnotations}},
		{name: "ingress/annotations with external-dns's controller annotation set to the controller's withdrawal value: nothing written, one Warning",
			ann:     map[string]string{AnnotationAnnotations: `{"external-dns.kubernetes.io/controller": "ingress-manager-withdrawn"}`},
			ingress: func(*networkingv1.Ingress) {}, events: []string{ReasonInvalidAnnotations}},
		{name: "a bad ingress/gateway: nothing written, one Warning",
			ann: map[string]string{AnnotationGateway: "Bad_Gateway"}, events: []string{ReasonInvalidGateway}},
		{name: "on a Gateway while the Gateway API is not served: an Ingress, and a Warning",
			ann: map[string]string{AnnotationGateway: "gw"}, gatewayAPI: notServed,
			want: []string{"create ingresses"}, events: []string{ReasonGatewayAPINotInstalled, ReasonIngressCreated}},
		{name: "a bad ingress/gateway while the Gateway API is not served: an Ingress, and a Warning",
			ann: map[string]string{AnnotationGateway: "Bad_Gateway"}, gatewayAPI: notServed,
			want: []string{"create ingresses"}, events: []string{ReasonGatewayAPINotInstalled, ReasonIngressCreated}},
		{name: "on a Gateway before the Gateway API's first answer: held back",
			ann: map[string]string{AnnotationGateway: "gw"}, gatewayAPI: notAnswered},
		{name: "on an Ingress before the Gateway API's first answer: not held back", gatewayAPI: notAnswered,
			want: []string{"create ingresses"}, events: []string{ReasonIngressCreated}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t)
			switch tc.gatewayAPI {
			case notServed:
				f.c.gateway.routes.Store(nil)
			case notAnswered:
				f.c.gateway.routes.Store(nil)
				f.c.gateway.known.Store(false)
			}
			svc := service(tc.ann, port("http", 80))
			svc.ResourceVersion = "1"
			if tc.ingress != nil {
				f.addIngress(service(nil, port("http", 80)), tc.ingress)
			}
			if tc.route != nil {
				f.addRoute(service(map[string]string{AnnotationHTTP: "true"}, port("http", 80)), tc.route)
			}
			if tc.disabled {
				delete(svc.Annotations, AnnotationHTTP)
			}
			if tc.deleting {
				svc.DeletionTimestamp = &metav1.Time{}
			}
			f.syncExpecting(svc, tc.want)
			if got := f.reasons(); !slices.Equal(got, tc.events) {
				t.Errorf("Events = %q, want %q", got, tc.events)
			}
		})
	}
}

// TestSyncEventsOnePath: every Event of a sync leaves by the de-duplicating
// path, writes included: a resync repeats no Warning, each write is told,
// and a stale object's deletion is told on the Service that replaced it.
func TestSyncEventsOnePath(t *testing.T) {
	f := newSyncFixture(t)
	svc := service(map[string]string{AnnotationPath: "api"}, port("http", 80))
	svc.ResourceVersion = "1"
	f.addService(svc, true)
	for range 3 {
		if err := f.sync(svc); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.reasons(); !slices.Equal(got, []string{ReasonInvalidPath}) {
		t.Errorf("Events over 3 syncs = %q, want one %s", got, ReasonInvalidPath)
	}

	// A write is told each time it happens, and not remembered: an Ingress
	// deleted behind the cache's back and made again is told twice.
	f = newSyncFixture(t)
	svc = service(nil, port("http", 80))
	svc.ResourceVersion = "1"
	f.addService(svc, true)
	for range 2 {
		if err := f.sync(svc); err != nil {
			t.Fatal(err)
		}
		if err := f.kube.NetworkingV1().Ingresses(svc.Namespace).Delete(context.Background(), svc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := f.reasons(), []string{ReasonIngressCreated, ReasonIngressCreated}; !slices.Equal(got, want) {
		t.Errorf("Events = %q, want %q", got, want)
	}
	if n := len(f.c.notes.sent); n != 0 {
		t.Errorf("%d Services with Events remembered, want none: writes are not de-duplicated", n)
	}

	// The Service deleted and recreated under its name, while the cache
	// still holds the old one's Ingress.
	f = newSyncFixture(t)
	old := service(nil, port("http", 80))
	f.addIngress(old, nil)
	recreated := service(nil, port("http", 80))
	recreated.UID, recreated.ResourceVersion = "another-uid", "2"
	f.syncExpecting(recreated, []string{"delete ingresses", "create ingresses"})
	if got, want := f.reasons(), []string{ReasonIngressDeleted, ReasonIngressCreated}; !slices.Equal(got, want) {
		t.Errorf("Events = %q, want %q", got, want)
	}
}

// TestSyncStoppedEarlyForgetsNothing: a sync that stops before looking at
// what the Service asks for (here: the Gateway API's answer awaited) does
// not forget the Warnings said before, so they are not repeated.
func TestSyncStoppedEarlyForgetsNothing(t *testing.T) {
	f := newSyncFixture(t)
	svc := service(map[string]string{AnnotationGateway: "gw", AnnotationPath: "api"}, port("http", 80))
	svc.ResourceVersion = "1"
	f.addService(svc, true)
	sync := func() {
		t.Helper()
		if err := f.sync(svc); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	f.c.gateway.known.Store(false)
	sync()
	f.c.gateway.known.Store(true)
	sync()
	if got := f.reasons(); !slices.Equal(got, []string{ReasonInvalidPath}) {
		t.Errorf("Events = %q, want one %s", got, ReasonInvalidPath)
	}
}

// TestSyncBadValueWarnsThenConverges: a bad value of each annotation is
// told once, as a Warning of its reason, writes nothing and is not retried
// (the sync returns no error); fixing it converges.
func TestSyncBadValueWarnsThenConverges(t *testing.T) {
	for _, tc := range []struct {
		key, bad, fix, reason string
	}{
		{AnnotationHost, "Not_A_Host!", "ok.example.com", ReasonInvalidHost},
		{AnnotationPath, "no-slash", "/ok", ReasonInvalidPath},
		{AnnotationPathType, "Regex", "Prefix", ReasonInvalidPathType},
		{AnnotationPort, "9999", "80", ReasonUnknownPort},
		{AnnotationAnnotations, `{"a":`, `{"a": "b"}`, ReasonInvalidAnnotations},
		{AnnotationClass, "Bad Class", "nginx", ReasonInvalidClass},
		{AnnotationTLSSecret, "-bad-", "good-secret", ReasonInvalidTLSSecret},
	} {
		t.Run(tc.key, func(t *testing.T) {
			f := newSyncFixture(t)
			svc := service(map[string]string{tc.key: tc.bad}, port("http", 80))
			svc.ResourceVersion = "1"
			f.syncExpecting(svc, nil)
			if got := f.reasons(); !slices.Equal(got, []string{tc.reason}) {
				t.Errorf("Events = %q, want one %s", got, tc.reason)
			}
			fixed := svc.DeepCopy()
			fixed.Annotations[tc.key], fixed.ResourceVersion = tc.fix, "2"
			if err := f.c.services.Update(fixed); err != nil {
				t.Fatal(err)
			}
			f.clearActions()
			if err := f.sync(fixed); err != nil {
				t.Fatal(err)
			}
			if got, want := f.writes(), []string{"create ingresses"}; !slices.Equal(got, want) {
				t.Errorf("writes once fixed = %q, want %q", got, want)
			}
		})
	}
}

// TestSyncServiceCacheBehind: a Service cache one incarnation behind (the
// cached Service has another UID than the live one, or the live one is
// gone) never deletes the object the live Service controls, nor makes one
// owned by the dead UID: the sync writes nothing and is retried.
func TestSyncServiceCacheBehind(t *testing.T) {
	for _, tc := range []struct {
		name      string
		onGateway bool
		live      bool // whether the API server still has a Service of the name
	}{
		{name: "the replacement's Ingress is kept", live: true},
		{name: "the replacement's HTTPRoute is kept", onGateway: true, live: true},
		{name: "an object of a Service whose deletion the cache has not seen yet is kept", live: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t)
			var ann map[string]string
			if tc.onGateway {
				ann = map[string]string{AnnotationGateway: "gw"}
			}
			cached := service(ann, port("http", 80))
			cached.ResourceVersion = "1"
			replacement := cached.DeepCopy()
			replacement.UID, replacement.ResourceVersion = "the-replacement", "2"
			if tc.onGateway {
				f.addRoute(replacement, nil)
			} else {
				f.addIngress(replacement, nil)
			}
			if tc.live {
				f.addService(replacement, false)
			}
			if err := f.c.services.Add(cached); err != nil {
				t.Fatal(err)
			}
			f.clearActions()
			if err := f.sync(cached); err == nil {
				t.Error("sync succeeded, want an error that retries it once the cache has caught up")
			}
			if got := f.writes(); len(got) != 0 {
				t.Errorf("writes = %q, want none", got)
			}
			if got := f.reasons(); len(got) != 0 {
				t.Errorf("Events = %q, want none", got)
			}
		})
	}
}

// TestSyncHTTPRoutesGone: once the HTTPRoute CRD is gone, before discovery
// says so, the API server answers a route's create or read "no such
// resource": the Service gets its Ingress in that very sync (with the
// Warning that the Gateway API is not served), instead of failing every
// sync until the next discovery check. A route that is merely absent is
// not that.
func TestSyncHTTPRoutesGone(t *testing.T) {
	routes := schema.GroupResource{Group: gatewayv1.GroupName, Resource: "httproutes"}
	for _, tc := range []struct {
		name string
		err  error // the create's answer
		gone bool
	}{
		{name: "a 404 Status with no details (the group still served, the resource not)", gone: true,
			err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
				Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}}},
		{name: "a 404 without a Status body (the group gone)", gone: true,
			err: apierrors.NewGenericServerResponse(http.StatusNotFound, "post", routes, "", "404 page not found", 0, true)},
		{name: "no kind match (a RESTMapper that no longer knows HTTPRoutes)", gone: true,
			err: &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gatewayv1.GroupName, Kind: "HTTPRoute"}}},
		{name: "another error (the API server unavailable): retried, not moved",
			err: apierrors.NewServiceUnavailable("etcd is down")},
		{name: "a NotFound naming the route (one object absent, not the resource): retried, not moved",
			err: apierrors.NewNotFound(routes, "my-nginx")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t)
			f.gateway.PrependReactor("create", "httproutes", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
			svc.ResourceVersion = "1"
			f.addService(svc, true)
			f.clearActions()
			err := f.sync(svc)
			want, events := []string{"create httproutes"}, []string(nil)
			if tc.gone {
				if err != nil {
					t.Errorf("sync: %v, want the Service on its Ingress", err)
				}
				want = []string{"create ingresses", "create httproutes"} // writes lists the Ingress API server's first
				events = []string{ReasonGatewayAPINotInstalled, ReasonIngressCreated}
			} else if err == nil {
				t.Error("sync succeeded, want the create's error (retried)")
			}
			if asked := len(f.c.gateway.askNow) == 1; asked != tc.gone {
				t.Errorf("discovery asked again at once: %v, want %v", asked, tc.gone)
			}
			if got := f.writes(); !slices.Equal(got, want) {
				t.Errorf("writes = %q, want %q", got, want)
			}
			if got := f.reasons(); !slices.Equal(got, events) {
				t.Errorf("Events = %q, want %q", got, events)
			}
		})
	}
}
