package network

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// neutronNetwork is a Neutron network with its MTU.
type neutronNetwork struct {
	networks.Network
	mtu.NetworkMTUExt
}

// held is what Neutron holds of a Network's settings, as its member
// user reads them.
type held struct {
	Description, SubnetDescription string
	MTU                            int
	AdminStateUp, EnableDHCP       bool
	DNS, Tags, SubnetTags          []string
	Pools, Routes                  []string
}

func (e *env) held(cloud *neutrontest.Cloud, n *samplecrdv1.Network) (held, error) {
	client := cloud.Member(e.T)
	var net neutronNetwork
	if err := networks.Get(e.Ctx, client, n.Status.NetworkID).ExtractInto(&net); err != nil {
		return held{}, err
	}
	s, err := subnets.Get(e.Ctx, client, n.Status.SubnetID).Extract()
	if err != nil {
		return held{}, err
	}
	h := held{Description: net.Description, SubnetDescription: s.Description, MTU: net.MTU, AdminStateUp: net.AdminStateUp,
		EnableDHCP: s.EnableDHCP, DNS: s.DNSNameservers, Tags: userTags(net.Tags), SubnetTags: userTags(s.Tags)}
	for _, p := range s.AllocationPools {
		h.Pools = append(h.Pools, p.Start+"-"+p.End)
	}
	for _, r := range s.HostRoutes {
		h.Routes = append(h.Routes, r.DestinationCIDR+" via "+r.NextHop)
	}
	return h, nil
}

func userTags(tags []string) []string {
	out := slices.DeleteFunc(slices.Clone(tags), func(t string) bool {
		return strings.HasPrefix(t, "k8s-") || strings.HasPrefix(t, "managed-by=")
	})
	slices.Sort(out)
	return out
}

// waitHeld waits until check accepts what Neutron holds of Network
// name's settings.
func (e *env) waitHeld(cloud *neutrontest.Cloud, name string, check func(h held) error) {
	e.T.Helper()
	framework.Eventually(e.T, timeout, "Neutron holds the settings of "+name, func(ctx context.Context) (bool, error) {
		n, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		h, err := e.held(cloud, n)
		if err != nil {
			return false, err
		}
		if err := check(h); err != nil {
			return false, fmt.Errorf("%w: Neutron holds %+v", err, h)
		}
		return true, nil
	})
}

// ids matches the UUIDs in request paths.
var ids = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// lines returns reqs as "METHOD path" with IDs written as <id>.
func lines(reqs []neutrontest.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Method+" "+ids.ReplaceAllString(r.Path, "<id>"))
	}
	return out
}

// TestNeutronSettings: a Network with every optional setting gets them in
// its create's own requests (the network, its tags, the subnet, its tags:
// no more, as Neutron's access log shows), its status mirrors them; an
// edit reaches Neutron in place, one PUT per object that differs; what
// an admin changes or deletes behind the controller's back is repaired
// after a restart's one List, with no list of the whole project; a
// reserved tag is refused by the API server. (A setting Neutron refuses:
// neutron TestClientErrorsArePermanent; the condition, the Warning and no
// hot loop: TestNeutronRefusalIsClear.)
func TestNeutronSettings(t *testing.T) {
	e, cloud, managedBy, user := neutronUserEnv(t)
	log := e.startNeutronScanned(cloud, managedBy)

	n := newNetwork("team-a", "10.46.0.0/24", "10.46.0.1")
	n.Spec.Description = ptr("team a's build network")
	n.Spec.Tags = []string{"team=a", "env=ci"}
	n.Spec.MTU = ptr(int32(1400))
	n.Spec.AdminStateUp = ptr(true)
	n.Spec.EnableDHCP = ptr(false)
	n.Spec.DNSNameservers = []string{"10.46.0.53", "10.46.0.54"}
	n.Spec.AllocationPools = []samplecrdv1.AllocationPoolSpec{{Start: "10.46.0.10", End: "10.46.0.99"}}
	n.Spec.HostRoutes = []samplecrdv1.HostRoute{{Destination: "10.200.0.0/16", Nexthop: "10.46.0.254"}}
	e.create(n)
	got := e.waitReady("team-a", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	reqs := requests(t, log, user)
	checkFiltered(t, reqs)
	create := lines(notLists(reqs, managedBy))
	t.Logf("create with every setting: %d Neutron requests: %v", len(create), create)
	if want := []string{"POST /v2.0/networks", "PUT /v2.0/networks/<id>/tags", "POST /v2.0/subnets", "PUT /v2.0/subnets/<id>/tags"}; !slices.Equal(create, want) {
		t.Errorf("the create's requests are %v, want %v", create, want)
	}
	h, err := e.held(cloud, got)
	if err != nil {
		t.Fatal(err)
	}
	want := held{MTU: 1400, AdminStateUp: true, EnableDHCP: false, DNS: []string{"10.46.0.53", "10.46.0.54"}, Tags: []string{"env=ci", "team=a"},
		SubnetTags: []string{"env=ci", "team=a"}, Pools: []string{"10.46.0.10-10.46.0.99"}, Routes: []string{"10.200.0.0/16 via 10.46.0.254"}}
	want.Description, want.SubnetDescription = h.Description, h.SubnetDescription
	if !strings.HasSuffix(h.Description, ": team a's build network") || !strings.HasSuffix(h.SubnetDescription, ": team a's build network") {
		t.Errorf("descriptions %q, %q, want them to end with the Network's", h.Description, h.SubnetDescription)
	}
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Errorf("Neutron holds %+v, want %+v", h, want)
	}
	if s, o := got.Status.Subnet, got.Status.Network; s == nil || o == nil || o.MTU != 1400 || s.EnableDHCP ||
		!slices.Equal(s.DNSNameservers, []string{"10.46.0.53", "10.46.0.54"}) || len(s.HostRoutes) != 1 ||
		!slices.Contains(s.Tags, "team=a") || o.Description != h.Description {
		t.Errorf("status shows %+v / %+v, want the settings Neutron holds", o, s)
	}

	// An edit reaches Neutron, in place: one PUT of the subnet, one of the
	// network, one of each one's tags.
	if err := log.Reset(e.Ctx); err != nil {
		t.Fatal(err)
	}
	e.edit("team-a", func(n *samplecrdv1.Network) {
		n.Spec.MTU, n.Spec.EnableDHCP, n.Spec.Description = ptr(int32(1300)), ptr(true), ptr("handed to team b")
		n.Spec.DNSNameservers, n.Spec.Tags = []string{"10.46.0.54"}, []string{"team=b"}
	})
	e.waitHeld(cloud, "team-a", func(h held) error {
		if h.MTU != 1300 || !h.EnableDHCP || !slices.Equal(h.DNS, []string{"10.46.0.54"}) || !slices.Equal(h.Tags, []string{"team=b"}) ||
			!slices.Equal(h.SubnetTags, []string{"team=b"}) || !strings.HasSuffix(h.Description, ": handed to team b") {
			return fmt.Errorf("not the edit")
		}
		return nil
	})
	got = e.waitReady("team-a", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	edit := lines(notLists(requests(t, log, user), managedBy))
	t.Logf("edit of five settings: %d Neutron requests: %v", len(edit), edit)
	if want := []string{"PUT /v2.0/subnets/<id>", "PUT /v2.0/networks/<id>", "PUT /v2.0/networks/<id>/tags", "PUT /v2.0/subnets/<id>/tags"}; !slices.Equal(edit, want) {
		t.Errorf("the edit's requests are %v, want %v", edit, want)
	}
	if got.Status.Network.MTU != 1300 || !slices.Contains(got.Status.Network.Tags, "team=b") {
		t.Errorf("status after the edit: %+v", got.Status.Network)
	}
	e.waitEvent("team-a", corev1.EventTypeNormal, "BackendUpdated", "mtu is 1400 in the backend, 1300 in the spec")

	// Behind the controller's back, while it is stopped: an admin turns
	// DHCP off, adds a DNS server and a tag, and deletes another Network's
	// Neutron network. The restart's List finds both.
	e.create(newNetwork("deleted", "10.45.0.0/24", "10.45.0.1"))
	deleted := e.waitReady("deleted", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	admin := cloud.Admin(t)
	if err := networks.Delete(e.Ctx, admin, deleted.Status.NetworkID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	dhcp, dns := false, []string{"10.46.0.54", "10.46.0.55"}
	if _, err := subnets.Update(e.Ctx, admin, got.Status.SubnetID, subnets.UpdateOpts{EnableDHCP: &dhcp, DNSNameservers: &dns}).Extract(); err != nil {
		t.Fatal(err)
	}
	if err := attributestags.Add(e.Ctx, admin, "networks", got.Status.NetworkID, "rogue").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := log.Reset(e.Ctx); err != nil {
		t.Fatal(err)
	}
	e.startNeutron(managedBy, 0)
	e.waitHeld(cloud, "team-a", func(h held) error {
		if !h.EnableDHCP || !slices.Equal(h.DNS, []string{"10.46.0.54"}) || !slices.Equal(h.Tags, []string{"team=b"}) {
			return fmt.Errorf("not repaired")
		}
		return nil
	})
	e.waitReady("team-a", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	framework.Eventually(t, timeout, "the deleted network made again", func(ctx context.Context) (bool, error) {
		n, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, "deleted", metav1.GetOptions{})
		return err == nil && n.Status.NetworkID != deleted.Status.NetworkID && n.Status.SubnetID != "", err
	})
	restart := requests(t, log, user)
	checkFiltered(t, restart)
	repairs := lines(notLists(restart, managedBy))
	t.Logf("restart with drift: %d Neutron requests, repairs %v", len(restart), repairs)
	// team-a's repair is a PUT of its subnet and one of its network's tags;
	// the deleted network's is a create (4 writes) after at most 2 lookups.
	writes := slices.DeleteFunc(slices.Clone(repairs), func(l string) bool { return strings.HasPrefix(l, "GET ") })
	slices.Sort(writes)
	if want := []string{"POST /v2.0/networks", "POST /v2.0/subnets", "PUT /v2.0/networks/<id>/tags", "PUT /v2.0/networks/<id>/tags",
		"PUT /v2.0/subnets/<id>", "PUT /v2.0/subnets/<id>/tags"}; !slices.Equal(writes, want) {
		t.Errorf("the repairs wrote %v, want %v", writes, want)
	}
	if len(repairs) > 2+maxRequestsPerRecreate {
		t.Errorf("%d requests to repair 2 Networks, want at most %d: %v", len(repairs), 2+maxRequestsPerRecreate, repairs)
	}
	if scans := len(restart) - len(repairs); scans != scanRequests {
		t.Errorf("the restart's List took %d requests, want %d", scans, scanRequests)
	}

	// The API server refuses a tag of the controller's own.
	reserved := newNetwork("reserved", "10.48.0.0/24", "10.48.0.1")
	reserved.Spec.Tags = []string{"managed-by=" + managedBy}
	_, err = e.nets.Client.SamplecrdV1().Networks(e.NS).Create(e.Ctx, reserved, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "uses a prefix the controller keeps for its own tags") {
		t.Errorf("a reserved tag: %v, want Invalid saying why", err)
	}
}
