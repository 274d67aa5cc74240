package ingressmanager

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// seedRoute is the HTTPRoute of the seed Service with ingress/gateway: gw.
func seedRoute(svc *corev1.Service) *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "my-nginx",
			Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service")),
			},
		},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Group: ptr.To(gatewayv1.Group("gateway.networking.k8s.io")),
				Kind:  ptr.To(gatewayv1.Kind("Gateway")),
				Name:  "gw",
			}}},
			Hostnames: []gatewayv1.Hostname{"example.com"},
			Rules: []gatewayv1.HTTPRouteRule{{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
					Type:  ptr.To(gatewayv1.PathMatchPathPrefix),
					Value: ptr.To("/"),
				}}},
				BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
					BackendObjectReference: gatewayv1.BackendObjectReference{
						Group: ptr.To(gatewayv1.Group("")),
						Kind:  ptr.To(gatewayv1.Kind("Service")),
						Name:  "my-nginx",
						Port:  ptr.To[int32](80),
					},
					Weight: ptr.To[int32](1),
				}}},
			}},
		},
	}
}

func TestDesiredRoute(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		ann     map[string]string
		ports   []corev1.ServicePort
		want    func(r *gatewayv1.HTTPRoute)
		ignored []string
		noRoute bool
	}{
		{name: "the seed Service with ingress/gateway gets the seed's rule as an HTTPRoute",
			ann: map[string]string{AnnotationGateway: "gw"}},
		{name: "a Gateway in another namespace is named with its namespace",
			ann:  map[string]string{AnnotationGateway: "infra/gw"},
			want: func(r *gatewayv1.HTTPRoute) { r.Spec.ParentRefs[0].Namespace = ptr.To(gatewayv1.Namespace("infra")) }},
		{name: "a Gateway in the Service's namespace, written with it, has no namespace",
			ann: map[string]string{AnnotationGateway: "default/gw"}},
		{name: "--ingress-gateway applies to a Service without ingress/gateway",
			cfg:  Config{Gateway: "infra/gw"},
			want: func(r *gatewayv1.HTTPRoute) { r.Spec.ParentRefs[0].Namespace = ptr.To(gatewayv1.Namespace("infra")) }},
		{name: "ingress/gateway wins over --ingress-gateway",
			cfg: Config{Gateway: "infra/other"}, ann: map[string]string{AnnotationGateway: "gw"}},
		{name: "ingress/gateway \"\" keeps the Service on Ingress despite --ingress-gateway",
			cfg: Config{Gateway: "infra/gw"}, ann: map[string]string{AnnotationGateway: " "}, noRoute: true},
		{name: "no gateway anywhere: no route",
			noRoute: true},
		{name: "ingress/http false: no route",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationHTTP: "false"}, noRoute: true},
		{name: "the listener becomes the sectionName",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationGatewayListener: "http"},
			want: func(r *gatewayv1.HTTPRoute) { r.Spec.ParentRefs[0].SectionName = ptr.To(gatewayv1.SectionName("http")) }},
		{name: "host \"\" gives no hostnames",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationHost: ""},
			want: func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = nil }},
		{name: "the host template renders the hostname",
			cfg: Config{HostTemplate: "{{.Name}}.{{.Namespace}}.apps.example.com"},
			ann: map[string]string{AnnotationGateway: "gw"},
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Hostnames = []gatewayv1.Hostname{"my-nginx.default.apps.example.com"}
			}},
		{name: "Exact stays Exact, with the path",
			ann: map[string]string{AnnotationGateway: "gw", AnnotationPathType: "Exact", AnnotationPath: "/api"},
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Matches[0].Path = &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To("/api")}
			}},
		{name: "the port by name gives its number",
			ann:   map[string]string{AnnotationGateway: "gw", AnnotationPort: "web"},
			ports: []corev1.ServicePort{port("http", 80), port("web", 8080)},
			want:  func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[0].BackendRefs[0].Port = ptr.To[int32](8080) }},
		{name: "ingress/annotations go on the route",
			ann:  map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"a.example.com/x": "1"}`},
			want: func(r *gatewayv1.HTTPRoute) { r.Annotations = map[string]string{"a.example.com/x": "1"} }},
		{name: "ingress/class and ingress/tls-secret are reported as ignored",
			ann:     map[string]string{AnnotationGateway: "gw", AnnotationClass: "nginx", AnnotationTLSSecret: "tls"},
			ignored: []string{AnnotationClass, AnnotationTLSSecret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBuilder(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			ports := tc.ports
			if ports == nil {
				ports = []corev1.ServicePort{port("http", 80)}
			}
			svc := service(tc.ann, ports...)
			in := b.Parse(svc)
			got, err := in.HTTPRoute()
			ignored := in.IngressOnly
			if err != nil {
				t.Fatal(err)
			}
			if tc.noRoute {
				if got != nil || (b.Parse(svc).Target == TargetHTTPRoute) {
					t.Fatalf("got a route %s, want none", dump.Pretty(got))
				}
				return
			}
			want := seedRoute(svc)
			if tc.want != nil {
				tc.want(want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("route:\n%s\nwant:\n%s", dump.Pretty(got), dump.Pretty(want))
			}
			if !slices.Equal(ignored, tc.ignored) {
				t.Errorf("ignored = %v, want %v", ignored, tc.ignored)
			}
		})
	}
}

func TestDesiredRouteRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ann    map[string]string
		reason string
	}{
		{"ImplementationSpecific has no portable meaning", map[string]string{AnnotationPathType: "ImplementationSpecific"}, ReasonUnsupportedPathType},
		{"a Gateway name with capitals", map[string]string{AnnotationGateway: "GW"}, ReasonInvalidGateway},
		{"a Gateway namespace that is no DNS label", map[string]string{AnnotationGateway: "in.fra/gw"}, ReasonInvalidGateway},
		{"a Gateway with two slashes", map[string]string{AnnotationGateway: "a/b/c"}, ReasonInvalidGateway},
		{"a listener with a space", map[string]string{AnnotationGatewayListener: "my listener"}, ReasonInvalidGatewayListener},
		{"a path with '#'", map[string]string{AnnotationPath: "/a#b"}, ReasonInvalidPath},
		{"a path with a character the CRD refuses", map[string]string{AnnotationPath: "/a\"b"}, ReasonInvalidPath},
		{"an unknown port", map[string]string{AnnotationPort: "9999"}, ReasonUnknownPort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBuilder(Config{})
			if err != nil {
				t.Fatal(err)
			}
			ann := map[string]string{AnnotationGateway: "gw"}
			for k, v := range tc.ann {
				ann[k] = v
			}
			svc := service(ann, port("http", 80))
			if !(b.Parse(svc).Target == TargetHTTPRoute) {
				t.Fatal("a Service with a bad ingress/gateway must still count as asking for a route")
			}
			got, err := b.Parse(svc).HTTPRoute()
			var invalid *InvalidError
			if !errors.As(err, &invalid) || invalid.Reason != tc.reason || got != nil {
				t.Fatalf("DesiredRoute = %v, %v; want no route and an InvalidError %s", got, err, tc.reason)
			}
		})
	}
}

func TestDefaultGatewayIsValidated(t *testing.T) {
	for _, bad := range []string{"gw", "Infra/gw", "infra/", "/gw", "infra/g w"} {
		if _, err := NewBuilder(Config{Gateway: bad}); err == nil {
			t.Errorf("NewBuilder(Gateway: %q): no error", bad)
		}
	}
	if _, err := NewBuilder(Config{Gateway: "infra/gw"}); err != nil {
		t.Errorf("NewBuilder(Gateway: infra/gw): %v", err)
	}
}

func TestParentStatusesMatchDefaults(t *testing.T) {
	route := seedRoute(service(nil))
	route.Status.Parents = []gatewayv1.RouteParentStatus{
		{ParentRef: gatewayv1.ParentReference{Name: "gw", Namespace: ptr.To(gatewayv1.Namespace("default"))}, ControllerName: "a"},
		{ParentRef: gatewayv1.ParentReference{Name: "gw", SectionName: ptr.To(gatewayv1.SectionName("http"))}, ControllerName: "b"},
		{ParentRef: gatewayv1.ParentReference{Name: "other"}, ControllerName: "c"},
	}
	got := parentStatuses(route, route.Spec.ParentRefs[0])
	if len(got) != 1 || got[0].ControllerName != "a" {
		t.Errorf("parentStatuses = %v, want the entry of controller a only", got)
	}
}

func TestSettlingKeepsTheOldObjectForTheSettleTime(t *testing.T) {
	now := time.Unix(1000, 0)
	s := settling{settle: 5 * time.Second, now: func() time.Time { return now }, since: map[settleKey]readySince{}}
	svc := serviceOwner(service(nil))
	if got := s.remaining(svc, "new"); got != 5*time.Second {
		t.Fatalf("first seen ready: remaining %v, want the whole settle time", got)
	}
	now = now.Add(2 * time.Second)
	if got := s.remaining(svc, "new"); got != 3*time.Second {
		t.Errorf("2s later: remaining %v, want 3s", got)
	}
	if got := s.remaining(svc, "replacement"); got != 5*time.Second {
		t.Errorf("another new object: remaining %v, want the whole settle time again", got)
	}
	s.reset(svc)
	now = now.Add(10 * time.Second)
	if got := s.remaining(svc, "replacement"); got != 5*time.Second {
		t.Errorf("ready again after a reset: remaining %v, want the whole settle time", got)
	}
	now = now.Add(5 * time.Second)
	if got := s.remaining(svc, "replacement"); got != 0 {
		t.Errorf("after the settle time: remaining %v, want 0", got)
	}
	if len(s.since) != 0 {
		t.Errorf("settled entries are kept: %v", s.since)
	}
	off := settling{}
	if got := off.remaining(svc, "x"); got != 0 {
		t.Errorf("settle 0: remaining %v, want 0", got)
	}
}
