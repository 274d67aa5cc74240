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
// +kubebuilder:validation:XValidation:rule="!has(self.cidr) || !has(self.gateway) || !isCIDR(self.cidr) || !isIP(self.gateway) || ip(self.gateway).family() == cidr(self.cidr).ip().family()",messageExpression="'gateway ' + self.gateway + (ip(self.gateway).family() == 4 ? ' is an IPv4 address but cidr ' : ' is an IPv6 address but cidr ') + self.cidr + (ip(self.gateway).family() == 4 ? ' is an IPv6 network' : ' is an IPv4 network') + ': use a gateway of the same family, inside the cidr'",fieldPath=".gateway",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.cidr) || !has(self.gateway) || !isCIDR(self.cidr) || !isIP(self.gateway) || ip(self.gateway).family() != cidr(self.cidr).ip().family() || cidr(self.cidr).containsIP(ip(self.gateway))",messageExpression="'gateway ' + self.gateway + ' is outside cidr ' + self.cidr + ': use an address inside the cidr'",fieldPath=".gateway",reason=FieldValueInvalid
type NetworkSpec struct {
	// CIDR is the network's address range: an IPv4 or IPv6 network in
	// canonical CIDR notation (host bits zero, e.g. 192.168.0.0/16 or
	// fd00:10::/64). It becomes the CIDR of the backend subnet and cannot be
	// changed afterwards: to move a Network to another range, delete it and
	// create it again.
	//
	// +required
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="cidr must be an IPv4 or IPv6 network in CIDR notation, such as 192.168.0.0/16 or fd00:10::/64"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",messageExpression="'cidr ' + self + ' has host bits set: write the network address, with every bit after the prefix length zero (e.g. 192.168.0.0/16, not 192.168.0.1/16)'"
	// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || string(cidr(self)) == self",messageExpression="'cidr ' + self + ' is not in canonical form: write IPv6 in lowercase, without leading zeros, with the longest run of zero groups written as :: (e.g. fd00:10::/64)'"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cidr is immutable: Neutron cannot change a subnet's CIDR; delete the Network and create it again with the new cidr"
	CIDR string `json:"cidr"`

	// Gateway is the subnet's gateway: an IP address of the same family as
	// cidr, inside cidr, in canonical form (e.g. 192.168.0.1 or fd00:10::1).
	// It can be changed.
	//
	// +required
	// +kubebuilder:validation:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="gateway must be an IPv4 or IPv6 address, such as 192.168.0.1 or fd00:10::1"
	// +kubebuilder:validation:XValidation:rule="!isIP(self) || ip.isCanonical(self)",messageExpression="'gateway ' + self + ' is not in canonical form: write IPv6 in lowercase, without leading zeros, with the longest run of zero groups written as :: (e.g. fd00:10::1)'"
	Gateway string `json:"gateway"`
}

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
)
