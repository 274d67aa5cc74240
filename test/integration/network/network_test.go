// Integration tests of the network controller against a real
// kube-apiserver + etcd, with the in-memory backend, and with the Neutron
// backend against the real Keystone and Neutron that `make test` starts.
package network

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// timeout bounds every wait on real Neutron.
const timeout = framework.NeutronTimeout

// env is a test's namespace and its manager running the network controller
// on backend (the memory backend unless startNeutron says otherwise).
type env struct {
	*framework.Env
	nets    framework.Networks
	backend network.Backend
}

// newEnv gives the test a namespace of its own and clients.
func newEnv(t *testing.T) *env {
	kube, ns := framework.Setup(t)
	e := &env{Env: &framework.Env{T: t, Ctx: context.Background(), Client: kube, NS: ns, Controllers: []string{"network"}}, nets: framework.NewNetworks(t)}
	e.Opts = []func(*app.Options){func(o *app.Options) { o.NetworkBackend = e.backend }}
	return e
}

func setup(t *testing.T, backend network.Backend, mutate ...func(*app.Options)) *env {
	e := newEnv(t)
	e.backend = backend
	e.Start(mutate...)
	return e
}

func newNetwork(name, cidr, gateway string) *samplecrdv1.Network {
	return framework.NewNetwork("", name, cidr, gateway)
}

func (e *env) create(n *samplecrdv1.Network) *samplecrdv1.Network {
	e.T.Helper()
	n.Namespace = e.NS
	return e.nets.Create(n)
}

// waitReady waits until the Network's Ready condition has status and reason
// (reason "" = any) for its current generation, and returns the Network.
func (e *env) waitReady(name string, status metav1.ConditionStatus, reason string) *samplecrdv1.Network {
	e.T.Helper()
	n, _ := e.nets.WaitReady(e.NS, name, status, reason)
	return n
}

func (e *env) waitGone(name string) {
	e.T.Helper()
	e.nets.WaitGone(e.NS, name)
}

// deleteWhileStopped stops the manager, deletes Network name, checks that
// the finalizer holds it while nothing runs, restarts the manager with
// start and waits until the Network is gone.
func (e *env) deleteWhileStopped(name string, start func()) {
	e.T.Helper()
	if err := e.M.Stop(); err != nil {
		e.T.Fatal(err)
	}
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, name, metav1.DeleteOptions{}); err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(e.Ctx, name, metav1.GetOptions{}); err != nil {
		e.T.Fatalf("the finalizer did not hold Network %s while the manager was down: %v", name, err)
	}
	start()
	e.waitGone(name)
}

func (e *env) waitEvent(name, eventType, reason, msg string) {
	e.T.Helper()
	framework.WaitEvent(e.T, e.Client, timeout, e.NS, "Network", name, eventType, reason, msg)
}

func TestSeedNetworkLifecycle(t *testing.T) {
	mem := memory.New()
	e := setup(t, mem)
	created := e.create(framework.SeedNetwork(t))

	n := e.waitReady("example-network", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	got, err := mem.Get(e.Ctx, created.UID)
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
	if !slices.Contains(n.Finalizers, network.Finalizer) {
		t.Errorf("finalizers = %v, want %s", n.Finalizers, network.Finalizer)
	}
	if s := n.Spec; s.ManagementPolicy != samplecrdv1.ManagementPolicyManaged || s.Import != nil || s.OnDelete != "" {
		t.Errorf("the seed's spec became %+v, want managementPolicy defaulted to Managed and nothing else added", s)
	}
	e.waitEvent("example-network", corev1.EventTypeNormal, network.ReasonCreated, "192.168.0.0/16")

	// Gateway update -> backend updated.
	e.edit("example-network", func(n *samplecrdv1.Network) { n.Spec.Gateway = "192.168.0.254" })
	framework.Eventually(t, timeout, "backend gateway updated", func(ctx context.Context) (bool, error) {
		got, err := mem.Get(ctx, created.UID)
		return err == nil && got.Gateway == "192.168.0.254", err
	})
	e.waitReady("example-network", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)

	// The API server enforces the CRD's rules (every rule is a case of
	// pkg/apis/samplecrd/v1 TestCRDValidation*, run with the API server's
	// code on the same file): a bad spec and a cidr change are refused.
	nets := e.nets.Client.SamplecrdV1().Networks(e.NS)
	_, err = nets.Create(e.Ctx, newNetwork("bad", "192.168.0.0/16", "10.0.0.1"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "outside cidr") {
		t.Errorf("a gateway outside the cidr: create error = %v, want Invalid", err)
	}
	cur, err := nets.Get(e.Ctx, "example-network", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.CIDR, cur.Spec.Gateway = "10.7.0.0/24", "10.7.0.1"
	_, err = nets.Update(e.Ctx, cur, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "cidr is immutable") {
		t.Errorf("cidr change: update error = %v, want Invalid saying it is immutable", err)
	}

	// Delete -> backend empty, object gone.
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, "example-network", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("example-network")
	if _, err := mem.Get(e.Ctx, created.UID); !network.IsNotFound(err) {
		t.Errorf("backend still has the network after delete: %v", err)
	}
	if objs := mem.Objects(); len(objs) != 0 {
		t.Errorf("backend not empty: %+v", objs)
	}
	if s := mem.Stats(); s.Creates != 1 {
		t.Errorf("backend creates = %d, want 1", s.Creates)
	}
}

func TestDeleteWhileStoppedAndRestartWritesNothing(t *testing.T) {
	mem := memory.New()
	e := setup(t, mem)
	a := e.create(newNetwork("a", "10.1.0.0/24", "10.1.0.1"))
	b := e.create(newNetwork("b", "10.2.0.0/24", "10.2.0.1"))
	e.waitReady("a", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	e.waitReady("b", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}

	// Restart with converged state: no backend write, no API write.
	before := mem.Stats()
	e.Start()
	framework.Eventually(t, timeout, "both Networks re-checked", func(context.Context) (bool, error) {
		return e.M.CountLogs("Synced") >= 2, nil
	})
	if w := mem.Stats().Writes() - before.Writes(); w != 0 {
		t.Errorf("backend writes after a restart with converged state = %d, want 0", w)
	}
	if w := e.Writes.Writes(""); w != 0 {
		t.Errorf("API writes after a restart with converged state = %d, want 0 (%s)", w, e.Writes)
	}

	// Delete while the controller is stopped: the finalizer holds the
	// Network, and the restarted controller cleans up.
	e.deleteWhileStopped("a", func() { e.Start() })
	if _, err := mem.Get(e.Ctx, a.UID); !network.IsNotFound(err) {
		t.Errorf("backend network of a deleted Network remains: %v", err)
	}
	if _, err := mem.Get(e.Ctx, b.UID); err != nil {
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
	if k := e.M.CountLogs("Error syncing"); k != 0 {
		t.Errorf("a permanent error was retried %d times with error backoff", k)
	}

	// Fixing the spec side: the other Network goes, this one converges.
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("first")
	// The permanent retry is minutes away; an edit (here a label) requeues at once.
	framework.Eventually(t, timeout, "label the Network", func(ctx context.Context) (bool, error) {
		n, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, "overlap", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n.Labels = map[string]string{"retry": "now"}
		_, err = e.nets.Client.SamplecrdV1().Networks(e.NS).Update(ctx, n, metav1.UpdateOptions{})
		return err == nil, err
	})
	e.waitReady("overlap", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
}

func TestOrphansCollectedForeignUntouched(t *testing.T) {
	mem := memory.New()
	foreignID := mem.AddForeign("ops-managed", "172.16.0.0/24", "172.16.0.1")
	e := newEnv(t)
	e.backend = mem
	ns := e.NS
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
	e.Start()
	e.create(newNetwork("live", "10.5.0.0/24", "10.5.0.1"))
	e.waitReady("live", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	framework.Eventually(t, timeout, "the orphan collected", func(ctx context.Context) (bool, error) {
		_, err := mem.Get(ctx, "00000000-0000-4000-8000-00000000beef")
		return network.IsNotFound(err), nil
	})
	if _, err := mem.Get(e.Ctx, "00000000-0000-4000-8000-00000000cafe"); err != nil {
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

// edit changes the Network name as change says, reading it again when the
// controller wrote it in between (409 Conflict).
func (e *env) edit(name string, change func(*samplecrdv1.Network)) {
	e.T.Helper()
	e.nets.Edit(e.NS, name, change)
}

// neutronEnv is an env for a manager on the real OpenStack: the
// controller's openrc in the environment (as `source openrc` gives it), and
// a managed-by value of the test's own, cleaned up at its end.
func neutronEnv(t *testing.T) (*env, *neutrontest.Cloud, string) {
	cloud := neutrontest.Get(t)
	cloud.SetEnv(t)
	managedBy := neutrontest.UniqueManagedBy()
	cloud.CleanupManagedBy(t, managedBy)
	return newEnv(t), cloud, managedBy
}

// startNeutron starts the manager with --network-backend=neutron (gc: the
// --network-gc-interval; 0 for the default).
func (e *env) startNeutron(managedBy string, gc time.Duration) {
	e.Start(func(o *app.Options) {
		o.NetworkBackend = nil
		o.NetworkBackendName = "neutron"
		o.NeutronManagedBy = managedBy
		if gc > 0 {
			o.NetworkGCInterval = gc
		}
	})
}

// TestNeutronBackend runs the manager with --network-backend=neutron,
// configured from the openrc of the real OpenStack `make test` starts (the
// controller's user has the member role in its project only): the sample
// Network end to end, a gateway change in place, a delete while the
// manager is stopped, an orphan collected, and a foreign network of the
// same name left alone. (A restart writes nothing to Neutron:
// TestNeutronRestartWithImportsRequests, from Neutron's access log.)
func TestNeutronBackend(t *testing.T) {
	e, cloud, managedBy := neutronEnv(t)
	member := cloud.Member(t)
	ours := neutron.ManagedByTagPrefix + managedBy

	// Before the manager starts: an orphan of ours (its Network is long
	// gone), and an operator's network with the very name ours will get.
	orphanUID := types.UID(uuid.NewUUID())
	seeded := cloud.Backend(t, neutron.Options{ManagedBy: managedBy})
	if _, err := seeded.Create(e.Ctx, network.Network{UID: orphanUID, Namespace: e.NS, Name: "deleted-long-ago",
		CIDR: "10.9.0.0/24", Gateway: "10.9.0.1"}); err != nil {
		t.Fatal(err)
	}
	foreign := cloud.AddNetwork(t, "", network.DisplayName(e.NS, "example-network"), "172.18.0.0/24", "172.18.0.1")
	// In another project, a network carrying our very tags, as if ours and
	// orphaned: the member-only user cannot see it, so it is not collected.
	elsewhere := cloud.AddNetwork(t, cloud.AdminProjectID, "k8s-elsewhere", "172.19.0.0/24", "172.19.0.1",
		ours, neutron.UIDTagPrefix+string(uuid.NewUUID()))

	start := func() { e.startNeutron(managedBy, time.Second) }
	start()
	created := e.create(framework.SeedNetwork(t))
	n := e.waitReady("example-network", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	e.waitEvent("example-network", corev1.EventTypeNormal, network.ReasonCreated, "192.168.0.0/16")

	nets := cloud.Networks(t, member, neutron.UIDTagPrefix+string(created.UID)+","+ours)
	if len(nets) != 1 || nets[0].ID != n.Status.NetworkID || nets[0].ProjectID != cloud.ProjectID {
		t.Fatalf("Neutron networks of the seed's Network = %+v, want one, %s, in project %s", nets, n.Status.NetworkID, cloud.ProjectID)
	}
	subs := cloud.Subnets(t, member, nets[0].ID)
	if len(subs) != 1 || subs[0].ID != n.Status.SubnetID || subs[0].CIDR != "192.168.0.0/16" || subs[0].GatewayIP != "192.168.0.1" || subs[0].IPVersion != 4 {
		t.Fatalf("subnets = %+v, want 192.168.0.0/16 via 192.168.0.1 (%s)", subs, n.Status.SubnetID)
	}

	framework.Eventually(t, timeout, "the orphan collected", func(ctx context.Context) (bool, error) {
		return len(cloud.Networks(t, member, neutron.UIDTagPrefix+string(orphanUID))) == 0, nil
	})

	// A routine edit: the gateway moves inside the same CIDR, in place.
	e.edit("example-network", func(n *samplecrdv1.Network) { n.Spec.Gateway = "192.168.0.254" })
	n = e.waitReady("example-network", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	e.waitEvent("example-network", corev1.EventTypeNormal, network.ReasonUpdated, "192.168.0.254")
	subs = cloud.Subnets(t, member, nets[0].ID)
	if len(subs) != 1 || subs[0].ID != n.Status.SubnetID || subs[0].GatewayIP != "192.168.0.254" {
		t.Fatalf("subnets after the gateway change = %+v, want subnet %s with gateway 192.168.0.254", subs, n.Status.SubnetID)
	}

	// Delete while the manager is stopped: the finalizer holds the Network,
	// the restarted manager deletes its network and subnet.
	e.deleteWhileStopped("example-network", start)
	if left := cloud.Networks(t, member, ours); len(left) != 0 {
		t.Errorf("Neutron networks of ours after the delete: %+v", left)
	}

	if got, err := networks.Get(e.Ctx, cloud.Admin(t), elsewhere.ID).Extract(); err != nil || got.RevisionNumber != elsewhere.RevisionNumber {
		t.Errorf("the other project's network tagged like ours = %+v, %v; want it untouched", got, err)
	}

	// The operator's network of the same name: untouched throughout.
	got, err := networks.Get(e.Ctx, member, foreign.ID).Extract()
	if err != nil || got.RevisionNumber != foreign.RevisionNumber || len(got.Tags) != 0 {
		t.Errorf("the operator's network = %+v, %v; want it unchanged (revision %d, no tags)", got, err, foreign.RevisionNumber)
	}
	if s := cloud.Subnets(t, member, foreign.ID); len(s) != 1 || s[0].GatewayIP != "172.18.0.1" || s[0].RevisionNumber != 0 {
		t.Errorf("the operator's subnet = %+v, want it unchanged", s)
	}
}

// TestNeutronRefusalIsClear: a spec Neutron refuses (the network address
// as an IPv4 gateway passes our validation, not Neutron's) gives
// Ready=False BackendRejected with Neutron's message, a Warning Event, a log
// line at the default verbosity, and no hot loop; fixing the spec converges.
func TestNeutronRefusalIsClear(t *testing.T) {
	e, cloud, managedBy := neutronEnv(t)
	e.startNeutron(managedBy, 0)
	bad := e.create(newNetwork("refused", "10.20.0.0/24", "10.20.0.0"))
	n := e.waitReady("refused", metav1.ConditionFalse, samplecrdv1.ReasonBackendRejected)
	c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
	if !strings.Contains(c.Message, "400 Bad Request") || !strings.Contains(c.Message, "InvalidInput") {
		t.Errorf("Ready message %q does not carry Neutron's answer", c.Message)
	}
	e.waitEvent("refused", corev1.EventTypeWarning, samplecrdv1.ReasonBackendRejected, "InvalidInput")
	if k := e.M.CountLogs("Error syncing"); k != 0 {
		t.Errorf("a permanent error was retried %d times with error backoff", k)
	}
	framework.Eventually(t, timeout, "the refusal in the log at the default verbosity", func(context.Context) (bool, error) {
		for _, l := range e.M.LogLines() {
			if l.Verbosity == 0 && strings.Contains(fmt.Sprint(l.WithKVList, l.ParameterKVList), "InvalidInput") {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("refused: %s", c.Message)

	// The network Neutron did create before refusing the subnet is reused
	// once the spec is fixed.
	e.edit("refused", func(n *samplecrdv1.Network) { n.Spec.Gateway = "10.20.0.1" })
	e.waitReady("refused", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if nets := cloud.Networks(t, cloud.Member(t), neutron.UIDTagPrefix+string(bad.UID)); len(nets) != 1 {
		t.Errorf("%d Neutron networks for the Network, want 1", len(nets))
	}
}

// TestBackendDriftRepaired: someone deletes the backend network behind the
// controller's back; the periodic backend scan notices and recreates it.
func TestBackendDriftRepaired(t *testing.T) {
	mem := memory.New()
	e := setup(t, mem, func(o *app.Options) { o.NetworkGCInterval = 200 * time.Millisecond })
	n := e.create(newNetwork("drifty", "10.10.0.0/24", "10.10.0.1"))
	e.waitReady("drifty", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	got, err := mem.Get(e.Ctx, n.UID)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Delete(e.Ctx, *got); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, "the backend network recreated", func(ctx context.Context) (bool, error) {
		again, err := mem.Get(ctx, n.UID)
		return err == nil && again.SubnetID != "" && again.NetworkID != got.NetworkID, nil
	})
	framework.Eventually(t, timeout, "status pointing at the new backend network", func(ctx context.Context) (bool, error) {
		cur, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, "drifty", metav1.GetOptions{})
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
	e := newEnv(t)
	e.backend = mem
	o := framework.ControllerOptions(e.NS, "network")
	o.NetworkBackend = mem
	c := framework.Intercept(framework.AdminConfig(), func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/status") && failed.Add(1) <= 3 {
			return nil, errors.New("injected: connection reset before the status write")
		}
		return next.RoundTrip(req)
	})
	e.M = framework.StartManager(t, c, o)
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

// TestWrongCredentialsOneClearError: a wrong OpenStack password stops the
// manager at start with one error naming Keystone and the user, instead of
// every Network failing on its own.
func TestWrongCredentialsOneClearError(t *testing.T) {
	cloud := neutrontest.Get(t)
	cloud.SetEnv(t)
	t.Setenv("OS_PASSWORD", "wrong")
	o := framework.Options()
	o.Controllers = []string{"network"}
	o.NetworkBackendName = "neutron"
	config, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.NewManager(context.Background(), config, framework.Config(framework.AdminConfig()))
	if err == nil || !strings.Contains(err.Error(), "authenticating to Keystone v3 at "+cloud.KeystoneURL) ||
		!strings.Contains(err.Error(), `user "k8s-controller"`) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("NewManager with a wrong password = %v, want one error naming Keystone, the user and the 401", err)
	}
	t.Logf("wrong password: %v", err)
}
