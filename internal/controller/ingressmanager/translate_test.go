package ingressmanager

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// nginxAnn and traefikAnn spell out the keys of short names.
func nginxAnn(kv ...string) map[string]string   { return prefixedAnn(nginxPrefix, kv) }
func traefikAnn(kv ...string) map[string]string { return prefixedAnn(traefikPrefix, kv) }

func prefixedAnn(prefix string, kv []string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[prefix+kv[i]] = kv[i+1]
	}
	return out
}

// routeWith is the seed Service's HTTPRoute with path (Prefix), as
// translate's rendering starts from it.
func routeWith(path string) *gatewayv1.HTTPRoute {
	r := seedRoute(service(nil))
	r.Spec.Rules[0].Matches[0].Path.Value = ptr.To(path)
	return r
}

func redirectFilterOf(f gatewayv1.HTTPRequestRedirectFilter) gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &f}
}

func rewriteFilterOf(f gatewayv1.HTTPURLRewriteFilter) gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterURLRewrite, URLRewrite: &f}
}

func fullPath(p string) *gatewayv1.HTTPPathModifier {
	return &gatewayv1.HTTPPathModifier{Type: gatewayv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr.To(p)}
}

// nginxCORSDefaults is the CORS filter of enable-cors alone.
func nginxCORSDefaults() *gatewayv1.HTTPCORSFilter {
	return &gatewayv1.HTTPCORSFilter{
		AllowOrigins: []gatewayv1.CORSOrigin{"*"},
		AllowMethods: []gatewayv1.HTTPMethodWithWildcard{"GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"},
		AllowHeaders: []gatewayv1.HTTPHeaderName{"DNT", "Keep-Alive", "User-Agent", "X-Requested-With", "If-Modified-Since",
			"Cache-Control", "Content-Type", "Range", "Authorization"},
		MaxAge: 1728000,
	}
}

// TestTranslateRows: each row of the table renders its keys into the
// route as the reader's documentation says; the subtests are named for
// the rows' proofs.
func TestTranslateRows(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		path     string                        // the rule's path; "/" when empty
		want     func(r *gatewayv1.HTTPRoute)  // the route, from routeWith(path)
		check    func(t *testing.T, c Carried) // the rest of Carried
		features []features.FeatureName
		noEffect bool // every key carried without rendering anything
	}{
		{name: "ssl-redirect: a redirect to HTTPS, by a route of its own",
			ann: nginxAnn("ssl-redirect", "true"),
			check: func(t *testing.T, c Carried) {
				if !reflect.DeepEqual(c.HTTPSRedirect, &HTTPSRedirect{StatusCode: 308}) {
					t.Errorf("HTTPSRedirect = %+v", c.HTTPSRedirect)
				}
			},
			features: []features.FeatureName{features.SupportHTTPRoute308RedirectStatusCode, features.SupportHTTPRouteSchemeRedirect}},
		{name: "ssl-redirect: force-ssl-redirect redirects every host",
			ann: nginxAnn("force-ssl-redirect", "true", "ssl-redirect", "false", "preserve-trailing-slash", "true"),
			check: func(t *testing.T, c Carried) {
				if !reflect.DeepEqual(c.HTTPSRedirect, &HTTPSRedirect{StatusCode: 308, Force: true}) {
					t.Errorf("HTTPSRedirect = %+v", c.HTTPSRedirect)
				}
			},
			features: []features.FeatureName{features.SupportHTTPRoute308RedirectStatusCode, features.SupportHTTPRouteSchemeRedirect}},
		{name: "ssl-redirect: false asks for nothing", ann: nginxAnn("ssl-redirect", "false"), noEffect: true},
		{name: "permanent-redirect: scheme, host and path, 301, and no backends",
			ann: nginxAnn("permanent-redirect", "https://new.example.com/landing"),
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{redirectFilterOf(gatewayv1.HTTPRequestRedirectFilter{
					Scheme: ptr.To("https"), Hostname: ptr.To(gatewayv1.PreciseHostname("new.example.com")),
					Path: fullPath("/landing"), StatusCode: ptr.To(301),
				})}
				r.Spec.Rules[0].BackendRefs = nil
			},
			features: []features.FeatureName{features.SupportHTTPRoutePathRedirect, features.SupportHTTPRouteSchemeRedirect}},
		{name: "permanent-redirect: a URL without path goes to /, its port is kept, its code too",
			ann: nginxAnn("permanent-redirect", "http://New.Example.com:8080", "permanent-redirect-code", "308"),
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{redirectFilterOf(gatewayv1.HTTPRequestRedirectFilter{
					Scheme: ptr.To("http"), Hostname: ptr.To(gatewayv1.PreciseHostname("new.example.com")),
					Port: ptr.To(gatewayv1.PortNumber(8080)), Path: fullPath("/"), StatusCode: ptr.To(308),
				})}
				r.Spec.Rules[0].BackendRefs = nil
			},
			features: []features.FeatureName{features.SupportHTTPRoute308RedirectStatusCode, features.SupportHTTPRoutePathRedirect,
				features.SupportHTTPRoutePortRedirect, features.SupportHTTPRouteSchemeRedirect}},
		{name: "permanent-redirect: a code alone does nothing", ann: nginxAnn("permanent-redirect-code", "308"), noEffect: true},
		{name: "temporal-redirect: wins over permanent-redirect, with its code; the rewrite does nothing",
			ann: nginxAnn("temporal-redirect", "https://x.example.com/t", "temporal-redirect-code", "307",
				"permanent-redirect", "https://y.example.com", "rewrite-target", "/v2", "upstream-vhost", "in.example.com"),
			path: "/api",
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{redirectFilterOf(gatewayv1.HTTPRequestRedirectFilter{
					Scheme: ptr.To("https"), Hostname: ptr.To(gatewayv1.PreciseHostname("x.example.com")),
					Path: fullPath("/t"), StatusCode: ptr.To(307),
				})}
				r.Spec.Rules[0].BackendRefs = nil
			},
			check: func(t *testing.T, c Carried) {
				for _, k := range []string{"permanent-redirect", "rewrite-target", "upstream-vhost"} {
					if e := c.Effects[nginxPrefix+k]; !strings.HasPrefix(e, "nothing") {
						t.Errorf("%s: effect %q, want nothing", k, e)
					}
				}
			},
			features: []features.FeatureName{features.SupportHTTPRoute307RedirectStatusCode, features.SupportHTTPRoutePathRedirect,
				features.SupportHTTPRouteSchemeRedirect}},
		{name: "app-root: a rule redirecting / first",
			ann: nginxAnn("app-root", "/app"),
			want: func(r *gatewayv1.HTTPRoute) {
				root := gatewayv1.HTTPRouteRule{
					Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchExact), Value: ptr.To("/")}}},
					Filters: []gatewayv1.HTTPRouteFilter{redirectFilterOf(gatewayv1.HTTPRequestRedirectFilter{Path: fullPath("/app"), StatusCode: ptr.To(302)})},
				}
				r.Spec.Rules = append([]gatewayv1.HTTPRouteRule{root}, r.Spec.Rules...)
			},
			features: []features.FeatureName{features.SupportHTTPRoutePathRedirect}},
		{name: "rewrite-target: the whole path replaced (ReplaceFullPath)",
			ann: nginxAnn("rewrite-target", "/v2", "use-regex", "false"), path: "/api",
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{rewriteFilterOf(gatewayv1.HTTPURLRewriteFilter{Path: fullPath("/v2")})}
			},
			features: []features.FeatureName{features.SupportHTTPRoutePathRewrite}},
		{name: "rewrite-target: none where the path is the target, as in ingress-nginx",
			ann: nginxAnn("rewrite-target", "/"), path: "/",
			check: func(t *testing.T, c Carried) {
				if c.RewriteTarget != "/" {
					t.Errorf("RewriteTarget = %q", c.RewriteTarget)
				}
			},
			features: []features.FeatureName{features.SupportHTTPRoutePathRewrite}},
		{name: "upstream-vhost: the hostname of the URLRewrite, with the path's",
			ann: nginxAnn("upstream-vhost", "Internal.example.com", "rewrite-target", "/"), path: "/api",
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{rewriteFilterOf(gatewayv1.HTTPURLRewriteFilter{
					Hostname: ptr.To(gatewayv1.PreciseHostname("internal.example.com")), Path: fullPath("/")})}
			},
			features: []features.FeatureName{features.SupportHTTPRouteHostRewrite, features.SupportHTTPRoutePathRewrite}},
		{name: "upstream-vhost: alone, where the path is the target too",
			ann: nginxAnn("upstream-vhost", "internal.example.com", "rewrite-target", "/"), path: "/",
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{rewriteFilterOf(gatewayv1.HTTPURLRewriteFilter{
					Hostname: ptr.To(gatewayv1.PreciseHostname("internal.example.com"))})}
			},
			features: []features.FeatureName{features.SupportHTTPRouteHostRewrite, features.SupportHTTPRoutePathRewrite}},
		{name: "x-forwarded-prefix: set with the rewrite",
			ann: nginxAnn("x-forwarded-prefix", "/api", "rewrite-target", "/"), path: "/api",
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{
					{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{
						Set: []gatewayv1.HTTPHeader{{Name: "X-Forwarded-Prefix", Value: "/api"}}}},
					rewriteFilterOf(gatewayv1.HTTPURLRewriteFilter{Path: fullPath("/")}),
				}
			},
			features: []features.FeatureName{features.SupportHTTPRoutePathRewrite}},
		{name: "x-forwarded-prefix: nothing without a rewrite", ann: nginxAnn("x-forwarded-prefix", "/api"), noEffect: true},
		{name: "proxy-read-timeout: the three summed, the others at nginx's defaults",
			ann: nginxAnn("proxy-read-timeout", "3600"),
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: ptr.To(gatewayv1.Duration("1h1m5s")), BackendRequest: ptr.To(gatewayv1.Duration("1h1m5s"))}
			},
			features: []features.FeatureName{features.SupportHTTPRouteBackendTimeout, features.SupportHTTPRouteRequestTimeout}},
		{name: "proxy-read-timeout: all three",
			ann: nginxAnn("proxy-connect-timeout", "2", "proxy-send-timeout", "10", "proxy-read-timeout", "48"),
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: ptr.To(gatewayv1.Duration("1m")), BackendRequest: ptr.To(gatewayv1.Duration("1m"))}
			},
			features: []features.FeatureName{features.SupportHTTPRouteBackendTimeout, features.SupportHTTPRouteRequestTimeout}},
		{name: "backend-protocol: HTTP does nothing", ann: nginxAnn("backend-protocol", "HTTP"), noEffect: true},
		{name: "backend-protocol: HTTPS with a verified CA renders the policy and blocks, saying what to create",
			ann: nginxAnn("backend-protocol", "HTTPS", "proxy-ssl-secret", "default/backend-ca", "proxy-ssl-verify", "on",
				"proxy-ssl-name", "api.internal", "proxy-ssl-server-name", "on"),
			check: func(t *testing.T, c Carried) {
				want := &gatewayv1.BackendTLSPolicyValidation{
					CACertificateRefs: []gatewayv1.LocalObjectReference{{Kind: "ConfigMap", Name: "backend-ca"}},
					Hostname:          "api.internal",
				}
				if !reflect.DeepEqual(c.BackendTLS, want) {
					t.Errorf("BackendTLS = %s", dump.Pretty(c.BackendTLS))
				}
				if len(c.Keys) != 0 || len(c.Blocking) != 5 || !strings.Contains(c.Blocking[0].Why, `ConfigMap "backend-ca"`) {
					t.Errorf("keys %v, blocking %+v", c.Keys, c.Blocking)
				}
			}},
		{name: "enable-cors: ingress-nginx's defaults, every origin without credentials",
			ann: nginxAnn("enable-cors", "true"),
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterCORS, CORS: nginxCORSDefaults()}}
			},
			features: []features.FeatureName{features.SupportHTTPRouteCORS}},
		{name: "enable-cors: listed origins with credentials, the rest as given",
			ann: nginxAnn("enable-cors", "true", "cors-allow-origin", "https://a.example.com, http://b.example.com:8080,https://a.example.com",
				"cors-allow-methods", "GET,POST", "cors-allow-headers", "X-Token, Content-Type", "cors-expose-headers", "X-Total, *",
				"cors-max-age", "600"),
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterCORS, CORS: &gatewayv1.HTTPCORSFilter{
					AllowOrigins:     []gatewayv1.CORSOrigin{"https://a.example.com", "http://b.example.com:8080"},
					AllowCredentials: ptr.To(true),
					AllowMethods:     []gatewayv1.HTTPMethodWithWildcard{"GET", "POST"},
					AllowHeaders:     []gatewayv1.HTTPHeaderName{"X-Token", "Content-Type"},
					ExposeHeaders:    []gatewayv1.HTTPHeaderName{"X-Total", "*"},
					MaxAge:           600,
				}}}
			},
			features: []features.FeatureName{features.SupportHTTPRouteCORS}},
		{name: "enable-cors: not enabled, the rest does nothing",
			ann: nginxAnn("enable-cors", "false", "cors-allow-origin", "null"), noEffect: true},
		{name: "canary: the weight, for the main Ingress's rule",
			ann: nginxAnn("canary", "true", "canary-weight", "20"),
			check: func(t *testing.T, c Carried) {
				if !reflect.DeepEqual(c.Canary, &CanaryWeight{Weight: 20, Total: 100}) {
					t.Errorf("Canary = %+v", c.Canary)
				}
			}},
		{name: "canary: above the total, every request",
			ann: nginxAnn("canary", "true", "canary-weight", "500", "canary-weight-total", "200"),
			check: func(t *testing.T, c Carried) {
				if !reflect.DeepEqual(c.Canary, &CanaryWeight{Weight: 200, Total: 200}) {
					t.Errorf("Canary = %+v", c.Canary)
				}
			}},
		{name: "traefik: the path matcher and the defaults of the service keys do nothing",
			ann: traefikAnn("router.pathmatcher", "Path", "service.passhostheader", "true", "service.serversscheme", "http"), noEffect: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := translate(tc.ann, nil)
			if len(c.Blocking) > 0 && tc.check == nil {
				t.Fatalf("blocking: %+v", c.Blocking)
			}
			if len(c.Blocking) == 0 && !slices.Equal(c.Keys, slices.Sorted(mapsKeys(tc.ann))) {
				t.Errorf("Keys = %v, want every key", c.Keys)
			}
			for _, k := range c.Keys {
				if c.Effects[k] == "" {
					t.Errorf("%s carried without an effect", k)
				}
				if tc.noEffect && !strings.HasPrefix(c.Effects[k], "nothing") {
					t.Errorf("%s: effect %q, want nothing", k, c.Effects[k])
				}
			}
			path := tc.path
			if path == "" {
				path = "/"
			}
			got, want := routeWith(path), routeWith(path)
			c.applyTo(got)
			if tc.want != nil {
				tc.want(want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("route:\n%s\nwant:\n%s", dump.Pretty(got.Spec), dump.Pretty(want.Spec))
			}
			if !slices.Equal(c.Features, tc.features) || !slices.Equal(c.Unverified, tc.features) {
				t.Errorf("features %v (unverified %v), want %v", c.Features, c.Unverified, tc.features)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestTranslateBadValues: a value the reader would not take, or that the
// Gateway API cannot hold, blocks its key (and the keys that go with it)
// with a message saying what is wrong; nothing is rendered of it.
func TestTranslateBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		ann  map[string]string
		key  string // the key whose Why is checked
		why  string // in its Why
	}{
		{"a boolean with spaces", nginxAnn("ssl-redirect", " true"), "ssl-redirect", "not a boolean"},
		{"a boolean spelled yes", nginxAnn("force-ssl-redirect", "yes"), "force-ssl-redirect", "not a boolean"},
		{"a relative redirect URL", nginxAnn("permanent-redirect", "/new"), "permanent-redirect", "absolute http or https URL"},
		{"a redirect to another scheme", nginxAnn("permanent-redirect", "ftp://files.example.com"), "permanent-redirect", "absolute http or https URL"},
		{"a redirect with an nginx variable", nginxAnn("permanent-redirect", "https://x.example.com$request_uri"), "permanent-redirect", "nginx variables"},
		{"a redirect with a query", nginxAnn("temporal-redirect", "https://x.example.com/?a=b"), "temporal-redirect", "query"},
		{"a redirect with CR LF", nginxAnn("permanent-redirect", "https://x.example.com/\r\nSet-Cookie: a=b"), "permanent-redirect", "control characters"},
		{"a redirect to an IPv6 address", nginxAnn("permanent-redirect", "https://[2001:db8::1]/"), "permanent-redirect", "characters"},
		{"a redirect with user info", nginxAnn("permanent-redirect", "https://user:pw@x.example.com/"), "permanent-redirect", "characters"},
		{"an empty redirect", nginxAnn("permanent-redirect", ""), "permanent-redirect", "empty"},
		{"a negative code", nginxAnn("permanent-redirect", "https://x.example.com", "permanent-redirect-code", "-301"), "permanent-redirect-code", "redirects with 301 instead"},
		{"a code above the range", nginxAnn("temporal-redirect", "https://x.example.com", "temporal-redirect-code", "308"), "temporal-redirect-code", "outside 300-307"},
		{"a huge code", nginxAnn("permanent-redirect", "https://x.example.com", "permanent-redirect-code", "99999999999999999999"), "permanent-redirect-code", "not a whole number"},
		{"a code the Gateway API has not", nginxAnn("permanent-redirect", "https://x.example.com", "permanent-redirect-code", "300"), "permanent-redirect-code", "only 301, 302, 303, 307 and 308"},
		{"the URL blocks with its code", nginxAnn("permanent-redirect", "https://x.example.com", "permanent-redirect-code", "abc"), "permanent-redirect", "goes with permanent-redirect-code"},
		{"a capture group", nginxAnn("rewrite-target", "/$1"), "rewrite-target", "capture group"},
		{"a rewrite to a URL", nginxAnn("rewrite-target", "https://x.example.com/"), "rewrite-target", "not a path"},
		{"use-regex", nginxAnn("use-regex", "true"), "use-regex", "regular expressions"},
		{"an app root with a query", nginxAnn("app-root", "/app?x=1"), "app-root", "not a path"},
		{"a relative app root", nginxAnn("app-root", "app"), "app-root", "not a path"},
		{"a host with a port", nginxAnn("upstream-vhost", "in.example.com:8080"), "upstream-vhost", "not a DNS name"},
		{"a host with a variable", nginxAnn("upstream-vhost", "$host"), "upstream-vhost", "not a DNS name"},
		{"a header value with CR LF", nginxAnn("x-forwarded-prefix", "/a\r\nX-Evil: 1"), "x-forwarded-prefix", "not a path"},
		{"a timeout with a unit", nginxAnn("proxy-read-timeout", "60s"), "proxy-read-timeout", "not a whole number"},
		{"a negative timeout", nginxAnn("proxy-send-timeout", "-1"), "proxy-send-timeout", "not a positive number"},
		{"a huge timeout", nginxAnn("proxy-connect-timeout", "999999999999"), "proxy-connect-timeout", "99999h"},
		{"timeouts that add up too long", nginxAnn("proxy-read-timeout", "359996400", "proxy-send-timeout", "1"), "proxy-read-timeout", "adds up"},
		{"the other timeouts block with a bad one", nginxAnn("proxy-read-timeout", "x", "proxy-send-timeout", "5"), "proxy-send-timeout", "goes with"},
		{"HTTPS without verification", nginxAnn("backend-protocol", "HTTPS"), "backend-protocol", "without verifying"},
		{"HTTPS verified for no name", nginxAnn("backend-protocol", "HTTPS", "proxy-ssl-secret", "default/ca", "proxy-ssl-verify", "on"), "proxy-ssl-secret", "proxy-ssl-name"},
		{"gRPC", nginxAnn("backend-protocol", "GRPC"), "backend-protocol", "GRPCRoute"},
		{"an unknown protocol", nginxAnn("backend-protocol", "FOO"), "backend-protocol", "not a protocol"},
		{"a verify depth", nginxAnn("backend-protocol", "HTTPS", "proxy-ssl-verify-depth", "2"), "proxy-ssl-verify-depth", "no field"},
		{"CORS enabled with spaces", nginxAnn("enable-cors", "true "), "enable-cors", "not a boolean"},
		{"a null origin", nginxAnn("enable-cors", "true", "cors-allow-origin", "null"), "cors-allow-origin", "cannot take"},
		{"a wildcard origin", nginxAnn("enable-cors", "true", "cors-allow-origin", "https://*.example.com"), "cors-allow-origin", "one DNS label"},
		{"an origin of another scheme", nginxAnn("enable-cors", "true", "cors-allow-origin", "app://x.example.com"), "cors-allow-origin", "cannot take"},
		{"an origin with a path", nginxAnn("enable-cors", "true", "cors-allow-origin", "https://x.example.com/a"), "cors-allow-origin", "cannot take"},
		{"no origin at all", nginxAnn("enable-cors", "true", "cors-allow-origin", " , "), "cors-allow-origin", "no origin"},
		{"a lower-case method", nginxAnn("enable-cors", "true", "cors-allow-methods", "get"), "cors-allow-methods", "upper case"},
		{"a header with a space", nginxAnn("enable-cors", "true", "cors-allow-headers", "X A"), "cors-allow-headers", "not a header name"},
		{"a header with CR LF", nginxAnn("enable-cors", "true", "cors-expose-headers", "X-A\r\nX-B"), "cors-expose-headers", "not a header name"},
		{"a max age of 0", nginxAnn("enable-cors", "true", "cors-max-age", "0"), "cors-max-age", "between 1"},
		{"a huge max age", nginxAnn("enable-cors", "true", "cors-max-age", "4294967296"), "cors-max-age", "between 1"},
		{"the CORS keys block with a bad one", nginxAnn("enable-cors", "true", "cors-max-age", "x"), "enable-cors", "goes with"},
		{"a canary weight while not a canary", nginxAnn("canary-weight", "10"), "canary-weight", "not true"},
		{"a canary total of 0", nginxAnn("canary", "true", "canary-weight-total", "0"), "canary-weight-total", "between 1"},
		{"a canary weight that is no number", nginxAnn("canary", "true", "canary-weight", "ten"), "canary-weight", "not a whole number"},
		{"a cookie canary", nginxAnn("canary", "true", "canary-by-cookie", "c"), "canary-by-cookie", "cookie"},
		{"a snippet", nginxAnn("stream-snippet", "x"), "stream-snippet", "nginx configuration"},
		{"session affinity", nginxAnn("affinity", "cookie", "session-cookie-name", "s"), "session-cookie-name", "session affinity"},
		{"a rate limit", nginxAnn("limit-rps", "10"), "limit-rps", "rate"},
		{"custom headers from a ConfigMap", nginxAnn("custom-headers", "default/headers"), "custom-headers", "ConfigMap"},
		{"TLS passthrough", nginxAnn("ssl-passthrough", "true"), "ssl-passthrough", "TLSRoute"},
		{"an unknown nginx key", nginxAnn("made-up", "1"), "made-up", "not known to the translation table"},
		{"an nginx key of another case", map[string]string{nginxPrefix + "Rewrite-Target": "/"}, "Rewrite-Target", "not known"},
		{"an unknown Traefik key", traefikAnn("router.somethingnew", "1"), "router.somethingnew", "not known"},
		{"Traefik's entry points", traefikAnn("router.entrypoints", "web"), "router.entrypoints", "listeners"},
		{"Traefik without the Host header", traefikAnn("service.passhostheader", "false"), "service.passhostheader", "Host header"},
		{"Traefik to HTTPS", traefikAnn("service.serversscheme", "https"), "service.serversscheme", "BackendTLSPolicy"},
		{"an access key", nginxAnn("auth-url", "https://auth.example.com"), "auth-url", "restricts who may reach"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := translate(tc.ann, nil)
			for k := range tc.ann {
				if slices.Contains(c.Keys, k) {
					t.Errorf("%s carried (%s), want it blocked", k, c.Effects[k])
				}
			}
			i := slices.IndexFunc(c.Blocking, func(b BlockedKey) bool { return strings.HasSuffix(b.Key, "/"+tc.key) })
			if i < 0 {
				t.Fatalf("%s not blocking: %+v", tc.key, c.Blocking)
			}
			if b := c.Blocking[i]; !strings.Contains(b.Why, tc.why) || b.Access != (tc.key == "auth-url") {
				t.Errorf("%s: why %q (access %v), want it to say %q", b.Key, b.Why, b.Access, tc.why)
			}
			if len(c.Blocking) != len(tc.ann) {
				t.Errorf("blocking %+v, want every key", c.Blocking)
			}
			if c.redirect != nil || c.rewrite != nil || c.cors != nil || c.Timeouts != nil || c.Canary != nil || c.AppRoot != "" {
				t.Errorf("rendered something of a blocked key: %s", dump.Pretty(c))
			}
		})
	}
}

// TestTranslateFeatures: a Gateway class that lists its supported
// features and lacks one a key needs blocks the key, naming the feature;
// one that lists nothing leaves them unverified.
func TestTranslateFeatures(t *testing.T) {
	ann := nginxAnn("enable-cors", "true", "app-root", "/app", "proxy-read-timeout", "10")
	traefik := sets.New(features.SupportHTTPRoutePathRedirect, features.SupportHTTPRouteSchemeRedirect)
	c := translate(ann, traefik)
	if !slices.Equal(c.Keys, []string{nginxPrefix + "app-root"}) || len(c.Unverified) != 0 {
		t.Errorf("keys %v, unverified %v", c.Keys, c.Unverified)
	}
	var blocked []string
	for _, b := range c.Blocking {
		blocked = append(blocked, b.Key)
		if b.Key == nginxPrefix+"enable-cors" && !strings.Contains(b.Why, "needs HTTPRouteCORS") {
			t.Errorf("why %q", b.Why)
		}
		if b.Key == nginxPrefix+"proxy-read-timeout" && !strings.Contains(b.Why, "HTTPRouteRequestTimeout and HTTPRouteBackendTimeout") {
			t.Errorf("why %q", b.Why)
		}
	}
	if !slices.Equal(blocked, []string{nginxPrefix + "enable-cors", nginxPrefix + "proxy-read-timeout"}) {
		t.Errorf("blocked %v", blocked)
	}
	if c.cors != nil || c.Timeouts != nil || c.AppRoot != "/app" {
		t.Error("rendered what the class does not support")
	}
	if c := translate(ann, nil); len(c.Unverified) != 4 || len(c.Blocking) != 0 {
		t.Errorf("unknown support: unverified %v, blocking %v", c.Unverified, c.Blocking)
	}
	if c := translate(nginxAnn("backend-protocol", "HTTPS", "proxy-ssl-secret", "ca", "proxy-ssl-verify", "on", "proxy-ssl-name", "a.b"), traefik); c.BackendTLS != nil ||
		!strings.Contains(c.Blocking[0].Why, "does not support") {
		t.Errorf("backend TLS on a class without BackendTLSPolicy: %+v", c.Blocking)
	}
}

// TestTranslateRewritePaths: once it rewrites, ingress-nginx takes the
// path for a regular expression: a path with regular-expression characters
// blocks the rewrite and the header that goes with it.
func TestTranslateRewritePaths(t *testing.T) {
	ann := nginxAnn("rewrite-target", "/", "x-forwarded-prefix", "/api")
	c := translate(ann, nil)
	c.checkPaths([]string{"/api", "/"})
	if len(c.Blocking) != 0 || c.RewriteTarget != "/" {
		t.Fatalf("plain paths: blocking %+v", c.Blocking)
	}
	c.checkPaths([]string{"/api(.*)"})
	if len(c.Keys) != 0 || len(c.Blocking) != 2 || c.RewriteTarget != "" || len(c.Filters) != 0 {
		t.Errorf("regular-expression path: keys %v, blocking %+v, filters %v", c.Keys, c.Blocking, c.Filters)
	}
}

func TestCanaryBackends(t *testing.T) {
	main := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "main"}, Weight: ptr.To[int32](1)}}
	canary := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: "canary"}}}
	for _, tc := range []struct {
		w            CanaryWeight
		main, canary int32
	}{
		{CanaryWeight{20, 100}, 80, 20},
		{CanaryWeight{0, 100}, 100, 0},
		{CanaryWeight{100, 100}, 0, 100},
		{CanaryWeight{-5, 100}, 100, 0},
		{CanaryWeight{150, 100}, 0, 100},
	} {
		got := canaryBackends(main, canary, tc.w)
		if len(got) != 2 || got[0].Name != "main" || got[1].Name != "canary" || *got[0].Weight != tc.main || *got[1].Weight != tc.canary {
			t.Errorf("%+v: %s", tc.w, dump.Pretty(got))
		}
	}
	if *main.Weight != 1 {
		t.Error("the main backend given was changed")
	}
}

// TestTranslationTable: every row's proofs are tests of this package, its
// keys are of the table's families and read by no other row, and its docs
// are a link; the keys it cannot express are of those families too.
func TestTranslationTable(t *testing.T) {
	tests := packageTests(t)
	seen := map[string]string{}
	for _, row := range TranslationRows() {
		if row.Title == "" || row.Renders == "" || !strings.HasPrefix(row.Docs, "https://") || len(row.Proof) == 0 || row.apply == nil {
			t.Errorf("row %q is incomplete", row.Title)
		}
		for _, k := range row.Keys {
			if !translated(k) {
				t.Errorf("row %q: key %s is of no family the table reads", row.Title, k)
			}
			if other, ok := seen[k]; ok {
				t.Errorf("key %s is in rows %q and %q", k, other, row.Title)
			}
			seen[k] = row.Title
			if f := family(k); f != nil && f.restrictsAccess(k) {
				t.Errorf("row %q: key %s restricts access", row.Title, k)
			}
		}
		for _, p := range row.Proof {
			name, sub, _ := strings.Cut(p, "/")
			body, ok := tests[name]
			if !ok || sub != "" && !strings.Contains(body, `"`+sub) {
				t.Errorf("row %q: proof %s is no test of the package", row.Title, p)
			}
		}
	}
	for _, u := range UntranslatableRows() {
		for _, k := range u.Keys {
			if !translated(k) || u.Why == "" {
				t.Errorf("untranslatable %s is incomplete", k)
			}
			if _, ok := seen[k]; ok {
				t.Errorf("untranslatable %s is a row's key", k)
			}
		}
	}
}

// packageTests returns the source of every Test function of the package,
// by name.
func packageTests(t *testing.T) map[string]string {
	t.Helper()
	out := testsIn(t, ".", "")
	maps.Copy(out, testsIn(t, filepath.Join("..", "..", "..", "test", "integration", "traffic"), trafficProof))
	return out
}

// trafficProof prefixes the proofs that are tests of
// test/integration/traffic, through a real data plane.
const trafficProof = "traffic:"

// testsIn returns the source of each Test function of the test files of
// dir, by name with prefix.
func testsIn(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Test") {
				out[prefix+fn.Name.Name] = string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
			}
		}
	}
	return out
}

// TestTranslateHostileValues: a value with CR/LF (header or redirect
// injection), NUL, or unicode (bidi, zero-width, a homoglyph host) set on
// any key of the table, alone or with enable-cors, either blocks or
// renders a route with no control and no non-ASCII character. (Held.)
func TestTranslateHostileValues(t *testing.T) {
	hostile := map[string]string{
		"crlf":       "/x\r\nX-Injected: 1",
		"lf":         "https://a.example.com/\nSet-Cookie: a=b",
		"bidi":       "/\u202eevil",
		"zero-width": "ex\u200bample.com",
		"homoglyph":  "https://ex\u0430mple.com/",
		"nul":        "a\x00b",
	}
	for _, row := range TranslationRows() {
		for _, key := range row.Keys {
			for name, v := range hostile {
				for _, base := range []map[string]string{{}, nginxAnn("enable-cors", "true")} {
					ann := maps.Clone(base)
					ann[key] = v
					c := translate(ann, nil)
					route := routeWith("/")
					c.applyTo(route)
					data, err := json.Marshal(route)
					if err != nil {
						t.Fatal(err)
					}
					// JSON escapes control characters; non-ASCII stays as is.
					for _, r := range string(data) {
						if r > 0x7e || r < 0x20 {
							t.Errorf("%s=%s: the route has %q", key, name, r)
						}
					}
					if strings.Contains(string(data), `\r`) || strings.Contains(string(data), `\n`) || strings.Contains(string(data), `\u0000`) {
						t.Errorf("%s=%s: the route has a control character: %s", key, name, data)
					}
				}
			}
		}
	}
}

// longCORSLists are CORS list values near the API server's 256 KiB limit
// of a Service's annotations: headers and origins far past the 64 a CORS
// filter takes, and methods every one of them bad.
func longCORSLists() map[string]string {
	var b strings.Builder
	for i := 0; b.Len() < 250000; i++ {
		fmt.Fprintf(&b, "X-%d,", i)
	}
	headers := b.String()
	origins := strings.ReplaceAll(strings.ReplaceAll(headers, "X-", "https://h"), ",", ".example.com,")
	return map[string]string{"cors-allow-headers": headers, "cors-expose-headers": headers, "cors-allow-origin": origins, "cors-allow-methods": headers}
}

// A long CORS list blocks, its key said once with one reason: a list read
// entry by entry to its end, or its whole value quoted again for each bad
// entry, cost a worker the square of its length on every sync (0.9 s for
// 250 KB of headers; 250 s and 16.6 GB allocated for 250 KB of bad
// methods, before).
// BenchmarkTranslateLongCORSLists measures the cost.
func TestTranslateLongCORSLists(t *testing.T) {
	for key, v := range longCORSLists() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := translate(nginxAnn("enable-cors", "true", key, v), nil)
		runtime.ReadMemStats(&after)
		// Bytes allocated, not time: the same on any machine. 250 KB of
		// bad methods allocated 16.6 GB before (each bad entry quoted the
		// whole value again), 8.8 MB after.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200*uint64(len(v)) {
			t.Errorf("%s of %d bytes: translating it allocated %d bytes, more than 200 times its size", key, len(v), alloc)
		}
		n := 0
		for _, b := range c.Blocking {
			if b.Key == nginxPrefix+key {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s of %d bytes: blocked %d times, want once: %d blocking keys", key, len(v), n, len(c.Blocking))
		}
	}
}

func BenchmarkTranslateLongCORSLists(b *testing.B) {
	for key, v := range longCORSLists() {
		ann := nginxAnn("enable-cors", "true", key, v)
		b.Run(key, func(b *testing.B) {
			for b.Loop() {
				translate(ann, nil)
			}
		})
	}
}
