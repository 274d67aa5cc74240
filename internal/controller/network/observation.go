package network

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// NormalizeNetwork returns o in the form backends return and status
// comparisons use: its tags sorted (a backend's order is not a change),
// empty lists nil (as a status read back from the API server has them).
func NormalizeNetwork(o *samplecrdv1.NetworkObservation) *samplecrdv1.NetworkObservation {
	if o == nil {
		return nil
	}
	o = o.DeepCopy()
	slices.Sort(o.Tags)
	if len(o.Tags) == 0 {
		o.Tags = nil
	}
	return o
}

// NormalizeSubnet returns s in the form backends return and status
// comparisons use: its tags sorted, empty lists nil. The order of DNS
// servers, pools and routes is kept: it is the backend's (DNS servers are
// tried in it).
func NormalizeSubnet(s *samplecrdv1.SubnetObservation) *samplecrdv1.SubnetObservation {
	if s == nil {
		return nil
	}
	s = s.DeepCopy()
	if len(s.DNSNameservers) == 0 {
		s.DNSNameservers = nil
	}
	if len(s.AllocationPools) == 0 {
		s.AllocationPools = nil
	}
	if len(s.HostRoutes) == 0 {
		s.HostRoutes = nil
	}
	slices.Sort(s.Tags)
	if len(s.Tags) == 0 {
		s.Tags = nil
	}
	return s
}

// inStatus reports whether status already shows what got holds: its IDs
// and, when the backend reported them, its observations (compared in
// normalized form, so a reordering of tags writes nothing).
func inStatus(status *samplecrdv1.NetworkStatus, got *Network) bool {
	if got == nil {
		return true
	}
	if status.NetworkID != got.NetworkID || status.SubnetID != got.SubnetID {
		return false
	}
	if got.Observed != nil && !equality.Semantic.DeepEqual(NormalizeNetwork(status.Network), NormalizeNetwork(got.Observed)) {
		return false
	}
	if got.ObservedSubnet != nil && !equality.Semantic.DeepEqual(NormalizeSubnet(status.Subnet), NormalizeSubnet(got.ObservedSubnet)) {
		return false
	}
	return equality.Semantic.DeepEqual(status.Router, routerStatus(got))
}

// routerStatus returns what a Network's status shows of got's router
// interface.
func routerStatus(got *Network) *samplecrdv1.RouterObservation {
	if got.RouterID == "" {
		return nil
	}
	return &samplecrdv1.RouterObservation{ID: got.RouterID, PortID: got.RouterPortID}
}

// setInStatus writes what got holds into status (see inStatus).
func setInStatus(status *samplecrdv1.NetworkStatus, got *Network) {
	if got == nil {
		return
	}
	status.NetworkID, status.SubnetID = got.NetworkID, got.SubnetID
	if got.Observed != nil {
		status.Network = NormalizeNetwork(got.Observed)
	}
	if got.ObservedSubnet != nil {
		status.Subnet = NormalizeSubnet(got.ObservedSubnet)
	}
	status.Router = routerStatus(got)
}
