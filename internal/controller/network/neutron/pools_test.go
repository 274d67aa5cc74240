package neutron

import (
	"fmt"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

func TestAllocationPools(t *testing.T) {
	for _, tc := range []struct {
		name, cidr, gateway, want string
	}{
		{"the seed's gateway", "192.168.0.0/16", "192.168.0.1", "[192.168.0.2-192.168.255.254]"},
		{"a gateway inside the range", "192.168.0.0/16", "192.168.0.254", "[192.168.0.1-192.168.0.253 192.168.0.255-192.168.255.254]"},
		{"the last usable address", "10.0.0.0/24", "10.0.0.254", "[10.0.0.1-10.0.0.253]"},
		{"a /30", "10.0.0.0/30", "10.0.0.2", "[10.0.0.1-10.0.0.1]"},
		{"a /31 has no network or broadcast address", "10.0.0.0/31", "10.0.0.0", "[10.0.0.1-10.0.0.1]"},
		{"a /32", "10.0.0.7/32", "10.0.0.7", "[10.0.0.7-10.0.0.7]"},
		{"a gateway outside the range", "10.0.0.0/24", "10.0.0.255", "[10.0.0.1-10.0.0.254]"},
		{"IPv6 keeps the last address", "fd00:20::/64", "fd00:20::1", "[fd00:20::2-fd00:20::ffff:ffff:ffff:ffff]"},
		{"IPv6 gateway last", "fd00:20::/126", "fd00:20::3", "[fd00:20::1-fd00:20::2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pools, err := allocationPools(tc.cidr, tc.gateway)
			if err != nil {
				t.Fatal(err)
			}
			got := "["
			for i, p := range pools {
				if i > 0 {
					got += " "
				}
				got += fmt.Sprintf("%s-%s", p.Start, p.End)
			}
			got += "]"
			if got != tc.want {
				t.Errorf("allocationPools(%s, %s) = %s, want %s", tc.cidr, tc.gateway, got, tc.want)
			}
		})
	}
	if _, err := allocationPools("not a cidr", "10.0.0.1"); err == nil {
		t.Error("allocationPools accepted a bad cidr")
	}
}

// A gateway change moves Neutron's default pools with the gateway, and
// leaves pools an operator set as they are: the new gateway taken out of
// the one holding it, nothing written when none does.
func TestMovedPools(t *testing.T) {
	pool := func(s, e string) subnets.AllocationPool { return subnets.AllocationPool{Start: s, End: e} }
	for _, tc := range []struct {
		name, old, gateway string
		held, want         []subnets.AllocationPool
		changed            bool
	}{
		{name: "the default pools move", old: "10.0.0.1", gateway: "10.0.0.254", held: []subnets.AllocationPool{pool("10.0.0.2", "10.0.0.254")},
			want: []subnets.AllocationPool{pool("10.0.0.1", "10.0.0.253")}, changed: true},
		{name: "an operator's pools, the gateway outside them: untouched", old: "10.0.0.1", gateway: "10.0.0.254",
			held: []subnets.AllocationPool{pool("10.0.0.100", "10.0.0.200")}, want: []subnets.AllocationPool{pool("10.0.0.100", "10.0.0.200")}},
		{name: "an operator's pools, the gateway inside one: taken out of it alone", old: "10.0.0.1", gateway: "10.0.0.150",
			held: []subnets.AllocationPool{pool("10.0.0.10", "10.0.0.20"), pool("10.0.0.100", "10.0.0.200")},
			want: []subnets.AllocationPool{pool("10.0.0.10", "10.0.0.20"), pool("10.0.0.100", "10.0.0.149"), pool("10.0.0.151", "10.0.0.200")}, changed: true},
		{name: "the gateway at a pool's end", old: "10.0.0.1", gateway: "10.0.0.200",
			held: []subnets.AllocationPool{pool("10.0.0.100", "10.0.0.200")}, want: []subnets.AllocationPool{pool("10.0.0.100", "10.0.0.199")}, changed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed, err := movedPools("10.0.0.0/24", tc.old, tc.gateway, tc.held)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed || !samePools(got, tc.want) {
				t.Errorf("movedPools = %v (changed %v), want %v (changed %v)", got, changed, tc.want, tc.changed)
			}
		})
	}
}
