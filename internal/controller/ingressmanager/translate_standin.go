package ingressmanager

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// This file is a stand-in for the translation table (translate.go): what
// the rendering of a user's Ingress's route (migrate.go) asks of it
// (translate, then Carried's checkPaths, forOneRoute and applyTo), and an
// answer that carries nothing. Merged with the real table, this file goes
// and translateIngressAnnotations names translate.

// Carried is what an Ingress's annotations add to its HTTPRoute.
type Carried struct {
	// Filters are every rule's filters, in order.
	Filters []gatewayv1.HTTPRouteFilter
	// Timeouts are every rule's timeouts; nil for none.
	Timeouts *gatewayv1.HTTPRouteTimeouts
	// Keys are the keys carried, sorted.
	Keys []string
	// Blocking are the keys that cannot be carried, sorted by key.
	Blocking []BlockedKey
	// Features are the extended features the rendering needs.
	Features []features.FeatureName
}

// BlockedKey is an annotation that cannot be carried onto an HTTPRoute,
// and why.
type BlockedKey struct {
	Key, Why string
}

// translateIngressAnnotations is the translation of an Ingress's
// annotations the rendering uses.
var translateIngressAnnotations = translateStandIn

// translateStandIn carries nothing, and blocks every key of the families
// only an Ingress controller reads (IngressOnlyFamilies): on an HTTPRoute
// they would mean nothing.
func translateStandIn(ann map[string]string, _ sets.Set[features.FeatureName]) Carried {
	var out Carried
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		if f := family(k); f != nil {
			out.Blocking = append(out.Blocking, BlockedKey{Key: k, Why: fmt.Sprintf("read only by %s; with the Gateway API use instead %s", f.Reader, f.Instead)})
		}
	}
	return out
}

// checkPaths blocks what cannot be carried for rules matching paths.
func (c *Carried) checkPaths([]string) {}

// forOneRoute takes out of c what one HTTPRoute alone cannot carry.
func (c *Carried) forOneRoute(tls bool) {}

// applyTo renders c into every rule of route: its filters and timeouts.
func (c *Carried) applyTo(route *gatewayv1.HTTPRoute) {
	for i := range route.Spec.Rules {
		rule := &route.Spec.Rules[i]
		for _, f := range c.Filters {
			rule.Filters = append(rule.Filters, *f.DeepCopy())
		}
		if c.Timeouts != nil {
			rule.Timeouts = c.Timeouts.DeepCopy()
		}
	}
}
