//go:build tools

// Package tools pins Traefik, the ingress controller the traffic tests send
// real requests through. It is a module of its own because its Kubernetes
// dependencies are older than the main module's and than hack/tools'.
// hack/build-tools.sh builds it into ../../../bin/traefik.
package tools

import (
	_ "github.com/traefik/traefik/v3/cmd/traefik"
)
