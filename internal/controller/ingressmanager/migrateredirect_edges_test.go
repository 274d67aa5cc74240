package ingressmanager

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Edge inputs of the redirect's rendering.

// TestMigrationRedirectEdges: edge inputs of the redirect's rendering
// never panic and either render within the API's limits or block saying
// why: names about the 253 characters of an object's name, more plain-HTTP
// listeners than a route has parents, an Ingress without a host, another
// redirect code.
func TestMigrationRedirectEdges(t *testing.T) {
	force := withAnnotations(nginxForceSSLRedirect, "true")
	named := func(n int) func(*networkingv1.Ingress) {
		return func(i *networkingv1.Ingress) { i.Name = strings.Repeat("w", n) }
	}
	hostless := func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "" }
	withListeners := func(plain int, httpsHost string) *gatewayv1.Gateway {
		gw := redirectGateway()
		gw.Spec.Listeners = []gatewayv1.Listener{listener("https", gatewayv1.HTTPSProtocolType, httpsHost)}
		for i := range plain {
			l := listener(fmt.Sprintf("http-%d", i), gatewayv1.HTTPProtocolType, "")
			l.Port = gatewayv1.PortNumber(8000 + i)
			gw.Spec.Listeners = append(gw.Spec.Listeners, l)
		}
		return gw
	}
	for _, tc := range []struct {
		name    string
		ing     *networkingv1.Ingress
		gateway *gatewayv1.Gateway
		code    int
		parents int    // of the redirect route; 0: blocked
		why     string // a word of why, when blocked
		status  int
	}{
		{name: "a name whose redirect route's is 253 characters", ing: userIngress(force, named(253-len(redirectRouteSuffix))),
			gateway: redirectGateway(), parents: 1, status: 308},
		{name: "a name one longer", ing: userIngress(force, named(254-len(redirectRouteSuffix))),
			gateway: redirectGateway(), why: "longer than 253"},
		{name: "a name of 253 characters", ing: userIngress(force, named(253)), gateway: redirectGateway(), why: "longer than 253"},
		{name: "32 plain-HTTP listeners: one parent each", ing: userIngress(force), gateway: withListeners(32, ""), parents: 32, status: 308},
		{name: "33 plain-HTTP listeners: blocks", ing: userIngress(force), gateway: withListeners(33, ""), why: "more than an HTTPRoute's 32 parents"},
		{name: "no host, force-ssl-redirect, an HTTPS listener for any host", ing: userIngress(force, hostless), gateway: withListeners(1, ""), parents: 1, status: 308},
		{name: "no host, force-ssl-redirect, the HTTPS listener for *.example.com only: blocks",
			ing: userIngress(force, hostless), gateway: redirectGateway(), why: "no HTTPS listener"},
		{name: "--ingress-nginx-http-redirect-code 301", ing: tlsIngress(), gateway: redirectGateway(), code: 301, parents: 1, status: 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := renderMigration(migrationInput{Ingress: tc.ing, Gateway: tc.gateway, GatewayVisible: true, RedirectCode: tc.code})
			if tc.parents == 0 {
				if len(m.Blocking) == 0 || !strings.Contains(m.Blocking[0].Why, tc.why) || m.RedirectRoute != nil {
					t.Fatalf("blocking %s, redirect route %v; want it blocked saying %q", describeBlocking(m.Blocking), m.RedirectRoute != nil, tc.why)
				}
				return
			}
			if len(m.Blocking) > 0 || m.RedirectRoute == nil {
				t.Fatalf("blocking %s, redirect route %v %q", describeBlocking(m.Blocking), m.RedirectRoute != nil, m.Unsupported)
			}
			rr := m.RedirectRoute
			if len(rr.Name) > 253 || len(rr.Spec.ParentRefs) != tc.parents || !slices.Equal(rr.Spec.Hostnames, m.Route.Spec.Hostnames) {
				t.Errorf("redirect route %d characters, %d parents, hostnames %q (the route's %q)", len(rr.Name), len(rr.Spec.ParentRefs), rr.Spec.Hostnames, m.Route.Spec.Hostnames)
			}
			if got := ptr.Deref(rr.Spec.Rules[0].Filters[0].RequestRedirect.StatusCode, 0); got != tc.status {
				t.Errorf("status %d, want %d", got, tc.status)
			}
		})
	}
}
