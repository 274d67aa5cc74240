package traffic

import (
	"context"
	"crypto/x509"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// TestSeedFlow is docs/ingress-manager.md's my-nginx Service with the default host:
// no route before the annotation, a route to its backend after, none once
// the annotation goes, and a route again after the Ingress is deleted by
// hand (the controller recreates it).
func TestSeedFlow(t *testing.T) {
	// The defaults: host example.com, path / (Prefix), port 80.
	e := setup(t, func(o *app.Options) { o.IngressHostTemplate = "" })
	svc, _ := e.webService("my-nginx", nil)
	t.Cleanup(func() {
		// Frees example.com for whatever runs next on this control plane.
		_ = e.Client.CoreV1().Services(e.NS).Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		framework.Eventually(t, timeout, "the seed's Ingress deleted with its Service", func(ctx context.Context) (bool, error) {
			_, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(ctx, svc.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})

	// Before the annotation: the manager looked at the Service and wrote
	// nothing, and Traefik (caught up, see barrier) has no route.
	e.WaitSynced("my-nginx", 1)
	e.barrier()
	if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "my-nginx", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("an Ingress exists before the annotation (err %v)", err)
	}
	e.noRoute("example.com", "/", "before the annotation")

	e.Annotate("my-nginx", map[string]*string{"ingress/http": ptr.To("nginx")})
	d := e.waitRoute("example.com", "/", "my-nginx", "annotated ingress/http")
	t.Logf("annotation -> routable: %v", d)
	e.route("example.com", "/index.html", "my-nginx", "a path under / (Prefix)")

	e.Annotate("my-nginx", map[string]*string{"ingress/http": nil})
	e.WaitNoIngress("my-nginx", "Ingress deleted when the annotation goes")
	e.waitNoRoute("example.com", "/", "annotation removed")

	e.Annotate("my-nginx", map[string]*string{"ingress/http": ptr.To("nginx")})
	e.waitRoute("example.com", "/", "my-nginx", "annotation back")
	first := e.WaitIngress("my-nginx", "the Ingress", nil)

	if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, "my-nginx", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitIngress("my-nginx", "the Ingress recreated by the controller", func(ing *networkingv1.Ingress) error {
		if ing.UID == first.UID {
			return fmt.Errorf("still the deleted Ingress")
		}
		return nil
	})
	e.barrier()
	e.route("example.com", "/", "my-nginx", "after the Ingress was deleted by hand and recreated")
}

// TestHost: ingress/host routes its host only, exactly or by wildcard (one
// DNS label), and a change of host moves the traffic.
func TestHost(t *testing.T) {
	e := setup(t)
	t.Run("exact host routes that host only, and a change moves the traffic", func(t *testing.T) {
		e.T = t
		api := "api." + e.NS + ".example.com"
		e.webService("exact", map[string]string{"ingress/http": "true", "ingress/host": api})
		e.waitRoute(api, "/", "exact", "ingress/host "+api)
		e.noRoute("www."+e.NS+".example.com", "/", "another host")
		e.noRoute(e.host("exact"), "/", "the default host of the Service")

		moved := "api2." + e.NS + ".example.com"
		e.Annotate("exact", map[string]*string{"ingress/host": ptr.To(moved)})
		e.waitRoute(moved, "/", "exact", "ingress/host changed to "+moved)
		e.noRoute(api, "/", "the former host")
	})
	t.Run("wildcard host routes every host one label below it", func(t *testing.T) {
		e.T = t
		apex := "apps." + e.NS + ".example.com"
		e.webService("wild", map[string]string{"ingress/http": "true", "ingress/host": "*." + apex})
		e.waitRoute("a."+apex, "/", "wild", "ingress/host *."+apex)
		e.route("other-name."+apex, "/", "wild", "another label under the wildcard")
		e.noRoute(apex, "/", "the wildcard's parent domain")
		e.noRoute("a.b."+apex, "/", "two labels below the wildcard")
	})
}

// TestPath: ingress/path with Prefix routes the path and paths under it
// (whole elements), with Exact the path only; a change moves the traffic.
func TestPath(t *testing.T) {
	e := setup(t)
	t.Run("Prefix routes the path and its sub-paths, and a change moves the traffic", func(t *testing.T) {
		e.T = t
		h := e.host("prefix")
		e.webService("prefix", map[string]string{"ingress/http": "true", "ingress/path": "/v1"})
		e.waitRoute(h, "/v1", "prefix", "ingress/path /v1 (Prefix)")
		e.route(h, "/v1/", "prefix", "/v1/ under Prefix /v1")
		e.route(h, "/v1/users", "prefix", "a sub-path under Prefix /v1")
		e.noRoute(h, "/v1x", "/v1x is not under Prefix /v1 (path elements, not characters)")
		e.noRoute(h, "/", "/ is outside Prefix /v1")

		e.Annotate("prefix", map[string]*string{"ingress/path": ptr.To("/v2")})
		e.waitRoute(h, "/v2/users", "prefix", "ingress/path changed to /v2")
		e.noRoute(h, "/v1/users", "the former path")
	})
	t.Run("Exact routes the path only", func(t *testing.T) {
		e.T = t
		h := e.host("exact")
		e.webService("exact", map[string]string{"ingress/http": "true", "ingress/path": "/v1", "ingress/path-type": "Exact"})
		e.waitRoute(h, "/v1", "exact", "ingress/path /v1 (Exact)")
		e.noRoute(h, "/v1/users", "a sub-path of Exact /v1")
		e.noRoute(h, "/v1/", "a trailing slash under Exact /v1")

		// Exact -> Prefix: the sub-path routes now.
		e.Annotate("exact", map[string]*string{"ingress/path-type": ptr.To("Prefix")})
		e.waitRoute(h, "/v1/users", "exact", "ingress/path-type changed to Prefix")
	})
}

// TestPort: ingress/port picks the Service port, by name or by number,
// whose endpoints get the traffic; two ports have two backends here.
func TestPort(t *testing.T) {
	e := setup(t)
	web := dataplane.StartBackend(t, "multi-web")
	admin := dataplane.StartBackend(t, "multi-admin")
	h := e.host("multi")
	e.service("multi", map[string]string{"ingress/http": "true", "ingress/port": "web"},
		map[string]int32{"web": 8080, "admin": 9090},
		map[string]*dataplane.Backend{"web": web, "admin": admin})

	e.waitRoute(h, "/", "multi-web", "ingress/port web (by name)")
	for range 3 {
		e.route(h, "/", "multi-web", "every request to port web, none to admin")
	}

	e.Annotate("multi", map[string]*string{"ingress/port": ptr.To("9090")})
	e.waitRoute(h, "/", "multi-admin", "ingress/port 9090 (by number)")
	for range 3 {
		e.route(h, "/", "multi-admin", "every request to port 9090, none to web")
	}

	e.Annotate("multi", map[string]*string{"ingress/port": ptr.To("8080")})
	e.waitRoute(h, "/", "multi-web", "ingress/port 8080 (by number)")
}

// TestClass: an Ingress of the class Traefik serves routes; one of another
// class does not, until its class changes.
func TestClass(t *testing.T) {
	e := setup(t)
	for name, controller := range map[string]string{dataplane.IngressClass: dataplane.IngressController, "other": "example.com/other-ingress-controller"} {
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
		if _, err := e.Client.NetworkingV1().IngressClasses().Create(e.Ctx, ic, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	// The other class's Ingress is written first: once the served one
	// routes, Traefik's configuration holds both.
	e.webService("unserved", map[string]string{"ingress/http": "true", "ingress/class": "other"})
	e.WaitIngress("unserved", "Ingress of class other", func(ing *networkingv1.Ingress) error {
		if ptr.Deref(ing.Spec.IngressClassName, "") != "other" {
			return fmt.Errorf("class %v", ing.Spec.IngressClassName)
		}
		return nil
	})
	e.webService("served", map[string]string{"ingress/http": "true", "ingress/class": dataplane.IngressClass})
	e.waitRoute(e.host("served"), "/", "served", "ingress/class "+dataplane.IngressClass)
	e.noRoute(e.host("unserved"), "/", "ingress/class other (not Traefik's)")

	e.Annotate("unserved", map[string]*string{"ingress/class": ptr.To(dataplane.IngressClass)})
	e.waitRoute(e.host("unserved"), "/", "unserved", "ingress/class changed to "+dataplane.IngressClass)
	e.Annotate("served", map[string]*string{"ingress/class": ptr.To("other")})
	e.waitNoRoute(e.host("served"), "/", "ingress/class changed to other")
}

// TestTLSSecret: with ingress/tls-secret, an HTTPS request whose SNI is the
// host gets the Secret's certificate (and reaches the backend); without
// it, Traefik's default certificate.
func TestTLSSecret(t *testing.T) {
	e := setup(t)
	h := e.host("secure")
	cert, certPEM, keyPEM := selfSignedCert(t, h)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: "secure-tls"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}
	if _, err := e.Client.CoreV1().Secrets(e.NS).Create(e.Ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	ours := func(c *x509.Certificate) bool { return c != nil && c.Equal(cert) }

	e.webService("secure", map[string]string{"ingress/http": "true"})
	e.waitRoute(h, "/", "secure", "plain HTTP")
	// Without the annotation HTTPS routes too (the entrypoint terminates
	// TLS) but with Traefik's default certificate.
	r := e.waitTLS(h, "without ingress/tls-secret", func(r dataplane.Response) error {
		if r.Status != 200 || r.Backend != "secure" {
			return fmt.Errorf("got %s", r)
		}
		if ours(r.Certificate) {
			return fmt.Errorf("the Secret's certificate is served without ingress/tls-secret")
		}
		return nil
	})
	t.Logf("without ingress/tls-secret the certificate is %q", r.Certificate.Subject)

	e.Annotate("secure", map[string]*string{"ingress/tls-secret": ptr.To("secure-tls")})
	r = e.waitTLS(h, "ingress/tls-secret secure-tls", func(r dataplane.Response) error {
		if !ours(r.Certificate) {
			return fmt.Errorf("certificate %q is not the Secret's", r.Certificate.Subject)
		}
		if r.Status != 200 || r.Backend != "secure" {
			return fmt.Errorf("got %s", r)
		}
		return nil
	})
	if _, err := r.Certificate.Verify(x509.VerifyOptions{Roots: roots, DNSName: h}); err != nil {
		t.Errorf("the served certificate does not verify for %s: %v", h, err)
	}
	other := e.host("other")
	if r, err := traefik.GetTLS(e.Ctx, other, "/"); err != nil || ours(r.Certificate) {
		t.Errorf("SNI %s (not the Secret's host) got the Secret's certificate (%v, err %v)", other, r, err)
	}

	e.Annotate("secure", map[string]*string{"ingress/tls-secret": nil})
	e.waitTLS(h, "ingress/tls-secret removed", func(r dataplane.Response) error {
		if ours(r.Certificate) {
			return fmt.Errorf("still the Secret's certificate")
		}
		return nil
	})
}

// waitTLS waits until an HTTPS request to host (SNI host) satisfies check.
func (e *env) waitTLS(host, what string, check func(dataplane.Response) error) dataplane.Response {
	e.T.Helper()
	var r dataplane.Response
	framework.Eventually(e.T, routeTimeout, what+": https://"+host, func(ctx context.Context) (bool, error) {
		var err error
		r, err = traefik.GetTLS(ctx, host, "/")
		if err != nil {
			return false, err
		}
		return true, check(r)
	})
	e.T.Logf("%s: https://%s/ -> %s, certificate %q", what, host, r, r.Certificate.Subject)
	return r
}

// TestDriftIsRestored: someone edits the Ingress's path; the traffic comes
// back to the Service's path. First with the manager running, then with it
// stopped, so the edit is seen to move the traffic before the restarted
// manager moves it back.
func TestDriftIsRestored(t *testing.T) {
	e := setup(t)
	h := e.host("drift")
	e.webService("drift", map[string]string{"ingress/http": "true", "ingress/path": "/app"})
	e.waitRoute(h, "/app", "drift", "ingress/path /app")

	hijack := func() string {
		ing := e.WaitIngress("drift", "the Ingress", nil)
		ing.Spec.Rules[0].HTTP.Paths[0].Path = "/hijacked"
		out, err := e.Client.NetworkingV1().Ingresses(e.NS).Update(e.Ctx, ing, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		if err != nil {
			t.Fatal(err)
		}
		return out.ResourceVersion
	}
	restored := func(editRV string) {
		e.WaitIngress("drift", "the path restored by the controller", func(ing *networkingv1.Ingress) error {
			if ing.ResourceVersion == editRV {
				return fmt.Errorf("still the edited Ingress")
			}
			if p := ing.Spec.Rules[0].HTTP.Paths[0].Path; p != "/app" {
				return fmt.Errorf("path %q", p)
			}
			return nil
		})
		// Traefik may apply the edited Ingress after the restored one was
		// written: only once it holds every write so far (barrier) must the
		// edited path be gone.
		e.barrier()
		e.route(h, "/app", "drift", "the Service's path again")
		e.noRoute(h, "/hijacked", "the edited path")
	}

	t.Run("edited while the manager runs", func(t *testing.T) {
		e.T = t
		restored(hijack())
	})
	t.Run("edited while the manager is down", func(t *testing.T) {
		e.T = t
		if err := e.M.Stop(); err != nil {
			t.Fatal(err)
		}
		rv := hijack()
		e.waitRoute(h, "/hijacked", "drift", "the edit moved the traffic")
		e.noRoute(h, "/app", "the edit moved the traffic away")
		e.Start()
		restored(rv)
	})
}

// TestForeignIngressKeepsRouting: a same-named Ingress the controller does
// not control keeps routing where its owner pointed it; once it is gone
// the Service's own Ingress takes over.
func TestForeignIngressKeepsRouting(t *testing.T) {
	e := setup(t)
	h := e.host("web")
	e.webService("elsewhere", nil)
	foreign := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: "web", Annotations: map[string]string{"team": "other"}},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: h,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "elsewhere", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}},
		}}},
	}
	created, err := e.Client.NetworkingV1().Ingresses(e.NS).Create(e.Ctx, foreign, metav1.CreateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitRoute(h, "/", "elsewhere", "the foreign Ingress")

	// The Service asks for the very same host and path, to its own backend.
	e.webService("web", map[string]string{"ingress/http": "true"})
	e.WaitEvent("web", corev1.EventTypeWarning, "IngressExists")
	e.WaitSynced("web", 1)
	e.barrier()
	e.route(h, "/", "elsewhere", "the foreign Ingress still routes where its owner pointed it")
	if got, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web", metav1.GetOptions{}); err != nil || got.ResourceVersion != created.ResourceVersion {
		t.Errorf("the foreign Ingress was modified (err %v)", err)
	}

	if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRoute(h, "/", "web", "the Service's own Ingress once the foreign one is gone")
}
