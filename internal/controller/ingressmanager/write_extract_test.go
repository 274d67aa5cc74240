package ingressmanager

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// ownEverything gives manager an Apply entry owning every field obj has.
func ownEverything(t *testing.T, obj interface {
	runtime.Object
	metav1.Object
}, typ func() (typed.ParseableType, error)) {
	t.Helper()
	pt, err := typ()
	if err != nil {
		t.Fatal(err)
	}
	tv, err := pt.FromStructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := set.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: obj.GetObjectKind().GroupVersionKind().GroupVersion().String(), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}})
}

func sameJSON(t *testing.T, what string, ours, generated any) {
	t.Helper()
	oj, _ := json.Marshal(ours)
	gj, _ := json.Marshal(generated)
	if string(oj) != string(gj) {
		t.Errorf("%s: ours != generated\nours:      %s\ngenerated: %s", what, oj, gj)
	}
}

// TestExtractMatchesGenerated: on the schema subset of zz_generated.schema.go,
// extraction gives what the generated Extract functions give on the whole
// schema, for objects whose every field (status included) the manager owns.
func TestExtractMatchesGenerated(t *testing.T) {
	ing := desiredFor(t, Config{IngressClass: "nginx"}, map[string]string{
		AnnotationHost: "shop.example.org", AnnotationPath: "/api", AnnotationPathType: "Exact",
		AnnotationTLSSecret: "shop-tls", AnnotationAnnotations: `{"a.example.com/b": "c", "empty": ""}`,
	})
	ing.APIVersion, ing.Kind = "networking.k8s.io/v1", "Ingress"
	ing.Labels = map[string]string{"app": "shop"}
	ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To("example.com"), Kind: "Bucket", Name: "static"}}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7", Ports: []networkingv1.IngressPortStatus{{Port: 443, Protocol: "TCP"}}}}
	ownEverything(t, ing, ingressType)
	ours, err := extractIngress(ing, manager)
	if err != nil {
		t.Fatal(err)
	}
	generated, err := networkingv1ac.ExtractIngress(ing, manager)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "Ingress", ours, generated)
	if ours.Spec == nil || ours.Spec.DefaultBackend == nil || ours.Status == nil {
		t.Errorf("extracted Ingress lacks fields: %+v", ours)
	}

	b := mustBuilder(t, Config{Gateway: "gateways/public"})
	svc := service(map[string]string{AnnotationGatewayListener: "https", AnnotationPath: "/shop", AnnotationAnnotations: `{"a": "b"}`}, port("http", 80))
	route, err := b.Parse(svc).HTTPRoute()
	if err != nil {
		t.Fatal(err)
	}
	route.APIVersion, route.Kind = "gateway.networking.k8s.io/v1", "HTTPRoute"
	route.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: route.Spec.ParentRefs[0], ControllerName: "example.com/gateway",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Unix(1, 0)}}}}
	ownEverything(t, route, httpRouteType)
	oursRoute, err := extractHTTPRoute(route, manager)
	if err != nil {
		t.Fatal(err)
	}
	generatedRoute, err := gatewayv1ac.ExtractHTTPRoute(route, manager)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "HTTPRoute", oursRoute, generatedRoute)
	if oursRoute.Spec == nil || len(oursRoute.Spec.Rules) != 1 || oursRoute.Status == nil {
		t.Errorf("extracted HTTPRoute lacks fields: %+v", oursRoute)
	}
}
