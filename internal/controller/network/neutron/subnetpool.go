package neutron

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/subnetpools"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// A Network's spec.subnetPool: its subnet's POST names the pool and the
// prefix length instead of a CIDR and a gateway, and Neutron allocates a
// free range and takes its first address as the gateway. The POST needs
// the pool's IP version, which one request before it reads: the pool's
// GET, or a list of the pools of that name (any project's the credentials
// see: a shared pool is the admin's).

// resolvePool returns the ID and IP version of the pool ref names.
func (b *Backend) resolvePool(ctx context.Context, ref network.SubnetPoolRef) (string, gophercloud.IPVersion, error) {
	op := "create subnet from " + ref.String()
	notFound := func(err error) error {
		return network.Permanent(op, samplecrdv1.ReasonSubnetPoolNotFound, fmt.Errorf(
			"%w (no such subnet pool, or one the project cannot use: create or share it, or fix spec.subnetPool)", err))
	}
	if ref.ID != "" {
		rctx, cancel := b.request(ctx)
		p, err := subnetpools.Get(rctx, b.client, ref.ID).Extract()
		cancel()
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return "", 0, notFound(describe(err))
		}
		if err != nil {
			return "", 0, classify("get "+ref.String(), err)
		}
		return p.ID, gophercloud.IPVersion(p.IPversion), nil
	}
	lctx, done := b.turn(ctx)
	defer done()
	all, err := listAll(lctx, b.timeout, "list subnet pools", subnetpools.List(b.client, subnetpools.ListOpts{Name: ref.Name}), subnetpools.ExtractSubnetPools)
	if err != nil {
		return "", 0, err
	}
	var match []subnetpools.SubnetPool
	for _, p := range all {
		if p.Name == ref.Name {
			match = append(match, p)
		}
	}
	switch len(match) {
	case 0:
		return "", 0, notFound(fmt.Errorf("no subnet pool of that name"))
	case 1:
		return match[0].ID, gophercloud.IPVersion(match[0].IPversion), nil
	default:
		var ids []string
		for _, p := range match {
			ids = append(ids, p.ID)
		}
		return "", 0, network.ErrSameName(op, "subnet pools", ids)
	}
}
