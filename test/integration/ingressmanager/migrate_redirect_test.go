package ingressmanager

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// createRedirectGateway creates Gateway name with a plain-HTTP listener
// (http, port 80) and an HTTPS one (https, port 443, for *.example.com),
// programmed with an address.
func (e *env) createRedirectGateway(name string) {
	e.T.Helper()
	_, err := e.gateway().GatewayV1().Gateways(e.NS).Create(e.Ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayv1.Listener{
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
			{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: ptr.To(gatewayv1.Hostname("*.example.com")),
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
					CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "shop-tls"}}}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	e.programGateway(name)
}

// acceptOnEachParent writes the route's status as a Gateway controller
// would: Accepted and ResolvedRefs on each of its parents, for its
// generation.
func (e *env) acceptOnEachParent(name string) {
	e.T.Helper()
	e.setEachParentStatus(name,
		metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
		metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs"})
}

// setEachParentStatus writes conds, for the route's generation, as the
// status of each of its parents, as a Gateway controller would.
func (e *env) setEachParentStatus(name string, conds ...metav1.Condition) {
	e.T.Helper()
	framework.Eventually(e.T, framework.Timeout, "writing the status of HTTPRoute "+name, func(ctx context.Context) (bool, error) {
		route, err := e.gateway().GatewayV1().HTTPRoutes(e.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := metav1.Now()
		route.Status.Parents = nil
		for _, p := range route.Spec.ParentRefs {
			st := gatewayv1.RouteParentStatus{ParentRef: p, ControllerName: testGatewayController}
			for _, c := range conds {
				c.ObservedGeneration, c.LastTransitionTime = route.Generation, now
				st.Conditions = append(st.Conditions, c)
			}
			route.Status.Parents = append(route.Status.Parents, st)
		}
		_, err = e.gateway().GatewayV1().HTTPRoutes(e.NS).UpdateStatus(ctx, route, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// onListeners checks that route's parents are Gateway gw's listeners.
func onListeners(route *gatewayv1.HTTPRoute, gw string, listeners ...string) error {
	if len(route.Spec.ParentRefs) != len(listeners) {
		return fmt.Errorf("parents %+v, want listeners %v of %s", route.Spec.ParentRefs, listeners, gw)
	}
	for i, p := range route.Spec.ParentRefs {
		if string(p.Name) != gw || p.SectionName == nil || string(*p.SectionName) != listeners[i] {
			return fmt.Errorf("parents %+v, want listeners %v of %s", route.Spec.ParentRefs, listeners, gw)
		}
	}
	return nil
}

// TestMigrateHTTPSRedirect: on the real API server, a user's Ingress of
// the class nginx with TLS (ingress-nginx redirects its plain HTTP to
// HTTPS by default) moves with its redirect: the redirect route on the
// Gateway's plain-HTTP listener first, kept out of external-dns; only once
// it is accepted is the Ingress's route made, on the HTTPS listener
// alone; then the Ingress is withdrawn. Moving back deletes both routes,
// the redirect route last, and leaves the Ingress as its user wrote it.
func TestMigrateHTTPSRedirect(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	e.createRedirectGateway("gw")
	ing := usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"})
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}}
	orig := e.createIngress(ing)

	redirect := e.waitRoute("web-https-redirect", "the redirect route", func(r *gatewayv1.HTTPRoute) error {
		if r.Annotations[ingressmanager.AnnotationMigratedFrom] != string(orig.UID) || len(r.OwnerReferences) != 0 {
			return fmt.Errorf("annotations %v, owners %v", r.Annotations, r.OwnerReferences)
		}
		return onListeners(r, "gw", "http")
	})
	for _, k := range []string{ingressmanager.AnnotationExternalDNSController, ingressmanager.AnnotationExternalDNSControllerLegacy} {
		if v := redirect.Annotations[k]; v == "" || v == "dns-controller" {
			t.Errorf("the redirect route's %s = %q: external-dns would publish it", k, v)
		}
	}
	if rules := redirect.Spec.Rules; len(rules) != 1 || len(rules[0].Filters) != 1 || rules[0].Filters[0].RequestRedirect == nil ||
		ptr.Deref(rules[0].Filters[0].RequestRedirect.Scheme, "") != "https" || ptr.Deref(rules[0].Filters[0].RequestRedirect.StatusCode, 0) != 308 {
		t.Errorf("redirect rules %+v, want one redirecting to https with 308", rules)
	}
	// A sync while the redirect route is not accepted (an edit of the
	// Ingress brings one): it waits, and makes no route.
	syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	e.annotateIngress("web", map[string]*string{"example.com/note": ptr.To("moving")})
	orig.Annotations["example.com/note"] = "moving"
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	e.waitIngressEvent("web", corev1.EventTypeNormal, "WaitingForHTTPRoute", "Keeping Ingress web until", "listener http")
	if e.routeExists("web") {
		t.Fatal("the route was made before its redirect route was accepted")
	}

	e.acceptOnEachParent("web-https-redirect")
	e.waitRoute("web", "the route, on the HTTPS listener alone", func(r *gatewayv1.HTTPRoute) error { return onListeners(r, "gw", "https") })
	e.WaitIngress("web", "the Ingress in external-dns while its route is not accepted", func(i *networkingv1.Ingress) error { return sameAsItsUserWrote(i, orig, false) })
	e.acceptOnEachParent("web")
	e.WaitIngress("web", "the Ingress withdrawn", func(i *networkingv1.Ingress) error { return sameAsItsUserWrote(i, orig, true) })
	e.waitIngressEvent("web", corev1.EventTypeNormal, "MovedToHTTPRoute")

	e.annotateIngress("web", map[string]*string{"ingress/gateway": nil})
	wantNow := orig.DeepCopy()
	delete(wantNow.Annotations, "ingress/gateway")
	e.WaitIngress("web", "the Ingress back in external-dns", func(i *networkingv1.Ingress) error { return sameAsItsUserWrote(i, wantNow, false) })
	e.waitNoRoute("web", "the route withdrawn, drained and deleted")
	e.waitNoRoute("web-https-redirect", "the redirect route deleted once the route is gone")
	e.WaitIngress("web", "the Ingress intact", func(i *networkingv1.Ingress) error { return sameAsItsUserWrote(i, wantNow, false) })
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors", n)
	}
}
