package neutron

// Import, Detach and Observe: existing networks bound, released, read in
// batches.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Import implements network.Backend: a GET of the network and a list of
// its subnets (any project's: a provider network's are the admin's), then,
// to adopt, a tag write for each of the two not marked yet.
func (b *Backend) Import(ctx context.Context, desired network.Network, ref network.Ref, adopt bool) (*network.Network, error) {
	op := "import " + ref.String()
	n, err := b.findImported(ctx, ref)
	if err != nil {
		return nil, err
	}
	subs, err := b.networkSubnets(ctx, n.ID)
	if err != nil {
		return nil, err
	}
	sub, err := pickImported(subs, desired.CIDR)
	if err != nil {
		return nil, network.Permanent(op, samplecrdv1.ReasonBackendRejected, err)
	}
	out := b.toNetwork(n, sub)
	out.UID, out.Namespace, out.Name = desired.UID, desired.Namespace, desired.Name
	if !adopt {
		return out, nil
	}
	if b.projectID != "" && (n.ProjectID != b.projectID || sub.ProjectID != b.projectID) {
		// Credentials with the admin role see (and may write) every
		// project's networks: adopting is for the project's own.
		return nil, network.Permanent(op, samplecrdv1.ReasonBackendRejected, fmt.Errorf(
			"network %s (subnet %s) is in another project (%s, %s) than the credentials' (%s): a Managed import adopts only its own project's networks; observe it with managementPolicy: Unmanaged",
			n.ID, sub.ID, n.ProjectID, sub.ProjectID, b.projectID))
	}
	for _, tags := range [][]string{n.Tags, sub.Tags} {
		if err := b.checkNotOthers(tags, desired.UID); err != nil {
			return nil, network.Permanent(op, samplecrdv1.ReasonBackendRejected, err)
		}
	}
	out.Existed = true
	want := b.adoptTags(desired)
	if !slices.Contains(n.Tags, b.uidTag(desired.UID)) {
		if err := b.claim(ctx, op, n.ID, desired.UID); err != nil {
			return nil, err
		}
		n.RevisionNumber++
	}
	if !containsAll(n.Tags, want) {
		tags, err := b.addTags(ctx, "networks", n.ID, n.Tags, want)
		if err != nil {
			return nil, err
		}
		n.tagged(tags)
		out.Existed = false
	}
	if !containsAll(sub.Tags, want) {
		tags, err := b.addTags(ctx, "subnets", sub.ID, sub.Tags, want)
		if err != nil {
			return nil, err
		}
		taggedSubnet(sub, tags)
		out.Existed = false
	}
	out.Observed, out.ObservedSubnet = observeNetwork(n), observeSubnet(sub)
	if !out.Existed {
		klog.FromContext(ctx).Info("Adopted Neutron network", "network", klog.KRef(desired.Namespace, desired.Name), "uid", desired.UID,
			"networkID", n.ID, "subnetID", sub.ID)
	}
	return out, nil
}

// Detach implements network.Backend: a list of the networks tagged with
// n.UID and one of their subnets, then a tag write for each that carries
// our tags.
func (b *Backend) Detach(ctx context.Context, n network.Network) error {
	if n.UID == "" {
		return nil
	}
	nets, err := b.findNetworks(ctx, n.UID)
	if err != nil {
		return err
	}
	for _, net := range nets {
		subs, err := b.listSubnets(ctx, subnets.ListOpts{NetworkID: net.ID, Tags: b.ownerTags(n.UID)})
		if err != nil {
			return err
		}
		// Subnets first: a network without our tags is never looked at
		// again, so it goes last.
		for _, s := range subs {
			if err := b.untag(ctx, "subnets", s.ID, s.Tags); err != nil {
				return err
			}
		}
		if err := b.untag(ctx, "networks", net.ID, net.Tags); err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Detached Neutron network: our tags removed, the network and subnet left", "uid", n.UID, "networkID", net.ID)
	}
	return nil
}

// Observe implements network.Backend: per batch of idsPerRequest network
// IDs, one list of the networks (filtered by the IDs) and one of their
// subnets (by the network IDs), any project's as for Import, the batches
// one after the other: 2 requests per 100 Networks. Each network's subnet
// is picked as Import picks it.
func (b *Backend) Observe(ctx context.Context, want []network.Network) ([]network.Network, error) {
	var ids []string
	for _, w := range want {
		if w.NetworkID != "" && !slices.Contains(ids, w.NetworkID) {
			ids = append(ids, w.NetworkID)
		}
	}
	nets := make(map[string]*neutronNetwork, len(ids))
	subs := make(map[string][]subnets.Subnet, len(ids))
	for batch := range slices.Chunk(ids, b.idsPerRequest) {
		found, err := b.listByIDs(ctx, batch)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			continue
		}
		foundIDs := make([]string, 0, len(found))
		for i := range found {
			nets[found[i].ID] = &found[i]
			foundIDs = append(foundIDs, found[i].ID)
		}
		ss, err := b.subnetsOf(ctx, foundIDs)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			subs[s.NetworkID] = append(subs[s.NetworkID], s)
		}
	}
	var out []network.Network
	for _, w := range want {
		n := nets[w.NetworkID]
		if n == nil {
			continue
		}
		sub, err := pickImported(subs[n.ID], w.CIDR)
		if err != nil {
			continue // Import says why
		}
		o := b.toNetwork(n, sub)
		o.UID, o.Namespace, o.Name = w.UID, w.Namespace, w.Name
		out = append(out, *o)
	}
	return out, nil
}

// byIDs filters a list of networks by several IDs: repeated id=
// parameters, which networks.ListOpts (one ID) cannot express and
// gophercloud's query builder writes for a slice.
type byIDs struct {
	IDs   []string `q:"id"`
	Limit int      `q:"limit"`
}

// byNetworkIDs filters a list of subnets by several network IDs.
type byNetworkIDs struct {
	NetworkIDs []string `q:"network_id"`
	Limit      int      `q:"limit"`
}

// listByIDs lists the networks of ids (at most idsPerRequest), any
// project's the credentials see.
func (b *Backend) listByIDs(ctx context.Context, ids []string) ([]neutronNetwork, error) {
	ctx, done := b.turn(ctx)
	defer done()
	return listAll(ctx, b.timeout, "list networks by id", networks.List(b.client, byIDs{IDs: ids, Limit: b.pageSize}), extractNetworks)
}

// subnetsOf lists the subnets of the networks of ids (at most
// idsPerRequest), any project's the credentials see.
func (b *Backend) subnetsOf(ctx context.Context, ids []string) ([]subnets.Subnet, error) {
	ctx, done := b.turn(ctx)
	defer done()
	return listAll(ctx, b.timeout, "list subnets by network id", subnets.List(b.client, byNetworkIDs{NetworkIDs: ids, Limit: b.pageSize}), subnets.ExtractSubnets)
}

// pickImported returns the subnet of an imported network: the one of cidr
// when set, else the only one.
func pickImported(subs []subnets.Subnet, cidr string) (*subnets.Subnet, error) {
	var ids []string
	for i := range subs {
		if cidr != "" && network.SameCIDR(canonicalCIDR(subs[i].CIDR), cidr) {
			return &subs[i], nil
		}
		ids = append(ids, subs[i].ID+" ("+subs[i].CIDR+")")
	}
	switch {
	case cidr != "":
		return nil, fmt.Errorf("it has no subnet with cidr %s (it has %s): fix spec.cidr or remove it", cidr, orNone(ids))
	case len(subs) == 1:
		return &subs[0], nil
	case len(subs) == 0:
		return nil, errors.New("it has no subnet: add one to it, or import another network")
	default:
		return nil, fmt.Errorf("it has several subnets (%s): set spec.cidr to the one to use", strings.Join(ids, ", "))
	}
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// findImported returns the network ref names: a GET by ID, or one list
// filtered by name and tags (any project's network the credentials see:
// shared and external ones too), checked again here, since Neutron's
// name match follows its database's collation (case-insensitive on MySQL).
func (b *Backend) findImported(ctx context.Context, ref network.Ref) (*neutronNetwork, error) {
	op := "import " + ref.String()
	if ref.NetworkID != "" {
		rctx, cancel := b.request(ctx)
		defer cancel()
		var n neutronNetwork
		if err := networks.Get(rctx, b.client, ref.NetworkID).ExtractInto(&n); err != nil {
			return nil, classify(op, err)
		}
		return &n, nil
	}
	lctx, done := b.turn(ctx)
	defer done()
	opts := networks.ListOpts{Name: ref.Name, Tags: strings.Join(ref.Tags, ",")}
	all, err := listAll(lctx, b.timeout, "list networks", networks.List(b.client, opts), extractNetworks)
	if err != nil {
		return nil, err
	}
	var match *neutronNetwork
	var ids []string
	for i := range all {
		if ref.Matches(all[i].Name, all[i].Tags) {
			match = &all[i]
			ids = append(ids, all[i].ID)
		}
	}
	switch {
	case len(ids) > 1:
		slices.Sort(ids)
		return nil, network.ErrAmbiguous(ref, ids)
	case match == nil:
		return nil, fmt.Errorf("%s: %w", op, network.ErrNotFound)
	}
	return match, nil
}

// networkSubnets lists the subnets of a network, whatever their project.
func (b *Backend) networkSubnets(ctx context.Context, networkID string) ([]subnets.Subnet, error) {
	ctx, done := b.turn(ctx)
	defer done()
	return listAll(ctx, b.timeout, "list subnets", subnets.List(b.client, subnets.ListOpts{NetworkID: networkID}), subnets.ExtractSubnets)
}
