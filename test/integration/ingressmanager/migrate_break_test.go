package ingressmanager

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// The tests of this file try to break the move of users' Ingresses: hand
// edits of the route, two Ingresses of one host, a backend that does not
// resolve.

// editRoute changes the route name as its user would, by an update.
func (e *env) editRoute(name string, change func(*gatewayv1.HTTPRoute)) {
	e.T.Helper()
	framework.Eventually(e.T, framework.Timeout, "editing HTTPRoute "+name, func(ctx context.Context) (bool, error) {
		r, err := e.gateway().GatewayV1().HTTPRoutes(e.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(r)
		_, err = e.gateway().GatewayV1().HTTPRoutes(e.NS).Update(ctx, r, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err == nil, nil
	})
}

// TestMigrateRouteEditedByHand: once moved, a hand edit of what the
// controller renders is taken back (and the Ingress, the route not serving
// its new generation yet, is returned to DNS until it does, then withdrawn
// again), an annotation of the user's own is kept, and a route whose marker
// its user changed is theirs: untouched, the Ingress back in DNS. A
// handful of writes each, no storm.
func TestMigrateRouteEditedByHand(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	orig := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	e.waitMigratedRoute(orig)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.waitIngressEvent("web", corev1.EventTypeNormal, "MovedToHTTPRoute")

	writes := e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes")
	e.editRoute("web", func(r *gatewayv1.HTTPRoute) {
		r.Spec.Hostnames = []gatewayv1.Hostname{"hijacked.example.org"}
		r.Annotations["example.com/owner"] = "payments"
	})
	e.waitRoute("web", "the hostnames taken back, the user's annotation kept", func(r *gatewayv1.HTTPRoute) error {
		if len(r.Spec.Hostnames) != 1 || r.Spec.Hostnames[0] != "shop.example.com" || r.Annotations["example.com/owner"] != "payments" {
			return fmt.Errorf("hostnames %v, annotations %v", r.Spec.Hostnames, r.Annotations)
		}
		return nil
	})
	e.WaitIngress("web", "the Ingress back in DNS while the route's new generation is not accepted", func(ing *networkingv1.Ingress) error {
		if _, err := withdrawalOf(ing); err == nil {
			return fmt.Errorf("still withdrawn")
		}
		return nil
	})
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web", "withdrawn again once the route serves", func(ing *networkingv1.Ingress) error {
		_, err := withdrawalOf(ing)
		return err
	})
	// update, return, withdraw, and a status write or two of the test's.
	if n := e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes") - writes; n > 6 {
		t.Errorf("%d writes for one hand edit, want a handful (%s)", n, e.Writes)
	}

	// The marker changed: the route is its user's now.
	e.editRoute("web", func(r *gatewayv1.HTTPRoute) { r.Annotations[ingressmanager.AnnotationMigratedFrom] = "mine" })
	e.waitIngressEvent("web", corev1.EventTypeWarning, "HTTPRouteExists", "names another Ingress")
	e.WaitIngress("web", "the Ingress back in DNS", func(ing *networkingv1.Ingress) error {
		return sameAsItsUserWrote(ing, orig, false)
	})
	route := e.waitRoute("web", "the route", nil)
	syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	if got := e.waitRoute("web", "the route", nil); got.Generation != route.Generation {
		t.Errorf("the user's route was written: generation %d, was %d", got.Generation, route.Generation)
	}
}

// TestMigrateTwoIngressesOneHost: two Ingresses of one host each get a
// route of their own name; each moves alone and neither writes the
// other's (the Gateway orders their rules as ingress-nginx merged them).
func TestMigrateTwoIngressesOneHost(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	a := e.createIngress(usersIngress(e.NS, "shop", map[string]string{"ingress/gateway": "gw"}))
	bIng := usersIngress(e.NS, "shop-api", map[string]string{"ingress/gateway": "gw"})
	bIng.Spec.Rules[0].HTTP.Paths[0].Path = "/api"
	b := e.createIngress(bIng)
	for _, ing := range []*networkingv1.Ingress{a, b} {
		e.waitMigratedRoute(ing)
		e.setRouteStatus(ing.Name, "gw", metav1.ConditionTrue, "Accepted", "")
	}
	for _, ing := range []*networkingv1.Ingress{a, b} {
		e.waitIngressEvent(ing.Name, corev1.EventTypeNormal, "MovedToHTTPRoute")
	}
	writes := e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes")
	syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "shop")
	e.annotateIngress("shop", map[string]*string{"example.com/note": ptrTo("x")})
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "shop", syncs+1)
	if n := e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes") - writes; n != 0 {
		t.Errorf("%d writes once both moved, want none", n)
	}
}

func ptrTo(s string) *string { return &s }

// TestMigrateBackendNotResolved: a route whose Gateway cannot resolve its
// backend (ResolvedRefs=False: the Service is missing) does not serve: the
// Ingress stays in DNS, with the Gateway's word as a Warning.
func TestMigrateBackendNotResolved(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	ing := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	e.waitMigratedRoute(ing)
	e.programGateway("gw")
	framework.Eventually(t, framework.Timeout, "the route accepted, its backend not resolved", func(ctx context.Context) (bool, error) {
		r, err := e.gateway().GatewayV1().HTTPRoutes(e.NS).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := metav1.Now()
		r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}, ControllerName: testGatewayController,
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", ObservedGeneration: r.Generation, LastTransitionTime: now},
				{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: "BackendNotFound", Message: "service web not found", ObservedGeneration: r.Generation, LastTransitionTime: now},
			}}}
		_, err = e.gateway().GatewayV1().HTTPRoutes(e.NS).UpdateStatus(ctx, r, metav1.UpdateOptions{})
		return err == nil, nil
	})
	e.waitIngressEvent("web", corev1.EventTypeWarning, "HTTPRouteRefsNotResolved", "service web not found")
	e.waitIngressEvent("web", corev1.EventTypeNormal, "WaitingForHTTPRoute", "resolves the references")
	if got, _ := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web", metav1.GetOptions{}); sameAsItsUserWrote(got, ing, false) != nil {
		t.Errorf("the Ingress changed while its route does not serve: %v", sameAsItsUserWrote(got, ing, false))
	}
}
