//go:build tools

// Package tools pins the binaries the project builds for itself: the real
// kube-apiserver and etcd used by the tests and by `make run`, the rest of a
// one-node Kubernetes for the e2e tests (hack/node-up.sh), and the code
// generators. `make` builds them into ../../bin (see hack/build-tools.sh).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/code-generator"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
