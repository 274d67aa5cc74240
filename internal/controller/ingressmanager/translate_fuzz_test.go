package ingressmanager

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// fuzzTranslateKeys are the keys FuzzTranslate picks from: every row's,
// some it cannot carry, and one of another family.
var fuzzTranslateKeys = func() []string {
	var keys []string
	for _, row := range translationRows {
		keys = append(keys, row.Keys...)
	}
	return append(keys, nginxPrefix+"auth-url", nginxPrefix+"limit-rps", nginxPrefix+"canary-by-header",
		traefikPrefix+"router.entrypoints", "haproxy.org/allow-list", "example.com/x")
}()

// fuzzFeatures are the features FuzzTranslate's Gateway class may list.
var fuzzFeatures = func() []features.FeatureName {
	var out []features.FeatureName
	for _, row := range translationRows {
		for _, f := range row.Features {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}()

// CRD patterns the rendering must meet.
var (
	durationPattern   = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)
	corsOriginPattern = regexp.MustCompile(`(^\*$)|(^(http(s)?):\/\/(((\*\.)?([a-zA-Z0-9\-]+\.)*[a-zA-Z0-9-]+|\*)(:([0-9]{1,5}))?)$)`)
)

// FuzzTranslate: whatever the annotations and whatever the Gateway class
// supports, translate never fails, is deterministic, accounts for every key
// of its families once (carried or blocking, never both, never dropped),
// uses only features the class lists, and renders a route the HTTPRoute
// CRD admits, with no CR or LF anywhere.
func FuzzTranslate(f *testing.F) {
	f.Add(uint8(0), "true", uint8(1), "false", uint8(3), "https://x.example.com/a", uint8(9), "/v1", uint32(0), false, "/")
	f.Add(uint8(24), "true", uint8(25), "https://*.example.com, null", uint8(26), "get", uint8(28), "X-A\r\nB", uint32(0xffffffff), true, "/api")
	f.Add(uint8(13), "-5", uint8(14), "99999999999999", uint8(15), "3600", uint8(7), "/app", uint32(1), true, "/a(b)")
	f.Add(uint8(16), "HTTPS", uint8(17), "default/ca", uint8(18), "on", uint8(19), "api.internal", uint32(7), false, "/")
	f.Add(uint8(31), "true", uint8(32), "50", uint8(33), "0", uint8(40), "x", uint32(3), true, "/")

	f.Fuzz(func(t *testing.T, k1 uint8, v1 string, k2 uint8, v2 string, k3 uint8, v3 string, k4 uint8, v4 string, feats uint32, known bool, path string) {
		ann := map[string]string{}
		for _, kv := range []struct {
			k uint8
			v string
		}{{k1, v1}, {k2, v2}, {k3, v3}, {k4, v4}} {
			ann[fuzzTranslateKeys[int(kv.k)%len(fuzzTranslateKeys)]] = kv.v
		}
		var supported sets.Set[features.FeatureName]
		if known {
			supported = sets.New[features.FeatureName]()
			for i, feat := range fuzzFeatures {
				if feats&(1<<(i%32)) != 0 {
					supported.Insert(feat)
				}
			}
		}
		c := translate(ann, supported)
		if again := translate(ann, supported); !reflect.DeepEqual(c, again) {
			t.Fatal("translate is not deterministic")
		}
		if !strings.HasPrefix(path, "/") || routePathProblem(path) != nil {
			path = "/"
		}
		c.checkPaths([]string{path})

		seen := map[string]int{}
		for _, k := range c.Keys {
			seen[k]++
			if c.Effects[k] == "" {
				t.Fatalf("%s carried without an effect", k)
			}
		}
		for _, b := range c.Blocking {
			seen[b.Key]++
			if b.Why == "" || strings.ContainsAny(b.Why, "\r\n") {
				t.Fatalf("%s blocks without a clean why: %q", b.Key, b.Why)
			}
		}
		for k := range ann {
			if want := map[bool]int{true: 1, false: 0}[translated(k)]; seen[k] != want {
				t.Fatalf("%s accounted for %d times, want %d: keys %v, blocking %+v", k, seen[k], want, c.Keys, c.Blocking)
			}
		}
		if len(seen) != len(c.Keys)+len(c.Blocking) {
			t.Fatalf("a key twice: keys %v, blocking %+v", c.Keys, c.Blocking)
		}
		if !slices.IsSorted(c.Keys) || !slices.IsSortedFunc(c.Blocking, func(a, b BlockedKey) int { return strings.Compare(a.Key, b.Key) }) {
			t.Fatal("not sorted")
		}
		for _, feat := range c.Features {
			if supported != nil && !supported.Has(feat) {
				t.Fatalf("uses %s, which the class does not list", feat)
			}
		}
		if supported != nil && len(c.Unverified) != 0 || supported == nil && !slices.Equal(c.Unverified, c.Features) {
			t.Fatalf("unverified %v of %v", c.Unverified, c.Features)
		}

		route := routeWith(path)
		c.applyTo(route)
		checkCarriedRoute(t, route)
		data, err := json.Marshal(route)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(string(data), "\r\n") {
			t.Fatalf("the route holds CR or LF: %s", data)
		}
		if _, err := routeWriter(nil, "").applyConfiguration(route, ""); err != nil {
			t.Fatalf("applyConfiguration: %v", err)
		}
		if r := c.HTTPSRedirect; r != nil && r.StatusCode != 308 {
			t.Fatalf("HTTPS redirect %+v", r)
		}
		if w := c.Canary; w != nil && (w.Total < 1 || w.Total > maxWeight || w.Weight < 0 || w.Weight > w.Total) {
			t.Fatalf("canary %+v", w)
		}
		if v := c.BackendTLS; v != nil && (dnsSubdomainProblem(string(v.Hostname)) != "" || len(v.CACertificateRefs) != 1) {
			t.Fatalf("backend TLS %+v", v)
		}
	})
}

// checkCarriedRoute checks what the HTTPRoute CRD (and its CEL rules)
// enforces on the rules translate renders, independently of it.
func checkCarriedRoute(t *testing.T, route *gatewayv1.HTTPRoute) {
	t.Helper()
	if n := len(route.Spec.Rules); n < 1 || n > 16 {
		t.Fatalf("%d rules", n)
	}
	for _, rule := range route.Spec.Rules {
		types := map[gatewayv1.HTTPRouteFilterType]int{}
		for _, f := range rule.Filters {
			types[f.Type]++
			if types[f.Type] > 1 {
				t.Fatalf("filter %s twice", f.Type)
			}
			switch f.Type {
			case gatewayv1.HTTPRouteFilterRequestRedirect:
				r := f.RequestRedirect
				if r == nil || len(rule.BackendRefs) > 0 || !slices.Contains([]int{301, 302, 303, 307, 308}, ptr.Deref(r.StatusCode, 0)) {
					t.Fatalf("redirect %+v with %d backends", r, len(rule.BackendRefs))
				}
				if r.Scheme != nil && *r.Scheme != "http" && *r.Scheme != "https" {
					t.Fatalf("scheme %q", *r.Scheme)
				}
				if r.Hostname != nil && (len(*r.Hostname) > 253 || !hostnamePattern.MatchString(string(*r.Hostname)) || strings.HasPrefix(string(*r.Hostname), "*")) {
					t.Fatalf("redirect hostname %q", *r.Hostname)
				}
				if r.Port != nil && (*r.Port < 1 || *r.Port > 65535) {
					t.Fatalf("port %d", *r.Port)
				}
				checkPathModifier(t, r.Path)
			case gatewayv1.HTTPRouteFilterURLRewrite:
				r := f.URLRewrite
				if r == nil || r.Path == nil && r.Hostname == nil || types[gatewayv1.HTTPRouteFilterRequestRedirect] > 0 {
					t.Fatalf("rewrite %+v", r)
				}
				if r.Hostname != nil && (len(*r.Hostname) > 253 || !hostnamePattern.MatchString(string(*r.Hostname)) || strings.HasPrefix(string(*r.Hostname), "*")) {
					t.Fatalf("rewrite hostname %q", *r.Hostname)
				}
				checkPathModifier(t, r.Path)
			case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
				for _, h := range f.RequestHeaderModifier.Set {
					if !headerName.MatchString(string(h.Name)) || !headerValue.MatchString(h.Value) || len(h.Value) > 4096 {
						t.Fatalf("header %q: %q", h.Name, h.Value)
					}
				}
			case gatewayv1.HTTPRouteFilterCORS:
				c := f.CORS
				if c.MaxAge < 1 || len(c.AllowOrigins) == 0 || len(c.AllowOrigins) > 64 || len(c.AllowMethods) > 9 || len(c.AllowHeaders) > 64 || len(c.ExposeHeaders) > 64 {
					t.Fatalf("cors %+v", c)
				}
				for _, o := range c.AllowOrigins {
					if !corsOriginPattern.MatchString(string(o)) || len(o) > 253 || o == "*" && len(c.AllowOrigins) > 1 {
						t.Fatalf("origin %q of %v", o, c.AllowOrigins)
					}
				}
				if ptr.Deref(c.AllowCredentials, false) && slices.Contains(c.AllowOrigins, "*") {
					t.Fatal("every origin with credentials")
				}
				for _, m := range c.AllowMethods {
					if !slices.Contains(corsMethods, string(m)) {
						t.Fatalf("method %q", m)
					}
				}
				for _, list := range [][]gatewayv1.HTTPHeaderName{c.AllowHeaders, c.ExposeHeaders} {
					for i, h := range list {
						if !headerName.MatchString(string(h)) || slices.Contains(list[:i], h) {
							t.Fatalf("header %q of %v", h, list)
						}
					}
				}
			default:
				t.Fatalf("filter %s", f.Type)
			}
		}
		if to := rule.Timeouts; to != nil {
			for _, d := range []*gatewayv1.Duration{to.Request, to.BackendRequest} {
				if d != nil && !durationPattern.MatchString(string(*d)) {
					t.Fatalf("duration %q", *d)
				}
			}
		}
	}
}

func checkPathModifier(t *testing.T, p *gatewayv1.HTTPPathModifier) {
	t.Helper()
	if p == nil {
		return
	}
	v := ptr.Deref(p.ReplaceFullPath, "")
	if p.Type != gatewayv1.FullPathHTTPPathModifier || !strings.HasPrefix(v, "/") || len(v) > 1024 || strings.ContainsAny(v, "?#$ \t") {
		t.Fatalf("path modifier %+v (%q)", p, v)
	}
}
