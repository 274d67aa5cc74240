//go:build tools

// Package tools pins Prometheus: promtool, which `make test` checks and
// unit-tests the shipped alert rules with (config/prometheus), and the
// Prometheus server, which tests that load those rules against a running
// manager start. It is a module of its own because Prometheus's
// dependencies (client-go, OpenTelemetry, ...) move at their own pace.
// hack/build-tools.sh builds both in one `go build` into ../../../bin.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
