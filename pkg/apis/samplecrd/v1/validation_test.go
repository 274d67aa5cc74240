package v1

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// specCases are shared by the ValidateSpec test and the CRD (OpenAPI + CEL)
// test, so both validations are held to the same expectations.
var specCases = []struct {
	name    string
	spec    NetworkSpec
	wantErr []string // substrings of the error; nil means valid
}{
	{name: "seed example", spec: NetworkSpec{CIDR: "192.168.0.0/16", Gateway: "192.168.0.1"}},
	{name: "ipv4 /32", spec: NetworkSpec{CIDR: "10.1.2.3/32", Gateway: "10.1.2.3"}},
	{name: "ipv4 /0", spec: NetworkSpec{CIDR: "0.0.0.0/0", Gateway: "10.0.0.1"}},
	{name: "ipv4 last address", spec: NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "10.255.255.254"}},
	{name: "ipv6", spec: NetworkSpec{CIDR: "fd00:10::/64", Gateway: "fd00:10::1"}},
	{name: "ipv6 /128", spec: NetworkSpec{CIDR: "2001:db8::1/128", Gateway: "2001:db8::1"}},
	{name: "ipv6 longest", spec: NetworkSpec{CIDR: "2001:db8:1:2:3:4:5:0/112", Gateway: "2001:db8:1:2:3:4:5:1"}},

	{name: "empty", spec: NetworkSpec{}, wantErr: []string{"cidr is required unless import or subnetPool is set", "gateway is required unless import or subnetPool is set"}},
	{name: "empty cidr", spec: NetworkSpec{Gateway: "10.0.0.1"}, wantErr: []string{"spec.cidr", "cidr is required unless import or subnetPool is set: give the network's address range"}},
	{name: "empty gateway", spec: NetworkSpec{CIDR: "10.0.0.0/8"}, wantErr: []string{"spec.gateway", "gateway is required unless import or subnetPool is set: give the subnet's gateway"}},
	{name: "cidr not a cidr", spec: NetworkSpec{CIDR: "not-a-cidr", Gateway: "10.0.0.1"}, wantErr: []string{"cidr must be an IPv4 or IPv6 network in CIDR notation"}},
	{name: "cidr without prefix length", spec: NetworkSpec{CIDR: "10.0.0.0", Gateway: "10.0.0.1"}, wantErr: []string{"cidr must be an IPv4 or IPv6 network in CIDR notation"}},
	{name: "cidr prefix too long", spec: NetworkSpec{CIDR: "10.0.0.0/33", Gateway: "10.0.0.1"}, wantErr: []string{"cidr must be an IPv4 or IPv6 network in CIDR notation"}},
	{name: "cidr leading zeros", spec: NetworkSpec{CIDR: "010.0.0.0/8", Gateway: "10.0.0.1"}, wantErr: []string{"cidr must be an IPv4 or IPv6 network in CIDR notation"}},
	{name: "cidr with zone", spec: NetworkSpec{CIDR: "fe80::%eth0/64", Gateway: "fe80::1"}, wantErr: []string{"cidr must be an IPv4 or IPv6 network in CIDR notation"}},
	{name: "cidr ipv4-mapped ipv6", spec: NetworkSpec{CIDR: "::ffff:10.0.0.0/104", Gateway: "10.0.0.1"}, wantErr: []string{"cidr must be an IPv4 or IPv6 network in CIDR notation"}},
	{name: "cidr host bits set", spec: NetworkSpec{CIDR: "192.168.0.1/16", Gateway: "192.168.0.2"}, wantErr: []string{"cidr 192.168.0.1/16 has host bits set: write the network address"}},
	{name: "cidr ipv6 host bits set", spec: NetworkSpec{CIDR: "fd00::1/64", Gateway: "fd00::2"}, wantErr: []string{"cidr fd00::1/64 has host bits set"}},
	{name: "cidr not canonical", spec: NetworkSpec{CIDR: "FD00:0:0::/64", Gateway: "fd00::1"}, wantErr: []string{"cidr FD00:0:0::/64 is not in canonical form: write IPv6 in lowercase"}},
	{name: "cidr too long", spec: NetworkSpec{CIDR: "2001:0db8:0000:0000:0000:0000:0000:0000/0128", Gateway: "2001:db8::"}, wantErr: []string{"spec.cidr"}},
	{name: "gateway not an ip", spec: NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "gw.example.com"}, wantErr: []string{"gateway must be an IPv4 or IPv6 address"}},
	{name: "gateway is a cidr", spec: NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "10.0.0.1/8"}, wantErr: []string{"gateway must be an IPv4 or IPv6 address"}},
	{name: "gateway ipv4-mapped", spec: NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "::ffff:10.0.0.1"}, wantErr: []string{"gateway must be an IPv4 or IPv6 address"}},
	{name: "gateway not canonical", spec: NetworkSpec{CIDR: "fd00::/64", Gateway: "FD00::0001"}, wantErr: []string{"gateway FD00::0001 is not in canonical form: write IPv6 in lowercase"}},
	{name: "gateway too long", spec: NetworkSpec{CIDR: "fd00::/64", Gateway: "fd00:0000:0000:0000:0000:0000:0000:00001"}, wantErr: []string{"spec.gateway"}},
	{name: "gateway outside", spec: NetworkSpec{CIDR: "192.168.0.0/16", Gateway: "10.0.0.1"}, wantErr: []string{"gateway 10.0.0.1 is outside cidr 192.168.0.0/16: use an address inside the cidr"}},
	{name: "gateway outside ipv6", spec: NetworkSpec{CIDR: "fd00:10::/64", Gateway: "fd00:11::1"}, wantErr: []string{"gateway fd00:11::1 is outside cidr fd00:10::/64"}},
	{name: "family mismatch v4 cidr", spec: NetworkSpec{CIDR: "192.168.0.0/16", Gateway: "fd00::1"}, wantErr: []string{"gateway fd00::1 is an IPv6 address but cidr 192.168.0.0/16 is an IPv4 network"}},

	{name: "managed explicitly", spec: NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "10.0.0.1", ManagementPolicy: ManagementPolicyManaged, OnDelete: OnDeleteDelete}},
	{name: "managed, detach", spec: NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "10.0.0.1", OnDelete: OnDeleteDetach}},
	{name: "import by id, nothing else", spec: NetworkSpec{Import: &NetworkImport{NetworkID: "0b7a5f3e-5a1d-4c1e-9a57-2f1f3c0f6d11"}}},
	{name: "import by id, cidr and gateway", spec: NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "10.0.0.1", Import: &NetworkImport{NetworkID: "n1"}}},
	{name: "import by id, gateway only", spec: NetworkSpec{Gateway: "10.0.0.1", Import: &NetworkImport{NetworkID: "n1"}}},
	{name: "import, bad cidr", spec: NetworkSpec{CIDR: "10.0.0.1/8", Import: &NetworkImport{NetworkID: "n1"}}, wantErr: []string{"cidr 10.0.0.1/8 has host bits set"}},
	{name: "import by name", spec: NetworkSpec{Import: &NetworkImport{Filter: &NetworkFilter{Name: "provider"}}}},
	{name: "import by tags", spec: NetworkSpec{Import: &NetworkImport{Filter: &NetworkFilter{Tags: []string{"a", "b"}}}}},
	{name: "unmanaged import", spec: NetworkSpec{ManagementPolicy: ManagementPolicyUnmanaged, Import: &NetworkImport{NetworkID: "n1"}}},
	{name: "unmanaged with expectations", spec: NetworkSpec{ManagementPolicy: ManagementPolicyUnmanaged, CIDR: "10.0.0.0/8", Gateway: "10.0.0.1", Import: &NetworkImport{Filter: &NetworkFilter{Name: "x"}}}},
	{name: "managed import, detach", spec: NetworkSpec{OnDelete: OnDeleteDetach, Import: &NetworkImport{NetworkID: "n1"}}},
	{name: "import both id and filter", spec: NetworkSpec{Import: &NetworkImport{NetworkID: "n1", Filter: &NetworkFilter{Name: "x"}}},
		wantErr: []string{"import takes networkID or filter, not both: keep networkID"}},
	{name: "import neither id nor filter", spec: NetworkSpec{Import: &NetworkImport{}},
		wantErr: []string{"import needs networkID or filter: set networkID to the Neutron network's ID"}},
	{name: "import empty filter", spec: NetworkSpec{Import: &NetworkImport{Filter: &NetworkFilter{}}},
		wantErr: []string{"filter must set name or tags: an empty filter would match every network"}},
	{name: "import filter duplicate tags", spec: NetworkSpec{Import: &NetworkImport{Filter: &NetworkFilter{Tags: []string{"a", "a"}}}},
		wantErr: []string{"spec.import.filter.tags[1]: Duplicate value"}},
	{name: "import filter tag with a comma, two tags to Neutron", spec: NetworkSpec{Import: &NetworkImport{Filter: &NetworkFilter{Tags: []string{"env=prod,team=a"}}}},
		wantErr: []string{"filter tag env=prod,team=a contains a comma, which Neutron reads as two tags"}},
	{name: "21 host routes, past Neutron's default limit", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", HostRoutes: hostRoutes(21)},
		wantErr: []string{"spec.hostRoutes"}},
	{name: "20 host routes", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", HostRoutes: hostRoutes(20)}},
	{name: "import filter empty tag", spec: NetworkSpec{Import: &NetworkImport{Filter: &NetworkFilter{Tags: []string{""}}}},
		wantErr: []string{"spec.import.filter.tags[0]"}},
	{name: "unmanaged without import", spec: NetworkSpec{ManagementPolicy: ManagementPolicyUnmanaged, CIDR: "10.0.0.0/8", Gateway: "10.0.0.1"},
		wantErr: []string{"spec.import", "an Unmanaged Network only observes an existing Neutron network: set import.networkID or import.filter"}},
	{name: "ondelete on unmanaged", spec: NetworkSpec{ManagementPolicy: ManagementPolicyUnmanaged, OnDelete: OnDeleteDetach, Import: &NetworkImport{NetworkID: "n1"}},
		wantErr: []string{"spec.onDelete", "onDelete applies only to Managed Networks: deleting an Unmanaged Network never touches Neutron; remove onDelete"}},
	{name: "ondelete delete on unmanaged", spec: NetworkSpec{ManagementPolicy: ManagementPolicyUnmanaged, OnDelete: OnDeleteDelete, Import: &NetworkImport{NetworkID: "n1"}},
		wantErr: []string{"onDelete applies only to Managed Networks"}},
	{name: "unknown policy", spec: NetworkSpec{ManagementPolicy: "Observed", CIDR: "10.0.0.0/8", Gateway: "10.0.0.1"},
		wantErr: []string{"spec.managementPolicy", `"Managed", "Unmanaged"`}},
	{name: "unknown ondelete", spec: NetworkSpec{OnDelete: "Orphan", CIDR: "10.0.0.0/8", Gateway: "10.0.0.1"},
		wantErr: []string{"spec.onDelete", `"Delete", "Detach"`}},
	{name: "every setting", spec: withSettings(NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1"})},
	{name: "a description and a tag of the most characters, three bytes each", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1",
		Description: ptr(strings.Repeat("網", MaxDescriptionLength)), Tags: []string{strings.Repeat("網", MaxTagLength)}}},
	{name: "a description of one character too many", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1",
		Description: ptr(strings.Repeat("網", MaxDescriptionLength+1))}, wantErr: []string{"spec.description"}},
	{name: "settings emptied", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Tags: []string{}, DNSNameservers: []string{}, HostRoutes: []HostRoute{}}},
	{name: "settings on a managed import", spec: withSettings(NetworkSpec{Import: &NetworkImport{NetworkID: "n1"}})},
	{name: "settings on unmanaged", spec: NetworkSpec{ManagementPolicy: ManagementPolicyUnmanaged, Import: &NetworkImport{NetworkID: "n1"}, EnableDHCP: ptr(false)},
		wantErr: []string{"an Unmanaged Network never writes to Neutron: remove description"}},
	{name: "subnet pool by name", spec: NetworkSpec{SubnetPool: &SubnetPoolRef{Name: "shared"}, PrefixLength: ptr(int32(26))}},
	{name: "subnet pool by id, with settings", spec: NetworkSpec{SubnetPool: &SubnetPoolRef{ID: "p1"}, DNSNameservers: []string{"10.0.0.53"}, Router: &RouterRef{Name: "edge"}}},
	{name: "subnet pool and cidr", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", SubnetPool: &SubnetPoolRef{Name: "shared"}},
		wantErr: []string{"subnetPool takes the subnet's range from the pool: remove cidr, gateway and allocationPools"}},
	{name: "subnet pool and import", spec: NetworkSpec{Import: &NetworkImport{NetworkID: "n1"}, SubnetPool: &SubnetPoolRef{Name: "shared"}},
		wantErr: []string{"subnetPool takes the subnet's range from the pool"}},
	{name: "subnet pool by both", spec: NetworkSpec{SubnetPool: &SubnetPoolRef{ID: "p1", Name: "shared"}},
		wantErr: []string{"subnetPool takes id or name, exactly one"}},
	{name: "prefix length without a pool", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", PrefixLength: ptr(int32(26))},
		wantErr: []string{"prefixLength applies only with subnetPool"}},
	{name: "prefix length too long", spec: NetworkSpec{SubnetPool: &SubnetPoolRef{Name: "shared"}, PrefixLength: ptr(int32(129))},
		wantErr: []string{"spec.prefixLength"}},
	{name: "router by id", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Router: &RouterRef{ID: "r1"}}},
	{name: "router by name", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Router: &RouterRef{Name: "edge"}}},
	{name: "router by both", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Router: &RouterRef{ID: "r1", Name: "edge"}},
		wantErr: []string{"router takes id or name, exactly one"}},
	{name: "router by neither", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Router: &RouterRef{}},
		wantErr: []string{"router takes id or name, exactly one"}},
	{name: "router on unmanaged", spec: NetworkSpec{ManagementPolicy: ManagementPolicyUnmanaged, Import: &NetworkImport{NetworkID: "n1"}, Router: &RouterRef{ID: "r1"}},
		wantErr: []string{"an Unmanaged Network never writes to Neutron"}},
	{name: "tag with our prefix", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Tags: []string{"k8s-network-uid=x"}},
		wantErr: []string{"tag k8s-network-uid=x uses a prefix the controller keeps for its own tags"}},
	{name: "tag managed-by", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Tags: []string{"managed-by=me"}},
		wantErr: []string{"tag managed-by=me uses a prefix the controller keeps"}},
	{name: "tag with a comma", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Tags: []string{"a,b"}},
		wantErr: []string{"tag a,b contains a comma"}},
	{name: "tag too long", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", Tags: []string{strings.Repeat("t", 61)}},
		wantErr: []string{"spec.tags[0]"}},
	{name: "mtu too small", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", MTU: ptr(int32(67))}, wantErr: []string{"spec.mtu"}},
	{name: "dns not an ip", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", DNSNameservers: []string{"dns.example.com"}},
		wantErr: []string{"dns nameserver dns.example.com must be an IP address in canonical form"}},
	{name: "dns of the other family", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", DNSNameservers: []string{"fd00::53"}},
		wantErr: []string{"dnsNameservers and hostRoutes must be of the cidr's IP family"}},
	{name: "pool outside cidr", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", AllocationPools: []AllocationPoolSpec{{Start: "10.0.0.10", End: "10.0.1.20"}}},
		wantErr: []string{"every allocation pool must start and end inside cidr"}},
	{name: "pool not canonical", spec: NetworkSpec{CIDR: "fd00::/64", Gateway: "fd00::1", AllocationPools: []AllocationPoolSpec{{Start: "fd00::0010", End: "fd00::20"}}},
		wantErr: []string{"allocation pool start fd00::0010 must be an IP address in canonical form"}},
	{name: "route destination with host bits", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", HostRoutes: []HostRoute{{Destination: "10.20.0.1/16", Nexthop: "10.0.0.254"}}},
		wantErr: []string{"host route destination 10.20.0.1/16 must be a network in canonical CIDR notation"}},
	{name: "route nexthop not an ip", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", HostRoutes: []HostRoute{{Destination: "10.20.0.0/16", Nexthop: "router"}}},
		wantErr: []string{"host route nexthop router must be an IP address in canonical form"}},
	{name: "route of the other family", spec: NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1", HostRoutes: []HostRoute{{Destination: "fd00:20::/64", Nexthop: "fd00::1"}}},
		wantErr: []string{"dnsNameservers and hostRoutes must be of the cidr's IP family"}},
	{name: "family mismatch v6 cidr", spec: NetworkSpec{CIDR: "fd00::/64", Gateway: "192.168.0.1"}, wantErr: []string{"gateway 192.168.0.1 is an IPv4 address but cidr fd00::/64 is an IPv6 network"}},
}

func TestValidateSpec(t *testing.T) {
	for _, tc := range specCases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateSpec(tc.spec)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("ValidateSpec(%+v) = %v, want nil", tc.spec, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateSpec(%+v) = nil, want an error containing %q", tc.spec, tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("ValidateSpec(%+v) = %q, want it to contain %q", tc.spec, err, want)
				}
			}
		})
	}
}

// FuzzValidateSpec checks that ValidateSpec never panics, that what it
// accepts is usable as is (canonical, gateway inside the cidr), and that it
// agrees with the API server's validation of the generated CRD (OpenAPI
// schema + CEL rules) on every input the API server could receive.
// Run it with: go test ./pkg/apis/samplecrd/v1 -run '^$' -fuzz FuzzValidateSpec
func FuzzValidateSpec(f *testing.F) {
	for _, tc := range specCases {
		f.Add(tc.spec.CIDR, tc.spec.Gateway)
	}
	crd := loadCRDValidator(f)
	f.Fuzz(func(t *testing.T, cidr, gateway string) {
		spec := NetworkSpec{CIDR: cidr, Gateway: gateway}
		err := ValidateSpec(spec)
		if err == nil {
			p, perr := parseCIDR(cidr)
			a, aerr := parseIP(gateway)
			if perr != nil || aerr != nil || p.Masked() != p || p.String() != cidr || a.String() != gateway || !p.Contains(a) {
				t.Fatalf("ValidateSpec accepted an unusable spec %+v", spec)
			}
		} else if err.Error() == "" {
			t.Fatalf("ValidateSpec(%+v) returned an empty error message", spec)
		}
		if !utf8.ValidString(cidr) || !utf8.ValidString(gateway) {
			return // cannot be sent to the API server as JSON
		}
		apiErrs := crd.validate(t, spec, nil)
		if (err == nil) != (len(apiErrs) == 0) {
			t.Fatalf("ValidateSpec and the CRD disagree on %+v:\nValidateSpec: %v\nCRD: %v", spec, err, apiErrs.ToAggregate())
		}
	})
}

func ptr[T any](v T) *T { return &v }

// withSettings returns spec with every optional setting set, valid for
// 10.0.0.0/24 (or an import).
func withSettings(spec NetworkSpec) NetworkSpec {
	spec.Description = ptr("team a's build network")
	spec.Tags = []string{"team=a", "env=ci"}
	spec.MTU = ptr(int32(1400))
	spec.AdminStateUp = ptr(true)
	spec.EnableDHCP = ptr(false)
	spec.DNSNameservers = []string{"10.0.0.53", "10.0.0.54"}
	spec.AllocationPools = []AllocationPoolSpec{{Start: "10.0.0.10", End: "10.0.0.99"}}
	spec.HostRoutes = []HostRoute{{Destination: "10.20.0.0/16", Nexthop: "10.0.0.254"}}
	return spec
}

// hostRoutes returns n distinct host routes inside 10.0.0.0/24's reach.
func hostRoutes(n int) []HostRoute {
	out := make([]HostRoute, n)
	for i := range out {
		out[i] = HostRoute{Destination: fmt.Sprintf("10.%d.0.0/16", 100+i), Nexthop: "10.0.0.254"}
	}
	return out
}
