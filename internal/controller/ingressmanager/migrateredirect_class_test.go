package ingressmanager

import (
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// What a Gateway's class supports decides what a migrated Ingress's
// routes carry, the redirect's status code among it.

// TestMigrationRedirectHonoursTheGatewayClass: a redirect with 308 (or
// 307) is an extended feature; a Gateway whose class does not list it
// keeps the Ingress on its Ingress, nothing made, until the flag says a
// core code (301) the class needs nothing for.
func TestMigrationRedirectHonoursTheGatewayClass(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      int
		supported []features.FeatureName
		want      []string
		events    []string
		state     string
		status    int // of the redirect route created
	}{
		{name: "the class does not list 308: blocked, nothing made",
			supported: []features.FeatureName{features.SupportHTTPRouteSchemeRedirect},
			events:    []string{ReasonMigrationBlocked}, state: stateBlocked},
		{name: "the class does not list 308, the flag says 301: the redirect route, 301",
			code: 301, supported: []features.FeatureName{features.SupportHTTPRouteSchemeRedirect},
			want: []string{"create httproutes"}, events: []string{ReasonHTTPRouteCreated}, state: stateMoving, status: 301},
		{name: "the class lists 308: the redirect route, 308",
			supported: []features.FeatureName{features.SupportHTTPRouteSchemeRedirect, features.SupportHTTPRoute308RedirectStatusCode},
			want:      []string{"create httproutes"}, events: []string{ReasonHTTPRouteCreated}, state: stateMoving, status: 308},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			if err := f.gateways.Update(redirectGateway()); err != nil {
				t.Fatal(err)
			}
			f.withClass("example", tc.supported...)
			f.c.migrations.redirectCode = tc.code
			ing := f.addUserIngress(tlsIngress(), withAddress)
			f.clearActions()
			if err := f.syncMigration(ing); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			if got := f.reasons(); !slices.Equal(got, tc.events) {
				t.Errorf("Events %q, want %q", got, tc.events)
			}
			state, _ := f.c.migrations.states.Load(cache.MetaObjectToName(ing))
			if s, _ := state.(string); s != tc.state {
				t.Errorf("state %q, want %q", s, tc.state)
			}
			for _, a := range f.allActions() {
				c, ok := a.(k8stesting.CreateActionImpl)
				if !ok {
					continue
				}
				r, ok := c.Object.(*gatewayv1.HTTPRoute)
				if !ok || r.Name != "web-https-redirect" || len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].Filters) != 1 ||
					ptr.Deref(r.Spec.Rules[0].Filters[0].RequestRedirect.StatusCode, 0) != tc.status {
					t.Errorf("created %+v, want the redirect route with status %d", c.Object, tc.status)
				}
			}
		})
	}
}

// TestMigrationsComeBackWhenClassesChange: what a Gateway's class
// supports decides what a migrated route carries, so a change of it (or
// its first listing) brings back the Ingresses that ask to move, as it
// brings back the Services on a Gateway.
func TestMigrationsComeBackWhenClassesChange(t *testing.T) {
	c := newTestController(t)
	for _, ing := range []*networkingv1.Ingress{
		tlsIngress(),
		userIngress(func(i *networkingv1.Ingress) {
			i.Name, i.UID = "plain", "plain-uid"
			delete(i.Annotations, AnnotationGateway)
		}),
	} {
		if err := c.ingresses.Add(ing); err != nil {
			t.Fatal(err)
		}
	}
	c.gateway.enqueueGatewayServices()
	if got := queuedMigrations(c); len(got) != 1 || !got["default/web"] {
		t.Errorf("migrations queued %v, want default/web alone", got)
	}
}
