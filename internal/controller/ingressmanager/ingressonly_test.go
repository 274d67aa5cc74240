package ingressmanager

import (
	"slices"
	"strings"
	"testing"
)

// TestIngressOnlyFamilies: the matching rules of the family table.
func TestIngressOnlyFamilies(t *testing.T) {
	for _, tc := range []struct {
		key                 string
		ingressOnly, access bool
	}{
		{"nginx.ingress.kubernetes.io/auth-type", true, true},
		{"nginx.ingress.kubernetes.io/auth-tls-secret", true, true},
		{"nginx.ingress.kubernetes.io/whitelist-source-range", true, true},
		{"nginx.ingress.kubernetes.io/rewrite-target", true, false},
		{"nginx.ingress.kubernetes.io/author", true, false}, // not auth-*
		{"ingress.kubernetes.io/auth-url", true, true},
		{"traefik.ingress.kubernetes.io/router.middlewares", true, true},
		{"traefik.ingress.kubernetes.io/router.entrypoints", true, false},
		{"haproxy.org/allow-list", true, true},
		{"nginx.org/basic-auth-secret", true, true},
		{"nginx.org/basic-auth-realm", true, false}, // a name, not a restriction
		{"nginx.org/policies", true, true},
		{"nginx.org/server-snippets", true, true},
		{"nginx.org/location-snippets", true, true},
		{"nginx.org/rewrites", true, false},
		{"nginx.com/jwt-key", true, true},
		{"nginx.com/jwt-login-url", true, true},
		{"nginx.com/health-checks", true, false},
		{"appprotect.f5.com/app-protect-enable", true, true},
		{"appprotect.f5.com/app-protect-policy", true, true},
		{"appprotect.f5.com/app-protect-security-log-enable", true, false},
		{"haproxy.org/allow-list-extra", true, false},
		{"kubernetes.io/ingress.class", true, false},
		{"cert-manager.io/cluster-issuer", true, false},
		{"external-dns.alpha.kubernetes.io/hostname", false, false},
		{"konghq.com/plugins", false, false},
		{"example.com/auth-type", false, false},
		{"NGINX.ingress.kubernetes.io/auth-type", false, false},
	} {
		f := family(tc.key)
		if got := f != nil; got != tc.ingressOnly {
			t.Errorf("%s: Ingress-only = %v, want %v", tc.key, got, tc.ingressOnly)
			continue
		}
		if f != nil && f.restrictsAccess(tc.key) != tc.access {
			t.Errorf("%s: restricts access = %v, want %v", tc.key, !tc.access, tc.access)
		}
	}
	// No prefix hides another: a key's family is the one whose prefix it has.
	fams := IngressOnlyFamilies()
	for _, a := range fams {
		for _, b := range fams {
			if a.Prefix != b.Prefix && strings.HasPrefix(b.Prefix, a.Prefix) {
				t.Errorf("prefix %s hides %s", a.Prefix, b.Prefix)
			}
		}
		if a.Reader == "" || a.Instead == "" || !strings.HasSuffix(a.Prefix, "/") && !strings.HasSuffix(a.Prefix, ".") {
			t.Errorf("family %+v is incomplete", a)
		}
	}
	if !slices.IsSortedFunc(fams, func(a, b IngressOnlyFamily) int { return strings.Compare(a.Prefix, b.Prefix) }) {
		t.Error("the families are not sorted by prefix")
	}
}
