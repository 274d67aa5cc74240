package dataplane

import (
	"context"
	"slices"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// CreateNGINXClass creates (once per API server) the IngressClass
// NGINXIngressClass of controller NGINXIngressController, whose Ingresses
// Traefik serves as ingress-nginx would (TraefikOptions.IngressNGINX).
func CreateNGINXClass(t testing.TB, client kubernetes.Interface) {
	t.Helper()
	class := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: NGINXIngressClass},
		Spec:       networkingv1.IngressClassSpec{Controller: NGINXIngressController},
	}
	if _, err := client.NetworkingV1().IngressClasses().Create(context.Background(), class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// GatewayClassName is the GatewayClass Traefik serves in the tests.
const GatewayClassName = "traefik"

// Gateway creates (once per API server) the GatewayClass of Traefik and, in
// namespace ns, a Gateway name with an HTTP listener "http" on Traefik's
// Gateway entrypoint, and waits until Traefik accepted it (and, when it
// publishes an address, until the Gateway's status has it). It returns a
// Gateway API client of cfg.
func (tr *Traefik) Gateway(t testing.TB, cfg *rest.Config, ns, name string) gatewayclient.Interface {
	t.Helper()
	return tr.GatewayWithListeners(t, cfg, ns, name, tr.Listener("http", 0))
}

// Listener is an HTTP listener name on Traefik's Gateway entrypoint
// GatewayAddrs[i] (its port GatewayPortAt(i)).
func (tr *Traefik) Listener(name string, i int) gatewayv1.Listener {
	return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Port: tr.GatewayPortAt(i), Protocol: gatewayv1.HTTPProtocolType}
}

// GatewayWithListeners is Gateway with the given listeners (see Listener).
func (tr *Traefik) GatewayWithListeners(t testing.TB, cfg *rest.Config, ns, name string, listeners ...gatewayv1.Listener) gatewayclient.Interface {
	t.Helper()
	ctx := context.Background()
	client := gatewayclient.NewForConfigOrDie(framework.Config(cfg))
	class := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayClassName},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: GatewayController},
	}
	if _, err := client.GatewayV1().GatewayClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: GatewayClassName,
			Listeners:        listeners,
		},
	}
	if _, err := client.GatewayV1().Gateways(ns).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, "traefik accepts Gateway "+name, func(ctx context.Context) (bool, error) {
		got, err := client.GatewayV1().Gateways(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if tr.gatewayIP != "" && !slices.ContainsFunc(got.Status.Addresses, func(a gatewayv1.GatewayStatusAddress) bool { return a.Value == tr.gatewayIP }) {
			return false, nil
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, string(gatewayv1.GatewayConditionAccepted)), nil
	})
	return client
}
