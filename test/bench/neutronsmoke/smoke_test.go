// Package neutronsmoke runs the neutron phase of the benchmark at a tiny
// size against the real Neutron `make test` starts. It is a package of its
// own because the bench package's tests run in a private network namespace
// (for the routable step), where that Neutron, on the host's loopback, is
// out of reach.
package neutronsmoke

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	"github.com/kube-sample/controller-manager/test/bench"
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestSmokeNeutronImport runs the neutron phase's import case alone at a
// tiny N against the real Neutron `make test` starts, so that it cannot
// rot: both policies reach Ready, with request counts within their goals.
func TestSmokeNeutronImport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and builds the manager")
	}
	cloud := neutrontest.Get(t)
	const n = 3
	cfg := bench.Config{
		N:                     1,
		ManagerBinary:         "/bin/true", // no phase here runs it
		Settle:                200 * time.Millisecond,
		PhaseTimeout:          2 * time.Minute,
		NeutronImportNetworks: n,
		OpenStackDir:          cloud.Dir,
		Skip: map[string]bool{"manager at N=0": true, "limit": true, "ingress-manager": true, "peer": true,
			"httproute": true, "network": true},
		Log: testWriter{t},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("bench run failed: %v", err)
	}
	i := slices.IndexFunc(res.Steps, func(s bench.Step) bool { return s.Name == "neutron" })
	if i < 0 || res.Steps[i].Outcome != "done" {
		t.Fatalf("steps = %+v, want the neutron step done", res.Steps)
	}
	if len(res.NeutronImport) != 2 {
		t.Fatalf("import cases = %+v, want Unmanaged and Managed", res.NeutronImport)
	}
	for i, policy := range []string{"Unmanaged", "Managed"} {
		c := res.NeutronImport[i]
		if c.Policy != policy || c.Networks != n || !(c.PerSecond > 0) || c.RequestsPerNetwork < 2 || c.RestartRequests < 2 {
			t.Errorf("import case %d = %+v, want %s, %d Networks at a positive rate, at least 2 requests each and a restart's List", i, c, policy, n)
		}
	}
	for _, target := range res.Targets {
		if strings.Contains(target.Name, "import") && !target.Met {
			t.Errorf("target %q: %s, want %s", target.Name, target.Measured, target.Target)
		}
	}
	var table strings.Builder
	res.WriteTable(&table)
	if !strings.Contains(table.String(), "neutron (real): import by ID") {
		t.Errorf("the table lacks the import case:\n%s", table.String())
	}
}
