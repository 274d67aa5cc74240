package ingressmanager

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Routes of a migrated Ingress's names that are not its own.

// TestMigrationRedirectNeverTouchesOthers: routes of the redirect route's
// name (or of the Ingress's) that are not made from this Ingress: someone
// else's, one whose marker another field manager wrote, one made from an
// Ingress of the name deleted before, one a Service controls; and an
// Ingress named like another's redirect route. None is written or
// deleted, moving or moving back; and no redirect route is made for a
// move someone else's route of the Ingress's name blocks (it would answer
// plain HTTP for the hosts on the Gateway, redirecting to an HTTPS side
// that is not the Ingress's).
func TestMigrationRedirectNeverTouchesOthers(t *testing.T) {
	usersRoute := func(r *gatewayv1.HTTPRoute) {
		r.Annotations = map[string]string{"team": "other"}
		r.ManagedFields = nil
	}
	forged := func(r *gatewayv1.HTTPRoute) { r.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("someone-else")} }
	olderIngress := func(r *gatewayv1.HTTPRoute) { r.Annotations[AnnotationMigratedFrom] = "a-deleted-ingress" }
	servicesRoute := func(r *gatewayv1.HTTPRoute) {
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web-https-redirect", UID: "svc-uid", Controller: ptr.To(true)}}
	}
	optedOut := func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }
	served := servedOnEachParent(1)
	for _, tc := range []struct {
		name     string
		ing      *networkingv1.Ingress
		route    []func(*gatewayv1.HTTPRoute)
		redirect []func(*gatewayv1.HTTPRoute)
		events   []string
		state    string
	}{
		{name: "someone else's route of the Ingress's name: no redirect route made",
			ing: tlsIngress(), route: []func(*gatewayv1.HTTPRoute){served, usersRoute},
			events: []string{ReasonHTTPRouteExists}, state: stateBlocked},
		{name: "a redirect route whose marker another field manager wrote",
			ing: tlsIngress(), redirect: []func(*gatewayv1.HTTPRoute){served, forged},
			events: []string{ReasonHTTPRouteExists}, state: stateMoving},
		{name: "the redirect route of an Ingress of the name deleted before",
			ing: tlsIngress(), redirect: []func(*gatewayv1.HTTPRoute){served, olderIngress},
			events: []string{ReasonHTTPRouteExists}, state: stateMoving},
		{name: "a route of the redirect's name a Service controls",
			ing: tlsIngress(), redirect: []func(*gatewayv1.HTTPRoute){served, servicesRoute},
			events: []string{ReasonHTTPRouteExists}, state: stateMoving},
		{name: "moving back: a redirect route whose marker another field manager wrote",
			ing: tlsIngress(optedOut), redirect: []func(*gatewayv1.HTTPRoute){served, forged}},
		{name: "moving back: the redirect route of an Ingress of the name deleted before",
			ing: tlsIngress(optedOut), redirect: []func(*gatewayv1.HTTPRoute){served, olderIngress}},
		{name: "moving back: a route of the redirect's name a Service controls",
			ing: tlsIngress(optedOut), redirect: []func(*gatewayv1.HTTPRoute){served, servicesRoute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			if err := f.gateways.Update(redirectGateway()); err != nil {
				t.Fatal(err)
			}
			ing := f.addUserIngress(tc.ing, withAddress)
			f.addRenderedRoutes(tlsIngress(), tc.route, tc.redirect)
			f.clearActions()
			if err := f.syncMigration(ing); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); len(got) != 0 {
				t.Errorf("writes = %q, want none", got)
			}
			if got := f.reasons(); !slices.Equal(got, tc.events) {
				t.Errorf("Events %q, want %q", got, tc.events)
			}
			state, _ := f.c.migrations.states.Load(cache.MetaObjectToName(ing))
			if s, _ := state.(string); s != tc.state {
				t.Errorf("state %q, want %q", s, tc.state)
			}
		})
	}

	// An Ingress named like another's redirect route, asking to move: the
	// other's redirect route is in its route's place, untouched.
	f := newCutoverFixture(t, testDrain)
	if err := f.gateways.Update(redirectGateway()); err != nil {
		t.Fatal(err)
	}
	f.addUserIngress(tlsIngress(), withAddress)
	named := f.addUserIngress(tlsIngress(func(i *networkingv1.Ingress) { i.Name, i.UID = "web-https-redirect", "named-uid" }), withAddress)
	f.addRenderedRoutes(tlsIngress(), nil, []func(*gatewayv1.HTTPRoute){served})
	f.clearActions()
	if err := f.syncMigration(named); err != nil {
		t.Fatal(err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("the Ingress named web-https-redirect: writes = %q, want none", got)
	}
	if got := f.reasons(); !slices.Equal(got, []string{ReasonHTTPRouteExists}) {
		t.Errorf("the Ingress named web-https-redirect: Events %q, want HTTPRouteExists", got)
	}
}
