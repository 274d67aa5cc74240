package traffic

import (
	"context"
	"fmt"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// TestNginxCanaryOnTheGateway: a main Ingress of the class nginx and its
// canary ("canary-weight: Integer (0-<weight-total>) ... the percent of
// random requests that should be routed to the service specified in the
// canary Ingress"), both asking to move, become one route on the Gateway
// whose backends Traefik weights as ingress-nginx would: canary-weight
// 100 sends every request to the canary's backend, 0 none. Traefik's
// kubernetesIngressNGINX provider does not implement canaries, so the
// before side is ingress-nginx's documentation; the after side is the
// Gateway alone, once the main Ingress (delete-after-move) and the canary
// (by the test, as a user retiring ingress-nginx) are gone.
func TestNginxCanaryOnTheGateway(t *testing.T) {
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = 0, 300*time.Millisecond })
	dataplane.CreateNGINXClass(t, e.Client)
	gw := traefik.GatewayWithListeners(t, cfg, e.NS, "gw", traefik.Listener("http", 0))
	for _, tc := range []struct {
		main, weight, want string
	}{{"all", "100", "all-canary"}, {"none", "0", "none"}} {
		h := e.host(tc.main)
		e.webService(tc.main, nil)
		e.webService(tc.main+"-canary", nil)
		ingress := func(name, backend string, ann map[string]string) *networkingv1.Ingress {
			return &networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: name, Annotations: ann},
				Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(dataplane.NGINXIngressClass), Rules: []networkingv1.IngressRule{{Host: h,
					IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
						Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: backend, Port: networkingv1.ServiceBackendPort{Number: 80}}},
					}}}}}}},
			}
		}
		for _, ing := range []*networkingv1.Ingress{
			ingress(tc.main+"-canary", tc.main+"-canary", map[string]string{"ingress/gateway": "gw",
				"nginx.ingress.kubernetes.io/canary": "true", "nginx.ingress.kubernetes.io/canary-weight": tc.weight}),
			ingress(tc.main, tc.main, map[string]string{"ingress/gateway": "gw", "ingress/delete-after-move": "true"}),
		} {
			if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Create(e.Ctx, ing, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.WaitNoIngress(tc.main, tc.main+": the main Ingress deleted once moved and drained")
		framework.WaitObject(t, tc.main+": the canary withdrawn from external-dns with it, kept", framework.Get(e.Client.NetworkingV1().Ingresses(e.NS).Get, tc.main+"-canary"),
			func(i *networkingv1.Ingress) error {
				if i.Annotations["ingress/dns-withdrawn"] == "" {
					return fmt.Errorf("annotations %v", i.Annotations)
				}
				return nil
			})
		route, err := gw.GatewayV1().HTTPRoutes(e.NS).Get(e.Ctx, tc.main, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b := route.Spec.Rules[0].BackendRefs; len(b) != 2 || string(b[1].Name) != tc.main+"-canary" || fmt.Sprint(*b[1].Weight) != tc.weight {
			t.Fatalf("%s: the route's backends %+v, want the canary's weighted %s", tc.main, b, tc.weight)
		}
		if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, tc.main+"-canary", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.WaitNoIngress(tc.main+"-canary", tc.main+": the canary deleted by its user")
		// Every request of a run of 20 in a row reaches the weighted
		// backend: with weights 0 and 100 there is no chance in it.
		framework.Eventually(t, routeTimeout, fmt.Sprintf("%s: 20 requests in a row via the Gateway reach %s", tc.main, tc.want), func(ctx context.Context) (bool, error) {
			for i := range 20 {
				r, err := traefik.GetGatewayAt(ctx, 0, h, "/")
				if err != nil {
					return false, err
				}
				if r.Status != 200 || r.Backend != tc.want {
					return false, fmt.Errorf("request %d: got %s", i, r)
				}
			}
			return true, nil
		})
	}
}
