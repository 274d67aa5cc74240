package ingressmanager

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An Ingress that stops asking to move while its redirect route is all it
// has on the Gateway.

// refuseOnEachParent writes the route's status as a Gateway controller
// that does not admit it would: Accepted=False on each of its parents,
// for its generation.
func (e *env) refuseOnEachParent(name, reason string) {
	e.T.Helper()
	e.setEachParentStatus(name, metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: reason})
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
