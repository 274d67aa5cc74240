package v1

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of the spec fields, as enforced by the CRD schema.
const (
	// MaxCIDRLength is the longest canonical CIDR: a fully expanded IPv6
	// address (39 characters) and "/128".
	MaxCIDRLength = 43
	// MaxGatewayLength is the longest canonical IP address (IPv6, 39).
	MaxGatewayLength = 39
	// MaxDescriptionLength is the longest spec.description: with the
	// controller's own text it fits Neutron's 255 characters.
	MaxDescriptionLength = 128
	// MaxTagLength is the longest tag: the limit of older Neutron
	// releases.
	MaxTagLength = 60

	maxDNSNameservers  = 5
	maxAllocationPools = 16
	maxHostRoutes      = 20
)

// ValidateSpec checks spec the way the API server does (the CRD's OpenAPI and
// CEL rules, see NetworkSpec), so the controller can refuse a bad spec that
// reached it anyway (an older CRD, a direct etcd write) with the same clear
// message, instead of sending it to the backend. It returns nil or an error
// listing every problem, each naming the field, the value and how to fix it.
func ValidateSpec(spec NetworkSpec) error {
	return validateSpec(spec, field.NewPath("spec")).ToAggregate()
}

func validateSpec(spec NetworkSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	cidrPath, gwPath := p.Child("cidr"), p.Child("gateway")

	errs = append(errs, validatePolicies(spec, p)...)
	errs = append(errs, validateCredentialsRef(spec.CloudCredentialsRef, p.Child("cloudCredentialsRef"))...)
	imported := spec.Import != nil
	pooled := spec.SubnetPool != nil
	if pooled {
		if spec.CIDR != "" || spec.Gateway != "" || imported || spec.AllocationPools != nil {
			errs = append(errs, field.Forbidden(p.Child("subnetPool"), poolExclusive))
		}
		if r := spec.SubnetPool; (r.ID == "") == (r.Name == "") {
			errs = append(errs, field.Invalid(p.Child("subnetPool"), "", poolOneOf))
		} else if utf8.RuneCountInString(r.ID) > maxNameLength || utf8.RuneCountInString(r.Name) > maxNameLength {
			errs = append(errs, field.TooLong(p.Child("subnetPool"), "", maxNameLength))
		}
		// Its range is Neutron's: neither cidr nor gateway is required.
		imported = true
	}
	if spec.PrefixLength != nil {
		switch {
		case !pooled:
			errs = append(errs, field.Forbidden(p.Child("prefixLength"), prefixWithoutPool))
		case *spec.PrefixLength < 1 || *spec.PrefixLength > 128:
			errs = append(errs, field.Invalid(p.Child("prefixLength"), *spec.PrefixLength, "prefixLength must be between 1 and 128"))
		}
	}

	var cidrOK, gwOK bool
	prefix, err := parseField(cidrPath, spec.CIDR, MaxCIDRLength, cidrUsage, parseCIDR)
	switch {
	case spec.CIDR == "" && imported:
		// Optional with import: the imported subnet's.
	case spec.CIDR == "":
		errs = append(errs, field.Required(cidrPath, cidrRequired))
	case err != nil:
		errs = append(errs, err)
	case prefix.Masked() != prefix:
		errs = append(errs, field.Invalid(cidrPath, spec.CIDR,
			fmt.Sprintf("cidr %s has host bits set: write the network address, with every bit after the prefix length zero (e.g. 192.168.0.0/16, not 192.168.0.1/16); did you mean %s?", spec.CIDR, prefix.Masked())))
	case prefix.String() != spec.CIDR:
		errs = append(errs, field.Invalid(cidrPath, spec.CIDR,
			fmt.Sprintf("cidr %s is not in canonical form: write IPv6 in lowercase, without leading zeros, with the longest run of zero groups written as :: (e.g. fd00:10::/64); did you mean %s?", spec.CIDR, prefix)))
	default:
		cidrOK = true
	}

	addr, err := parseField(gwPath, spec.Gateway, MaxGatewayLength, gatewayUsage, parseIP)
	switch {
	case spec.Gateway == "" && imported:
	case spec.Gateway == "":
		errs = append(errs, field.Required(gwPath, gatewayRequired))
	case err != nil:
		errs = append(errs, err)
	case addr.String() != spec.Gateway:
		errs = append(errs, field.Invalid(gwPath, spec.Gateway,
			fmt.Sprintf("gateway %s is not in canonical form: write IPv6 in lowercase, without leading zeros, with the longest run of zero groups written as :: (e.g. fd00:10::1); did you mean %s?", spec.Gateway, addr)))
	default:
		gwOK = true
	}

	errs = append(errs, validateSettings(spec, p, prefix, cidrOK)...)

	if cidrOK && gwOK {
		switch {
		case family(addr) != family(prefix.Addr()):
			errs = append(errs, field.Invalid(gwPath, spec.Gateway,
				fmt.Sprintf("gateway %s is an IPv%d address but cidr %s is an IPv%d network: use a gateway of the same family, inside the cidr",
					spec.Gateway, family(addr), spec.CIDR, family(prefix.Addr()))))
		case !prefix.Contains(addr):
			errs = append(errs, field.Invalid(gwPath, spec.Gateway,
				fmt.Sprintf("gateway %s is outside cidr %s: use an address inside the cidr", spec.Gateway, spec.CIDR)))
		}
	}
	return errs
}

// validateSettings checks the optional network and subnet settings as
// the CRD's rules do; prefix is the cidr when cidrOK.
func validateSettings(spec NetworkSpec, p *field.Path, prefix netip.Prefix, cidrOK bool) field.ErrorList {
	var errs field.ErrorList
	if spec.Policy() == ManagementPolicyUnmanaged && spec.HasSettings() {
		errs = append(errs, field.Forbidden(p, unmanagedSettings))
	}
	if spec.Description != nil && utf8.RuneCountInString(*spec.Description) > MaxDescriptionLength {
		errs = append(errs, field.TooLong(p.Child("description"), "", MaxDescriptionLength))
	}
	tp := p.Child("tags")
	if len(spec.Tags) > maxFilterTags {
		errs = append(errs, field.TooMany(tp, len(spec.Tags), maxFilterTags))
	}
	seen := map[string]bool{}
	for i, tag := range spec.Tags {
		switch {
		case tag == "":
			errs = append(errs, field.Required(tp.Index(i), "a tag cannot be empty"))
		case utf8.RuneCountInString(tag) > MaxTagLength:
			errs = append(errs, field.TooLong(tp.Index(i), "", MaxTagLength))
		case strings.HasPrefix(tag, "k8s-") || strings.HasPrefix(tag, "managed-by="):
			errs = append(errs, field.Invalid(tp.Index(i), tag, "tag "+tag+" uses a prefix the controller keeps for its own tags (k8s-, managed-by=): pick another tag"))
		case strings.Contains(tag, ","):
			errs = append(errs, field.Invalid(tp.Index(i), tag, "tag "+tag+" contains a comma, which Neutron tag filters cannot match: remove it"))
		case seen[tag]:
			errs = append(errs, field.Duplicate(tp.Index(i), tag))
		}
		seen[tag] = true
	}
	if spec.MTU != nil && (*spec.MTU < 68 || *spec.MTU > 9216) {
		errs = append(errs, field.Invalid(p.Child("mtu"), *spec.MTU, "mtu must be between 68 and 9216"))
	}
	familyOK := func(a netip.Addr) bool { return !cidrOK || family(a) == family(prefix.Addr()) }
	const familyMsg = "dnsNameservers and hostRoutes must be of the cidr's IP family (Neutron refuses the others): use IPv4 addresses with an IPv4 cidr, IPv6 with IPv6"
	dp := p.Child("dnsNameservers")
	if len(spec.DNSNameservers) > maxDNSNameservers {
		errs = append(errs, field.TooMany(dp, len(spec.DNSNameservers), maxDNSNameservers))
	}
	for i, a := range spec.DNSNameservers {
		addr, err := parseIP(a)
		switch {
		case err != nil || addr.String() != a:
			errs = append(errs, field.Invalid(dp.Index(i), a, "dns nameserver "+a+" must be an IP address in canonical form, such as 192.168.0.53 or fd00:10::53"))
		case !familyOK(addr):
			errs = append(errs, field.Invalid(p, a, familyMsg))
		}
	}
	pp := p.Child("allocationPools")
	if len(spec.AllocationPools) > maxAllocationPools {
		errs = append(errs, field.TooMany(pp, len(spec.AllocationPools), maxAllocationPools))
	}
	for i, pool := range spec.AllocationPools {
		start, err1 := parseIP(pool.Start)
		end, err2 := parseIP(pool.End)
		switch {
		case err1 != nil || start.String() != pool.Start:
			errs = append(errs, field.Invalid(pp.Index(i).Child("start"), pool.Start, "allocation pool start "+pool.Start+" must be an IP address in canonical form"))
		case err2 != nil || end.String() != pool.End:
			errs = append(errs, field.Invalid(pp.Index(i).Child("end"), pool.End, "allocation pool end "+pool.End+" must be an IP address in canonical form"))
		case family(start) != family(end):
			errs = append(errs, field.Invalid(pp.Index(i), pool.Start+"-"+pool.End, "an allocation pool starts and ends in the same IP family"))
		case cidrOK && (!prefix.Contains(start) || !prefix.Contains(end)):
			errs = append(errs, field.Invalid(pp, pool.Start+"-"+pool.End, "every allocation pool must start and end inside cidr: give addresses of the subnet's range"))
		}
	}
	if r := spec.Router; r != nil {
		switch {
		case (r.ID == "") == (r.Name == ""):
			errs = append(errs, field.Invalid(p.Child("router"), "", routerOneOf))
		case utf8.RuneCountInString(r.ID) > maxNameLength:
			errs = append(errs, field.TooLong(p.Child("router", "id"), "", maxNameLength))
		case utf8.RuneCountInString(r.Name) > maxNameLength:
			errs = append(errs, field.TooLong(p.Child("router", "name"), "", maxNameLength))
		}
	}
	rp := p.Child("hostRoutes")
	if len(spec.HostRoutes) > maxHostRoutes {
		errs = append(errs, field.TooMany(rp, len(spec.HostRoutes), maxHostRoutes))
	}
	for i, r := range spec.HostRoutes {
		dst, err1 := parseCIDR(r.Destination)
		hop, err2 := parseIP(r.Nexthop)
		switch {
		case err1 != nil || dst.String() != r.Destination || dst.Masked() != dst:
			errs = append(errs, field.Invalid(rp.Index(i).Child("destination"), r.Destination,
				"host route destination "+r.Destination+" must be a network in canonical CIDR notation (host bits zero), such as 10.20.0.0/16"))
		case err2 != nil || hop.String() != r.Nexthop:
			errs = append(errs, field.Invalid(rp.Index(i).Child("nexthop"), r.Nexthop, "host route nexthop "+r.Nexthop+" must be an IP address in canonical form"))
		case !familyOK(dst.Addr()) || !familyOK(hop):
			errs = append(errs, field.Invalid(p, r.Destination, familyMsg))
		}
	}
	return errs
}

// validatePolicies checks managementPolicy, import and onDelete as the
// CRD's rules do on create.
func validatePolicies(spec NetworkSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.ManagementPolicy {
	case "", ManagementPolicyManaged:
	case ManagementPolicyUnmanaged:
		if spec.Import == nil {
			errs = append(errs, field.Required(p.Child("import"), unmanagedNeedsImport))
		}
		if spec.OnDelete != "" {
			errs = append(errs, field.Forbidden(p.Child("onDelete"), onDeleteOnUnmanaged))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("managementPolicy"), spec.ManagementPolicy,
			[]ManagementPolicy{ManagementPolicyManaged, ManagementPolicyUnmanaged}))
	}
	switch spec.OnDelete {
	case "", OnDeleteDelete, OnDeleteDetach:
	default:
		errs = append(errs, field.NotSupported(p.Child("onDelete"), spec.OnDelete, []OnDeletePolicy{OnDeleteDelete, OnDeleteDetach}))
	}
	if spec.Import == nil {
		return errs
	}
	ip := p.Child("import")
	imp := spec.Import
	switch {
	case imp.NetworkID != "" && imp.Filter != nil:
		errs = append(errs, field.Invalid(ip, "networkID and filter", importBoth))
	case imp.NetworkID == "" && imp.Filter == nil:
		errs = append(errs, field.Required(ip, importNeither))
	case utf8.RuneCountInString(imp.NetworkID) > maxNameLength:
		errs = append(errs, field.TooLong(ip.Child("networkID"), "", maxNameLength))
	case imp.Filter != nil:
		fp := ip.Child("filter")
		f := imp.Filter
		if f.Name == "" && len(f.Tags) == 0 {
			errs = append(errs, field.Required(fp, emptyFilter))
		}
		if utf8.RuneCountInString(f.Name) > maxNameLength {
			errs = append(errs, field.TooLong(fp.Child("name"), "", maxNameLength))
		}
		if len(f.Tags) > maxFilterTags {
			errs = append(errs, field.TooMany(fp.Child("tags"), len(f.Tags), maxFilterTags))
		}
		seen := map[string]bool{}
		for i, tag := range f.Tags {
			switch {
			case tag == "":
				errs = append(errs, field.Required(fp.Child("tags").Index(i), "a tag cannot be empty"))
			case utf8.RuneCountInString(tag) > maxNameLength:
				errs = append(errs, field.TooLong(fp.Child("tags").Index(i), "", maxNameLength))
			case seen[tag]:
				errs = append(errs, field.Duplicate(fp.Child("tags").Index(i), tag))
			case strings.Contains(tag, ","):
				errs = append(errs, field.Invalid(fp.Child("tags").Index(i), tag, "filter tag "+tag+" contains a comma, which Neutron reads as two tags (it would never match): remove it"))
			}
			seen[tag] = true
		}
	}
	return errs
}

// Bounds and messages of the import and policy rules (see the markers in
// types.go: the two say the same).
const (
	maxNameLength        = 255
	maxFilterTags        = 32
	unmanagedNeedsImport = "an Unmanaged Network only observes an existing Neutron network: set import.networkID or import.filter, or use managementPolicy: Managed to have one created"
	onDeleteOnUnmanaged  = "onDelete applies only to Managed Networks: deleting an Unmanaged Network never touches Neutron; remove onDelete"
	importBoth           = "import takes networkID or filter, not both: keep networkID to bind that network, or filter to find it by name and tags"
	importNeither        = "import needs networkID or filter: set networkID to the Neutron network's ID, or filter to its exact name and/or tags"
	cidrRequired         = "cidr is required unless import or subnetPool is set: give the network's address range, such as 192.168.0.0/16, import an existing Neutron network, or take the range from a subnetPool"
	gatewayRequired      = "gateway is required unless import or subnetPool is set: give the subnet's gateway, such as 192.168.0.1, or import an existing Neutron network"
	poolExclusive        = "subnetPool takes the subnet's range from the pool: remove cidr, gateway and allocationPools (Neutron picks the range and its first address as the gateway; status.subnet shows them), and import (an imported network has its subnet)"
	prefixWithoutPool    = "prefixLength applies only with subnetPool: set subnetPool, or give the range as cidr"
	poolOneOf            = "subnetPool takes id or name, exactly one: the pool's ID, or its exact name"
	unmanagedSettings    = "an Unmanaged Network never writes to Neutron: remove description, tags, mtu, adminStateUp, enableDHCP, dnsNameservers, allocationPools, hostRoutes and router, or use managementPolicy: Managed"
	routerOneOf          = "router takes id or name, exactly one: the router's ID, or its exact name"
	emptyFilter          = "filter must set name or tags: an empty filter would match every network; give the network's exact name and/or tags it carries"
)

// What a cidr and a gateway must be, for a missing or unparsable one.
const (
	cidrUsage    = "cidr must be an IPv4 or IPv6 network in CIDR notation, such as 192.168.0.0/16 or fd00:10::/64"
	gatewayUsage = "gateway must be an IPv4 or IPv6 address, such as 192.168.0.1 or fd00:10::1"
)

// parseField parses value, the required field at p, with parse after the
// checks the schema makes first (required, maxLength). The error is nil when
// it parsed, else about the first problem; usage is its message for an empty
// or unparsable value.
func parseField[T any](p *field.Path, value string, maxLength int, usage string, parse func(string) (T, error)) (T, *field.Error) {
	var zero T
	switch {
	case value == "":
		return zero, field.Required(p, usage)
	case len(value) > maxLength:
		return zero, field.TooLong(p, "", maxLength)
	}
	v, err := parse(value)
	if err != nil {
		return zero, field.Invalid(p, value, usage)
	}
	return v, nil
}

// parseIP parses an IP address the way the Kubernetes CEL library's isIP and
// ip() do: IPv4 or IPv6, no zone, no IPv4-mapped IPv6 form.
func parseIP(s string) (netip.Addr, error) {
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	if addr.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("IP address %q with zone value is not allowed", s)
	}
	if addr.Is4In6() {
		return netip.Addr{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return addr, nil
}

// parseCIDR parses a CIDR the way the Kubernetes CEL library's isCIDR and
// cidr() do: host bits are allowed (check Masked yourself), zones and the
// IPv4-mapped IPv6 form are not.
func parseCIDR(s string) (netip.Prefix, error) {
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if prefix.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return prefix, nil
}

func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}
