package ingressmanager

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A moved Ingress whose annotations or rules turn invalid, its redirect
// route in place.

// TestMigrationRedirectWhileInvalid: an Ingress moved with its redirect
// whose route can no longer be rendered (a path the route cannot express)
// keeps its routes as they are, withdrawn from DNS while they serve; but
// when its redirect route does not serve (its Gateway no longer accepts
// it), the route alone leaves the Gateway's plain-HTTP listener without an
// answer for the hosts, and the Ingress must be back in DNS.
func TestMigrationRedirectWhileInvalid(t *testing.T) {
	regexPath := withPaths(ingressPath("/x(.*)", networkingv1.PathTypeImplementationSpecific, "web", 80, ""))
	notAccepted := func(r *gatewayv1.HTTPRoute) { r.Generation = 2 } // its status is of generation 1
	for _, tc := range []struct {
		name     string
		redirect []func(*gatewayv1.HTTPRoute)
		want     []string
		events   []string
	}{
		{name: "both routes serve: the Ingress stays withdrawn",
			redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)},
			events:   []string{ReasonMigrationUnsupported}},
		{name: "the redirect route does not serve: the Ingress back in DNS",
			redirect: []func(*gatewayv1.HTTPRoute){servedOnEachParent(1), notAccepted},
			want:     []string{"patch ingresses"}, events: []string{ReasonMigrationUnsupported, ReasonReturnedToDNS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			if err := f.gateways.Update(redirectGateway()); err != nil {
				t.Fatal(err)
			}
			ing := f.addUserIngress(tlsIngress(regexPath), withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain)))
			f.addRenderedRoutes(tlsIngress(), []func(*gatewayv1.HTTPRoute){servedOnEachParent(1)}, tc.redirect)
			f.clearActions()
			if _, err := requeuedOrNil(f.syncMigration(ing)); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			if got := f.reasons(); !slices.Equal(got, tc.events) {
				t.Errorf("Events %q, want %q", got, tc.events)
			}
		})
	}
}
