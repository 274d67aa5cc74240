//go:build tools

// Package tools pins external-dns, which the DNS cut-over test runs against
// the test API server to prove that a record follows a move between an
// Ingress and an HTTPRoute without a moment with no record. It is a module
// of its own because external-dns's Kubernetes dependencies differ from
// kube-apiserver's in ../go.mod. hack/build-tools.sh builds it into
// ../../../bin/external-dns.
package tools

import (
	_ "sigs.k8s.io/external-dns"
)
