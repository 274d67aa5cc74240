package ingressmanager

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// An Ingress that stops asking to move while its redirect route is all it
// has on the Gateway.

// refuseOnEachParent writes the route's status as a Gateway controller
// that does not admit it would: Accepted=False on each of its parents,
// for its generation.
func (e *env) refuseOnEachParent(name, reason string) {
	e.T.Helper()
	framework.Eventually(e.T, framework.Timeout, "writing the status of HTTPRoute "+name, func(ctx context.Context) (bool, error) {
		route, err := e.gateway().GatewayV1().HTTPRoutes(e.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := metav1.Now()
		route.Status.Parents = nil
		for _, p := range route.Spec.ParentRefs {
			route.Status.Parents = append(route.Status.Parents, gatewayv1.RouteParentStatus{ParentRef: p, ControllerName: testGatewayController,
				Conditions: []metav1.Condition{
					{Type: "Accepted", Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: route.Generation, LastTransitionTime: now},
				}})
		}
		_, err = e.gateway().GatewayV1().HTTPRoutes(e.NS).UpdateStatus(ctx, route, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// TestMigrateRedirectOptedOutBeforeAccepted: an Ingress whose redirect
// route its Gateway refused (its route not made yet) and that then no
// longer asks to move has its redirect route deleted at once, not left on
// the Gateway's plain-HTTP listener; the Ingress stays as its user wrote
// it, in DNS.
func TestMigrateRedirectOptedOutBeforeAccepted(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	e.createRedirectGateway("gw")
	orig := e.createIngress(redirectIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	e.waitRedirectRoute(orig, "the redirect route")
	e.refuseOnEachParent("web-https-redirect", "NotAllowedByListeners")
	e.waitIngressEvent("web", corev1.EventTypeWarning, "HTTPRouteNotAccepted", "web-https-redirect")

	e.annotateIngress("web", map[string]*string{"ingress/gateway": nil})
	e.waitNoRoute("web-https-redirect", "the redirect route of an Ingress that no longer asks to move")
	wantNow := orig.DeepCopy()
	delete(wantNow.Annotations, "ingress/gateway")
	e.WaitIngress("web", "the Ingress as its user wrote it, in DNS", withdrawnOrNot(wantNow, false))
	if e.routeExists("web") {
		t.Error("a route was made for an Ingress that no longer asks to move")
	}
}
