package neutron

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// A Network's router (spec.router) is an interface of the router on its
// subnet (Neutron's add_router_interface: a port of the router holding
// the subnet's gateway address). The subnet carries RouterTagPrefix + the
// router's ID from before the interface is added until after it is
// removed, so that a List knows which subnets to look for interfaces of
// (one more list, of the project's router interface ports, only when a
// subnet of ours carries it), and a Delete which interface to remove
// first: Neutron refuses to delete a subnet a router port uses.

// RouterTagPrefix + a router's ID marks a subnet the controller attaches
// to that router.
const RouterTagPrefix = "k8s-router="

// deviceOwnerRouterInterface is the device_owner of a router interface's
// port.
const deviceOwnerRouterInterface = "network:router_interface"

// routerMark returns the router a subnet's tags say it is attached to.
func routerMark(tags []string) string {
	for _, t := range tags {
		if id, ok := strings.CutPrefix(t, RouterTagPrefix); ok {
			return id
		}
	}
	return ""
}

// withMark returns tags with the router mark set to router ("" none).
func withMark(tags []string, router string) []string {
	out := slices.DeleteFunc(slices.Clone(tags), func(t string) bool { return strings.HasPrefix(t, RouterTagPrefix) })
	if router != "" {
		out = append(out, RouterTagPrefix+router)
	}
	return out
}

// routerPorts lists the project's router interface ports (of subnetID
// only, when set).
func (b *Backend) routerPorts(ctx context.Context, subnetID string) ([]ports.Port, error) {
	ctx, done := b.turn(ctx)
	defer done()
	opts := ports.ListOpts{DeviceOwner: deviceOwnerRouterInterface, ProjectID: b.projectID, Limit: b.pageSize}
	if subnetID != "" {
		opts.FixedIPs = []ports.FixedIPOpts{{SubnetID: subnetID}}
	}
	return listAll(ctx, b.timeout, "list router interfaces", ports.List(b.client, opts), ports.ExtractPorts)
}

// interfaceOn returns the port of router's interface on subnet among ps,
// "" when there is none.
func interfaceOn(ps []ports.Port, router, subnet string) string {
	for _, p := range ps {
		if p.DeviceID != router {
			continue
		}
		for _, ip := range p.FixedIPs {
			if ip.SubnetID == subnet {
				return p.ID
			}
		}
	}
	return ""
}

// attached sets on out the router interface of its subnet s, when s
// carries our mark and the interface is among ps.
func attached(out *network.Network, s *subnets.Subnet, ps []ports.Port) {
	if s == nil {
		return
	}
	if router := routerMark(s.Tags); router != "" {
		if port := interfaceOn(ps, router, s.ID); port != "" {
			out.RouterID, out.RouterPortID = router, port
		}
	}
}

// readInterface sets on out the router interface of s, reading the ports
// of s when it carries our mark (one request), none otherwise.
func (b *Backend) readInterface(ctx context.Context, out *network.Network, s *subnets.Subnet) error {
	if s == nil || routerMark(s.Tags) == "" {
		return nil
	}
	ps, err := b.routerPorts(ctx, s.ID)
	if err != nil {
		return err
	}
	attached(out, s, ps)
	return nil
}

// resolveRouter returns the ID of the router ref names, of the project
// (Neutron's policy lets credentials with the admin role use any
// project's): one list of the project's routers of that ID or name.
func (b *Backend) resolveRouter(ctx context.Context, ref network.RouterRef) (string, error) {
	lctx, done := b.turn(ctx)
	defer done()
	all, err := listAll(lctx, b.timeout, "list routers", routers.List(b.client, routers.ListOpts{ID: ref.ID, Name: ref.Name, ProjectID: b.projectID}), routers.ExtractRouters)
	if err != nil {
		return "", err
	}
	var ids []string
	for _, r := range all {
		if ref.ID != "" && r.ID == ref.ID || ref.ID == "" && r.Name == ref.Name { // exact, whatever the database's collation
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	switch len(ids) {
	case 0:
		return "", network.Permanent("attach to "+ref.String(), samplecrdv1.ReasonRouterNotFound, fmt.Errorf(
			"the project has no router of that name: create it, or fix spec.router"))
	case 1:
		return ids[0], nil
	default:
		return "", network.ErrSameName("attach to "+ref.String(), "routers", ids)
	}
}

// checkNoInterface refuses, permanently, to attach subnet to router when
// router already has an interface on it that the controller did not add
// (an operator's, on an adopted network): one request, the subnet's
// router interfaces.
func (b *Backend) checkNoInterface(ctx context.Context, router, subnet string) error {
	ps, err := b.routerPorts(ctx, subnet)
	if err != nil {
		return err
	}
	if port := interfaceOn(ps, router, subnet); port != "" {
		return network.Permanent("attach subnet "+subnet+" to router "+router, samplecrdv1.ReasonBackendRejected, fmt.Errorf(
			"the subnet is attached to that router already, by an interface the controller did not add (port %s): it never takes over (or removes) an interface it did not add; remove spec.router to leave it as it is", port))
	}
	return nil
}

// addInterface adds router's interface on subnet and returns its port.
func (b *Backend) addInterface(ctx context.Context, router, subnet string) (string, error) {
	rctx, cancel := b.request(ctx)
	info, err := routers.AddInterface(rctx, b.client, router, routers.AddInterfaceOpts{SubnetID: subnet}).Extract()
	cancel()
	if err != nil {
		op := "attach subnet " + subnet + " to router " + router
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return "", network.Permanent(op, samplecrdv1.ReasonRouterNotFound, fmt.Errorf(
				"%w (no such router, or one the project cannot use: create it in the project, or fix spec.router)", describe(err)))
		}
		return "", classify(op, err)
	}
	klog.FromContext(ctx).Info("Added Neutron router interface", "routerID", router, "subnetID", subnet, "portID", info.PortID)
	return info.PortID, nil
}

// removeInterface removes router's interface on subnet; one that is not
// there (or a router gone) is removed already.
func (b *Backend) removeInterface(ctx context.Context, router, subnet string) error {
	rctx, cancel := b.request(ctx)
	_, err := routers.RemoveInterface(rctx, b.client, router, routers.RemoveInterfaceOpts{SubnetID: subnet}).Extract()
	cancel()
	if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return classify("detach subnet "+subnet+" from router "+router, err)
	}
	klog.FromContext(ctx).Info("Removed Neutron router interface", "routerID", router, "subnetID", subnet)
	return nil
}
