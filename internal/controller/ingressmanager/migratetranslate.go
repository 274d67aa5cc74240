package ingressmanager

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// translateIngressAnnotations is the translation of a user's Ingress's
// annotations the rendering of its route uses: the translation table's
// (translate), and besides, every key of the other families only an
// Ingress controller reads (IngressOnlyFamilies) blocks. On a Service's
// route those are copied with a Warning (IgnoredForHTTPRoute), as the
// Service's owner wrote them for its Ingress; a user's Ingress is read by
// its own controller, whose behaviour the route would drop without a word.
func translateIngressAnnotations(ann map[string]string, supported sets.Set[features.FeatureName]) Carried {
	return translateIngressAnnotationsRedirecting(ann, supported, DefaultHTTPRedirectCode)
}

// translateIngressAnnotationsRedirecting is translateIngressAnnotations
// redirecting plain HTTP to HTTPS with redirectCode (see
// translateRedirecting).
func translateIngressAnnotationsRedirecting(ann map[string]string, supported sets.Set[features.FeatureName], redirectCode int) Carried {
	c := translateRedirecting(ann, supported, redirectCode)
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		if f := family(k); f != nil && !translated(k) {
			c.Blocking = append(c.Blocking, BlockedKey{Key: k, Access: f.restrictsAccess(k),
				Why: fmt.Sprintf("read only by %s; with the Gateway API use instead %s", f.Reader, f.Instead)})
		}
	}
	slices.SortFunc(c.Blocking, func(a, b BlockedKey) int { return strings.Compare(a.Key, b.Key) })
	return c
}
