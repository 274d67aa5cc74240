package ingressmanager

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	"sigs.k8s.io/yaml"
)

// TestWritePlan: migrate-plan on fake clientsets: every Ingress no Service
// controls, the route the controller would make (the same rendering), what
// blocks and why, where a move stands; a Service's own Ingress is not
// listed, and nothing is written.
func TestWritePlan(t *testing.T) {
	moved := userIngress(withAnnotations(AnnotationExternalDNSController, withdrawnValue, AnnotationExternalDNSControllerLegacy, withdrawnValue,
		AnnotationDNSWithdrawn, testNow.Add(-time.Hour).Format(time.RFC3339Nano)))
	notAsking := userIngress(func(i *networkingv1.Ingress) {
		i.Name, i.UID, i.Annotations = "plain", "plain-uid", map[string]string{}
		i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{Name: "http"}
	})
	blocked := userIngress(func(i *networkingv1.Ingress) { i.Name, i.UID = "snippets", "snippets-uid" },
		withAnnotations("nginx.ingress.kubernetes.io/configuration-snippet", "secret-token-value"))
	owned := userIngress(func(i *networkingv1.Ingress) {
		i.Name = "owned"
		i.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "owned", UID: "s", Controller: ptr.To(true)}}
	})
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
	kube := fake.NewClientset(moved, notAsking, blocked, owned, web)
	m := renderMigration(migrationInput{Ingress: moved, GatewayVisible: true})
	route := m.Route
	servedAt(1)(route)
	route.Generation = 1
	route.ManagedFields = []metav1.ManagedFieldsEntry{madeBy(DefaultFieldManager)} // the controller made it
	// NewSimpleClientset: NewClientset's field-managed tracker has no v1
	// gateways.
	gw := gatewayfake.NewSimpleClientset(route)
	if err := gw.Tracker().Create(gatewayv1.SchemeGroupVersion.WithResource("gateways"), programmedGateway("gw"), "default"); err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	err := WritePlan(context.Background(), PlanClients{Core: kube.CoreV1(), Networking: kube.NetworkingV1(), Gateway: gw.GatewayV1()},
		PlanOptions{Namespace: "default", Gateway: "infra/shared", DNSDrain: time.Minute, Now: func() time.Time { return testNow }}, &out)
	if err != nil {
		t.Fatal(err)
	}
	plan := out.String()
	for _, want := range []string{
		"# Ingress default/plain does not ask to move (no ingress/gateway); the plan is for Gateway infra/shared (--gateway).",
		"# Ingress default/snippets asks to move to Gateway gw (ingress/gateway).",
		"#   Blocks the move: nginx.ingress.kubernetes.io/configuration-snippet: restricts who may reach the backend",
		"#   Move: HTTPRoute default/web is made from this Ingress and serves.",
		"#   Moved: the Ingress was withdrawn from external-dns at",
		"#   Move: the HTTPRoute is not made yet.",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan does not say %q:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "owned") {
		t.Errorf("the plan lists a Service's own Ingress:\n%s", plan)
	}
	if strings.Contains(plan, "secret-token-value") {
		t.Errorf("the plan prints an annotation's value:\n%s", plan)
	}
	docs := strings.Split(plan, "\n---\n")
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3:\n%s", len(docs), plan)
	}
	var plain gatewayv1.HTTPRoute
	if err := yaml.Unmarshal([]byte(docs[0]), &plain); err != nil {
		t.Fatal(err)
	}
	if plain.Kind != "HTTPRoute" || plain.Name != "plain" || len(plain.Spec.ParentRefs) != 1 || plain.Spec.ParentRefs[0].Name != "shared" ||
		*plain.Spec.Rules[0].BackendRefs[0].Port != 8080 {
		t.Errorf("the plan's route of plain: %+v", plain)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("the plan sent a %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	for _, a := range gw.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("the plan sent a %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestWritePlanWithoutTheGatewayAPI: with no Gateway API served, the plan
// says nothing moves until it is, and still shows the routes.
func TestWritePlanWithoutTheGatewayAPI(t *testing.T) {
	kube := fake.NewClientset(userIngress())
	var out strings.Builder
	if err := WritePlan(context.Background(), PlanClients{Core: kube.CoreV1(), Networking: kube.NetworkingV1()}, PlanOptions{}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"does not serve the Gateway API", "kind: HTTPRoute", "ingress/migrated-from: ingress-uid"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the plan does not say %q:\n%s", want, out.String())
		}
	}
	if err := WritePlan(context.Background(), PlanClients{Core: kube.CoreV1(), Networking: kube.NetworkingV1()}, PlanOptions{Gateway: "no-namespace"}, &out); err == nil {
		t.Error("a --gateway without a namespace is taken")
	}
}

// TestWritePlanHTTPSRedirect: the plan of an Ingress whose move carries
// ingress-nginx's redirect to HTTPS shows both routes the controller would
// make, the route on the HTTPS listener and the redirect route on the
// plain-HTTP one, with the status of --ingress-nginx-http-redirect-code.
func TestWritePlanHTTPSRedirect(t *testing.T) {
	kube := fake.NewClientset(tlsIngress())
	gw := gatewayfake.NewSimpleClientset()
	if err := gw.Tracker().Create(gatewayv1.SchemeGroupVersion.WithResource("gateways"), redirectGateway(), "default"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WritePlan(context.Background(), PlanClients{Core: kube.CoreV1(), Networking: kube.NetworkingV1(), Gateway: gw.GatewayV1()},
		PlanOptions{Namespace: "default", HTTPRedirectCode: 301}, &out); err != nil {
		t.Fatal(err)
	}
	plan := out.String()
	if want := "HTTPRoute web-https-redirect below redirects plain HTTP to it on listener http"; !strings.Contains(plan, want) {
		t.Errorf("the plan does not say %q:\n%s", want, plan)
	}
	docs := strings.Split(plan, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the route and the redirect route:\n%s", len(docs), plan)
	}
	var route, redirect gatewayv1.HTTPRoute
	if err := yaml.Unmarshal([]byte(docs[0]), &route); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &redirect); err != nil {
		t.Fatal(err)
	}
	if route.Name != "web" || ptr.Deref(route.Spec.ParentRefs[0].SectionName, "") != "https" {
		t.Errorf("the plan's route: %+v", route)
	}
	if redirect.Name != "web-https-redirect" || ptr.Deref(redirect.Spec.ParentRefs[0].SectionName, "") != "http" ||
		ptr.Deref(redirect.Spec.Rules[0].Filters[0].RequestRedirect.StatusCode, 0) != 301 {
		t.Errorf("the plan's redirect route: %+v", redirect)
	}
}
