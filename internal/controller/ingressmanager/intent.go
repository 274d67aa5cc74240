package ingressmanager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// Annotation keys read on a Service.
const (
	// AnnotationHTTP enables the Ingress (or HTTPRoute) for a Service: any
	// value but "false"; removing it or "false" deletes what it created.
	AnnotationHTTP = "ingress/http"
	// AnnotationHost sets the rule host, a DNS name or a *.wildcard; ""
	// means a rule without host. Default: --ingress-host-template.
	AnnotationHost = "ingress/host"
	// AnnotationPath sets the HTTP path, starting with "/". Default: "/".
	AnnotationPath = "ingress/path"
	// AnnotationPathType sets the path type: Prefix, Exact or
	// ImplementationSpecific (Ingress only). Default: Prefix.
	AnnotationPathType = "ingress/path-type"
	// AnnotationPort selects the backend Service port, by number or by name.
	// Default: port 80 if the Service has it, else the port named "http",
	// else its only port.
	AnnotationPort = "ingress/port"
	// AnnotationClass sets spec.ingressClassName; "" means no class
	// (Ingress only). Default: --ingress-class.
	AnnotationClass = "ingress/class"
	// AnnotationTLSSecret adds spec.tls for the rule host with this Secret
	// (Ingress only). Default: no TLS.
	AnnotationTLSSecret = "ingress/tls-secret"
	// AnnotationAnnotations is a JSON object of annotations to put on the
	// Ingress or HTTPRoute; one dropped from it is removed. Default: none.
	AnnotationAnnotations = "ingress/annotations"
	// AnnotationGateway names the Gateway, [<namespace>/]<name>, an HTTPRoute
	// attaches to; the Service then gets an HTTPRoute instead of an Ingress.
	// "" keeps the Service on Ingress even when --ingress-gateway is set.
	AnnotationGateway = "ingress/gateway"
	// AnnotationGatewayListener sets the parentRef's sectionName: the
	// Gateway listener the route attaches to.
	AnnotationGatewayListener = "ingress/gateway-listener"
	// AnnotationGatewayAcknowledged lists, separated by commas, the keys of
	// ingress/annotations that an HTTPRoute cannot carry and that it may do
	// without (the Gateway side does the equivalent), or "*" for every one:
	// those that restrict access on the Ingress, and those the translation
	// table cannot express (docs/reference/translations.md). Until each
	// such key is listed (or removed) the Service stays on its Ingress;
	// listed, it is left off the route. Default: none.
	AnnotationGatewayAcknowledged = "ingress/gateway-acknowledged"
	// AnnotationURL is the default of --ingress-url-annotation, the
	// annotation the controller writes (never reads as a setting) with the
	// URL the Service is served at, once it is: "https://" with
	// ingress/tls-secret, else "http://", then the host and the path.
	AnnotationURL = "ingress/url"
)

// settingAnnotations are the Service annotations Parse reads as settings:
// the URL is never written into one of them.
var settingAnnotations = []string{
	AnnotationHTTP, AnnotationHost, AnnotationPath, AnnotationPathType, AnnotationPort, AnnotationClass,
	AnnotationTLSSecret, AnnotationAnnotations, AnnotationGateway, AnnotationGatewayListener, AnnotationGatewayAcknowledged,
}

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
	// ReasonAccessControlOnIngress: ingress/annotations restricts access
	// with keys only an Ingress controller enforces, so the Service stays
	// on (or goes back to) its Ingress until they are listed in
	// ingress/gateway-acknowledged or removed. The same Warning names the
	// keys it sets that an HTTPRoute cannot carry, if any.
	ReasonAccessControlOnIngress = "AccessControlOnIngress"
	// ReasonNotCarried: ingress/annotations (or the Ingress itself) sets
	// keys an HTTPRoute cannot carry (docs/reference/translations.md), so
	// the Service stays on (or goes back to) its Ingress until they are
	// listed in ingress/gateway-acknowledged or removed.
	ReasonNotCarried = "NotCarriedToHTTPRoute"
)

// routePathChars is the character set the HTTPRoute CRD allows in an Exact
// or PathPrefix value.
var routePathChars = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)

// GatewayRef names a Gateway.
type GatewayRef struct {
	Namespace, Name string
}

func (g GatewayRef) String() string { return g.Namespace + "/" + g.Name }

// parseGatewayRef parses [<namespace>/]<name>; defaultNamespace fills a
// missing namespace, and when it is "" the namespace is required. The
// returned problem text says what is wrong with v.
func parseGatewayRef(v, defaultNamespace string) (GatewayRef, string) {
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

// Defaults.
const (
	// DefaultHostTemplate is the host template used when Config.HostTemplate is empty.
	DefaultHostTemplate = "example.com"
	// DefaultFieldManager is the field manager used when Config.FieldManager is empty.
	DefaultFieldManager = "ingress-manager"
	// DefaultPath is the path used when ingress/path is absent.
	DefaultPath = "/"
	// DefaultPathType is the path type used when ingress/path-type is absent.
	DefaultPathType = networkingv1.PathTypePrefix
	// DefaultPortNumber is the Service port preferred when ingress/port is absent.
	DefaultPortNumber = 80
	// DefaultPortName is the Service port name preferred, after port 80, when
	// ingress/port is absent.
	DefaultPortName = "http"
)

// Reasons of an InvalidError, CamelCase, each a Warning Event on the
// Service: nothing is written until the annotation is fixed, and an
// existing Ingress or HTTPRoute keeps its last good configuration.
const (
	// ReasonInvalidHost: ingress/host is not a DNS name or *.wildcard.
	ReasonInvalidHost = "InvalidHost"
	// ReasonInvalidHostTemplate: --ingress-host-template does not render a
	// valid host for this Service.
	ReasonInvalidHostTemplate = "InvalidHostTemplate"
	// ReasonInvalidPath: ingress/path does not start with "/" or has
	// characters the path type does not allow.
	ReasonInvalidPath = "InvalidPath"
	// ReasonInvalidPathType: ingress/path-type is not Prefix, Exact or
	// ImplementationSpecific.
	ReasonInvalidPathType = "InvalidPathType"
	// ReasonUnknownPort: the Service has no port ingress/port names, or
	// none of the default choices.
	ReasonUnknownPort = "UnknownPort"
	// ReasonAmbiguousPort: several ports match and nothing says which.
	ReasonAmbiguousPort = "AmbiguousPort"
	// ReasonNoPorts: the Service has no ports to route to.
	ReasonNoPorts = "NoPorts"
	// ReasonInvalidClass: ingress/class is not a valid IngressClass name.
	ReasonInvalidClass = "InvalidClass"
	// ReasonInvalidTLSSecret: ingress/tls-secret is not a valid Secret name.
	ReasonInvalidTLSSecret = "InvalidTLSSecret"
	// ReasonInvalidAnnotations: ingress/annotations is not a JSON object of
	// valid annotations.
	ReasonInvalidAnnotations = "InvalidAnnotations"
)

// annotationPrefix is the family of the Service annotations this controller reads.
const annotationPrefix = "ingress/"

// ingressClassAnnotation is the deprecated class annotation the API server
// refuses when it disagrees with spec.ingressClassName.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// Problem is one bad setting found on a Service.
type Problem struct {
	// Annotation is the annotation key to fix, e.g. "ingress/port". Empty when
	// the problem is in the Service itself (NoPorts).
	Annotation string
	// Reason is a CamelCase machine reason, one of the Reason* constants.
	Reason string
	// Message tells the user what is wrong and how to fix it.
	Message string
	// Only is the one rendering the problem concerns (a route ignores the
	// Ingress class, an Ingress the listener); TargetNone: both.
	Only Target
}

// InvalidError reports that a Service's ingress/* annotations (or its ports)
// do not allow building an Ingress. The controller turns it into a Warning
// Event on the Service and writes no Ingress; retrying does not help until
// the Service changes.
//
// All problems are reported, in a fixed order (host, path type, path, port,
// class, TLS secret, annotations). Reason is the first problem's reason;
// Message holds every problem's message.
type InvalidError struct {
	// Reason is the first problem's Reason, for the Event's reason.
	Reason string
	// Message describes every problem, for the Event's message.
	Message string
	// Problems lists each problem, at least one.
	Problems []Problem
}

// Error returns Message.
func (e *InvalidError) Error() string { return e.Message }

func newInvalidError(problems []Problem) *InvalidError {
	if len(problems) == 0 {
		return nil
	}
	e := &InvalidError{Reason: problems[0].Reason, Problems: problems}
	if len(problems) == 1 {
		e.Message = problems[0].Message
		return e
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(problems))
	for i, p := range problems {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " [%d] %s", i+1, p.Message)
	}
	e.Message = b.String()
	return e
}

// Enabled reports whether svc asks for an Ingress: it carries the annotation
// ingress/http with any value but "false" (compared case-insensitively,
// ignoring surrounding white space).
func Enabled(svc *corev1.Service) bool {
	if svc == nil {
		return false
	}
	v, ok := svc.Annotations[AnnotationHTTP]
	return ok && !strings.EqualFold(strings.TrimSpace(v), "false")
}

// Config configures a Builder; it mirrors the controller's flags.
type Config struct {
	// HostTemplate (--ingress-host-template) renders the rule host of
	// Services without ingress/host: text with {{.Name}} and {{.Namespace}}
	// of the Service, in Go template syntax. Empty means DefaultHostTemplate.
	HostTemplate string
	// IngressClass (--ingress-class) is the spec.ingressClassName of Services
	// without ingress/class. Empty means none.
	IngressClass string
	// FieldManager is the server-side-apply field manager the controller
	// writes with. Empty means DefaultFieldManager.
	FieldManager string
	// Gateway (--ingress-gateway), <namespace>/<name>, is the Gateway of
	// Services without ingress/gateway: they get an HTTPRoute attached to it
	// instead of an Ingress. Empty means none.
	Gateway string
	// GatewayAPICheckInterval is how often the controller asks whether the
	// cluster serves the Gateway API, while it does not. 0 means
	// DefaultGatewayAPICheckInterval.
	GatewayAPICheckInterval time.Duration
	// URLAnnotation (--ingress-url-annotation) is the Service annotation
	// the URL is written to once the Service is served. Empty: none is
	// written.
	URLAnnotation string
	// MoveSettle is how long, when a Service moves between Ingress and
	// HTTPRoute, the old object is kept after the new one serves (see
	// untilServes), for the data plane to serve the new one. 0 deletes it
	// at once.
	MoveSettle time.Duration
	// DNSDrain (--ingress-move-dns-drain) is how long, when a Service moves
	// between Ingress and HTTPRoute, the old object keeps serving after it
	// was withdrawn from external-dns (see cutover). 0 deletes it at once,
	// without withdrawing it.
	DNSDrain time.Duration
	// HTTPRedirectCode (--ingress-nginx-http-redirect-code) is the status
	// of the redirect of plain HTTP to HTTPS that the routes of users'
	// Ingresses carry: the http-redirect-code of the ingress-nginx that
	// served them. 0 means DefaultHTTPRedirectCode.
	HTTPRedirectCode int
}

// Builder parses Services into Intents (Parse). It is immutable and safe
// for concurrent use.
type Builder struct {
	hostTemplateText string
	hostTemplate     hostTemplate
	ingressClass     string
	fieldManager     string
	defaultGateway   *GatewayRef
	urlAnnotation    string
}

// hostTemplateData is what the host template sees.
type hostTemplateData struct {
	Name      string
	Namespace string
}

// NewBuilder validates cfg and returns a Builder. The host template is parsed
// once and test-rendered for a sample Service, so a broken template or class
// fails at startup rather than on every Service.
func NewBuilder(cfg Config) (*Builder, error) {
	b := &Builder{
		hostTemplateText: cfg.HostTemplate,
		ingressClass:     cfg.IngressClass,
		fieldManager:     cfg.FieldManager,
	}
	if b.hostTemplateText == "" {
		b.hostTemplateText = DefaultHostTemplate
	}
	if b.fieldManager == "" {
		b.fieldManager = DefaultFieldManager
	}
	t, err := parseHostTemplate(b.hostTemplateText)
	if err != nil {
		return nil, fmt.Errorf("invalid ingress host template %q: %w", b.hostTemplateText, err)
	}
	b.hostTemplate = t
	host := t.render(hostTemplateData{Name: "my-service", Namespace: "default"})
	if why := hostProblem(host); why != "" {
		return nil, fmt.Errorf("invalid ingress host template %q: for service default/my-service it renders %s, which %s", b.hostTemplateText, quote(host), why)
	}
	if b.ingressClass != "" {
		if why := dnsSubdomainProblem(b.ingressClass); why != "" {
			return nil, fmt.Errorf("invalid ingress class %q: it %s (it must name an IngressClass object)", b.ingressClass, why)
		}
	}
	if cfg.Gateway != "" {
		ref, why := parseGatewayRef(strings.TrimSpace(cfg.Gateway), "")
		if why != "" {
			return nil, fmt.Errorf("invalid default gateway %q: it %s", cfg.Gateway, why)
		}
		b.defaultGateway = &ref
	}
	if cfg.URLAnnotation != "" {
		if errs := validation.IsQualifiedName(cfg.URLAnnotation); len(errs) > 0 {
			return nil, fmt.Errorf("invalid URL annotation %q: %s", cfg.URLAnnotation, strings.Join(errs, "; "))
		}
		if slices.Contains(settingAnnotations, cfg.URLAnnotation) || slices.Contains(bookkeepingAnnotations, cfg.URLAnnotation) {
			return nil, fmt.Errorf("invalid URL annotation %q: it is one of the annotations the ingress-manager reads or keeps for itself (%s); name another, e.g. the default %s",
				cfg.URLAnnotation, strings.Join(slices.Concat(settingAnnotations, bookkeepingAnnotations), ", "), AnnotationURL)
		}
		b.urlAnnotation = cfg.URLAnnotation
	}
	if len(b.fieldManager) > 128 {
		return nil, fmt.Errorf("invalid field manager %q: longer than 128 characters", b.fieldManager)
	}
	for _, r := range b.fieldManager {
		if !unicode.IsPrint(r) {
			return nil, fmt.Errorf("invalid field manager %q: it must contain printable characters only", b.fieldManager)
		}
	}
	return b, nil
}

// Target is what a Service asks to be exposed by.
type Target int

const (
	// TargetNone: the Service has no ingress/http annotation (or "false");
	// what it made is removed.
	TargetNone Target = iota
	// TargetIngress: the Service gets an Ingress.
	TargetIngress
	// TargetHTTPRoute: the Service names a Gateway (itself or through
	// --ingress-gateway) and gets an HTTPRoute, or an Ingress while the
	// cluster does not serve the Gateway API.
	TargetHTTPRoute
)

func (t Target) String() string {
	switch t {
	case TargetIngress:
		return "Ingress"
	case TargetHTTPRoute:
		return "HTTPRoute"
	}
	return "none"
}

// Intent is what a Service's annotations (and ports) ask for, parsed once:
// the Ingress and the HTTPRoute are each a rendering of it (Ingress,
// HTTPRoute). A field whose annotation is bad holds its zero value and a
// Problem says why.
type Intent struct {
	// Target is what exposes the Service. The other fields are empty for
	// TargetNone.
	Target Target
	// Name and Namespace are the Service's, and of what it makes.
	Name, Namespace string
	// Owner is the controller reference to the Service.
	Owner metav1.OwnerReference
	// Host is the rule host; "" matches every host.
	Host string
	// Path and PathType select the requests routed to the Service.
	Path     string
	PathType networkingv1.PathType
	// Port is the number of the Service port requests go to.
	Port int32
	// Class is the IngressClass name, "" for none (Ingress only).
	Class string
	// TLSSecret is the Secret of the host's certificate, "" for no TLS
	// (Ingress only).
	TLSSecret string
	// Gateway is the Gateway an HTTPRoute attaches to (nil when bad), and
	// Listener its listener, "" for every one that allows the route
	// (HTTPRoute only).
	Gateway  *GatewayRef
	Listener string
	// Annotations are those of ingress/annotations, for the object made
	// (the route gets those of no family the translation table reads).
	Annotations map[string]string
	// IngressOnly lists the annotations set on the Service that only an
	// Ingress reads (an HTTPRoute ignores them).
	IngressOnly []string
	// IngressOnlyAnnotations lists the keys of ingress/annotations that
	// only an Ingress controller reads (IngressOnlyFamilies) and that the
	// translation table does not read, sorted: copied onto a route, where
	// they mean nothing.
	IngressOnlyAnnotations []string
	// Carried is, for TargetHTTPRoute, the translation of ingress/annotations
	// into the route, on a Gateway whose class GatewayClass supports what
	// it renders (see carry).
	Carried      Carried
	GatewayClass string
	// Blocking lists the keys of ingress/annotations an HTTPRoute cannot
	// carry and ingress/gateway-acknowledged does not list, sorted: those
	// that restrict access, and those the translation table cannot carry.
	// While there is one, an HTTPRoute target is served by an Ingress.
	Blocking []BlockedKey
	// Acknowledged lists the keys an HTTPRoute cannot carry that
	// ingress/gateway-acknowledged lists, sorted: left off the route.
	Acknowledged []string
	// acked and ackAll are ingress/gateway-acknowledged (parseAcknowledged).
	acked  []string
	ackAll bool
	// URL is where the Service is served once its Ingress or HTTPRoute
	// serves it; "" when there is no single host to name.
	URL string
	// PublishedURL is the URL annotation the Service carries, "" for none
	// (or when none is written).
	PublishedURL string
	// Problems lists every bad setting found, in a fixed order; those of
	// one rendering only say so (Problem.Only).
	Problems []Problem
}

// Parse reads a Service's ingress/* annotations and ports into its Intent.
// It is the one place that reads them.
func (b *Builder) Parse(svc *corev1.Service) *Intent {
	in := &Intent{Target: b.target(svc)}
	if b.urlAnnotation != "" {
		in.PublishedURL = svc.Annotations[b.urlAnnotation]
	}
	if in.Target == TargetNone {
		return in
	}
	ann := svc.Annotations
	in.Name, in.Namespace = svc.Name, svc.Namespace
	in.Owner = *metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))
	add := func(only Target, p *Problem) {
		if p != nil {
			p.Only = only
			in.Problems = append(in.Problems, *p)
		}
	}
	var p *Problem
	if in.Target == TargetHTTPRoute {
		in.Gateway, p = b.parseGateway(svc)
		add(TargetHTTPRoute, p)
	}
	in.Listener, p = parseListener(ann)
	add(TargetHTTPRoute, p)
	in.Host, p = b.host(svc)
	add(TargetNone, p)
	in.PathType, p = parsePathType(ann)
	add(TargetNone, p)
	add(TargetHTTPRoute, routePathTypeProblem(in.PathType))
	in.Path, p = parsePath(ann, in.PathType)
	add(TargetNone, p)
	if _, ok := routeMatchType(in.PathType); ok && p == nil {
		add(TargetHTTPRoute, routePathProblem(in.Path))
	}
	in.Port, p = resolvePort(svc)
	add(TargetNone, p)
	in.Class, p = b.class(ann)
	add(TargetIngress, p)
	in.TLSSecret, p = parseTLSSecret(ann)
	add(TargetIngress, p)
	in.Annotations, p = parseAnnotations(ann)
	add(TargetNone, p)
	if p == nil {
		add(TargetIngress, classConflict(in.Annotations, in.Class))
		in.IngressOnlyAnnotations = untranslatedIngressOnly(in.Annotations)
	}
	for _, k := range []string{AnnotationClass, AnnotationTLSSecret} {
		if _, ok := ann[k]; ok {
			in.IngressOnly = append(in.IngressOnly, k)
		}
	}
	if in.Target == TargetHTTPRoute {
		in.acked, in.ackAll = parseAcknowledged(ann)
		in.carry("", nil)
	}
	if b.urlAnnotation != "" && in.Host != "" && !strings.HasPrefix(in.Host, "*") {
		scheme := "http"
		if in.TLSSecret != "" {
			scheme = "https"
		}
		in.URL = scheme + "://" + in.Host + in.Path
	}
	return in
}

// carry translates ingress/annotations into the route, on a Gateway of
// class (""; not known) that supports supported (nil: not known; every
// feature rendered on trust), and sets Carried, GatewayClass, Blocking and
// Acknowledged. The sync calls it again once it knows the Gateway's class.
func (in *Intent) carry(class string, supported sets.Set[features.FeatureName]) {
	c := translate(in.Annotations, supported)
	c.checkPaths([]string{in.Path})
	c.forOneRoute(in.TLSSecret != "")
	for k := range in.Annotations {
		if f := family(k); f != nil && !translated(k) && f.restrictsAccess(k) {
			c.Blocking = append(c.Blocking, accessKey(k))
		}
	}
	c.recount()
	in.Carried, in.GatewayClass = c, class
	in.Blocking, in.Acknowledged = nil, nil
	for _, b := range c.Blocking {
		if in.ackAll || slices.Contains(in.acked, b.Key) {
			in.Acknowledged = append(in.Acknowledged, b.Key)
		} else {
			in.Blocking = append(in.Blocking, b)
		}
	}
}

// invalid returns the problems of the rendering as t, nil when there are none.
func (in *Intent) invalid(t Target) *InvalidError {
	var problems []Problem
	for _, p := range in.Problems {
		if p.Only == TargetNone || p.Only == t {
			problems = append(problems, p)
		}
	}
	return newInvalidError(problems)
}

// target tells what svc asks for. A bad ingress/gateway counts as asking
// for an HTTPRoute, so that its Warning is given and no Ingress is made in
// its place.
func (b *Builder) target(svc *corev1.Service) Target {
	if !Enabled(svc) {
		return TargetNone
	}
	if ref, p := b.parseGateway(svc); ref != nil || p != nil {
		return TargetHTTPRoute
	}
	return TargetIngress
}

// serviceInputsEqual reports whether Parse reads the same of a and b besides
// their identity: the ingress/* annotations and the ports.
func serviceInputsEqual(a, b *corev1.Service) bool {
	return maps.Equal(ingressAnnotations(a), ingressAnnotations(b)) && equality.Semantic.DeepEqual(a.Spec.Ports, b.Spec.Ports)
}

// ingressAnnotations returns the ingress/* annotations of svc.
func ingressAnnotations(svc *corev1.Service) map[string]string {
	var out map[string]string
	for k, v := range svc.Annotations {
		if strings.HasPrefix(k, annotationPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// host returns the rule host: ingress/host when present (empty: no host),
// else the host template's rendering.
func (b *Builder) host(svc *corev1.Service) (string, *Problem) {
	if v, ok := svc.Annotations[AnnotationHost]; ok {
		return checkAnnotation(AnnotationHost, v, ReasonInvalidHost, hostProblem,
			`set a DNS name such as "app.example.com", a wildcard such as "*.example.com", or "" for a rule matching every host`)
	}
	host := b.hostTemplate.render(hostTemplateData{Name: svc.Name, Namespace: svc.Namespace})
	if why := hostProblem(host); why != "" {
		return "", &Problem{
			Annotation: AnnotationHost,
			Reason:     ReasonInvalidHostTemplate,
			Message: fmt.Sprintf("the ingress host template (--ingress-host-template) %s renders %s for this service, which %s; set annotation %s on the service or fix the template",
				quote(b.hostTemplateText), quote(host), why, AnnotationHost),
		}
	}
	return host, nil
}

// hostProblem returns why h is not a valid Ingress rule host, or "".
func hostProblem(h string) string {
	switch {
	case h == "":
		return "is empty"
	case strings.Contains(h, "*"):
		if len(validation.IsWildcardDNS1123Subdomain(h)) > 0 {
			return "is not a valid wildcard host (only a whole first label may be \"*\", followed by a lower-case DNS name, at most 253 characters)"
		}
		return ""
	case netutils.ParseIPSloppy(h) != nil:
		return "is an IP address, but an Ingress host must be a DNS name"
	}
	return dnsSubdomainProblem(h)
}

// dnsSubdomainProblem returns why v is not a DNS-1123 subdomain, or "".
func dnsSubdomainProblem(v string) string {
	if len(validation.IsDNS1123Subdomain(v)) == 0 {
		return ""
	}
	if len(v) > validation.DNS1123SubdomainMaxLength {
		return fmt.Sprintf("is longer than %d characters", validation.DNS1123SubdomainMaxLength)
	}
	return "is not a valid DNS name (lower-case letters, digits, '-' and '.'; each part starting and ending with a letter or digit)"
}

// lowerHint suggests the lower-case spelling of v when that one is valid.
func lowerHint(v string, problem func(string) string) string {
	if l := strings.ToLower(v); l != v && problem(l) == "" {
		return fmt.Sprintf(" (did you mean %s?)", quote(l))
	}
	return ""
}

var pathTypes = []networkingv1.PathType{
	networkingv1.PathTypePrefix,
	networkingv1.PathTypeExact,
	networkingv1.PathTypeImplementationSpecific,
}

func parsePathType(ann map[string]string) (networkingv1.PathType, *Problem) {
	v := strings.TrimSpace(ann[AnnotationPathType])
	if v == "" {
		return DefaultPathType, nil
	}
	hint := ""
	for _, pt := range pathTypes {
		if v == string(pt) {
			return pt, nil
		}
		if strings.EqualFold(v, string(pt)) {
			hint = fmt.Sprintf(" (did you mean %q?)", pt)
		}
	}
	return "", &Problem{
		Annotation: AnnotationPathType,
		Reason:     ReasonInvalidPathType,
		Message: fmt.Sprintf("annotation %s: %s is not a path type%s; use one of: Prefix, Exact, ImplementationSpecific",
			AnnotationPathType, quote(v), hint),
	}
}

// Path rules of the API server's Ingress validation for Exact and Prefix.
var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

// parsePath returns the path. pathType is "" when ingress/path-type is bad;
// then only the rules common to every path type are checked.
func parsePath(ann map[string]string, pathType networkingv1.PathType) (string, *Problem) {
	v := strings.TrimSpace(ann[AnnotationPath])
	if v == "" {
		return DefaultPath, nil
	}
	bad := func(why string) (string, *Problem) {
		return "", &Problem{
			Annotation: AnnotationPath,
			Reason:     ReasonInvalidPath,
			Message:    fmt.Sprintf("annotation %s: %s %s", AnnotationPath, quote(v), why),
		}
	}
	if !strings.HasPrefix(v, "/") {
		return bad(fmt.Sprintf("must be an absolute path starting with \"/\", e.g. %s", quote("/"+v)))
	}
	if !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return bad("must not contain white space or control characters; percent-encode them (e.g. \"%20\" for a space)")
	}
	if pathType == networkingv1.PathTypeExact || pathType == networkingv1.PathTypePrefix {
		for _, seq := range invalidPathSequences {
			if strings.Contains(v, seq) {
				return bad(fmt.Sprintf("must not contain %q with path type %s; remove it, or set %s to ImplementationSpecific", seq, pathType, AnnotationPathType))
			}
		}
		for _, suf := range invalidPathSuffixes {
			if strings.HasSuffix(v, suf) {
				return bad(fmt.Sprintf("must not end with %q with path type %s; remove it, or set %s to ImplementationSpecific", suf, pathType, AnnotationPathType))
			}
		}
	}
	return v, nil
}

// resolvePort returns the number of the Service port the backend uses.
//
// With ingress/port: a value made of digits is a port number, anything else a
// port name; either must exist in svc.spec.ports. Without it: port 80 if
// present, else the port named "http", else the only port number.
func resolvePort(svc *corev1.Service) (int32, *Problem) {
	ports := svc.Spec.Ports
	v, set := svc.Annotations[AnnotationPort]
	v = strings.TrimSpace(v)
	set = set && v != ""
	if len(ports) == 0 {
		msg := "the service has no ports; add one to spec.ports for the Ingress backend"
		if set {
			msg = fmt.Sprintf("annotation %s: the service has no ports, so it has no port %s; add one to spec.ports", AnnotationPort, quote(v))
		}
		return 0, &Problem{Annotation: "", Reason: ReasonNoPorts, Message: msg}
	}
	if set {
		if isDigits(v) {
			n, err := strconv.ParseInt(v, 10, 32)
			if err == nil {
				for _, p := range ports {
					if int64(p.Port) == n {
						return p.Port, nil
					}
				}
			}
		} else {
			for _, p := range ports {
				if p.Name == v {
					return p.Port, nil
				}
			}
		}
		return 0, &Problem{
			Annotation: AnnotationPort,
			Reason:     ReasonUnknownPort,
			Message: fmt.Sprintf("annotation %s: service has no port %s; use one of: %s",
				AnnotationPort, quotePort(v), describePorts(ports)),
		}
	}
	for _, p := range ports {
		if p.Port == DefaultPortNumber {
			return p.Port, nil
		}
	}
	for _, p := range ports {
		if p.Name == DefaultPortName {
			return p.Port, nil
		}
	}
	first := ports[0].Port
	for _, p := range ports[1:] {
		if p.Port != first {
			return 0, &Problem{
				Annotation: AnnotationPort,
				Reason:     ReasonAmbiguousPort,
				Message: fmt.Sprintf("annotation %s is not set and the service has several ports but no port %d and no port named %q; set %s to one of: %s",
					AnnotationPort, DefaultPortNumber, DefaultPortName, AnnotationPort, describePorts(ports)),
			}
		}
	}
	return first, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// quotePort shows a port number bare and a port name quoted.
func quotePort(v string) string {
	if isDigits(v) && len(v) <= 10 {
		return v
	}
	return quote(v)
}

// describePorts lists ports as `80 (http), 443 (https), 9000`, each number
// and name once, in spec order.
func describePorts(ports []corev1.ServicePort) string {
	seen := map[string]bool{}
	var parts []string
	for _, p := range ports {
		s := strconv.Itoa(int(p.Port))
		if p.Name != "" {
			s += " (" + p.Name + ")"
		}
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// class returns the IngressClass name: ingress/class when present (empty:
// none), else the configured class.
func (b *Builder) class(ann map[string]string) (string, *Problem) {
	if _, ok := ann[AnnotationClass]; !ok {
		return b.ingressClass, nil
	}
	return parseName(ann, AnnotationClass, ReasonInvalidClass,
		"set the name of an IngressClass (kubectl get ingressclass), or \"\" for the cluster's default class")
}

func parseTLSSecret(ann map[string]string) (string, *Problem) {
	return parseName(ann, AnnotationTLSSecret, ReasonInvalidTLSSecret, "set the name of a TLS Secret in the service's namespace")
}

// parseName returns the value of annotation key, which must name an object
// (a DNS subdomain) when not empty; fix says how to fix a bad one.
func parseName(ann map[string]string, key, reason, fix string) (string, *Problem) {
	return checkAnnotation(key, ann[key], reason, dnsSubdomainProblem, fix)
}

// checkAnnotation returns v, the value of annotation key without surrounding
// white space, when it is empty or check finds no problem with it, else a
// Problem of reason saying what check found, and fix.
func checkAnnotation(key, v, reason string, check func(string) string, fix string) (string, *Problem) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if why := check(v); why != "" {
		return "", &Problem{
			Annotation: key,
			Reason:     reason,
			Message:    fmt.Sprintf("annotation %s: %s %s%s; %s", key, quote(v), why, lowerHint(v, check), fix),
		}
	}
	return v, nil
}

// parseAnnotations decodes ingress/annotations, a JSON object of strings.
func parseAnnotations(ann map[string]string) (map[string]string, *Problem) {
	v := strings.TrimSpace(ann[AnnotationAnnotations])
	if v == "" {
		return nil, nil
	}
	bad := func(format string, args ...any) (map[string]string, *Problem) {
		return nil, annotationsProblem(format, args...)
	}
	const example = `e.g. {"cert-manager.io/cluster-issuer": "letsencrypt"}`
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return bad("%s is not a JSON object (%v); write a JSON object of string values, %s", quote(v), jsonErrorText(err), example)
	}
	out := make(map[string]string, len(raw))
	var nonString []string
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		var s string
		// json.Unmarshal accepts null for a string, leaving it "": refuse it.
		if err := json.Unmarshal(raw[k], &s); err != nil || bytes.Equal(raw[k], []byte("null")) {
			nonString = append(nonString, quote(k))
			continue
		}
		out[k] = s
	}
	if len(nonString) > 0 {
		if len(nonString) == 1 {
			return bad("the value of %s is not a string; quote it, %s", nonString[0], example)
		}
		return bad("the values of %s are not strings; quote them, %s", listSome(nonString), example)
	}
	var badKeys []string
	for _, k := range slices.Sorted(maps.Keys(out)) {
		if errs := apivalidation.ValidateAnnotations(map[string]string{k: ""}, field.NewPath("metadata", "annotations")); len(errs) > 0 {
			badKeys = append(badKeys, quote(k))
		}
	}
	if len(badKeys) > 0 {
		return bad("invalid annotation %s %s; a key is an optional DNS-subdomain prefix and \"/\", then a name of at most 63 characters (letters, digits, '-', '_', '.', starting and ending with a letter or digit), %s",
			plural(len(badKeys), "key", "keys"), listSome(badKeys), example)
	}
	var own []string
	for _, k := range bookkeepingAnnotations {
		if _, ok := out[k]; ok {
			own = append(own, quote(k))
		}
	}
	if len(own) > 0 {
		// The controller writes and removes these on the object itself:
		// taken from here, each write of it would undo the other's.
		return bad("%s %s the controller's own, which it writes on the Ingress or HTTPRoute while it moves the Service between them; remove %s from %s",
			listSome(own), plural(len(own), "is", "are"), plural(len(own), "it", "them"), AnnotationAnnotations)
	}
	for _, k := range externalDNSControllerKeys {
		if out[k] == withdrawnValue {
			// The controller takes this value for its own withdrawal and
			// removes it when the object is to be in DNS.
			return bad("%s is %s, the value the controller itself writes to withdraw an object from external-dns; use \"dns-controller\" to publish it, or another value to keep it out of DNS",
				quote(k), quote(withdrawnValue))
		}
	}
	if err := apivalidation.ValidateAnnotationsSize(out); err != nil {
		return bad("the annotations are too large (%v)", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func annotationsProblem(format string, args ...any) *Problem {
	return &Problem{
		Annotation: AnnotationAnnotations,
		Reason:     ReasonInvalidAnnotations,
		Message:    fmt.Sprintf("annotation %s: ", AnnotationAnnotations) + fmt.Sprintf(format, args...),
	}
}

// classConflict checks kubernetes.io/ingress.class of ingress/annotations
// against the Ingress class in effect: the API server refuses an Ingress
// where they differ.
func classConflict(annotations map[string]string, class string) *Problem {
	if ic, ok := annotations[ingressClassAnnotation]; ok && class != "" && ic != class {
		return annotationsProblem("%s is %s but the Ingress class (ingress/class or --ingress-class) is %s; remove %s or make them equal",
			ingressClassAnnotation, quote(ic), quote(class), ingressClassAnnotation)
	}
	return nil
}

// jsonErrorText shortens encoding/json errors to what helps a user.
func jsonErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "found a JSON " + te.Value
	}
	return err.Error()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// listSome joins at most 5 items.
func listSome(items []string) string {
	const max = 5
	if len(items) > max {
		return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", len(items)-max)
	}
	return strings.Join(items, ", ")
}

// quote quotes a user value for a message, cutting it to 100 bytes so that a
// huge annotation does not make a huge Event.
func quote(v string) string {
	const max = 100
	if len(v) <= max {
		return strconv.Quote(v)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(v[:cut]) + "..."
}

// parseGateway returns the Gateway svc's HTTPRoute attaches to, or nil when svc
// gets an Ingress: ingress/gateway when present ("" means Ingress), else
// the Builder's default Gateway (--ingress-gateway), if any.
func (b *Builder) parseGateway(svc *corev1.Service) (*GatewayRef, *Problem) {
	v, ok := svc.Annotations[AnnotationGateway]
	if !ok {
		return b.defaultGateway, nil
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	ref, why := parseGatewayRef(v, svc.Namespace)
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

func parseListener(ann map[string]string) (string, *Problem) {
	return parseName(ann, AnnotationGatewayListener, ReasonInvalidGatewayListener,
		"set the name of one of the Gateway's listeners (spec.listeners[].name), or remove it to attach to every listener that allows the route")
}

// routeMatchType maps an Ingress path type to an HTTPRoute path match type.
func routeMatchType(pathType networkingv1.PathType) (gatewayv1.PathMatchType, bool) {
	switch pathType {
	case networkingv1.PathTypePrefix:
		return gatewayv1.PathMatchPathPrefix, true
	case networkingv1.PathTypeExact:
		return gatewayv1.PathMatchExact, true
	}
	return "", false
}

// routePathTypeProblem says that pathType has no HTTPRoute match type.
// pathType "" (already reported as bad) has no problem.
func routePathTypeProblem(pathType networkingv1.PathType) *Problem {
	if _, ok := routeMatchType(pathType); ok || pathType == "" {
		return nil
	}
	return &Problem{
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
