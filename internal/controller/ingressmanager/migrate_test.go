package ingressmanager

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// userIngress is a user's Ingress web of namespace default (no controller)
// that opts in to Gateway gw, with one rule: host shop.example.com, path /
// (Prefix) to Service web port 80. Each change is applied in turn.
func userIngress(changes ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "ingress-uid", ResourceVersion: "1",
			Annotations: map[string]string{AnnotationGateway: "gw"}},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
				ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""),
			}}}}}},
	}
	for _, c := range changes {
		c(ing)
	}
	return ing
}

// ingressPath is a path to Service name at port (by name when portName
// is set).
func ingressPath(path string, pt networkingv1.PathType, name string, port int32, portName string) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: path, PathType: ptr.To(pt), Backend: networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port, Name: portName}}}}
}

func withAnnotations(kv ...string) func(*networkingv1.Ingress) {
	return func(ing *networkingv1.Ingress) {
		for i := 0; i+1 < len(kv); i += 2 {
			ing.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func withPaths(paths ...networkingv1.HTTPIngressPath) func(*networkingv1.Ingress) {
	return func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths = paths }
}

func withRule(host string, paths ...networkingv1.HTTPIngressPath) func(*networkingv1.Ingress) {
	return func(ing *networkingv1.Ingress) {
		ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}})
	}
}

func withTLS(hosts ...string) func(*networkingv1.Ingress) {
	return func(ing *networkingv1.Ingress) {
		ing.Spec.TLS = append(ing.Spec.TLS, networkingv1.IngressTLS{Hosts: hosts, SecretName: "shop-tls"})
	}
}

// gatewayWith is Gateway gw of namespace default with listeners.
func gatewayWith(listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: listeners}}
}

func listener(name string, protocol gatewayv1.ProtocolType, hostname string) gatewayv1.Listener {
	l := gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: protocol, Port: 443}
	if hostname != "" {
		l.Hostname = ptr.To(gatewayv1.Hostname(hostname))
	}
	return l
}

// routeRule is a route rule as the rendering makes it.
func routeRule(match gatewayv1.PathMatchType, path, backend string, port int32) gatewayv1.HTTPRouteRule {
	return serviceRule(match, path, backend, port)
}

// TestRenderMigration: the route of a user's Ingress, and what keeps the
// Ingress from moving to it, for every shape the rendering knows.
// nginxSnippet is a key the translation table cannot carry.
const nginxSnippet = "nginx.ingress.kubernetes.io/configuration-snippet"

func TestRenderMigration(t *testing.T) {
	webService := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
	https := gatewayWith(listener("http", gatewayv1.HTTPProtocolType, ""), listener("https", gatewayv1.HTTPSProtocolType, "*.example.com"))
	httpsOnly := gatewayWith(listener("https", gatewayv1.HTTPSProtocolType, "*.example.com"))
	for _, tc := range []struct {
		name       string
		ing        *networkingv1.Ingress
		gateway    *gatewayv1.Gateway // nil: none
		invisible  bool               // the Gateway is not watched
		canaries   []*networkingv1.Ingress
		translate  func(map[string]string, sets.Set[features.FeatureName]) Carried
		hostnames  []gatewayv1.Hostname
		rules      []gatewayv1.HTTPRouteRule // nil: not checked
		parent     *gatewayv1.ParentReference
		blocking   []string // keys
		acked      []string
		unsupport  []string // a word of each
		problems   []string // reasons
		notes      int
		deleteWhen bool
	}{
		{name: "one host, one Prefix path: one hostname, one rule, every default set",
			ing: userIngress(), hostnames: []gatewayv1.Hostname{"shop.example.com"},
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 80)}},
		{name: "Exact and Prefix paths: a rule each, in order",
			ing:   userIngress(withPaths(ingressPath("/api", networkingv1.PathTypeExact, "api", 8080, ""), ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""))),
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchExact, "/api", "api", 8080), routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 80)}},
		{name: "two hosts with the same paths: both hostnames, the paths once",
			ing:       userIngress(withRule("www.example.com", ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""))),
			hostnames: []gatewayv1.Hostname{"shop.example.com", "www.example.com"},
			rules:     []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 80)}},
		{name: "one host in two rules: its paths merged",
			ing:   userIngress(withRule("shop.example.com", ingressPath("/cart", networkingv1.PathTypePrefix, "cart", 80, ""))),
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 80), routeRule(gatewayv1.PathMatchPathPrefix, "/cart", "cart", 80)}},
		{name: "two hosts with different paths: unsupported, one route cannot say it",
			ing:       userIngress(withRule("api.example.com", ingressPath("/v1", networkingv1.PathTypePrefix, "api", 80, ""))),
			unsupport: []string{"route different paths"}},
		{name: "rules with and without a host: unsupported",
			ing:       userIngress(withRule("", ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""))),
			unsupport: []string{"without a host and rules with hosts"}},
		{name: "a path twice with different backends: unsupported",
			ing:       userIngress(withRule("shop.example.com", ingressPath("/", networkingv1.PathTypePrefix, "other", 80, ""))),
			unsupport: []string{"twice"}},
		{name: "a port by name: resolved through the Service",
			ing:   userIngress(withPaths(ingressPath("/", networkingv1.PathTypePrefix, "web", 0, "http"))),
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 8080)}},
		{name: "a port by name of a Service that does not exist: unsupported",
			ing:       userIngress(withPaths(ingressPath("/", networkingv1.PathTypePrefix, "gone", 0, "http"))),
			unsupport: []string{"does not exist"}},
		{name: "a port name the Service does not have: unsupported, naming its ports",
			ing:       userIngress(withPaths(ingressPath("/", networkingv1.PathTypePrefix, "web", 0, "grpc"))),
			unsupport: []string{"8080 (http)"}},
		{name: "a resource backend: unsupported",
			ing: userIngress(withPaths(networkingv1.HTTPIngressPath{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}}})),
			unsupport: []string{"resource backend"}},
		{name: "ImplementationSpecific of the class nginx: a PathPrefix, with a note",
			ing: userIngress(func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("nginx") },
				withPaths(ingressPath("/shop", networkingv1.PathTypeImplementationSpecific, "web", 80, ""))),
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/shop", "web", 80)}, notes: 1},
		{name: "ImplementationSpecific of the class annotation nginx, empty: \"/\", the class annotation not blocking",
			ing: userIngress(withAnnotations(ingressClassAnnotation, "nginx"),
				withPaths(ingressPath("", networkingv1.PathTypeImplementationSpecific, "web", 80, ""))),
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 80)}, notes: 1},
		{name: "ImplementationSpecific of another class: unsupported",
			ing:       userIngress(withPaths(ingressPath("/shop", networkingv1.PathTypeImplementationSpecific, "web", 80, ""))),
			unsupport: []string{"Ingress controller's own"}},
		{name: "an nginx regex path: unsupported",
			ing: userIngress(func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("nginx") },
				withPaths(ingressPath("/api/(.*)", networkingv1.PathTypeImplementationSpecific, "web", 80, ""))),
			unsupport: []string{"regular expression"}},
		{name: "a path an HTTPRoute refuses: unsupported",
			ing: userIngress(func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("nginx") },
				withPaths(ingressPath("/a//b", networkingv1.PathTypeImplementationSpecific, "web", 80, ""))),
			unsupport: []string{`"//"`}},
		{name: "spec.defaultBackend alone: a rule for \"/\" and no hostnames",
			ing: userIngress(func(ing *networkingv1.Ingress) {
				ing.Spec.Rules = nil
				ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
			}),
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 80)}},
		{name: "spec.defaultBackend with rules: \"/\" for what no path takes",
			ing: userIngress(withPaths(ingressPath("/api", networkingv1.PathTypePrefix, "api", 80, "")), func(ing *networkingv1.Ingress) {
				ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
			}),
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/api", "api", 80), routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 80)}},
		{name: "spec.defaultBackend with a path \"/\": the path's backend wins",
			ing: userIngress(func(ing *networkingv1.Ingress) {
				ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "other", Port: networkingv1.ServiceBackendPort{Number: 80}}}
			}),
			rules: []gatewayv1.HTTPRouteRule{routeRule(gatewayv1.PathMatchPathPrefix, "/", "web", 80)}},
		{name: "more than 16 paths: unsupported",
			ing: userIngress(func(ing *networkingv1.Ingress) {
				for i := range 17 {
					ing.Spec.Rules[0].HTTP.Paths = append(ing.Spec.Rules[0].HTTP.Paths, ingressPath("/p"+strings.Repeat("x", i+1), networkingv1.PathTypePrefix, "web", 80, ""))
				}
			}),
			unsupport: []string{"more than an HTTPRoute's 16 rules"}},
		{name: "TLS for a host an HTTPS listener takes: nothing blocks",
			ing: userIngress(withTLS("shop.example.com")), gateway: https},
		{name: "TLS of the class nginx, no ssl-redirect: ingress-nginx's default redirect to HTTPS, carried (TestMigrationHTTPSRedirect)",
			ing: userIngress(withTLS("shop.example.com"), func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("nginx") }), gateway: https,
			parent: &gatewayv1.ParentReference{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")), Name: "gw", SectionName: ptr.To(gatewayv1.SectionName("https"))}},
		{name: "TLS of the class nginx, no plain-HTTP listener: ingress-nginx's default redirect to HTTPS blocks",
			ing: userIngress(withTLS("shop.example.com"), func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("nginx") }), gateway: httpsOnly,
			blocking: []string{nginxSSLRedirect}},
		{name: "TLS of the class nginx, its default redirect acknowledged",
			ing: userIngress(withTLS("shop.example.com"), withAnnotations(ingressClassAnnotation, "nginx", AnnotationGatewayAcknowledged, nginxSSLRedirect)), gateway: httpsOnly,
			acked: []string{nginxSSLRedirect}},
		{name: "TLS and no HTTPS listener: spec.tls blocks",
			ing: userIngress(withTLS("shop.example.com")), gateway: gatewayWith(listener("http", gatewayv1.HTTPProtocolType, "")),
			blocking: []string{tlsKey}},
		{name: "TLS and an HTTPS listener for other hosts: spec.tls blocks",
			ing: userIngress(withTLS("shop.example.com")), gateway: gatewayWith(listener("https", gatewayv1.HTTPSProtocolType, "*.example.org")),
			blocking: []string{tlsKey}},
		{name: "TLS with no hosts: every host needs one",
			ing: userIngress(withTLS()), gateway: gatewayWith(listener("http", gatewayv1.HTTPProtocolType, "")), blocking: []string{tlsKey}},
		{name: "TLS on a listener other than the one named: spec.tls blocks",
			ing: userIngress(withTLS("shop.example.com"), withAnnotations(AnnotationGatewayListener, "http")), gateway: https,
			blocking: []string{tlsKey}},
		{name: "TLS with the Gateway not there: spec.tls blocks",
			ing: userIngress(withTLS("shop.example.com")), blocking: []string{tlsKey}},
		{name: "TLS with the Gateway not watched: spec.tls blocks until acknowledged",
			ing: userIngress(withTLS("shop.example.com"), withAnnotations(AnnotationGatewayAcknowledged, "spec.tls")), invisible: true,
			acked: []string{tlsKey}},
		{name: "keys the translation cannot carry, and of other Ingress controllers: blocking",
			ing:      userIngress(withAnnotations(nginxSnippet, "more_set_headers x", "cert-manager.io/cluster-issuer", "le")),
			blocking: []string{"cert-manager.io/cluster-issuer", nginxSnippet}},
		{name: "keys acknowledged one by one or all: lost, not blocking",
			ing: userIngress(withAnnotations(nginxSnippet, "more_set_headers x", "cert-manager.io/cluster-issuer", "le",
				AnnotationGatewayAcknowledged, "cert-manager.io/cluster-issuer")),
			blocking: []string{nginxSnippet}, acked: []string{"cert-manager.io/cluster-issuer"}},
		{name: "every key acknowledged",
			ing:   userIngress(withAnnotations(nginxSnippet, "more_set_headers x", AnnotationGatewayAcknowledged, "*")),
			acked: []string{nginxSnippet}},
		{name: "a key the translation carries with no effect (ssl-redirect false): neither blocking nor acknowledged",
			ing: userIngress(withAnnotations("nginx.ingress.kubernetes.io/ssl-redirect", "false"))},
		{name: "what the translation carries: on every rule",
			ing: userIngress(withPaths(ingressPath("/a", networkingv1.PathTypePrefix, "web", 80, ""), ingressPath("/b", networkingv1.PathTypePrefix, "web", 80, ""))),
			translate: func(map[string]string, sets.Set[features.FeatureName]) Carried {
				return translate(map[string]string{
					"nginx.ingress.kubernetes.io/upstream-vhost":     "internal.example.net",
					"nginx.ingress.kubernetes.io/proxy-read-timeout": "30",
				}, nil)
			}},
		{name: "a Gateway of another namespace, and a listener: the parent says so",
			ing:    userIngress(withAnnotations(AnnotationGateway, "infra/shared", AnnotationGatewayListener, "web")),
			parent: &gatewayv1.ParentReference{Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")), Namespace: ptr.To(gatewayv1.Namespace("infra")), Name: "shared", SectionName: ptr.To(gatewayv1.SectionName("web"))}},
		{name: "a bad ingress/gateway: a problem, no route",
			ing: userIngress(withAnnotations(AnnotationGateway, "Bad_Gateway")), problems: []string{ReasonInvalidGateway}},
		{name: "a bad ingress/delete-after-move: a problem",
			ing: userIngress(withAnnotations(AnnotationDeleteAfterMove, "yes")), problems: []string{ReasonInvalidDeleteAfterMove}},
		{name: "ingress/delete-after-move true",
			ing: userIngress(withAnnotations(AnnotationDeleteAfterMove, " True ")), deleteWhen: true},
		{name: "an Ingress some other controller controls: unsupported",
			ing: userIngress(func(ing *networkingv1.Ingress) {
				ing.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "App", Name: "shop", UID: "app", Controller: ptr.To(true)}}
			}),
			unsupport: []string{"controlled by App shop"}},
		{name: "an ingress-nginx canary: unsupported, it has no route of its own",
			ing:       userIngress(withAnnotations(nginxCanary, "true", AnnotationGatewayAcknowledged, "*"), func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("nginx") }),
			unsupport: []string{"is an ingress-nginx canary"},
			acked:     []string{nginxCanary}},
		{name: "an Ingress with a canary that does not ask to move: unsupported, naming it",
			ing: userIngress(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "20", false)},
			unsupport: []string{"Ingress web-canary, an ingress-nginx canary of its hosts, does not ask to move"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := migrationInput{Ingress: tc.ing, Services: map[string]*corev1.Service{"web": webService}, Gateway: tc.gateway,
				GatewayVisible: !tc.invisible, Canaries: tc.canaries, Translate: tc.translate}
			m := renderMigration(in)
			if got := keysOf(m.Blocking); !slices.Equal(got, tc.blocking) {
				t.Errorf("blocking %q, want %q (%s)", got, tc.blocking, describeBlocking(m.Blocking))
			}
			if got := keysOf(m.Acknowledged); !slices.Equal(got, tc.acked) {
				t.Errorf("acknowledged %q, want %q", got, tc.acked)
			}
			if len(m.Unsupported) != len(tc.unsupport) {
				t.Fatalf("unsupported %q, want %d naming %q", m.Unsupported, len(tc.unsupport), tc.unsupport)
			}
			for i, u := range tc.unsupport {
				if !strings.Contains(m.Unsupported[i], u) {
					t.Errorf("unsupported %q, want it to say %q", m.Unsupported[i], u)
				}
			}
			var reasons []string
			for _, p := range m.Problems {
				reasons = append(reasons, p.Reason)
			}
			if !slices.Equal(reasons, tc.problems) {
				t.Errorf("problems %v, want %v", m.Problems, tc.problems)
			}
			if len(m.Notes) != tc.notes {
				t.Errorf("notes %q, want %d", m.Notes, tc.notes)
			}
			if m.DeleteAfterMove != tc.deleteWhen {
				t.Errorf("DeleteAfterMove = %v, want %v", m.DeleteAfterMove, tc.deleteWhen)
			}
			if (m.Route == nil) != (len(tc.unsupport) > 0 || len(tc.problems) > 0 && tc.problems[0] == ReasonInvalidGateway) || (m.Route != nil && m.Gateway == nil) {
				t.Fatalf("route %v with unsupported %q and problems %v", m.Route, m.Unsupported, m.Problems)
			}
			if m.Route == nil {
				return
			}
			checkMigrationRoute(t, tc.ing, m.Route)
			if tc.hostnames != nil && !slices.Equal(m.Route.Spec.Hostnames, tc.hostnames) {
				t.Errorf("hostnames %q, want %q", m.Route.Spec.Hostnames, tc.hostnames)
			}
			if tc.rules != nil && !reflect.DeepEqual(m.Route.Spec.Rules, tc.rules) {
				t.Errorf("rules\n%+v\nwant\n%+v", m.Route.Spec.Rules, tc.rules)
			}
			if tc.parent != nil && !reflect.DeepEqual(m.Route.Spec.ParentRefs, []gatewayv1.ParentReference{*tc.parent}) {
				t.Errorf("parentRefs %+v, want %+v", m.Route.Spec.ParentRefs, *tc.parent)
			}
			if tc.translate != nil {
				want := tc.translate(nil, nil)
				for _, r := range m.Route.Spec.Rules {
					if f := want.RuleFilters(ptr.Deref(r.Matches[0].Path.Value, "")); len(f) == 0 || want.Timeouts == nil ||
						!reflect.DeepEqual(r.Filters, f) || !reflect.DeepEqual(r.Timeouts, want.Timeouts) {
						t.Errorf("rule %+v: not the carried filters and timeouts", r)
					}
				}
			}
		})
	}
}

func keysOf(keys []BlockedKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.Key)
	}
	return out
}

// checkMigrationRoute checks what every route made from ing has: its name,
// no owner, the marker, and a parent Gateway with group and kind set.
func checkMigrationRoute(t *testing.T, ing *networkingv1.Ingress, route *gatewayv1.HTTPRoute) {
	t.Helper()
	if route.Name != ing.Name || route.Namespace != ing.Namespace || len(route.OwnerReferences) != 0 {
		t.Errorf("route %s/%s owners %v, want %s/%s and no owner", route.Namespace, route.Name, route.OwnerReferences, ing.Namespace, ing.Name)
	}
	if route.Annotations[AnnotationMigratedFrom] != string(ing.UID) || metav1.GetControllerOfNoCopy(route) != nil {
		t.Errorf("route annotations %v: not marked as made from Ingress uid %s", route.Annotations, ing.UID)
	}
	if p := route.Spec.ParentRefs; len(p) != 1 || p[0].Group == nil || p[0].Kind == nil {
		t.Errorf("parentRefs %+v, want one with group and kind", p)
	}
	for _, r := range route.Spec.Rules {
		for _, m := range r.Matches {
			if m.Path == nil || m.Path.Type == nil || m.Path.Value == nil {
				t.Errorf("match %+v: the CRD would default its path", m)
			}
		}
		for _, b := range r.BackendRefs {
			if ptr.Deref(b.Group, "x") != "" || ptr.Deref(b.Kind, "") != "Service" || ptr.Deref(b.Weight, 0) != 1 || b.Port == nil {
				t.Errorf("backendRef %+v: the CRD would default group, kind or weight", b)
			}
		}
	}
	if _, err := routeWriter(nil, "").applyConfiguration(route, ""); err != nil {
		t.Errorf("apply configuration: %v", err)
	}
}

// TestMigratedRouteAnnotations: the route gets the Ingress's external-dns
// annotations (its controller annotation as its user set it, also while
// the Ingress is withdrawn) and the marker, nothing else.
func TestMigratedRouteAnnotations(t *testing.T) {
	ing := userIngress(withAnnotations(
		"external-dns.alpha.kubernetes.io/ttl", "60",
		"external-dns.alpha.kubernetes.io/hostname", "shop.example.com",
		"kubectl.kubernetes.io/last-applied-configuration", "{}",
		"example.com/team", "shop",
		AnnotationExternalDNSController, withdrawnValue,
		AnnotationExternalDNSControllerLegacy, withdrawnValue,
		AnnotationDNSControllerSaved, `{"external-dns.kubernetes.io/controller":"dns-controller"}`,
		AnnotationDNSWithdrawn, "2030-01-01T00:00:00Z",
	))
	got := migratedAnnotations(ing)
	want := map[string]string{
		AnnotationMigratedFrom:                      "ingress-uid",
		"external-dns.alpha.kubernetes.io/ttl":      "60",
		"external-dns.alpha.kubernetes.io/hostname": "shop.example.com",
		AnnotationExternalDNSController:             "dns-controller",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations %v, want %v", got, want)
	}
}

// TestIsMigratedFrom: a route is a user's Ingress's only when its marker
// names that Ingress's UID and nothing controls it.
func TestIsMigratedFrom(t *testing.T) {
	ing := userIngress()
	route := func(uid string, controlled bool) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{AnnotationMigratedFrom: uid},
			ManagedFields: []metav1.ManagedFieldsEntry{madeBy("test")}}}
		if controlled {
			r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "svc", Controller: ptr.To(true)}}
		}
		return r
	}
	recreated := userIngress(func(i *networkingv1.Ingress) { i.UID = "another-uid" })
	for _, tc := range []struct {
		name  string
		route *gatewayv1.HTTPRoute
		ing   *networkingv1.Ingress
		want  bool
	}{
		{"its marker names the Ingress", route("ingress-uid", false), ing, true},
		{"the Ingress deleted and made again", route("ingress-uid", false), recreated, false},
		{"a Service's route that carries the marker", route("ingress-uid", true), ing, false},
		{"no marker", &gatewayv1.HTTPRoute{}, ing, false},
		{"no Ingress", route("ingress-uid", false), nil, false},
		{"its marker written by someone else", func() *gatewayv1.HTTPRoute {
			r := route("ingress-uid", false)
			r.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("kubectl")}
			return r
		}(), ing, false},
	} {
		if got := isMigratedFrom(tc.route, tc.ing, "test"); got != tc.want {
			t.Errorf("%s: isMigratedFrom = %v, want %v", tc.name, got, tc.want)
		}
	}
	if own := migrationOwner(ing, "test"); !own.owns(ing) || own.owns(recreated) {
		t.Error("a migration's owner owns its Ingress, and no other of the name")
	}
}

// TestRenderMigrationIsDeterministic: the route of an Ingress with many
// carried annotations, several hosts and paths, renders the same every
// time (no map order leaks into filters, headers, rules or annotations),
// so that a sync compares equal to what it wrote and writes nothing more.
func TestRenderMigrationIsDeterministic(t *testing.T) {
	ing := userIngress(
		withPaths(ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""), ingressPath("/api", networkingv1.PathTypePrefix, "web", 80, ""),
			ingressPath("/b", networkingv1.PathTypeExact, "web", 80, "")),
		withRule("www.example.com", ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""), ingressPath("/api", networkingv1.PathTypePrefix, "web", 80, ""),
			ingressPath("/b", networkingv1.PathTypeExact, "web", 80, "")),
		withAnnotations(
			"nginx.ingress.kubernetes.io/enable-cors", "true",
			"nginx.ingress.kubernetes.io/cors-allow-headers", "X-B, X-A, Content-Type, Authorization, X-C",
			"nginx.ingress.kubernetes.io/cors-allow-methods", "PUT, GET, POST, DELETE",
			"nginx.ingress.kubernetes.io/cors-expose-headers", "X-Z, X-Y",
			"nginx.ingress.kubernetes.io/upstream-vhost", "internal.example.com",
			"nginx.ingress.kubernetes.io/proxy-read-timeout", "120",
			"nginx.ingress.kubernetes.io/proxy-send-timeout", "30",
			"nginx.ingress.kubernetes.io/ssl-redirect", "false",
			"external-dns.alpha.kubernetes.io/ttl", "60",
			"external-dns.alpha.kubernetes.io/hostname", "shop.example.com,www.example.com",
		))
	first := renderMigration(migrationInput{Ingress: ing, GatewayVisible: true})
	if first.Route == nil {
		t.Fatalf("no route: %q %v %v", first.Unsupported, first.Problems, first.Blocking)
	}
	for i := 0; i < 50; i++ {
		m := renderMigration(migrationInput{Ingress: ing.DeepCopy(), GatewayVisible: true})
		if !reflect.DeepEqual(m.Route, first.Route) || !reflect.DeepEqual(m.Carried.Keys, first.Carried.Keys) || !reflect.DeepEqual(m.Notes, first.Notes) {
			t.Fatalf("render %d differs:\n%+v\nvs\n%+v", i, m.Route.Spec, first.Route.Spec)
		}
	}
}
