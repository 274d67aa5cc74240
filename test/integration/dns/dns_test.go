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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kube-sample/controller-manager/internal/app"
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
	d := setup(t, settle, drain)
	client, ns, gw, zone := d.client, d.ns, d.gw, d.zone
	host := d.host("web")
	d.service("web", map[string]string{ingressmanager.AnnotationHTTP: "true"})
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

	d.noGap(host)
}

// TestRecordFollowsAUsersIngress: a user's Ingress (no Service controls
// it) that asks to move with ingress/delete-after-move, under a real
// external-dns: its record moves to the Gateway while the Ingress still
// exists and serves, withdrawn; no state of the zone lacks the record; the
// Ingress goes after the drain, and the route made from it stays and
// serves.
func TestRecordFollowsAUsersIngress(t *testing.T) {
	const settle, drain = time.Second, 8 * time.Second
	d := setup(t, settle, drain)
	host, m, start := d.moveUsersIngress("web")
	waitRecord(t, d.zone, host, gatewayIP, timeout, "the record moved to the Gateway")
	gone := waitGone(t, framework.Get(d.client.NetworkingV1().Ingresses(d.ns).Get, "web"), drain+timeout, "the Ingress deleted after the drain")
	m.check(start, gone, drain)
	waitServes(t, traefik.GetGateway, host, "the route made from the Ingress, the Ingress gone")
	d.noGap(host)
}

// restart stops the manager, as a kill would (nothing it holds in memory
// survives), and starts a new one with the settle time and DNS drain.
func (d *dnsEnv) restart(settle, drain time.Duration) {
	d.t.Helper()
	if err := d.mgr.Stop(); err != nil {
		d.t.Fatalf("stopping the manager: %v", err)
	}
	o := *d.o
	o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, drain
	d.mgr, d.o = framework.StartManager(d.t, cfg, &o), &o
}

// moveUsersIngress creates Service name and a user's Ingress of its name
// for its host (no Service controls it), waits until the Ingress serves
// and has its record, then asks it to move to Gateway gw, to be deleted
// once drained. It returns the host, the mover following the record, and
// when the move was asked.
func (d *dnsEnv) moveUsersIngress(name string) (string, *mover, time.Time) {
	t := d.t
	t.Helper()
	host := d.host(name)
	d.service(name, nil)
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: name, Annotations: map[string]string{"example.com/team": "shop"}},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: 80}}},
			}}}}}}},
	}
	if _, err := d.client.NetworkingV1().Ingresses(d.ns).Create(context.Background(), ing, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	waitServes(t, traefik.Get, host, "the user's Ingress")
	waitRecord(t, d.zone, host, ingressIP, timeout, "the record of the user's Ingress")

	m := &mover{t: t, zone: d.zone, client: d.client, gw: d.gw, ns: d.ns, host: host}
	d.zone.OnChange(m.onChange)
	start := time.Now()
	m.expect(gatewayIP, "Ingress", traefik.Get, traefik.GetGateway)
	patch := []byte(`{"metadata":{"annotations":{"` + ingressmanager.AnnotationGateway + `":"gw","` + ingressmanager.AnnotationDeleteAfterMove + `":"true"}}}`)
	if _, err := d.client.NetworkingV1().Ingresses(d.ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}
	return host, m, start
}

// TestUsersIngressMoveSurvivesRestarts: the manager stopped, as a kill
// would, twice in a user's Ingress's move, once its route serves but
// before the settle time let it withdraw the Ingress, and once mid-drain,
// resumes from what the API server holds: external-dns moves the record
// once, when the route serves; no state of the zone lacks the record;
// the Ingress goes only after a whole drain.
func TestUsersIngressMoveSurvivesRestarts(t *testing.T) {
	const drain = 8 * time.Second
	d := setup(t, time.Hour, drain) // a settle time the first manager never sees pass: it never withdraws
	host, m, start := d.moveUsersIngress("web")
	framework.WaitObject(t, "the route made and accepted by Traefik", framework.Get(d.gw.GatewayV1().HTTPRoutes(d.ns).Get, "web"), func(r *gatewayv1.HTTPRoute) error {
		for _, p := range r.Status.Parents {
			if string(p.ControllerName) == dataplane.GatewayController && apimeta.IsStatusConditionTrue(p.Conditions, string(gatewayv1.RouteConditionAccepted)) {
				return nil
			}
		}
		return fmt.Errorf("status %+v", r.Status.Parents)
	})
	waitServes(t, traefik.GetGateway, host, "the route, the Ingress not withdrawn yet")
	if ing, err := d.client.NetworkingV1().Ingresses(d.ns).Get(context.Background(), "web", metav1.GetOptions{}); err != nil || ing.Annotations[ingressmanager.AnnotationDNSWithdrawn] != "" {
		t.Fatalf("the Ingress withdrawn within the first manager's settle time (%v): %v", err, ing.GetAnnotations())
	}
	d.restart(time.Second, drain)
	withdrawn := framework.WaitObject(t, "the Ingress withdrawn by the second manager", framework.Get(d.client.NetworkingV1().Ingresses(d.ns).Get, "web"), func(i *networkingv1.Ingress) error {
		if _, ok := i.Annotations[ingressmanager.AnnotationDNSWithdrawn]; !ok {
			return fmt.Errorf("annotations %v", i.Annotations)
		}
		return nil
	})
	d.restart(time.Second, drain) // mid-drain
	waitRecord(t, d.zone, host, gatewayIP, timeout, "the record moved to the Gateway")
	gone := waitGone(t, framework.Get(d.client.NetworkingV1().Ingresses(d.ns).Get, "web"), drain+timeout, "the Ingress deleted after the drain")
	at, err := time.Parse(time.RFC3339Nano, withdrawn.Annotations[ingressmanager.AnnotationDNSWithdrawn])
	if err != nil {
		t.Fatal(err)
	}
	if gone.Sub(at) < drain {
		t.Errorf("the Ingress was deleted %v after its withdrawal, less than the drain %v: the restart cut it short", gone.Sub(at), drain)
	}
	m.check(start, gone, drain)
	waitServes(t, traefik.GetGateway, host, "the route made from the Ingress, the Ingress gone")
	d.noGap(host)
}

// dnsEnv is one test's namespace, with a manager running ingress-manager
// in it, Traefik's Gateway gw, a zone and an external-dns publishing the
// namespace's Ingresses and HTTPRoutes into it.
type dnsEnv struct {
	t      *testing.T
	client kubernetes.Interface
	ns     string
	gw     gatewayclient.Interface
	zone   *dataplane.DNSRecorder
	xdns   *dataplane.ExternalDNS
	// mgr is the running manager, o its options.
	mgr *framework.Manager
	o   *app.Options
}

// setup sets up a dnsEnv whose manager moves with the given settle time
// and DNS drain.
func setup(t *testing.T, settle, drain time.Duration) *dnsEnv {
	t.Helper()
	dataplane.Require(t)
	client, ns := framework.Setup(t)
	o := framework.ControllerOptions(ns, "ingress-manager")
	o.IngressHostTemplate = "{{.Name}}.{{.Namespace}}.example.com"
	o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, drain
	mgr := framework.StartManager(t, cfg, o)
	gw := traefik.Gateway(t, cfg, ns, "gw")

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
	return &dnsEnv{t: t, client: client, ns: ns, gw: gw, zone: zone, xdns: xdns, mgr: mgr, o: o}
}

// host is the host the manager gives Service name.
func (d *dnsEnv) host(name string) string { return name + "." + d.ns + ".example.com" }

// service creates Service name with annotations ann and one port, http 80,
// served by a new backend of the same name.
func (d *dnsEnv) service(name string, ann map[string]string) *corev1.Service {
	d.t.Helper()
	backend := dataplane.StartBackend(d.t, name)
	svc := framework.CreateService(d.t, d.client, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: name, Annotations: ann},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}}},
	})
	if err := dataplane.Publish(context.Background(), d.client, svc, map[string]*dataplane.Backend{"http": backend}); err != nil {
		d.t.Fatal(err)
	}
	return svc
}

// informerLag bounds how long external-dns's informers take to see a
// write of the API server, on this machine's loopback.
const informerLag = 500 * time.Millisecond

// waitSeen waits until external-dns finished a run that read its sources
// after what the API server held at `at` reached them (see
// DNSRecorder.ReadsAfter): the zone holds what external-dns makes of it.
func (d *dnsEnv) waitSeen(at time.Time, what string) {
	d.t.Helper()
	framework.EventuallyEvery(d.t, 50*time.Millisecond, timeout, "external-dns ran on "+what, func(context.Context) (bool, error) {
		return d.zone.ReadsAfter(at.Add(informerLag)) >= 2, nil
	})
}

// noGap checks that no state of the zone, from the first A record of host
// on, lacks it, and logs every state.
func (d *dnsEnv) noGap(host string) {
	d.t.Helper()
	seen := false
	var states []string
	for _, c := range d.zone.Changes() {
		targets := c.Targets(host, "A")
		seen = seen || len(targets) > 0
		if seen && len(targets) == 0 {
			d.t.Errorf("at %s external-dns left %s without an A record: %s", c.At.Format(time.StampMilli), host, c.Summary)
		}
		states = append(states, fmt.Sprintf("%s A %s -> %v", c.At.Format(time.StampMilli), host, targets))
	}
	d.t.Logf("every state of the zone external-dns made:\n  %s", strings.Join(states, "\n  "))
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

// withdrawal lists the annotations of a withdrawal from external-dns that
// obj carries, and external-dns's controller annotations.
func withdrawal(obj metav1.Object) map[string]string {
	out := map[string]string{}
	for _, k := range []string{ingressmanager.AnnotationExternalDNSController, ingressmanager.AnnotationExternalDNSControllerLegacy,
		ingressmanager.AnnotationDNSWithdrawn, ingressmanager.AnnotationDNSControllerSaved} {
		if v, ok := obj.GetAnnotations()[k]; ok {
			out[k] = v
		}
	}
	return out
}

// waitAnnotations waits until get's object has exactly want of the
// annotations withdrawal lists (nil: none).
func waitAnnotations[T metav1.Object](t *testing.T, get func(context.Context) (T, error), what string, want map[string]string) {
	t.Helper()
	framework.Eventually(t, timeout, what, func(context.Context) (bool, error) {
		// Not the poll's context: a read cut short by its deadline would
		// hide what the object was last seen with.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		obj, err := get(ctx)
		if err != nil {
			return false, err
		}
		if got := withdrawal(obj); !maps.Equal(got, want) {
			return false, fmt.Errorf("got %v", got)
		}
		return true, nil
	})
}

// waitWithdrawn waits until get's object is withdrawn from external-dns,
// and returns its annotations.
func waitWithdrawn[T metav1.Object](t *testing.T, get func(context.Context) (T, error), what string) map[string]string {
	t.Helper()
	var got map[string]string
	framework.Eventually(t, timeout, what, func(ctx context.Context) (bool, error) {
		obj, err := get(ctx)
		if err != nil {
			return false, err
		}
		got = withdrawal(obj)
		if got[ingressmanager.AnnotationDNSWithdrawn] == "" {
			return false, fmt.Errorf("not withdrawn: %v", got)
		}
		return true, nil
	})
	return got
}

// TestRecordKeptWhenTheRouteGoesMidDrain (issue 49, item 2): mid-drain (the
// record moved to the Gateway, the Ingress withdrawn), the route is deleted
// and cannot be made again (a ValidatingAdmissionPolicy refuses every
// create of an HTTPRoute in the namespace). A finalizer holds the route
// (as Gateway implementations' and GitOps tools' finalizers do), so
// external-dns goes on publishing it while the controller, for which an
// object being deleted never serves, returns the Ingress to external-dns;
// then the finalizer goes, and with it the route. No state external-dns
// makes of the zone lacks the record, which ends at the Ingress's address,
// and the Ingress serves and stays.
func TestRecordKeptWhenTheRouteGoesMidDrain(t *testing.T) {
	// The drain is never waited for: the route goes while it runs.
	const settle, drain = time.Second, time.Minute
	const finalizer = "test.example.com/hold"
	d := setup(t, settle, drain)
	host := d.host("web")
	routes, ingresses := d.gw.GatewayV1().HTTPRoutes(d.ns), d.client.NetworkingV1().Ingresses(d.ns)
	d.service("web", map[string]string{ingressmanager.AnnotationHTTP: "true"})
	waitServes(t, traefik.Get, host, "the Ingress")
	waitRecord(t, d.zone, host, ingressIP, timeout, "the record of the Ingress")

	framework.Annotate(t, d.client, d.ns, "web", map[string]*string{ingressmanager.AnnotationGateway: ptr.To("gw")})
	waitRecord(t, d.zone, host, gatewayIP, timeout, "the record moved to the Gateway")
	waitWithdrawn(t, framework.Get(ingresses.Get, "web"), "the Ingress withdrawn, draining")

	hold, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": []string{finalizer}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := routes.Patch(context.Background(), "web", types.MergePatchType, hold, metav1.PatchOptions{}); err != nil {
		t.Fatalf("adding a finalizer to the route: %v", err)
	}
	framework.DenyCreates(t, d.client, d.ns, gatewayv1.GroupName, "httproutes", func(ctx context.Context) error {
		probe := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "admission-probe"}}
		_, err := routes.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	deleted := time.Now()
	if err := routes.Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the route: %v", err)
	}
	waitAnnotations(t, framework.Get(ingresses.Get, "web"), "the Ingress returned to external-dns while the route is held", nil)
	returned := time.Now()
	framework.WaitEvent(t, d.client, timeout, d.ns, "Service", "web", corev1.EventTypeNormal, ingressmanager.ReasonReturnedToDNS, "Ingress web")
	d.waitSeen(returned, "the Ingress returned")

	release, err := json.Marshal([]map[string]any{{"op": "remove", "path": "/metadata/finalizers"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := routes.Patch(context.Background(), "web", types.JSONPatchType, release, metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the route's finalizer: %v", err)
	}
	waitGone(t, framework.Get(routes.Get, "web"), timeout, "the route gone")
	waitRecord(t, d.zone, host, ingressIP, timeout, "the record back at the Ingress")
	waitServes(t, traefik.Get, host, "the Ingress")
	d.waitSeen(time.Now(), "the route gone")
	if _, err := routes.Get(context.Background(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the route is there again, despite the policy (err %v)", err)
	}
	if ing, err := ingresses.Get(context.Background(), "web", metav1.GetOptions{}); err != nil || ing.DeletionTimestamp != nil || len(withdrawal(ing)) > 0 {
		t.Errorf("the Ingress, the only object that serves, is not there to stay in external-dns (err %v)", err)
	}
	d.noGap(host)
	t.Logf("route deleted -> Ingress returned to external-dns: %v", returned.Sub(deleted).Round(time.Millisecond))
}

// TestUsersControllerAnnotationSurvives (issue 49, item 5): a Service whose
// ingress/annotations give its objects external-dns's controller
// annotations (both keys) with a value of its own, "someone-else", is
// never published by the real external-dns while it moves to the Gateway
// and back: the withdrawal saves the value, the return to external-dns
// (the route no longer serving, its backend's port given an appProtocol
// Traefik's Gateway provider cannot speak) and the move back mid-drain
// put it back, and the route withdrawn on the way back keeps its own. A
// Service without it in the same namespace is published all along.
func TestUsersControllerAnnotationSurvives(t *testing.T) {
	const settle, drain = time.Second, 5 * time.Second
	d := setup(t, settle, drain)
	host, control := d.host("web"), d.host("control")
	routes, ingresses := d.gw.GatewayV1().HTTPRoutes(d.ns), d.client.NetworkingV1().Ingresses(d.ns)
	users := map[string]string{
		ingressmanager.AnnotationExternalDNSController:       "someone-else",
		ingressmanager.AnnotationExternalDNSControllerLegacy: "someone-else",
	}
	annotations, err := json.Marshal(users)
	if err != nil {
		t.Fatal(err)
	}
	// savedUsers reports whether a withdrawal saved the user's values.
	savedUsers := func(got map[string]string) bool {
		var saved map[string]string
		return json.Unmarshal([]byte(got[ingressmanager.AnnotationDNSControllerSaved]), &saved) == nil && maps.Equal(saved, users)
	}
	withdrawnFrom := func(what string) {
		t.Helper()
		if got := waitWithdrawn(t, framework.Get(ingresses.Get, "web"), what); !savedUsers(got) {
			t.Errorf("%s with %v, want the user's values %v saved in %s", what, got, users, ingressmanager.AnnotationDNSControllerSaved)
		}
	}

	d.service("control", map[string]string{ingressmanager.AnnotationHTTP: "true"})
	d.service("web", map[string]string{ingressmanager.AnnotationHTTP: "true", ingressmanager.AnnotationAnnotations: string(annotations)})
	waitRecord(t, d.zone, control, ingressIP, timeout, "the record of the Service without a controller annotation")
	waitServes(t, traefik.Get, host, "the Ingress")
	framework.WaitIngress(t, d.client, d.ns, "web", "the Ingress's address", func(ing *networkingv1.Ingress) error {
		if len(ing.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("no address yet")
		}
		return nil
	})
	d.waitSeen(time.Now(), "the Ingress with its address")

	// To the Gateway: the Ingress withdrawn, the user's value saved.
	framework.Annotate(t, d.client, d.ns, "web", map[string]*string{ingressmanager.AnnotationGateway: ptr.To("gw")})
	waitServes(t, traefik.GetGateway, host, "the route")
	withdrawnFrom("the Ingress withdrawn")

	// The route no longer serves: the Ingress is returned to external-dns
	// with the user's value, which external-dns finds there.
	framework.SetAppProtocol(t, d.client, d.ns, "web", ptr.To("example.com/custom"))
	framework.WaitEvent(t, d.client, timeout, d.ns, "Service", "web", corev1.EventTypeNormal, ingressmanager.ReasonReturnedToDNS, "Ingress web", "until")
	d.waitSeen(time.Now(), "the Ingress returned")
	d.unpublished(host, "once the Ingress was returned to external-dns")
	waitAnnotations(t, framework.Get(ingresses.Get, "web"), "the Ingress returned with the user's value", users)

	// Serving again: withdrawn again; then back to the Ingress mid-drain.
	framework.SetAppProtocol(t, d.client, d.ns, "web", nil)
	withdrawnFrom("the Ingress withdrawn again")
	framework.Annotate(t, d.client, d.ns, "web", map[string]*string{ingressmanager.AnnotationGateway: ptr.To("")})
	framework.WaitEvent(t, d.client, timeout, d.ns, "Service", "web", corev1.EventTypeNormal, ingressmanager.ReasonReturnedToDNS, "Ingress web", "again")
	d.waitSeen(time.Now(), "the Ingress back")
	d.unpublished(host, "once the Service was back on its Ingress")
	waitAnnotations(t, framework.Get(ingresses.Get, "web"), "the Ingress, back on it mid-drain, with the user's value", users)
	// The route, withdrawn with its own value saved, then drained.
	var routeWithdrawn []map[string]string
	framework.Eventually(t, drain+timeout, "the route withdrawn, then gone after the drain", func(ctx context.Context) (bool, error) {
		route, err := routes.Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if got := withdrawal(route); got[ingressmanager.AnnotationDNSWithdrawn] != "" {
			routeWithdrawn = append(routeWithdrawn, got)
		}
		return false, nil
	})
	if len(routeWithdrawn) == 0 {
		t.Errorf("the route was never seen withdrawn before it went")
	}
	for _, got := range routeWithdrawn {
		if !savedUsers(got) {
			t.Errorf("the route withdrawn with %v, want the user's values %v saved", got, users)
			break
		}
	}
	waitServes(t, traefik.Get, host, "the Ingress")
	d.waitSeen(time.Now(), "the route gone")
	waitAnnotations(t, framework.Get(ingresses.Get, "web"), "the Ingress, at the end", users)

	d.unpublished(host, "through the move and back")
	if got := d.zone.Targets(control, "A"); !slices.Equal(got, []string{ingressIP}) {
		t.Errorf("A %s -> %v at the end, want [%s]", control, got, ingressIP)
	}
	var states []string
	for _, c := range d.zone.Changes() {
		states = append(states, fmt.Sprintf("%s %s", c.At.Format(time.StampMilli), c.Summary))
	}
	t.Logf("every change external-dns made to the zone:\n  %s", strings.Join(states, "\n  "))
}

// unpublished checks that no state of the zone so far had a record of host
// (or of its TXT registry's name for it), and reports the first that had.
func (d *dnsEnv) unpublished(host, when string) {
	d.t.Helper()
	for _, c := range d.zone.Changes() {
		for _, r := range c.Records {
			if strings.HasSuffix(r.DNSName, host) {
				d.t.Errorf("%s: at %s external-dns had published %s %s %v, of a Service whose controller annotation is someone else's: %s",
					when, c.At.Format(time.StampMilli), r.RecordType, r.DNSName, r.Targets, c.Summary)
				return
			}
		}
	}
}
