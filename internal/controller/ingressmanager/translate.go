package ingressmanager

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// This file is the translation table: the annotations of ingress-nginx and
// Traefik (on a Service's ingress/annotations, or on an Ingress moving to
// the Gateway API) that the Gateway API can express, each a row that
// renders the same behaviour into an HTTPRoute (or a policy of its
// backend), and the keys it cannot express, each with why. Every key of
// those two prefixes is either carried or blocking: none is copied onto a
// route, where it would mean nothing, and none is dropped without a word.
// docs/reference/translations.md is generated from it.

// Prefixes of the families the table reads.
const (
	nginxPrefix   = "nginx.ingress.kubernetes.io/"
	traefikPrefix = "traefik.ingress.kubernetes.io/"
)

// Where the readers document what their annotations do.
const (
	nginxDocs   = "https://kubernetes.github.io/ingress-nginx/user-guide/nginx-configuration/annotations/"
	traefikDocs = "https://doc.traefik.io/traefik/routing/providers/kubernetes-ingress/#annotations"
)

// translated reports whether key belongs to a family the table reads.
func translated(key string) bool {
	return strings.HasPrefix(key, nginxPrefix) || strings.HasPrefix(key, traefikPrefix)
}

// BlockedKey is an annotation a translation cannot carry, and why.
type BlockedKey struct {
	Key string
	// Why says what the key does that the Gateway API cannot, or what is
	// wrong with its value, for a message.
	Why string
	// Access: the key restricts who may reach the backend
	// (IngressOnlyFamily.Access).
	Access bool
}

// HTTPSRedirect is the redirect of plain-HTTP requests to HTTPS that
// ssl-redirect or force-ssl-redirect asks for. A route cannot tell HTTP
// from HTTPS requests: it takes a second HTTPRoute, on the Gateway's
// plain-HTTP listeners, whose rules answer with a RequestRedirect of
// scheme https and StatusCode (see httpsRedirectRule).
type HTTPSRedirect struct {
	StatusCode int
	// Force: every request is redirected (force-ssl-redirect); otherwise
	// only those to a host the Ingress has TLS for (ssl-redirect).
	Force bool
}

// CanaryWeight is the share of requests an ingress-nginx canary Ingress
// takes from the main Ingress of the same host and path: Weight of Total
// (see canaryBackends).
type CanaryWeight struct {
	Weight, Total int32
}

// Carried is what a set of annotations adds to an HTTPRoute (and to the
// policies of its backends), as translate renders it. A caller renders it
// in this order: translate; checkPaths with the paths of the route's
// rules; forOneRoute unless it also makes the HTTPS redirect's route and
// merges canaries (canaryBackends); the keys of Blocking that
// ingress/gateway-acknowledged lists left off, the others holding the
// object on its Ingress; then applyTo the route. Keys carries exactly what
// the route (with HTTPSRedirect, Canary) renders: a caller that renders a
// part of it otherwise, or not at all, must block its keys.
type Carried struct {
	// Filters are every rule's filters, in order, for a rule whose path is
	// not RewriteTarget (see RuleFilters and applyTo).
	Filters []gatewayv1.HTTPRouteFilter
	// Timeouts are every rule's timeouts; nil for none.
	Timeouts *gatewayv1.HTTPRouteTimeouts
	// RewriteTarget is the path rewrite-target replaces the request's path
	// with, "" for none. ingress-nginx does not rewrite in a location
	// whose path is its target, nor add X-Forwarded-Prefix there: a rule
	// of that path gets Filters without the rewrite and that header.
	RewriteTarget string
	// AppRoot is the path a request for "/" is redirected to (302), ""
	// for none: a rule of its own, before the others (applyTo).
	AppRoot string
	// HTTPSRedirect, when not nil, asks for a second route redirecting
	// plain HTTP to HTTPS. ssl-redirect absent is ingress-nginx's default
	// (true), which redirects the hosts of an nginx Ingress's spec.tls: a
	// caller migrating such an Ingress renders it as HTTPSRedirect{308,
	// false}. One route alone does not carry it (see forOneRoute).
	HTTPSRedirect *HTTPSRedirect
	// BackendTLS is the validation of the BackendTLSPolicy the backend
	// needs (backend-protocol HTTPS), nil for none; its keys always block,
	// saying what to create (see backendTLS).
	BackendTLS *gatewayv1.BackendTLSPolicyValidation
	// Canary is the weight of an ingress-nginx canary Ingress, nil for
	// none: its backend joins the rule of the main Ingress of its host and
	// path (canaryBackends). One route alone, which no Gateway merges with
	// another, does not carry it (see forOneRoute).
	Canary *CanaryWeight
	// Keys lists the keys carried, sorted: rendered, or without effect on
	// a route (Effects says which).
	Keys []string
	// Effects says, per key carried, what it became, for messages.
	Effects map[string]string
	// Blocking lists the keys that cannot be carried, sorted by key.
	Blocking []BlockedKey
	// Features lists the extended features of the Gateway API the
	// rendering needs, sorted.
	Features []features.FeatureName
	// Unverified lists those of Features the Gateway's class was not
	// asked about: supported was nil (the class publishes no
	// status.supportedFeatures, or is not known), so they were rendered
	// on trust.
	Unverified []features.FeatureName

	// keyFeatures are the features each key carried needs.
	keyFeatures map[string][]features.FeatureName
	// verified: the features were checked against the Gateway class's.
	verified bool
	// The parts Filters are made of, for RuleFilters.
	requestHeaders *gatewayv1.HTTPHeaderFilter
	rewrite        *gatewayv1.HTTPURLRewriteFilter
	cors           *gatewayv1.HTTPCORSFilter
	redirect       *gatewayv1.HTTPRequestRedirectFilter
}

// TranslationRow is one row of the translation table: keys of one reader
// that render one behaviour.
type TranslationRow struct {
	// Title names the behaviour.
	Title string
	// Reader is what reads the keys: ingress-nginx or Traefik.
	Reader string
	// Keys are the annotation keys the row reads.
	Keys []string
	// Features are the extended features of the Gateway API the rendering
	// may need; none: core.
	Features []features.FeatureName
	// Renders says what the keys become, and where the result differs
	// from what the reader does.
	Renders string
	// Docs is the reader's documentation of the keys.
	Docs string
	// Proof names the tests that show the rendering.
	Proof []string

	apply func(t *translator)
}

// UntranslatableKeys is a row of keys the Gateway API cannot express.
type UntranslatableKeys struct {
	Reader string
	// Keys are full keys; one ending in "*" stands for every key that
	// starts with what precedes it, one starting with "*" for every key of
	// the reader that ends with what follows it.
	Keys []string
	// Why says what they do that a route cannot.
	Why string
}

// TranslationRows returns the rows of the translation table.
func TranslationRows() []TranslationRow { return slices.Clone(translationRows) }

// UntranslatableRows returns the keys the table blocks, with why; the
// access-restricting keys of IngressOnlyFamilies and keys no row knows
// block too.
func UntranslatableRows() []UntranslatableKeys { return slices.Clone(untranslatable) }

func nginx(names ...string) []string   { return prefixed(nginxPrefix, names) }
func traefik(names ...string) []string { return prefixed(traefikPrefix, names) }

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// The keys of the rows one route alone does not carry (forOneRoute).
var (
	httpsRedirectKeys = nginx("ssl-redirect", "force-ssl-redirect", "preserve-trailing-slash")
	canaryKeys        = nginx("canary", "canary-weight", "canary-weight-total")
)

var translationRows = []TranslationRow{
	{
		Title:  "HTTP to HTTPS redirect",
		Reader: "ingress-nginx",
		Keys:   httpsRedirectKeys,
		Features: []features.FeatureName{
			features.SupportHTTPRouteSchemeRedirect, features.SupportHTTPRoute308RedirectStatusCode,
		},
		Renders: "`HTTPSRedirect`, on a migrated Ingress: its HTTPRoute goes on the Gateway's one HTTPS listener that takes all its hosts " +
			"(or the one `ingress/gateway-listener` names), and a second HTTPRoute, `<name>-https-redirect`, on every plain-HTTP listener " +
			"that takes them, answers each path of the first with `RequestRedirect` scheme `https`, status `--ingress-nginx-http-redirect-code` " +
			"(ingress-nginx's `http-redirect-code`, 308 by default; 307 and 308 need the class to list them); it is made and accepted before the first is moved, never in external-dns, and deleted with it. " +
			"On an Ingress of the class `nginx` with `spec.tls`, `ssl-redirect` absent is its default, `true`. `false`, or no TLS host " +
			"(without `force-ssl-redirect`), renders nothing. It blocks when some hosts have TLS and others not (`ssl-redirect`), when no " +
			"single HTTPS listener takes every host, or no plain-HTTP listener any. ingress-nginx drops a trailing `/` from the redirected " +
			"path unless `preserve-trailing-slash` is `true`; the Gateway keeps the path as it is. A Service's HTTPRoute does not carry it: " +
			"with `force-ssl-redirect`, or `ssl-redirect` and `ingress/tls-secret`, the key blocks",
		Docs: nginxDocs + "#server-side-https-enforcement-through-redirect",
		Proof: []string{"TestTranslateRows/ssl-redirect", "TestTranslateBadValues", "TestServiceRouteCarries",
			"TestMigrationHTTPSRedirect", "TestMigrationRedirectSync", "traffic:TestNginxRedirectOnTheGateway"},
		apply: (*translator).httpsRedirect,
	},
	{
		Title:  "Permanent and temporal redirects",
		Reader: "ingress-nginx",
		Keys:   nginx("permanent-redirect", "permanent-redirect-code", "temporal-redirect", "temporal-redirect-code"),
		Features: []features.FeatureName{
			features.SupportHTTPRouteSchemeRedirect, features.SupportHTTPRoutePathRedirect, features.SupportHTTPRoutePortRedirect,
			features.SupportHTTPRoute303RedirectStatusCode, features.SupportHTTPRoute307RedirectStatusCode, features.SupportHTTPRoute308RedirectStatusCode,
		},
		Renders: "a `RequestRedirect` filter with the URL's scheme, host, port (when given) and path (`ReplaceFullPath`, `/` when the URL " +
			"has none), status `permanent-redirect-code` (default 301) or `temporal-redirect-code` (default 302); the rule loses its " +
			"backendRefs. ingress-nginx's Location is the URL alone; a Gateway may keep the request's query string. " +
			"`temporal-redirect` wins over `permanent-redirect`, as in ingress-nginx. A URL with a query, a fragment, " +
			"user info, an nginx variable or no http(s) scheme blocks; so does a code the Gateway API has no value for (300, 304, 305, 306) " +
			"or one ingress-nginx replaces by its default (outside 300-308, 300-307 for temporal)",
		Docs:  nginxDocs + "#permanent-redirect",
		Proof: []string{"TestTranslateRows/permanent-redirect", "TestTranslateRows/temporal-redirect", "TestTranslateBadValues", "TestServiceRouteCarries", "traffic:TestNginxRowsOnTheGateway"},
		apply: (*translator).redirect,
	},
	{
		Title:    "Application root",
		Reader:   "ingress-nginx",
		Keys:     nginx("app-root"),
		Features: []features.FeatureName{features.SupportHTTPRoutePathRedirect},
		Renders: "a rule of its own, first: `Exact` `/` answered by `RequestRedirect` to the path (`ReplaceFullPath`), status 302, " +
			"as ingress-nginx does for `/` on the whole host (whose Location drops a query string a Gateway may keep)",
		Docs:  nginxDocs + "#rewrite",
		Proof: []string{"TestTranslateRows/app-root", "TestTranslateBadValues", "TestServiceRouteCarries", "traffic:TestNginxRowsOnTheGateway"},
		apply: (*translator).appRoot,
	},
	{
		Title:    "Rewrite without capture groups",
		Reader:   "ingress-nginx",
		Keys:     nginx("rewrite-target", "use-regex"),
		Features: []features.FeatureName{features.SupportHTTPRoutePathRewrite},
		Renders: "a `URLRewrite` filter with `ReplaceFullPath`: nginx's `rewrite` replaces the whole URI with the target, not the " +
			"matched prefix (`ReplacePrefixMatch` would keep the rest of the path); none in a rule whose path is the target, where " +
			"ingress-nginx does not rewrite. ingress-nginx then matches the path as a case-insensitive regular expression, so a path " +
			"with regular-expression characters blocks, and `/api` also takes `/apis` there. A target with `$1`-style capture groups " +
			"or nginx variables, and `use-regex: true`, block; `use-regex: false` renders nothing",
		Docs:  nginxDocs + "#rewrite",
		Proof: []string{"TestTranslateRows/rewrite-target", "TestTranslateRewritePaths", "TestTranslateBadValues", "TestServiceRouteCarries", "traffic:TestNginxRowsOnTheGateway"},
		apply: (*translator).rewriteTarget,
	},
	{
		Title:    "Upstream virtual host",
		Reader:   "ingress-nginx",
		Keys:     nginx("upstream-vhost"),
		Features: []features.FeatureName{features.SupportHTTPRouteHostRewrite},
		Renders:  "the `hostname` of the rule's `URLRewrite` filter (the one of `rewrite-target`, if any): the `Host` header sent to the backend",
		Docs:     nginxDocs + "#custom-nginx-upstream-vhost",
		Proof:    []string{"TestTranslateRows/upstream-vhost", "TestTranslateBadValues", "traffic:TestNginxRowsOnTheGateway"},
		apply:    (*translator).upstreamVhost,
	},
	{
		Title:   "X-Forwarded-Prefix",
		Reader:  "ingress-nginx",
		Keys:    nginx("x-forwarded-prefix"),
		Renders: "a `RequestHeaderModifier` filter setting `X-Forwarded-Prefix`, in rules that rewrite (ingress-nginx sends it only with `rewrite-target`); without a rewrite it renders nothing",
		Docs:    nginxDocs + "#x-forwarded-prefix-header",
		Proof:   []string{"TestTranslateRows/x-forwarded-prefix", "TestTranslateRewritePaths", "TestTranslateBadValues", "traffic:TestNginxRowsOnTheGateway"},
		apply:   (*translator).xForwardedPrefix,
	},
	{
		Title:  "Proxy timeouts",
		Reader: "ingress-nginx",
		Keys:   nginx("proxy-connect-timeout", "proxy-send-timeout", "proxy-read-timeout"),
		Features: []features.FeatureName{
			features.SupportHTTPRouteRequestTimeout, features.SupportHTTPRouteBackendTimeout,
		},
		Renders: "`timeouts.request` and `timeouts.backendRequest` of every rule, both the sum of the three (seconds; ingress-nginx's " +
			"defaults 5, 60 and 60 for those not set). nginx's are limits on each step (connecting, and the pause between two writes or " +
			"two reads), the Gateway's on the whole exchange: the sum lets through every request nginx lets through whose body and " +
			"response come without a pause, and cuts a streamed response that lasts longer, which nginx keeps while data flows",
		Docs:  nginxDocs + "#custom-timeouts",
		Proof: []string{"TestTranslateRows/proxy-read-timeout", "TestTranslateBadValues", "TestServiceRouteCarries"},
		apply: (*translator).timeouts,
	},
	{
		Title:    "Backend TLS",
		Reader:   "ingress-nginx",
		Keys:     nginx("backend-protocol", "proxy-ssl-secret", "proxy-ssl-verify", "proxy-ssl-name", "proxy-ssl-server-name", "proxy-ssl-verify-depth", "proxy-ssl-ciphers", "proxy-ssl-protocols"),
		Features: []features.FeatureName{features.SupportBackendTLSPolicy},
		Renders: "`HTTP` renders nothing. `HTTPS` renders `BackendTLS`, the validation of a BackendTLSPolicy for the backend Service: " +
			"`hostname` from `proxy-ssl-name`, `caCertificateRefs` a ConfigMap named like the `proxy-ssl-secret` Secret; and blocks, saying " +
			"what to create: a BackendTLSPolicy takes its CA from a ConfigMap (key `ca.crt`) where nginx reads a Secret, presents no client " +
			"certificate where nginx presents the Secret's, and always verifies the backend's certificate, where nginx (`proxy-ssl-verify` " +
			"off, its default) does not. `GRPC`, `GRPCS`, `AUTO_HTTP` and `FCGI` block (an HTTPRoute cannot choose the backend's protocol), " +
			"as do `proxy-ssl-verify-depth`, `-ciphers` and `-protocols` (no BackendTLSPolicy field)",
		Docs:  nginxDocs + "#backend-certificate-authentication",
		Proof: []string{"TestTranslateRows/backend-protocol", "TestTranslateBadValues"},
		apply: (*translator).backendTLS,
	},
	{
		Title:    "CORS",
		Reader:   "ingress-nginx",
		Keys:     nginx("enable-cors", "cors-allow-origin", "cors-allow-methods", "cors-allow-headers", "cors-expose-headers", "cors-allow-credentials", "cors-max-age"),
		Features: []features.FeatureName{features.SupportHTTPRouteCORS},
		Renders: "a `CORS` filter with ingress-nginx's defaults for keys not set (every origin, methods `GET, PUT, POST, DELETE, PATCH, " +
			"OPTIONS`, its nine headers, credentials allowed, max age 1728000). With origin `*`, ingress-nginx answers " +
			"`Access-Control-Allow-Origin: *`, which browsers refuse for a request with credentials, whatever " +
			"`Access-Control-Allow-Credentials` says; the filter gets `allowCredentials` unset, so the Gateway (which echoes the origin " +
			"when credentials are allowed) lets no more through. `enable-cors` not `true` renders nothing. Origins `null`, of a scheme " +
			"other than http and https, or with a `*.` label (one label in ingress-nginx, any number in the Gateway API) block",
		Docs:  nginxDocs + "#enable-cors",
		Proof: []string{"TestTranslateRows/enable-cors", "TestTranslateBadValues", "TestServiceRouteCarries"},
		apply: (*translator).cors,
	},
	{
		Title:  "Canary by weight",
		Reader: "ingress-nginx",
		Keys:   canaryKeys,
		Renders: "`Canary`: when a main Ingress of the class `nginx` moves, and its canary (same namespace, hosts and paths) asks to move " +
			"to the same Gateway, the canary's backend joins the rule of each of its paths in the main Ingress's route with weight " +
			"`canary-weight`, the main backend's `canary-weight-total` (default 100) minus it (`canaryBackends`); the canary has no route " +
			"of its own, and follows its main Ingress in external-dns (withdrawn with it once the route carrying its share serves, " +
			"returned with it; never deleted). A canary that does not ask, asks for another Gateway, covers other hosts or paths, or " +
			"is chosen by header or cookie keeps the main Ingress on its Ingress. `canary: false` renders nothing. A Service's " +
			"HTTPRoute is its own route, which no Gateway merges with another: there it blocks",
		Docs: nginxDocs + "#canary",
		Proof: []string{"TestTranslateRows/canary", "TestCanaryBackends", "TestTranslateBadValues", "TestServiceRouteCarries",
			"TestMergeCanaries", "TestCanarySync", "traffic:TestNginxCanaryOnTheGateway"},
		apply: (*translator).canary,
	},
	{
		Title:   "Path matcher",
		Reader:  "Traefik",
		Keys:    traefik("router.pathmatcher"),
		Renders: "nothing: Traefik reads it only for paths of type ImplementationSpecific, which no route has (the path type decides the match)",
		Docs:    traefikDocs,
		Proof:   []string{"TestTranslateRows/traefik"},
		apply:   (*translator).traefikPathMatcher,
	},
	{
		Title:   "Host header and scheme to the backend",
		Reader:  "Traefik",
		Keys:    traefik("service.passhostheader", "service.serversscheme"),
		Renders: "nothing for `passhostheader: true` and `serversscheme: http`, what a route does; `passhostheader: false` (the backend's address as Host) and any other scheme block",
		Docs:    traefikDocs,
		Proof:   []string{"TestTranslateRows/traefik", "TestTranslateBadValues"},
		apply:   (*translator).traefikService,
	},
}

// untranslatable are the keys known to have no Gateway API expression. The
// access-restricting keys of ingressOnlyFamilies block before these, with
// their own reason.
var untranslatable = []UntranslatableKeys{
	{"ingress-nginx", nginx("*-snippet"), "inserts nginx configuration, which a route cannot hold"},
	{"ingress-nginx", nginx("canary-by-header", "canary-by-header-value", "canary-by-header-pattern", "canary-by-cookie"),
		"chooses the canary by a header or a cookie, with ingress-nginx's always/never values and its precedence over the weight, which a route's matches do not reproduce"},
	{"ingress-nginx", nginx("affinity", "affinity-mode", "affinity-canary-behavior", "session-cookie-*"),
		"keeps a client on one backend Pod by a cookie; the Gateway API has no session affinity in its standard channel"},
	{"ingress-nginx", nginx("limit-*", "global-rate-limit*"), "limits the rate of requests or connections, which only the Gateway implementation's policies do"},
	{"ingress-nginx", nginx("ssl-passthrough"), "passes TLS through to the backend, which takes a TLSRoute on a listener in Passthrough mode, not an HTTPRoute"},
	{"ingress-nginx", nginx("ssl-ciphers", "ssl-prefer-server-ciphers"), "tunes the TLS the client connects with, which the Gateway's listener terminates"},
	{"ingress-nginx", nginx("from-to-www-redirect", "server-alias"), "serves or redirects another host, which takes that host in the route's hostnames (or a route of its own)"},
	{"ingress-nginx", nginx("relative-redirects"), "changes the Location of the redirects nginx itself makes, which a Gateway makes its own way"},
	{"ingress-nginx", nginx("custom-headers"),
		"names a ConfigMap of response headers, which the controller does not read (reading ConfigMaps would take access to every ConfigMap of the cluster); set them with a ResponseHeaderModifier filter on the Gateway side"},
	{"ingress-nginx", nginx("connection-proxy-header"), "sets the hop-by-hop Connection header to the backend, which a Gateway manages itself"},
	{"ingress-nginx", nginx("mirror-*"), "mirrors requests to a URL, where a RequestMirror filter takes a Service"},
	{"ingress-nginx", nginx("proxy-body-size", "client-body-buffer-size", "proxy-buffering", "proxy-buffer-size", "proxy-buffers-number",
		"proxy-busy-buffers-size", "proxy-max-temp-file-size", "proxy-request-buffering", "proxy-http-version"),
		"tunes nginx's buffers, body size limit or HTTP version to the backend, which the Gateway API does not configure per route"},
	{"ingress-nginx", nginx("proxy-next-upstream", "proxy-next-upstream-timeout", "proxy-next-upstream-tries"),
		"retries on another backend Pod; the Gateway API's retries are experimental"},
	{"ingress-nginx", nginx("proxy-cookie-domain", "proxy-cookie-path", "proxy-redirect-from", "proxy-redirect-to"),
		"rewrites the backend's cookies or Location headers, which no filter does"},
	{"ingress-nginx", nginx("custom-http-errors", "default-backend", "disable-proxy-intercept-errors"),
		"sends error responses to another backend, which no filter does"},
	{"ingress-nginx", nginx("load-balance", "upstream-hash-by", "upstream-hash-by-subset", "upstream-hash-by-subset-size", "service-upstream"),
		"chooses how requests spread over the backend's Pods, which the Gateway implementation decides"},
	{"ingress-nginx", nginx("enable-access-log", "enable-rewrite-log", "enable-opentelemetry", "opentelemetry-*", "enable-modsecurity",
		"enable-owasp-core-rules", "modsecurity-transaction-id", "http2-push-preload", "satisfy", "fastcgi-*"),
		"configures nginx's logging, tracing, WAF, auth combination or FastCGI, which only the Gateway implementation's own configuration does"},
	{"Traefik", traefik("router.entrypoints"), "chooses Traefik's entry points, which the Gateway's listeners replace: choose one with ingress/gateway-listener"},
	{"Traefik", traefik("router.priority", "router.rulesyntax"), "changes how Traefik orders or parses its routers, where the Gateway API's precedence rules are fixed"},
	{"Traefik", traefik("router.tls", "router.tls.*"), "makes the router serve TLS with its own certificates, which the Gateway's listeners do"},
	{"Traefik", traefik("router.observability.*"), "configures Traefik's logs, metrics and traces of the router, which a route does not"},
	{"Traefik", traefik("service.serverstransport", "service.sticky.*", "service.nativelb", "service.nodeportlb"),
		"configures how Traefik reaches the backend's Pods (transport, sticky sessions, load balancing), which the Gateway implementation decides"},
}

// matchesKey reports whether key is one of the row's keys (see
// UntranslatableKeys.Keys).
func (u UntranslatableKeys) matchesKey(key string) bool {
	return slices.ContainsFunc(u.Keys, func(k string) bool {
		if p, ok := strings.CutSuffix(k, "*"); ok {
			return strings.HasPrefix(key, p)
		}
		if prefix, suffix, ok := strings.Cut(k, "*"); ok {
			return strings.HasPrefix(key, prefix) && strings.HasSuffix(key, suffix) && len(key) > len(prefix)+len(suffix)
		}
		return key == k
	})
}

// translate renders the keys of ann that the table reads (the others are
// not looked at) for a Gateway whose class supports supported, nil when
// that is not known: then every feature is taken as supported and listed
// in Unverified. A feature supported lacks blocks the keys that need it.
// It is a pure function of its arguments and never fails: a bad value
// blocks its key, saying what is wrong.
func translate(ann map[string]string, supported sets.Set[features.FeatureName]) Carried {
	return translateRedirecting(ann, supported, DefaultHTTPRedirectCode)
}

// DefaultHTTPRedirectCode is ingress-nginx's default http-redirect-code,
// the status of its redirect of plain HTTP to HTTPS.
const DefaultHTTPRedirectCode = 308

// HTTPRedirectCodes are the values of ingress-nginx's http-redirect-code
// (its ConfigMap) a route can redirect with.
var HTTPRedirectCodes = []int{301, 302, 307, 308}

// translateRedirecting is translate with redirectCode, ingress-nginx's
// http-redirect-code, as the status of the redirect of plain HTTP to HTTPS
// (one of HTTPRedirectCodes; 0: the default).
func translateRedirecting(ann map[string]string, supported sets.Set[features.FeatureName], redirectCode int) Carried {
	if !anyTranslated(ann) {
		return Carried{verified: supported != nil}
	}
	t := &translator{ann: map[string]string{}, supported: supported, done: map[string]bool{}, blocked: map[string]bool{}, redirectCode: redirectCode}
	t.c.Effects = map[string]string{}
	t.c.keyFeatures = map[string][]features.FeatureName{}
	t.c.verified = supported != nil
	for k, v := range ann {
		if translated(k) {
			t.ann[k] = v
		}
	}
	for k := range t.ann {
		if f := family(k); f != nil && f.restrictsAccess(k) {
			t.blockAccess(k)
		}
	}
	for _, row := range translationRows {
		row.apply(t)
	}
	for k := range t.ann {
		if t.done[k] {
			continue
		}
		why := "is not known to the translation table, so what it does on the Ingress cannot be carried"
		if i := slices.IndexFunc(untranslatable, func(u UntranslatableKeys) bool { return u.matchesKey(k) }); i >= 0 {
			why = untranslatable[i].Why
		}
		t.block(k, why)
	}
	t.finish()
	return t.c
}

// anyTranslated reports whether ann has a key of a family the table reads.
func anyTranslated(ann map[string]string) bool {
	for k := range ann {
		if translated(k) {
			return true
		}
	}
	return false
}

// translator holds one translation while the rows read their keys.
type translator struct {
	ann       map[string]string
	supported sets.Set[features.FeatureName]
	done      map[string]bool
	// blocked: the keys blocked, each once, with its first reason (a list
	// value with many bad entries is said once, not once an entry).
	blocked map[string]bool
	c       Carried
	// redirectCode is the status of the redirect of plain HTTP to HTTPS
	// (ingress-nginx's http-redirect-code); 0: DefaultHTTPRedirectCode.
	redirectCode int
}

// redirectCodeFeature is the extended feature a redirect with code needs,
// "" for the core codes (301, 302).
func redirectCodeFeature(code int) features.FeatureName {
	switch code {
	case 303:
		return features.SupportHTTPRoute303RedirectStatusCode
	case 307:
		return features.SupportHTTPRoute307RedirectStatusCode
	case 308:
		return features.SupportHTTPRoute308RedirectStatusCode
	}
	return ""
}

// get returns the value of an unread key of the row, and marks it read.
func (t *translator) get(name string) (string, bool) {
	v, ok := t.ann[name]
	if !ok || t.done[name] {
		return "", false
	}
	t.done[name] = true
	return v, true
}

// present returns the keys of names that are set and unread, and marks
// them read.
func (t *translator) present(names ...string) []string {
	var out []string
	for _, k := range names {
		if _, ok := t.get(k); ok {
			out = append(out, k)
		}
	}
	return out
}

func (t *translator) block(key, why string) {
	t.done[key] = true
	if t.blocked[key] {
		return
	}
	t.blocked[key] = true
	// Values are said with quoteValue; this leaves out credentials of a URL
	// said otherwise.
	t.c.Blocking = append(t.c.Blocking, BlockedKey{Key: key, Why: userinfo.ReplaceAllString(why, "${1}REDACTED@")})
}

func (t *translator) blockAccess(key string) {
	t.done[key] = true
	if t.blocked[key] {
		return
	}
	t.blocked[key] = true
	t.c.Blocking = append(t.c.Blocking, accessKey(key))
}

// accessKey is key, which restricts access, as a blocking key.
func accessKey(key string) BlockedKey {
	return BlockedKey{Key: key, Access: true, Why: "restricts who may reach the backend, which an HTTPRoute does not enforce"}
}

// blockBad blocks key for its value v, which is not what the reader
// takes: why says what is wrong.
func (t *translator) blockBad(key, v, why string) {
	if t.blocked[key] {
		t.done[key] = true
		return // said once: quoting a long value again would cost it again
	}
	t.block(key, fmt.Sprintf("has value %s, which %s", quoteValue(v), why))
}

// userinfo is the credentials part of a URL anywhere in a value
// (scheme://user:password@).
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@`)

// quoteValue is quote for an annotation's value said in a message (an
// Event, a log line, migrate-plan's output): credentials of a URL in it
// are left out, as a value may be an auth or redirect URL with them.
func quoteValue(v string) string {
	return quote(userinfo.ReplaceAllString(v, "${1}REDACTED@"))
}

func (t *translator) carry(key, effect string) {
	t.done[key] = true
	t.c.Keys = append(t.c.Keys, key)
	t.c.Effects[key] = effect
}

// supports reports whether the Gateway's class supports every one of fs,
// and if not blocks keys saying which it lacks. Unknown support counts as
// supported.
func (t *translator) supports(keys []string, fs ...features.FeatureName) bool {
	var missing []string
	for _, f := range fs {
		if t.supported != nil && !t.supported.Has(f) {
			missing = append(missing, string(f))
		}
	}
	if len(missing) == 0 {
		for _, k := range keys {
			t.c.keyFeatures[k] = append(t.c.keyFeatures[k], fs...)
		}
		return true
	}
	for _, k := range keys {
		t.block(k, fmt.Sprintf("needs %s, which the Gateway's class does not support (its status.supportedFeatures does not list %s)",
			strings.Join(missing, " and "), plural(len(missing), "it", "them")))
	}
	return false
}

// bool reads an ingress-nginx boolean (strconv.ParseBool, as it does),
// blocking the key when it is not one.
func (t *translator) bool(key string) (value, set, ok bool) {
	v, set := t.get(key)
	if !set {
		return false, false, true
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		t.blockBad(key, v, "is not a boolean (true or false, without spaces); ingress-nginx ignores it and uses its default")
		return false, true, false
	}
	return b, true, true
}

// int reads an ingress-nginx integer (strconv.Atoi, as it does), blocking
// the key when it is not one.
func (t *translator) int(key string) (value int, set, ok bool) {
	v, set := t.get(key)
	if !set {
		return 0, false, true
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.blockBad(key, v, "is not a whole number (digits, without spaces or units); ingress-nginx ignores it and uses its default")
		return 0, true, false
	}
	return n, true, true
}

// finish assembles Filters, sorts the lists and notes what was rendered on
// trust.
func (t *translator) finish() {
	c := &t.c
	c.Filters = c.RuleFilters("")
	c.recount()
}

// recount sorts the lists and gathers the features of the keys carried.
func (c *Carried) recount() {
	slices.Sort(c.Keys)
	slices.SortFunc(c.Blocking, func(a, b BlockedKey) int { return strings.Compare(a.Key, b.Key) })
	fs := sets.New[features.FeatureName]()
	for _, k := range c.Keys {
		fs.Insert(c.keyFeatures[k]...)
	}
	c.Features, c.Unverified = nil, nil
	if fs.Len() > 0 {
		c.Features = sets.List(fs)
		if !c.verified {
			c.Unverified = c.Features
		}
	}
}

// uncarry moves those of keys that were carried to Blocking, for why.
func (c *Carried) uncarry(keys []string, why string) {
	for _, k := range keys {
		if i := slices.Index(c.Keys, k); i >= 0 {
			c.Keys = slices.Delete(c.Keys, i, i+1)
			delete(c.Effects, k)
			c.Blocking = append(c.Blocking, BlockedKey{Key: k, Why: why})
		}
	}
	c.recount()
}

// forOneRoute takes out of c what one HTTPRoute alone cannot carry, for a
// caller that makes one route and no other object: the HTTPS redirect,
// which takes a second route, when it applies (always with
// force-ssl-redirect; with ssl-redirect when tls, the object has TLS), and
// a canary, which no Gateway merges with another route.
func (c *Carried) forOneRoute(tls bool) {
	if r := c.HTTPSRedirect; r != nil {
		if r.Force || tls {
			c.uncarry(httpsRedirectKeys, "asks for a redirect of plain HTTP to HTTPS, which takes a second HTTPRoute on the Gateway's "+
				"plain-HTTP listeners where the controller makes one route for a Service: redirect on the Gateway side (an HTTPRoute on its HTTP "+
				"listener with a RequestRedirect filter of scheme https), then acknowledge the key")
		} else {
			c.noHTTPSRedirect("nothing: ingress-nginx redirects only hosts with TLS, and there is none (no ingress/tls-secret or spec.tls)")
		}
	}
	c.withoutCanary()
}

// noHTTPSRedirect drops the HTTPS redirect: its keys carried render
// nothing, for why.
func (c *Carried) noHTTPSRedirect(why string) {
	for _, k := range httpsRedirectKeys {
		if _, ok := c.Effects[k]; ok {
			c.Effects[k] = why
			c.keyFeatures[k] = nil
		}
	}
	c.HTTPSRedirect = nil
	c.recount()
}

// blockHTTPSRedirect drops the HTTPS redirect: its keys carried block, for
// why.
func (c *Carried) blockHTTPSRedirect(why string) {
	c.HTTPSRedirect = nil
	c.uncarry(httpsRedirectKeys, why)
}

// withoutCanary takes a canary out of c: no Gateway merges one route
// with another, and a canary's share joins the main Ingress's route.
func (c *Carried) withoutCanary() {
	if c.Canary != nil {
		c.uncarry(canaryKeys, "makes the Ingress a canary, which ingress-nginx merges into the main Ingress of its host and path, "+
			"where a Gateway merges no route with another: weight both backends in one route's backendRefs, then acknowledge the key")
		c.Canary = nil
	}
}

// RuleFilters returns the filters of a rule whose path match is path.
func (c *Carried) RuleFilters(path string) []gatewayv1.HTTPRouteFilter {
	rewrites := c.RewriteTarget == "" || path != c.RewriteTarget
	var out []gatewayv1.HTTPRouteFilter
	if c.requestHeaders != nil && rewrites {
		out = append(out, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: c.requestHeaders.DeepCopy()})
	}
	if rw := c.rewrite; rw != nil {
		rw = rw.DeepCopy()
		if !rewrites {
			rw.Path = nil
		}
		if rw.Path != nil || rw.Hostname != nil {
			out = append(out, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterURLRewrite, URLRewrite: rw})
		}
	}
	if c.cors != nil {
		out = append(out, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterCORS, CORS: c.cors.DeepCopy()})
	}
	if c.redirect != nil {
		out = append(out, gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestRedirect, RequestRedirect: c.redirect.DeepCopy()})
	}
	return out
}

// applyTo renders c into every rule of route: its filters (see
// RuleFilters; a rule that redirects loses its backends, which the
// Gateway API forbids beside a RequestRedirect) and timeouts, and the rule
// of AppRoot before the others. Canary, HTTPSRedirect and BackendTLS are
// the caller's.
func (c *Carried) applyTo(route *gatewayv1.HTTPRoute) {
	for i := range route.Spec.Rules {
		rule := &route.Spec.Rules[i]
		path := ""
		if len(rule.Matches) == 1 && rule.Matches[0].Path != nil {
			path = ptr.Deref(rule.Matches[0].Path.Value, "")
		}
		rule.Filters = c.RuleFilters(path)
		if len(rule.Filters) == 0 {
			rule.Filters = nil
		}
		if c.redirect != nil {
			rule.BackendRefs = nil
		}
		if c.Timeouts != nil {
			rule.Timeouts = c.Timeouts.DeepCopy()
		}
	}
	if c.AppRoot != "" {
		root := gatewayv1.HTTPRouteRule{
			Matches: []gatewayv1.HTTPRouteMatch{{
				Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To("/")},
			}},
			Filters: []gatewayv1.HTTPRouteFilter{{
				Type: gatewayv1.HTTPRouteFilterRequestRedirect,
				RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{
					Path:       &gatewayv1.HTTPPathModifier{Type: gatewayv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To(c.AppRoot)},
					StatusCode: ptr.To(302),
				},
			}},
		}
		route.Spec.Rules = append([]gatewayv1.HTTPRouteRule{root}, route.Spec.Rules...)
	}
}

// checkPaths blocks what cannot be carried for rules matching paths:
// ingress-nginx takes the path of a location that rewrites for a
// case-insensitive regular expression, which a path with
// regular-expression characters then is.
func (c *Carried) checkPaths(paths []string) {
	if c.RewriteTarget == "" {
		return
	}
	for _, p := range paths {
		if p != c.RewriteTarget && strings.ContainsAny(p, `()[]{}*+?|^$\`) {
			c.RewriteTarget, c.rewrite.Path, c.requestHeaders = "", nil, nil
			c.uncarry(nginx("rewrite-target"), fmt.Sprintf(
				"makes ingress-nginx take the path %s for a regular expression, which a route's path match is not", quote(p)))
			c.uncarry(nginx("x-forwarded-prefix"), "goes with rewrite-target, which blocks")
			c.Filters = c.RuleFilters("")
			return
		}
	}
}

// httpsRedirectRule is the rule of the route on the Gateway's plain-HTTP
// listeners that redirects requests matching matches to HTTPS.
func httpsRedirectRule(r HTTPSRedirect, matches []gatewayv1.HTTPRouteMatch) gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{
		Matches: matches,
		Filters: []gatewayv1.HTTPRouteFilter{{
			Type:            gatewayv1.HTTPRouteFilterRequestRedirect,
			RequestRedirect: &gatewayv1.HTTPRequestRedirectFilter{Scheme: ptr.To("https"), StatusCode: ptr.To(r.StatusCode)},
		}},
	}
}

// canaryBackends returns the backends of the rule of a main Ingress with
// a canary of weight w: the main backend with the weight the canary leaves
// it, the canary's with its own. A weight above the total sends every
// request to the canary, as ingress-nginx does.
func canaryBackends(main, canary gatewayv1.HTTPBackendRef, w CanaryWeight) []gatewayv1.HTTPBackendRef {
	weight := min(max(w.Weight, 0), w.Total)
	main, canary = *main.DeepCopy(), *canary.DeepCopy()
	main.Weight, canary.Weight = ptr.To(w.Total-weight), ptr.To(weight)
	return []gatewayv1.HTTPBackendRef{main, canary}
}

// The rows.

func (t *translator) httpsRedirect() {
	keys := nginx("ssl-redirect", "force-ssl-redirect", "preserve-trailing-slash")
	ssl, sslSet, ok1 := t.bool(keys[0])
	force, _, ok2 := t.bool(keys[1])
	preserve, _, ok3 := t.bool(keys[2])
	if !ok1 || !ok2 || !ok3 {
		t.present(keys...)
		t.blockRest(keys, "goes with a key of the HTTPS redirect that blocks")
		return
	}
	on := t.setKeys(keys)
	if !force && !ssl {
		t.carryAll(on, "nothing: no redirect to HTTPS")
		return
	}
	code := cmp.Or(t.redirectCode, DefaultHTTPRedirectCode)
	fs := []features.FeatureName{features.SupportHTTPRouteSchemeRedirect}
	if f := redirectCodeFeature(code); f != "" {
		fs = append(fs, f)
	}
	if !t.supports(on, fs...) {
		return
	}
	t.c.HTTPSRedirect = &HTTPSRedirect{StatusCode: code, Force: force}
	effect := fmt.Sprintf("a redirect of plain HTTP to HTTPS (%d)", code)
	if !force && sslSet {
		effect += " for hosts with TLS"
	}
	if !preserve {
		effect += ", the path kept as it is (ingress-nginx drops a trailing /)"
	}
	t.carryAll(on, effect)
}

// setKeys returns those of keys that are set.
func (t *translator) setKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := t.ann[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

func (t *translator) carryAll(keys []string, effect string) {
	for _, k := range keys {
		t.carry(k, effect)
	}
}

// blockRest blocks those of keys that are set and neither blocked nor
// carried yet.
func (t *translator) blockRest(keys []string, why string) {
	for _, k := range t.setKeys(keys) {
		if !slices.ContainsFunc(t.c.Blocking, func(b BlockedKey) bool { return b.Key == k }) && !slices.Contains(t.c.Keys, k) {
			t.block(k, why)
		}
	}
}

// nginxURLChars are the characters ingress-nginx admits in a redirect URL
// (its URLIsValidRegex): no nginx variable, white space or control
// character.
var nginxURLChars = regexp.MustCompile(`^[-._~a-zA-Z0-9/:,?&=]*$`)

func (t *translator) redirect() {
	keys := nginx("temporal-redirect", "temporal-redirect-code", "permanent-redirect", "permanent-redirect-code")
	on := t.setKeys(keys)
	if len(on) == 0 {
		return
	}
	t.present(keys...)
	urlKey, codeKey, def, maxCode := keys[0], keys[1], 302, 307
	if _, ok := t.ann[urlKey]; !ok {
		urlKey, codeKey, def, maxCode = keys[2], keys[3], 301, 308
	}
	other := slices.DeleteFunc(slices.Clone(on), func(k string) bool { return k == urlKey || k == codeKey })
	raw, ok := t.ann[urlKey]
	if !ok {
		// A code alone does nothing.
		t.carryAll(on, "nothing: no redirect URL")
		return
	}
	code := def
	if v, ok := t.ann[codeKey]; ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			t.blockRedirect(on, codeKey, fmt.Sprintf("has value %s, which is not a whole number; ingress-nginx then makes no redirect at all", quoteValue(v)))
			return
		case n < 300 || n > maxCode:
			t.blockRedirect(on, codeKey, fmt.Sprintf("has value %s, outside %d-%d, for which ingress-nginx redirects with %d instead; set %d to keep that",
				quoteValue(v), 300, maxCode, def, def))
			return
		case n != 301 && n != 302 && n != 303 && n != 307 && n != 308:
			t.blockRedirect(on, codeKey, fmt.Sprintf("has value %d, which the Gateway API cannot redirect with (only 301, 302, 303, 307 and 308)", n))
			return
		}
		code = n
	}
	filter, why := redirectFilter(raw)
	if why != "" {
		t.blockRedirect(on, urlKey, fmt.Sprintf("has value %s, which %s", quoteValue(raw), why))
		return
	}
	filter.StatusCode = ptr.To(code)
	fs := []features.FeatureName{features.SupportHTTPRouteSchemeRedirect, features.SupportHTTPRoutePathRedirect}
	if filter.Port != nil {
		fs = append(fs, features.SupportHTTPRoutePortRedirect)
	}
	if f := redirectCodeFeature(code); f != "" {
		fs = append(fs, f)
	}
	if !t.supports(on, fs...) {
		return
	}
	t.c.redirect = filter
	for _, k := range on {
		if slices.Contains(other, k) {
			t.carry(k, "nothing: "+strings.TrimPrefix(urlKey, nginxPrefix)+" wins")
			continue
		}
		t.carry(k, fmt.Sprintf("a RequestRedirect (%d) to %s", code, quote(raw)))
	}
}

// blockRedirect blocks key for why, and the other keys of the redirect
// with it.
func (t *translator) blockRedirect(on []string, key, why string) {
	t.block(key, why)
	for _, k := range on {
		if k != key {
			t.block(k, "goes with "+strings.TrimPrefix(key, nginxPrefix)+", which blocks")
		}
	}
}

// redirectFilter parses an ingress-nginx redirect URL into a RequestRedirect
// (without its status code), or says why it cannot.
func redirectFilter(raw string) (*gatewayv1.HTTPRequestRedirectFilter, string) {
	if raw == "" {
		return nil, "is empty; ingress-nginx then makes no redirect at all"
	}
	if !nginxURLChars.MatchString(raw) {
		return nil, "has characters ingress-nginx refuses in a redirect URL (white space, control characters, nginx variables such as $request_uri)"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "is not a URL"
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, "is not an absolute http or https URL, which ingress-nginx requires"
	case u.Opaque != "" || u.User != nil:
		return nil, "is not a URL of the form scheme://host[:port][/path]"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, "has a query or a fragment, which a RequestRedirect cannot set"
	}
	f := &gatewayv1.HTTPRequestRedirectFilter{Scheme: ptr.To(u.Scheme)}
	host := strings.ToLower(u.Hostname())
	if why := dnsSubdomainProblem(host); why != "" {
		return nil, "has a host that " + strings.TrimPrefix(why, "is ") + " (a RequestRedirect takes a DNS name)"
	}
	f.Hostname = ptr.To(gatewayv1.PreciseHostname(host))
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, "has a port outside 1-65535"
		}
		f.Port = ptr.To(gatewayv1.PortNumber(n))
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if len(path) > 1024 {
		return nil, "has a path longer than 1024 characters"
	}
	f.Path = &gatewayv1.HTTPPathModifier{Type: gatewayv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To(path)}
	return f, ""
}

// nginxPathChars are the characters ingress-nginx admits in a rewrite
// target, app root or X-Forwarded-Prefix (its RegexPathWithCapture), less
// "$": a capture group or an nginx variable.
var nginxPathChars = regexp.MustCompile(`^/[-._~a-zA-Z0-9/:]*$`)

// pathProblem says why v cannot be carried as a path, "" when it can.
func pathProblem(v string) string {
	switch {
	case v == "":
		return "is empty"
	case strings.Contains(v, "$"):
		return "refers to a capture group of the path or an nginx variable ($), which a route cannot"
	case !nginxPathChars.MatchString(v):
		return "is not a path of the characters ingress-nginx admits (starting with /; letters, digits, -._~/:)"
	case len(v) > 1024:
		return "is longer than 1024 characters"
	}
	return ""
}

func (t *translator) appRoot() {
	key := nginxPrefix + "app-root"
	v, ok := t.get(key)
	if !ok {
		return
	}
	if why := pathProblem(v); why != "" {
		t.blockBad(key, v, why)
		return
	}
	if !t.supports([]string{key}, features.SupportHTTPRoutePathRedirect) {
		return
	}
	t.c.AppRoot = v
	t.carry(key, "a rule redirecting / to "+quote(v)+" (302)")
}

func (t *translator) rewriteTarget() {
	key, regexKey := nginxPrefix+"rewrite-target", nginxPrefix+"use-regex"
	if _, ok := t.ann[regexKey]; ok {
		regex, _, ok := t.bool(regexKey)
		switch {
		case !ok:
		case regex:
			t.block(regexKey, "makes ingress-nginx match paths as regular expressions, which a route's path match does not")
		default:
			t.carry(regexKey, "nothing: paths are matched as written")
		}
	}
	v, ok := t.get(key)
	if !ok {
		return
	}
	if why := pathProblem(v); why != "" {
		t.blockBad(key, v, why)
		return
	}
	if t.redirected(key) || !t.supports([]string{key}, features.SupportHTTPRoutePathRewrite) {
		return
	}
	t.c.RewriteTarget = v
	if t.c.rewrite == nil {
		t.c.rewrite = &gatewayv1.HTTPURLRewriteFilter{}
	}
	t.c.rewrite.Path = &gatewayv1.HTTPPathModifier{Type: gatewayv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To(v)}
	t.carry(key, "a URLRewrite of the whole path to "+quote(v))
}

// redirected carries key, which changes the proxied request, as without
// effect when the route redirects: nginx answers the redirect before
// proxying (and a RequestRedirect may not share a rule with a URLRewrite).
func (t *translator) redirected(key string) bool {
	if t.c.redirect == nil {
		return false
	}
	t.carry(key, "nothing: the redirect answers first")
	return true
}

func (t *translator) upstreamVhost() {
	key := nginxPrefix + "upstream-vhost"
	v, ok := t.get(key)
	if !ok {
		return
	}
	host := strings.ToLower(v)
	if why := dnsSubdomainProblem(host); why != "" || v == "" {
		t.blockBad(key, v, "is not a DNS name (a URLRewrite sets a host name, without port or nginx variables)")
		return
	}
	if t.redirected(key) || !t.supports([]string{key}, features.SupportHTTPRouteHostRewrite) {
		return
	}
	if t.c.rewrite == nil {
		t.c.rewrite = &gatewayv1.HTTPURLRewriteFilter{}
	}
	t.c.rewrite.Hostname = ptr.To(gatewayv1.PreciseHostname(host))
	t.carry(key, "a URLRewrite of the Host header to "+quote(host))
}

// headerValue is the HTTPRoute CRD's pattern of a header value (of its
// experimental channel, the stricter): printable ASCII, words separated by
// one space or tab. It keeps CR and LF out.
var headerValue = regexp.MustCompile(`^[!-~]+([\t ]?[!-~]+)*$`)

func (t *translator) xForwardedPrefix() {
	key := nginxPrefix + "x-forwarded-prefix"
	v, ok := t.get(key)
	if !ok {
		return
	}
	if why := pathProblem(v); why != "" || !headerValue.MatchString(v) || len(v) > 4096 {
		if why == "" {
			why = "is not a header value"
		}
		t.blockBad(key, v, why)
		return
	}
	if t.redirected(key) {
		return
	}
	if t.c.RewriteTarget == "" {
		t.carry(key, "nothing: ingress-nginx sends it only with rewrite-target")
		return
	}
	t.c.requestHeaders = &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "X-Forwarded-Prefix", Value: v}}}
	t.carry(key, "a RequestHeaderModifier setting X-Forwarded-Prefix to "+quote(v))
}

// maxGatewaySeconds is the longest Gateway API Duration in whole hours
// (each part at most 5 digits).
const maxGatewaySeconds = 99999 * 3600

func (t *translator) timeouts() {
	keys := nginx("proxy-connect-timeout", "proxy-send-timeout", "proxy-read-timeout")
	defaults := []int{5, 60, 60}
	on := t.setKeys(keys)
	if len(on) == 0 {
		return
	}
	total, bad := 0, false
	for i, k := range keys {
		n, set, ok := t.int(k)
		switch {
		case !ok:
			bad = true
		case !set:
			total += defaults[i]
		case n <= 0:
			t.blockBad(k, t.ann[k], "is not a positive number of seconds")
			bad = true
		case n > maxGatewaySeconds:
			t.blockBad(k, t.ann[k], "is longer than a Gateway API duration can be (99999h)")
			bad = true
		default:
			total += n
		}
	}
	if bad {
		t.blockRest(keys, "goes with a proxy timeout that blocks")
		return
	}
	if total > maxGatewaySeconds {
		for _, k := range on {
			t.block(k, "adds up with the other proxy timeouts to more than a Gateway API duration can be (99999h)")
		}
		return
	}
	if !t.supports(on, features.SupportHTTPRouteRequestTimeout, features.SupportHTTPRouteBackendTimeout) {
		return
	}
	d := gatewayv1.Duration(gatewayDuration(total))
	t.c.Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: ptr.To(d), BackendRequest: ptr.To(d)}
	t.carryAll(on, fmt.Sprintf("request and backendRequest timeouts of %s", d))
}

// gatewayDuration formats seconds as a Gateway API Duration.
func gatewayDuration(seconds int) string {
	if seconds == 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		unit string
		secs int
	}{{"h", 3600}, {"m", 60}, {"s", 1}} {
		if n := seconds / u.secs; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.unit)
			seconds -= n * u.secs
		}
	}
	return b.String()
}

func (t *translator) backendTLS() {
	keys := nginx("backend-protocol", "proxy-ssl-secret", "proxy-ssl-verify", "proxy-ssl-name", "proxy-ssl-server-name",
		"proxy-ssl-verify-depth", "proxy-ssl-ciphers", "proxy-ssl-protocols")
	on := t.setKeys(keys)
	if len(on) == 0 {
		return
	}
	t.present(keys...)
	proto := strings.ToUpper(strings.TrimSpace(t.ann[keys[0]]))
	if _, set := t.ann[keys[0]]; !set {
		proto = "HTTP"
	}
	switch proto {
	case "HTTP":
		t.carryAll(on, "nothing: the backend speaks HTTP, as a route's backend does")
		return
	case "HTTPS":
	case "GRPC", "GRPCS", "AUTO_HTTP", "FCGI":
		t.block(keys[0], fmt.Sprintf("has value %s: the backend speaks %s, which an HTTPRoute cannot choose (a GRPCRoute, or the Service port's appProtocol, says it)",
			quote(t.ann[keys[0]]), proto))
		t.blockRest(keys, "goes with backend-protocol, which blocks")
		return
	default:
		t.blockBad(keys[0], t.ann[keys[0]], "is not a protocol ingress-nginx knows (HTTP, HTTPS, GRPC, GRPCS, AUTO_HTTP, FCGI)")
		t.blockRest(keys, "goes with backend-protocol, which blocks")
		return
	}
	for _, k := range nginx("proxy-ssl-verify-depth", "proxy-ssl-ciphers", "proxy-ssl-protocols") {
		if _, ok := t.ann[k]; ok {
			t.block(k, "tunes nginx's TLS to the backend, which a BackendTLSPolicy has no field for")
		}
	}
	name, secret := t.ann[nginxPrefix+"proxy-ssl-name"], t.ann[nginxPrefix+"proxy-ssl-secret"]
	verify := t.ann[nginxPrefix+"proxy-ssl-verify"] == "on" && secret != ""
	var why string
	switch {
	case t.supported != nil && !t.supported.Has(features.SupportBackendTLSPolicy):
		why = "makes nginx connect to the backend with TLS, which takes a BackendTLSPolicy, which the Gateway's class does not support (its status.supportedFeatures does not list BackendTLSPolicy)"
	case !verify:
		why = "makes nginx connect to the backend with TLS without verifying its certificate (proxy-ssl-verify on, with proxy-ssl-secret, verifies it); " +
			"a BackendTLSPolicy always verifies it, against a CA of a ConfigMap (key ca.crt) or the system's, for a host name: create one " +
			"for the Service that your backend's certificate passes, then acknowledge the key"
	case dnsSubdomainProblem(name) != "":
		why = "verifies the backend's certificate for proxy-ssl-name, which is not a DNS name a BackendTLSPolicy can take (nginx's default, the upstream's name, never passes)"
	default:
		ref := secret
		if _, n, ok := strings.Cut(secret, "/"); ok {
			ref = n
		}
		if dnsSubdomainProblem(ref) == "" {
			t.c.BackendTLS = &gatewayv1.BackendTLSPolicyValidation{
				CACertificateRefs: []gatewayv1.LocalObjectReference{{Group: "", Kind: "ConfigMap", Name: gatewayv1.ObjectName(ref)}},
				Hostname:          gatewayv1.PreciseHostname(name),
			}
		}
		why = fmt.Sprintf("verifies the backend's certificate with the CA of Secret %s and presents its client certificate; a BackendTLSPolicy "+
			"takes the CA from a ConfigMap (key ca.crt) and presents none: copy ca.crt into ConfigMap %s, create a BackendTLSPolicy "+
			"for the Service with caCertificateRefs [ConfigMap %s] and hostname %s, then acknowledge the key",
			quote(secret), quote(ref), quote(ref), quote(name))
	}
	t.blockRest(keys, why)
}

// corsOrigin is the HTTPRoute CRD's pattern of a CORS origin, less the
// wildcard label (see cors).
var corsOrigin = regexp.MustCompile(`^https?://([a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+(:[0-9]{1,5})?$`)

// corsMethods are the methods a CORS filter admits.
var corsMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// headerName is the Gateway API's pattern of a header name.
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$")

func (t *translator) cors() {
	keys := nginx("enable-cors", "cors-allow-origin", "cors-allow-methods", "cors-allow-headers", "cors-expose-headers",
		"cors-allow-credentials", "cors-max-age")
	on := t.setKeys(keys)
	if len(on) == 0 {
		return
	}
	enabled, _, ok := t.bool(keys[0])
	if !ok {
		t.present(keys...)
		t.blockRest(keys, "goes with enable-cors, which blocks")
		return
	}
	if !enabled {
		t.present(keys...)
		t.carryAll(on, "nothing: CORS is not enabled")
		return
	}
	f := &gatewayv1.HTTPCORSFilter{MaxAge: 1728000}
	bad := false
	fail := func(key, why string) {
		t.blockBad(key, t.ann[key], why)
		bad = true
	}
	origins := "*"
	if v, ok := t.get(keys[1]); ok {
		origins = v
	}
	for _, o := range strings.Split(origins, ",") {
		o = strings.TrimSpace(o)
		switch {
		case o == "":
			continue
		case o == "*":
			f.AllowOrigins = []gatewayv1.CORSOrigin{"*"}
		case strings.Contains(o, "://*."):
			fail(keys[1], fmt.Sprintf("has the origin %s, whose * stands for one DNS label in ingress-nginx and any number of them in the Gateway API; list the origins instead", quoteValue(o)))
		case !corsOrigin.MatchString(o) || len(o) > 253:
			fail(keys[1], fmt.Sprintf("has the origin %s, which a CORS filter cannot take (only http(s)://host[:port], or *)", quoteValue(o)))
		default:
			if !slices.Contains(f.AllowOrigins, gatewayv1.CORSOrigin(o)) {
				f.AllowOrigins = append(f.AllowOrigins, gatewayv1.CORSOrigin(o))
			}
		}
		if bad || o == "*" || len(f.AllowOrigins) > 64 {
			break
		}
	}
	if !bad && len(f.AllowOrigins) == 0 {
		fail(keys[1], "lists no origin")
	}
	if len(f.AllowOrigins) > 64 {
		fail(keys[1], "lists more than the 64 origins a CORS filter takes")
	}
	methods := "GET, PUT, POST, DELETE, PATCH, OPTIONS"
	if v, ok := t.get(keys[2]); ok {
		methods = v
	}
	for m := range strings.SplitSeq(methods, ",") {
		m = strings.TrimSpace(m)
		switch {
		case m == "":
		case !slices.Contains(corsMethods, m):
			fail(keys[2], fmt.Sprintf("has the method %s, which a CORS filter does not take (%s, upper case)", quote(m), strings.Join(corsMethods, ", ")))
		case !slices.Contains(f.AllowMethods, gatewayv1.HTTPMethodWithWildcard(m)):
			f.AllowMethods = append(f.AllowMethods, gatewayv1.HTTPMethodWithWildcard(m))
		}
	}
	headers := "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization"
	if v, ok := t.get(keys[3]); ok {
		headers = v
		if strings.TrimSpace(v) == "" {
			fail(keys[3], "is empty; ingress-nginx then uses its default headers")
		}
	}
	f.AllowHeaders = t.headerNames(keys[3], headers, false, &bad)
	if v, ok := t.get(keys[4]); ok {
		f.ExposeHeaders = t.headerNames(keys[4], v, true, &bad)
	}
	credentials := true
	if v, ok := t.get(keys[5]); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fail(keys[5], "is not a boolean (true or false, without spaces); ingress-nginx ignores it and allows credentials")
		}
		credentials = b
	}
	if v, ok := t.get(keys[6]); ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			fail(keys[6], "is not a whole number of seconds")
		case n < 1 || n > math.MaxInt32:
			fail(keys[6], fmt.Sprintf("is not between 1 and %d seconds, the max age a CORS filter takes", math.MaxInt32))
		default:
			f.MaxAge = int32(n)
		}
	}
	if bad {
		t.blockRest(keys, "goes with a CORS key that blocks")
		return
	}
	star := len(f.AllowOrigins) == 1 && f.AllowOrigins[0] == "*"
	if credentials && !star {
		f.AllowCredentials = ptr.To(true)
	}
	if !t.supports(on, features.SupportHTTPRouteCORS) {
		return
	}
	t.c.cors = f
	effect := "a CORS filter"
	if credentials && star {
		effect += " allowing every origin without credentials (ingress-nginx's * with credentials, which browsers refuse with credentials)"
	}
	t.carryAll(on, effect)
}

// headerNames parses a comma-separated list of header names; star admits
// "*". A bad name blocks key and sets bad.
func (t *translator) headerNames(key, v string, star bool, bad *bool) []gatewayv1.HTTPHeaderName {
	var out []gatewayv1.HTTPHeaderName
	for h := range strings.SplitSeq(v, ",") {
		h = strings.TrimSpace(h)
		switch {
		case h == "":
		case h == "*" && star:
			out = append(out, "*")
		case !headerName.MatchString(h) || len(h) > 256 || h == "*":
			if !*bad {
				t.blockBad(key, v, fmt.Sprintf("has %s, which is not a header name", quoteValue(h)))
			}
			*bad = true
			return nil
		case !slices.Contains(out, gatewayv1.HTTPHeaderName(h)):
			out = append(out, gatewayv1.HTTPHeaderName(h))
		}
		if len(out) > 64 {
			break // blocks below; the rest is not read (a long list would cost its square)
		}
	}
	if len(out) > 64 {
		t.blockBad(key, v, "lists more than the 64 headers a CORS filter takes")
		*bad = true
		return nil
	}
	return out
}

// maxWeight is the Gateway API's largest backendRef weight.
const maxWeight = 1000000

func (t *translator) canary() {
	keys := nginx("canary", "canary-weight", "canary-weight-total")
	on := t.setKeys(keys)
	if len(on) == 0 {
		return
	}
	for _, k := range nginx("canary-by-header", "canary-by-header-value", "canary-by-header-pattern", "canary-by-cookie") {
		if _, ok := t.ann[k]; ok {
			t.present(keys...)
			t.blockRest(keys, "goes with "+strings.TrimPrefix(k, nginxPrefix)+", which blocks: the canary is not chosen by weight alone")
			return
		}
	}
	enabled, _, ok1 := t.bool(keys[0])
	weight, _, ok2 := t.int(keys[1])
	total, totalSet, ok3 := t.int(keys[2])
	if !ok1 || !ok2 || !ok3 {
		t.blockRest(keys, "goes with a canary key that blocks")
		return
	}
	if !totalSet {
		total = 100
	}
	switch {
	case !enabled && weight > 0:
		t.block(keys[1], "is set while canary is not true, which ingress-nginx refuses")
		t.blockRest(keys, "goes with canary-weight, which blocks")
		return
	case !enabled:
		t.carryAll(on, "nothing: not a canary")
		return
	case total < 1 || total > maxWeight:
		t.blockBad(keys[2], t.ann[keys[2]], fmt.Sprintf("is not between 1 and %d, the weights a route takes", maxWeight))
		t.blockRest(keys, "goes with canary-weight-total, which blocks")
		return
	}
	w := CanaryWeight{Weight: int32(min(max(weight, 0), total)), Total: int32(total)}
	t.c.Canary = &w
	t.carryAll(on, fmt.Sprintf("a backend weighted %d of %d in the main Ingress's rule", w.Weight, w.Total))
}

func (t *translator) traefikPathMatcher() {
	key := traefikPrefix + "router.pathmatcher"
	if _, ok := t.get(key); ok {
		t.carry(key, "nothing: the path type decides the route's match")
	}
}

func (t *translator) traefikService() {
	host, scheme := traefikPrefix+"service.passhostheader", traefikPrefix+"service.serversscheme"
	if v, ok := t.get(host); ok {
		b, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			t.blockBad(host, v, "is not a boolean")
		case !b:
			t.block(host, "makes Traefik send the backend's address as the Host header, where a route sends the client's (or one fixed name)")
		default:
			t.carry(host, "nothing: a route sends the client's Host header")
		}
	}
	if v, ok := t.get(scheme); ok {
		switch v {
		case "http":
			t.carry(scheme, "nothing: a route's backend speaks HTTP")
		case "https":
			t.block(scheme, "makes Traefik connect to the backend with TLS, which takes a BackendTLSPolicy that verifies the backend's certificate: create one, then acknowledge the key")
		default:
			t.blockBad(scheme, v, "is not http; an HTTPRoute cannot choose the backend's protocol")
		}
	}
}
