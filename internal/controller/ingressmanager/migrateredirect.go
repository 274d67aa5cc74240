package ingressmanager

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ingress-nginx redirects plain HTTP to HTTPS (308) for the hosts of an
// Ingress's spec.tls unless ssl-redirect is "false", and for every host
// with force-ssl-redirect. A route cannot tell the scheme of a request,
// and the Gateway API gives a tie between two routes of the same host and
// path to the older one, so the redirect takes two routes on two sets of
// listeners: the Ingress's route on the Gateway's HTTPS listener alone
// (its parent names that listener), and a second route, the redirect
// route, on the Gateway's plain-HTTP listeners that take the hosts,
// answering every match of the first with a RequestRedirect of scheme
// https. The redirect route is made, and accepted on each of its
// listeners, before the Ingress's route is made (or moved onto the HTTPS
// listener), so that no plain-HTTP request to the Gateway is left
// unanswered; it is deleted once the Ingress's route is gone or serves
// without it. It is never in external-dns (its hosts are the route's):
// its external-dns controller annotations name it.

const (
	// redirectRouteSuffix makes the name of the redirect route of an
	// Ingress from the Ingress's.
	redirectRouteSuffix = "-https-redirect"
	// redirectDNSController is the value of the redirect route's
	// external-dns controller annotations: anything but "dns-controller"
	// makes external-dns skip an object, and this one says why.
	redirectDNSController = "ingress-manager-https-redirect"
)

// redirectRouteName is the name of the redirect route of the Ingress
// name.
func redirectRouteName(name string) string { return name + redirectRouteSuffix }

// httpsRedirectPlan is where the redirect of a migration goes.
type httpsRedirectPlan struct {
	HTTPSRedirect
	// Hosts are the hosts redirected: the route's.
	Hosts []string
	// HTTPSListener is the listener the Ingress's route is attached to;
	// HTTPListeners those the redirect route is, in the Gateway's order.
	HTTPSListener string
	HTTPListeners []string
}

// planHTTPSRedirect decides, for the HTTPS redirect the translation of the
// Ingress carries (m.Carried.HTTPSRedirect), whether it is needed and on
// which listeners; when it cannot be rendered, its keys block, saying why.
func (m *Migration) planHTTPSRedirect(in migrationInput, hosts, tlsHosts []string) {
	c := &m.Carried
	r := c.HTTPSRedirect
	if r == nil {
		return
	}
	c.HTTPSRedirect = nil
	redirected := tlsHosts
	if r.Force {
		redirected = hosts
	}
	if len(redirected) == 0 {
		c.noHTTPSRedirect("nothing: ingress-nginx redirects only hosts with TLS, and the Ingress has none (spec.tls)")
		return
	}
	if len(redirected) < len(hosts) {
		var plain []string
		for _, h := range hosts {
			if !slices.Contains(redirected, h) {
				plain = append(plain, h)
			}
		}
		c.blockHTTPSRedirect(fmt.Sprintf("has ingress-nginx redirect plain HTTP to HTTPS for %s, which have TLS, and serve plain HTTP for %s, which do not; "+
			"an HTTPRoute's listeners apply to all its hosts: make one Ingress for each, or set force-ssl-redirect", listSome(redirected), listSome(plain)))
		return
	}
	if len(redirectRouteName(in.Ingress.Name)) > 253 {
		c.blockHTTPSRedirect(fmt.Sprintf("takes a second HTTPRoute, %s, whose name is longer than 253 characters", quote(redirectRouteName(in.Ingress.Name))))
		return
	}
	gw := in.Gateway
	switch {
	case m.Gateway == nil:
		return // no route at all; the Gateway's problem says why
	case !in.GatewayVisible:
		c.blockHTTPSRedirect(fmt.Sprintf("redirects plain HTTP to HTTPS, which takes the listeners of Gateway %s, which the controller does not watch", m.Gateway))
		return
	case gw == nil:
		c.blockHTTPSRedirect(fmt.Sprintf("redirects plain HTTP to HTTPS, which takes the listeners of Gateway %s, which does not exist", m.Gateway))
		return
	}
	takesAll := func(l gatewayv1.Listener) bool {
		return !slices.ContainsFunc(redirected, func(h string) bool { return !listenerTakes(l.Hostname, h) })
	}
	takesAny := func(l gatewayv1.Listener) bool {
		return slices.ContainsFunc(redirected, func(h string) bool { return listenerTakes(l.Hostname, h) })
	}
	var https, http []string
	for _, l := range gw.Spec.Listeners {
		switch {
		case l.Protocol == gatewayv1.HTTPSProtocolType && (m.Listener == "" || string(l.Name) == m.Listener) && takesAll(l):
			https = append(https, string(l.Name))
		case l.Protocol == gatewayv1.HTTPProtocolType && takesAny(l):
			http = append(http, string(l.Name))
		}
	}
	switch {
	case len(https) == 0 && m.Listener != "":
		c.blockHTTPSRedirect(fmt.Sprintf("redirects plain HTTP to HTTPS, and %s %s of Gateway %s is no HTTPS listener that takes %s",
			AnnotationGatewayListener, quote(m.Listener), m.Gateway, listSome(redirected)))
		return
	case len(https) == 0:
		c.blockHTTPSRedirect(fmt.Sprintf("redirects plain HTTP to HTTPS, and no HTTPS listener of Gateway %s takes all of %s: make one Ingress per host", m.Gateway, listSome(redirected)))
		return
	case len(https) > 1:
		c.blockHTTPSRedirect(fmt.Sprintf("redirects plain HTTP to HTTPS, and HTTPS listeners %s of Gateway %s all take %s: name the one to use in %s",
			strings.Join(https, ", "), m.Gateway, listSome(redirected), AnnotationGatewayListener))
		return
	case len(http) == 0:
		c.blockHTTPSRedirect(fmt.Sprintf("redirects plain HTTP to HTTPS, and no plain-HTTP listener of Gateway %s takes %s to redirect from: add one, or acknowledge the key to answer only HTTPS",
			m.Gateway, listSome(redirected)))
		return
	case len(http) > maxParentRefs:
		c.blockHTTPSRedirect(fmt.Sprintf("redirects plain HTTP to HTTPS on the %d plain-HTTP listeners of Gateway %s that take %s, more than an HTTPRoute's %d parents",
			len(http), m.Gateway, listSome(redirected), maxParentRefs))
		return
	}
	m.Redirect = &httpsRedirectPlan{HTTPSRedirect: *r, Hosts: redirected, HTTPSListener: https[0], HTTPListeners: http}
}

// redirectRoute renders the redirect route of the Ingress ing whose route
// is route (rendered): its name, the marker of the Ingress, external-dns
// kept off it, one parent per plain-HTTP listener, the route's hostnames,
// and one rule redirecting every match of the route's rules to HTTPS.
func redirectRoute(ing *networkingv1.Ingress, gw GatewayRef, p *httpsRedirectPlan, route *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
	out := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{
		Name: redirectRouteName(ing.Name), Namespace: ing.Namespace,
		Annotations: map[string]string{AnnotationMigratedFrom: string(ing.UID)},
	}}
	for _, k := range externalDNSControllerKeys {
		out.Annotations[k] = redirectDNSController
	}
	for _, l := range p.HTTPListeners {
		out.Spec.ParentRefs = append(out.Spec.ParentRefs, gatewayParent(gw, ing.Namespace, l))
	}
	out.Spec.Hostnames = slices.Clone(route.Spec.Hostnames)
	var matches []gatewayv1.HTTPRouteMatch
	seen := map[string]bool{}
	for _, rule := range route.Spec.Rules {
		for _, match := range rule.Matches {
			key := fmt.Sprintf("%v", match)
			if match.Path != nil {
				key = string(ptr.Deref(match.Path.Type, "")) + " " + ptr.Deref(match.Path.Value, "")
			}
			if !seen[key] {
				seen[key] = true
				matches = append(matches, *match.DeepCopy())
			}
		}
	}
	out.Spec.Rules = []gatewayv1.HTTPRouteRule{httpsRedirectRule(p.HTTPSRedirect, matches)}
	return out
}

// isRedirectRouteOf reports whether route is the redirect route made from
// the Ingress ing.
func isRedirectRouteOf(route *gatewayv1.HTTPRoute, ing *networkingv1.Ingress, fieldManager string) bool {
	return route != nil && route.Name == redirectRouteName(ing.Name) && isMigratedFrom(route, ing, fieldManager)
}

// redirectUntilServes is untilServes for a redirect route: every one of
// the parents it is for (want, each a plain-HTTP listener; those of
// Gateways the Ingress's route moves away from, kept meanwhile, are not
// asked) accepts it, and its Gateway serves.
func redirectUntilServes(route *gatewayv1.HTTPRoute, want []gatewayv1.ParentReference, gateways gatewayLookup) string {
	for _, p := range want {
		key := parentKey(p, route.Namespace)
		if !slices.ContainsFunc(route.Spec.ParentRefs, func(q gatewayv1.ParentReference) bool { return parentKey(q, route.Namespace) == key }) {
			return fmt.Sprintf("HTTPRoute %s is attached to Gateway %s (listener %s)", route.Name, gatewayName(p, route.Namespace), ptr.Deref(p.SectionName, ""))
		}
		one := *route // a shallow copy whose parents are p alone; route is not changed
		one.Spec.ParentRefs = []gatewayv1.ParentReference{p}
		if until := untilServes(&one, gateways); until != "" {
			if p.SectionName != nil {
				return fmt.Sprintf("%s (listener %s)", until, *p.SectionName)
			}
			return until
		}
	}
	if len(want) == 0 {
		return untilServes(route, gateways)
	}
	return ""
}

// redirectParentsDuringMove adds to desired, the redirect route as the
// Ingress asks, the parents of live (the redirect route as it is) on the
// Gateways other than desired's that route, the Ingress's route as it is,
// is still attached to: moving between Gateways, the route keeps the one
// it moves away from until its new one serves it (parentsDuringMove), and
// that Gateway's plain-HTTP listeners keep redirecting as long. Up to the
// Gateway API's limit of parents.
func redirectParentsDuringMove(live, route, desired *gatewayv1.HTTPRoute) {
	if live == nil || route == nil {
		return
	}
	ns := desired.Namespace
	target := map[string]bool{}
	for _, p := range desired.Spec.ParentRefs {
		target[gatewayName(p, ns)] = true
	}
	routeOn := map[string]bool{}
	for _, p := range route.Spec.ParentRefs {
		if isGatewayRef(p) {
			routeOn[gatewayName(p, route.Namespace)] = true
		}
	}
	for _, p := range live.Spec.ParentRefs {
		gw := gatewayName(p, live.Namespace)
		if !isGatewayRef(p) || target[gw] || !routeOn[gw] || len(desired.Spec.ParentRefs) >= maxParentRefs ||
			!canShareRoute(desired.Spec.ParentRefs, p, ns) {
			continue
		}
		desired.Spec.ParentRefs = append(desired.Spec.ParentRefs, p)
	}
}

// defaultedSSLRedirect reports whether ingress-nginx's default of
// ssl-redirect ("true") applies to ing, whose TLS hosts are tlsHosts: the
// class nginx, hosts with TLS, and ssl-redirect not set. The translation
// then takes it as set. force-ssl-redirect is another key: "false" (or a
// value ingress-nginx ignores) leaves ssl-redirect's default in force, and
// "true" redirects every host whatever ssl-redirect says, so that only
// "true" needs no default.
func defaultedSSLRedirect(ing *networkingv1.Ingress, tlsHosts []string) bool {
	_, set := ing.Annotations[nginxSSLRedirect]
	force, err := strconv.ParseBool(ing.Annotations[nginxForceSSLRedirect])
	return len(tlsHosts) > 0 && ingressClass(ing) == "nginx" && !set && (err != nil || !force)
}

// withDefaultSSLRedirect returns ann with ssl-redirect "true" added.
func withDefaultSSLRedirect(ann map[string]string) map[string]string {
	out := maps.Clone(ann)
	out[nginxSSLRedirect] = "true"
	return out
}

// markDefaulted says, in what c says of ssl-redirect, that it was not set
// and is ingress-nginx's default.
func (c *Carried) markDefaulted() {
	const prefix = "not set, ingress-nginx's default \"true\": "
	if e, ok := c.Effects[nginxSSLRedirect]; ok {
		c.Effects[nginxSSLRedirect] = prefix + e
	}
	for i := range c.Blocking {
		if c.Blocking[i].Key == nginxSSLRedirect {
			c.Blocking[i].Why = prefix + c.Blocking[i].Why
		}
	}
}
