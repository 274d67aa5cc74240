package ingressmanager

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// withClass gives Gateway gw the class name, whose status lists
// supported (none: it publishes nothing).
func (f *syncFixture) withClass(name string, supported ...features.FeatureName) {
	f.t.Helper()
	obj, _, err := f.gateways.GetByKey("default/gw")
	if err != nil {
		f.t.Fatal(err)
	}
	gw := obj.(*gatewayv1.Gateway).DeepCopy()
	gw.Spec.GatewayClassName = gatewayv1.ObjectName(name)
	if err := f.gateways.Update(gw); err != nil {
		f.t.Fatal(err)
	}
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, s := range supported {
		class.Status.SupportedFeatures = append(class.Status.SupportedFeatures, gatewayv1.SupportedFeature{Name: gatewayv1.FeatureName(s)})
	}
	classes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := classes.Add(class); err != nil {
		f.t.Fatal(err)
	}
	f.c.gateway.classes.Store(&classes)
}

// annotationsJSON is ann as the value of ingress/annotations.
func annotationsJSON(t *testing.T, ann map[string]string) string {
	t.Helper()
	b, err := json.Marshal(ann)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServiceRouteCarries: the Service path. What the table carries of
// ingress/annotations is rendered into the Service's HTTPRoute, never
// copied onto it as annotations, with one Normal naming it; what blocks
// keeps the Service on its Ingress with one Warning, as the access guard
// does; what the Gateway's class does not support blocks.
func TestServiceRouteCarries(t *testing.T) {
	const (
		gatewayClass = iota + 1 // Gateway gw of class "example", listing the features of the case
		silentClass             // Gateway gw of class "example", listing none
	)
	for _, tc := range []struct {
		name     string
		ann      map[string]string // ingress/annotations
		extra    map[string]string // other annotations of the Service
		class    int
		features []features.FeatureName
		ingress  func(*networkingv1.Ingress) // the Ingress cached, nil for none
		route    func(*gatewayv1.HTTPRoute)  // the route created, from the seed route; nil: none
		events   []string
		message  string // in the Event of the first reason
	}{
		{name: "a permanent redirect: the rule redirects, without backends",
			ann: nginxAnn("permanent-redirect", "https://new.example.com/", "permanent-redirect-code", "308"),
			route: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{redirectFilterOf(gatewayv1.HTTPRequestRedirectFilter{
					Scheme: ptr.To("https"), Hostname: ptr.To(gatewayv1.PreciseHostname("new.example.com")), Path: fullPath("/"), StatusCode: ptr.To(308)})}
				r.Spec.Rules[0].BackendRefs = nil
			},
			events:  []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated},
			message: "HTTPRoute my-nginx carries from ingress/annotations: nginx.ingress.kubernetes.io/permanent-redirect (a RequestRedirect (308) to \"https://new.example.com/\")"},
		{name: "app root, CORS, timeouts and a rewrite together; other annotations still copied",
			ann: map[string]string{nginxPrefix + "app-root": "/app", nginxPrefix + "enable-cors": "true", nginxPrefix + "proxy-read-timeout": "30",
				nginxPrefix + "rewrite-target": "/v1", "team.example.com/owner": "shop"},
			route: func(r *gatewayv1.HTTPRoute) {
				r.Annotations = map[string]string{"team.example.com/owner": "shop"}
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{
					rewriteFilterOf(gatewayv1.HTTPURLRewriteFilter{Path: fullPath("/v1")}),
					{Type: gatewayv1.HTTPRouteFilterCORS, CORS: nginxCORSDefaults()},
				}
				r.Spec.Rules[0].Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: ptr.To(gatewayv1.Duration("1m35s")), BackendRequest: ptr.To(gatewayv1.Duration("1m35s"))}
				r.Spec.Rules = append([]gatewayv1.HTTPRouteRule{{
					Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To("/")}}},
					Filters: []gatewayv1.HTTPRouteFilter{redirectFilterOf(gatewayv1.HTTPRequestRedirectFilter{Path: fullPath("/app"), StatusCode: ptr.To(302)})},
				}}, r.Spec.Rules...)
			},
			events:  []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated},
			message: "without knowing they are supported: the class of Gateway default/gw is not known"},
		{name: "a class that lists the features the route uses: rendered, nothing said of them",
			ann: nginxAnn("rewrite-target", "/v1"), class: gatewayClass, features: []features.FeatureName{features.SupportHTTPRoutePathRewrite},
			route: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{rewriteFilterOf(gatewayv1.HTTPURLRewriteFilter{Path: fullPath("/v1")})}
			},
			events: []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated}},
		{name: "a class without CORS: an Ingress, and a Warning naming the class and the feature",
			ann: nginxAnn("enable-cors", "true"), class: gatewayClass, features: []features.FeatureName{features.SupportHTTPRoutePathRewrite},
			events:  []string{ReasonNotCarried, ReasonIngressCreated},
			message: "Gateway default/gw (class example), but ingress/annotations sets keys an HTTPRoute cannot carry: nginx.ingress.kubernetes.io/enable-cors needs HTTPRouteCORS"},
		{name: "a class that lists no features: rendered on trust, and said so",
			ann: nginxAnn("enable-cors", "true"), class: silentClass,
			route: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterCORS, CORS: nginxCORSDefaults()}}
			},
			events:  []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated},
			message: "it uses HTTPRouteCORS, extended features of the Gateway API, without knowing they are supported: Gateway class example publishes no status.supportedFeatures"},
		{name: "ssl-redirect without ingress/tls-secret: nginx redirects nothing, nor does the route",
			ann:    nginxAnn("ssl-redirect", "true"),
			route:  func(r *gatewayv1.HTTPRoute) {},
			events: []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated}, message: "no ingress/tls-secret"},
		{name: "ssl-redirect with ingress/tls-secret: a second route would be needed, so it blocks",
			ann: nginxAnn("ssl-redirect", "true"), extra: map[string]string{AnnotationTLSSecret: "cert"},
			events:  []string{ReasonNotCarried, ReasonIngressCreated},
			message: "redirect on the Gateway side"},
		{name: "force-ssl-redirect blocks",
			ann:    nginxAnn("force-ssl-redirect", "true"),
			events: []string{ReasonNotCarried, ReasonIngressCreated}, message: "second HTTPRoute"},
		{name: "ssl-redirect acknowledged: left off, and said so",
			ann: nginxAnn("force-ssl-redirect", "true"), extra: map[string]string{AnnotationGatewayAcknowledged: nginxPrefix + "force-ssl-redirect"},
			route:  func(r *gatewayv1.HTTPRoute) {},
			events: []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated}, message: "it leaves off nginx.ingress.kubernetes.io/force-ssl-redirect, which ingress/gateway-acknowledged lists"},
		{name: "a canary blocks: no Gateway merges the Service's route with another",
			ann:    nginxAnn("canary", "true", "canary-weight", "10"),
			events: []string{ReasonNotCarried, ReasonIngressCreated}, message: "weight both backends in one route"},
		{name: "a rewrite of a path with regular-expression characters blocks",
			ann: nginxAnn("rewrite-target", "/"), extra: map[string]string{AnnotationPath: "/api(v1)"},
			events: []string{ReasonNotCarried, ReasonIngressCreated}, message: "regular expression"},
		{name: "a key set on the Service and, with another value, on its Ingress: the Service's is carried",
			ann: nginxAnn("rewrite-target", "/v1"),
			ingress: func(ing *networkingv1.Ingress) {
				ing.Annotations[nginxPrefix+"rewrite-target"] = "/hand-set"
			},
			route: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{rewriteFilterOf(gatewayv1.HTTPURLRewriteFilter{Path: fullPath("/v1")})}
			},
			events: []string{ReasonCarriedToHTTPRoute, ReasonHTTPRouteCreated}},
		{name: "a key of the table set on the Ingress alone blocks, saying where",
			ingress: func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{nginxPrefix + "rewrite-target": "/v1"}
			},
			events:  []string{ReasonNotCarried},
			message: "ingress/annotations or Ingress my-nginx itself sets keys an HTTPRoute cannot carry: nginx.ingress.kubernetes.io/rewrite-target is set on Ingress my-nginx itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t)
			switch tc.class {
			case gatewayClass:
				f.withClass("example", tc.features...)
			case silentClass:
				f.withClass("example")
			}
			ann := map[string]string{AnnotationGateway: "gw"}
			if tc.ann != nil {
				ann[AnnotationAnnotations] = annotationsJSON(t, tc.ann)
			}
			for k, v := range tc.extra {
				ann[k] = v
			}
			svc := service(ann, port("http", 80))
			if tc.ingress != nil {
				f.addIngress(svc, tc.ingress)
			}
			f.addService(svc, true)
			f.clearActions()
			if err := f.sync(svc); err != nil {
				t.Fatal(err)
			}
			events := f.events()
			var reasons []string
			for _, e := range events {
				reasons = append(reasons, strings.Fields(e)[1])
			}
			if !slices.Equal(reasons, tc.events) {
				t.Errorf("Events %q, want reasons %v", events, tc.events)
			}
			if tc.message != "" && (len(events) == 0 || !strings.Contains(events[0], tc.message)) {
				t.Errorf("Events %q, want the first to say %q", events, tc.message)
			}
			routes, err := f.gateway.GatewayV1().HTTPRoutes("default").List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.route == nil {
				if len(routes.Items) != 0 {
					t.Fatalf("a route was made: %s", dump.Pretty(routes.Items))
				}
				return
			}
			if len(routes.Items) != 1 {
				t.Fatalf("routes: %d, want 1", len(routes.Items))
			}
			want := seedRoute(svc)
			tc.route(want)
			got := &routes.Items[0]
			got.TypeMeta, got.ManagedFields = metav1.TypeMeta{}, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("route:\n%s\nwant:\n%s", dump.Pretty(got), dump.Pretty(want))
			}
		})
	}
}

// TestClassOf: what a Gateway's class supports is its status's list, once
// per version of the class; not known when the Gateway, the class or its
// list is not.
func TestClassOf(t *testing.T) {
	f := newSyncFixture(t)
	g := f.c.gateway
	if class, s := g.classOf(GatewayRef{Namespace: "default", Name: "unknown"}); class != "" || s != nil {
		t.Errorf("unknown Gateway: %q, %v", class, s)
	}
	if class, s := g.classOf(GatewayRef{Namespace: "default", Name: "gw"}); class != "" || s != nil {
		t.Errorf("Gateway without a class: %q, %v", class, s)
	}
	f.withClass("example")
	if class, s := g.classOf(GatewayRef{Namespace: "default", Name: "gw"}); class != "example" || s != nil {
		t.Errorf("a class that lists nothing: %q, %v", class, s)
	}
	f.withClass("example", features.SupportHTTPRouteCORS)
	class, s := g.classOf(GatewayRef{Namespace: "default", Name: "gw"})
	if class != "example" || s.Len() != 1 || !s.Has(features.SupportHTTPRouteCORS) {
		t.Errorf("a class that lists CORS: %q, %v", class, s)
	}
	if _, again := g.classOf(GatewayRef{Namespace: "default", Name: "gw"}); reflect.ValueOf(again).Pointer() != reflect.ValueOf(s).Pointer() {
		t.Error("the same version of the class built its set again")
	}
	classes := *g.classes.Load()
	obj, _, _ := classes.GetByKey("example")
	gc := obj.(*gatewayv1.GatewayClass).DeepCopy()
	gc.ResourceVersion = "2"
	gc.Status.SupportedFeatures = append(gc.Status.SupportedFeatures, gatewayv1.SupportedFeature{Name: "HTTPRoutePathRewrite"})
	if err := classes.Update(gc); err != nil {
		t.Fatal(err)
	}
	if _, s := g.classOf(GatewayRef{Namespace: "default", Name: "gw"}); s.Len() != 2 {
		t.Errorf("a new version of the class: %v", s)
	}
}
