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

// movedPools returns the allocation pools a subnet of cidr holding pools
// (held, in Neutron's form) gets when its gateway moves from old to
// gateway, the spec setting none: Neutron's default pools move with the
// gateway (the default for the new one); pools someone else set stay as
// they are, but for the new gateway taken out of the one holding it
// (Neutron refuses a gateway inside a pool). changed is false when held
// is to be left alone.
func movedPools(cidr, old, gateway string, held []subnets.AllocationPool) (pools []subnets.AllocationPool, changed bool, err error) {
	def, err := allocationPools(cidr, old)
	if err != nil {
		return nil, false, err
	}
	if len(held) == 0 || samePools(held, def) {
		pools, err := allocationPools(cidr, gateway)
		return pools, true, err
	}
	gw, err := netip.ParseAddr(gateway)
	if err != nil {
		return nil, false, fmt.Errorf("gateway %q: %w", gateway, err)
	}
	for _, p := range held {
		start, err1 := netip.ParseAddr(p.Start)
		end, err2 := netip.ParseAddr(p.End)
		if err1 != nil || err2 != nil || gw.Compare(start) < 0 || gw.Compare(end) > 0 {
			pools = append(pools, p)
			continue
		}
		changed = true
		if gw != start {
			pools = append(pools, subnets.AllocationPool{Start: p.Start, End: gw.Prev().String()})
		}
		if gw != end {
			pools = append(pools, subnets.AllocationPool{Start: gw.Next().String(), End: p.End})
		}
	}
	return pools, changed, nil
}

// samePools reports whether a and b are the same pools, in order, with
// addresses compared parsed.
func samePools(a, b []subnets.AllocationPool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		sa, ea := netip.ParseAddr(a[i].Start)
		sb, eb := netip.ParseAddr(b[i].Start)
		xa, fa := netip.ParseAddr(a[i].End)
		xb, fb := netip.ParseAddr(b[i].End)
		if ea != nil || eb != nil || fa != nil || fb != nil || sa != sb || xa != xb {
			return false
		}
	}
	return true
}
