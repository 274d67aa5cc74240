package network

import (
	"strings"
	"testing"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

func ptr[T any](v T) *T { return &v }

// TestSettingsDiff: only what the spec sets is compared; nil is unset, an
// empty list is "none"; addresses compare parsed; tags, pools and routes
// as sets (Neutron keeps no order of them), DNS servers in order (clients
// try them in it); a subnet's own tags and description, when a backend
// keeps them apart, are compared too.
func TestSettingsDiff(t *testing.T) {
	held := Settings{
		Description: ptr("team a"), Tags: []string{"a", "b"}, MTU: ptr(int32(1450)), AdminStateUp: ptr(true), EnableDHCP: ptr(true),
		DNSNameservers:  []string{"10.0.0.53", "10.0.0.54"},
		AllocationPools: []samplecrdv1.AllocationPoolSpec{{Start: "10.0.0.100", End: "10.0.0.200"}, {Start: "10.0.0.2", End: "10.0.0.50"}},
		HostRoutes:      []samplecrdv1.HostRoute{{Destination: "10.9.0.0/16", Nexthop: "10.0.0.254"}, {Destination: "10.8.0.0/16", Nexthop: "10.0.0.254"}},
	}
	for _, tc := range []struct {
		name string
		spec Settings
		held *Settings // nil: held
		want []string  // substrings, one per difference; nil: none
	}{
		{name: "nothing set", spec: Settings{}},
		{name: "every field as held, lists reordered", spec: Settings{
			Description: ptr("team a"), Tags: []string{"b", "a"}, MTU: ptr(int32(1450)), AdminStateUp: ptr(true), EnableDHCP: ptr(true),
			DNSNameservers:  []string{"10.0.0.53", "10.0.0.54"},
			AllocationPools: []samplecrdv1.AllocationPoolSpec{{Start: "10.0.0.2", End: "10.0.0.50"}, {Start: "10.0.0.100", End: "10.0.0.200"}},
			HostRoutes:      []samplecrdv1.HostRoute{{Destination: "10.8.0.0/16", Nexthop: "10.0.0.254"}, {Destination: "10.9.0.0/16", Nexthop: "10.0.0.254"}},
		}},
		{name: "dns servers reordered", spec: Settings{DNSNameservers: []string{"10.0.0.54", "10.0.0.53"}}, want: []string{"dnsNameservers is [10.0.0.53, 10.0.0.54] in the backend"}},
		{name: "empty lists remove", spec: Settings{Tags: []string{}, DNSNameservers: []string{}, HostRoutes: []samplecrdv1.HostRoute{}},
			want: []string{"tags is [a, b] in the backend, [] in the spec", "dnsNameservers", "hostRoutes"}},
		{name: "empty lists match none", spec: Settings{Tags: []string{}, DNSNameservers: []string{}}, held: &Settings{Tags: []string{}, DNSNameservers: []string{}}},
		{name: "ipv6 spellings", spec: Settings{DNSNameservers: []string{"fd00::53"}}, held: &Settings{DNSNameservers: []string{"fd00:0::53"}}},
		{name: "scalars", spec: Settings{MTU: ptr(int32(1400)), AdminStateUp: ptr(false), EnableDHCP: ptr(false), Description: ptr("")},
			want: []string{`description is "team a" in the backend, "" in the spec`, "mtu is 1450 in the backend, 1400 in the spec", "adminStateUp is true", "enableDHCP is true"}},
		{name: "not held at all", spec: Settings{MTU: ptr(int32(1400))}, held: &Settings{}, want: []string{"mtu is unset in the backend"}},
		{name: "the subnet's tags and description apart", spec: Settings{Tags: []string{"a"}, Description: ptr("x")},
			held: &Settings{Tags: []string{"a"}, Description: ptr("x"), SubnetTags: []string{"a", "rogue"}, SubnetDescription: ptr("y")},
			want: []string{`subnet description is "y"`, "subnet tags is [a, rogue]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := held
			if tc.held != nil {
				h = *tc.held
			}
			got := tc.spec.Diff(h)
			if len(got) != len(tc.want) {
				t.Fatalf("Diff = %q, want %d differences like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("difference %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// TestRouterDiffers: a router asked for and none held, one held and none
// asked for, another ID: differences; a name is whatever router it
// resolved to when held.
func TestRouterDiffers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		want    *RouterRef
		held    string
		differs bool
	}{
		{"none, none", nil, "", false},
		{"asked, none held", &RouterRef{Name: "edge"}, "", true},
		{"by name, held", &RouterRef{Name: "edge"}, "r1", false},
		{"by id, held", &RouterRef{ID: "r1"}, "r1", false},
		{"by id, another held", &RouterRef{ID: "r2"}, "r1", true},
		{"held, not asked for", nil, "r1", true},
	} {
		if got := RouterDiffers(Network{Router: tc.want}, Network{RouterID: tc.held}) != ""; got != tc.differs {
			t.Errorf("%s: RouterDiffers = %v, want %v", tc.name, got, tc.differs)
		}
	}
}
