package ingressmanager

import (
	"maps"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// Routes of the names of a migrated Ingress's routes that are not its.

// TestMigrateRedirectOthersRoutes: a route of the redirect route's name
// that is someone else's, and one a Service of that name controls, are
// never written; their Ingresses stay in DNS, and no route is made for
// them. Once someone else's is deleted, its Ingress moves on at once (its
// deletion brings the Ingress back; nothing waits for a resync).
func TestMigrateRedirectOthersRoutes(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	e.createRedirectGateway("gw")
	routes := e.gateway().GatewayV1().HTTPRoutes(e.NS)
	foreign, err := routes.Create(e.Ctx, &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "web-https-redirect", Annotations: map[string]string{"team": "other"}},
		Spec:       gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}},
	}, metav1.CreateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	svc := e.CreateService(framework.SeedService(e.NS, "shop-https-redirect", map[string]string{"ingress/http": "nginx", "ingress/gateway": "gw"}))
	svcRoute := e.waitRoute("shop-https-redirect", "the Service's route", func(r *gatewayv1.HTTPRoute) error { return framework.ControlledBy(r, svc.UID) })

	web := e.createIngress(redirectIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	shop := e.createIngress(redirectIngress(e.NS, "shop", map[string]string{"ingress/gateway": "gw"}))
	e.waitIngressEvent("web", corev1.EventTypeWarning, "HTTPRouteExists", "web-https-redirect")
	e.waitIngressEvent("shop", corev1.EventTypeWarning, "HTTPRouteExists", "shop-https-redirect")
	for _, want := range []*gatewayv1.HTTPRoute{foreign, svcRoute} {
		got, err := routes.Get(e.Ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Generation != want.Generation || !maps.Equal(got.Annotations, want.Annotations) ||
			!equality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences) || !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("HTTPRoute %s was written: %+v", want.Name, got)
		}
	}
	for _, name := range []string{"web", "shop"} {
		if e.routeExists(name) {
			t.Errorf("HTTPRoute %s was made while its redirect route's place is someone else's", name)
		}
	}
	e.WaitIngress("web", "Ingress web in DNS", withdrawnOrNot(web, false))
	e.WaitIngress("shop", "Ingress shop in DNS", withdrawnOrNot(shop, false))

	if err := routes.Delete(e.Ctx, "web-https-redirect", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRedirectRoute(web, "the redirect route of web, made once someone else's is gone")
	if n := e.Writes.Count(http.MethodDelete, "httproutes"); n != 0 {
		t.Errorf("%d deletes of routes", n)
	}
}
