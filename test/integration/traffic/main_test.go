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
	"k8s.io/client-go/kubernetes"
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
	dataplane.MainWithTraefik(m, "traffic", &cfg, &traefik, dataplane.TraefikOptions{Gateway: true})
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

type env struct {
	// t is the running (sub)test, root the test that made the env.
	t, root *testing.T
	ctx     context.Context
	client  kubernetes.Interface
	ns      string
	m       *framework.Manager
	opts    []func(*app.Options)
	// barrierN numbers the barrier paths.
	barrierN atomic.Int32
	barrierB *dataplane.Backend
}

// setup creates a namespace and runs a manager with only ingress-manager,
// scoped to it, with per-Service hosts.
func setup(t *testing.T, mutate ...func(*app.Options)) *env {
	t.Helper()
	dataplane.Require(t)
	client, ns := framework.Setup(t)
	e := &env{t: t, root: t, ctx: context.Background(), client: client, ns: ns}
	e.opts = append([]func(*app.Options){func(o *app.Options) { o.IngressHostTemplate = hostTemplate }}, mutate...)
	e.start()
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

func (e *env) start() {
	o := framework.ControllerOptions(e.ns, "ingress-manager")
	for _, f := range e.opts {
		f(o)
	}
	e.m = framework.StartManager(e.t, cfg, o)
}

// host is the host the manager gives Service name by default.
func (e *env) host(name string) string { return name + "." + e.ns + ".example.com" }

// service creates a Service with the given ports (name -> port) and
// annotations, and publishes backends (Service port name -> backend) as
// its ready endpoints.
func (e *env) service(name string, ann map[string]string, ports map[string]int32, backends map[string]*dataplane.Backend) *corev1.Service {
	e.t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Annotations: ann}}
	for pn, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: pn, Port: p, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(p)})
	}
	out, err := e.client.CoreV1().Services(e.ns).Create(e.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating Service %s: %v", name, err)
	}
	if err := dataplane.Publish(e.ctx, e.client, out, backends); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// webService is a Service with one port, http 80, served by a new backend
// of the same name.
func (e *env) webService(name string, ann map[string]string) (*corev1.Service, *dataplane.Backend) {
	e.t.Helper()
	b := dataplane.StartBackend(e.t, name)
	return e.service(name, ann, map[string]int32{"http": 80}, map[string]*dataplane.Backend{"http": b}), b
}

// waitNoIngress waits until the Ingress name is gone.
func (e *env) waitNoIngress(name, what string) {
	e.t.Helper()
	start := time.Now()
	framework.WaitGone(e.t, what, framework.Get(e.client.NetworkingV1().Ingresses(e.ns).Get, name))
	e.t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// waitRoute waits until GET http://host/path through Traefik reaches
// backend, and returns how long that took.
func (e *env) waitRoute(host, path, backend, what string) time.Duration {
	e.t.Helper()
	start := time.Now()
	var last string
	framework.Eventually(e.t, routeTimeout, fmt.Sprintf("%s: http://%s%s reaches backend %s", what, host, path, backend), func(ctx context.Context) (bool, error) {
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
	e.t.Logf("%s: http://%s%s -> %s after %v", what, host, path, last, d.Round(time.Millisecond))
	return d
}

// waitNoRoute waits until GET http://host/path through Traefik gets
// Traefik's own 404 (no router matches).
func (e *env) waitNoRoute(host, path, what string) time.Duration {
	e.t.Helper()
	start := time.Now()
	framework.Eventually(e.t, routeTimeout, fmt.Sprintf("%s: http://%s%s gets traefik's 404", what, host, path), func(ctx context.Context) (bool, error) {
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
	e.t.Logf("%s: http://%s%s -> 404 after %v", what, host, path, d.Round(time.Millisecond))
	return d
}

// noRoute checks that GET http://host/path through Traefik gets Traefik's
// 404 now. Call it only once Traefik's configuration is known to hold the
// state under test (after a waitRoute or barrier that proves it).
func (e *env) noRoute(host, path, why string) {
	e.t.Helper()
	r, err := traefik.Get(e.ctx, host, path)
	if err != nil {
		e.t.Fatalf("%s: GET http://%s%s: %v", why, host, path, err)
	}
	if r.Status != 404 || r.Backend != "" {
		e.t.Errorf("%s: GET http://%s%s = %s, want traefik's 404", why, host, path, r)
		return
	}
	e.t.Logf("%s: http://%s%s -> 404", why, host, path)
}

// route checks that GET http://host/path through Traefik reaches backend now.
func (e *env) route(host, path, backend, why string) {
	e.t.Helper()
	r, err := traefik.Get(e.ctx, host, path)
	if err != nil {
		e.t.Fatalf("%s: GET http://%s%s: %v", why, host, path, err)
	}
	if r.Status != 200 || r.Backend != backend {
		e.t.Errorf("%s: GET http://%s%s = %s, want 200 from backend %s", why, host, path, r, backend)
	}
}

// barrier makes sure Traefik has applied every Ingress written before it
// was called: it writes an Ingress of its own (with a new path each time)
// and waits until that path routes. Traefik watches Ingresses in order of
// their writes and builds each configuration from all of them, so a
// configuration holding the barrier holds every earlier Ingress write too.
func (e *env) barrier() {
	e.t.Helper()
	const name = "barrier"
	if e.barrierB == nil {
		e.barrierB = dataplane.StartBackend(e.root, name)
		e.service(name, nil, map[string]int32{"http": 80}, map[string]*dataplane.Backend{"http": e.barrierB})
	}
	path := fmt.Sprintf("/barrier-%d", e.barrierN.Add(1))
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: e.host(name),
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: ptr.To(networkingv1.PathTypeExact),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: name, Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}},
		}}},
	}
	cur, err := e.client.NetworkingV1().Ingresses(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = e.client.NetworkingV1().Ingresses(e.ns).Create(e.ctx, ing, metav1.CreateOptions{})
	case err == nil:
		cur.Spec = ing.Spec
		_, err = e.client.NetworkingV1().Ingresses(e.ns).Update(e.ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		e.t.Fatalf("writing the barrier Ingress: %v", err)
	}
	e.waitRoute(e.host(name), path, name, "barrier")
}

// waitSynced waits until the manager synced the Service key n times in all.
func (e *env) waitSynced(name string, n int) {
	e.t.Helper()
	e.m.WaitSynced(e.t, "ingress-manager", e.ns, name, n)
}

// waitEvent waits for an Event of reason on the Service name whose message
// contains every one of contains.
func (e *env) waitEvent(name, eventType, reason string, contains ...string) {
	e.t.Helper()
	framework.WaitEvent(e.t, e.client, timeout, e.ns, "Service", name, eventType, reason, contains...)
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
