// DNS tests of the ingress-manager: a real external-dns (bin/external-dns)
// with its ingress and gateway-httproute sources watches the test
// kube-apiserver and publishes records through its webhook provider into a
// zone this test serves and records (dataplane.DNSRecorder); Traefik serves
// the Ingresses and the Gateway and publishes their addresses in their
// status, as an Ingress controller and a Gateway behind load balancers do.
// Everything runs in a private network namespace (see the dataplane
// package).
package dns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// The addresses Traefik publishes for the Ingresses it serves and for its
// Gateway (documentation ranges: only written into status and records,
// never listened on). The Ingress's sorts first, so that external-dns, were
// it left to choose between both objects' records, would keep it.
const (
	ingressIP = "192.0.2.10"
	gatewayIP = "203.0.113.10"
)

var (
	cfg     *rest.Config
	traefik *dataplane.Traefik
)

func TestMain(m *testing.M) {
	dataplane.MainWithTraefik(m, "dns", &cfg, &traefik, dataplane.TraefikOptions{Gateway: true, IngressIP: ingressIP, GatewayIP: gatewayIP})
}

// timeout bounds every wait but the drains.
const timeout = 30 * time.Second

// moment is what the test saw while external-dns applied the change that
// moved the record: the old object then, and both entrypoints.
type moment struct {
	change dataplane.DNSChange
	// oldExists, oldWithdrawn: the old object as the API server had it.
	oldExists    bool
	oldWithdrawn string
	// oldServes, newServes: a request through the old object's and the new
	// object's entrypoints reached the backend.
	oldServes, newServes string
}

// TestRecordFollowsTheMove moves a Service from Ingress to HTTPRoute and
// back under a real external-dns: the record of its host first points at
// the Ingress's address; after the move it points at the Gateway's while
// the Ingress still exists and serves (the Ingress is withdrawn from
// external-dns, not deleted, once the route is ready); no state of the zone
// lacks the record; the Ingress is deleted after the drain; and the same
// the other way.
func TestRecordFollowsTheMove(t *testing.T) {
	const settle, drain = time.Second, 8 * time.Second
	dataplane.Require(t)
	client, ns := framework.Setup(t)
	o := framework.ControllerOptions(ns, "ingress-manager")
	o.IngressHostTemplate = "{{.Name}}.{{.Namespace}}.example.com"
	o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, drain
	framework.StartManager(t, cfg, o)
	gw := traefik.Gateway(t, cfg, ns, "gw")
	host := "web." + ns + ".example.com"

	zone, err := dataplane.StartDNSRecorder(ns + ".example.com")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zone.Close)
	xdns, err := dataplane.StartExternalDNS(cfg, dataplane.ExternalDNSOptions{
		Provider:     zone.URL,
		Sources:      []string{"ingress", "gateway-httproute"},
		Namespace:    ns,
		DomainFilter: ns + ".example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if exited, err := xdns.Exited(); exited {
			t.Errorf("external-dns exited during the test: %v", err)
		}
		if t.Failed() {
			t.Logf("external-dns's log:\n%s\ntraefik's log:\n%s", xdns.Logs(), traefik.Logs())
		}
		xdns.Stop()
	})

	backend := dataplane.StartBackend(t, "web")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{ingressmanager.AnnotationHTTP: "true"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}}},
	}
	svc, err = client.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := dataplane.Publish(context.Background(), client, svc, map[string]*dataplane.Backend{"http": backend}); err != nil {
		t.Fatal(err)
	}
	waitServes(t, traefik.Get, host, "the Ingress")
	waitRecord(t, zone, host, ingressIP, timeout, "the record of the Ingress")

	m := &mover{t: t, zone: zone, client: client, gw: gw, ns: ns, host: host}
	zone.OnChange(m.onChange)

	// To the Gateway.
	start := time.Now()
	m.expect(gatewayIP, "Ingress", traefik.Get, traefik.GetGateway)
	framework.Annotate(t, client, ns, "web", map[string]*string{ingressmanager.AnnotationGateway: ptr.To("gw")})
	waitRecord(t, zone, host, gatewayIP, timeout, "the record moved to the Gateway")
	gone := waitGone(t, framework.Get(client.NetworkingV1().Ingresses(ns).Get, "web"), drain+timeout, "the Ingress deleted after the drain")
	m.check(start, gone, drain)

	// And back to the Ingress.
	start = time.Now()
	m.expect(ingressIP, "HTTPRoute", traefik.GetGateway, traefik.Get)
	framework.Annotate(t, client, ns, "web", map[string]*string{ingressmanager.AnnotationGateway: ptr.To("")})
	waitRecord(t, zone, host, ingressIP, timeout, "the record moved back to the Ingress")
	gone = waitGone(t, framework.Get(gw.GatewayV1().HTTPRoutes(ns).Get, "web"), drain+timeout, "the route deleted after the drain")
	m.check(start, gone, drain)

	// No state of the zone, from the first record on, lacks it.
	seen := false
	var states []string
	for _, c := range zone.Changes() {
		targets := c.Targets(host, "A")
		seen = seen || len(targets) > 0
		if seen && len(targets) == 0 {
			t.Errorf("at %s external-dns left %s without an A record: %s", c.At.Format(time.StampMilli), host, c.Summary)
		}
		states = append(states, fmt.Sprintf("%s A %s -> %v", c.At.Format(time.StampMilli), host, targets))
	}
	t.Logf("every state of the zone external-dns made:\n  %s", strings.Join(states, "\n  "))
}

// get is a request through one of Traefik's entrypoints.
type get func(ctx context.Context, host, path string) (dataplane.Response, error)

// mover follows one move: the change that moves the record to its
// target, and what held at that moment.
type mover struct {
	t      *testing.T
	zone   *dataplane.DNSRecorder
	client kubernetes.Interface
	gw     gatewayclient.Interface
	ns     string
	host   string

	mu               sync.Mutex
	target, oldKind  string
	viaOld, viaNew   get
	moved            *moment
	changesBeforeRun int
}

// expect starts a move whose record goes to target, away from an old
// object of kind oldKind served through viaOld, to one served through
// viaNew.
func (m *mover) expect(target, oldKind string, viaOld, viaNew get) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.target, m.oldKind, m.viaOld, m.viaNew, m.moved = target, oldKind, viaOld, viaNew, nil
	m.changesBeforeRun = len(m.zone.Changes())
}

// onChange runs while external-dns waits for the provider's answer: when
// the record first points at the target, it looks at the old object and
// both entrypoints.
func (m *mover) onChange(c dataplane.DNSChange) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.moved != nil || !slices.Equal(c.Targets(m.host, "A"), []string{m.target}) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	mo := &moment{change: c}
	var obj metav1.Object
	var err error
	if m.oldKind == "Ingress" {
		obj, err = m.client.NetworkingV1().Ingresses(m.ns).Get(ctx, "web", metav1.GetOptions{})
	} else {
		obj, err = m.gw.GatewayV1().HTTPRoutes(m.ns).Get(ctx, "web", metav1.GetOptions{})
	}
	switch {
	case err == nil:
		mo.oldExists = true
		mo.oldWithdrawn = obj.GetAnnotations()[ingressmanager.AnnotationDNSWithdrawn]
	case !apierrors.IsNotFound(err):
		mo.oldWithdrawn = err.Error()
	}
	mo.oldServes = serves(ctx, m.viaOld, m.host)
	mo.newServes = serves(ctx, m.viaNew, m.host)
	m.moved = mo
}

// check checks the move that started at start and whose old object was
// gone by gone.
func (m *mover) check(start, gone time.Time, drain time.Duration) {
	t := m.t
	t.Helper()
	m.mu.Lock()
	mo := m.moved
	changes := m.zone.Changes()[m.changesBeforeRun:]
	m.mu.Unlock()
	if mo == nil {
		t.Fatalf("no change moved the record of %s to %s", m.host, m.target)
	}
	if !mo.oldExists {
		t.Errorf("when external-dns moved the record to %s (%s), the old %s no longer existed", m.target, mo.change.Summary, m.oldKind)
	}
	if mo.oldWithdrawn == "" {
		t.Errorf("when external-dns moved the record to %s, the old %s was not withdrawn from external-dns", m.target, m.oldKind)
	}
	if mo.oldServes != "" {
		t.Errorf("when external-dns moved the record to %s, the old %s did not serve: %s", m.target, m.oldKind, mo.oldServes)
	}
	if mo.newServes != "" {
		t.Errorf("when external-dns moved the record to %s, its new object did not serve: %s", m.target, mo.newServes)
	}
	if !mo.change.At.Before(gone) {
		t.Errorf("the record moved at %v, after the old %s was gone at %v", mo.change.At, m.oldKind, gone)
	}
	withdrawn, err := time.Parse(time.RFC3339Nano, mo.oldWithdrawn)
	if err == nil && gone.Sub(withdrawn) < drain {
		t.Errorf("the old %s was withdrawn at %v and gone by %v: before the drain %v passed", m.oldKind, withdrawn, gone, drain)
	}
	var timeline []string
	for _, c := range changes {
		if strings.Contains(c.Summary, " "+m.host+" ") {
			timeline = append(timeline, fmt.Sprintf("%v: %s (A %s -> %v)", c.At.Sub(start).Round(time.Millisecond), c.Summary, m.host, c.Targets(m.host, "A")))
		}
	}
	t.Logf("move away from the %s, from the annotation on:\n  %s withdrawn at %v\n  %s\n  record at %s while the %s existed and served: %v\n  %s deleted by %v",
		m.oldKind, m.oldKind, withdrawn.Sub(start).Round(time.Millisecond), strings.Join(timeline, "\n  "),
		m.target, m.oldKind, mo.change.At.Sub(start).Round(time.Millisecond), m.oldKind, gone.Sub(start).Round(time.Millisecond))
}

// serves returns "" when a request for host through via reaches the
// backend web, else what it got.
func serves(ctx context.Context, via get, host string) string {
	r, err := via(ctx, host, "/")
	if err != nil {
		return err.Error()
	}
	if r.Status != 200 || r.Backend != "web" {
		return r.String()
	}
	return ""
}

// waitServes waits until a request for host through via reaches web.
func waitServes(t *testing.T, via get, host, what string) {
	t.Helper()
	framework.Eventually(t, timeout, what+" serves "+host, func(ctx context.Context) (bool, error) {
		if got := serves(ctx, via, host); got != "" {
			return false, fmt.Errorf("got %s", got)
		}
		return true, nil
	})
}

// waitRecord waits until the zone's A record of host is target alone.
func waitRecord(t *testing.T, zone *dataplane.DNSRecorder, host, target string, within time.Duration, what string) {
	t.Helper()
	framework.EventuallyEvery(t, 20*time.Millisecond, within, fmt.Sprintf("%s: A %s -> %s", what, host, target), func(context.Context) (bool, error) {
		if got := zone.Targets(host, "A"); !slices.Equal(got, []string{target}) {
			return false, fmt.Errorf("A %s -> %v", host, got)
		}
		return true, nil
	})
}

// waitGone waits until get finds nothing, and returns when it saw that.
func waitGone[T any](t *testing.T, get func(context.Context) (T, error), within time.Duration, what string) time.Time {
	t.Helper()
	var at time.Time
	framework.EventuallyEvery(t, 50*time.Millisecond, within, what, func(ctx context.Context) (bool, error) {
		_, err := get(ctx)
		if apierrors.IsNotFound(err) {
			at = time.Now()
			return true, nil
		}
		return false, err
	})
	return at
}
