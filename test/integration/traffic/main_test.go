// Traffic tests of the ingress-manager: the Ingresses it writes are served
// by a real ingress controller (Traefik, bin/traefik) watching the test
// kube-apiserver, and real HTTP requests sent through Traefik must reach,
// or must not reach, the Service's backend. Everything runs in a private
// network namespace (see the dataplane package).
package traffic

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

var (
	cfg     *rest.Config
	traefik *dataplane.Traefik
)

func TestMain(m *testing.M) {
	dataplane.MainWithTraefik(m, "traffic", &cfg, &traefik, dataplane.TraefikOptions{Gateway: true, GatewayEntryPoints: 2, GatewayIP: "192.0.2.80", IngressNGINX: true})
}

const (
	// timeout bounds waits on the API server and the manager.
	timeout = 30 * time.Second
	// routeTimeout bounds how long a change may take to show in the
	// traffic: the manager's write, Traefik's watch and its reload.
	routeTimeout = 15 * time.Second
	// hostTemplate gives each Service of a test its own host, so that the
	// Ingresses of earlier tests never answer a later test's request.
	hostTemplate = "{{.Name}}.{{.Namespace}}.example.com"
)

// env is framework.Env running the ingress-manager alone with per-Service
// hosts, and the barrier's state.
type env struct {
	*framework.Env
	// root is the test that made the env.
	root *testing.T
	// barrierN numbers the barrier paths.
	barrierN atomic.Int32
	barrierB *dataplane.Backend
}

// setup creates a namespace and runs a manager with only ingress-manager,
// scoped to it, with per-Service hosts.
func setup(t *testing.T, mutate ...func(*app.Options)) *env {
	t.Helper()
	dataplane.Require(t)
	opts := append([]func(*app.Options){func(o *app.Options) { o.IngressHostTemplate = hostTemplate }}, mutate...)
	e := &env{Env: framework.NewEnv(t, []string{"ingress-manager"}, opts...), root: t}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("traefik's routers:\n%s\ntraefik's log:\n%s", traefik.Routers(), traefik.Logs())
		}
		if exited, err := traefik.Exited(); exited {
			t.Errorf("traefik exited during the test: %v", err)
		}
	})
	return e
}

// host is the host the manager gives Service name by default.
func (e *env) host(name string) string { return name + "." + e.NS + ".example.com" }

// service creates a Service with the given ports (name -> port) and
// annotations, and publishes backends (Service port name -> backend) as
// its ready endpoints.
func (e *env) service(name string, ann map[string]string, ports map[string]int32, backends map[string]*dataplane.Backend) *corev1.Service {
	e.T.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: name, Annotations: ann}}
	for pn, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: pn, Port: p, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(p)})
	}
	out, err := e.Client.CoreV1().Services(e.NS).Create(e.Ctx, svc, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("creating Service %s: %v", name, err)
	}
	if err := dataplane.Publish(e.Ctx, e.Client, out, backends); err != nil {
		e.T.Fatal(err)
	}
	return out
}

// webService is a Service with one port, http 80, served by a new backend
// of the same name.
func (e *env) webService(name string, ann map[string]string) (*corev1.Service, *dataplane.Backend) {
	e.T.Helper()
	b := dataplane.StartBackend(e.T, name)
	return e.service(name, ann, map[string]int32{"http": 80}, map[string]*dataplane.Backend{"http": b}), b
}

// waitRoute waits until GET http://host/path through Traefik reaches
// backend, and returns how long that took.
func (e *env) waitRoute(host, path, backend, what string) time.Duration {
	e.T.Helper()
	start := time.Now()
	var last string
	framework.Eventually(e.T, routeTimeout, fmt.Sprintf("%s: http://%s%s reaches backend %s", what, host, path, backend), func(ctx context.Context) (bool, error) {
		r, err := traefik.Get(ctx, host, path)
		if err != nil {
			return false, err
		}
		last = r.String()
		if r.Status != 200 || r.Backend != backend {
			return false, fmt.Errorf("got %s", r)
		}
		if r.Path != path {
			return false, fmt.Errorf("backend saw path %q", r.Path)
		}
		return true, nil
	})
	d := time.Since(start)
	e.T.Logf("%s: http://%s%s -> %s after %v", what, host, path, last, d.Round(time.Millisecond))
	return d
}

// waitNoRoute waits until GET http://host/path through Traefik gets
// Traefik's own 404 (no router matches).
func (e *env) waitNoRoute(host, path, what string) time.Duration {
	e.T.Helper()
	start := time.Now()
	framework.Eventually(e.T, routeTimeout, fmt.Sprintf("%s: http://%s%s gets traefik's 404", what, host, path), func(ctx context.Context) (bool, error) {
		r, err := traefik.Get(ctx, host, path)
		if err != nil {
			return false, err
		}
		if r.Status != 404 || r.Backend != "" {
			return false, fmt.Errorf("got %s", r)
		}
		return true, nil
	})
	d := time.Since(start)
	e.T.Logf("%s: http://%s%s -> 404 after %v", what, host, path, d.Round(time.Millisecond))
	return d
}

// noRoute checks that GET http://host/path through Traefik gets Traefik's
// 404 now. Call it only once Traefik's configuration is known to hold the
// state under test (after a waitRoute or barrier that proves it).
func (e *env) noRoute(host, path, why string) {
	e.T.Helper()
	r, err := traefik.Get(e.Ctx, host, path)
	if err != nil {
		e.T.Fatalf("%s: GET http://%s%s: %v", why, host, path, err)
	}
	if r.Status != 404 || r.Backend != "" {
		e.T.Errorf("%s: GET http://%s%s = %s, want traefik's 404", why, host, path, r)
		return
	}
	e.T.Logf("%s: http://%s%s -> 404", why, host, path)
}

// route checks that GET http://host/path through Traefik reaches backend now.
func (e *env) route(host, path, backend, why string) {
	e.T.Helper()
	r, err := traefik.Get(e.Ctx, host, path)
	if err != nil {
		e.T.Fatalf("%s: GET http://%s%s: %v", why, host, path, err)
	}
	if r.Status != 200 || r.Backend != backend {
		e.T.Errorf("%s: GET http://%s%s = %s, want 200 from backend %s", why, host, path, r, backend)
	}
}

// barrier makes sure Traefik has applied every Ingress written before it
// was called: it writes an Ingress of its own (with a new path each time)
// and waits until that path routes. Traefik watches Ingresses in order of
// their writes and builds each configuration from all of them, so a
// configuration holding the barrier holds every earlier Ingress write too.
func (e *env) barrier() {
	e.T.Helper()
	const name = "barrier"
	if e.barrierB == nil {
		e.barrierB = dataplane.StartBackend(e.root, name)
		e.service(name, nil, map[string]int32{"http": 80}, map[string]*dataplane.Backend{"http": e.barrierB})
	}
	path := fmt.Sprintf("/barrier-%d", e.barrierN.Add(1))
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.NS, Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: e.host(name),
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: ptr.To(networkingv1.PathTypeExact),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: name, Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}},
		}}},
	}
	cur, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = e.Client.NetworkingV1().Ingresses(e.NS).Create(e.Ctx, ing, metav1.CreateOptions{})
	case err == nil:
		cur.Spec = ing.Spec
		_, err = e.Client.NetworkingV1().Ingresses(e.NS).Update(e.Ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		e.T.Fatalf("writing the barrier Ingress: %v", err)
	}
	e.waitRoute(e.host(name), path, name, "barrier")
}

// selfSignedCert returns a self-signed certificate for host (its common
// and only DNS name) and its PEM certificate and key.
func selfSignedCert(t *testing.T, host string) (*x509.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cert.NewSelfSignedCACert(cert.Config{CommonName: host, Organization: []string{"traffic test"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return c, pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: c.Raw}), keyPEM
}
