// Integration tests of the network controller against a real
// kube-apiserver + etcd, with the in-memory backend and with the Neutron
// backend against an OpenStack API server in the test.
package network

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/fakeopenstack"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

var cfg *rest.Config

func TestMain(m *testing.M) { framework.Main(m, &cfg) }

const timeout = 30 * time.Second

type env struct {
	t       *testing.T
	ctx     context.Context
	kube    kubernetes.Interface
	client  versioned.Interface
	ns      string
	backend network.Backend
	m       *framework.Manager
	writes  *framework.RequestCounter
}

func setup(t *testing.T, backend network.Backend, mutate ...func(*app.Options)) *env {
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	e := &env{t: t, ctx: context.Background(), kube: kube, client: versioned.NewForConfigOrDie(framework.Config(cfg)),
		ns: framework.CreateNamespace(t, kube), backend: backend}
	e.start(mutate...)
	return e
}

func (e *env) start(mutate ...func(*app.Options)) {
	o := framework.Options()
	o.Controllers = []string{"network"}
	o.Namespace = e.ns
	o.NetworkBackend = e.backend
	for _, f := range mutate {
		f(o)
	}
	c, counter := framework.CountRequests(cfg)
	e.writes = counter
	e.m = framework.StartManager(e.t, c, o)
}

// seedNetwork is config/samples/network.yaml, the seed's example, unchanged.
func seedNetwork(t *testing.T) *samplecrdv1.Network {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "network.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var n samplecrdv1.Network
	if err := yaml.UnmarshalStrict(data, &n); err != nil {
		t.Fatalf("decoding the seed's Network: %v", err)
	}
	return &n
}

func newNetwork(name, cidr, gateway string) *samplecrdv1.Network {
	return &samplecrdv1.Network{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       samplecrdv1.NetworkSpec{CIDR: cidr, Gateway: gateway},
	}
}

func (e *env) create(n *samplecrdv1.Network) *samplecrdv1.Network {
	e.t.Helper()
	out, err := e.client.SamplecrdV1().Networks(e.ns).Create(e.ctx, n, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating network %s: %v", n.Name, err)
	}
	return out
}

// waitReady waits until the Network's Ready condition has status and reason
// (reason "" = any) for its current generation, and returns the Network.
func (e *env) waitReady(name string, status metav1.ConditionStatus, reason string) *samplecrdv1.Network {
	e.t.Helper()
	var got *samplecrdv1.Network
	framework.Eventually(e.t, timeout, fmt.Sprintf("network %s Ready=%s %s", name, status, reason), func(ctx context.Context) (bool, error) {
		n, err := e.client.SamplecrdV1().Networks(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
		if c == nil || c.Status != status || (reason != "" && c.Reason != reason) || c.ObservedGeneration != n.Generation {
			return false, fmt.Errorf("ready condition = %+v", c)
		}
		got = n
		return true, nil
	})
	return got
}

func (e *env) waitGone(name string) {
	e.t.Helper()
	framework.Eventually(e.t, timeout, "network "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := e.client.SamplecrdV1().Networks(e.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func (e *env) waitEvent(name, eventType, reason, msg string) {
	e.t.Helper()
	framework.Eventually(e.t, timeout, fmt.Sprintf("%s event %s on %s", eventType, reason, name), func(ctx context.Context) (bool, error) {
		list, err := e.kube.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Kind == "Network" && ev.InvolvedObject.Name == name && ev.Type == eventType &&
				ev.Reason == reason && strings.Contains(ev.Message, msg) {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestSeedNetworkLifecycle(t *testing.T) {
	mem := memory.New()
	e := setup(t, mem)
	created := e.create(seedNetwork(t))

	n := e.waitReady("example-network", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	got, err := mem.Get(e.ctx, created.UID)
	if err != nil {
		t.Fatalf("backend has no network for the seed's Network: %v", err)
	}
	if got.CIDR != "192.168.0.0/16" || got.Gateway != "192.168.0.1" {
		t.Errorf("backend network = %+v, want 192.168.0.0/16 via 192.168.0.1", got)
	}
	if n.Status.NetworkID != got.NetworkID || n.Status.SubnetID != got.SubnetID || n.Status.NetworkID == "" {
		t.Errorf("status IDs = %q/%q, backend = %q/%q", n.Status.NetworkID, n.Status.SubnetID, got.NetworkID, got.SubnetID)
	}
	if n.Status.ObservedGeneration != n.Generation {
		t.Errorf("observedGeneration = %d, want %d", n.Status.ObservedGeneration, n.Generation)
	}
	if !contains(n.Finalizers, network.Finalizer) {
		t.Errorf("finalizers = %v, want %s", n.Finalizers, network.Finalizer)
	}
	e.waitEvent("example-network", corev1.EventTypeNormal, network.ReasonCreated, "192.168.0.0/16")

	// Gateway update -> backend updated.
	n.Spec.Gateway = "192.168.0.254"
	if _, err := e.client.SamplecrdV1().Networks(e.ns).Update(e.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, "backend gateway updated", func(ctx context.Context) (bool, error) {
		got, err := mem.Get(ctx, created.UID)
		return err == nil && got.Gateway == "192.168.0.254", err
	})
	e.waitReady("example-network", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)

	// Delete -> backend empty, object gone.
	if err := e.client.SamplecrdV1().Networks(e.ns).Delete(e.ctx, "example-network", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("example-network")
	if _, err := mem.Get(e.ctx, created.UID); !network.IsNotFound(err) {
		t.Errorf("backend still has the network after delete: %v", err)
	}
	if objs := mem.Objects(); len(objs) != 0 {
		t.Errorf("backend not empty: %+v", objs)
	}
	if s := mem.Stats(); s.Creates != 1 {
		t.Errorf("backend creates = %d, want 1", s.Creates)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDeleteWhileStoppedAndRestartWritesNothing(t *testing.T) {
	mem := memory.New()
	e := setup(t, mem)
	a := e.create(newNetwork("a", "10.1.0.0/24", "10.1.0.1"))
	b := e.create(newNetwork("b", "10.2.0.0/24", "10.2.0.1"))
	e.waitReady("a", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	e.waitReady("b", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if err := e.m.Stop(); err != nil {
		t.Fatal(err)
	}

	// Restart with converged state: no backend write, no API write.
	before := mem.Stats()
	e.start()
	framework.Eventually(t, timeout, "both Networks re-checked", func(context.Context) (bool, error) {
		return e.m.CountLogs("Synced") >= 2, nil
	})
	if w := mem.Stats().Writes() - before.Writes(); w != 0 {
		t.Errorf("backend writes after a restart with converged state = %d, want 0", w)
	}
	if w := e.writes.Writes(""); w != 0 {
		t.Errorf("API writes after a restart with converged state = %d, want 0 (%s)", w, e.writes)
	}

	// Delete while the controller is stopped: the finalizer holds the
	// Network, and the restarted controller cleans up.
	if err := e.m.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.client.SamplecrdV1().Networks(e.ns).Delete(e.ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.SamplecrdV1().Networks(e.ns).Get(e.ctx, "a", metav1.GetOptions{}); err != nil {
		t.Fatalf("the finalizer did not hold the Network while the controller was down: %v", err)
	}
	e.start()
	e.waitGone("a")
	if _, err := mem.Get(e.ctx, a.UID); !network.IsNotFound(err) {
		t.Errorf("backend network of a deleted Network remains: %v", err)
	}
	if _, err := mem.Get(e.ctx, b.UID); err != nil {
		t.Errorf("backend network of b lost: %v", err)
	}
}

func TestBackendDownThenRecovers(t *testing.T) {
	mem := memory.New()
	down := errors.New("connection refused")
	mem.SetFault(func(context.Context, memory.Op, types.UID) error { return down })
	e := setup(t, mem)
	e.create(newNetwork("flaky", "10.3.0.0/24", "10.3.0.1"))
	n := e.waitReady("flaky", metav1.ConditionFalse, samplecrdv1.ReasonBackendUnavailable)
	if c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady); !strings.Contains(c.Message, "connection refused") {
		t.Errorf("Ready message %q does not say what is wrong", c.Message)
	}
	mem.SetFault(nil)
	e.waitReady("flaky", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
}

func TestPermanentErrorWarnsWithoutHotLoop(t *testing.T) {
	mem := memory.New() // rejects overlapping CIDRs, as Neutron with an address scope
	e := setup(t, mem)
	e.create(newNetwork("first", "10.4.0.0/16", "10.4.0.1"))
	e.waitReady("first", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)

	e.create(newNetwork("overlap", "10.4.1.0/24", "10.4.1.1"))
	n := e.waitReady("overlap", metav1.ConditionFalse, samplecrdv1.ReasonCIDROverlap)
	e.waitEvent("overlap", corev1.EventTypeWarning, samplecrdv1.ReasonCIDROverlap, "10.4")
	t.Logf("permanent error: %s", meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady).Message)
	// No hot loop: not retried as an error.
	if k := e.m.CountLogs("Error syncing"); k != 0 {
		t.Errorf("a permanent error was retried %d times with error backoff", k)
	}

	// Fixing the spec side: the other Network goes, this one converges.
	if err := e.client.SamplecrdV1().Networks(e.ns).Delete(e.ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("first")
	// The permanent retry is minutes away; an edit (here a label) requeues at once.
	framework.Eventually(t, timeout, "label the Network", func(ctx context.Context) (bool, error) {
		n, err := e.client.SamplecrdV1().Networks(e.ns).Get(ctx, "overlap", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n.Labels = map[string]string{"retry": "now"}
		_, err = e.client.SamplecrdV1().Networks(e.ns).Update(ctx, n, metav1.UpdateOptions{})
		return err == nil, err
	})
	e.waitReady("overlap", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
}

func TestOrphansCollectedForeignUntouched(t *testing.T) {
	mem := memory.New()
	foreignID := mem.AddForeign("ops-managed", "172.16.0.0/24", "172.16.0.1")
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	ns := framework.CreateNamespace(t, kube)
	// An orphan: ours (marked with a UID), but its Network is gone.
	if _, err := mem.Create(context.Background(), network.Network{UID: "00000000-0000-4000-8000-00000000beef",
		Namespace: ns, Name: "deleted-long-ago", CIDR: "10.9.0.0/24", Gateway: "10.9.0.1"}); err != nil {
		t.Fatal(err)
	}
	// Another manager's scope: left alone by a manager scoped to ns.
	if _, err := mem.Create(context.Background(), network.Network{UID: "00000000-0000-4000-8000-00000000cafe",
		Namespace: "other-namespace", Name: "theirs", CIDR: "10.8.0.0/24", Gateway: "10.8.0.1"}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), kube: kube, client: versioned.NewForConfigOrDie(framework.Config(cfg)), ns: ns, backend: mem}
	e.start()
	e.create(newNetwork("live", "10.5.0.0/24", "10.5.0.1"))
	e.waitReady("live", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	framework.Eventually(t, timeout, "the orphan collected", func(ctx context.Context) (bool, error) {
		_, err := mem.Get(ctx, "00000000-0000-4000-8000-00000000beef")
		return network.IsNotFound(err), nil
	})
	if _, err := mem.Get(e.ctx, "00000000-0000-4000-8000-00000000cafe"); err != nil {
		t.Errorf("a backend network of another namespace was collected: %v", err)
	}
	found := false
	for _, o := range mem.Objects() {
		if o.NetworkID == foreignID {
			found = true
		}
	}
	if !found {
		t.Error("the foreign backend network was touched")
	}
}

func TestInvalidSpecsRejectedByTheAPIServer(t *testing.T) {
	client := versioned.NewForConfigOrDie(framework.Config(cfg))
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	ns := framework.CreateNamespace(t, kube)
	ctx := context.Background()
	tests := []struct {
		name, cidr, gateway, want string
	}{
		{"not a cidr", "192.168.0.0", "192.168.0.1", "cidr"},
		{"host bits set", "192.168.0.1/16", "192.168.0.1", "192.168.0.0/16"},
		{"gateway outside", "192.168.0.0/24", "10.0.0.1", "inside"},
		{"family mismatch", "192.168.0.0/24", "fd00::1", "family"},
		{"empty cidr", "", "192.168.0.1", "cidr"},
		{"empty gateway", "192.168.0.0/24", "", "gateway"},
		{"gateway not an ip", "192.168.0.0/24", "gw", "gateway"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.SamplecrdV1().Networks(ns).Create(ctx, newNetwork(fmt.Sprintf("bad-%d", i), tc.cidr, tc.gateway), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create error = %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			t.Logf("rejected: %v", err)
		})
	}
	// IPv6 works.
	if _, err := client.SamplecrdV1().Networks(ns).Create(ctx, newNetwork("v6", "fd00:1::/64", "fd00:1::1"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a valid IPv6 Network was rejected: %v", err)
	}
	// cidr is immutable.
	n, err := client.SamplecrdV1().Networks(ns).Create(ctx, newNetwork("fixed", "10.6.0.0/24", "10.6.0.1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.CIDR = "10.7.0.0/24"
	n.Spec.Gateway = "10.7.0.1"
	_, err = client.SamplecrdV1().Networks(ns).Update(ctx, n, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("cidr change error = %v, want Invalid saying it is immutable", err)
	}
	t.Logf("cidr change rejected: %v", err)
}

// TestNeutronBackend runs the manager with --network-backend=neutron,
// configured by the standard OS_* variables, against an OpenStack API
// (Keystone v3 + Neutron v2.0) served by the test.
func TestNeutronBackend(t *testing.T) {
	cloud := fakeopenstack.NewForTest(t)
	for k, v := range cloud.Env() {
		t.Setenv(k, v)
	}
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	e := &env{t: t, ctx: context.Background(), kube: kube, client: versioned.NewForConfigOrDie(framework.Config(cfg)),
		ns: framework.CreateNamespace(t, kube)}
	e.start(func(o *app.Options) {
		o.NetworkBackend = nil
		o.NetworkBackendName = "neutron"
	})
	created := e.create(seedNetwork(t))
	n := e.waitReady("example-network", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)

	nets, subnets := cloud.Networks(), cloud.Subnets()
	if len(nets) != 1 || len(subnets) != 1 {
		t.Fatalf("neutron holds %d networks and %d subnets, want 1 and 1", len(nets), len(subnets))
	}
	if nets[0].ID != n.Status.NetworkID || subnets[0].ID != n.Status.SubnetID {
		t.Errorf("status IDs %s/%s, neutron %s/%s", n.Status.NetworkID, n.Status.SubnetID, nets[0].ID, subnets[0].ID)
	}
	if subnets[0].CIDR != "192.168.0.0/16" || subnets[0].GatewayIP == nil || *subnets[0].GatewayIP != "192.168.0.1" || subnets[0].IPVersion != 4 {
		t.Errorf("subnet = %+v", subnets[0])
	}
	if !strings.Contains(strings.Join(nets[0].Tags, ","), string(created.UID)) {
		t.Errorf("network tags %v do not carry the Network's UID %s", nets[0].Tags, created.UID)
	}

	// Neutron fails for a while during a gateway update: Ready=False, then converges.
	cloud.FailNext(1000, 503)
	// The controller may still be writing the status it just reported: edit
	// the latest version.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := e.client.SamplecrdV1().Networks(e.ns).Get(e.ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Gateway = "192.168.1.1"
		_, err = e.client.SamplecrdV1().Networks(e.ns).Update(e.ctx, n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	e.waitReady("example-network", metav1.ConditionFalse, samplecrdv1.ReasonBackendUnavailable)
	cloud.ClearFaults()
	e.waitReady("example-network", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if gw := cloud.Subnets()[0].GatewayIP; gw == nil || *gw != "192.168.1.1" {
		t.Errorf("gateway = %v, want 192.168.1.1", gw)
	}

	// Delete: Neutron emptied, Network gone.
	if err := e.client.SamplecrdV1().Networks(e.ns).Delete(e.ctx, "example-network", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("example-network")
	if len(cloud.Networks()) != 0 || len(cloud.Subnets()) != 0 {
		t.Errorf("neutron not empty after delete: %+v %+v", cloud.Networks(), cloud.Subnets())
	}
}

// TestBackendDriftRepaired: someone deletes the backend network behind the
// controller's back; the periodic backend scan notices and recreates it.
func TestBackendDriftRepaired(t *testing.T) {
	mem := memory.New()
	e := setup(t, mem, func(o *app.Options) { o.NetworkGCInterval = 200 * time.Millisecond })
	n := e.create(newNetwork("drifty", "10.10.0.0/24", "10.10.0.1"))
	e.waitReady("drifty", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	got, err := mem.Get(e.ctx, n.UID)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Delete(e.ctx, *got); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, "the backend network recreated", func(ctx context.Context) (bool, error) {
		again, err := mem.Get(ctx, n.UID)
		return err == nil && again.SubnetID != "" && again.NetworkID != got.NetworkID, nil
	})
	framework.Eventually(t, timeout, "status pointing at the new backend network", func(ctx context.Context) (bool, error) {
		cur, err := e.client.SamplecrdV1().Networks(e.ns).Get(ctx, "drifty", metav1.GetOptions{})
		return err == nil && cur.Status.NetworkID != got.NetworkID, err
	})
}

// TestStatusWriteFailureNeverDuplicates: the backend create succeeds but the
// status write that records it fails (as if the manager crashed in
// between); the retry finds the backend network by UID instead of creating
// a second one.
func TestStatusWriteFailureNeverDuplicates(t *testing.T) {
	mem := memory.New()
	var failed atomic.Int32
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	e := &env{t: t, ctx: context.Background(), kube: kube, client: versioned.NewForConfigOrDie(framework.Config(cfg)),
		ns: framework.CreateNamespace(t, kube), backend: mem}
	o := framework.Options()
	o.Controllers = []string{"network"}
	o.Namespace = e.ns
	o.NetworkBackend = mem
	c := rest.CopyConfig(cfg)
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/status") && failed.Add(1) <= 3 {
				return nil, errors.New("injected: connection reset before the status write")
			}
			return rt.RoundTrip(req)
		})
	}
	e.m = framework.StartManager(t, c, o)
	n := e.create(newNetwork("once", "10.11.0.0/24", "10.11.0.1"))
	e.waitReady("once", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if failed.Load() < 3 {
		t.Fatalf("only %d status writes were attempted; the fault was not exercised", failed.Load())
	}
	if s := mem.Stats(); s.Creates != 1 {
		t.Errorf("backend creates = %d, want 1", s.Creates)
	}
	if objs := mem.Objects(); len(objs) != 1 || objs[0].UID != n.UID {
		t.Errorf("backend holds %+v, want exactly the Network's one", objs)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
