//go:build tools

// Package tools pins Helm, which `make verify` lints and renders the chart
// with (charts/controller-manager) and the e2e test installs it with. It is a
// module of its own because Helm's Kubernetes dependencies are newer than
// kube-apiserver's in ../go.mod. hack/build-tools.sh builds it into
// ../../../bin/helm.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
