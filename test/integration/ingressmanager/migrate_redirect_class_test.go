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
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// The HTTPS redirect of a migrated Ingress on the real API server, and the
// class of its Gateway; the helpers of the redirect's tests.

// redirectIngress is usersIngress with TLS for its host: of the class
// nginx, ingress-nginx redirects its plain HTTP to HTTPS by default.
func redirectIngress(ns, name string, ann map[string]string) *networkingv1.Ingress {
	ing := usersIngress(ns, name, ann)
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}}
	return ing
}

// waitRedirectRoute waits for the redirect route made from ing, on the
// plain-HTTP listener of Gateway gw.
func (e *env) waitRedirectRoute(ing *networkingv1.Ingress, what string) *gatewayv1.HTTPRoute {
	e.T.Helper()
	return e.waitRoute(ing.Name+"-https-redirect", what, func(r *gatewayv1.HTTPRoute) error {
		if r.Annotations[ingressmanager.AnnotationMigratedFrom] != string(ing.UID) || len(r.OwnerReferences) != 0 {
			return fmt.Errorf("annotations %v, owners %v: not the redirect route made from Ingress uid %s", r.Annotations, r.OwnerReferences, ing.UID)
		}
		return onListeners(r, "gw", "http")
	})
}

// withdrawnOrNot checks that ing is as its user wrote it (want), withdrawn
// from external-dns or not.
func withdrawnOrNot(want *networkingv1.Ingress, withdrawn bool) func(*networkingv1.Ingress) error {
	return func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, want, withdrawn) }
}

// TestMigrateRedirectGatewayClass: a Gateway whose class does not list
// HTTPRoute308RedirectStatusCode keeps an Ingress that ingress-nginx
// redirects (308) on its Ingress: nothing made, a Warning naming the key;
// once the class lists it, the Ingress moves, the class's change alone
// bringing it back.
func TestMigrateRedirectGatewayClass(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	class := "redirect-" + e.NS
	classes := e.gateway().GatewayV1().GatewayClasses()
	if _, err := classes.Create(e.Ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: testGatewayController}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = classes.Delete(context.Background(), class, metav1.DeleteOptions{}) })
	e.setClassFeatures(class, string(features.SupportHTTPRoute), string(features.SupportHTTPRouteSchemeRedirect))
	if _, err := e.gateway().GatewayV1().Gateways(e.NS).Create(e.Ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class), Listeners: []gatewayv1.Listener{
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
			{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: ptr.To(gatewayv1.Hostname("*.example.com")),
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
					CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "shop-tls"}}}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.programGateway("gw")

	orig := e.createIngress(redirectIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	e.waitIngressEvent("web", corev1.EventTypeWarning, "MigrationBlocked", "nginx.ingress.kubernetes.io/ssl-redirect")
	for _, name := range []string{"web", "web-https-redirect"} {
		if e.routeExists(name) {
			t.Errorf("HTTPRoute %s was made on a Gateway whose class does not support the redirect's 308", name)
		}
	}
	e.WaitIngress("web", "the Ingress in DNS", withdrawnOrNot(orig, false))

	e.setClassFeatures(class, string(features.SupportHTTPRoute), string(features.SupportHTTPRouteSchemeRedirect),
		string(features.SupportHTTPRoute308RedirectStatusCode))
	e.waitRedirectRoute(orig, "the redirect route, once the class lists 308")
}
