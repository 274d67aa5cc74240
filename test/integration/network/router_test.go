package network

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// interfaces returns the ports of router's interfaces, as the admin sees
// them, by subnet ID.
func interfaces(t *testing.T, cloud *neutrontest.Cloud, router string) map[string]string {
	t.Helper()
	pages, err := ports.List(cloud.Admin(t), ports.ListOpts{DeviceID: router, DeviceOwner: "network:router_interface"}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range ps {
		for _, ip := range p.FixedIPs {
			out[ip.SubnetID] = p.ID
		}
	}
	return out
}

// waitInterface waits until router has an interface on subnet (want) or
// none, and returns its port.
func (e *env) waitInterface(cloud *neutrontest.Cloud, router, subnet string, want bool) string {
	e.T.Helper()
	var port string
	framework.Eventually(e.T, timeout, fmt.Sprintf("router %s with an interface on %s: %v", router, subnet, want), func(context.Context) (bool, error) {
		port = interfaces(e.T, cloud, router)[subnet]
		return (port != "") == want, nil
	})
	return port
}

// TestNeutronRouter: spec.router attaches the subnet to an existing router
// of the project on real Neutron (its L3 router plugin, no agent): a
// create with settings and a router by ID costs the router's lookup (in
// the project: before anything is made), the create's 4 requests and the
// interface's, no more; the status shows it; an interface
// removed behind the controller's back is added again after a restart's
// List (one more request: the project's router interfaces); switching
// routers or moving the gateway is refused by the API server; a router
// that is not there, or another project's, is RouterNotFound; removing
// the router removes the interface; deleting the Network removes it
// first; onDelete: Detach leaves it.
func TestNeutronRouter(t *testing.T) {
	e, cloud, managedBy, user := neutronUserEnv(t)
	suffix := string(uuid.NewUUID())[:8]
	edge := cloud.AddRouter(t, "", "edge-"+suffix)
	log := e.startNeutronScanned(cloud, managedBy)

	n := newNetwork("routed", "10.51.0.0/24", "10.51.0.1")
	n.Spec.DNSNameservers = []string{"10.51.0.53"}
	n.Spec.Tags = []string{"team=a"}
	n.Spec.Router = &samplecrdv1.RouterRef{ID: edge}
	e.create(n)
	got := e.waitReady("routed", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	create := lines(notLists(requests(t, log, user), managedBy))
	t.Logf("create with settings and a router: %d Neutron requests: %v", len(create), create)
	if want := []string{"GET /v2.0/routers?id=<id>&project_id=" + cloud.ProjectID, "POST /v2.0/networks", "PUT /v2.0/networks/<id>/tags", "POST /v2.0/subnets", "PUT /v2.0/subnets/<id>/tags",
		"PUT /v2.0/routers/<id>/add_router_interface"}; !slices.Equal(create, want) {
		t.Errorf("the create's requests are %v, want %v", create, want)
	}
	port := interfaces(t, cloud, edge)[got.Status.SubnetID]
	if port == "" || got.Status.Router == nil || got.Status.Router.ID != edge || got.Status.Router.PortID != port {
		t.Errorf("status.router = %+v, Neutron's interface port %q on router %s", got.Status.Router, port, edge)
	}

	// The API server refuses what Neutron cannot do in place.
	for _, tc := range []struct {
		name   string
		change func(*samplecrdv1.Network)
		want   string
	}{
		{"gateway moved", func(n *samplecrdv1.Network) { n.Spec.Gateway = "10.51.0.254" }, "the gateway cannot change while the subnet is attached to a router"},
		{"router switched", func(n *samplecrdv1.Network) { n.Spec.Router = &samplecrdv1.RouterRef{Name: "other"} }, "remove spec.router (the interface is removed), then set the new router"},
	} {
		cur, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(e.Ctx, "routed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tc.change(cur)
		_, err = e.nets.Client.SamplecrdV1().Networks(e.NS).Update(e.Ctx, cur, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want Invalid saying %q", tc.name, err, tc.want)
		}
	}

	// Removed behind the controller's back while it is stopped: the
	// restart's List finds it and the interface is added again.
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := routers.RemoveInterface(e.Ctx, cloud.Admin(t), edge, routers.RemoveInterfaceOpts{SubnetID: got.Status.SubnetID}).Extract(); err != nil {
		t.Fatal(err)
	}
	if err := log.Reset(e.Ctx); err != nil {
		t.Fatal(err)
	}
	e.startNeutron(managedBy, 0)
	newPort := e.waitInterface(cloud, edge, got.Status.SubnetID, true)
	framework.Eventually(t, timeout, "status.router shows the new interface", func(ctx context.Context) (bool, error) {
		cur, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, "routed", metav1.GetOptions{})
		return err == nil && cur.Status.Router != nil && cur.Status.Router.PortID == newPort, err
	})
	restart := requests(t, log, user)
	repairs := lines(notLists(restart, managedBy))
	t.Logf("restart with the interface removed: %d Neutron requests, repairs %v", len(restart), repairs)
	if want := []string{"GET /v2.0/routers?id=<id>&project_id=" + cloud.ProjectID, "PUT /v2.0/routers/<id>/add_router_interface"}; !slices.Equal(repairs, want) {
		t.Errorf("the repair's requests are %v, want %v", repairs, want)
	}
	if scans := len(restart) - len(repairs); scans != scanRequests+1 {
		t.Errorf("the restart's List took %d requests, want %d (networks, subnets, router interfaces)", scans, scanRequests+1)
	}

	// A router that is not there, or another project's: RouterNotFound,
	// nothing created (every reference is resolved first); created once
	// the spec is fixed.
	foreign := cloud.AddRouter(t, cloud.AdminProjectID, "admins-"+suffix)
	for i, ref := range []samplecrdv1.RouterRef{{Name: "no-such-router-" + suffix}, {ID: foreign}} {
		name := fmt.Sprintf("lost-%d", i)
		lost := newNetwork(name, fmt.Sprintf("10.52.%d.0/24", i), fmt.Sprintf("10.52.%d.1", i))
		lost.Spec.Router = &ref
		e.create(lost)
		refused := e.waitReady(name, metav1.ConditionFalse, samplecrdv1.ReasonRouterNotFound)
		e.waitEvent(name, corev1.EventTypeWarning, samplecrdv1.ReasonRouterNotFound, "")
		if nets := cloud.Networks(t, cloud.Admin(t), neutron.UIDTagPrefix+string(refused.UID)); len(nets) != 0 || refused.Status.NetworkID != "" {
			t.Errorf("%s: a network was created before its router was found: %+v", name, nets)
		}
		e.edit(name, func(n *samplecrdv1.Network) { n.Spec.Router = nil })
		e.waitReady(name, metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	}
	if len(interfaces(t, cloud, foreign)) != 0 {
		t.Errorf("another project's router got an interface")
	}

	// Removing the router from the spec removes the interface and the mark.
	e.edit("routed", func(n *samplecrdv1.Network) { n.Spec.Router = nil })
	e.waitInterface(cloud, edge, got.Status.SubnetID, false)
	framework.Eventually(t, timeout, "the router mark gone, status.router empty", func(ctx context.Context) (bool, error) {
		s, err := subnets.Get(ctx, cloud.Admin(t), got.Status.SubnetID).Extract()
		if err != nil {
			return false, err
		}
		cur, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, "routed", metav1.GetOptions{})
		return err == nil && cur.Status.Router == nil && !slices.ContainsFunc(s.Tags, func(t string) bool { return strings.HasPrefix(t, neutron.RouterTagPrefix) }), err
	})

	// By name, then deleted: the interface goes first, then the subnet.
	e.edit("routed", func(n *samplecrdv1.Network) { n.Spec.Router = &samplecrdv1.RouterRef{Name: "edge-" + suffix} })
	e.waitInterface(cloud, edge, got.Status.SubnetID, true)
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, "routed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("routed")
	if _, ok := interfaces(t, cloud, edge)[got.Status.SubnetID]; ok {
		t.Errorf("the interface outlived the Network")
	}

	// onDelete: Detach leaves the interface with the network.
	kept := newNetwork("kept", "10.53.0.0/24", "10.53.0.1")
	kept.Spec.Router = &samplecrdv1.RouterRef{ID: edge}
	kept.Spec.OnDelete = samplecrdv1.OnDeleteDetach
	e.create(kept)
	k := e.waitReady("kept", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("kept")
	if _, ok := interfaces(t, cloud, edge)[k.Status.SubnetID]; !ok {
		t.Errorf("onDelete: Detach removed the router interface")
	}
	s, err := subnets.Get(e.Ctx, cloud.Admin(t), k.Status.SubnetID).Extract()
	if err != nil || slices.ContainsFunc(s.Tags, func(t string) bool { return strings.HasPrefix(t, "k8s-router=") }) {
		t.Errorf("the detached subnet: %+v, %v; want it without our router mark", s, err)
	}
	// Left to the test to clean up: the interface first, then the network.
	t.Cleanup(func() {
		_, _ = routers.RemoveInterface(context.Background(), cloud.Admin(t), edge, routers.RemoveInterfaceOpts{SubnetID: k.Status.SubnetID}).Extract()
		_ = networks.Delete(context.Background(), cloud.Admin(t), k.Status.NetworkID).ExtractErr()
	})
}
