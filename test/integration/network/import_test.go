package network

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// The request budgets of an import, counted in Neutron's own access log.
const (
	// maxRequestsPerObserve: the network's GET and its subnets' list.
	maxRequestsPerObserve = 2
	// maxRequestsPerAdopt: those two, the network's claim (its UID tag
	// added alone, the tags read back: race-free against another
	// claim), and a tag write each for the network and the subnet.
	maxRequestsPerAdopt = maxRequestsPerObserve + 2 + 2
)

func importByID(name, id string, policy samplecrdv1.ManagementPolicy, cidr, gateway string) *samplecrdv1.Network {
	n := newNetwork(name, cidr, gateway)
	n.Spec.ManagementPolicy = policy
	n.Spec.Import = &samplecrdv1.NetworkImport{NetworkID: id}
	return n
}

// notLists drops the scans' Lists from reqs.
func notLists(reqs []neutrontest.Request, managedBy string) []neutrontest.Request {
	return slices.DeleteFunc(slices.Clone(reqs), func(r neutrontest.Request) bool { return r.IsList(managedBy) })
}

// TestNeutronImportByID imports existing Neutron networks by ID on the real
// OpenStack: Unmanaged, it only ever reads (Neutron's access log shows no
// write to the network across its whole life: bind, a network deleted
// behind its back, its deletion); Managed, it adopts (tags) and keeps the
// gateway; a network another controller manages is refused, untouched.
func TestNeutronImportByID(t *testing.T) {
	e, cloud, managedBy, user := neutronUserEnv(t)
	admin := cloud.Admin(t)
	observed := cloud.AddNetwork(t, "", "imported-unmanaged", "10.43.0.0/24", "10.43.0.1")
	adopted := cloud.AddNetwork(t, "", "imported-managed", "10.43.1.0/24", "10.43.1.1")
	others := cloud.AddNetwork(t, "", "imported-others", "10.43.2.0/24", "10.43.2.1", neutron.ManagedByTagPrefix+"someone-else")
	log, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	whole, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	e.startNeutron(managedBy, 0)

	// Unmanaged: bound with reads only; the spec's expectations hold.
	e.create(importByID("observed", observed.ID, samplecrdv1.ManagementPolicyUnmanaged, "10.43.0.0/24", ""))
	n := e.waitReady("observed", metav1.ConditionTrue, samplecrdv1.ReasonObserved)
	if n.Status.NetworkID != observed.ID || n.Status.SubnetID == "" {
		t.Errorf("status = %+v, want network %s and its subnet", n.Status, observed.ID)
	}
	bind := notLists(requests(t, log, user), managedBy)
	t.Logf("Neutron requests to bind an Unmanaged Network: %d: %v", len(bind), bind)
	if len(bind) > maxRequestsPerObserve {
		t.Errorf("%d requests to bind an Unmanaged Network, want at most %d: %v", len(bind), maxRequestsPerObserve, bind)
	}

	// Managed: adopted (tagged), then the gateway the spec asks for.
	if err := log.Reset(e.Ctx); err != nil {
		t.Fatal(err)
	}
	e.create(importByID("adopted", adopted.ID, "", "", ""))
	n = e.waitReady("adopted", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	bind = notLists(requests(t, log, user), managedBy)
	t.Logf("Neutron requests to bind a Managed Network: %d: %v", len(bind), bind)
	if len(bind) > maxRequestsPerAdopt {
		t.Errorf("%d requests to bind a Managed Network, want at most %d: %v", len(bind), maxRequestsPerAdopt, bind)
	}
	e.waitEvent("adopted", corev1.EventTypeNormal, network.ReasonAdopted, adopted.ID)
	got, err := networks.Get(e.Ctx, admin, adopted.ID).Extract()
	if err != nil || !slices.Contains(got.Tags, neutron.ManagedByTagPrefix+managedBy) || !slices.Contains(got.Tags, neutron.UIDTagPrefix+string(n.UID)) {
		t.Errorf("the adopted network = %+v, %v; want our tags on it", got, err)
	}
	e.edit("adopted", func(n *samplecrdv1.Network) { n.Spec.Gateway = "10.43.1.254" })
	framework.Eventually(t, timeout, "the adopted subnet's gateway set", func(ctx context.Context) (bool, error) {
		s, err := subnets.Get(ctx, admin, n.Status.SubnetID).Extract()
		return err == nil && s.GatewayIP == "10.43.1.254", err
	})

	// Another controller's network: refused, untouched.
	e.create(importByID("thief", others.ID, samplecrdv1.ManagementPolicyManaged, "", ""))
	n = e.waitReady("thief", metav1.ConditionFalse, samplecrdv1.ReasonBackendRejected)
	if c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady); !strings.Contains(c.Message, "another controller manages it") {
		t.Errorf("Ready = %+v, want it to say another controller manages the network", c)
	}
	if got, err := networks.Get(e.Ctx, admin, others.ID).Extract(); err != nil || len(got.Tags) != 1 {
		t.Errorf("another controller's network = %+v, %v; want it untouched", got, err)
	}

	// The observed network deleted behind the Network's back: reported,
	// never recreated.
	if err := networks.Delete(e.Ctx, admin, observed.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.edit("observed", func(n *samplecrdv1.Network) { n.Labels = map[string]string{"look": "again"} })
	e.waitReady("observed", metav1.ConditionFalse, samplecrdv1.ReasonImportNotFound)
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, "observed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("observed")
	e.waitEvent("observed", corev1.EventTypeNormal, network.ReasonReleased, "left as it is")
	if nets := cloud.Networks(t, admin, neutron.ManagedByTagPrefix+managedBy); len(nets) != 1 || nets[0].ID != adopted.ID {
		t.Errorf("networks of ours = %v, want only the adopted %s (nothing recreated)", nets, adopted.ID)
	}

	// Across the Unmanaged Network's whole life: no write for it, and the
	// writes there were are the adoption's and the gateway's.
	all := requests(t, whole, user)
	for _, r := range all {
		if r.Method == "GET" {
			continue
		}
		if strings.Contains(r.Path, observed.ID) || strings.Contains(r.Path, others.ID) || r.Method != "PUT" {
			t.Errorf("write %s: an Unmanaged or refused import must never write", r)
		}
	}
	t.Logf("Neutron requests of the whole test: %d", len(all))
}

// TestNeutronDetachSurvivesRestartAndGC: deleting a Network with onDelete:
// Detach leaves its Neutron network and subnet, without our tags; neither
// the running controller's scans nor a restarted one's delete them.
func TestNeutronDetachSurvivesRestartAndGC(t *testing.T) {
	e, cloud, managedBy, user := neutronUserEnv(t)
	admin := cloud.Admin(t)
	e.startNeutron(managedBy, time.Second)
	n := newNetwork("left", "10.44.0.0/24", "10.44.0.1")
	n.Spec.OnDelete = samplecrdv1.OnDeleteDetach
	e.create(n)
	ready := e.waitReady("left", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	t.Cleanup(func() { _ = networks.Delete(context.Background(), admin, ready.Status.NetworkID).ExtractErr() })
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, "left", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("left")
	e.waitEvent("left", corev1.EventTypeNormal, network.ReasonDetached, "left as they are")
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	log, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	e.startNeutron(managedBy, time.Second)
	framework.Eventually(t, timeout, "two scans after the restart", func(ctx context.Context) (bool, error) {
		reqs, err := log.Requests(ctx, user.ID)
		if err != nil {
			return false, err
		}
		lists := 0
		for _, r := range reqs {
			if r.IsList(managedBy) {
				lists++
			}
		}
		return lists >= 2*scanRequests, nil
	})
	got, err := networks.Get(e.Ctx, admin, ready.Status.NetworkID).Extract()
	if err != nil {
		t.Fatalf("the detached network is gone: %v", err)
	}
	for _, tag := range got.Tags {
		if strings.HasPrefix(tag, neutron.UIDTagPrefix) || strings.HasPrefix(tag, neutron.ManagedByTagPrefix) {
			t.Errorf("the detached network still carries %s", tag)
		}
	}
	subs := cloud.Subnets(t, admin, got.ID)
	if len(subs) != 1 || subs[0].ID != ready.Status.SubnetID || subs[0].GatewayIP != "10.44.0.1" {
		t.Errorf("the detached network's subnets = %+v, want %s as it was", subs, ready.Status.SubnetID)
	}
	for _, r := range requests(t, log, user) {
		if r.Method != "GET" {
			t.Errorf("a restart after a Detach wrote %s", r)
		}
	}

	// Another namespace imports the detached network (Managed), through
	// a manager of its own sharing the managed-by value; the first
	// namespace's manager, whose Network's name the network's
	// description still bears, never takes it for one of its own: which
	// Network a network belongs to comes from its tags.
	ns2 := framework.CreateNamespace(t, e.Client)
	e2 := &env{Env: &framework.Env{T: t, Ctx: e.Ctx, Client: e.Client, NS: ns2, Controllers: []string{"network"}}, nets: e.nets}
	e2.startNeutron(managedBy, 0)
	e2.create(importByID("again", got.ID, samplecrdv1.ManagementPolicyManaged, "", ""))
	again := e2.waitReady("again", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if err := log.Reset(e.Ctx); err != nil {
		t.Fatal(err)
	}
	e.waitScans(log, managedBy, 2) // the first manager's: the second's interval is the default
	if got, err := networks.Get(e.Ctx, admin, again.Status.NetworkID).Extract(); err != nil {
		t.Fatalf("the network %s imported again in %s is gone: %v", again.Status.NetworkID, ns2, err)
	} else if !slices.Contains(got.Tags, neutron.UIDTagPrefix+string(again.UID)) {
		t.Errorf("the network imported again carries %q, want %s's UID", got.Tags, ns2)
	}
	e2.waitReady("again", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if err := e.nets.Client.SamplecrdV1().Networks(ns2).Delete(e.Ctx, "again", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2.waitGone("again")
}

// TestNeutronUntaggedNetworksTagged: a network created before the tags
// named its Network's namespace and name (only the UID and managed-by
// tags, its description naming the Network) is tagged by the first scan
// of the manager whose Network it is; one whose Network is gone is never
// deleted by a manager limited to a namespace, which cannot confirm it
// gone (a manager of every namespace does: unit TestUntaggedOrphans).
func TestNeutronUntaggedNetworksTagged(t *testing.T) {
	e, cloud, managedBy, _ := neutronUserEnv(t)
	admin := cloud.Admin(t)
	e.startNeutron(managedBy, time.Second)
	e.create(newNetwork("old", "10.48.0.0/24", "10.48.0.1"))
	old := e.waitReady("old", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	e.create(newNetwork("orphan", "10.48.1.0/24", "10.48.1.1"))
	orphan := e.waitReady("orphan", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	// As they were tagged before: without the k8s-ref tags.
	for _, n := range []*samplecrdv1.Network{old, orphan} {
		for _, r := range []struct{ kind, id string }{{"networks", n.Status.NetworkID}, {"subnets", n.Status.SubnetID}} {
			tags, err := attributestags.List(e.Ctx, admin, r.kind, r.id).Extract()
			if err != nil {
				t.Fatal(err)
			}
			tags = slices.DeleteFunc(tags, func(tag string) bool { return strings.HasPrefix(tag, neutron.RefTagPrefix) })
			if _, err := attributestags.ReplaceAll(e.Ctx, admin, r.kind, r.id, attributestags.ReplaceAllOpts{Tags: tags}).Extract(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The orphan's Network goes while no manager runs.
	e.edit("orphan", func(n *samplecrdv1.Network) { n.Finalizers = nil })
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, "orphan", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("orphan")

	log, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	e.startNeutron(managedBy, time.Second) // limited to the test's namespace
	e.waitScans(log, managedBy, 3)
	if tags := refTagsOf(t, admin, "networks", old.Status.NetworkID); len(tags) == 0 {
		t.Errorf("the network of %s/old was not tagged with its namespace and name", e.NS)
	}
	if tags := refTagsOf(t, admin, "subnets", old.Status.SubnetID); len(tags) == 0 {
		t.Errorf("the subnet of %s/old was not tagged with its namespace and name", e.NS)
	}
	if _, err := networks.Get(e.Ctx, admin, orphan.Status.NetworkID).Extract(); err != nil {
		t.Fatalf("a manager limited to one namespace deleted an untagged network it cannot confirm gone: %v", err)
	}
}

// refTagsOf returns the k8s-ref tags of a network or subnet.
func refTagsOf(t *testing.T, client *gophercloud.ServiceClient, kind, id string) []string {
	t.Helper()
	tags, err := attributestags.List(context.Background(), client, kind, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(tags, func(tag string) bool { return !strings.HasPrefix(tag, neutron.RefTagPrefix) })
}

// restartRequests is what a restart with converged Networks costs in
// Neutron requests: the List (networks and subnets of our managed-by tag,
// one page each below 500 Networks) and, for the Unmanaged Networks,
// whose networks carry no tag of ours, one list of networks and one of
// their subnets per 100 of them: never a request per Network.
func restartRequests(unmanaged int) int {
	return scanRequests + 2*((unmanaged+99)/100)
}

// TestNeutronRestartWithImportsRequests: a restart with converged Networks,
// created, Managed imports and 30 Unmanaged imports among them, costs
// restartRequests Neutron requests, as Neutron's access log counts them,
// whatever their number, and writes nothing to Neutron or to the API
// server.
func TestNeutronRestartWithImportsRequests(t *testing.T) {
	e, cloud, managedBy, user := neutronUserEnv(t)
	const created, adopted, observed = 5, 5, 30
	var names []string
	var objs []*samplecrdv1.Network
	for i := range adopted + observed {
		n := cloud.AddNetwork(t, "", fmt.Sprintf("import-%02d", i), fmt.Sprintf("10.47.%d.0/24", i), fmt.Sprintf("10.47.%d.1", i))
		policy, name := samplecrdv1.ManagementPolicyUnmanaged, fmt.Sprintf("observed-%02d", i)
		if i < adopted {
			policy, name = samplecrdv1.ManagementPolicyManaged, fmt.Sprintf("adopted-%02d", i)
		}
		objs = append(objs, importByID(name, n.ID, policy, "", ""))
	}
	for i := range created {
		objs = append(objs, newNetwork(fmt.Sprintf("created-%02d", i), fmt.Sprintf("10.48.%d.0/24", i), fmt.Sprintf("10.48.%d.1", i)))
	}
	e.startNeutron(managedBy, 0)
	for _, o := range objs {
		e.create(o)
		names = append(names, o.Name)
	}
	e.waitAllReady(names)
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}

	log, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	// Two scans: the restart's, and one more a GC interval later, by which
	// time every Network the first one brought back has been synced.
	queue := framework.MarkQueue(network.Name)
	e.startNeutron(managedBy, 2*time.Second)
	var reqs []neutrontest.Request
	framework.Eventually(t, timeout, "two scans after the restart, every Network synced", func(ctx context.Context) (bool, error) {
		reqs = scanned(requests(t, log, user))
		lists, byID := 0, 0
		for _, r := range reqs {
			switch {
			case r.IsList(managedBy):
				lists++
			case strings.Contains(r.Path, "id="):
				byID++
			}
		}
		if lists < 2*scanRequests || byID < 2*(restartRequests(observed)-scanRequests) {
			return false, fmt.Errorf("%d lists of ours, %d by ID", lists, byID)
		}
		return queue.Idle(), nil
	})
	t.Logf("restart with %d converged Networks (%d created, %d Managed imports, %d Unmanaged imports): %d Neutron requests in two scans (want %d a scan): %v",
		len(names), created, adopted, observed, len(reqs), restartRequests(observed), reqs)
	if len(reqs) > 2*restartRequests(observed) {
		t.Errorf("%d Neutron requests in the restart's two scans, want at most %d: %v", len(reqs), 2*restartRequests(observed), reqs)
	}
	for _, r := range reqs {
		if r.Method != "GET" {
			t.Errorf("a restart with converged Networks wrote %s", r)
		}
	}
	checkFiltered(t, reqs)
	if w := e.Writes.Writes(""); w != 0 {
		t.Errorf("API writes after a restart with converged Networks = %d, want 0 (%s)", w, e.Writes)
	}
}

// scanned drops from reqs the version discovery a new client makes once
// (GET /), not the scans'.
func scanned(reqs []neutrontest.Request) []neutrontest.Request {
	return slices.DeleteFunc(reqs, func(r neutrontest.Request) bool { return r.Path == "/" })
}

// waitAllReady waits until every Network of names is Ready=True.
func (e *env) waitAllReady(names []string) {
	e.T.Helper()
	for _, name := range names {
		e.waitReady(name, metav1.ConditionTrue, "")
	}
}

// TestNeutronStatusMirrorsNeutron: status.network and status.subnet show
// what Neutron holds, for a Network the controller created, a Managed and
// an Unmanaged import; the admin renaming the Unmanaged Network's network
// shows in its status after the next scan; and scans of converged Networks
// write no status.
func TestNeutronStatusMirrorsNeutron(t *testing.T) {
	e, cloud, managedBy, _ := neutronUserEnv(t)
	admin := cloud.Admin(t)
	observed := cloud.AddNetwork(t, "", "status-observed", "10.49.0.0/24", "10.49.0.1", "team=a")
	adopted := cloud.AddNetwork(t, "", "status-adopted", "10.49.1.0/24", "10.49.1.1")
	e.startNeutron(managedBy, 2*time.Second)
	e.create(newNetwork("created", "10.49.2.0/24", "10.49.2.1"))
	e.create(importByID("adopted", adopted.ID, samplecrdv1.ManagementPolicyManaged, "", ""))
	e.create(importByID("observed", observed.ID, samplecrdv1.ManagementPolicyUnmanaged, "", ""))
	for _, name := range []string{"created", "adopted", "observed"} {
		n := e.waitReady(name, metav1.ConditionTrue, "")
		// What Neutron holds now, as the admin reads it.
		var want struct {
			networks.Network
			external.NetworkExternalExt
			mtu.NetworkMTUExt
		}
		if err := networks.Get(e.Ctx, admin, n.Status.NetworkID).ExtractInto(&want); err != nil {
			t.Fatal(err)
		}
		sub, err := subnets.Get(e.Ctx, admin, n.Status.SubnetID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		got := framework.WaitObject(t, name+"'s status.network and status.subnet", func(ctx context.Context) (*samplecrdv1.Network, error) {
			return e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, name, metav1.GetOptions{})
		}, func(n *samplecrdv1.Network) error {
			if n.Status.Network == nil || n.Status.Subnet == nil {
				return fmt.Errorf("status = %+v", n.Status)
			}
			return nil
		})
		tags := slices.Sorted(slices.Values(want.Tags))
		wantNet := samplecrdv1.NetworkObservation{ID: want.ID, Name: want.Name, Status: want.Status, AdminStateUp: &want.AdminStateUp,
			MTU: int32(want.MTU), Shared: want.Shared, External: want.External, ProjectID: want.ProjectID, Description: want.Description, Tags: tags,
			RevisionNumber: int64(want.RevisionNumber)}
		if !equality.Semantic.DeepEqual(*got.Status.Network, wantNet) {
			t.Errorf("%s: status.network = %+v, Neutron holds %+v", name, *got.Status.Network, wantNet)
		}
		s := got.Status.Subnet
		if s.ID != sub.ID || s.Name != sub.Name || s.CIDR != sub.CIDR || s.GatewayIP != sub.GatewayIP || int(s.IPVersion) != sub.IPVersion ||
			s.EnableDHCP != sub.EnableDHCP || len(s.AllocationPools) != len(sub.AllocationPools) || int(s.RevisionNumber) != sub.RevisionNumber ||
			s.Description != sub.Description || !slices.Equal(s.Tags, slices.Sorted(slices.Values(sub.Tags))) {
			t.Errorf("%s: status.subnet = %+v, Neutron holds %+v", name, *s, *sub)
		}
	}

	// Converged: two scans write no status.
	log, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	e.Writes.Reset()
	e.waitScans(log, managedBy, 2)
	if w := e.Writes.Writes(""); w != 0 {
		t.Errorf("two scans of converged Networks made %d API writes, want none (%s)", w, e.Writes)
	}

	// Renamed by the admin: shown after the next scan, with the new revision.
	if _, err := networks.Update(e.Ctx, admin, observed.ID, networks.UpdateOpts{Name: ptr("status-observed-renamed")}).Extract(); err != nil {
		t.Fatal(err)
	}
	framework.WaitObject(t, "the rename in status.network", func(ctx context.Context) (*samplecrdv1.Network, error) {
		return e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, "observed", metav1.GetOptions{})
	}, func(n *samplecrdv1.Network) error {
		if n.Status.Network == nil || n.Status.Network.Name != "status-observed-renamed" || n.Status.Network.RevisionNumber <= int64(observed.RevisionNumber) {
			return fmt.Errorf("status.network = %+v", n.Status.Network)
		}
		return nil
	})
}

func ptr[T any](v T) *T { return &v }

// startNeutronScanned starts the manager on real Neutron as managedBy and
// waits for its first scan; the access log it returns is marked after it.
func (e *env) startNeutronScanned(cloud *neutrontest.Cloud, managedBy string) *neutrontest.AccessLog {
	e.T.Helper()
	log, err := cloud.AccessLog()
	if err != nil {
		e.T.Fatal(err)
	}
	e.startNeutron(managedBy, 0)
	e.waitScans(log, managedBy, 1)
	if err := log.Reset(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	return log
}

// waitScans waits until Neutron's access log shows k scans (Lists of ours)
// since log's mark: taken before a manager starts, its first scan counts.
func (e *env) waitScans(log *neutrontest.AccessLog, managedBy string, k int) {
	e.T.Helper()
	framework.Eventually(e.T, timeout, fmt.Sprintf("%d scans", k), func(ctx context.Context) (bool, error) {
		reqs, err := log.Requests(ctx, "")
		if err != nil {
			return false, err
		}
		lists := 0
		for _, r := range reqs {
			if r.IsList(managedBy) {
				lists++
			}
		}
		return lists >= k*scanRequests, nil
	})
}
