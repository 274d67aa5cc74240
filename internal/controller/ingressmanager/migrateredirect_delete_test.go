package ingressmanager

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// How the redirect route goes.

// TestRedirectRouteDeletedOnlyAsCached: the redirect route is the
// controller's by its marker, which its user may change (or remove) to make
// the route theirs; it is deleted only as the cache saw it, its UID and
// resourceVersion preconditions, so that a route its user took since is
// never deleted on a stale cache's word (the conflict brings the Ingress
// back on the fresh route instead).
func TestRedirectRouteDeletedOnlyAsCached(t *testing.T) {
	optedOut := func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }
	f := newCutoverFixture(t, testDrain)
	if err := f.gateways.Update(redirectGateway()); err != nil {
		t.Fatal(err)
	}
	ing := f.addUserIngress(tlsIngress(optedOut), withAddress)
	f.addRenderedRoutes(tlsIngress(), nil, []func(*gatewayv1.HTTPRoute){servedOnEachParent(1), func(r *gatewayv1.HTTPRoute) { r.ResourceVersion = "5" }})
	obj, _, err := f.routes.GetByKey("default/web-https-redirect")
	if err != nil || obj == nil {
		t.Fatalf("not cached: %v", err)
	}
	cached := obj.(*gatewayv1.HTTPRoute)
	f.clearActions()
	if err := f.syncMigration(ing); err != nil {
		t.Fatal(err)
	}
	deleted := false
	for _, a := range f.allActions() {
		d, ok := a.(k8stesting.DeleteActionImpl)
		if !ok || d.Name != "web-https-redirect" {
			continue
		}
		deleted = true
		if p := d.DeleteOptions.Preconditions; p == nil || ptr.Deref(p.UID, "") != cached.UID || ptr.Deref(p.ResourceVersion, "") != cached.ResourceVersion {
			t.Errorf("the redirect route deleted with preconditions %+v, want UID %s and resourceVersion %q", p, cached.UID, cached.ResourceVersion)
		}
	}
	if !deleted {
		t.Errorf("the redirect route was not deleted (state %v)", stateOf(f, ing))
	}
}

func stateOf(f *syncFixture, ing *networkingv1.Ingress) any {
	s, _ := f.c.migrations.states.Load(cache.MetaObjectToName(ing))
	return s
}
