package v1

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of the spec fields, as enforced by the CRD schema.
const (
	// MaxCIDRLength is the longest canonical CIDR: a fully expanded IPv6
	// address (39 characters) and "/128".
	MaxCIDRLength = 43
	// MaxGatewayLength is the longest canonical IP address (IPv6, 39).
	MaxGatewayLength = 39
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
	case len(imp.NetworkID) > maxNameLength:
		errs = append(errs, field.TooLong(ip.Child("networkID"), "", maxNameLength))
	case imp.Filter != nil:
		fp := ip.Child("filter")
		f := imp.Filter
		if f.Name == "" && len(f.Tags) == 0 {
			errs = append(errs, field.Required(fp, emptyFilter))
		}
		if len(f.Name) > maxNameLength {
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
			case len(tag) > maxNameLength:
				errs = append(errs, field.TooLong(fp.Child("tags").Index(i), "", maxNameLength))
			case seen[tag]:
				errs = append(errs, field.Duplicate(fp.Child("tags").Index(i), tag))
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
	cidrRequired         = "cidr is required unless import is set: give the network's address range, such as 192.168.0.0/16, or import an existing Neutron network"
	gatewayRequired      = "gateway is required unless import is set: give the subnet's gateway, such as 192.168.0.1, or import an existing Neutron network"
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
