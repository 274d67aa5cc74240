package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// headerBackend names the backend that answered a request; headerHost
// and headerForwardedPrefix echo the Host and X-Forwarded-Prefix headers
// of the request the backend received.
const (
	headerBackend         = "X-Test-Backend"
	headerHost            = "X-Test-Host"
	headerForwardedPrefix = "X-Test-Forwarded-Prefix"
	headerQuery           = "X-Test-Query"
)

// Backend is an HTTP server on BackendIP standing in for a Service's Pods:
// it answers every request with 200, its name in the X-Test-Backend header,
// the Host and X-Forwarded-Prefix headers and the query it received in
// X-Test-Host, X-Test-Forwarded-Prefix and X-Test-Query, and the request path as the body, and records when each Host first
// reached it.
type Backend struct {
	// Name identifies the backend in responses.
	Name string
	// Port is the port it listens on, at BackendIP.
	Port int32

	srv *http.Server
	mu  sync.Mutex
	// first records the first arrival of a request per Host header.
	first map[string]time.Time
}

// NewBackend starts a backend named name on BackendIP and a free port.
func NewBackend(name string) (*Backend, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(BackendIP, "0"))
	if err != nil {
		return nil, fmt.Errorf("backend %s: listening on %s: %w", name, BackendIP, err)
	}
	b := &Backend{Name: name, Port: int32(l.Addr().(*net.TCPAddr).Port), first: map[string]time.Time{}}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = b.srv.Serve(l) }()
	return b, nil
}

// StartBackend is NewBackend for a test: the backend stops when it ends.
func StartBackend(t testing.TB, name string) *Backend {
	t.Helper()
	b, err := NewBackend(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// ServeHTTP answers with the backend's name, the request's Host and
// X-Forwarded-Prefix, and the request path.
func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	b.mu.Lock()
	if _, ok := b.first[r.Host]; !ok {
		b.first[r.Host] = now
	}
	b.mu.Unlock()
	w.Header().Set(headerBackend, b.Name)
	w.Header().Set(headerHost, r.Host)
	w.Header().Set(headerQuery, r.URL.RawQuery)
	if p, ok := r.Header["X-Forwarded-Prefix"]; ok {
		w.Header()[headerForwardedPrefix] = p
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintln(w, r.URL.Path)
}

// FirstRequest returns when a request with Host host first reached the
// backend, and whether one did.
func (b *Backend) FirstRequest(host string) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.first[host]
	return t, ok
}

// Close stops the backend.
func (b *Backend) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.srv.Shutdown(ctx)
}

// EndpointSlice returns the EndpointSlice that makes backends the ready
// endpoints of the Service svc, as the EndpointSlice controller of a
// cluster would for Pods: one endpoint at BackendIP, and for each Service
// port name (as in svc's spec.ports; "" for an unnamed port) the port of
// its backend. Ingress controllers find a Service port's endpoints by the
// port's name.
func EndpointSlice(svc *corev1.Service, backends map[string]*Backend) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: svc.Namespace,
			Name:      svc.Name + "-test",
			Labels: map[string]string{
				discoveryv1.LabelServiceName: svc.Name,
				discoveryv1.LabelManagedBy:   "dataplane.test",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{BackendIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
		}},
	}
	for _, p := range svc.Spec.Ports {
		b, ok := backends[p.Name]
		if !ok {
			continue
		}
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{
			Name:     ptr.To(p.Name),
			Port:     ptr.To(b.Port),
			Protocol: ptr.To(corev1.ProtocolTCP),
		})
	}
	return es
}

// Publish creates the EndpointSlice of EndpointSlice(svc, backends).
func Publish(ctx context.Context, client kubernetes.Interface, svc *corev1.Service, backends map[string]*Backend) error {
	es := EndpointSlice(svc, backends)
	if len(es.Ports) != len(backends) {
		return fmt.Errorf("publishing endpoints of %s/%s: a backend names a port the Service does not have (ports %v)", svc.Namespace, svc.Name, svc.Spec.Ports)
	}
	if _, err := client.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, es, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("publishing endpoints of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}
