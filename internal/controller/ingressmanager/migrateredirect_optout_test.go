package ingressmanager

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// An Ingress that no longer asks to move, whose redirect route is all it
// has on the Gateway.

// TestOptedOutIngressWithOnlyARedirectRouteComesBack: an Ingress whose
// redirect route was made (the route not yet, the redirect waiting for its
// Gateway) and that then no longer asks to move must be synced, so that
// its redirect route goes; nothing else brings it back once the Gateway
// said its word on the redirect route.
func TestOptedOutIngressWithOnlyARedirectRouteComesBack(t *testing.T) {
	optedOut := func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }
	for _, tc := range []struct {
		name     string
		redirect []func(*gatewayv1.HTTPRoute)
		want     bool
	}{
		{name: "its redirect route, not accepted", redirect: []func(*gatewayv1.HTTPRoute){}, want: true},
		{name: "its redirect route, accepted", redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)}, want: true},
		{name: "no route of its at all: nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			if err := f.gateways.Update(redirectGateway()); err != nil {
				t.Fatal(err)
			}
			f.addRenderedRoutes(tlsIngress(), nil, tc.redirect)
			ing := tlsIngress(optedOut)
			if err := f.c.ingresses.Add(ing); err != nil {
				t.Fatal(err)
			}
			f.c.enqueueOwned(ing) // the Ingress's update, ingress/gateway removed
			if got := queuedMigrations(f.c)["default/web"]; got != tc.want {
				t.Errorf("Ingress web queued %v, want %v", got, tc.want)
			}
		})
	}
}
