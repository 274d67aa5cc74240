package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Network is a network with one subnet that the network controller keeps in a
// network backend (OpenStack Neutron, or an in-memory one): created when the
// Network is created, its gateway updated when spec.gateway changes, and
// deleted when the Network is deleted.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=net
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=unapproved, sample API for experimentation"
// +kubebuilder:printcolumn:name="CIDR",type=string,JSONPath=`.spec.cidr`
// +kubebuilder:printcolumn:name="Gateway",type=string,JSONPath=`.spec.gateway`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.managementPolicy`
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.status.networkID`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.router) || !has(oldSelf.spec.router) || !has(oldSelf.status) || !has(oldSelf.status.router) || (has(self.spec.gateway) == has(oldSelf.spec.gateway) && (!has(self.spec.gateway) || self.spec.gateway == oldSelf.spec.gateway))",message="the gateway cannot change while the subnet is attached to a router: the router's interface holds the gateway address and Neutron refuses; remove spec.router (the interface is removed), change the gateway, then set spec.router again",fieldPath=".spec.gateway"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.router) || !has(oldSelf.spec.router) || self.spec.router == oldSelf.spec.router || !has(oldSelf.status) || !has(oldSelf.status.router)",message="router cannot be switched to another router in one edit while the subnet is attached (status.router): Neutron cannot move a router interface; remove spec.router (the interface is removed), then set the new router",fieldPath=".spec.router"
type Network struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired network.
	// +required
	Spec NetworkSpec `json:"spec"`

	// Status is the network as last observed in the backend.
	// +optional
	Status NetworkStatus `json:"status,omitempty"`
}

// NetworkSpec is the desired state of a Network. The API server rejects an
// invalid spec with the messages below; ValidateSpec performs the same checks
// in Go.
//
// +kubebuilder:validation:XValidation:rule="(has(self.cidr) && size(self.cidr) > 0) || has(self.import) || has(self.subnetPool)",message="cidr is required unless import or subnetPool is set: give the network's address range, such as 192.168.0.0/16, import an existing Neutron network, or take the range from a subnetPool",fieldPath=".cidr",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="(has(self.gateway) && size(self.gateway) > 0) || has(self.import) || has(self.subnetPool)",message="gateway is required unless import or subnetPool is set: give the subnet's gateway, such as 192.168.0.1, or import an existing Neutron network",fieldPath=".gateway",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.subnetPool) || ((!has(self.cidr) || size(self.cidr) == 0) && (!has(self.gateway) || size(self.gateway) == 0) && !has(self.import) && !has(self.allocationPools))",message="subnetPool takes the subnet's range from the pool: remove cidr, gateway and allocationPools (Neutron picks the range and its first address as the gateway; status.subnet shows them), and import (an imported network has its subnet)",fieldPath=".subnetPool",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.prefixLength) || has(self.subnetPool)",message="prefixLength applies only with subnetPool: set subnetPool, or give the range as cidr",fieldPath=".prefixLength",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="has(self.subnetPool) == has(oldSelf.subnetPool) && has(self.prefixLength) == has(oldSelf.prefixLength)",message="subnetPool and prefixLength are immutable: Neutron cannot move a subnet to another pool or range; delete the Network and create it again",fieldPath=".subnetPool"
// +kubebuilder:validation:XValidation:rule="!has(self.managementPolicy) || self.managementPolicy != 'Unmanaged' || has(self.import)",message="an Unmanaged Network only observes an existing Neutron network: set import.networkID or import.filter, or use managementPolicy: Managed to have one created",fieldPath=".import",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.onDelete) || !has(self.managementPolicy) || self.managementPolicy != 'Unmanaged'",message="onDelete applies only to Managed Networks: deleting an Unmanaged Network never touches Neutron; remove onDelete",fieldPath=".onDelete",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="(has(self.managementPolicy) ? self.managementPolicy : 'Managed') == (has(oldSelf.managementPolicy) ? oldSelf.managementPolicy : 'Managed')",message="managementPolicy is immutable: delete the Network and create it again with the new policy (a Managed Network with onDelete: Detach leaves its Neutron network in place when deleted, so it can be imported again)",fieldPath=".managementPolicy"
// +kubebuilder:validation:XValidation:rule="has(self.import) == has(oldSelf.import)",message="import is immutable: delete the Network and create it again with the import it should have",fieldPath=".import"
// +kubebuilder:validation:XValidation:rule="has(self.cidr) == has(oldSelf.cidr)",message="cidr is immutable: Neutron cannot change a subnet's CIDR; delete the Network and create it again with the new cidr",fieldPath=".cidr"
// +kubebuilder:validation:XValidation:rule="!has(self.managementPolicy) || self.managementPolicy != 'Unmanaged' || !(has(self.description) || has(self.tags) || has(self.mtu) || has(self.adminStateUp) || has(self.enableDHCP) || has(self.dnsNameservers) || has(self.allocationPools) || has(self.hostRoutes) || has(self.router))",message="an Unmanaged Network never writes to Neutron: remove description, tags, mtu, adminStateUp, enableDHCP, dnsNameservers, allocationPools, hostRoutes and router, or use managementPolicy: Managed",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.allocationPools) || !has(self.cidr) || !isCIDR(self.cidr) || self.allocationPools.all(p, isIP(p.start) && isIP(p.end) && cidr(self.cidr).containsIP(p.start) && cidr(self.cidr).containsIP(p.end))",message="every allocation pool must start and end inside cidr: give addresses of the subnet's range",fieldPath=".allocationPools",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.cidr) || !isCIDR(self.cidr) || ((!has(self.dnsNameservers) || self.dnsNameservers.all(a, !isIP(a) || ip(a).family() == cidr(self.cidr).ip().family())) && (!has(self.hostRoutes) || self.hostRoutes.all(r, !isCIDR(r.destination) || !isIP(r.nexthop) || (cidr(r.destination).ip().family() == cidr(self.cidr).ip().family() && ip(r.nexthop).family() == cidr(self.cidr).ip().family()))))",message="dnsNameservers and hostRoutes must be of the cidr's IP family (Neutron refuses the others): use IPv4 addresses with an IPv4 cidr, IPv6 with IPv6",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.cidr) || !has(self.gateway) || !isCIDR(self.cidr) || !isIP(self.gateway) || ip(self.gateway).family() == cidr(self.cidr).ip().family()",messageExpression="'gateway ' + self.gateway + (ip(self.gateway).family() == 4 ? ' is an IPv4 address but cidr ' : ' is an IPv6 address but cidr ') + self.cidr + (ip(self.gateway).family() == 4 ? ' is an IPv6 network' : ' is an IPv4 network') + ': use a gateway of the same family, inside the cidr'",fieldPath=".gateway",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.cidr) || !has(self.gateway) || !isCIDR(self.cidr) || !isIP(self.gateway) || ip(self.gateway).family() != cidr(self.cidr).ip().family() || cidr(self.cidr).containsIP(ip(self.gateway))",messageExpression="'gateway ' + self.gateway + ' is outside cidr ' + self.cidr + ': use an address inside the cidr'",fieldPath=".gateway",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="has(self.cloudCredentialsRef) == has(oldSelf.cloudCredentialsRef)",message="cloudCredentialsRef is immutable: a Network stays in the project it was created in; delete the Network and create it again with the credentials it should use (to rotate a password, change the Secret instead)",fieldPath=".cloudCredentialsRef"
type NetworkSpec struct {
	// CIDR is the network's address range: an IPv4 or IPv6 network in
	// canonical CIDR notation (host bits zero, e.g. 192.168.0.0/16 or
	// fd00:10::/64). It becomes the CIDR of the backend subnet and cannot be
	// changed afterwards: to move a Network to another range, delete it and
	// create it again. Required unless import is set; with import it picks
	// the subnet of a network that has several, and a subnet with another
	// CIDR is reported, never changed.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || isCIDR(self)",message="cidr must be an IPv4 or IPv6 network in CIDR notation, such as 192.168.0.0/16 or fd00:10::/64"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",messageExpression="'cidr ' + self + ' has host bits set: write the network address, with every bit after the prefix length zero (e.g. 192.168.0.0/16, not 192.168.0.1/16)'"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || string(cidr(self)) == self",messageExpression="'cidr ' + self + ' is not in canonical form: write IPv6 in lowercase, without leading zeros, with the longest run of zero groups written as :: (e.g. fd00:10::/64)'"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cidr is immutable: Neutron cannot change a subnet's CIDR; delete the Network and create it again with the new cidr"
	CIDR string `json:"cidr,omitempty"`

	// Gateway is the subnet's gateway: an IP address of the same family as
	// cidr, inside cidr, in canonical form (e.g. 192.168.0.1 or fd00:10::1).
	// It can be changed. Required unless import is set; with import it is
	// the desired gateway (Managed) or what the subnet is expected to have
	// (Unmanaged: a difference is reported, never repaired).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || isIP(self)",message="gateway must be an IPv4 or IPv6 address, such as 192.168.0.1 or fd00:10::1"
	// +kubebuilder:validation:XValidation:rule="!isIP(self) || ip.isCanonical(self)",messageExpression="'gateway ' + self + ' is not in canonical form: write IPv6 in lowercase, without leading zeros, with the longest run of zero groups written as :: (e.g. fd00:10::1)'"
	Gateway string `json:"gateway,omitempty"`

	// ManagementPolicy says whether the controller owns the Neutron network
	// (Managed: it creates or adopts it, keeps it as the spec says and
	// deletes it as onDelete says) or only observes it (Unmanaged: it never
	// writes to Neutron, not even on deletion; import is then required).
	// Immutable.
	//
	// +optional
	// +kubebuilder:default=Managed
	ManagementPolicy ManagementPolicy `json:"managementPolicy,omitempty"`

	// Import binds the Network to an existing Neutron network instead of
	// creating one. Immutable.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="import is immutable: delete the Network and create it again with the import it should have"
	Import *NetworkImport `json:"import,omitempty"`

	// OnDelete says what deleting a Managed Network does to its Neutron
	// network: Delete (the default) deletes it and its subnet; Detach removes
	// only the controller's ownership tags and leaves both in place. Not
	// allowed on an Unmanaged Network, which never touches Neutron.
	//
	// +optional
	OnDelete OnDeletePolicy `json:"onDelete,omitempty"`

	// The optional settings below are Neutron's own fields of the network
	// and subnet. Each one that is set is kept as the spec says: written at
	// create, updated in place when edited, and repaired when changed in
	// Neutron; one left unset is whatever Neutron has (its default, or
	// what someone set there). Unsetting one leaves Neutron's value as it
	// is. Only for Managed Networks.

	// Description is added to the Neutron description of the network and
	// subnet (after the controller's own text naming the Network; an
	// adopted network's description becomes this text).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Description *string `json:"description,omitempty"`

	// Tags are Neutron tags put on the network and subnet, besides the
	// controller's own (k8s-network-uid=..., managed-by=...). When set,
	// they are the network's and subnet's exact tags besides ours: a tag
	// removed from the list is removed in Neutron; [] removes every tag
	// but ours. Tags starting with k8s- or managed-by= are the
	// controller's and refused.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=60
	// +kubebuilder:validation:items:XValidation:rule="!self.startsWith('k8s-') && !self.startsWith('managed-by=')",messageExpression="'tag ' + self + ' uses a prefix the controller keeps for its own tags (k8s-, managed-by=): pick another tag'"
	// +kubebuilder:validation:items:XValidation:rule="!self.contains(',')",messageExpression="'tag ' + self + ' contains a comma, which Neutron tag filters cannot match: remove it'"
	Tags []string `json:"tags,omitempty"`

	// MTU is the network's MTU (Neutron's net-mtu-writable extension).
	// Neutron refuses one larger than its physical network or tunnel
	// allows (a BackendRejected condition says so).
	//
	// +optional
	// +kubebuilder:validation:Minimum=68
	// +kubebuilder:validation:Maximum=9216
	MTU *int32 `json:"mtu,omitempty"`

	// AdminStateUp is the network's administrative state.
	//
	// +optional
	AdminStateUp *bool `json:"adminStateUp,omitempty"`

	// EnableDHCP turns the subnet's DHCP on or off.
	//
	// +optional
	EnableDHCP *bool `json:"enableDHCP,omitempty"`

	// DNSNameservers are the subnet's DNS servers, in the order clients try
	// them: IP addresses of the cidr's family, in canonical form. [] removes
	// them all.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:items:MaxLength=39
	// +kubebuilder:validation:items:XValidation:rule="isIP(self) && ip.isCanonical(self)",messageExpression="'dns nameserver ' + self + ' must be an IP address in canonical form, such as 192.168.0.53 or fd00:10::53'"
	DNSNameservers []string `json:"dnsNameservers,omitempty"`

	// AllocationPools are the address ranges the subnet hands out, inside
	// cidr and without the gateway (Neutron refuses a gateway inside a
	// pool, or overlapping pools). Unset, Neutron allocates every address
	// of cidr but the gateway, and a changed gateway moves the pools with
	// it.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	AllocationPools []AllocationPoolSpec `json:"allocationPools,omitempty"`

	// HostRoutes are the routes the subnet's DHCP hands out. [] removes
	// them all. At most 20, Neutron's default max_subnet_host_routes.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	HostRoutes []HostRoute `json:"hostRoutes,omitempty"`

	// SubnetPool takes the subnet's range from a Neutron subnet pool (a
	// shared one of the cloud, or the project's) instead of cidr: Neutron
	// allocates a free range of prefixLength and the gateway (its first
	// address); status.subnet shows them. Exactly one of cidr and
	// subnetPool; not with import or gateway. A pool that is not there is
	// a SubnetPoolNotFound condition, one without room SubnetPoolExhausted.
	// Immutable.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="subnetPool is immutable: Neutron cannot move a subnet to another pool; delete the Network and create it again"
	SubnetPool *SubnetPoolRef `json:"subnetPool,omitempty"`

	// PrefixLength is the prefix length of the range taken from
	// subnetPool (default: the pool's default prefix length; Neutron
	// refuses one outside the pool's bounds). Immutable.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="prefixLength is immutable: delete the Network and create it again"
	PrefixLength *int32 `json:"prefixLength,omitempty"`

	// Router attaches the subnet to an existing Neutron router of the
	// project: an interface of the router on the subnet's gateway address.
	// Removing it removes the interface; deleting the Network removes it
	// before the subnet (onDelete: Detach leaves it, with the network).
	// To move the subnet to another router, remove router, then set the
	// new one. A router that does not exist or the project cannot use is
	// a RouterNotFound condition. Only for Managed Networks.
	//
	// +optional
	Router *RouterRef `json:"router,omitempty"`

	// CloudCredentialsRef names the OpenStack credentials to reconcile the
	// Network with: a clouds.yaml in a Secret of the Network's namespace.
	// Without it, the manager's own cloud. Immutable. Needs a manager run
	// with --network-credentials-from-secrets.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cloudCredentialsRef is immutable: a Network stays in the project it was created in; delete the Network and create it again with the credentials it should use (to rotate a password, change the Secret instead)"
	CloudCredentialsRef *CloudCredentialsRef `json:"cloudCredentialsRef,omitempty"`
}

// SubnetPoolRef names an existing Neutron subnet pool: by ID, or by its
// exact name (exactly one pool the project sees must have it).
//
// +kubebuilder:validation:XValidation:rule="has(self.id) != has(self.name)",message="subnetPool takes id or name, exactly one: the pool's ID, or its exact name"
type SubnetPoolRef struct {
	// ID is the pool's ID.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	ID string `json:"id,omitempty"`
	// Name is the pool's exact name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name,omitempty"`
}

// RouterRef names an existing Neutron router: by ID, or by its exact name
// (one router of the project must have it; the name is looked up when the
// interface is added).
//
// +kubebuilder:validation:XValidation:rule="has(self.id) != has(self.name)",message="router takes id or name, exactly one: the router's ID, or its exact name"
type RouterRef struct {
	// ID is the router's ID.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	ID string `json:"id,omitempty"`
	// Name is the router's exact name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name,omitempty"`
}

// AllocationPoolSpec is a range of addresses, first and last included,
// in canonical form.
//
// +kubebuilder:validation:XValidation:rule="!isIP(self.start) || !isIP(self.end) || ip(self.start).family() == ip(self.end).family()",message="an allocation pool starts and ends in the same IP family"
type AllocationPoolSpec struct {
	// +kubebuilder:validation:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip.isCanonical(self)",messageExpression="'allocation pool start ' + self + ' must be an IP address in canonical form'"
	Start string `json:"start"`
	// +kubebuilder:validation:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip.isCanonical(self)",messageExpression="'allocation pool end ' + self + ' must be an IP address in canonical form'"
	End string `json:"end"`
}

// HostRoute is a route a subnet's DHCP hands out: traffic to destination
// goes through nexthop.
type HostRoute struct {
	// Destination is a network in canonical CIDR notation.
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self) && string(cidr(self)) == self && cidr(self) == cidr(self).masked()",messageExpression="'host route destination ' + self + ' must be a network in canonical CIDR notation (host bits zero), such as 10.20.0.0/16'"
	Destination string `json:"destination"`
	// Nexthop is an IP address in canonical form.
	// +kubebuilder:validation:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip.isCanonical(self)",messageExpression="'host route nexthop ' + self + ' must be an IP address in canonical form'"
	Nexthop string `json:"nexthop"`
}

// ManagementPolicy is Managed or Unmanaged (see NetworkSpec.ManagementPolicy).
//
// +kubebuilder:validation:Enum=Managed;Unmanaged
type ManagementPolicy string

// The management policies.
const (
	ManagementPolicyManaged   ManagementPolicy = "Managed"
	ManagementPolicyUnmanaged ManagementPolicy = "Unmanaged"
)

// OnDeletePolicy is Delete or Detach (see NetworkSpec.OnDelete).
//
// +kubebuilder:validation:Enum=Delete;Detach
type OnDeletePolicy string

// The deletion policies.
const (
	OnDeleteDelete OnDeletePolicy = "Delete"
	OnDeleteDetach OnDeletePolicy = "Detach"
)

// NetworkImport names an existing Neutron network: by ID, or by an exact
// filter that must match exactly one network (several matches are
// reported, never picked from; no match is waited for).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.networkID) && has(self.filter))",message="import takes networkID or filter, not both: keep networkID to bind that network, or filter to find it by name and tags"
// +kubebuilder:validation:XValidation:rule="has(self.networkID) || has(self.filter)",message="import needs networkID or filter: set networkID to the Neutron network's ID, or filter to its exact name and/or tags"
type NetworkImport struct {
	// NetworkID is the ID of the Neutron network.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	NetworkID string `json:"networkID,omitempty"`

	// Filter finds the Neutron network by its exact name and tags.
	//
	// +optional
	Filter *NetworkFilter `json:"filter,omitempty"`
}

// NetworkFilter matches Neutron networks exactly: the same name (never a
// prefix, substring or another case) and every one of the tags.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) || (has(self.tags) && size(self.tags) > 0)",message="filter must set name or tags: an empty filter would match every network; give the network's exact name and/or tags it carries"
type NetworkFilter struct {
	// Name is the network's exact name.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name,omitempty"`

	// Tags must all be on the network. No comma: Neutron's tag filter
	// reads one as two tags.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:items:XValidation:rule="!self.contains(',')",messageExpression="'filter tag ' + self + ' contains a comma, which Neutron reads as two tags (it would never match): remove it'"
	Tags []string `json:"tags,omitempty"`
}

// Policy returns the management policy, Managed when unset (a Network
// stored before the field existed).
func (s *NetworkSpec) Policy() ManagementPolicy {
	if s.ManagementPolicy == "" {
		return ManagementPolicyManaged
	}
	return s.ManagementPolicy
}

// HasSettings reports whether the spec sets any of the optional network
// and subnet settings.
func (s *NetworkSpec) HasSettings() bool {
	return s.Description != nil || s.Tags != nil || s.MTU != nil || s.AdminStateUp != nil || s.EnableDHCP != nil ||
		s.DNSNameservers != nil || s.AllocationPools != nil || s.HostRoutes != nil || s.Router != nil
}

// Detach reports whether deleting the Network leaves its Neutron network.
func (s *NetworkSpec) Detach() bool { return s.OnDelete == OnDeleteDetach }

// NetworkStatus is the observed state of a Network.
type NetworkStatus struct {
	// Conditions are the latest observations of the Network's state. The
	// Ready condition is True once the backend network and subnet match the
	// spec; when it is False its reason and message say why (see the Reason*
	// constants).
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// NetworkID is the backend's ID of the network (the Neutron network ID).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	NetworkID string `json:"networkID,omitempty"`

	// SubnetID is the backend's ID of the subnet (the Neutron subnet ID).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	SubnetID string `json:"subnetID,omitempty"`

	// Network is the Neutron network as last observed.
	// +optional
	Network *NetworkObservation `json:"network,omitempty"`

	// Subnet is the Neutron subnet as last observed.
	// +optional
	Subnet *SubnetObservation `json:"subnet,omitempty"`

	// Router is the router interface the controller added to the subnet
	// (spec.router), as last observed.
	// +optional
	Router *RouterObservation `json:"router,omitempty"`

	// ProjectID is the OpenStack project (Keystone's project ID) the
	// Network is bound to: the one its backend network was first created
	// or imported in. It never changes: credentials that later act in
	// another project (a Secret pointed elsewhere) are refused
	// (CredentialsProjectChanged) and nothing is created there; deleting
	// or detaching acts in this project.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	ProjectID string `json:"projectID,omitempty"`
}

// RouterObservation is a router interface on a Network's subnet.
type RouterObservation struct {
	// ID is the router's ID.
	// +kubebuilder:validation:MaxLength=255
	ID string `json:"id"`
	// PortID is the ID of the interface's port.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	PortID string `json:"portID,omitempty"`
}

// NetworkObservation is a Neutron network as the controller last read it.
type NetworkObservation struct {
	// +optional
	// +kubebuilder:validation:MaxLength=255
	ID string `json:"id,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name,omitempty"`
	// Status is Neutron's status of the network (ACTIVE, DOWN, BUILD, ERROR).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Status string `json:"status,omitempty"`
	// +optional
	AdminStateUp *bool `json:"adminStateUp,omitempty"`
	// +optional
	MTU int32 `json:"mtu,omitempty"`
	// +optional
	Shared bool `json:"shared,omitempty"`
	// External is true for a network of the router:external extension.
	// +optional
	External bool `json:"external,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Description string `json:"description,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=255
	ProjectID string `json:"projectID,omitempty"`
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=255
	Tags []string `json:"tags,omitempty"`
	// +optional
	RevisionNumber int64 `json:"revisionNumber,omitempty"`
}

// SubnetObservation is a Neutron subnet as the controller last read it.
type SubnetObservation struct {
	// +optional
	// +kubebuilder:validation:MaxLength=255
	ID string `json:"id,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=43
	CIDR string `json:"cidr,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=39
	GatewayIP string `json:"gatewayIP,omitempty"`
	// +optional
	IPVersion int32 `json:"ipVersion,omitempty"`
	// +optional
	EnableDHCP bool `json:"enableDHCP,omitempty"`
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	DNSNameservers []string `json:"dnsNameservers,omitempty"`
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	AllocationPools []AllocationPool `json:"allocationPools,omitempty"`
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	HostRoutes []HostRouteObservation `json:"hostRoutes,omitempty"`
	// SubnetPoolID is the pool the subnet's range was taken from.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	SubnetPoolID string `json:"subnetPoolID,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Description string `json:"description,omitempty"`
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=255
	Tags []string `json:"tags,omitempty"`
	// +optional
	RevisionNumber int64 `json:"revisionNumber,omitempty"`
}

// HostRouteObservation is a host route of a subnet as Neutron holds it.
type HostRouteObservation struct {
	// +kubebuilder:validation:MaxLength=43
	Destination string `json:"destination"`
	// +kubebuilder:validation:MaxLength=39
	Nexthop string `json:"nexthop"`
}

// AllocationPool is a range of addresses a subnet hands out.
type AllocationPool struct {
	// +kubebuilder:validation:MaxLength=39
	Start string `json:"start"`
	// +kubebuilder:validation:MaxLength=39
	End string `json:"end"`
}

// NetworkList is a list of Networks.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type NetworkList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Network `json:"items"`
}

// The Ready condition and its reasons.
const (
	// ConditionReady is True when the backend network and subnet exist and
	// match the spec.
	ConditionReady = "Ready"

	// ReasonProvisioned (Ready=True): the backend matches the spec.
	ReasonProvisioned = "Provisioned"
	// ReasonProvisioning (Ready=Unknown): the controller is creating or
	// updating the backend network.
	ReasonProvisioning = "Provisioning"
	// ReasonInvalidSpec (Ready=False, permanent): the spec fails validation
	// (ValidateSpec); fix the spec.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonBackendUnavailable (Ready=False, transient): the backend could
	// not be reached or failed (timeouts, refused connections, 5xx); the
	// controller retries with backoff.
	ReasonBackendUnavailable = "BackendUnavailable"
	// ReasonBackendRejected (Ready=False, permanent): the backend rejected
	// the request (4xx); the controller does not retry until the spec changes.
	ReasonBackendRejected = "BackendRejected"
	// ReasonBackendInUse (Ready=False, transient): the backend refuses to
	// delete the network because something still uses it (Neutron ports of
	// servers); the controller retries with backoff.
	ReasonBackendInUse = "BackendInUse"
	// ReasonQuotaExceeded (Ready=False, transient): the backend project's
	// quota of networks or subnets is used up; the controller retries with
	// backoff until an operator raises the quota or frees some.
	ReasonQuotaExceeded = "QuotaExceeded"
	// ReasonCIDROverlap (Ready=False, permanent): the cidr overlaps a subnet
	// the backend already has in the same address scope; pick another cidr.
	ReasonCIDROverlap = "CIDROverlap"
	// ReasonCIDRMismatch (Ready=False, permanent): the backend subnet has a
	// different CIDR than the spec (changed outside Kubernetes); a subnet's
	// CIDR cannot be changed, so delete and recreate the Network.
	ReasonCIDRMismatch = "CIDRMismatch"
	// ReasonDeleting (Ready=False): the Network is being deleted and the
	// controller is removing the backend network.
	ReasonDeleting = "Deleting"
	// ReasonObserved (Ready=True, Unmanaged): the imported network and
	// subnet exist and match what the spec expects (cidr, gateway, when
	// set); the controller only reads them.
	ReasonObserved = "Observed"
	// ReasonImportNotFound (Ready=False, transient): the network to import
	// is not in the backend (not yet, or deleted behind the controller's
	// back); the controller looks again with backoff and never creates it.
	ReasonImportNotFound = "ImportNotFound"
	// ReasonSpecMismatch (Ready=False, Unmanaged): the imported subnet's
	// cidr or gateway differs from the spec; reported, never repaired: fix
	// the spec, or the network in the backend.
	ReasonSpecMismatch = "SpecMismatch"
	// ReasonRouterNotFound (Ready=False, permanent): spec.router names a
	// router that does not exist or that the project cannot use (another
	// project's); create it, or fix the spec.
	ReasonRouterNotFound = "RouterNotFound"
	// ReasonSubnetPoolNotFound (Ready=False, permanent): spec.subnetPool
	// names a pool that does not exist or that the project cannot use;
	// create or share it, or fix the spec.
	ReasonSubnetPoolNotFound = "SubnetPoolNotFound"
	// ReasonSubnetPoolExhausted (Ready=False, transient): the pool has no
	// free range of the prefix length; the controller retries with
	// backoff until a range is freed or the pool grows.
	ReasonSubnetPoolExhausted = "SubnetPoolExhausted"
)
