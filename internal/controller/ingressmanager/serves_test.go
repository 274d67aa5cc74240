package ingressmanager

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestServes: the one rule for "this object serves", on its own: every
// decision of the move, the DNS cut-over and the URL asks it.
func TestServes(t *testing.T) {
	route := func(mutate ...func(*gatewayv1.HTTPRoute)) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Generation: 1}}
		r.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "gw"}}
		both(mutate...)(r)
		return r
	}
	// byAnother adds a second Gateway controller's entry for gw with cond.
	byAnother := func(cond string) func(*gatewayv1.HTTPRoute) {
		return func(r *gatewayv1.HTTPRoute) {
			r.Status.Parents = append(r.Status.Parents, gatewayv1.RouteParentStatus{
				ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: "example.com/other",
				Conditions: []metav1.Condition{{Type: cond, Status: metav1.ConditionTrue, ObservedGeneration: 1}},
			})
		}
	}
	ingress := func(mutate ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
		both(mutate...)(ing)
		return ing
	}
	for _, tc := range []struct {
		name string
		obj  metav1.Object
		want bool
	}{
		{"an Ingress with an address serves", ingress(withAddress), true},
		{"an Ingress without an address does not", ingress(), false},
		{"an Ingress being deleted does not, whatever address it shows", ingress(withAddress, markDeleting[*networkingv1.Ingress]), false},
		{"a route Accepted with its references resolved for its generation serves", route(servedAt(1)), true},
		{"a route Accepted alone does not", route(acceptedAt(1)), false},
		{"a route Accepted whose references cannot be resolved does not", route(acceptedAt(1), refsAt(1, metav1.ConditionFalse)), false},
		{"a route resolved but not Accepted does not", route(refsAt(1, metav1.ConditionTrue)), false},
		{"a route Accepted by one Gateway controller and resolved by another does not", route(acceptedAt(1), byAnother("ResolvedRefs")), false},
		{"a route served at an older generation does not", route(servedAt(1), func(r *gatewayv1.HTTPRoute) { r.Generation = 2 }), false},
		{"a route served for another Gateway does not", route(servedAt(1), func(r *gatewayv1.HTTPRoute) { r.Spec.ParentRefs[0].Name = "other" }), false},
		{"a route being deleted does not, whatever its conditions", route(servedAt(1), markDeleting[*gatewayv1.HTTPRoute]), false},
		{"a route without a parent does not", route(servedAt(1), func(r *gatewayv1.HTTPRoute) { r.Spec.ParentRefs = nil }), false},
		{"no object does not", (*gatewayv1.HTTPRoute)(nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			until := untilServes(tc.obj, programmedGateways)
			if got := until == ""; got != tc.want {
				t.Errorf("serves = %v (until %q), want %v", got, until, tc.want)
			}
		})
	}
}

// programmedGateway is a Gateway name in namespace default, Programmed for
// its generation, with an address, as mutate changes it.
func programmedGateway(name string, mutate ...func(*gatewayv1.Gateway)) *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 3}}
	gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", ObservedGeneration: 3}}
	gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Value: "198.51.100.20"}}
	both(mutate...)(gw)
	return gw
}

// programmedGateways finds every Gateway programmed with an address.
func programmedGateways(ns, name string) (*gatewayv1.Gateway, bool) {
	gw := programmedGateway(name)
	gw.Namespace = ns
	return gw, true
}

// TestServesOnAGatewayThatServes: a route Accepted and resolved serves only
// on a Gateway programmed for its generation with an address; a Gateway the
// controller does not watch is taken on the route's word.
func TestServesOnAGatewayThatServes(t *testing.T) {
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Generation: 1}}
	route.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "gw"}}
	servedAt(1)(route)
	only := func(gw *gatewayv1.Gateway) gatewayLookup {
		return func(ns, name string) (*gatewayv1.Gateway, bool) {
			if gw == nil || ns != gw.Namespace || name != gw.Name {
				return nil, true
			}
			return gw, true
		}
	}
	for _, tc := range []struct {
		name     string
		gateways gatewayLookup
		want     bool
	}{
		{"programmed with an address: serves", only(programmedGateway("gw")), true},
		{"not watched: the route's word", noGateways, true},
		{"gone: does not", only(nil), false},
		{"still provisioning (Programmed=False): does not", only(programmedGateway("gw", func(g *gatewayv1.Gateway) { g.Status.Conditions[0].Status = metav1.ConditionFalse })), false},
		{"Programmed for an older generation: does not", only(programmedGateway("gw", func(g *gatewayv1.Gateway) { g.Generation = 4 })), false},
		{"programmed without an address: does not", only(programmedGateway("gw", func(g *gatewayv1.Gateway) { g.Status.Addresses = nil })), false},
		{"being deleted: does not", only(programmedGateway("gw", markDeleting[*gatewayv1.Gateway])), false},
		{"another Gateway programmed: does not", only(programmedGateway("other")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			until := untilServes(route, tc.gateways)
			if got := until == ""; got != tc.want {
				t.Errorf("serves = %v (until %q), want %v", got, until, tc.want)
			}
		})
	}
}
