package neutron

import (
	"fmt"
	"math/big"
	"net/netip"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// allocationPools returns the allocation pools Neutron gives a subnet of
// cidr created with gateway and no pools of its own (neutron.ipam.utils.
// generate_pools): every address but the gateway, less the network and
// broadcast addresses of an IPv4 subnet larger than /31, and less the
// subnet-router anycast (first) address of an IPv6 subnet.
func allocationPools(cidr, gateway string) ([]subnets.AllocationPool, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("subnet cidr %q: %w", cidr, err)
	}
	p = p.Masked()
	first, last := p.Addr(), lastAddr(p)
	if first == last {
		return []subnets.AllocationPool{{Start: first.String(), End: last.String()}}, nil
	}
	switch {
	case p.Addr().Is4() && p.Bits() <= 30:
		first, last = first.Next(), last.Prev()
	case p.Addr().Is6():
		first = first.Next()
	}
	gw, err := netip.ParseAddr(gateway)
	if err != nil || !p.Contains(gw) || gw.Compare(first) < 0 || gw.Compare(last) > 0 {
		// Outside the range (or the network/broadcast address, which
		// Neutron refuses anyway): one pool.
		return []subnets.AllocationPool{{Start: first.String(), End: last.String()}}, nil
	}
	var pools []subnets.AllocationPool
	if gw != first {
		pools = append(pools, subnets.AllocationPool{Start: first.String(), End: gw.Prev().String()})
	}
	if gw != last {
		pools = append(pools, subnets.AllocationPool{Start: gw.Next().String(), End: last.String()})
	}
	return pools, nil
}

// lastAddr returns the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	n := new(big.Int).SetBytes(b)
	hostBits := len(b)*8 - p.Bits()
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(hostBits)), big.NewInt(1))
	n.Or(n, mask)
	out := make([]byte, len(b))
	n.FillBytes(out)
	a, _ := netip.AddrFromSlice(out)
	return a
}
