package ingressmanager

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// A migrated Ingress's redirect moving between Gateways.

// appliedParents returns the parents of the last server-side apply of
// HTTPRoute name the fake received, and whether there was one.
func (f *syncFixture) appliedParents(name string) ([]string, bool) {
	f.t.Helper()
	var out []string
	found := false
	for _, a := range f.gateway.Actions() {
		p, ok := a.(k8stesting.PatchActionImpl)
		if !ok || p.Name != name || p.PatchType != types.ApplyPatchType {
			continue
		}
		var applied gatewayv1.HTTPRoute
		if err := json.Unmarshal(p.Patch, &applied); err != nil {
			f.t.Fatal(err)
		}
		found, out = true, nil
		for _, q := range applied.Spec.ParentRefs {
			out = append(out, string(q.Name)+"/"+string(ptr.Deref(q.SectionName, "")))
		}
	}
	return out, found
}

// TestMigrationRedirectMovesBetweenGateways: an Ingress moved with its
// redirect whose ingress/gateway then names another Gateway moves
// make-before-break, its redirect too: the redirect route joins the new
// Gateway's plain-HTTP listener and keeps the old one's while the route is
// still on the old Gateway (DNS still sends clients there), and leaves it
// once the route did.
func TestMigrationRedirectMovesBetweenGateways(t *testing.T) {
	gw2 := func() *gatewayv1.Gateway {
		gw := redirectGateway()
		gw.Name = "gw2"
		return gw
	}
	onGW2 := withAnnotations(AnnotationGateway, "gw2")
	render := func(ing *networkingv1.Ingress, gw *gatewayv1.Gateway) *Migration {
		m := renderMigration(migrationInput{Ingress: ing, Gateway: gw, GatewayVisible: true})
		if m.Route == nil || m.RedirectRoute == nil {
			t.Fatalf("no routes: %s %q", describeBlocking(m.Blocking), m.Unsupported)
		}
		return m
	}
	add := func(f *syncFixture, obj *gatewayv1.HTTPRoute, parents []gatewayv1.ParentReference) {
		obj.UID, obj.Generation = types.UID(obj.Name+"-uid"), 1
		obj.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("test")}
		obj.Spec.ParentRefs = parents
		addOwned(f, f.gateway.GatewayV1().HTTPRoutes(obj.Namespace).Create, f.routes, obj, servedOnEachParent(1))
	}
	onOld, onNew := render(tlsIngress(), redirectGateway()), render(tlsIngress(onGW2), gw2())
	for _, tc := range []struct {
		name            string
		route, redirect []gatewayv1.ParentReference
		want            []string
	}{
		{name: "the route still on the old Gateway: the redirect route on both Gateways' plain-HTTP listeners",
			route: onOld.Route.Spec.ParentRefs, redirect: onOld.RedirectRoute.Spec.ParentRefs, want: []string{"gw2/http", "gw/http"}},
		{name: "the route on both: the redirect route on both",
			route:    slices.Concat(onNew.Route.Spec.ParentRefs, onOld.Route.Spec.ParentRefs),
			redirect: onOld.RedirectRoute.Spec.ParentRefs, want: []string{"gw2/http", "gw/http"}},
		{name: "the route off the old Gateway: the redirect route leaves it",
			route:    onNew.Route.Spec.ParentRefs,
			redirect: slices.Concat(onNew.RedirectRoute.Spec.ParentRefs, onOld.RedirectRoute.Spec.ParentRefs), want: []string{"gw2/http"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			for _, gw := range []*gatewayv1.Gateway{redirectGateway(), gw2()} {
				if err := f.gateways.Update(gw); err != nil {
					t.Fatal(err)
				}
			}
			ing := f.addUserIngress(tlsIngress(onGW2), withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain)))
			add(f, onOld.Route.DeepCopy(), tc.route)
			add(f, onOld.RedirectRoute.DeepCopy(), tc.redirect)
			f.settled(ing, "web-uid")
			f.clearActions()
			if _, err := requeuedOrNil(f.syncMigration(ing)); err != nil {
				t.Fatal(err)
			}
			got, ok := f.appliedParents("web-https-redirect")
			if !ok || !slices.Equal(got, tc.want) {
				t.Errorf("the redirect route applied with parents %q (%v), want %q; writes %q", got, ok, tc.want, f.writes())
			}
			for _, a := range f.allActions() {
				if a.GetVerb() == "delete" {
					t.Errorf("deleted %s", a.GetResource().Resource)
				}
			}
		})
	}
}

// requeuedOrNil is a sync's error, nil for a requeue.
func requeuedOrNil(err error) (bool, error) {
	var after *controller.RequeueAfter
	if errors.As(err, &after) {
		return true, nil
	}
	return false, err
}
