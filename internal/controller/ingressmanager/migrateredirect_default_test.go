package ingressmanager

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
)

// ingress-nginx's defaults of its redirect of plain HTTP to HTTPS, as a
// migrated Ingress's routes must keep them.

// TestMigrationRedirectForceSSLRedirectFalse: force-ssl-redirect "false"
// is not ssl-redirect: ingress-nginx still redirects the TLS hosts of a
// class nginx Ingress by ssl-redirect's default, so the route must carry
// that redirect, not serve plain HTTP.
func TestMigrationRedirectForceSSLRedirectFalse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ing      *networkingv1.Ingress
		redirect bool
	}{
		{name: "force-ssl-redirect false: ssl-redirect's default redirects the TLS hosts",
			ing: tlsIngress(withAnnotations(nginxForceSSLRedirect, "false")), redirect: true},
		{name: "force-ssl-redirect false and ssl-redirect false: no redirect",
			ing: tlsIngress(withAnnotations(nginxForceSSLRedirect, "false", nginxSSLRedirect, "false"))},
		{name: "force-ssl-redirect true: a redirect",
			ing: tlsIngress(withAnnotations(nginxForceSSLRedirect, "true")), redirect: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := renderMigration(migrationInput{Ingress: tc.ing, Gateway: redirectGateway(), GatewayVisible: true})
			if len(m.Blocking) > 0 || m.Route == nil {
				t.Fatalf("blocked or no route: %s %q %v", describeBlocking(m.Blocking), m.Unsupported, m.Problems)
			}
			if got := m.RedirectRoute != nil; got != tc.redirect {
				t.Fatalf("redirect route %v, want %v (effects %v)", got, tc.redirect, m.Carried.Effects)
			}
			if !tc.redirect {
				return
			}
			if s := ptr.Deref(m.Route.Spec.ParentRefs[0].SectionName, ""); s != "https" {
				t.Errorf("the route on listener %q, want https", s)
			}
			checkRedirectRoute(t, tc.ing, m.Route, m.RedirectRoute)
		})
	}
}
