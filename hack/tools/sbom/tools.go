//go:build tools

// Package tools pins cyclonedx-gomod, which writes the SBOM of each
// release binary (hack/release.sh). A module of its own, so that its
// dependencies do not move the Kubernetes ones of hack/tools.
package tools

import (
	_ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
)
