package neutron

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// A Network's optional settings are Neutron fields of its network (mtu,
// admin_state_up, description) and subnet (enable_dhcp, dns_nameservers,
// allocation_pools, host_routes, description), written in the create's
// POSTs and updated with one PUT of each object that differs; its tags
// go in the tag writes that mark the objects (a PUT of the object's tags
// either way). The description is the controller's own text naming the
// Network, then ": " and the Network's (an adopted network's is the
// Network's alone): lookups of an interrupted create match the start.

// descriptionSep separates our text from the Network's in a description.
const descriptionSep = ": "

// userTag reports whether tag is a user's, not one of the controller's
// marks (which user tags cannot take: the API refuses them).
func userTag(tag string) bool {
	return !strings.HasPrefix(tag, "k8s-") && !strings.HasPrefix(tag, ManagedByTagPrefix)
}

// userTags returns the user tags among tags, sorted, never nil.
func userTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		if userTag(t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// withTags returns existing with our marks (ours) added and, when user
// is set (not nil), its user tags replaced by user.
func withTags(existing, ours, user []string) []string {
	tags := slices.Clone(existing)
	if user != nil {
		tags = slices.DeleteFunc(tags, userTag)
	}
	for _, t := range slices.Concat(ours, user) {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags
}

// markers returns the texts our description of n may start with: the
// one naming the Network, and the shorter one used when a long namespace
// and name leave no room.
func (b *Backend) markers(n network.Network) []string {
	return []string{
		fmt.Sprintf("%s%s/%s (uid %s), managed by %s", descriptionPrefix, n.Namespace, n.Name, n.UID, b.managedBy),
		fmt.Sprintf("%suid %s, managed by %s", descriptionPrefix, n.UID, b.managedBy),
	}
}

// describes reports whether d is our description of n, whatever the
// Network's own text after it.
func (b *Backend) describes(d string, n network.Network) bool {
	for _, m := range b.markers(n) {
		if rest, ok := strings.CutPrefix(d, m); ok && (rest == "" || strings.HasPrefix(rest, descriptionSep)) {
			return true
		}
	}
	return false
}

// describeWith returns the description of n's objects with the Network's
// own text (none when user is nil or empty); ours is false for an
// adopted object, whose description is the Network's text alone.
func (b *Backend) describeWith(n network.Network, user *string, ours bool) string {
	if !ours {
		if user == nil {
			return ""
		}
		return truncate(*user, maxNameLength)
	}
	d := b.description(n)
	if user == nil || *user == "" {
		return d
	}
	if utf8.RuneCountInString(d)+len(descriptionSep)+utf8.RuneCountInString(*user) > maxNameLength {
		d = b.markers(n)[1]
	}
	return truncate(d+descriptionSep+*user, maxNameLength)
}

// userDescription returns the Network's own text of description d, of an
// object our description marks (or not: then all of it).
func (b *Backend) userDescription(d string) string {
	if !strings.HasPrefix(d, descriptionPrefix) {
		return d
	}
	_, rest, ok := strings.Cut(d, ", managed by "+b.managedBy)
	if !ok {
		return d
	}
	return strings.TrimPrefix(rest, descriptionSep)
}

// settings returns what n and s hold of every setting.
func (b *Backend) settings(n *neutronNetwork, s *subnets.Subnet) network.Settings {
	desc, up, mtuValue := b.userDescription(n.Description), n.AdminStateUp, int32(n.MTU)
	out := network.Settings{Description: &desc, Tags: userTags(n.Tags), MTU: &mtuValue, AdminStateUp: &up}
	if s == nil {
		return out
	}
	dhcp := s.EnableDHCP
	out.EnableDHCP = &dhcp
	out.DNSNameservers = append([]string{}, s.DNSNameservers...)
	out.AllocationPools = []samplecrdv1.AllocationPoolSpec{}
	for _, p := range s.AllocationPools {
		out.AllocationPools = append(out.AllocationPools, samplecrdv1.AllocationPoolSpec{Start: canonicalIP(p.Start), End: canonicalIP(p.End)})
	}
	var routes []samplecrdv1.HostRoute
	for _, r := range s.HostRoutes {
		routes = append(routes, samplecrdv1.HostRoute{Destination: canonicalCIDR(r.DestinationCIDR), Nexthop: canonicalIP(r.NextHop)})
	}
	out.HostRoutes = network.SortedRoutes(routes)
	if sd, st := b.userDescription(s.Description), userTags(s.Tags); sd != desc || !slices.Equal(st, out.Tags) {
		out.SubnetDescription, out.SubnetTags = &sd, st
	}
	return out
}

func hostRoutes(rs []samplecrdv1.HostRoute) []subnets.HostRoute {
	out := []subnets.HostRoute{}
	for _, r := range rs {
		out = append(out, subnets.HostRoute{DestinationCIDR: r.Destination, NextHop: r.Nexthop})
	}
	return out
}

func specPools(ps []samplecrdv1.AllocationPoolSpec) []subnets.AllocationPool {
	out := []subnets.AllocationPool{}
	for _, p := range ps {
		out = append(out, subnets.AllocationPool{Start: p.Start, End: p.End})
	}
	return out
}

// networkCreateOpts returns the network POST of desired.
func (b *Backend) networkCreateOpts(desired network.Network) networks.CreateOptsBuilder {
	set := desired.Settings
	adminUp := true
	if set.AdminStateUp != nil {
		adminUp = *set.AdminStateUp
	}
	var opts networks.CreateOptsBuilder = networks.CreateOpts{
		Name: displayName(desired.Namespace, desired.Name), Description: b.describeWith(desired, set.Description, true), AdminStateUp: &adminUp,
	}
	if set.MTU != nil {
		opts = mtu.CreateOptsExt{CreateOptsBuilder: opts, MTU: int(*set.MTU)}
	}
	return opts
}

// subnetSettings sets in opts the subnet settings of desired.
func subnetSettings(opts *subnets.CreateOpts, set network.Settings) {
	opts.EnableDHCP = set.EnableDHCP
	opts.DNSNameservers = set.DNSNameservers
	if set.AllocationPools != nil {
		opts.AllocationPools = specPools(set.AllocationPools)
	}
	if set.HostRoutes != nil {
		opts.HostRoutes = hostRoutes(set.HostRoutes)
	}
}

// Update implements network.Backend: a PUT of the subnet when its
// gateway or a subnet setting differs, then one of the network when a
// network setting does, then a PUT of the tags of each whose user tags
// (or, the subnet's, router mark) differ, and the router interface added
// or removed (a list of routers first, to find one by name); nothing
// when all match.
func (b *Backend) Update(ctx context.Context, cur, desired network.Network) (*network.Network, error) {
	if cur.SubnetID == "" || cur.NetworkID == "" || cur.CIDR == "" || cur.Observed == nil || cur.ObservedSubnet == nil {
		n, s, err := b.get(ctx, cur.UID)
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, fmt.Errorf("update: subnet of neutron network %s: %w", n.ID, network.ErrNotFound)
		}
		cur = *b.toNetwork(n, s)
		if err := b.readInterface(ctx, &cur, s); err != nil {
			return nil, err
		}
	}
	gateway := desired.Gateway
	if gateway == "" {
		gateway = cur.Gateway
	}
	want, held := desired.Settings, cur.Settings
	out := cur
	// Created by us, our text naming the Network starts the
	// description (restored if someone edited it away); adopted, the
	// Network's text alone.
	ours := !desired.Imported

	// The router: resolved first (a name), the old interface removed
	// before its mark, the new one added after its mark (see router.go).
	// The old one goes before the subnet changes: its port holds the
	// gateway address, and Neutron refuses a new gateway while it does
	// (spec.router removed and the gateway changed in one edit).
	mark := routerMark(out.ObservedSubnet.Tags)
	newMark, attach := mark, false
	if desired.Router == nil {
		newMark = ""
	} else if network.RouterDiffers(desired, cur) != "" {
		id, err := b.resolveRouter(ctx, *desired.Router)
		if err != nil {
			return nil, err
		}
		if id != mark {
			// A new attachment (not the repair of ours): an interface
			// someone else added there is never taken over, so that
			// removing spec.router never removes it.
			if err := b.checkNoInterface(ctx, id, cur.SubnetID); err != nil {
				return nil, err
			}
		}
		newMark, attach = id, true
	}
	if mark != "" && mark != newMark {
		if err := b.removeInterface(ctx, mark, cur.SubnetID); err != nil {
			return nil, err
		}
		out.RouterID, out.RouterPortID = "", ""
	}

	// The subnet.
	var sopts subnets.UpdateOpts
	subnetDiffers := false
	if !network.SameIP(cur.Gateway, gateway) {
		gw := gateway
		sopts.GatewayIP, subnetDiffers = &gw, true
		if want.AllocationPools == nil {
			// Neutron refuses a gateway inside an allocation pool, and a
			// subnet created without pools has every address but the
			// gateway in one: its default pools move with the gateway;
			// pools someone set stay, the gateway taken out of them.
			pools, changed, err := movedPools(cur.CIDR, cur.Gateway, gateway, specPools(held.AllocationPools))
			if err != nil {
				return nil, network.Permanent("update gateway of subnet", samplecrdv1.ReasonBackendRejected, err)
			}
			if changed {
				sopts.AllocationPools = pools
			}
		}
	}
	only := func(s network.Settings) bool { return len(s.Diff(held)) > 0 }
	if want.AllocationPools != nil && only(network.Settings{AllocationPools: want.AllocationPools}) || want.AllocationPools != nil && sopts.GatewayIP != nil {
		sopts.AllocationPools, subnetDiffers = specPools(want.AllocationPools), true
	}
	if want.EnableDHCP != nil && only(network.Settings{EnableDHCP: want.EnableDHCP}) {
		sopts.EnableDHCP, subnetDiffers = want.EnableDHCP, true
	}
	if want.DNSNameservers != nil && only(network.Settings{DNSNameservers: want.DNSNameservers}) {
		dns := append([]string{}, want.DNSNameservers...)
		sopts.DNSNameservers, subnetDiffers = &dns, true
	}
	if want.HostRoutes != nil && only(network.Settings{HostRoutes: want.HostRoutes}) {
		routes := hostRoutes(want.HostRoutes)
		sopts.HostRoutes, subnetDiffers = &routes, true
	}
	if want.Description != nil && (network.Settings{Description: want.Description}).Diff(network.Settings{Description: subnetOr(held.SubnetDescription, held.Description)}) != nil {
		d := b.describeWith(cur, want.Description, ours)
		sopts.Description, subnetDiffers = &d, true
	}
	if subnetDiffers {
		rctx, cancel := b.request(ctx)
		s, err := subnets.Update(rctx, b.client, cur.SubnetID, sopts).Extract()
		cancel()
		if err != nil {
			return nil, classify("update subnet "+cur.SubnetID, err)
		}
		klog.FromContext(ctx).Info("Updated Neutron subnet", "uid", cur.UID, "networkID", cur.NetworkID, "subnetID", s.ID,
			"oldGateway", cur.Gateway, "gateway", s.GatewayIP)
		out.CIDR, out.Gateway = canonicalCIDR(s.CIDR), canonicalIP(s.GatewayIP)
		out.ObservedSubnet = observeSubnet(s)
		n := cur.Observed.DeepCopy()
		n.RevisionNumber++ // an updated subnet revises its network
		out.Observed = n
	}

	// The network.
	var nopts networks.UpdateOpts
	networkDiffers := false
	if want.AdminStateUp != nil && only(network.Settings{AdminStateUp: want.AdminStateUp}) {
		nopts.AdminStateUp, networkDiffers = want.AdminStateUp, true
	}
	if want.Description != nil && (network.Settings{Description: want.Description}).Diff(network.Settings{Description: held.Description}) != nil {
		d := b.describeWith(cur, want.Description, ours)
		nopts.Description, networkDiffers = &d, true
	}
	var nbuilder networks.UpdateOptsBuilder = nopts
	if want.MTU != nil && only(network.Settings{MTU: want.MTU}) {
		nbuilder, networkDiffers = mtu.UpdateOptsExt{UpdateOptsBuilder: nopts, MTU: int(*want.MTU)}, true
	}
	if networkDiffers {
		rctx, cancel := b.request(ctx)
		var n neutronNetwork
		err := networks.Update(rctx, b.client, cur.NetworkID, nbuilder).ExtractInto(&n)
		cancel()
		if err != nil {
			return nil, classify("update network "+cur.NetworkID, err)
		}
		klog.FromContext(ctx).Info("Updated Neutron network", "uid", cur.UID, "networkID", n.ID)
		out.Observed = observeNetwork(&n)
	}

	// The tags: the user's, and the subnet's router mark.
	if want.Tags != nil && !slices.Equal(userTags(out.Observed.Tags), want.Tags) {
		tags, err := b.replaceTags(ctx, "networks", cur.NetworkID, withTags(out.Observed.Tags, nil, want.Tags))
		if err != nil {
			return nil, err
		}
		o := out.Observed.DeepCopy()
		o.Tags, o.RevisionNumber = tags, o.RevisionNumber+1
		out.Observed = network.NormalizeNetwork(o)
	}
	subTags := out.ObservedSubnet.Tags
	if want.Tags != nil {
		subTags = withTags(subTags, nil, want.Tags)
	}
	if subTags = withMark(subTags, newMark); !slices.Equal(slices.Sorted(slices.Values(subTags)), out.ObservedSubnet.Tags) {
		tags, err := b.replaceTags(ctx, "subnets", cur.SubnetID, subTags)
		if err != nil {
			return nil, err
		}
		o := out.ObservedSubnet.DeepCopy()
		o.Tags, o.RevisionNumber = tags, o.RevisionNumber+1
		out.ObservedSubnet = network.NormalizeSubnet(o)
	}
	if attach {
		port, err := b.addInterface(ctx, newMark, cur.SubnetID)
		if err != nil {
			if network.IsPermanent(err) && newMark != mark {
				// Refused: the mark goes, or a scan would take an
				// interface on that router for ours.
				if _, uerr := b.replaceTags(ctx, "subnets", cur.SubnetID, withMark(out.ObservedSubnet.Tags, mark)); uerr != nil {
					return nil, uerr
				}
			}
			return nil, err
		}
		out.RouterID, out.RouterPortID = newMark, port
	}
	out.Settings = b.settingsOf(out.Observed, out.ObservedSubnet)
	return &out, nil
}

func subnetOr(subnet, network *string) *string {
	if subnet != nil {
		return subnet
	}
	return network
}

// settingsOf returns the settings of the observations of a network and
// its subnet (what Update knows after its writes).
func (b *Backend) settingsOf(o *samplecrdv1.NetworkObservation, s *samplecrdv1.SubnetObservation) network.Settings {
	n := &neutronNetwork{}
	n.Description, n.Tags, n.MTU = o.Description, o.Tags, int(o.MTU)
	if o.AdminStateUp != nil {
		n.AdminStateUp = *o.AdminStateUp
	}
	sub := &subnets.Subnet{EnableDHCP: s.EnableDHCP, DNSNameservers: s.DNSNameservers, Description: s.Description, Tags: s.Tags}
	for _, p := range s.AllocationPools {
		sub.AllocationPools = append(sub.AllocationPools, subnets.AllocationPool{Start: p.Start, End: p.End})
	}
	for _, r := range s.HostRoutes {
		sub.HostRoutes = append(sub.HostRoutes, subnets.HostRoute{DestinationCIDR: r.Destination, NextHop: r.Nexthop})
	}
	return b.settings(n, sub)
}
