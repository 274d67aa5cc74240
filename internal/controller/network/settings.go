package network

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Settings are the optional settings of a Network's backend network and
// subnet, in the spec's terms. In what a caller passes a nil field is one
// the spec leaves to the backend (never written, never compared) and an
// empty, non-nil list is "none"; in what a backend returns every field is
// what it holds.
type Settings struct {
	// Description is the Network's own text, without what the backend
	// adds to name the Network.
	Description *string
	// Tags are the user's tags, without the backend's marks; sorted.
	Tags         []string
	MTU          *int32
	AdminStateUp *bool
	EnableDHCP   *bool
	// DNSNameservers are in the order clients try them.
	DNSNameservers  []string
	AllocationPools []samplecrdv1.AllocationPoolSpec
	// HostRoutes are sorted by destination, then nexthop.
	HostRoutes []samplecrdv1.HostRoute

	// SubnetDescription and SubnetTags are, in what a backend returns
	// that keeps them apart (Neutron), the subnet's when they differ from
	// the network's (Description and Tags); nil otherwise. Description and
	// Tags are then compared with both.
	SubnetDescription *string
	SubnetTags        []string
}

// SettingsOf returns the settings spec sets, in the form Diff compares.
func SettingsOf(spec *samplecrdv1.NetworkSpec) Settings {
	s := Settings{
		Description:     clonePtr(spec.Description),
		MTU:             clonePtr(spec.MTU),
		AdminStateUp:    clonePtr(spec.AdminStateUp),
		EnableDHCP:      clonePtr(spec.EnableDHCP),
		DNSNameservers:  cloneSet(spec.DNSNameservers),
		AllocationPools: cloneSet(spec.AllocationPools),
	}
	if spec.Tags != nil {
		s.Tags = SortedTags(spec.Tags)
	}
	if spec.HostRoutes != nil {
		s.HostRoutes = SortedRoutes(spec.HostRoutes)
	}
	return s
}

// SortedTags returns tags sorted, never nil.
func SortedTags(tags []string) []string {
	out := append([]string{}, tags...)
	slices.Sort(out)
	return out
}

// SortedRoutes returns routes sorted by destination, then nexthop, never
// nil: Neutron keeps no order of a subnet's routes.
func SortedRoutes(routes []samplecrdv1.HostRoute) []samplecrdv1.HostRoute {
	out := append([]samplecrdv1.HostRoute{}, routes...)
	slices.SortFunc(out, func(a, b samplecrdv1.HostRoute) int {
		if c := strings.Compare(a.Destination, b.Destination); c != 0 {
			return c
		}
		return strings.Compare(a.Nexthop, b.Nexthop)
	})
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// cloneSet copies a list keeping nil (unset) apart from empty.
func cloneSet[T any](l []T) []T {
	if l == nil {
		return nil
	}
	return append([]T{}, l...)
}

// Diff lists, one phrase each, the settings s sets that held (what a
// backend holds) differs in; nil when none. Addresses compare parsed.
func (s Settings) Diff(held Settings) []string {
	var out []string
	add := func(name string, backend, spec any) {
		out = append(out, fmt.Sprintf("%s is %v in the backend, %v in the spec", name, backend, spec))
	}
	for _, d := range []struct {
		name string
		held *string
	}{{"description", held.Description}, {"subnet description", held.SubnetDescription}} {
		if s.Description == nil || (d.held == nil && d.name != "description") {
			continue
		}
		if d.held == nil || *d.held != *s.Description {
			v := ""
			if d.held != nil {
				v = *d.held
			}
			add(d.name, strconv.Quote(v), strconv.Quote(*s.Description))
		}
	}
	if s.Tags != nil && !slices.Equal(SortedTags(held.Tags), SortedTags(s.Tags)) {
		add("tags", list(held.Tags), list(s.Tags))
	}
	if s.Tags != nil && held.SubnetTags != nil && !slices.Equal(SortedTags(held.SubnetTags), SortedTags(s.Tags)) {
		add("subnet tags", list(held.SubnetTags), list(s.Tags))
	}
	if s.MTU != nil && (held.MTU == nil || *held.MTU != *s.MTU) {
		add("mtu", deref(held.MTU), *s.MTU)
	}
	if s.AdminStateUp != nil && (held.AdminStateUp == nil || *held.AdminStateUp != *s.AdminStateUp) {
		add("adminStateUp", deref(held.AdminStateUp), *s.AdminStateUp)
	}
	if s.EnableDHCP != nil && (held.EnableDHCP == nil || *held.EnableDHCP != *s.EnableDHCP) {
		add("enableDHCP", deref(held.EnableDHCP), *s.EnableDHCP)
	}
	if s.DNSNameservers != nil && !slices.EqualFunc(held.DNSNameservers, s.DNSNameservers, SameIP) {
		add("dnsNameservers", list(held.DNSNameservers), list(s.DNSNameservers))
	}
	if s.AllocationPools != nil && !slices.EqualFunc(sortedPools(held.AllocationPools), sortedPools(s.AllocationPools), func(a, b samplecrdv1.AllocationPoolSpec) bool {
		return SameIP(a.Start, b.Start) && SameIP(a.End, b.End)
	}) {
		add("allocationPools", pools(held.AllocationPools), pools(s.AllocationPools))
	}
	if s.HostRoutes != nil && !slices.EqualFunc(SortedRoutes(held.HostRoutes), SortedRoutes(s.HostRoutes), func(a, b samplecrdv1.HostRoute) bool {
		return SameCIDR(a.Destination, b.Destination) && SameIP(a.Nexthop, b.Nexthop)
	}) {
		add("hostRoutes", routes(held.HostRoutes), routes(s.HostRoutes))
	}
	return out
}

// sortedPools returns pools sorted by their start: Neutron keeps no order
// of a subnet's pools.
func sortedPools(pools []samplecrdv1.AllocationPoolSpec) []samplecrdv1.AllocationPoolSpec {
	out := slices.Clone(pools)
	slices.SortFunc(out, func(a, b samplecrdv1.AllocationPoolSpec) int {
		x, errX := netip.ParseAddr(a.Start)
		y, errY := netip.ParseAddr(b.Start)
		if errX != nil || errY != nil {
			return strings.Compare(a.Start, b.Start)
		}
		return x.Compare(y)
	})
	return out
}

func deref[T any](p *T) any {
	if p == nil {
		return "unset"
	}
	return *p
}

func list(l []string) string { return "[" + strings.Join(l, ", ") + "]" }

func pools(ps []samplecrdv1.AllocationPoolSpec) string {
	var l []string
	for _, p := range ps {
		l = append(l, p.Start+"-"+p.End)
	}
	return list(l)
}

func routes(rs []samplecrdv1.HostRoute) string {
	var l []string
	for _, r := range rs {
		l = append(l, r.Destination+" via "+r.Nexthop)
	}
	return list(l)
}
