package neutron

import (
	"fmt"
	"testing"
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
