package ingressmanager

import (
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A moved Ingress's Gateway changing under its redirect.

// TestMigrationRedirectGatewayChangesAfterTheMove: once moved (the route on
// the HTTPS listener, the redirect route on the plain-HTTP one, the
// Ingress withdrawn), the Gateway's listeners change or it goes: the
// redirect route follows a renamed listener; with no HTTPS listener left,
// or no Gateway, the Ingress is returned to DNS at once and nothing is
// deleted yet; a listener that never accepts the redirect route keeps the
// Ingress in DNS, naming the listener, with no other write.
func TestMigrationRedirectGatewayChangesAfterTheMove(t *testing.T) {
	http := func(name string) gatewayv1.Listener {
		l := listener(name, gatewayv1.HTTPProtocolType, "")
		l.Port = 80
		return l
	}
	https := listener("https", gatewayv1.HTTPSProtocolType, "*.example.com")
	withListeners := func(ls ...gatewayv1.Listener) *gatewayv1.Gateway {
		gw := redirectGateway()
		gw.Spec.Listeners = ls
		return gw
	}
	rendered := renderMigration(migrationInput{Ingress: tlsIngress(), Gateway: withListeners(http("http"), http("http-b"), https), GatewayVisible: true})
	onBoth := rendered.RedirectRoute.Spec.ParentRefs
	for _, tc := range []struct {
		name     string
		gateway  *gatewayv1.Gateway // nil: gone
		redirect []gatewayv1.ParentReference
		accepted int // of the redirect route's parents, the first accepted
		want     []string
		events   []string
		applied  []string // the redirect route's parents applied
		says     string   // a word of the first Event
	}{
		{name: "the plain-HTTP listener renamed: the redirect route follows it",
			gateway: withListeners(http("http-2"), https), redirect: onBoth[:1], accepted: 1,
			want: []string{"patch httproutes", "patch httproutes"}, events: []string{ReasonHTTPRouteUpdated}, applied: []string{"gw/http-2"}},
		{name: "the HTTPS listener removed: blocked, the Ingress back in DNS, nothing deleted yet",
			gateway: withListeners(http("http")), redirect: onBoth[:1], accepted: 1,
			want: []string{"patch ingresses"}, events: []string{ReasonMigrationBlocked, ReasonReturnedToDNS}, says: "no HTTPS listener"},
		{name: "the Gateway gone: blocked, the Ingress back in DNS, nothing deleted yet",
			redirect: onBoth[:1], accepted: 1,
			want: []string{"patch ingresses"}, events: []string{ReasonMigrationBlocked, ReasonReturnedToDNS}, says: "does not exist"},
		{name: "a plain-HTTP listener that never accepts the redirect route: the Ingress back in DNS, the listener named",
			gateway: withListeners(http("http"), http("http-b"), https), redirect: onBoth, accepted: 1,
			want: []string{"patch ingresses"}, events: []string{ReasonWaitingForHTTPRoute, ReasonReturnedToDNS}, says: "listener http-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			if tc.gateway != nil {
				if err := f.gateways.Update(tc.gateway); err != nil {
					t.Fatal(err)
				}
			} else if err := f.gateways.Delete(redirectGateway()); err != nil {
				t.Fatal(err)
			}
			ing := f.addUserIngress(tlsIngress(), withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain)))
			for _, r := range []*gatewayv1.HTTPRoute{rendered.Route.DeepCopy(), rendered.RedirectRoute.DeepCopy()} {
				r.UID, r.Generation = types.UID(r.Name+"-uid"), 1
				r.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("test")}
				accepted := 1
				if r.Name != "web" {
					r.Spec.ParentRefs, accepted = tc.redirect, tc.accepted
				}
				addOwned(f, f.gateway.GatewayV1().HTTPRoutes(r.Namespace).Create, f.routes, r, func(r *gatewayv1.HTTPRoute) {
					servedOnEachParent(1)(r)
					r.Status.Parents = r.Status.Parents[:accepted]
				})
			}
			f.settled(ing, "web-uid")
			f.clearActions()
			if _, err := requeuedOrNil(f.syncMigration(ing)); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			events := f.events()
			var reasons []string
			for _, e := range events {
				reasons = append(reasons, strings.Fields(e)[1])
			}
			if !slices.Equal(reasons, tc.events) {
				t.Errorf("Events %q, want %q", events, tc.events)
			}
			if tc.says != "" && (len(events) == 0 || !strings.Contains(events[0], tc.says)) {
				t.Errorf("Events %q, want the first to say %q", events, tc.says)
			}
			if tc.applied != nil {
				if got, _ := f.appliedParents("web-https-redirect"); !slices.Equal(got, tc.applied) {
					t.Errorf("the redirect route applied with parents %q, want %q", got, tc.applied)
				}
			}
		})
	}
}
