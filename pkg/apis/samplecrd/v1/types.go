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
// +kubebuilder:validation:XValidation:rule="(has(self.cidr) && size(self.cidr) > 0) || has(self.import)",message="cidr is required unless import is set: give the network's address range, such as 192.168.0.0/16, or import an existing Neutron network",fieldPath=".cidr",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="(has(self.gateway) && size(self.gateway) > 0) || has(self.import)",message="gateway is required unless import is set: give the subnet's gateway, such as 192.168.0.1, or import an existing Neutron network",fieldPath=".gateway",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.managementPolicy) || self.managementPolicy != 'Unmanaged' || has(self.import)",message="an Unmanaged Network only observes an existing Neutron network: set import.networkID or import.filter, or use managementPolicy: Managed to have one created",fieldPath=".import",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.onDelete) || !has(self.managementPolicy) || self.managementPolicy != 'Unmanaged'",message="onDelete applies only to Managed Networks: deleting an Unmanaged Network never touches Neutron; remove onDelete",fieldPath=".onDelete",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="(has(self.managementPolicy) ? self.managementPolicy : 'Managed') == (has(oldSelf.managementPolicy) ? oldSelf.managementPolicy : 'Managed')",message="managementPolicy is immutable: delete the Network and create it again with the new policy (a Managed Network with onDelete: Detach leaves its Neutron network in place when deleted, so it can be imported again)",fieldPath=".managementPolicy"
// +kubebuilder:validation:XValidation:rule="has(self.import) == has(oldSelf.import)",message="import is immutable: delete the Network and create it again with the import it should have",fieldPath=".import"
// +kubebuilder:validation:XValidation:rule="has(self.cidr) == has(oldSelf.cidr)",message="cidr is immutable: Neutron cannot change a subnet's CIDR; delete the Network and create it again with the new cidr",fieldPath=".cidr"
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

	// CloudCredentialsRef names the OpenStack credentials to reconcile the
	// Network with: a clouds.yaml in a Secret of the Network's namespace.
	// Without it, the manager's own cloud. Immutable. Needs a manager run
	// with --network-credentials-from-secrets.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cloudCredentialsRef is immutable: a Network stays in the project it was created in; delete the Network and create it again with the credentials it should use (to rotate a password, change the Secret instead)"
	CloudCredentialsRef *CloudCredentialsRef `json:"cloudCredentialsRef,omitempty"`
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

	// Tags must all be on the network.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
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
	RevisionNumber int64 `json:"revisionNumber,omitempty"`
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
)
