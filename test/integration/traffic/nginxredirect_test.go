package traffic

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// TestNginxRedirectOnTheGateway: a user's Ingress of the class nginx with
// TLS, whose plain HTTP ingress-nginx redirects to HTTPS ("By default the
// controller redirects (308) to HTTPS if TLS is enabled for that
// ingress"), moves to a Gateway with a plain-HTTP and an HTTPS listener,
// its redirect carried: before, Traefik's kubernetesIngressNGINX provider
// answers plain HTTP with a redirect to https://<host>/<path>; after (the
// Ingress deleted by ingress/delete-after-move, so that the provider no
// longer answers on any entrypoint), the Gateway's plain-HTTP listener
// answers the same request with the same Location, and its HTTPS listener
// serves the backend with the listener's certificate. Traefik's
// GatewayClass does not list HTTPRoute308RedirectStatusCode, so the
// manager runs with --ingress-nginx-http-redirect-code=301, as for an
// ingress-nginx whose ConfigMap said so: the status is the flag's.
func TestNginxRedirectOnTheGateway(t *testing.T) {
	e := setup(t, func(o *app.Options) {
		o.IngressMoveSettle, o.IngressMoveDNSDrain = 0, 300*time.Millisecond
		o.IngressNGINXHTTPRedirectCode = 301
	})
	dataplane.CreateNGINXClass(t, e.Client)
	const name = "redir"
	h := e.host(name)
	cert, certPEM, keyPEM := selfSignedCert(t, h)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: name + "-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}
	if _, err := e.Client.CoreV1().Secrets(e.NS).Create(e.Ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.webService(name, nil)
	e.nginxIngress(name, nil, secret.Name)
	location := "https://" + h + "/s/t"
	redirect := func(code int) nginxCase {
		return nginxCase{name: name, doc: nginxDocs + "#server-side-https-enforcement-through-redirect", method: http.MethodGet, path: "/s/t",
			check: func(_ *env, _ nginxCase, r dataplane.Response) string {
				if r.Status != code || r.Location != location {
					return fmt.Sprintf("want %d to %s", code, location)
				}
				return ""
			}}
	}
	e.waitNginxAnswer(redirect(308), traefik.HTTPAddr, h, "before, its Ingress")

	https := gatewayv1.Listener{Name: "https", Port: traefik.GatewayPortAt(1), Protocol: gatewayv1.HTTPSProtocolType,
		Hostname: ptr.To(gatewayv1.Hostname(h)),
		TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
			CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(secret.Name)}}}}
	traefik.GatewayWithListeners(t, cfg, e.NS, "gw", traefik.Listener("http", 0), https)
	patch := []byte(`{"metadata":{"annotations":{"ingress/gateway":"gw","ingress/delete-after-move":"true"}}}`)
	if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Patch(e.Ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitNoIngress(name, "the Ingress deleted once moved and drained")
	framework.WaitEvent(t, e.Client, timeout, e.NS, "Ingress", name, corev1.EventTypeNormal, "IngressDeleted")

	e.waitNginxAnswer(redirect(301), traefik.GatewayAddrs[0], h, "after, the Gateway's plain-HTTP listener")
	framework.Eventually(t, routeTimeout, "after: https://"+h+"/s/t via the Gateway's HTTPS listener reaches the backend with its certificate", func(ctx context.Context) (bool, error) {
		r, err := traefik.GetTLSAt(ctx, traefik.GatewayAddrs[1], h, "/s/t")
		if err != nil {
			return false, err
		}
		if r.Status != 200 || r.Backend != name || r.Path != "/s/t" || r.Certificate == nil || !r.Certificate.Equal(cert) {
			return false, fmt.Errorf("got %s (the listener's certificate: %v)", r, r.Certificate != nil && r.Certificate.Equal(cert))
		}
		return true, nil
	})
	if r, err := traefik.GetGatewayAt(e.Ctx, 0, h, "/s/t"); err != nil || r.Backend != "" {
		t.Errorf("plain HTTP via the Gateway reached the backend (%s, %v): the route is not on the HTTPS listener alone", r, err)
	}
}
