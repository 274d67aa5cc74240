package ingressmanager

import (
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// This file is the one home of "this object serves the Service". Every
// decision that depends on it asks untilServes (or serves): the move (the
// old object is kept until the new one serves), the retirement of the old
// object (withdrawn from external-dns, drained, deleted), the return of a
// withdrawn object to external-dns, and the URL written back on the
// Service. So they cannot disagree.

// gatewayLookup finds the Gateway namespace/name a route is for; visible
// is false when the controller does not watch it (Gateways not served, or
// outside the one namespace the manager watches), and gw nil when it is
// watched and does not exist.
type gatewayLookup func(namespace, name string) (gw *gatewayv1.Gateway, visible bool)

// noGateways is the lookup of a controller that watches no Gateway.
func noGateways(string, string) (*gatewayv1.Gateway, bool) { return nil, false }

// untilServes returns what has to happen before obj serves, for a message
// ("Keeping ... until <it>"), or "" when it serves:
//
//   - an object being deleted never serves: a finalizer holds it while what
//     served it is torn down, its status (an address, Accepted=True) as it
//     was;
//   - an Ingress serves once its Ingress controller published an address in
//     status.loadBalancer.ingress, the only sign Ingress has (no condition,
//     no observedGeneration);
//   - an HTTPRoute serves once, for the parent it is made for (the first of
//     spec.parentRefs; the others are the Gateways it moves away from, see
//     parentsDuringMove), one Gateway controller reports both
//     Accepted=True and ResolvedRefs=True with the route's current
//     generation as their observedGeneration: accepted alone, a route
//     whose backend cannot be resolved answers 500; of an older
//     generation, the conditions may be for another parent, host or
//     backend; and on a Gateway that is Programmed=True for its current
//     generation and has an address in status.addresses: a Gateway still
//     provisioning accepts routes that nothing serves yet, and
//     external-dns publishes a route's host at its Gateway's addresses.
//     A Gateway the controller does not watch (RBAC without list on
//     gateways, the manager confined to another namespace by --namespace,
//     or a cluster serving no Gateways) is taken on the route's word
//     alone.
func untilServes(obj metav1.Object, gateways gatewayLookup) string {
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		if o != nil {
			return ingressUntilServes(o)
		}
	case *gatewayv1.HTTPRoute:
		if o != nil {
			if until := routeUntilServes(o); until != "" {
				return until
			}
			return routeGatewayUntilServes(o, gateways)
		}
	}
	return "there is an Ingress or HTTPRoute"
}

func ingressUntilServes(ing *networkingv1.Ingress) string {
	switch {
	case isBeingDeleted(ing):
		return fmt.Sprintf("Ingress %s, which is being deleted, is gone and its replacement has an address (status.loadBalancer.ingress)", ing.Name)
	case len(ing.Status.LoadBalancer.Ingress) == 0:
		return fmt.Sprintf("Ingress %s has an address (status.loadBalancer.ingress), set by the Ingress controller once it serves it", ing.Name)
	}
	return ""
}

func routeUntilServes(route *gatewayv1.HTTPRoute) string {
	if len(route.Spec.ParentRefs) == 0 {
		return fmt.Sprintf("HTTPRoute %s names a Gateway (spec.parentRefs)", route.Name)
	}
	if isBeingDeleted(route) {
		return fmt.Sprintf("HTTPRoute %s, which is being deleted, is gone and Gateway %s accepts its replacement",
			route.Name, gatewayName(route.Spec.ParentRefs[0], route.Namespace))
	}
	for _, parent := range route.Spec.ParentRefs[:1] {
		gw := gatewayName(parent, route.Namespace)
		accepted, acceptedBefore, both := false, false, false
		for _, st := range parentStatuses(route, parent) {
			acc, res := false, false
			for _, cond := range st.Conditions {
				if cond.Status != metav1.ConditionTrue {
					continue
				}
				current := cond.ObservedGeneration == route.Generation
				switch cond.Type {
				case string(gatewayv1.RouteConditionAccepted):
					acc = acc || current
					acceptedBefore = acceptedBefore || !current
				case string(gatewayv1.RouteConditionResolvedRefs):
					res = res || current
				}
			}
			accepted = accepted || acc
			both = both || acc && res
		}
		switch {
		case both:
			continue
		case accepted:
			return fmt.Sprintf("Gateway %s resolves the references of HTTPRoute %s (status.parents[].conditions ResolvedRefs=True for its generation %d)", gw, route.Name, route.Generation)
		case acceptedBefore:
			return fmt.Sprintf("Gateway %s accepts generation %d of HTTPRoute %s (its Accepted=True is of an older generation)", gw, route.Generation, route.Name)
		default:
			return fmt.Sprintf("Gateway %s accepts HTTPRoute %s (status.parents[].conditions Accepted=True)", gw, route.Name)
		}
	}
	return ""
}

// whyServes says, for a message, why obj serves (untilServes is "").
func whyServes(own owner, obj metav1.Object) string {
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		return fmt.Sprintf("%s on Ingress %s, which has an address", own.subject(), o.Name)
	case *gatewayv1.HTTPRoute:
		return fmt.Sprintf("Gateway %s accepted HTTPRoute %s, which replaces it, and resolved its references",
			gatewayName(o.Spec.ParentRefs[0], o.Namespace), o.Name)
	}
	return ""
}

// routeGatewayUntilServes is untilServes's part on the Gateway a route is
// for.
func routeGatewayUntilServes(route *gatewayv1.HTTPRoute, gateways gatewayLookup) string {
	parent := route.Spec.ParentRefs[0]
	if !isGatewayRef(parent) {
		return ""
	}
	ns := gatewayNamespace(parent, route.Namespace)
	gw, visible := gateways(ns, string(parent.Name))
	switch {
	case !visible:
		return ""
	case gw == nil:
		return fmt.Sprintf("Gateway %s/%s, which HTTPRoute %s is for, exists", ns, parent.Name, route.Name)
	}
	return untilGatewayServes(gw)
}

// untilGatewayServes returns what has to happen before gw serves the
// routes it accepted, or "".
func untilGatewayServes(gw *gatewayv1.Gateway) string {
	programmed := false
	for _, c := range gw.Status.Conditions {
		if c.Type == string(gatewayv1.GatewayConditionProgrammed) && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gw.Generation {
			programmed = true
		}
	}
	switch {
	case gw.DeletionTimestamp != nil:
		return fmt.Sprintf("Gateway %s/%s, which is being deleted, is replaced", gw.Namespace, gw.Name)
	case !programmed:
		return fmt.Sprintf("Gateway %s/%s is programmed (status.conditions Programmed=True for its generation %d)", gw.Namespace, gw.Name, gw.Generation)
	case len(gw.Status.Addresses) == 0:
		return fmt.Sprintf("Gateway %s/%s has an address (status.addresses), which external-dns publishes its routes' hosts at", gw.Namespace, gw.Name)
	}
	return ""
}

// isGatewayRef reports whether p refers to a Gateway (its group and kind
// defaulted as the API does).
func isGatewayRef(p gatewayv1.ParentReference) bool {
	return (p.Group == nil || string(*p.Group) == gatewayv1.GroupName) && (p.Kind == nil || *p.Kind == "Gateway")
}

// parentStatuses returns the entries of route's status for parent (one per
// Gateway controller that reports on it).
func parentStatuses(route *gatewayv1.HTTPRoute, parent gatewayv1.ParentReference) []gatewayv1.RouteParentStatus {
	var out []gatewayv1.RouteParentStatus
	want := parentKey(parent, route.Namespace)
	for _, st := range route.Status.Parents {
		if parentKey(st.ParentRef, route.Namespace) == want {
			out = append(out, st)
		}
	}
	return out
}

// parentKey spells out a parentRef with its defaults, for comparison.
func parentKey(p gatewayv1.ParentReference, routeNamespace string) string {
	group, kind, section, port := gatewayv1.GroupName, "Gateway", "", ""
	if p.Group != nil {
		group = string(*p.Group)
	}
	if p.Kind != nil {
		kind = string(*p.Kind)
	}
	if p.SectionName != nil {
		section = string(*p.SectionName)
	}
	if p.Port != nil {
		port = fmt.Sprint(*p.Port)
	}
	return strings.Join([]string{group, kind, gatewayName(p, routeNamespace), section, port}, "/")
}

// gatewayName is the <namespace>/<name> of the Gateway p refers to from a
// route in routeNamespace.
func gatewayName(p gatewayv1.ParentReference, routeNamespace string) string {
	return gatewayNamespace(p, routeNamespace) + "/" + string(p.Name)
}

// gatewayNamespace is the namespace of the Gateway p refers to from a route
// in routeNamespace.
func gatewayNamespace(p gatewayv1.ParentReference, routeNamespace string) string {
	if p.Namespace != nil && *p.Namespace != "" {
		return string(*p.Namespace)
	}
	return routeNamespace
}

// conditionID identifies a condition of a route, for once-per-change Events.
func conditionID(route *gatewayv1.HTTPRoute, cond metav1.Condition) string {
	return fmt.Sprintf("%s/%d/%s/%s/%s", route.UID, cond.ObservedGeneration, cond.Status, cond.Reason, cond.Message)
}
