package ingressmanager

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// seedIntent is the Intent of the seed Service (port http 80, no other
// annotation) on Ingress.
func seedIntent(svc *corev1.Service) *Intent {
	return &Intent{
		Target: TargetIngress, Name: "my-nginx", Namespace: "default",
		Owner: *metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service")),
		Host:  "example.com", Path: "/", PathType: networkingv1.PathTypePrefix, Port: 80,
	}
}

// problem is a Problem's reason and the one rendering it concerns, what
// the tests of Parse compare.
type problem struct {
	reason string
	only   Target
}

// TestParse: the annotations -> intent seam. Each setting is read into its
// field once; a bad one leaves the field empty and adds a Problem saying
// which rendering it concerns.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		ann      map[string]string
		disabled bool
		ports    []corev1.ServicePort
		want     func(*Intent)
		problems []problem
		carried  []string // Carried.Keys; Carried is not compared
	}{
		{name: "the seed Service: an Ingress with every default", want: func(*Intent) {}},
		{name: "no ingress/http: nothing, and nothing parsed", disabled: true,
			ann:  map[string]string{AnnotationPath: "bad"},
			want: func(in *Intent) { *in = Intent{} }},
		{name: "ingress/http false, in any case: nothing",
			ann: map[string]string{AnnotationHTTP: " False "}, want: func(in *Intent) { *in = Intent{} }},
		{name: "every Ingress setting",
			ann: map[string]string{AnnotationHost: "app.example.com", AnnotationPath: "/api", AnnotationPathType: "Exact",
				AnnotationPort: "web", AnnotationClass: "nginx", AnnotationTLSSecret: "cert", AnnotationAnnotations: `{"a": "b"}`},
			ports: []corev1.ServicePort{port("http", 80), port("web", 8080)},
			want: func(in *Intent) {
				in.Host, in.Path, in.PathType, in.Port, in.Class, in.TLSSecret = "app.example.com", "/api", networkingv1.PathTypeExact, 8080, "nginx", "cert"
				in.Annotations = map[string]string{"a": "b"}
				in.IngressOnly = []string{AnnotationClass, AnnotationTLSSecret}
			}},
		{name: "ingress/gateway: an HTTPRoute, in the Service's namespace by default",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationGatewayListener: "https"},
			want: func(in *Intent) {
				in.Target, in.Gateway, in.Listener = TargetHTTPRoute, &GatewayRef{Namespace: "default", Name: "gw"}, "https"
			}},
		{name: "--ingress-gateway: an HTTPRoute to the default Gateway", cfg: Config{Gateway: "infra/shared"},
			want: func(in *Intent) {
				in.Target, in.Gateway = TargetHTTPRoute, &GatewayRef{Namespace: "infra", Name: "shared"}
			}},
		{name: "ingress/gateway empty keeps an Ingress despite --ingress-gateway", cfg: Config{Gateway: "infra/shared"},
			ann: map[string]string{AnnotationGateway: " "}, want: func(*Intent) {}},
		{name: "a bad ingress/gateway still asks for an HTTPRoute, with a route-only problem",
			ann:      map[string]string{AnnotationGateway: "Bad_Gateway"},
			want:     func(in *Intent) { in.Target = TargetHTTPRoute },
			problems: []problem{{ReasonInvalidGateway, TargetHTTPRoute}}},
		{name: "problems of one rendering say so, in a fixed order",
			ann: map[string]string{AnnotationGatewayListener: "Bad_Listener", AnnotationPathType: "ImplementationSpecific",
				AnnotationClass: "Bad_Class", AnnotationPort: "9999"},
			want: func(in *Intent) {
				in.PathType, in.Port = networkingv1.PathTypeImplementationSpecific, 0
				in.IngressOnly = []string{AnnotationClass}
			},
			problems: []problem{{ReasonInvalidGatewayListener, TargetHTTPRoute}, {ReasonUnsupportedPathType, TargetHTTPRoute},
				{ReasonUnknownPort, TargetNone}, {ReasonInvalidClass, TargetIngress}}},
		{name: "a path an HTTPRoute refuses is a route-only problem",
			ann:  map[string]string{AnnotationPath: "/a#b"},
			want: func(in *Intent) { in.Path = "/a#b" }, problems: []problem{{ReasonInvalidPath, TargetHTTPRoute}}},
		{name: "kubernetes.io/ingress.class against the class is an Ingress-only problem", cfg: Config{IngressClass: "nginx"},
			ann: map[string]string{AnnotationAnnotations: `{"kubernetes.io/ingress.class": "traefik"}`},
			want: func(in *Intent) {
				in.Class, in.Annotations = "nginx", map[string]string{"kubernetes.io/ingress.class": "traefik"}
				in.IngressOnlyAnnotations = []string{"kubernetes.io/ingress.class"}
			},
			problems: []problem{{ReasonInvalidAnnotations, TargetIngress}}},
		{name: "on an Ingress, ingress/annotations is not translated; keys the table does not read are Ingress-only",
			ann: map[string]string{AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/auth-type": "basic", "haproxy.org/allow-list": "192.0.2.0/24"}`},
			want: func(in *Intent) {
				in.Annotations = map[string]string{"nginx.ingress.kubernetes.io/auth-type": "basic", "haproxy.org/allow-list": "192.0.2.0/24"}
				in.IngressOnlyAnnotations = []string{"haproxy.org/allow-list"}
			}},
		{name: "on a Gateway: keys carried, keys that restrict access and keys the table cannot carry block",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/rewrite-target": "/",
				"nginx.ingress.kubernetes.io/limit-rps": "5", "traefik.ingress.kubernetes.io/router.middlewares": "default-auth@kubernetescrd",
				"haproxy.org/allow-list": "192.0.2.0/24", "external-dns.alpha.kubernetes.io/ttl": "60", "a": "b"}`},
			want: func(in *Intent) {
				in.Target, in.Gateway = TargetHTTPRoute, &GatewayRef{Namespace: "default", Name: "gw"}
				in.Annotations = map[string]string{"nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/rewrite-target": "/",
					"nginx.ingress.kubernetes.io/limit-rps": "5", "traefik.ingress.kubernetes.io/router.middlewares": "default-auth@kubernetescrd",
					"haproxy.org/allow-list": "192.0.2.0/24", "external-dns.alpha.kubernetes.io/ttl": "60", "a": "b"}
				in.IngressOnlyAnnotations = []string{"haproxy.org/allow-list"}
				in.Blocking = []BlockedKey{accessKey("haproxy.org/allow-list"), accessKey("nginx.ingress.kubernetes.io/auth-type"),
					{Key: "nginx.ingress.kubernetes.io/limit-rps", Why: "limits the rate of requests or connections, which only the Gateway implementation's policies do"},
					accessKey("traefik.ingress.kubernetes.io/router.middlewares")}
			},
			carried: []string{"nginx.ingress.kubernetes.io/rewrite-target"}},
		{name: "ingress/gateway-acknowledged lists the keys the route may do without",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/auth-secret": "s"}`,
				AnnotationGatewayAcknowledged: " nginx.ingress.kubernetes.io/auth-type ,nginx.ingress.kubernetes.io/auth-realm"},
			want: func(in *Intent) {
				in.Target, in.Gateway = TargetHTTPRoute, &GatewayRef{Namespace: "default", Name: "gw"}
				in.Annotations = map[string]string{"nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/auth-secret": "s"}
				in.Blocking = []BlockedKey{accessKey("nginx.ingress.kubernetes.io/auth-secret")}
				in.Acknowledged = []string{"nginx.ingress.kubernetes.io/auth-type"}
				in.acked = []string{"nginx.ingress.kubernetes.io/auth-type", "nginx.ingress.kubernetes.io/auth-realm"}
			}},
		{name: "ingress/gateway-acknowledged * acknowledges every key",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"haproxy.org/allow-list": "192.0.2.0/24"}`, AnnotationGatewayAcknowledged: "*"},
			want: func(in *Intent) {
				in.Target, in.Gateway = TargetHTTPRoute, &GatewayRef{Namespace: "default", Name: "gw"}
				in.Annotations = map[string]string{"haproxy.org/allow-list": "192.0.2.0/24"}
				in.IngressOnlyAnnotations = []string{"haproxy.org/allow-list"}
				in.Acknowledged = []string{"haproxy.org/allow-list"}
				in.ackAll = true
			}},
		{name: "no ports: a problem of the Service itself", ports: []corev1.ServicePort{},
			want: func(in *Intent) { in.Port = 0 }, problems: []problem{{ReasonNoPorts, TargetNone}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports := tc.ports
			if ports == nil {
				ports = []corev1.ServicePort{port("http", 80)}
			}
			svc := service(tc.ann, ports...)
			if tc.disabled {
				delete(svc.Annotations, AnnotationHTTP)
			}
			got := mustBuilder(t, tc.cfg).Parse(svc)
			var gotProblems []problem
			for _, p := range got.Problems {
				gotProblems = append(gotProblems, problem{p.Reason, p.Only})
				if p.Message == "" {
					t.Errorf("problem %s has no message", p.Reason)
				}
			}
			if !reflect.DeepEqual(gotProblems, tc.problems) {
				t.Errorf("problems = %v, want %v", gotProblems, tc.problems)
			}
			got.Problems = nil
			if !reflect.DeepEqual(got.Carried.Keys, tc.carried) {
				t.Errorf("carried %v, want %v", got.Carried.Keys, tc.carried)
			}
			got.Carried = Carried{}
			want := seedIntent(svc)
			tc.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("intent:\n%s\nwant:\n%s", dump.Pretty(got), dump.Pretty(want))
			}
		})
	}
}

// TestRender: the intent -> object seam. Each rendering is a pure function
// of the intent and refuses only what it concerns.
func TestRender(t *testing.T) {
	svc := service(nil, port("http", 80))
	onRoute := func() *Intent {
		in := seedIntent(svc)
		in.Target, in.Gateway = TargetHTTPRoute, &GatewayRef{Namespace: "default", Name: "gw"}
		return in
	}
	t.Run("the seed intent renders the seed Ingress and no route", func(t *testing.T) {
		in := seedIntent(svc)
		ing, err := in.Ingress()
		if err != nil || !reflect.DeepEqual(ing, seedConstructIngress(svc)) {
			t.Errorf("Ingress() = %s, %v; want the seed's", dump.Pretty(ing), err)
		}
		if route, err := in.HTTPRoute(); route != nil || err != nil {
			t.Errorf("HTTPRoute() = %v, %v; want nothing", route, err)
		}
	})
	t.Run("TargetNone renders nothing", func(t *testing.T) {
		in := &Intent{}
		if ing, err := in.Ingress(); ing != nil || err != nil {
			t.Errorf("Ingress() = %v, %v", ing, err)
		}
		if route, err := in.HTTPRoute(); route != nil || err != nil {
			t.Errorf("HTTPRoute() = %v, %v", route, err)
		}
	})
	t.Run("an HTTPRoute intent renders the seed route, and its Ingress for the fallback", func(t *testing.T) {
		in := onRoute()
		route, err := in.HTTPRoute()
		if err != nil || !reflect.DeepEqual(route, seedRoute(svc)) {
			t.Errorf("HTTPRoute() = %s, %v; want the seed route", dump.Pretty(route), err)
		}
		ing, err := in.Ingress()
		if err != nil || !reflect.DeepEqual(ing, seedConstructIngress(svc)) {
			t.Errorf("Ingress() = %s, %v; want the seed's", dump.Pretty(ing), err)
		}
	})
	t.Run("a Gateway in another namespace, a listener, Exact, no host", func(t *testing.T) {
		in := onRoute()
		in.Gateway, in.Listener, in.PathType, in.Path, in.Host = &GatewayRef{Namespace: "infra", Name: "gw"}, "https", networkingv1.PathTypeExact, "/x", ""
		route, err := in.HTTPRoute()
		if err != nil {
			t.Fatal(err)
		}
		want := seedRoute(svc)
		want.Spec.ParentRefs[0].Namespace = ptr.To(gatewayv1.Namespace("infra"))
		want.Spec.ParentRefs[0].SectionName = ptr.To(gatewayv1.SectionName("https"))
		want.Spec.Hostnames = nil
		want.Spec.Rules[0].Matches[0].Path = &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To("/x")}
		if !reflect.DeepEqual(route, want) {
			t.Errorf("route:\n%s\nwant:\n%s", dump.Pretty(route), dump.Pretty(want))
		}
	})
	t.Run("each rendering refuses its own problems and the common ones only", func(t *testing.T) {
		in := onRoute()
		in.Problems = []Problem{
			{Reason: ReasonInvalidGatewayListener, Message: "listener", Only: TargetHTTPRoute},
			{Reason: ReasonInvalidClass, Message: "class", Only: TargetIngress},
		}
		if _, err := in.Ingress(); !isInvalid(err, ReasonInvalidClass, "class") {
			t.Errorf("Ingress() error = %v, want the class problem alone", err)
		}
		if _, err := in.HTTPRoute(); !isInvalid(err, ReasonInvalidGatewayListener, "listener") {
			t.Errorf("HTTPRoute() error = %v, want the listener problem alone", err)
		}
		in.Problems = append(in.Problems, Problem{Reason: ReasonNoPorts, Message: "ports"})
		if _, err := in.Ingress(); !isInvalid(err, ReasonInvalidClass, "2 problems: [1] class; [2] ports") {
			t.Errorf("Ingress() error = %v, want both problems of an Ingress", err)
		}
	})
	t.Run("the rendering does not share the intent's annotations", func(t *testing.T) {
		in := seedIntent(svc)
		in.Annotations = map[string]string{"a": "b"}
		ing, _ := in.Ingress()
		ing.Annotations["a"] = "changed"
		if in.Annotations["a"] != "b" {
			t.Error("changing the rendered Ingress changed the intent")
		}
	})
}

func isInvalid(err error, reason, message string) bool {
	invalid, ok := err.(*InvalidError)
	return ok && invalid.Reason == reason && invalid.Message == message
}
