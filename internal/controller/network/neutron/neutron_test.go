package neutron_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/backendtest"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/fakeopenstack"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// newBackend starts a fake OpenStack and a backend configured from its OS_*
// variables.
func newBackend(t *testing.T, opts neutron.Options) (*neutron.Backend, *fakeopenstack.Server) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	srv := fakeopenstack.NewForTest(t)
	if opts.Getenv == nil {
		opts.Getenv = envOf(srv.Env())
	}
	b, err := neutron.New(ctx, opts)
	if err != nil {
		t.Fatalf("neutron.New: %v", err)
	}
	return b, srv
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backendtest.Setup {
		b, srv := newBackend(t, neutron.Options{})
		srv.SetAllowOverlappingIPs(false)
		return backendtest.Setup{
			Backend: b,
			AddForeign: func(t *testing.T, name, cidr, gateway string) string {
				id := srv.AddNetwork(name, "created by an operator")
				srv.AddSubnet(id, name, cidr, gateway)
				return id
			},
			ForeignIntact: func(t *testing.T, id, cidr, gateway string) error {
				return foreignIntact(srv, id, cidr, gateway)
			},
			InterruptNextCreate: func(t *testing.T) {
				srv.FailRoute("POST /v2.0/subnets", http.StatusServiceUnavailable, 1)
			},
			Writes:         srv.Writes,
			RejectsOverlap: true,
		}
	})
}

func foreignIntact(srv *fakeopenstack.Server, id, cidr, gateway string) error {
	for _, n := range srv.Networks() {
		if n.ID != id {
			continue
		}
		if len(n.Tags) != 0 || n.RevisionNumber != 2 { // 1 + its subnet
			return fmt.Errorf("network changed: %+v", n)
		}
		for _, s := range srv.Subnets() {
			if s.NetworkID == id {
				if s.CIDR != cidr || s.GatewayIP == nil || *s.GatewayIP != gateway || len(s.Tags) != 0 || s.RevisionNumber != 0 {
					return fmt.Errorf("subnet changed: %+v", s)
				}
				return nil
			}
		}
		return errors.New("its subnet is gone")
	}
	return errors.New("it is gone")
}

var example = network.Network{UID: "0b7d6f1e-2c3a-4d5e-8f90-123456789abc", Namespace: "default", Name: "example-network",
	CIDR: "192.168.0.0/16", Gateway: "192.168.0.1"}

// TestNeutronObjects checks what an operator sees in Neutron.
func TestNeutronObjects(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b, srv := newBackend(t, neutron.Options{})
	got, err := b.Create(ctx, example)
	if err != nil {
		t.Fatal(err)
	}
	nets, subs := srv.Networks(), srv.Subnets()
	if len(nets) != 1 || len(subs) != 1 {
		t.Fatalf("got %d networks and %d subnets, want one each", len(nets), len(subs))
	}
	n, s := nets[0], subs[0]
	wantTags := []string{"k8s-network-uid=" + string(example.UID), "managed-by=controller-manager"}
	wantDesc := "Kubernetes Network default/example-network (uid " + string(example.UID) + "), managed by controller-manager"
	if n.Name != "k8s-default-example-network" || n.Description != wantDesc || !slices.Equal(n.Tags, wantTags) || !n.AdminStateUp {
		t.Errorf("network = %+v", n)
	}
	if s.Name != "k8s-default-example-network" || s.Description != wantDesc || !slices.Equal(s.Tags, wantTags) ||
		s.NetworkID != n.ID || s.CIDR != "192.168.0.0/16" || s.IPVersion != 4 || s.GatewayIP == nil || *s.GatewayIP != "192.168.0.1" {
		t.Errorf("subnet = %+v", s)
	}
	if got.NetworkID != n.ID || got.SubnetID != s.ID {
		t.Errorf("Create = %+v, want the IDs %s and %s", *got, n.ID, s.ID)
	}
	if c := srv.Count("POST /v3/auth/tokens"); c != 1 {
		t.Errorf("authenticated %d times, want once", c)
	}

	v6 := network.Network{UID: "uid-v6", Namespace: "default", Name: "v6", CIDR: "fd00:10::/64", Gateway: "fd00:10::1"}
	if _, err := b.Create(ctx, v6); err != nil {
		t.Fatal(err)
	}
	if s := srv.Subnets()[1]; s.IPVersion != 6 || s.CIDR != "fd00:10::/64" {
		t.Errorf("IPv6 subnet = %+v", s)
	}
}

func TestServerErrorsAreTransient(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b, srv := newBackend(t, neutron.Options{})
	for _, status := range []int{500, 502, 503, 504, 429} {
		srv.FailNext(1, status)
		_, err := b.Get(ctx, example.UID)
		if err == nil || network.IsPermanent(err) || network.IsNotFound(err) || network.Reason(err) != samplecrdv1.ReasonBackendUnavailable {
			t.Fatalf("Get with a %d = %v, want a transient %s error", status, err, samplecrdv1.ReasonBackendUnavailable)
		}
		if !strings.Contains(err.Error(), fmt.Sprint(status)) {
			t.Errorf("error %q does not mention the status %d", err, status)
		}
	}

	// A 5xx half-way through a create, then a retry: one network, no duplicate.
	srv.FailRoute("POST /v2.0/subnets", http.StatusInternalServerError, 1)
	if _, err := b.Create(ctx, example); err == nil || network.IsPermanent(err) {
		t.Fatalf("Create with a 500 on the subnet = %v, want a transient error", err)
	}
	if _, err := b.Create(ctx, example); err != nil {
		t.Fatalf("retried Create: %v", err)
	}
	if n, s := len(srv.Networks()), len(srv.Subnets()); n != 1 || s != 1 {
		t.Fatalf("after a retried Create: %d networks, %d subnets; want 1 and 1", n, s)
	}
	if c := srv.Count("POST /v2.0/networks"); c != 1 {
		t.Fatalf("POST /v2.0/networks %d times, want 1", c)
	}
}

func TestReauthenticatesWhenTheTokenExpires(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b, srv := newBackend(t, neutron.Options{})
	if _, err := b.Create(ctx, example); err != nil {
		t.Fatal(err)
	}
	srv.ExpireTokens()
	got, err := b.Get(ctx, example.UID)
	if err != nil {
		t.Fatalf("Get after the token expired: %v", err)
	}
	if got.SubnetID == "" {
		t.Fatalf("Get = %+v", *got)
	}
	if c := srv.Count("POST /v3/auth/tokens"); c != 2 {
		t.Fatalf("authenticated %d times, want 2 (once more after the expiry)", c)
	}
	if c := srv.Count("GET /v2.0/networks"); c < 2 {
		t.Fatalf("GET /v2.0/networks %d times, want the rejected request retried", c)
	}

	// Tokens that expire by themselves.
	srv.SetTokenTTL(300 * time.Millisecond)
	srv.ExpireTokens()
	for range 2 {
		time.Sleep(350 * time.Millisecond)
		if _, err := b.List(ctx); err != nil {
			t.Fatalf("List with short-lived tokens: %v", err)
		}
	}
	if c := srv.Count("POST /v3/auth/tokens"); c != 4 {
		t.Fatalf("authenticated %d times, want 4", c)
	}

	// Keystone down during re-authentication: transient.
	srv.SetTokenTTL(time.Hour)
	srv.ExpireTokens()
	srv.FailRoute("POST /v3/auth/tokens", http.StatusServiceUnavailable, 1)
	if _, err := b.Get(ctx, example.UID); err == nil || network.IsPermanent(err) {
		t.Fatalf("Get while Keystone fails = %v, want a transient error", err)
	}
	if _, err := b.Get(ctx, example.UID); err != nil {
		t.Fatalf("Get once Keystone is back: %v", err)
	}

	// Credentials revoked: re-authentication fails with 401, permanent.
	srv.ExpireTokens()
	srv.FailRoute("POST /v3/auth/tokens", http.StatusUnauthorized, -1)
	_, err = b.Get(ctx, example.UID)
	if !network.IsPermanent(err) || !strings.Contains(err.Error(), "re-authenticating") {
		t.Fatalf("Get with revoked credentials = %v, want a permanent re-authentication error", err)
	}
}

func TestClientErrorsArePermanent(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b, srv := newBackend(t, neutron.Options{})

	srv.FailRoute("POST /v2.0/networks", http.StatusConflict, 1)
	_, err := b.Create(ctx, example)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected || !strings.Contains(err.Error(), "409") {
		t.Fatalf("Create with a 409 = %v, want a permanent %s error", err, samplecrdv1.ReasonBackendRejected)
	}

	// Neutron refuses the network address as an IPv4 gateway: 400.
	bad := network.Network{UID: "uid-bad", Namespace: "default", Name: "bad", CIDR: "10.0.0.0/24", Gateway: "10.0.0.0"}
	_, err = b.Create(ctx, bad)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected ||
		!strings.Contains(err.Error(), "400 Bad Request: InvalidInput: Invalid input for operation: Gateway is not valid on subnet.") {
		t.Fatalf("Create with a gateway Neutron refuses = %v, want a permanent error with Neutron's message", err)
	}

	// Overlap with another subnet of the project (allow_overlapping_ips off).
	srv.SetAllowOverlappingIPs(false)
	id := srv.AddNetwork("operator-net", "")
	srv.AddSubnet(id, "operator-subnet", "192.168.10.0/24", "192.168.10.1")
	_, err = b.Create(ctx, example)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonCIDROverlap || !strings.Contains(err.Error(), "overlaps with another subnet") {
		t.Fatalf("Create of an overlapping cidr = %v, want a permanent %s error", err, samplecrdv1.ReasonCIDROverlap)
	}
}

func TestDeleteOfANetworkInUseIsTransient(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b, srv := newBackend(t, neutron.Options{})
	got, err := b.Create(ctx, example)
	if err != nil {
		t.Fatal(err)
	}
	// An operator adds a subnet to our network: we delete ours, never theirs,
	// and Neutron refuses to delete the network while it is in use.
	theirs := srv.AddSubnet(got.NetworkID, "operator-subnet", "10.99.0.0/24", "10.99.0.1")
	err = b.Delete(ctx, example)
	if err == nil || network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendInUse || !strings.Contains(err.Error(), "NetworkInUse") {
		t.Fatalf("Delete of a network in use = %v, want a transient %s error", err, samplecrdv1.ReasonBackendInUse)
	}
	subs := srv.Subnets()
	if len(subs) != 1 || subs[0].ID != theirs {
		t.Fatalf("subnets after Delete = %+v, want only the operator's", subs)
	}
}

func TestDownIsTransient(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b, srv := newBackend(t, neutron.Options{})
	srv.SetDown(true)
	for _, call := range []func() error{
		func() error { _, err := b.Get(ctx, example.UID); return err },
		func() error { _, err := b.Create(ctx, example); return err },
		func() error { return b.Delete(ctx, example) },
		func() error { _, err := b.List(ctx); return err },
	} {
		if err := call(); err == nil || network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendUnavailable {
			t.Fatalf("call while the server is down = %v, want a transient %s error", err, samplecrdv1.ReasonBackendUnavailable)
		}
	}
	srv.SetDown(false)
	if _, err := b.Create(ctx, example); err != nil {
		t.Fatalf("Create once the server is back: %v", err)
	}

	// A server that is gone: connection refused.
	srv.Close()
	_, err := b.Get(ctx, example.UID)
	if err == nil || network.IsPermanent(err) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Get from a closed server = %v, want a transient connection refused error", err)
	}
}

func TestLatencyAndTimeout(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b, srv := newBackend(t, neutron.Options{RequestTimeout: 100 * time.Millisecond})
	srv.SetLatency(20 * time.Millisecond)
	if _, err := b.Get(ctx, example.UID); !network.IsNotFound(err) {
		t.Fatalf("Get with some latency = %v, want not found", err)
	}
	srv.SetLatency(time.Second)
	start := time.Now()
	_, err := b.Get(ctx, example.UID)
	if err == nil || network.IsPermanent(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get slower than the timeout = %v, want a transient deadline error", err)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Fatalf("Get took %v despite the 100ms timeout", d)
	}
}

// TestInterruptedTagging: a crash between creating the network and tagging
// it leaves an untagged network; the next Create adopts it (no duplicate)
// and Delete finds it.
func TestInterruptedTagging(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b, srv := newBackend(t, neutron.Options{})
	srv.FailRoute("PUT /v2.0/networks/{id}/tags", http.StatusServiceUnavailable, 1)
	if _, err := b.Create(ctx, example); err == nil {
		t.Fatal("Create succeeded despite the failed tagging")
	}
	if _, err := b.Get(ctx, example.UID); !network.IsNotFound(err) {
		t.Fatalf("Get of an untagged network = %v, want not found", err)
	}
	got, err := b.Create(ctx, example)
	if err != nil {
		t.Fatal(err)
	}
	if c := srv.Count("POST /v2.0/networks"); c != 1 || len(srv.Networks()) != 1 {
		t.Fatalf("POST /v2.0/networks %d times, %d networks: want the first one adopted", c, len(srv.Networks()))
	}
	if got.SubnetID == "" {
		t.Fatalf("Create = %+v", *got)
	}

	// The same for the subnet.
	other := network.Network{UID: "uid-2", Namespace: "default", Name: "other", CIDR: "10.2.0.0/16", Gateway: "10.2.0.1"}
	srv.FailRoute("PUT /v2.0/subnets/{id}/tags", http.StatusServiceUnavailable, 1)
	if _, err := b.Create(ctx, other); err == nil {
		t.Fatal("Create succeeded despite the failed subnet tagging")
	}
	if _, err := b.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if c := srv.Count("POST /v2.0/subnets"); c != 2 || len(srv.Subnets()) != 2 {
		t.Fatalf("POST /v2.0/subnets %d times, %d subnets: want the untagged one adopted", c, len(srv.Subnets()))
	}

	// Delete finds an untagged network from the Network's name.
	third := network.Network{UID: "uid-3", Namespace: "default", Name: "third", CIDR: "10.3.0.0/16", Gateway: "10.3.0.1"}
	srv.FailRoute("PUT /v2.0/networks/{id}/tags", http.StatusServiceUnavailable, 1)
	_, _ = b.Create(ctx, third)
	if err := b.Delete(ctx, third); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Networks()); n != 2 {
		t.Fatalf("%d networks after deleting the untagged one, want 2", n)
	}
}

// TestManagedByIsolatesClusters: two clusters sharing a project never see
// each other's networks.
func TestManagedByIsolatesClusters(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	a, srv := newBackend(t, neutron.Options{ManagedBy: "cluster-a"})
	other, err := neutron.New(ctx, neutron.Options{Getenv: envOf(srv.Env()), ManagedBy: "cluster-b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, example); err != nil {
		t.Fatal(err)
	}
	if list, err := other.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("cluster-b List = %v, %v; want nothing", list, err)
	}
	if _, err := other.Get(ctx, example.UID); !network.IsNotFound(err) {
		t.Fatalf("cluster-b Get = %v, want not found", err)
	}
	if err := other.Delete(ctx, example); err != nil {
		t.Fatal(err)
	}
	if list, err := a.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("cluster-a List = %v, %v; want its network", list, err)
	}
	if _, err := neutron.New(ctx, neutron.Options{Getenv: envOf(srv.Env()), ManagedBy: "a,b"}); err == nil {
		t.Fatal("New accepted a ManagedBy with a comma")
	}
}

func TestConfiguration(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	srv := fakeopenstack.NewForTest(t)

	t.Run("clouds.yaml", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "clouds.yaml")
		if err := os.WriteFile(file, []byte(srv.CloudsYAML("test-cloud")), 0o600); err != nil {
			t.Fatal(err)
		}
		env := envOf(map[string]string{"OS_CLOUD": "test-cloud", "OS_CLIENT_CONFIG_FILE": file})
		b, err := neutron.New(ctx, neutron.Options{Getenv: env})
		if err != nil {
			t.Fatalf("New from clouds.yaml: %v", err)
		}
		if _, err := b.Create(ctx, example); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, example); err != nil {
			t.Fatal(err)
		}
		_, err = neutron.New(ctx, neutron.Options{Getenv: envOf(map[string]string{"OS_CLOUD": "nope", "OS_CLIENT_CONFIG_FILE": file})})
		if err == nil || !strings.Contains(err.Error(), `cloud "nope"`) {
			t.Fatalf("New with an unknown cloud = %v", err)
		}
	})

	t.Run("project ID and domain IDs", func(t *testing.T) {
		env := srv.Env()
		delete(env, "OS_PROJECT_NAME")
		delete(env, "OS_USER_DOMAIN_NAME")
		delete(env, "OS_PROJECT_DOMAIN_NAME")
		env["OS_PROJECT_ID"] = srv.ProjectID
		env["OS_USER_DOMAIN_ID"] = "default"
		if _, err := neutron.New(ctx, neutron.Options{Getenv: envOf(env)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("not configured", func(t *testing.T) {
		_, err := neutron.New(ctx, neutron.Options{Getenv: envOf(nil)})
		if !errors.Is(err, neutron.ErrNotConfigured) {
			t.Fatalf("New without configuration = %v", err)
		}
	})

	t.Run("missing variables", func(t *testing.T) {
		env := srv.Env()
		delete(env, "OS_PASSWORD")
		delete(env, "OS_PROJECT_DOMAIN_NAME")
		_, err := neutron.New(ctx, neutron.Options{Getenv: envOf(env)})
		if err == nil || !strings.Contains(err.Error(), "OS_PASSWORD, OS_PROJECT_DOMAIN_NAME are not") {
			t.Fatalf("New with missing variables = %v", err)
		}
	})

	t.Run("bad password", func(t *testing.T) {
		env := srv.Env()
		env["OS_PASSWORD"] = "wrong"
		_, err := neutron.New(ctx, neutron.Options{Getenv: envOf(env)})
		if err == nil || !strings.Contains(err.Error(), "authenticating to Keystone v3") || !strings.Contains(err.Error(), "401") {
			t.Fatalf("New with a bad password = %v", err)
		}
	})

	t.Run("unknown region", func(t *testing.T) {
		env := srv.Env()
		env["OS_REGION_NAME"] = "Elsewhere"
		_, err := neutron.New(ctx, neutron.Options{Getenv: envOf(env)})
		if err == nil || !strings.Contains(err.Error(), `region "Elsewhere"`) {
			t.Fatalf("New in an unknown region = %v", err)
		}
	})

	t.Run("explicit endpoint", func(t *testing.T) {
		b, err := neutron.New(ctx, neutron.Options{Getenv: envOf(srv.Env()), Endpoint: srv.NetworkURL, HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.List(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
