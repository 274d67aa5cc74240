package network

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// The request budgets, counted in Neutron's own access log.
const (
	// maxRequestsPerCreate: the network, its tags, the subnet, its tags.
	// A new Network needs no lookup of what an earlier attempt left: there
	// was none before its finalizer went on.
	maxRequestsPerCreate = 4
	// maxRequestsPerRecreate: a Network with the finalizer whose backend
	// network went: the lookup, the GET of the network its status
	// records (gone, not under another managed-by value), then the four
	// of a create.
	maxRequestsPerRecreate = 2 + maxRequestsPerCreate
	// scanRequests: a List of fewer Networks than a page is one request
	// for the networks and one for the subnets.
	scanRequests = 2
)

// neutronUserEnv is neutronEnv with a Keystone user of the test's own, so
// that the requests Neutron logs for it are the manager's alone.
func neutronUserEnv(t *testing.T) (*env, *neutrontest.Cloud, string, *neutrontest.User) {
	e, cloud, managedBy := neutronEnv(t)
	user := cloud.User(t)
	for k, v := range user.Env {
		t.Setenv(k, v)
	}
	return e, cloud, managedBy, user
}

// requests returns what Neutron logged for user since log's mark, with the
// paths unescaped.
func requests(t *testing.T, log *neutrontest.AccessLog, user *neutrontest.User) []neutrontest.Request {
	t.Helper()
	reqs, err := log.Requests(context.Background(), user.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		if p, err := url.QueryUnescape(reqs[i].Path); err == nil {
			reqs[i].Path = p
		}
	}
	return reqs
}

// checkFiltered fails t for a list request without a filter that names
// what it looks for: the backend never lists the whole project.
func checkFiltered(t *testing.T, reqs []neutrontest.Request) {
	t.Helper()
	for _, r := range reqs {
		if r.Method != "GET" || strings.Count(r.Path, "/") > 2 {
			continue // not a list (a GET of one object has its ID in the path)
		}
		if !strings.Contains(r.Path, "tags=") && !strings.Contains(r.Path, "name=") && !strings.Contains(r.Path, "network_id=") {
			t.Errorf("%s lists the whole project", r)
		}
	}
}

// TestNeutronCreateRequests: creating new Networks costs at most
// maxRequestsPerCreate Neutron requests each, everything included, as
// Neutron's access log counts them.
func TestNeutronCreateRequests(t *testing.T) {
	e, cloud, managedBy, user := neutronUserEnv(t)
	log, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	e.startNeutron(managedBy, 0)
	const n = 4
	for i := range n {
		e.create(newNetwork(fmt.Sprintf("net-%d", i), fmt.Sprintf("10.40.%d.0/24", i), fmt.Sprintf("10.40.%d.1", i)))
	}
	for i := range n {
		e.waitReady(fmt.Sprintf("net-%d", i), metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	}
	reqs := requests(t, log, user)
	var creates []neutrontest.Request
	for _, r := range reqs {
		if !r.IsList(managedBy) {
			creates = append(creates, r)
		}
	}
	t.Logf("Neutron requests for %d new Networks: %d (plus %d of the start's List): %v", n, len(creates), len(reqs)-len(creates), creates)
	if len(creates) > n*maxRequestsPerCreate {
		t.Errorf("%d Neutron requests for %d new Networks, want at most %d each: %v", len(creates), n, maxRequestsPerCreate, creates)
	}
	if got := len(reqs) - len(creates); got > scanRequests {
		t.Errorf("the start's List took %d requests, want %d", got, scanRequests)
	}
	checkFiltered(t, reqs)
	if nets := cloud.Networks(t, cloud.Member(t), neutron.ManagedByTagPrefix+managedBy); len(nets) != n {
		t.Errorf("%d Neutron networks of ours, want %d", len(nets), n)
	}
}

// TestNeutronRestartRequests: a restart with converged Networks costs one
// List (networks and subnets, filtered by our managed-by tag) and then only
// the writes that repair what changed behind the controller's back: here a
// gateway changed and a network deleted in Neutron.
func TestNeutronRestartRequests(t *testing.T) {
	e, cloud, managedBy, user := neutronUserEnv(t)
	e.startNeutron(managedBy, 0)
	const n = 30
	for i := range n {
		e.create(newNetwork(fmt.Sprintf("net-%02d", i), fmt.Sprintf("10.41.%d.0/24", i), fmt.Sprintf("10.41.%d.1", i)))
	}
	ready := make([]*samplecrdv1.Network, n)
	for i := range n {
		ready[i] = e.waitReady(fmt.Sprintf("net-%02d", i), metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	}
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}

	// Behind the controller's back: net-00's gateway goes (its pools
	// take every other address), net-01's network goes.
	admin := cloud.Admin(t)
	gw := "" // null
	if _, err := subnets.Update(e.Ctx, admin, ready[0].Status.SubnetID, subnets.UpdateOpts{GatewayIP: &gw}).Extract(); err != nil {
		t.Fatal(err)
	}
	if err := networks.Delete(e.Ctx, admin, ready[1].Status.NetworkID).ExtractErr(); err != nil {
		t.Fatal(err)
	}

	log, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	queue := framework.MarkQueue(network.Name)
	e.startNeutron(managedBy, 0)
	framework.Eventually(t, timeout, "every Network synced again, the drift repaired", func(ctx context.Context) (bool, error) {
		if e.M.CountLogs("Synced") < n {
			return false, fmt.Errorf("%d syncs", e.M.CountLogs("Synced"))
		}
		s, err := subnets.Get(ctx, admin, ready[0].Status.SubnetID).Extract()
		if err != nil || s.GatewayIP != "10.41.0.1" {
			return false, fmt.Errorf("net-00's subnet: %+v, %v", s, err)
		}
		cur, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, "net-01", metav1.GetOptions{})
		if err != nil || cur.Status.NetworkID == ready[1].Status.NetworkID || cur.Status.SubnetID == "" {
			return false, fmt.Errorf("net-01's status: %+v, %v", cur.Status, err)
		}
		// And nothing more to do: every Network that waited for the List
		// synced after it.
		return queue.Idle(), nil
	})
	e.waitReady("net-01", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	reqs := requests(t, log, user)
	var scans, repairs []neutrontest.Request
	for _, r := range reqs {
		if r.IsList(managedBy) {
			scans = append(scans, r)
		} else {
			repairs = append(repairs, r)
		}
	}
	t.Logf("restart with %d converged Networks, 2 drifted: %d Neutron requests: List %v, repairs %v", n, len(reqs), scans, repairs)
	if len(scans) != scanRequests {
		t.Errorf("the restart's List took %d requests, want %d: %v", len(scans), scanRequests, scans)
	}
	// One PUT for the gateway, a create for the deleted network.
	if want := 1 + maxRequestsPerRecreate; len(repairs) > want {
		t.Errorf("%d requests to repair 2 Networks, want at most %d: %v", len(repairs), want, repairs)
	}
	checkFiltered(t, reqs)
	if w := e.Writes.Writes(""); w > 2*2 {
		t.Errorf("API writes after the restart = %d, want only the repaired Networks' status (%s)", w, e.Writes)
	}
}
