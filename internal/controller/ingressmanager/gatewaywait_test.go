package ingressmanager

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// TestOnlyGatewayServicesWaitForTheGatewayAPI: until it is known whether
// the Gateway API is served, a Service that asks for a Gateway is held back
// (a restart must not take "not looked yet" for "not installed"), while the
// others get their Ingress at once; the answer brings the held-back ones
// back, and readiness waits for it.
func TestOnlyGatewayServicesWaitForTheGatewayAPI(t *testing.T) {
	ctx := context.Background()
	c, client := newTestControllerClient(t)
	plain := service(nil, port("http", 80))
	plain.Name, plain.UID, plain.ResourceVersion = "plain", "uid-plain", "1"
	onGateway := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
	onGateway.Name, onGateway.UID, onGateway.ResourceVersion = "on-gateway", "uid-gw", "1"
	for _, svc := range []*corev1.Service{plain, onGateway} {
		if err := c.services.Add(svc); err != nil {
			t.Fatal(err)
		}
	}
	created := func() map[string]bool {
		out := map[string]bool{}
		for _, a := range client.Actions() {
			if a, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "ingresses" {
				out[a.GetObject().(metav1.Object).GetName()] = true
			}
		}
		return out
	}
	for _, svc := range []*corev1.Service{plain, onGateway} {
		if err := c.sync(ctx, cache.MetaObjectToName(svc)); err != nil {
			t.Fatalf("sync %s: %v", svc.Name, err)
		}
	}
	if got := created(); !got["plain"] || got["on-gateway"] {
		t.Fatalf("before the Gateway API's answer, Ingresses created: %v; want only plain's", got)
	}
	if c.HasSynced() {
		t.Error("HasSynced before the Gateway API's answer")
	}

	// The answer: not served.
	c.gateway.markKnown()
	c.gatewayAnswered()
	if q := queued(c); !q["default/on-gateway"] || q["default/plain"] {
		t.Fatalf("queued on the answer: %v; want the Service on a Gateway only", q)
	}
	if err := c.sync(ctx, cache.MetaObjectToName(onGateway)); err != nil {
		t.Fatal(err)
	}
	if got := created(); !got["on-gateway"] {
		t.Fatalf("after the answer \"not served\", Ingresses created: %v; want one for on-gateway too", got)
	}
}

// TestGatewayAnswerBringsRouteOwnersBack: the Services synced before the
// HTTPRoute cache was published (without the routes they may own) are
// synced again once it is: the owners of every cached route.
func TestGatewayAnswerBringsRouteOwnersBack(t *testing.T) {
	c, _ := newTestControllerClient(t)
	routes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	route := seedRoute(service(nil, port("http", 80)))
	route.Name = "left-over"
	if err := routes.Add(route); err != nil {
		t.Fatal(err)
	}
	c.gateway.routes.Store(&routes)
	c.gateway.markKnown()
	c.gatewayAnswered()
	owner := metav1.GetControllerOf(route)
	if owner == nil {
		t.Fatal("seedRoute made a route without a controller")
	}
	if q := queued(c); !q["default/left-over"] || !q["default/"+owner.Name] {
		t.Fatalf("queued on the answer: %v; want the route's key and its controlling Service %s", q, owner.Name)
	}
}
