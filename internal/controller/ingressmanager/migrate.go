package ingressmanager

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// A user's Ingress (one no Service controls) opts in to a move to the
// Gateway API with ingress/gateway, as a Service does. The controller then
// makes an HTTPRoute of the Ingress's name from its rules (renderMigration)
// and moves it there as it moves a Service (move), the Ingress being the
// old end: withdrawn from external-dns once the route serves, drained, then
// kept (withdrawn) or deleted as ingress/delete-after-move says. The route
// has no owner reference (the garbage collector would delete it with the
// Ingress): AnnotationMigratedFrom names the Ingress's UID, and only then is
// it the Ingress's (isMigratedFrom).

// Annotation keys read on a user's Ingress that moves to an HTTPRoute,
// besides ingress/gateway, ingress/gateway-listener and
// ingress/gateway-acknowledged, read as on a Service (the Gateway's
// namespace defaults to the Ingress's; the acknowledged keys are the
// Ingress's own annotations, and spec.tls).
const (
	// AnnotationDeleteAfterMove, "true" on an Ingress that carries
	// ingress/gateway, has the Ingress deleted once its HTTPRoute served
	// and the DNS drain (--ingress-move-dns-drain) passed, with its UID and
	// resourceVersion as preconditions. Default ("false"): the Ingress
	// stays, withdrawn from external-dns.
	AnnotationDeleteAfterMove = "ingress/delete-after-move"
)

// Annotation keys written on the HTTPRoute made from a user's Ingress.
const (
	// AnnotationMigratedFrom holds the UID of the Ingress the HTTPRoute was
	// made from. The controller takes a route for that Ingress's own only
	// when it names the UID of the Ingress of the route's name, the
	// controller's field manager wrote it (the UID is no secret), and nothing
	// controls the route; once the Ingress is gone the route is its user's.
	AnnotationMigratedFrom = "ingress/migrated-from"
)

// Event reasons on a user's Ingress that moves to an HTTPRoute, besides
// those of the writes, the route's status and the DNS cut-over, as on a
// Service.
const (
	// ReasonMigrationBlocked (Warning): annotations of the Ingress that the
	// HTTPRoute cannot carry (or spec.tls no HTTPS listener of the Gateway
	// takes) keep it on its Ingress until ingress/gateway-acknowledged
	// lists them or they are removed.
	ReasonMigrationBlocked = "MigrationBlocked"
	// ReasonMigrationUnsupported (Warning): the Ingress has a shape the
	// rendering of its HTTPRoute does not handle (the message says which
	// and why), or a backend that cannot be resolved; it stays on its
	// Ingress, and a route made earlier is left as it is.
	ReasonMigrationUnsupported = "MigrationUnsupported"
	// ReasonInvalidDeleteAfterMove (Warning): ingress/delete-after-move is
	// neither "true" nor "false"; the Ingress is kept.
	ReasonInvalidDeleteAfterMove = "InvalidDeleteAfterMove"
	// ReasonGatewayOnServiceIngress (Warning, on the Ingress): the
	// Ingress a Service controls carries ingress/gateway, which is read
	// only on a Service or on a user's own Ingress: that Service moves its
	// Ingress by its own annotations.
	ReasonGatewayOnServiceIngress = "GatewayAnnotationIgnored"
	// ReasonMovedToHTTPRoute (Normal): the Ingress moved to its HTTPRoute
	// and its DNS drain passed; it stays, withdrawn from external-dns (with
	// ingress/delete-after-move: "true" it is deleted instead).
	ReasonMovedToHTTPRoute = "MovedToHTTPRoute"
)

// tlsKey is the key ingress/gateway-acknowledged names for spec.tls: the
// user takes the Gateway's word that it terminates TLS for the hosts.
const tlsKey = "spec.tls"

// Annotations of other tools the rendering reads itself.
const (
	nginxCanary   = "nginx.ingress.kubernetes.io/canary"
	nginxUseRegex = "nginx.ingress.kubernetes.io/use-regex"
	nginxRewrite  = "nginx.ingress.kubernetes.io/rewrite-target"
	// externalDNSPrefixes are read on Ingresses and HTTPRoutes alike: the
	// route gets them (hostname, ttl, target, ...), so that its record is
	// the Ingress's.
	externalDNSPrefixes = "external-dns.alpha.kubernetes.io/ external-dns.kubernetes.io/"
)

// migrationWanted reports whether ing opts in to a move: it carries
// ingress/gateway (not empty) and no Service controls it (a Service's own
// Ingress moves by the Service's annotations).
func migrationWanted(ing *networkingv1.Ingress) bool {
	if ing == nil || serviceControlled(ing) {
		return false
	}
	return strings.TrimSpace(ing.Annotations[AnnotationGateway]) != ""
}

// serviceControlled reports whether a Service controls obj.
func serviceControlled(obj metav1.Object) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && isServiceRef(ref)
}

// migrationInput is what the route of a user's Ingress is rendered from.
type migrationInput struct {
	Ingress *networkingv1.Ingress
	// Services are the Services of the Ingress's namespace its backends
	// name, by name; one absent is not there.
	Services map[string]*corev1.Service
	// Gateway is the Gateway ingress/gateway names, nil when it does not
	// exist; GatewayVisible is false when the controller does not watch
	// it (then TLS cannot be checked).
	Gateway        *gatewayv1.Gateway
	GatewayVisible bool
	// Canaries are the ingress-nginx canaries of the Ingress (canariesOf);
	// the Services their backends name are in Services too.
	Canaries []*networkingv1.Ingress
	// Supported is what the Gateway's class says it supports; nil:
	// unknown.
	Supported sets.Set[features.FeatureName]
	// DefaultGateway, for a plan, is the Gateway of an Ingress that names
	// none; nil: the route of such an Ingress has no parent.
	DefaultGateway *GatewayRef
	// RedirectCode is the status of the redirect of plain HTTP to HTTPS,
	// ingress-nginx's http-redirect-code (--ingress-nginx-http-redirect-code);
	// 0: DefaultHTTPRedirectCode.
	RedirectCode int
	// Translate is the translation of the Ingress's annotations; nil:
	// translateIngressAnnotationsRedirecting with RedirectCode.
	Translate func(map[string]string, sets.Set[features.FeatureName]) Carried
}

// Migration is the route of a user's Ingress as its rules and annotations
// ask, and what keeps the Ingress from moving to it.
type Migration struct {
	// Gateway and Listener are the route's parent (Gateway nil when
	// ingress/gateway is bad).
	Gateway  *GatewayRef
	Listener string
	// DeleteAfterMove is ingress/delete-after-move.
	DeleteAfterMove bool
	// Route is the HTTPRoute; nil when it cannot be rendered (see
	// renderable).
	Route *gatewayv1.HTTPRoute
	// Redirect, when not nil, is where the HTTPS redirect goes (see
	// migrateredirect.go): Route is then on its HTTPS listener alone, and
	// RedirectRoute, on its plain-HTTP listeners, redirects to it.
	Redirect      *httpsRedirectPlan
	RedirectRoute *gatewayv1.HTTPRoute
	// Carried is what the annotations add to the route.
	Carried Carried
	// Blocking are the keys the route cannot carry and
	// ingress/gateway-acknowledged does not list: while there is one the
	// Ingress stays. Acknowledged are those it lists: lost on the move.
	Blocking, Acknowledged []BlockedKey
	// Unsupported says, each, what of the Ingress the rendering does not
	// handle, or cannot resolve, and why: no route can be made.
	Unsupported []string
	// Problems are the bad ingress/* annotations: nothing is made, but for
	// a bad ingress/delete-after-move, which keeps the Ingress.
	Problems []Problem
	// Notes are differences of the route that block nothing.
	Notes []string
	// droppedCanaries are the ingress-nginx canaries of the Ingress whose
	// share the route cannot carry (in Unsupported too).
	droppedCanaries []string
}

// blocked reports whether the Ingress must stay on its Ingress as it is:
// keys block it.
func (m *Migration) blocked() bool { return len(m.Blocking) > 0 }

// renderable reports whether the route could be rendered at all: a bad
// ingress/delete-after-move only keeps the Ingress after the move.
func (m *Migration) renderable() bool {
	return len(m.Unsupported) == 0 && !slices.ContainsFunc(m.Problems, func(p Problem) bool { return p.Annotation != AnnotationDeleteAfterMove })
}

// pathEntry is one path of the Ingress as a route match and backend.
type pathEntry struct {
	match   gatewayv1.PathMatchType
	value   string
	backend string // Service name
	port    int32
}

func (p pathEntry) matchKey() string { return string(p.match) + " " + p.value }

// renderMigration renders the route of in.Ingress, and says what keeps the
// Ingress from moving to it. It is pure: migrate-plan and the controller
// both call it.
func renderMigration(in migrationInput) *Migration {
	ing := in.Ingress
	ann := ing.Annotations
	m := &Migration{}
	m.Gateway, m.Listener, m.DeleteAfterMove, m.Problems = parseMigrationAnnotations(ing)
	if m.Gateway == nil && strings.TrimSpace(ann[AnnotationGateway]) == "" {
		m.Gateway = in.DefaultGateway
	}
	if ref := metav1.GetControllerOfNoCopy(ing); ref != nil {
		m.Unsupported = append(m.Unsupported, fmt.Sprintf("the Ingress is controlled by %s %s, which would undo or fight the move; move what makes it instead", ref.Kind, ref.Name))
	}
	if ingressNGINXCanary(ing) {
		m.Unsupported = append(m.Unsupported, fmt.Sprintf("the Ingress is an ingress-nginx canary (%s): it has no route of its own; its backend joins, weighted, the route of the main Ingress of its hosts and paths when that one moves (with %s naming the same Gateway on both), and it is withdrawn from external-dns with it", nginxCanary, AnnotationGateway))
	}

	hosts, entries, unsupported, notes := ingressPaths(ing, in.Services)
	m.Unsupported = append(m.Unsupported, unsupported...)
	m.Notes = append(m.Notes, notes...)
	shares := m.mergeCanaries(in, hosts, entries)

	translate := in.Translate
	if translate == nil {
		translate = func(ann map[string]string, supported sets.Set[features.FeatureName]) Carried {
			return translateIngressAnnotationsRedirecting(ann, supported, in.RedirectCode)
		}
	}
	// The translation's order: translate (ingress-nginx's default
	// ssl-redirect taken as set), checkPaths, no canary merged, the HTTPS
	// redirect's listeners (planHTTPSRedirect), the acknowledged keys left
	// off, then applyTo the route, and the redirect route made from it.
	tlsHosts := ingressTLSHosts(ing, hosts)
	translated := translatedAnnotations(ann)
	defaulted := defaultedSSLRedirect(ing, tlsHosts)
	if defaulted {
		translated = withDefaultSSLRedirect(translated)
	}
	m.Carried = translate(translated, in.Supported)
	paths := make([]string, 0, len(entries))
	for _, e := range entries {
		paths = append(paths, e.value)
	}
	m.Carried.checkPaths(paths)
	m.Carried.withoutCanary()
	m.planHTTPSRedirect(in, hosts, tlsHosts)
	if defaulted {
		m.Carried.markDefaulted()
	}
	blocking := slices.Clone(m.Carried.Blocking)
	if b := tlsBlocking(tlsHosts, m, in); b != nil {
		blocking = append(blocking, *b)
	}
	acked, all := parseAcknowledged(ann)
	for _, b := range blocking {
		if all || slices.Contains(acked, b.Key) {
			m.Acknowledged = append(m.Acknowledged, b)
		} else {
			m.Blocking = append(m.Blocking, b)
		}
	}
	if !m.renderable() {
		return m
	}
	m.Route = migrationRoute(ing, m, hosts, entries)
	applyCanaries(m.Route, entries, shares)
	m.Carried.applyTo(m.Route)
	if m.Redirect != nil && m.Gateway != nil {
		m.RedirectRoute = redirectRoute(ing, *m.Gateway, m.Redirect, m.Route)
	}
	return m
}

// parseMigrationAnnotations reads ingress/gateway, ingress/gateway-listener
// and ingress/delete-after-move of ing.
func parseMigrationAnnotations(ing *networkingv1.Ingress) (gw *GatewayRef, listener string, deleteAfter bool, problems []Problem) {
	ann := ing.Annotations
	if v := strings.TrimSpace(ann[AnnotationGateway]); v != "" {
		ref, why := parseGatewayRef(v, ing.Namespace)
		if why != "" {
			problems = append(problems, Problem{Annotation: AnnotationGateway, Reason: ReasonInvalidGateway,
				Message: fmt.Sprintf("annotation %s: %s %s; set [<namespace>/]<name> of a Gateway (kubectl get gateways -A), or remove it to keep the Ingress as it is", AnnotationGateway, quote(v), why)})
		} else {
			gw = &ref
		}
	}
	var p *Problem
	listener, p = parseListener(ann)
	if p != nil {
		problems = append(problems, *p)
	}
	switch v := strings.TrimSpace(ann[AnnotationDeleteAfterMove]); {
	case strings.EqualFold(v, "true"):
		deleteAfter = true
	case v == "" || strings.EqualFold(v, "false"):
	default:
		problems = append(problems, Problem{Annotation: AnnotationDeleteAfterMove, Reason: ReasonInvalidDeleteAfterMove,
			Message: fmt.Sprintf("annotation %s: %s is neither \"true\" nor \"false\"; the Ingress is kept after the move until it is one of them", AnnotationDeleteAfterMove, quote(v))})
	}
	return gw, listener, deleteAfter, problems
}

// translatedAnnotations are the annotations of an Ingress that its
// translation judges: not this controller's own (ingress/*), not
// external-dns's (the route gets them as they are), not the class (the
// Gateway takes its place) and not kubectl's record of the last apply.
func translatedAnnotations(ann map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range ann {
		switch {
		case strings.HasPrefix(k, annotationPrefix), isExternalDNSKey(k), k == ingressClassAnnotation, k == corev1.LastAppliedConfigAnnotation:
		default:
			out[k] = v
		}
	}
	return out
}

func isExternalDNSKey(k string) bool {
	for p := range strings.FieldsSeq(externalDNSPrefixes) {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// ingressClass is the Ingress's class: spec.ingressClassName, else the
// deprecated annotation.
func ingressClass(ing *networkingv1.Ingress) string {
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName
	}
	return ing.Annotations[ingressClassAnnotation]
}

// Limits of an HTTPRoute (the CRD's): the rendering makes one rule a path.
const (
	maxRouteHostnames = 16
	maxRouteRules     = 16
)

// ingressPaths returns the hosts of ing (in the order they first appear;
// "" for rules without one) and the paths every one of them routes, or
// what of them a route cannot express.
func ingressPaths(ing *networkingv1.Ingress, services map[string]*corev1.Service) (hosts []string, entries []pathEntry, unsupported, notes []string) {
	byHost := map[string][]pathEntry{}
	add := func(host string, e pathEntry) {
		for _, o := range byHost[host] {
			if o.matchKey() == e.matchKey() {
				if o.backend != e.backend || o.port != e.port {
					unsupported = append(unsupported, fmt.Sprintf("host %s has path %s (%s) twice, with different backends", quote(host), quote(e.value), e.match))
				}
				return
			}
		}
		byHost[host] = append(byHost[host], e)
	}
	addHost := func(h string) {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	nginx := ingressClass(ing) == "nginx"
	regex := strings.EqualFold(ing.Annotations[nginxUseRegex], "true") || ing.Annotations[nginxRewrite] != ""
	for _, rule := range ing.Spec.Rules {
		addHost(rule.Host)
		if rule.HTTP == nil {
			continue
		}
		for _, p := range rule.HTTP.Paths {
			match, why := routeMatch(p, nginx, regex)
			if why != "" {
				unsupported = append(unsupported, fmt.Sprintf("path %s of host %s %s", quote(p.Path), quote(rule.Host), why))
				continue
			}
			if match == gatewayv1.PathMatchPathPrefix && ptr.Deref(p.PathType, "") == networkingv1.PathTypeImplementationSpecific && !strings.HasSuffix(p.Path, "/") {
				notes = append(notes, fmt.Sprintf("path %s (ImplementationSpecific) becomes a PathPrefix: it matches %s and %s/..., not %sx as ingress-nginx did",
					quote(p.Path), p.Path, p.Path, p.Path))
			}
			name, port, why := resolveBackend(p.Backend, services)
			if why != "" {
				unsupported = append(unsupported, fmt.Sprintf("the backend of path %s of host %s %s", quote(p.Path), quote(rule.Host), why))
				continue
			}
			add(rule.Host, pathEntry{match: match, value: routePathValue(p.Path), backend: name, port: port})
		}
	}
	if db := ing.Spec.DefaultBackend; db != nil {
		if len(hosts) == 0 {
			hosts = []string{""}
		}
		name, port, why := resolveBackend(*db, services)
		if why != "" {
			unsupported = append(unsupported, "spec.defaultBackend "+why)
		} else {
			for _, h := range hosts {
				// A path "/" of the rules takes precedence, as with
				// ingress-nginx; otherwise "/" catches what no path does.
				if !slices.ContainsFunc(byHost[h], func(e pathEntry) bool { return e.match == gatewayv1.PathMatchPathPrefix && e.value == "/" }) {
					byHost[h] = append(byHost[h], pathEntry{match: gatewayv1.PathMatchPathPrefix, value: "/", backend: name, port: port})
				}
			}
		}
	}
	if len(hosts) > 1 && slices.Contains(hosts, "") {
		unsupported = append(unsupported, "rules without a host and rules with hosts mix: an HTTPRoute's hostnames apply to all its rules; make them one Ingress each")
	}
	if len(hosts) > maxRouteHostnames {
		unsupported = append(unsupported, fmt.Sprintf("it has %d hosts, more than an HTTPRoute's %d hostnames; split it", len(hosts), maxRouteHostnames))
	}
	for _, h := range hosts[min(1, len(hosts)):] {
		if !samePaths(byHost[hosts[0]], byHost[h]) {
			unsupported = append(unsupported, fmt.Sprintf("hosts %s and %s route different paths, and an HTTPRoute applies every rule to all its hostnames; make one Ingress per host (or give them the same paths)", quote(hosts[0]), quote(h)))
			break
		}
	}
	if len(hosts) > 0 {
		entries = byHost[hosts[0]]
	}
	if len(entries) > maxRouteRules {
		unsupported = append(unsupported, fmt.Sprintf("it has %d paths, more than an HTTPRoute's %d rules; split it", len(entries), maxRouteRules))
	}
	if len(entries) == 0 && len(unsupported) == 0 {
		unsupported = append(unsupported, "it routes no path (no rule with paths, no spec.defaultBackend)")
	}
	return hosts, entries, unsupported, notes
}

// samePaths reports whether a and b route the same matches to the same
// backends, in any order.
func samePaths(a, b []pathEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for _, e := range a {
		if !slices.Contains(b, e) {
			return false
		}
	}
	return true
}

// routeMatch maps an Ingress path to a route's path match, or says why it
// cannot be one. ImplementationSpecific is ingress-nginx's prefix match
// (for the class nginx, when the path is no regular expression), which a
// PathPrefix is; other controllers' meaning of it is their own.
func routeMatch(p networkingv1.HTTPIngressPath, nginx, regex bool) (gatewayv1.PathMatchType, string) {
	var match gatewayv1.PathMatchType
	switch pt := ptr.Deref(p.PathType, networkingv1.PathTypeImplementationSpecific); pt {
	case networkingv1.PathTypePrefix, networkingv1.PathTypeExact:
		match, _ = routeMatchType(pt)
	default:
		switch {
		case !nginx:
			return "", "has path type ImplementationSpecific, whose meaning is the Ingress controller's own; only the class nginx's (a prefix) is known; make it Prefix or Exact"
		case regex || strings.ContainsAny(p.Path, `^$*+?()[]{}|\`):
			return "", fmt.Sprintf("is a regular expression (path type ImplementationSpecific with %s or %s, or regex characters), which an HTTPRoute's PathPrefix and Exact cannot express", nginxUseRegex, nginxRewrite)
		}
		match = gatewayv1.PathMatchPathPrefix
	}
	value := routePathValue(p.Path)
	for _, seq := range invalidPathSequences {
		if strings.Contains(value, seq) {
			return "", fmt.Sprintf("contains %q, which an HTTPRoute refuses", seq)
		}
	}
	for _, suf := range invalidPathSuffixes {
		if strings.HasSuffix(value, suf) {
			return "", fmt.Sprintf("ends with %q, which an HTTPRoute refuses", suf)
		}
	}
	if pr := routePathProblem(value); pr != nil {
		return "", "is not a valid HTTPRoute path: " + strings.TrimPrefix(pr.Message, fmt.Sprintf("annotation %s: %s ", AnnotationPath, quote(value)))
	}
	return match, ""
}

// routePathValue is an Ingress path as a route's: the API server allows an
// ImplementationSpecific path to be empty, which means "/".
func routePathValue(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

// resolveBackend returns the Service and port number b routes to, or why
// it cannot: a resource backend, or a port name no Service resolves.
func resolveBackend(b networkingv1.IngressBackend, services map[string]*corev1.Service) (string, int32, string) {
	if b.Service == nil {
		return "", 0, "is a resource backend (spec.backend.resource), which an HTTPRoute cannot name portably"
	}
	name := b.Service.Name
	if b.Service.Port.Name == "" {
		return name, b.Service.Port.Number, ""
	}
	svc := services[name]
	if svc == nil {
		return "", 0, fmt.Sprintf("names port %s of Service %s, which does not exist: an HTTPRoute names a port by number, and the name cannot be resolved", quote(b.Service.Port.Name), name)
	}
	for _, sp := range svc.Spec.Ports {
		if sp.Name == b.Service.Port.Name {
			return name, sp.Port, ""
		}
	}
	return "", 0, fmt.Sprintf("names port %s, which Service %s does not have (it has %s)", quote(b.Service.Port.Name), name, describePorts(svc.Spec.Ports))
}

// backendServices lists the Services the backends of ing name, each once.
func backendServices(ing *networkingv1.Ingress) []string {
	var out []string
	add := func(b *networkingv1.IngressBackend) {
		if b != nil && b.Service != nil && !slices.Contains(out, b.Service.Name) {
			out = append(out, b.Service.Name)
		}
	}
	add(ing.Spec.DefaultBackend)
	for _, r := range ing.Spec.Rules {
		if r.HTTP != nil {
			for i := range r.HTTP.Paths {
				add(&r.HTTP.Paths[i].Backend)
			}
		}
	}
	return out
}

// ingressHosts lists the hosts of ing's rules, each once.
func ingressHosts(ing *networkingv1.Ingress) []string {
	var out []string
	for _, r := range ing.Spec.Rules {
		if r.Host != "" && !slices.Contains(out, r.Host) {
			out = append(out, r.Host)
		}
	}
	return out
}

// ingressTLSHosts lists the hosts of the route (hosts) that ing serves
// with TLS: those its spec.tls names, every one for an entry that names
// none (ingress-nginx's default certificate).
func ingressTLSHosts(ing *networkingv1.Ingress, hosts []string) []string {
	var out []string
	for _, t := range ing.Spec.TLS {
		th := t.Hosts
		if len(th) == 0 {
			th = hosts
		}
		for _, h := range th {
			if slices.Contains(hosts, h) && !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// nginxSSLRedirect and nginxForceSSLRedirect are ingress-nginx's keys of
// the redirect of plain HTTP to HTTPS; ssl-redirect's default, absent, is
// "true" (see defaultedSSLRedirect).
const (
	nginxSSLRedirect      = "nginx.ingress.kubernetes.io/ssl-redirect"
	nginxForceSSLRedirect = "nginx.ingress.kubernetes.io/force-ssl-redirect"
)

// tlsBlocking returns why spec.tls blocks the move, nil when it does not:
// the Gateway terminates TLS, so each TLS host of the route needs an HTTPS
// listener of it (the one ingress/gateway-listener names, when set) that
// takes the host.
func tlsBlocking(tlsHosts []string, m *Migration, in migrationInput) *BlockedKey {
	if len(tlsHosts) == 0 || m.Gateway == nil {
		return nil
	}
	block := func(why string) *BlockedKey {
		return &BlockedKey{Key: tlsKey, Why: why + fmt.Sprintf("; list %s in %s once the Gateway terminates TLS for it", tlsKey, AnnotationGatewayAcknowledged)}
	}
	switch {
	case !in.GatewayVisible:
		return block(fmt.Sprintf("TLS for %s is the Gateway's to terminate, and the controller does not watch Gateway %s to check it has an HTTPS listener for %s", listSome(tlsHosts), m.Gateway, plural(len(tlsHosts), "it", "them")))
	case in.Gateway == nil:
		return block(fmt.Sprintf("TLS for %s is the Gateway's to terminate, and Gateway %s does not exist", listSome(tlsHosts), m.Gateway))
	}
	var missing []string
	for _, h := range tlsHosts {
		if !slices.ContainsFunc(in.Gateway.Spec.Listeners, func(l gatewayv1.Listener) bool {
			return l.Protocol == gatewayv1.HTTPSProtocolType && (m.Listener == "" || string(l.Name) == m.Listener) && listenerTakes(l.Hostname, h)
		}) {
			missing = append(missing, h)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	which := "no HTTPS listener"
	if m.Listener != "" {
		which = fmt.Sprintf("no HTTPS listener %s", m.Listener)
	}
	return block(fmt.Sprintf("Gateway %s has %s for %s, which the Ingress serves with TLS", m.Gateway, which, listSome(missing)))
}

// listenerTakes reports whether a listener of hostname lh (nil: any)
// takes routes for host h: the same name, or a wildcard "*.d" that is a
// suffix of it.
func listenerTakes(lh *gatewayv1.Hostname, h string) bool {
	if lh == nil || string(*lh) == h {
		return true
	}
	suffix, ok := strings.CutPrefix(string(*lh), "*")
	return ok && strings.HasSuffix(h, suffix) && len(h) > len(suffix)
}

// migrationRoute renders the route: the Ingress's name and namespace, the
// marker of where it comes from, the Ingress's external-dns annotations,
// the Gateway as its one parent, the hosts, and one rule a path (the
// translation's filters and timeouts are applied to it after). Every
// field the CRD would default is set, so that the route reads back as it
// was written.
func migrationRoute(ing *networkingv1.Ingress, m *Migration, hosts []string, entries []pathEntry) *gatewayv1.HTTPRoute {
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{
		Name: ing.Name, Namespace: ing.Namespace,
		Annotations: migratedAnnotations(ing),
	}}
	if m.Gateway != nil { // none only in a plan for an Ingress that names none
		listener := m.Listener
		if m.Redirect != nil {
			listener = m.Redirect.HTTPSListener
		}
		route.Spec.ParentRefs = []gatewayv1.ParentReference{gatewayParent(*m.Gateway, ing.Namespace, listener)}
	}
	for _, h := range hosts {
		if h != "" {
			route.Spec.Hostnames = append(route.Spec.Hostnames, gatewayv1.Hostname(h))
		}
	}
	for _, e := range entries {
		route.Spec.Rules = append(route.Spec.Rules, serviceRule(e.match, e.value, e.backend, e.port))
	}
	return route
}

// migratedAnnotations are the route's annotations: the marker, and the
// Ingress's external-dns ones, its controller annotations as the user set
// them (saved by a withdrawal, or absent).
func migratedAnnotations(ing *networkingv1.Ingress) map[string]string {
	out := map[string]string{AnnotationMigratedFrom: string(ing.UID)}
	saved := savedControllers(ing.Annotations)
	for k, v := range ing.Annotations {
		if !isExternalDNSKey(k) {
			continue
		}
		if slices.Contains(externalDNSControllerKeys, k) && v == withdrawnValue {
			if s, ok := saved[k]; ok {
				out[k] = s
			}
			continue
		}
		out[k] = v
	}
	return out
}

// describeBlocking lists blocked keys with why, for a message.
func describeBlocking(keys []BlockedKey) string {
	parts := make([]string, 0, len(keys))
	for _, b := range keys {
		parts = append(parts, fmt.Sprintf("%s (%s)", b.Key, b.Why))
	}
	return strings.Join(parts, "; ")
}
