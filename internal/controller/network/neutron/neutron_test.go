package neutron_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/quotas"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/backendtest"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Every test here runs against the real Keystone and Neutron that `make
// test` starts (see neutrontest), most of them through the fault proxy.

// TestConformance holds the Neutron backend to the contract every backend
// meets (the memory backend runs the same suite).
func TestConformance(t *testing.T) {
	cloud := neutrontest.Get(t)
	backendtest.Run(t, func(t *testing.T) backendtest.Setup {
		proxy := cloud.NewProxy(t)
		admin := cloud.Admin(t)
		return backendtest.Setup{
			Backend: proxy.Backend(t, cloud, neutron.Options{}),
			AddForeign: func(t *testing.T, name, cidr, gateway string, tags ...string) string {
				return cloud.AddNetwork(t, "", name, cidr, gateway, tags...).ID
			},
			ForeignIntact: func(t *testing.T, id, cidr, gateway string) error {
				return foreignIntact(t, cloud, admin, id, cidr, gateway)
			},
			InterruptNextCreate: func(t *testing.T) {
				proxy.FailRoute("POST /v2.0/subnets", http.StatusServiceUnavailable, 1)
			},
			AddRouter: func(t *testing.T, name string) string { return cloud.AddRouter(t, "", name) },
			ForeignRouter: func(t *testing.T) string {
				return cloud.AddRouter(t, cloud.AdminProjectID, "admins-"+string(uuid.NewUUID())[:8])
			},
			AddSubnetPool: func(t *testing.T, name, prefix string, defaultLength int) string {
				return cloud.AddSubnetPool(t, name, prefix, defaultLength)
			},
			Writes: proxy.Writes,
			// Neutron only refuses overlapping subnets within one network.
			RejectsOverlap: false,
		}
	})
}

// foreignIntact checks, as the admin, that network id is as AddNetwork left
// it: untagged, same revision, one subnet with cidr and gateway.
func foreignIntact(t *testing.T, cloud *neutrontest.Cloud, admin *gophercloud.ServiceClient, id, cidr, gateway string) error {
	n, err := networks.Get(context.Background(), admin, id).Extract()
	if err != nil {
		return fmt.Errorf("it is gone: %w", err)
	}
	if len(n.Tags) != 0 || n.RevisionNumber != 2 { // created, then its subnet added
		return fmt.Errorf("network changed: tags %v, revision %d", n.Tags, n.RevisionNumber)
	}
	subs := cloud.Subnets(t, admin, id)
	if len(subs) != 1 {
		return fmt.Errorf("it has %d subnets, want 1", len(subs))
	}
	if s := subs[0]; s.CIDR != cidr || s.GatewayIP != gateway || len(s.Tags) != 0 || s.RevisionNumber != 0 {
		return fmt.Errorf("subnet changed: %+v", s)
	}
	return nil
}

func example() network.Network {
	return network.Network{UID: uuid.NewUUID(), Namespace: "default", Name: "example-network",
		CIDR: "192.168.0.0/16", Gateway: "192.168.0.1"}
}

// TestNeutronObjects checks what an operator sees in Neutron.
func TestNeutronObjects(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	proxy := cloud.NewProxy(t)
	managedBy := neutrontest.UniqueManagedBy()
	b := proxy.Backend(t, cloud, neutron.Options{ManagedBy: managedBy})
	ex := example()
	got, err := b.Create(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	member := cloud.Member(t)
	nets := cloud.Networks(t, member, neutron.ManagedByTagPrefix+managedBy)
	if len(nets) != 1 {
		t.Fatalf("got %d networks, want one", len(nets))
	}
	n := nets[0]
	subs := cloud.Subnets(t, member, n.ID)
	if len(subs) != 1 {
		t.Fatalf("got %d subnets, want one", len(subs))
	}
	s := subs[0]
	// Ours, and the Network they belong to: from the tags alone.
	wantTags := []string{"k8s-network-uid=" + string(ex.UID), "k8s-ref-0=default/example-network", "managed-by=" + managedBy}
	wantDesc := "Kubernetes Network default/example-network (uid " + string(ex.UID) + "), managed by " + managedBy
	slices.Sort(n.Tags)
	slices.Sort(s.Tags)
	if n.Name != "k8s-default-example-network" || n.Description != wantDesc || !slices.Equal(n.Tags, wantTags) ||
		!n.AdminStateUp || n.ProjectID != cloud.ProjectID {
		t.Errorf("network = %+v", n)
	}
	if s.Name != "k8s-default-example-network" || s.Description != wantDesc || !slices.Equal(s.Tags, wantTags) ||
		s.NetworkID != n.ID || s.CIDR != "192.168.0.0/16" || s.IPVersion != 4 || s.GatewayIP != "192.168.0.1" {
		t.Errorf("subnet = %+v", s)
	}
	if got.NetworkID != n.ID || got.SubnetID != s.ID {
		t.Errorf("Create = %+v, want the IDs %s and %s", *got, n.ID, s.ID)
	}
	if c := proxy.Count("POST /v3/auth/tokens"); c != 1 {
		t.Errorf("authenticated %d times, want once", c)
	}
	t.Logf("Neutron requests of one Create: %v", proxy.Counts())
}

// TestGatewayChangeInsideThePool: Neutron hands every address of a new
// subnet but the gateway to its allocation pool, and refuses a gateway
// inside a pool (409 GatewayConflictWithAllocationPools). Moving the
// gateway must move the pool's hole with it, in the same request.
func TestGatewayChangeInsideThePool(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{})
	member := cloud.Member(t)
	for _, tc := range []struct{ cidr, gateway, next string }{
		{"192.168.0.0/16", "192.168.0.1", "192.168.0.254"},
		{"10.0.0.0/30", "10.0.0.1", "10.0.0.2"},
		{"fd00:20::/64", "fd00:20::1", "fd00:20::ffff"},
	} {
		d := example()
		d.CIDR, d.Gateway = tc.cidr, tc.gateway
		created, err := b.Create(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.UpdateGateway(ctx, *created, tc.next)
		if err != nil {
			t.Fatalf("%s: moving the gateway from %s to %s: %v", tc.cidr, tc.gateway, tc.next, err)
		}
		s, err := subnets.Get(ctx, member, got.SubnetID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if s.GatewayIP != tc.next {
			t.Errorf("%s: gateway = %s, want %s", tc.cidr, s.GatewayIP, tc.next)
		}
		// Neutron's own pools for a subnet created with the new gateway.
		want := cloud.AddNetwork(t, "", "probe", tc.cidr, tc.next)
		wantPools := cloud.Subnets(t, member, want.ID)[0].AllocationPools
		if !slices.Equal(s.AllocationPools, wantPools) {
			t.Errorf("%s: pools after moving the gateway to %s = %v, want Neutron's own for that gateway %v", tc.cidr, tc.next, s.AllocationPools, wantPools)
		}
		t.Logf("%s: gateway %s -> %s, pools %v", tc.cidr, tc.gateway, tc.next, s.AllocationPools)
	}

	// Pools an operator set stay: a gateway moved outside them writes
	// none, one moved into a pool is taken out of that pool alone.
	d := example()
	d.CIDR, d.Gateway = "10.50.0.0/24", "10.50.0.1"
	created, err := b.Create(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	operators := []subnets.AllocationPool{{Start: "10.50.0.10", End: "10.50.0.20"}, {Start: "10.50.0.100", End: "10.50.0.200"}}
	if _, err := subnets.Update(ctx, member, created.SubnetID, subnets.UpdateOpts{AllocationPools: operators}).Extract(); err != nil {
		t.Fatal(err)
	}
	cur, err := b.Get(ctx, d.UID)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		gateway string
		want    []subnets.AllocationPool
	}{
		{"10.50.0.254", operators},
		{"10.50.0.150", []subnets.AllocationPool{operators[0], {Start: "10.50.0.100", End: "10.50.0.149"}, {Start: "10.50.0.151", End: "10.50.0.200"}}},
	} {
		if cur, err = b.UpdateGateway(ctx, *cur, step.gateway); err != nil {
			t.Fatalf("moving the gateway to %s beside an operator's pools: %v", step.gateway, err)
		}
		s, err := subnets.Get(ctx, member, created.SubnetID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if s.GatewayIP != step.gateway || !slices.Equal(s.AllocationPools, step.want) {
			t.Errorf("gateway %s, pools %v; want %s and %v (the operator's, the gateway taken out)", s.GatewayIP, s.AllocationPools, step.gateway, step.want)
		}
	}
}

func TestServerErrorsAreTransient(t *testing.T) {
	ctx, cloud, proxy, b := proxied(t, neutron.Options{})
	ex := example()
	// A request's failure is retried for its Network alone; a gateway's or
	// an unavailable service's is the whole backend's.
	for _, status := range []struct {
		code int
		down bool
	}{{500, false}, {429, false}, {502, true}, {503, true}, {504, true}} {
		proxy.FailNext(1, status.code)
		_, err := b.Get(ctx, ex.UID)
		if err == nil || network.IsPermanent(err) || network.IsNotFound(err) || network.Reason(err) != samplecrdv1.ReasonBackendUnavailable {
			t.Fatalf("Get with a %d = %v, want a transient %s error", status.code, err, samplecrdv1.ReasonBackendUnavailable)
		}
		if network.IsDown(err) != status.down {
			t.Errorf("Get with a %d: backend down = %v, want %v", status.code, network.IsDown(err), status.down)
		}
		if !strings.Contains(err.Error(), fmt.Sprint(status.code)) {
			t.Errorf("error %q does not mention the status %d", err, status.code)
		}
	}

	// A 404 to a list is a wrong endpoint, never "no network": the whole
	// backend is unusable, and not ErrNotFound (which would make the
	// controller create).
	proxy.FailRoute("GET /v2.0/networks", http.StatusNotFound, 1)
	if _, err := b.Get(ctx, ex.UID); network.IsNotFound(err) || !network.IsDown(err) || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("Get with a 404 to the list = %v, want a backend-down error about the endpoint", err)
	}

	// A 5xx half-way through a create, then a retry: one network, no duplicate.
	proxy.FailRoute("POST /v2.0/subnets", http.StatusInternalServerError, 1)
	if _, err := b.Create(ctx, ex); err == nil || network.IsPermanent(err) {
		t.Fatalf("Create with a 500 on the subnet = %v, want a transient error", err)
	}
	got, err := b.Create(ctx, ex)
	if err != nil {
		t.Fatalf("retried Create: %v", err)
	}
	if subs := cloud.Subnets(t, cloud.Member(t), got.NetworkID); len(subs) != 1 {
		t.Fatalf("after a retried Create: %d subnets; want 1", len(subs))
	}
	if c := proxy.Count("POST /v2.0/networks"); c != 1 {
		t.Fatalf("POST /v2.0/networks %d times, want 1", c)
	}
}

// TestExhausted503IsTheNetworksNotTheBackends: Neutron answers 503
// NoNetworkAvailable to a network's POST when its tenant segment pool is
// exhausted (in effect a quota), while every other request still works.
// That is this request's failure, retried for its Network alone with its
// own reason, not the whole backend's (which would stop every Network and
// flap the backend down and up at each probe). The body is Neutron's own,
// returned by the proxy: the real Neutron only answers it once its VXLAN
// range is used up, which would need a restart of the shared Neutron with
// another configuration.
func TestExhausted503IsTheNetworksNotTheBackends(t *testing.T) {
	ctx, _, proxy, b := proxied(t, neutron.Options{})
	proxy.FailRouteWith("POST /v2.0/networks", http.StatusServiceUnavailable,
		neutrontest.NeutronError("NoNetworkAvailable", "Unable to create the network. No tenant network is available for allocation."), -1)
	ex := example()
	_, err := b.Create(ctx, ex)
	if err == nil || network.IsPermanent(err) || network.IsDown(err) || network.Reason(err) != samplecrdv1.ReasonQuotaExceeded ||
		!strings.Contains(err.Error(), "NoNetworkAvailable") {
		t.Fatalf("Create while Neutron has no tenant network left = %v (down %v), want a transient %s error of this request naming NoNetworkAvailable",
			err, network.IsDown(err), samplecrdv1.ReasonQuotaExceeded)
	}
	t.Logf("no tenant network left: %v", err)
	if _, err := b.List(ctx); err != nil {
		t.Fatalf("List meanwhile: %v", err)
	}
	proxy.ClearFaults()
	if _, err := b.Create(ctx, ex); err != nil {
		t.Fatalf("Create once a segment is free: %v", err)
	}
}

// TestErrorTextIsTheSameAtEveryAttempt: a gateway's or proxy's error page
// carries what changes at every request (a request ID); the error, which
// becomes the Network's Ready message, must not, or every retry rewrites
// the status.
func TestErrorTextIsTheSameAtEveryAttempt(t *testing.T) {
	ctx, _, proxy, b := proxied(t, neutron.Options{})
	ex := example()
	var msgs []string
	for i := range 2 {
		proxy.FailRouteWith("GET /v2.0/networks", http.StatusTooManyRequests,
			fmt.Sprintf("<html><body>429 Too Many Requests<br>request id req-%d-%s</body></html>", i, ex.UID), 1)
		_, err := b.Get(ctx, ex.UID)
		if err == nil || network.IsPermanent(err) {
			t.Fatalf("Get with a 429 = %v, want a transient error", err)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || strings.Contains(msgs[0], "req-") || !strings.Contains(msgs[0], "429") {
		t.Fatalf("errors of two 429s that differ only by request ID: %q and %q; want the same text, naming the status but not the ID", msgs[0], msgs[1])
	}
}

func TestReauthenticatesWhenTheTokenExpires(t *testing.T) {
	ctx, _, proxy, b := proxied(t, neutron.Options{})
	ex := example()
	if _, err := b.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	// Neutron answers 401 to an expired token.
	proxy.FailRoute("GET /v2.0/networks", http.StatusUnauthorized, 1)
	got, err := b.Get(ctx, ex.UID)
	if err != nil {
		t.Fatalf("Get after the token expired: %v", err)
	}
	if got.SubnetID == "" {
		t.Fatalf("Get = %+v", *got)
	}
	if c := proxy.Count("POST /v3/auth/tokens"); c != 2 {
		t.Fatalf("authenticated %d times, want 2 (once more after the expiry)", c)
	}

	// Keystone failing or refusing the credentials during
	// re-authentication: transient, and the whole backend's.
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusUnauthorized} {
		proxy.FailRoute("GET /v2.0/networks", http.StatusUnauthorized, 1)
		proxy.FailRoute("POST /v3/auth/tokens", status, 1)
		_, err := b.Get(ctx, ex.UID)
		if err == nil || network.IsPermanent(err) || !network.IsDown(err) || !strings.Contains(err.Error(), "re-authenticating to Keystone") {
			t.Fatalf("Get while Keystone answers %d = %v, want a transient backend-down error naming Keystone", status, err)
		}
	}
	if _, err := b.Get(ctx, ex.UID); err != nil {
		t.Fatalf("Get once Keystone is back: %v", err)
	}
}

// TestCreatedThenTaggingRefusedWithTheLoginRefused: Neutron answers 401
// to a create (the token revoked), or creates the network (or the subnet)
// and then answers 401 to its tagging, and Keystone refuses the new login:
// the create fails as the credentials' (down, CredentialsRefused), and its
// retry, by the same process or by a restarted one (killed between the 401
// and the login), creates at once what the refused request did not make
// (nothing awaited) and adopts what the create made: one network and one
// subnet, both tagged, none made twice.
func TestCreatedThenTaggingRefusedWithTheLoginRefused(t *testing.T) {
	for _, tc := range []struct {
		name, route string
		restarted   bool
	}{
		{name: "the network's create", route: "POST /v2.0/networks"},
		{name: "the subnet's create", route: "POST /v2.0/subnets"},
		{name: "the network's tagging", route: "PUT /v2.0/networks/{id}/tags"},
		{name: "the network's tagging, retried by a restarted process", route: "PUT /v2.0/networks/{id}/tags", restarted: true},
		{name: "the subnet's tagging", route: "PUT /v2.0/subnets/{id}/tags"},
		{name: "the subnet's tagging, retried by a restarted process", route: "PUT /v2.0/subnets/{id}/tags", restarted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			cloud := neutrontest.Get(t)
			proxy := cloud.NewProxy(t)
			opts := neutron.Options{ManagedBy: neutrontest.UniqueManagedBy()}
			b := proxy.Backend(t, cloud, opts)
			ex := example()
			proxy.FailRoute(tc.route, http.StatusUnauthorized, 1)
			proxy.FailRoute("POST /v3/auth/tokens", http.StatusUnauthorized, 1)
			_, err := b.CreateNew(ctx, ex)
			if !network.IsDown(err) || network.Reason(err) != samplecrdv1.ReasonCredentialsRefused {
				t.Fatalf("CreateNew with the tagging refused, then the login = %v, want a down error of reason CredentialsRefused", err)
			}
			if tc.restarted {
				b = proxy.Backend(t, cloud, opts)
			}
			got, err := b.Create(ctx, ex)
			if err != nil {
				t.Fatalf("Create once Keystone accepts again: %v", err)
			}
			subnets := proxy.Count("POST /v2.0/subnets")
			if tc.route == "POST /v2.0/subnets" {
				subnets-- // the refused one
			}
			if n := len(proxy.CreatedNetworks()); n != 1 || subnets != 1 {
				t.Errorf("%d networks and %d subnets created, want one of each", n, subnets)
			}
			if again, err := b.Get(ctx, ex.UID); err != nil || again.NetworkID != got.NetworkID || again.SubnetID != got.SubnetID {
				t.Errorf("Get = %+v, %v; want the network and subnet Create adopted (%s, %s), tagged as the Network's", again, err, got.NetworkID, got.SubnetID)
			}
			if err := b.Delete(ctx, *got); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestAuthenticationRetriesAGatewayError: Keystone's gateway answering 502
// to the first token requests (as the fault suite saw once, Keystone
// dropping a connection under load) does not fail New; 502 until the
// request timeout is one error naming it; a refused password is not
// retried.
func TestAuthenticationRetriesAGatewayError(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	proxy := cloud.NewProxy(t)
	opts := neutron.Options{Getenv: neutrontest.Getenv(proxy.Env(cloud.Env())), RequestTimeout: 5 * time.Second}
	const auth = "POST /v3/auth/tokens"
	tries := func(f func()) int {
		before := proxy.Count(auth)
		f()
		return proxy.Count(auth) - before
	}

	proxy.FailRoute(auth, http.StatusBadGateway, 2)
	if n := tries(func() {
		if _, err := neutron.New(ctx, opts); err != nil {
			t.Fatalf("New with two 502s before Keystone answers = %v", err)
		}
	}); n != 3 {
		t.Errorf("%d token requests, want 3", n)
	}

	proxy.FailRoute(auth, http.StatusBadGateway, -1)
	_, err := neutron.New(ctx, opts)
	if err == nil || !strings.Contains(err.Error(), "authenticating to Keystone v3") || !strings.Contains(err.Error(), "502") {
		t.Fatalf("New with Keystone's gateway answering 502 throughout = %v, want the 502", err)
	}
	t.Logf("502 throughout: %v", err)

	proxy.FailRoute(auth, http.StatusUnauthorized, 1)
	if n := tries(func() {
		if _, err := neutron.New(ctx, opts); err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("New with the password refused = %v, want the 401", err)
		}
	}); n != 1 {
		t.Errorf("%d token requests for a refused password, want 1 (not retried)", n)
	}
}

func TestClientErrorsArePermanent(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{})

	// Neutron refuses the network address as an IPv4 gateway: 400.
	bad := example()
	bad.CIDR, bad.Gateway = "10.0.0.0/24", "10.0.0.0"
	_, err := b.Create(ctx, bad)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected ||
		!strings.Contains(err.Error(), "400 Bad Request: InvalidInput:") {
		t.Fatalf("Create with a gateway Neutron refuses = %v, want a permanent error with Neutron's message", err)
	}
	t.Logf("refused gateway: %v", err)

	// And an update: an MTU above what the physical network carries.
	ok, err := b.Create(ctx, example())
	if err != nil {
		t.Fatal(err)
	}
	desired := *ok
	mtu := int32(9000)
	desired.Settings.MTU = &mtu
	_, err = b.Update(ctx, *ok, desired)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected || !strings.Contains(err.Error(), "MTU") {
		t.Fatalf("Update to an MTU Neutron refuses = %v, want a permanent error with Neutron's message", err)
	}
	t.Logf("refused MTU: %v", err)
}

// TestQuotaExceededIsTransient: Neutron refuses a network over the
// project's quota (409 OverQuota); that is retried, with its own reason,
// and goes through once the quota allows it. The admin's project is used
// so the quota of the project other tests share stays as it is.
func TestQuotaExceededIsTransient(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{Getenv: neutrontest.Getenv(cloud.AdminEnv())})
	admin := cloud.Admin(t)
	zero := 0
	if _, err := quotas.Update(ctx, admin, cloud.AdminProjectID, quotas.UpdateOpts{Network: &zero}).Extract(); err != nil {
		t.Fatal(err)
	}
	reset := func() {
		if err := quotas.Delete(context.Background(), admin, cloud.AdminProjectID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			t.Errorf("resetting the quota: %v", err)
		}
	}
	defer reset()
	ex := example()
	_, err := b.Create(ctx, ex)
	if err == nil || network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonQuotaExceeded || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("Create over quota = %v, want a transient %s error", err, samplecrdv1.ReasonQuotaExceeded)
	}
	t.Logf("over quota: %v", err)
	reset()
	if _, err := b.Create(ctx, ex); err != nil {
		t.Fatalf("Create once the quota allows it: %v", err)
	}
}

// TestDeleteRefusedWhileOthersUseIt: the delete of a Network's backend
// network waits, retried as transient BackendInUse, while something else
// uses it, and goes through once that is gone.
//   - A port (a VM's interface) on our subnet: Neutron refuses with 409
//     SubnetInUse.
//   - An operator's own subnet on our network: Neutron would delete it with
//     the network, so the backend deletes only our subnet and leaves the
//     network to them.
func TestDeleteRefusedWhileOthersUseIt(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{})
	member := cloud.Member(t)
	var foreignSubnet string // the subnet a case added, for the message
	for _, tc := range []struct {
		name, want string
		use        func(got *network.Network) (release func() error)
	}{
		{"a port on our subnet", "SubnetInUse", func(got *network.Network) func() error {
			port, err := ports.Create(ctx, member, ports.CreateOpts{NetworkID: got.NetworkID, Name: "a-vm",
				FixedIPs: []ports.IP{{SubnetID: got.SubnetID}}}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			return func() error { return ports.Delete(ctx, member, port.ID).ExtractErr() }
		}},
		{"an operator's subnet on our network", "did not create", func(got *network.Network) func() error {
			gw := "10.99.0.1"
			theirs, err := subnets.Create(ctx, member, subnets.CreateOpts{NetworkID: got.NetworkID, Name: "operator-subnet",
				CIDR: "10.99.0.0/24", GatewayIP: &gw, IPVersion: gophercloud.IPv4}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			return func() error {
				if subs := cloud.Subnets(t, member, got.NetworkID); len(subs) != 1 || subs[0].ID != theirs.ID {
					t.Errorf("subnets after the refused delete = %+v, want only the operator's", subs)
				}
				return subnets.Delete(ctx, member, theirs.ID).ExtractErr()
			}
		}},
		{"a subnet of another project, added by an admin, on our network", "did not create", func(got *network.Network) func() error {
			// The controller's token does not see it: only the network's
			// list of subnet IDs names it.
			admin := cloud.Admin(t)
			gw := "10.98.0.1"
			theirs, err := subnets.Create(ctx, admin, subnets.CreateOpts{NetworkID: got.NetworkID, Name: "admin-subnet",
				CIDR: "10.98.0.0/24", GatewayIP: &gw, IPVersion: gophercloud.IPv4, ProjectID: cloud.AdminProjectID}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			foreignSubnet = theirs.ID
			return func() error {
				if subs := cloud.Subnets(t, admin, got.NetworkID); len(subs) != 1 || subs[0].ID != theirs.ID {
					t.Errorf("subnets after the refused delete = %+v, want only the admin's", subs)
				}
				return subnets.Delete(ctx, admin, theirs.ID).ExtractErr()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := example()
			got, err := b.Create(ctx, ex)
			if err != nil {
				t.Fatal(err)
			}
			foreignSubnet = ""
			release := tc.use(got)
			err = b.Delete(ctx, ex)
			if err == nil || network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendInUse ||
				!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), foreignSubnet) {
				t.Fatalf("Delete = %v, want a transient %s error saying %q, naming %q", err, samplecrdv1.ReasonBackendInUse, tc.want, foreignSubnet)
			}
			t.Logf("refused: %v", err)
			if err := release(); err != nil {
				t.Fatal(err)
			}
			if err := b.Delete(ctx, ex); err != nil {
				t.Fatalf("Delete once nothing else uses it: %v", err)
			}
			if _, err := b.Get(ctx, ex.UID); !network.IsNotFound(err) {
				t.Fatalf("Get after Delete = %v", err)
			}
			if _, err := networks.Get(ctx, member, got.NetworkID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				t.Fatalf("the network is still there after Delete: %v", err)
			}
		})
	}
}

func TestDownIsTransient(t *testing.T) {
	ctx, _, proxy, b := proxied(t, neutron.Options{})
	ex := example()
	proxy.SetDown(true)
	for _, call := range []func() error{
		func() error { _, err := b.Get(ctx, ex.UID); return err },
		func() error { _, err := b.Create(ctx, ex); return err },
		func() error { return b.Delete(ctx, ex) },
		func() error { _, err := b.List(ctx); return err },
	} {
		if err := call(); err == nil || network.IsPermanent(err) || !network.IsDown(err) || network.Reason(err) != samplecrdv1.ReasonBackendUnavailable {
			t.Fatalf("call while the server is down = %v, want a transient backend-down %s error", err, samplecrdv1.ReasonBackendUnavailable)
		}
	}
	proxy.SetDown(false)
	if _, err := b.Create(ctx, ex); err != nil {
		t.Fatalf("Create once the server is back: %v", err)
	}

	// Nothing listening where Neutron should be: connections refused.
	cloud := neutrontest.Get(t)
	nowhere := cloud.Backend(t, neutron.Options{Endpoint: "http://127.0.0.1:1/"})
	if _, err := nowhere.List(ctx); !network.IsDown(err) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("List with Neutron unreachable = %v, want a backend-down error saying the connection was refused", err)
	}
}

func TestLatencyAndTimeout(t *testing.T) {
	ctx, _, proxy, b := proxied(t, neutron.Options{RequestTimeout: 15 * time.Second})
	ex := example()
	proxy.SetLatency(20 * time.Millisecond)
	if _, err := b.Get(ctx, ex.UID); !network.IsNotFound(err) {
		t.Fatalf("Get with some latency = %v, want not found", err)
	}
	proxy.SetLatency(time.Minute)
	start := time.Now()
	_, err := b.Get(ctx, ex.UID)
	if err == nil || network.IsPermanent(err) || !errors.Is(err, context.DeadlineExceeded) || network.IsDown(err) {
		t.Fatalf("Get slower than the timeout = %v, want a transient deadline error of this request (not the backend down)", err)
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Fatalf("Get took %v despite the 15s timeout", d)
	}
}

// TestListTimesOutPerPage: the request timeout bounds each page of List,
// not all of them together: with many networks, a List whose every page
// answers in time must not fail (it feeds garbage collection and the
// repair of drift).
func TestListTimesOutPerPage(t *testing.T) {
	// The timeout leaves each page, beyond the latency injected below,
	// most of the timeout for Neutron's own answer: on a loaded machine
	// (the whole suite beside other builds) one page of networks took
	// Neutron more than 3.7 s, over a 5 s timeout with 1.25 s injected.
	const timeout = 10 * time.Second
	ctx, _, proxy, b := proxied(t, neutron.Options{RequestTimeout: timeout, PageSize: 1})
	for i := range 2 {
		d := example()
		d.Name = fmt.Sprintf("paged-%d", i)
		if _, err := b.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// Each page takes a quarter of the timeout: the pages of networks and
	// of subnets (3 each: the last one empty) together take one and a half
	// times the timeout.
	proxy.SetLatency(timeout / 4)
	list, err := b.List(ctx)
	if err != nil {
		t.Fatalf("List whose every page answers within the timeout: %v", err)
	}
	if len(list) != 2 {
		t.Fatalf("List = %d networks, want 2", len(list))
	}
	if c := proxy.Count("GET /v2.0/networks"); c < 3 {
		t.Fatalf("GET /v2.0/networks %d times, want a page a network", c)
	}

	// One page slower than the timeout still fails, as a timeout of this
	// request, not the backend down.
	proxy.SetLatency(timeout + time.Second)
	if _, err := b.List(ctx); err == nil || network.IsDown(err) || network.IsPermanent(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("List with a page slower than the timeout = %v, want a transient deadline error", err)
	}
}

// TestInterruptedTagging: a crash between creating the network and tagging
// it leaves an untagged network; the next Create adopts it (no duplicate)
// and Delete finds it.
func TestInterruptedTagging(t *testing.T) {
	ctx, cloud, proxy, b := proxied(t, neutron.Options{})
	member := cloud.Member(t)
	ex := example()
	proxy.FailRoute("PUT /v2.0/networks/{id}/tags", http.StatusServiceUnavailable, 1)
	if _, err := b.Create(ctx, ex); err == nil {
		t.Fatal("Create succeeded despite the failed tagging")
	}
	if _, err := b.Get(ctx, ex.UID); !network.IsNotFound(err) {
		t.Fatalf("Get of an untagged network = %v, want not found", err)
	}
	got, err := b.Create(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	if c := proxy.Count("POST /v2.0/networks"); c != 1 {
		t.Fatalf("POST /v2.0/networks %d times: want the first one adopted", c)
	}
	if got.SubnetID == "" {
		t.Fatalf("Create = %+v", *got)
	}

	// The same for the subnet.
	other := network.Network{UID: uuid.NewUUID(), Namespace: "default", Name: "other", CIDR: "10.2.0.0/16", Gateway: "10.2.0.1"}
	proxy.FailRoute("PUT /v2.0/subnets/{id}/tags", http.StatusServiceUnavailable, 1)
	if _, err := b.Create(ctx, other); err == nil {
		t.Fatal("Create succeeded despite the failed subnet tagging")
	}
	got2, err := b.Create(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if c := proxy.Count("POST /v2.0/subnets"); c != 2 || len(cloud.Subnets(t, member, got2.NetworkID)) != 1 {
		t.Fatalf("POST /v2.0/subnets %d times: want the untagged one adopted", c)
	}

	// Delete finds an untagged network from the Network's name.
	third := network.Network{UID: uuid.NewUUID(), Namespace: "default", Name: "third", CIDR: "10.3.0.0/16", Gateway: "10.3.0.1"}
	proxy.FailRoute("PUT /v2.0/networks/{id}/tags", http.StatusServiceUnavailable, 1)
	_, _ = b.Create(ctx, third)
	if err := b.Delete(ctx, third); err != nil {
		t.Fatal(err)
	}
	pages, err := networks.List(member, networks.ListOpts{Name: "k8s-default-third"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := networks.ExtractNetworks(pages); len(left) != 0 {
		t.Fatalf("%d networks named k8s-default-third after deleting the untagged one", len(left))
	}
}

// TestLongNamesKeepTheirIdentity: a namespace and name too long for the
// description to name them (Neutron's 255 characters) still come back
// whole from List and Get: the controller's namespace scope, its
// garbage collection's live read and its Events depend on them.
func TestLongNamesKeepTheirIdentity(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{})
	ex := example()
	ex.Namespace = strings.Repeat("n", 63)                              // a DNS label at its longest
	ex.Name = strings.Repeat("a", 120) + "." + strings.Repeat("b", 132) // a DNS subdomain at its longest
	created, err := b.Create(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	if created.Namespace != ex.Namespace || created.Name != ex.Name {
		t.Errorf("Create = %s/%s, want %s/%s", created.Namespace, created.Name, ex.Namespace, ex.Name)
	}
	list, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].UID != ex.UID || list[0].Namespace != ex.Namespace || list[0].Name != ex.Name || list[0].SubnetID == "" {
		t.Fatalf("List = %+v, want the Network %s/%s (uid %s) with its subnet", list, ex.Namespace, ex.Name, ex.UID)
	}
	got, err := b.Get(ctx, ex.UID)
	if err != nil || got.Namespace != ex.Namespace || got.Name != ex.Name {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if err := b.Delete(ctx, list[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, ex.UID); !network.IsNotFound(err) {
		t.Fatalf("Get after Delete = %v", err)
	}
}

// TestRetryWhileATimedOutCreateRunsInNeutron: a create request that timed
// out in the client may still be running in Neutron (queued behind others).
// The retry must end with the one network and subnet the Network asks for:
// no second network (the slow one untagged, leaked until the Network goes),
// and no CIDROverlap from Neutron refusing the retry's subnet because of the
// slow request's, which is ours.
func TestRetryWhileATimedOutCreateRunsInNeutron(t *testing.T) {
	const timeout = 4 * time.Second
	t.Run("the network", func(t *testing.T) {
		ctx, cloud, proxy, b := proxied(t, neutron.Options{RequestTimeout: timeout})
		ex := example()
		slow := proxy.Hold("POST /v2.0/networks")
		if _, err := b.Create(ctx, ex); err == nil || network.IsPermanent(err) {
			t.Fatalf("Create whose network POST timed out = %v, want a transient error", err)
		}
		// The retry comes while the slow request still waits to reach
		// Neutron: it does not see that network yet.
		_, retryErr := b.Create(ctx, ex)
		slow.Release()
		<-slow.Done()
		if slow.Status() != http.StatusCreated {
			t.Fatalf("the slow POST got %d from Neutron", slow.Status())
		}
		got := createUntilDone(ctx, t, b, ex, retryErr)
		nets := networksOf(t, cloud, ex)
		if len(nets) != 1 || nets[0].ID != got.NetworkID || !slices.Contains(nets[0].Tags, neutron.UIDTagPrefix+string(ex.UID)) {
			t.Fatalf("networks of the Network after the retries: %d (%v), want the one Create returned (%s), tagged", len(nets), networkIDsOf(nets), got.NetworkID)
		}
	})
	// This process's retry waits for its unanswered subnet POST (which,
	// for a subnet from a pool, would otherwise take a second range) and
	// then finds the subnet it made.
	for _, pooled := range []bool{false, true} {
		t.Run(fmt.Sprintf("the subnet, from a pool: %v", pooled), func(t *testing.T) {
			ctx, cloud, proxy, b := proxied(t, neutron.Options{RequestTimeout: timeout})
			ex := example()
			if pooled {
				ex.CIDR, ex.Gateway = "", ""
				ex.SubnetPool = &network.SubnetPoolRef{ID: cloud.AddSubnetPool(t, "unanswered-"+string(ex.UID)[:8], "10.56.0.0/24", 28)}
			}
			slow := proxy.Hold("POST /v2.0/subnets")
			if _, err := b.Create(ctx, ex); err == nil || network.IsPermanent(err) {
				t.Fatalf("Create whose subnet POST timed out = %v, want a transient error", err)
			}
			retryErr := func() error { _, err := b.Create(ctx, ex); return err }()
			if retryErr == nil || network.IsPermanent(retryErr) || proxy.Count("POST /v2.0/subnets") != 1 {
				t.Fatalf("a retry while the first subnet POST may still run = %v after %d subnet POSTs; want a transient wait, no second POST", retryErr, proxy.Count("POST /v2.0/subnets"))
			}
			slow.Release()
			<-slow.Done()
			got := createUntilDone(ctx, t, b, ex, nil)
			nets := networksOf(t, cloud, ex)
			if len(nets) != 1 {
				t.Fatalf("%d networks of the Network, want 1", len(nets))
			}
			subs := cloud.Subnets(t, cloud.Admin(t), nets[0].ID)
			if len(subs) != 1 || subs[0].ID != got.SubnetID || !slices.Contains(subs[0].Tags, neutron.UIDTagPrefix+string(ex.UID)) {
				t.Fatalf("subnets = %+v, want the one Create returned (%s), tagged: one range", subs, got.SubnetID)
			}
			if err := b.Delete(ctx, ex); err != nil { // before the pool's cleanup
				t.Fatal(err)
			}
		})
	}
	// Another process (a restart, the next leader) knows nothing of the
	// unanswered POST: its own POST finds the slow one's subnet in the
	// way (CIDROverlap) and takes it, which is ours.
	t.Run("the subnet, retried by another process", func(t *testing.T) {
		opts := neutron.Options{RequestTimeout: timeout, ManagedBy: neutrontest.UniqueManagedBy()}
		ctx, cloud, proxy, b := proxied(t, opts)
		next := proxy.Backend(t, cloud, opts)
		ex := example()
		slow, retried := proxy.Hold("POST /v2.0/subnets"), proxy.Hold("POST /v2.0/subnets")
		if _, err := b.Create(ctx, ex); err == nil || network.IsPermanent(err) {
			t.Fatalf("Create whose subnet POST timed out = %v, want a transient error", err)
		}
		type result struct {
			n   *network.Network
			err error
		}
		done := make(chan result, 1)
		go func() {
			n, err := next.Create(ctx, ex)
			done <- result{n, err}
		}()
		// The retry found no subnet and posts its own; the slow one
		// reaches Neutron first. A retry that ends without posting (an
		// error before it) fails the test, not hangs it.
		select {
		case <-retried.Arrived():
		case r := <-done:
			slow.Release()
			retried.Release()
			t.Fatalf("the other process's Create ended before it posted a subnet: %v (reason %s)", r.err, network.Reason(r.err))
		case <-time.After(time.Minute):
			slow.Release()
			retried.Release()
			t.Fatal("the other process's Create posted no subnet within a minute")
		}
		slow.Release()
		<-slow.Done()
		retried.Release()
		r := <-done
		if r.err != nil {
			t.Fatalf("the retry, after the slow request made the subnet: %v (reason %s); want the slow request's subnet, which is ours", r.err, network.Reason(r.err))
		}
		nets := networksOf(t, cloud, ex)
		if len(nets) != 1 {
			t.Fatalf("%d networks of the Network, want 1", len(nets))
		}
		subs := cloud.Subnets(t, cloud.Admin(t), nets[0].ID)
		if len(subs) != 1 || subs[0].ID != r.n.SubnetID || !slices.Contains(subs[0].Tags, neutron.UIDTagPrefix+string(ex.UID)) {
			t.Fatalf("subnets = %+v, want the one Create returned (%s), tagged", subs, r.n.SubnetID)
		}
	})
}

// createUntilDone retries Create of d (whose last attempt failed with
// err, or nil when there was none) until it succeeds, as the controller
// would, within a deadline.
func createUntilDone(ctx context.Context, t *testing.T, b network.Backend, d network.Network, err error) *network.Network {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if err != nil && network.IsPermanent(err) {
			t.Fatalf("Create: %v", err)
		}
		got, err2 := b.Create(ctx, d)
		if err2 == nil {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("Create still fails after a minute: %v", err2)
		}
		err = err2
		t.Logf("retrying: %v", err)
		select {
		case <-time.After(100 * time.Millisecond): // the controller's retries back off too
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
}

// networksOf lists, as the admin, every network whose description names
// the Network of d (tagged or not).
func networksOf(t *testing.T, cloud *neutrontest.Cloud, d network.Network) []networks.Network {
	t.Helper()
	var out []networks.Network
	for _, n := range cloud.Networks(t, cloud.Admin(t), "") {
		if strings.Contains(n.Description, "(uid "+string(d.UID)+")") {
			out = append(out, n)
		}
	}
	return out
}

func networkIDsOf(nets []networks.Network) []string {
	var ids []string
	for _, n := range nets {
		ids = append(ids, n.ID)
	}
	return ids
}

// TestManagedByIsolatesClusters: two clusters sharing a project never see
// each other's networks.
func TestManagedByIsolatesClusters(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	a := cloud.Backend(t, neutron.Options{})
	other := cloud.Backend(t, neutron.Options{})
	ex := example()
	if _, err := a.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	if list, err := other.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("cluster-b List = %v, %v; want nothing", list, err)
	}
	if _, err := other.Get(ctx, ex.UID); !network.IsNotFound(err) {
		t.Fatalf("cluster-b Get = %v, want not found", err)
	}
	if err := other.Delete(ctx, ex); err != nil {
		t.Fatal(err)
	}
	if list, err := a.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("cluster-a List = %v, %v; want its network", list, err)
	}
	if _, err := neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(cloud.Env()), ManagedBy: "a,b"}); err == nil {
		t.Fatal("New accepted a ManagedBy with a comma")
	}
}

// TestChangedManagedByNeverDuplicates: a controller restarted with another
// --neutron-managed-by no longer finds its networks by tags or
// description. For a Network whose status records the network it was
// given, Create finds that network tagged with the Network's UID and the
// old value, and refuses, naming both values, instead of creating a second
// network for every Network.
func TestChangedManagedByNeverDuplicates(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	before := cloud.Backend(t, neutron.Options{})
	afterValue := neutrontest.UniqueManagedBy()
	after := cloud.Backend(t, neutron.Options{ManagedBy: afterValue})
	ex := example()
	created, err := before.Create(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	recorded := ex
	recorded.NetworkID = created.NetworkID // as the Network's status has it
	_, err = after.Create(ctx, recorded)
	if !network.IsPermanent(err) || !strings.Contains(err.Error(), afterValue) || !strings.Contains(err.Error(), created.NetworkID) {
		t.Fatalf("Create with another managed-by value = %v, want a permanent error naming the network and the value", err)
	}
	t.Logf("refused: %v", err)
	if nets := networksOf(t, cloud, ex); len(nets) != 1 {
		t.Fatalf("%d networks of the Network (%v), want only the first", len(nets), networkIDsOf(nets))
	}

	// A recorded network deleted behind the controller's back is created
	// again (drift repair), as before.
	if err := before.Delete(ctx, ex); err != nil {
		t.Fatal(err)
	}
	if _, err := after.Create(ctx, recorded); err != nil {
		t.Fatalf("Create once the recorded network is gone: %v", err)
	}
}

// TestAdminCredentialsStayInTheirProject: an admin sees every project's
// networks. A controller running with admin credentials lists, adopts,
// changes and deletes only what is in the project its token is scoped to,
// even when another project holds networks with the very same tags.
func TestAdminCredentialsStayInTheirProject(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	managedBy := neutrontest.UniqueManagedBy()
	asAdmin := cloud.Backend(t, neutron.Options{ManagedBy: managedBy, Getenv: neutrontest.Getenv(cloud.AdminEnv())})
	asMember := cloud.Backend(t, neutron.Options{ManagedBy: managedBy})

	// The member's network in project k8s, with the same managed-by.
	ex := example()
	theirs, err := asMember.Create(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := asAdmin.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("admin List = %+v, %v; want nothing (the network is in another project)", list, err)
	}
	if _, err := asAdmin.Get(ctx, ex.UID); !network.IsNotFound(err) {
		t.Fatalf("admin Get = %v, want not found", err)
	}
	if _, err := asAdmin.UpdateGateway(ctx, network.Network{UID: ex.UID}, "192.168.0.9"); !network.IsNotFound(err) {
		t.Fatalf("admin UpdateGateway = %v, want not found", err)
	}
	if err := asAdmin.Delete(ctx, ex); err != nil {
		t.Fatal(err)
	}
	// Create for the same UID makes the admin's own network, in its project.
	mine, err := asAdmin.Create(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	if mine.NetworkID == theirs.NetworkID {
		t.Fatal("the admin adopted the member project's network")
	}
	admin := cloud.Admin(t)
	n, err := networks.Get(ctx, admin, mine.NetworkID).Extract()
	if err != nil || n.ProjectID != cloud.AdminProjectID {
		t.Fatalf("admin's network = %+v, %v; want it in project %s", n, err, cloud.AdminProjectID)
	}
	if got, err := asMember.Get(ctx, ex.UID); err != nil || got.NetworkID != theirs.NetworkID || got.Gateway != "192.168.0.1" {
		t.Fatalf("member's network after the admin's calls = %+v, %v; want it unchanged", got, err)
	}

	// A Managed import (adopt) of another project's network by ID is
	// refused, nothing written; observing it (Unmanaged) still works.
	operators := cloud.AddNetwork(t, "", "operators-net", "10.49.0.0/24", "10.49.0.1")
	imp := network.Network{UID: "import-uid", Namespace: "ns", Name: "imp"}
	if _, err := asAdmin.Import(ctx, imp, network.Ref{NetworkID: operators.ID}, true); !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected ||
		!strings.Contains(err.Error(), "another project") {
		t.Fatalf("admin's Managed import of project %s's network = %v, want a permanent BackendRejected naming the other project", cloud.ProjectID, err)
	}
	if got, err := networks.Get(ctx, admin, operators.ID).Extract(); err != nil || got.RevisionNumber != operators.RevisionNumber || len(got.Tags) != 0 {
		t.Fatalf("the other project's network after the refused import = %+v, %v; want it untouched (revision %d, no tags)", got, err, operators.RevisionNumber)
	}
	if _, err := asAdmin.Import(ctx, imp, network.Ref{NetworkID: operators.ID}, false); err != nil {
		t.Fatalf("admin's Unmanaged import of another project's network: %v", err)
	}
}

func TestConfiguration(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)

	t.Run("clouds.yaml", func(t *testing.T) {
		env := neutrontest.Getenv(map[string]string{"OS_CLOUD": "local", "OS_CLIENT_CONFIG_FILE": filepath.Join(cloud.Dir, "clouds.yaml")})
		b := cloud.Backend(t, neutron.Options{Getenv: env})
		ex := example()
		if _, err := b.Create(ctx, ex); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, ex); err != nil {
			t.Fatal(err)
		}
		_, err := neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(map[string]string{
			"OS_CLOUD": "nope", "OS_CLIENT_CONFIG_FILE": filepath.Join(cloud.Dir, "clouds.yaml")})})
		if err == nil || !strings.Contains(err.Error(), `cloud "nope"`) {
			t.Fatalf("New with an unknown cloud = %v", err)
		}
	})

	t.Run("project ID and domain IDs", func(t *testing.T) {
		env := cloud.Env()
		delete(env, "OS_PROJECT_NAME")
		delete(env, "OS_USER_DOMAIN_NAME")
		delete(env, "OS_PROJECT_DOMAIN_NAME")
		env["OS_PROJECT_ID"] = cloud.ProjectID
		env["OS_USER_DOMAIN_ID"] = "default"
		b := cloud.Backend(t, neutron.Options{Getenv: neutrontest.Getenv(env)})
		if _, err := b.List(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("not configured", func(t *testing.T) {
		_, err := neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(nil)})
		if !errors.Is(err, neutron.ErrNotConfigured) {
			t.Fatalf("New without configuration = %v", err)
		}
	})

	t.Run("missing variables", func(t *testing.T) {
		env := cloud.Env()
		delete(env, "OS_PASSWORD")
		delete(env, "OS_PROJECT_DOMAIN_NAME")
		_, err := neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(env)})
		if err == nil || !strings.Contains(err.Error(), "OS_PASSWORD, OS_PROJECT_DOMAIN_NAME are not") {
			t.Fatalf("New with missing variables = %v", err)
		}
	})

	t.Run("unknown region", func(t *testing.T) {
		env := cloud.Env()
		env["OS_REGION_NAME"] = "Elsewhere"
		_, err := neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(env)})
		if err == nil || !strings.Contains(err.Error(), `region "Elsewhere"`) {
			t.Fatalf("New in an unknown region = %v", err)
		}
	})

	t.Run("Keystone unreachable", func(t *testing.T) {
		env := cloud.Env()
		env["OS_AUTH_URL"] = "http://127.0.0.1:1/v3"
		_, err := neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(env)})
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("New with Keystone unreachable = %v", err)
		}
	})
}

// proxied returns a test context, the real OpenStack, a fault proxy in
// front of its Neutron, and a backend with opts that goes through it.
func proxied(t *testing.T, opts neutron.Options) (context.Context, *neutrontest.Cloud, *neutrontest.Proxy, *neutron.Backend) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	proxy := cloud.NewProxy(t)
	return ctx, cloud, proxy, proxy.Backend(t, cloud, opts)
}

// TestObserveReadsInBatches: Observe reads its networks with one list of
// networks and one of subnets per batch of IDs (here 2 a batch), as
// Neutron's access log through the proxy counts them, and nothing else.
func TestObserveReadsInBatches(t *testing.T) {
	ctx, cloud, proxy, b := proxied(t, neutron.Options{})
	neutron.SetIDsPerRequest(b, 2)
	var want []network.Network
	for i := range 5 {
		n := cloud.AddNetwork(t, "", fmt.Sprintf("observed-%d", i), fmt.Sprintf("10.46.%d.0/24", i), fmt.Sprintf("10.46.%d.1", i))
		want = append(want, network.Network{UID: uuid.NewUUID(), Namespace: "ns", Name: fmt.Sprintf("obs-%d", i), NetworkID: n.ID})
	}
	want = append(want, network.Network{UID: uuid.NewUUID(), Namespace: "ns", Name: "gone", NetworkID: "0b7a5f3e-5a1d-4c1e-9a57-2f1f3c0f6d13"})
	before := proxy.Counts()
	got, err := b.Observe(ctx, want)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if len(got) != 5 {
		t.Fatalf("Observe returned %d networks, want the 5 there: %+v", len(got), got)
	}
	for i, n := range got {
		if n.UID != want[i].UID || n.NetworkID != want[i].NetworkID || n.SubnetID == "" || n.CIDR != fmt.Sprintf("10.46.%d.0/24", i) {
			t.Errorf("Observe[%d] = %+v, want %s's network with its subnet", i, n, want[i].Name)
		}
	}
	counts := proxy.Counts()
	requests := 0
	for route, c := range counts {
		if d := c - before[route]; d > 0 && strings.Contains(route, "/v2.0/") {
			requests += d
			if route != "GET /v2.0/networks" && route != "GET /v2.0/subnets" {
				t.Errorf("Observe sent %d x %s", d, route)
			}
		}
	}
	// 6 IDs, 2 a batch: 3 lists of networks, 3 of subnets.
	if n, s := counts["GET /v2.0/networks"]-before["GET /v2.0/networks"], counts["GET /v2.0/subnets"]-before["GET /v2.0/subnets"]; n != 3 || s != 3 {
		t.Errorf("Observe of 6 IDs, 2 a batch, sent %d network lists and %d subnet lists, want 3 and 3", n, s)
	}
	t.Logf("Observe of 6 IDs, 2 a batch: %d Neutron requests", requests)
}

// TestEditedDescriptionRepairedWithItsMarker: an operator's edit of a
// created network's description is repaired with the controller's text
// naming the Network back at its start (which a create interrupted before
// its tags is found by); an adopted network's stays the Network's text
// alone. Which of the two it is comes from the Network, not from what
// the description holds.
func TestEditedDescriptionRepairedWithItsMarker(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{})
	member := cloud.Member(t)
	d := example()
	d.CIDR, d.Gateway, d.Settings.Description = "10.51.0.0/24", "10.51.0.1", ptr("build network")
	created, err := b.Create(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	adopted := cloud.AddNetwork(t, "", "operators", "10.51.1.0/24", "10.51.1.1")
	a := example()
	a.CIDR, a.Imported, a.Settings.Description = "10.51.1.0/24", true, ptr("adopted network")
	if _, err := b.Import(ctx, a, network.Ref{NetworkID: adopted.ID}, true); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{created.NetworkID, adopted.ID} {
		edited := "hand-edited"
		if _, err := networks.Update(ctx, member, id, networks.UpdateOpts{Description: &edited}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		desired network.Network
		id      string
		want    func(string) bool
		what    string
	}{
		{d, created.NetworkID, func(s string) bool {
			return strings.HasPrefix(s, "Kubernetes Network default/example-network (uid "+string(d.UID)+")") && strings.HasSuffix(s, ": build network")
		}, "the controller's text, then the Network's"},
		{a, adopted.ID, func(s string) bool { return s == "adopted network" }, "the Network's text alone"},
	} {
		cur, err := b.Get(ctx, tc.desired.UID)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := network.Ensure(ctx, b, tc.desired, cur, false); err != nil {
			t.Fatal(err)
		}
		n, err := networks.Get(ctx, member, tc.id).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if !tc.want(n.Description) {
			t.Errorf("description repaired to %q, want %s", n.Description, tc.what)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestConcurrentAdoptionsOneWins: two Networks importing (Managed) one
// network at once, on real Neutron: at most one adopts it, the other is
// refused (transient while the claims cross, then permanent), and the
// network carries the winner's marks alone.
func TestConcurrentAdoptionsOneWins(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{})
	member := cloud.Member(t)
	const rounds = 6
	for i := range rounds {
		target := cloud.AddNetwork(t, "", fmt.Sprintf("contended-%d", i), fmt.Sprintf("10.53.%d.0/24", i), fmt.Sprintf("10.53.%d.1", i))
		claimants := []network.Network{
			{UID: uuid.NewUUID(), Namespace: "a", Name: "first", Imported: true},
			{UID: uuid.NewUUID(), Namespace: "b", Name: "second", Imported: true},
		}
		errs := make([]error, len(claimants))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for j, c := range claimants {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[j] = b.Import(ctx, c, network.Ref{NetworkID: target.ID}, true)
			}()
		}
		close(start)
		wg.Wait()
		var winners []types.UID
		for j, err := range errs {
			if err == nil {
				winners = append(winners, claimants[j].UID)
			} else if network.Reason(err) != samplecrdv1.ReasonBackendRejected {
				t.Fatalf("round %d: a claim failed with %v, want BackendRejected", i, err)
			}
		}
		if len(winners) > 1 {
			t.Fatalf("round %d: both Networks adopted network %s", i, target.ID)
		}
		// The loser's retry (or both, when both yielded) settles it.
		for j, c := range claimants {
			if errs[j] == nil {
				continue
			}
			if _, err := b.Import(ctx, c, network.Ref{NetworkID: target.ID}, true); err == nil {
				winners = append(winners, c.UID)
			} else if !network.IsPermanent(err) && len(winners) > 0 {
				t.Errorf("round %d: a retry against the winner = %v, want a permanent refusal", i, err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners after the retries, want one", i, len(winners))
		}
		tags, err := attributestags.List(ctx, member, "networks", target.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		var uids []string
		for _, tag := range tags {
			if strings.HasPrefix(tag, neutron.UIDTagPrefix) {
				uids = append(uids, tag)
			}
		}
		if len(uids) != 1 || uids[0] != neutron.UIDTagPrefix+string(winners[0]) {
			t.Errorf("round %d: network %s carries %v, want the winner's mark alone", i, target.ID, uids)
		}
	}
}

// TestDeleteAdoptedOneOfSeveralSubnets: a Managed import adopted one
// subnet of an operator's network that holds others; deleting it deletes
// that subnet and leaves the network, with the others, without our tags
// (it never was ours to delete), instead of waiting for subnets nobody
// will remove.
func TestDeleteAdoptedOneOfSeveralSubnets(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{})
	admin := cloud.Admin(t)
	target := cloud.AddNetwork(t, "", "two-subnets", "10.54.0.0/24", "10.54.0.1")
	gw := "10.54.1.1"
	other, err := subnets.Create(ctx, admin, subnets.CreateOpts{NetworkID: target.ID, Name: "operators", CIDR: "10.54.1.0/24", GatewayIP: &gw,
		IPVersion: 4, ProjectID: cloud.ProjectID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	d := network.Network{UID: uuid.NewUUID(), Namespace: "ns", Name: "one-of-two", CIDR: "10.54.0.0/24", Imported: true}
	adopted, err := b.Import(ctx, d, network.Ref{NetworkID: target.ID}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, d); err != nil {
		t.Fatalf("Delete of an adopted network holding another subnet = %v, want done", err)
	}
	n, err := networks.Get(ctx, admin, target.ID).Extract()
	if err != nil {
		t.Fatalf("the operator's network is gone: %v", err)
	}
	if !slices.Equal(n.Subnets, []string{other.ID}) || slices.ContainsFunc(n.Tags, func(tag string) bool {
		return strings.HasPrefix(tag, neutron.UIDTagPrefix) || strings.HasPrefix(tag, neutron.ManagedByTagPrefix)
	}) {
		t.Errorf("network after the delete: subnets %v (adopted %s), tags %v; want the operator's subnet alone, no tag of ours", n.Subnets, adopted.SubnetID, n.Tags)
	}
	if got, err := b.Get(ctx, d.UID); !network.IsNotFound(err) {
		t.Errorf("Get after the delete = %+v, %v; want not found", got, err)
	}
}

// TestRouterAlreadyAttachedIsNotTakenOver: spec.router naming the router
// an adopted network's subnet is attached to already, by an operator:
// refused (BackendRejected), no mark left, so no scan takes the
// interface for ours and removing spec.router leaves it.
func TestRouterAlreadyAttachedIsNotTakenOver(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cloud := neutrontest.Get(t)
	b := cloud.Backend(t, neutron.Options{})
	admin := cloud.Admin(t)
	target := cloud.AddNetwork(t, "", "routed-by-ops", "10.55.0.0/24", "10.55.0.1")
	router := cloud.AddRouter(t, "", "ops-edge-"+string(uuid.NewUUID())[:8])
	subnetID := target.Subnets[0]
	info, err := routers.AddInterface(ctx, admin, router, routers.AddInterfaceOpts{SubnetID: subnetID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	d := network.Network{UID: uuid.NewUUID(), Namespace: "ns", Name: "adopted", CIDR: "10.55.0.0/24", Gateway: "10.55.0.1", Imported: true}
	cur, err := b.Import(ctx, d, network.Ref{NetworkID: target.ID}, true)
	if err != nil {
		t.Fatal(err)
	}
	d.Router = &network.RouterRef{ID: router}
	if _, _, err := network.Ensure(ctx, b, d, cur, false); !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected {
		t.Fatalf("Ensure attaching to the router it is attached to by an operator = %v, want a permanent BackendRejected", err)
	}
	s, err := subnets.Get(ctx, admin, subnetID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(s.Tags, func(tag string) bool { return strings.HasPrefix(tag, neutron.RouterTagPrefix) }) {
		t.Errorf("the subnet carries a router mark after the refusal: %v", s.Tags)
	}
	list, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		if n.UID == d.UID && n.RouterID != "" {
			t.Errorf("the scan takes the operator's interface for ours: %+v", n)
		}
	}
	d.Router = nil
	cur, err = b.Get(ctx, d.UID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := network.Ensure(ctx, b, d, cur, false); err != nil {
		t.Fatal(err)
	}
	ps, err := ports.List(admin, ports.ListOpts{DeviceID: router}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := ports.ExtractPorts(ps)
	if !slices.ContainsFunc(all, func(p ports.Port) bool { return p.ID == info.PortID }) {
		t.Errorf("the operator's interface (port %s) is gone after spec.router was removed", info.PortID)
	}
}
