package ingressmanager

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// IngressOnlyFamily is a family of annotations that only an Ingress
// controller (or a tool that watches Ingresses) reads: on an HTTPRoute they
// mean nothing. Access lists those of its keys that restrict who may reach
// the Service; a Service whose ingress/annotations sets one stays on its
// Ingress instead of moving to an HTTPRoute until the user acknowledges the
// loss (AnnotationGatewayAcknowledged) or removes the key.
type IngressOnlyFamily struct {
	// Reader names what reads the family, for messages and the docs.
	Reader string
	// Prefix is what every key of the family starts with.
	Prefix string
	// Access lists the keys, after Prefix, that restrict access; one
	// ending in "*" stands for every key that starts with what precedes it.
	Access []string
	// Instead says what takes the family's place with the Gateway API.
	Instead string
}

// ingressOnlyFamilies is the list of IngressOnlyFamilies, by Prefix. Keys
// of other families (external-dns.alpha.kubernetes.io/ reads both kinds,
// konghq.com/ is read on HTTPRoutes too, and anything unknown) are copied
// onto the HTTPRoute without a word.
var ingressOnlyFamilies = []IngressOnlyFamily{
	{Reader: "AWS Load Balancer Controller", Prefix: "alb.ingress.kubernetes.io/",
		Access:  []string{"auth-*", "inbound-cidrs", "security-groups", "wafv2-acl-arn", "waf-acl-id", "mutual-authentication"},
		Instead: "its Gateway API configuration (LoadBalancerConfiguration, ListenerRuleConfiguration)"},
	{Reader: "Azure Application Gateway Ingress Controller", Prefix: "appgw.ingress.kubernetes.io/",
		Access:  []string{"waf-policy-for-path"},
		Instead: "Application Gateway for Containers' policies"},
	{Reader: "F5 NGINX App Protect WAF, through F5 NGINX Ingress Controller", Prefix: "appprotect.f5.com/",
		Access:  []string{"app-protect-enable", "app-protect-policy"},
		Instead: "F5 NGINX Gateway Fabric's WAF policies"},
	{Reader: "cert-manager's ingress-shim", Prefix: "cert-manager.io/",
		Instead: "the same annotations on the Gateway, whose listeners terminate TLS"},
	{Reader: "HAProxy Ingress", Prefix: "haproxy-ingress.github.io/",
		Access:  []string{"auth-*", "allowlist-source-range", "denylist-source-range", "whitelist-source-range", "blacklist-source-range", "oauth"},
		Instead: "the Gateway implementation's policy resources"},
	{Reader: "HAProxy Kubernetes Ingress Controller", Prefix: "haproxy.org/",
		Access:  []string{"auth-*", "allow-list", "deny-list", "whitelist", "blacklist", "backend-config-snippet", "frontend-config-snippet"},
		Instead: "the Gateway implementation's policy resources"},
	{Reader: "GKE Ingress", Prefix: "ingress.gcp.kubernetes.io/",
		Instead: "GKE Gateway policies (GCPBackendPolicy, GCPGatewayPolicy)"},
	{Reader: "ingress-nginx (and older Ingress controllers)", Prefix: "ingress.kubernetes.io/",
		Access:  []string{"auth-*", "whitelist-source-range", "allowlist-source-range", "denylist-source-range"},
		Instead: "the Gateway implementation's policy resources"},
	{Reader: "every Ingress controller (class) and GKE Ingress", Prefix: "kubernetes.io/ingress.",
		Instead: "the Gateway's class and listeners"},
	{Reader: "F5 NGINX Ingress Controller (NGINX Plus)", Prefix: "nginx.com/",
		Access:  []string{"jwt-*"},
		Instead: "F5 NGINX Gateway Fabric's policies and HTTPRoute filters"},
	{Reader: "ingress-nginx", Prefix: "nginx.ingress.kubernetes.io/",
		Access: []string{"auth-*", "whitelist-source-range", "allowlist-source-range", "denylist-source-range",
			"configuration-snippet", "server-snippet"},
		Instead: "the Gateway implementation's policies (e.g. Envoy Gateway's SecurityPolicy) and HTTPRoute filters"},
	{Reader: "F5 NGINX Ingress Controller", Prefix: "nginx.org/",
		Access:  []string{"basic-auth-secret", "policies", "server-snippets", "location-snippets"},
		Instead: "F5 NGINX Gateway Fabric's policies (e.g. its SnippetsFilter) and HTTPRoute filters"},
	{Reader: "Contour", Prefix: "projectcontour.io/",
		Instead: "Contour's Gateway API support and HTTPRoute filters"},
	{Reader: "Traefik", Prefix: "traefik.ingress.kubernetes.io/",
		Access:  []string{"router.middlewares", "router.tls.options"},
		Instead: "HTTPRoute filters of type ExtensionRef naming the same Middlewares, and TLS options on the Gateway"},
	{Reader: "Skipper", Prefix: "zalando.org/",
		Access:  []string{"skipper-filter", "skipper-predicate"},
		Instead: "Skipper's RouteGroups"},
}

// IngressOnlyFamilies returns the annotation families only an Ingress
// controller reads, and which of their keys restrict access, by prefix.
func IngressOnlyFamilies() []IngressOnlyFamily {
	return slices.Clone(ingressOnlyFamilies)
}

// family returns the family key belongs to, nil for none.
func family(key string) *IngressOnlyFamily {
	for i := range ingressOnlyFamilies {
		if strings.HasPrefix(key, ingressOnlyFamilies[i].Prefix) {
			return &ingressOnlyFamilies[i]
		}
	}
	return nil
}

// restrictsAccess reports whether key, of family f, restricts access.
func (f *IngressOnlyFamily) restrictsAccess(key string) bool {
	name := strings.TrimPrefix(key, f.Prefix)
	return slices.ContainsFunc(f.Access, func(a string) bool {
		if p, ok := strings.CutSuffix(a, "*"); ok {
			return strings.HasPrefix(name, p)
		}
		return name == a
	})
}

// parseAcknowledged reads ingress/gateway-acknowledged of ann: keys,
// separated by commas, or "*" for all of them.
func parseAcknowledged(ann map[string]string) (keys []string, all bool) {
	for k := range strings.SplitSeq(ann[AnnotationGatewayAcknowledged], ",") {
		switch k = strings.TrimSpace(k); k {
		case "":
		case "*":
			all = true
		default:
			keys = append(keys, k)
		}
	}
	return keys, all
}

// untranslatedIngressOnly returns the keys of annotations
// (ingress/annotations) that only an Ingress controller reads and the
// translation table does not, sorted.
func untranslatedIngressOnly(annotations map[string]string) []string {
	var out []string
	for k := range annotations {
		if family(k) != nil && !translated(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// guardedKeys returns the keys that keep the Service on its Ingress,
// sorted by key: those of ingress/annotations an HTTPRoute cannot carry
// (in.Blocking), and those set on the Service's own Ingress itself (by
// hand or by another tool) that restrict access or that the translation
// table reads, which an HTTPRoute would serve without just the same,
// unless ingress/gateway-acknowledged lists them. onIngress lists the keys
// of the second kind. An Ingress being deleted takes its keys with it.
// Keys that fieldManager owns on the Ingress were put there from
// ingress/annotations, not on the Ingress itself: gone from there, they
// are gone from the Ingress at its next write, and hold nothing meanwhile
// (the Ingress may not be written at all, its Ingress-only settings bad).
func guardedKeys(in *Intent, svc *corev1.Service, ing *networkingv1.Ingress, fieldManager string) (keys []BlockedKey, onIngress []string) {
	keys = slices.Clone(in.Blocking)
	if ing != nil && isControlledBy(ing, svc) && !isBeingDeleted(ing) {
		var own map[string]bool
		for k := range ing.Annotations {
			f := family(k)
			if f == nil || !f.restrictsAccess(k) && !translated(k) || in.ackAll || slices.Contains(in.acked, k) {
				continue
			}
			if _, ours := in.Annotations[k]; ours {
				continue
			}
			if own == nil {
				own = ownedAnnotations(ing, fieldManager)
			}
			if own[k] {
				continue
			}
			onIngress = append(onIngress, k)
			b := BlockedKey{Key: k, Why: fmt.Sprintf("is set on Ingress %s itself, not in %s, so an HTTPRoute does not carry it", ing.Name, AnnotationAnnotations)}
			if f.restrictsAccess(k) {
				b = accessKey(k)
			}
			keys = append(keys, b)
		}
	}
	slices.Sort(onIngress)
	slices.SortFunc(keys, func(a, b BlockedKey) int { return strings.Compare(a.Key, b.Key) })
	return slices.CompactFunc(keys, func(a, b BlockedKey) bool { return a.Key == b.Key }), onIngress
}

// describeBlocked lists blocked keys with why, for a message.
func describeBlocked(keys []BlockedKey) string {
	const max = 10
	parts := make([]string, 0, min(len(keys), max))
	for i, b := range keys {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-max))
			break
		}
		parts = append(parts, b.Key+" "+b.Why)
	}
	return strings.Join(parts, "; ")
}

// describeKeys lists keys with what reads them, for a message.
func describeKeys(keys []string) string {
	var readers []string
	byReader := map[string][]string{}
	for _, k := range keys {
		r := family(k).Reader
		if _, ok := byReader[r]; !ok {
			readers = append(readers, r)
		}
		byReader[r] = append(byReader[r], k)
	}
	parts := make([]string, 0, len(readers))
	for _, r := range readers {
		parts = append(parts, fmt.Sprintf("%s (%s)", listSome(byReader[r]), r))
	}
	return strings.Join(parts, "; ")
}

// insteadOf says what takes the place of keys' families on the Gateway side.
func insteadOf(keys []string) string {
	var out []string
	for _, k := range keys {
		f := family(k)
		if s := f.Reader + ": " + f.Instead; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
}
