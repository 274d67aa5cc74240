// Package v1 holds version v1 of the samplecrd.k8s.io API: the Network kind,
// a namespaced network (CIDR and gateway) that the network controller
// reconciles into a network backend (OpenStack Neutron, or an in-memory one).
//
// Generated code: zz_generated.deepcopy.go (deepcopy-gen), the clientset,
// listers, informers and apply configurations under pkg/generated, and the
// CRD under config/crd (controller-gen) all come from the markers in this
// package; run hack/update-codegen.sh after changing it.
//
// +k8s:deepcopy-gen=package
// +groupName=samplecrd.k8s.io
package v1
