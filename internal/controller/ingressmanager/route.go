package ingressmanager

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Annotation keys of the Gateway API route.
const (
	// AnnotationGateway names the Gateway, [<namespace>/]<name>, an HTTPRoute
	// attaches to; the Service then gets an HTTPRoute instead of an Ingress.
	// "" keeps the Service on Ingress even when --ingress-gateway is set.
	AnnotationGateway = "ingress/gateway"
	// AnnotationGatewayListener sets the parentRef's sectionName: the
	// Gateway listener the route attaches to.
	AnnotationGatewayListener = "ingress/gateway-listener"
)

// Reasons of the route's Problems and Warnings (Warning Events).
const (
	// ReasonInvalidGateway: ingress/gateway (or --ingress-gateway) is not
	// [<namespace>/]<name> of valid names.
	ReasonInvalidGateway = "InvalidGateway"
	// ReasonInvalidGatewayListener: ingress/gateway-listener is not a valid
	// listener name.
	ReasonInvalidGatewayListener = "InvalidGatewayListener"
	// ReasonUnsupportedPathType: ImplementationSpecific has no portable
	// meaning in an HTTPRoute.
	ReasonUnsupportedPathType = "UnsupportedPathType"
	// ReasonIgnoredForRoute: an annotation that only means something for an
	// Ingress is set on a Service that gets an HTTPRoute.
	ReasonIgnoredForRoute = "IgnoredForHTTPRoute"
)

// routePathChars is the character set the HTTPRoute CRD allows in an Exact
// or PathPrefix value.
var routePathChars = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)

// GatewayRef names a Gateway.
type GatewayRef struct {
	Namespace, Name string
}

func (g GatewayRef) String() string { return g.Namespace + "/" + g.Name }

// ParseGatewayRef parses [<namespace>/]<name>; defaultNamespace fills a
// missing namespace, and when it is "" the namespace is required. The
// returned problem text says what is wrong with v.
func ParseGatewayRef(v, defaultNamespace string) (GatewayRef, string) {
	ns, name, found := strings.Cut(v, "/")
	if !found {
		ns, name = defaultNamespace, v
		if ns == "" {
			return GatewayRef{}, "has no namespace; write <namespace>/<name>"
		}
	}
	if found {
		if len(validation.IsDNS1123Label(ns)) > 0 {
			return GatewayRef{}, fmt.Sprintf("has namespace %s, which is not a valid namespace name (a lower-case DNS label)", quote(ns))
		}
	}
	if why := dnsSubdomainProblem(name); why != "" {
		return GatewayRef{}, fmt.Sprintf("has name %s, which %s", quote(name), why)
	}
	return GatewayRef{Namespace: ns, Name: name}, ""
}

// Gateway returns the Gateway svc's HTTPRoute attaches to, or nil when svc
// gets an Ingress: ingress/gateway when present ("" means Ingress), else
// the Builder's default Gateway (--ingress-gateway), if any.
func (b *Builder) Gateway(svc *corev1.Service) (*GatewayRef, *Problem) {
	v, ok := svc.Annotations[AnnotationGateway]
	if !ok {
		return b.gateway, nil
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	ref, why := ParseGatewayRef(v, svc.Namespace)
	if why != "" {
		return nil, &Problem{
			Annotation: AnnotationGateway,
			Reason:     ReasonInvalidGateway,
			Message: fmt.Sprintf("annotation %s: %s %s; set [<namespace>/]<name> of a Gateway (kubectl get gateways -A), or \"\" to keep an Ingress",
				AnnotationGateway, quote(v), why),
		}
	}
	return &ref, nil
}

// WantsRoute reports whether svc asks for an HTTPRoute: it is Enabled and
// names a Gateway (itself or through --ingress-gateway). A bad
// ingress/gateway counts as asking for one, so that its Warning is given
// and no Ingress is made in its place.
func (b *Builder) WantsRoute(svc *corev1.Service) bool {
	if !Enabled(svc) {
		return false
	}
	ref, p := b.Gateway(svc)
	return ref != nil || p != nil
}

// DesiredRoute returns the HTTPRoute svc should have (see WantsRoute; nil
// and no error when it asks for none), and the annotations set on svc that
// an HTTPRoute ignores (for a Warning). When an annotation is bad the error
// is an *InvalidError listing every problem.
//
// The route has svc's name and namespace, a controller OwnerReference to
// svc, the annotations of ingress/annotations, the Gateway as its one
// parentRef, the host as its one hostname (none when the host is ""), and
// one rule matching the path with svc at the chosen port as its backend.
// Every field the CRD would default is set, so that the route reads back
// as it was written.
func (b *Builder) DesiredRoute(svc *corev1.Service) (*gatewayv1.HTTPRoute, []string, error) {
	if !Enabled(svc) {
		return nil, nil, nil
	}
	gw, p := b.Gateway(svc)
	if gw == nil && p == nil {
		return nil, nil, nil // an Ingress, not a route
	}
	var problems []Problem
	add := func(p *Problem) {
		if p != nil {
			problems = append(problems, *p)
		}
	}
	add(p)
	listener, p := parseListener(svc.Annotations)
	add(p)
	host, p := b.host(svc)
	add(p)
	pathType, p := parsePathType(svc.Annotations)
	add(p)
	matchType, p := routePathType(pathType)
	add(p)
	path, p := parsePath(svc.Annotations, pathType)
	if p == nil && matchType != "" {
		p = routePathProblem(path)
	}
	add(p)
	port, p := resolvePort(svc)
	add(p)
	annotations, p := parseAnnotations(svc.Annotations, "")
	add(p)
	if err := newInvalidError(problems); err != nil {
		return nil, nil, err
	}

	var ignored []string
	for _, k := range []string{AnnotationClass, AnnotationTLSSecret} {
		if _, ok := svc.Annotations[k]; ok {
			ignored = append(ignored, k)
		}
	}

	route := &gatewayv1.HTTPRoute{ObjectMeta: ownedMeta(svc, annotations)}
	parent := gatewayv1.ParentReference{
		Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)),
		Kind:  ptr.To(gatewayv1.Kind("Gateway")),
		Name:  gatewayv1.ObjectName(gw.Name),
	}
	if gw.Namespace != svc.Namespace {
		parent.Namespace = ptr.To(gatewayv1.Namespace(gw.Namespace))
	}
	if listener != "" {
		parent.SectionName = ptr.To(gatewayv1.SectionName(listener))
	}
	route.Spec.ParentRefs = []gatewayv1.ParentReference{parent}
	if host != "" {
		route.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(host)}
	}
	route.Spec.Rules = []gatewayv1.HTTPRouteRule{{
		Matches: []gatewayv1.HTTPRouteMatch{{
			Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(matchType), Value: ptr.To(path)},
		}},
		BackendRefs: []gatewayv1.HTTPBackendRef{{
			BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{
					Group: ptr.To(gatewayv1.Group("")),
					Kind:  ptr.To(gatewayv1.Kind("Service")),
					Name:  gatewayv1.ObjectName(svc.Name),
					Port:  ptr.To(port),
				},
				Weight: ptr.To[int32](1),
			},
		}},
	}}
	return route, ignored, nil
}

func parseListener(ann map[string]string) (string, *Problem) {
	return parseName(ann, AnnotationGatewayListener, ReasonInvalidGatewayListener,
		"set the name of one of the Gateway's listeners (spec.listeners[].name), or remove it to attach to every listener that allows the route")
}

// routePathType maps an Ingress path type to an HTTPRoute path match type.
// pathType "" (already reported as bad) maps to "" without a problem.
func routePathType(pathType networkingv1.PathType) (gatewayv1.PathMatchType, *Problem) {
	switch pathType {
	case networkingv1.PathTypePrefix:
		return gatewayv1.PathMatchPathPrefix, nil
	case networkingv1.PathTypeExact:
		return gatewayv1.PathMatchExact, nil
	case "":
		return "", nil
	}
	return "", &Problem{
		Annotation: AnnotationPathType,
		Reason:     ReasonUnsupportedPathType,
		Message: fmt.Sprintf("annotation %s: %s has no portable meaning in an HTTPRoute; use Prefix or Exact, or set %s to \"\" to keep an Ingress",
			AnnotationPathType, pathType, AnnotationGateway),
	}
}

// routePathProblem checks what the HTTPRoute CRD refuses in an Exact or
// PathPrefix value beyond what parsePath checks for an Ingress.
func routePathProblem(path string) *Problem {
	bad := func(why string) *Problem {
		return &Problem{
			Annotation: AnnotationPath,
			Reason:     ReasonInvalidPath,
			Message:    fmt.Sprintf("annotation %s: %s %s in an HTTPRoute", AnnotationPath, quote(path), why),
		}
	}
	switch {
	case strings.Contains(path, "#"):
		return bad("must not contain \"#\"")
	case len(path) > 1024:
		return bad("must be at most 1024 characters")
	case !routePathChars.MatchString(path):
		return bad("may contain only letters, digits, \"-._~!$&'()*+,;=:@/\" and %-escapes")
	}
	return nil
}
