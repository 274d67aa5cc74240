// Package neutrontest gives tests the real OpenStack that
// hack/openstack-up.sh starts (Keystone and Neutron from Debian's packages,
// on 127.0.0.1), and a fault-injecting reverse proxy to put in front of it.
//
// `make test` starts the OpenStack once and points TEST_OPENSTACK_DIR at its
// state directory; every test package shares it. Tests stay apart by giving
// each backend its own managed-by tag (see Cloud.Backend), so what one test
// lists or garbage-collects is never another's.
//
// Without TEST_OPENSTACK_DIR a test that needs the cloud is skipped, except
// under CI=true, where it fails: CI must never pass by skipping Neutron.
package neutrontest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/subnetpools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
)

// DirEnv names the variable that holds hack/openstack-up.sh's state
// directory.
const DirEnv = "TEST_OPENSTACK_DIR"

// Cloud is the running OpenStack.
type Cloud struct {
	// Dir is the state directory (openrc, openrc-admin, clouds.yaml, logs).
	Dir string
	// KeystoneURL and NeutronURL are the servers' base URLs.
	KeystoneURL, NeutronURL string
	// ProjectID is the ID of the project the controller's user is a member
	// of; AdminProjectID that of the admin's credentials.
	ProjectID, AdminProjectID string

	env, adminEnv map[string]string

	mu      sync.Mutex
	clients map[string]*gophercloud.ServiceClient // by OS_USERNAME
}

var loaded struct {
	once  sync.Once
	cloud *Cloud
	err   error
}

// Get returns the cloud of TEST_OPENSTACK_DIR, or skips t (fails it under
// CI=true) when there is none.
func Get(t testing.TB) *Cloud {
	t.Helper()
	loaded.once.Do(func() { loaded.cloud, loaded.err = Load(os.Getenv(DirEnv)) })
	c, err := loaded.cloud, loaded.err
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("real OpenStack needed under CI: %v", err)
		}
		t.Skipf("no real OpenStack: %v (`make test` starts one; or run hack/openstack-up.sh and set %s=.run/openstack)", err, DirEnv)
	}
	return c
}

// Load reads the cloud of state directory dir.
func Load(dir string) (*Cloud, error) {
	if dir == "" {
		return nil, fmt.Errorf("%s is not set", DirEnv)
	}
	c := &Cloud{Dir: dir, clients: map[string]*gophercloud.ServiceClient{}}
	var err error
	if c.env, err = readEnvFile(filepath.Join(dir, "openrc")); err != nil {
		return nil, err
	}
	if c.adminEnv, err = readEnvFile(filepath.Join(dir, "openrc-admin")); err != nil {
		return nil, err
	}
	vars, err := readEnvFile(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	c.KeystoneURL, c.NeutronURL = vars["KEYSTONE_URL"], vars["NEUTRON_URL"]
	c.ProjectID, c.AdminProjectID = vars["PROJECT_ID"], vars["ADMIN_PROJECT_ID"]
	if c.KeystoneURL == "" || c.NeutronURL == "" || c.ProjectID == "" || c.AdminProjectID == "" {
		return nil, fmt.Errorf("%s/env lacks KEYSTONE_URL, NEUTRON_URL, PROJECT_ID or ADMIN_PROJECT_ID", dir)
	}
	return c, nil
}

// readEnvFile reads the KEY=VALUE and `export KEY=VALUE` lines of an openrc.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out, sc.Err()
}

// Env returns the OS_* variables of the controller's user (role member in
// the project ProjectID), as the openrc sets them.
func (c *Cloud) Env() map[string]string { return clone(c.env) }

// AdminEnv returns the OS_* variables of the cloud admin (project admin).
func (c *Cloud) AdminEnv() map[string]string { return clone(c.adminEnv) }

// Getenv returns a getenv function reading env.
func Getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetEnv sets the controller user's OS_* variables for the duration of t,
// as `source openrc` would.
func (c *Cloud) SetEnv(t *testing.T) {
	for k, v := range c.env {
		t.Setenv(k, v)
	}
	t.Setenv("OS_CLOUD", "")
}

// Admin returns a network client authenticated as the cloud admin, who sees
// and may change every project's networks: what tests use to look at
// Neutron behind the backend's back.
func (c *Cloud) Admin(t testing.TB) *gophercloud.ServiceClient {
	t.Helper()
	return c.client(t, c.adminEnv)
}

// Member returns a network client authenticated as the controller's user.
func (c *Cloud) Member(t testing.TB) *gophercloud.ServiceClient {
	t.Helper()
	return c.client(t, c.env)
}

// client returns the (shared, authenticated once) network client of env's user.
func (c *Cloud) client(t testing.TB, env map[string]string) *gophercloud.ServiceClient {
	t.Helper()
	sc, err := c.sharedClient(env)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// sharedClient returns the network client of env's user, made once.
func (c *Cloud) sharedClient(env map[string]string) (*gophercloud.ServiceClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc := c.clients[env["OS_USERNAME"]]; sc != nil {
		return sc, nil
	}
	sc, err := NewClient(env)
	if err != nil {
		return nil, err
	}
	c.clients[env["OS_USERNAME"]] = sc
	return sc, nil
}

// adminClient is Admin for callers that are not tests.
func (c *Cloud) adminClient() (*gophercloud.ServiceClient, error) { return c.sharedClient(c.adminEnv) }

// NewClient returns a new network client authenticated as env's user, for
// callers that are not tests (the bench).
func NewClient(env map[string]string) (*gophercloud.ServiceClient, error) {
	ao, eo, _, err := neutron.ConfigFromEnv(Getenv(env))
	if err != nil {
		return nil, err
	}
	pc, err := openstack.AuthenticatedClient(context.Background(), ao)
	if err != nil {
		return nil, fmt.Errorf("authenticating as %s: %w", ao.Username, err)
	}
	sc, err := openstack.NewNetworkV2(pc, eo)
	if err != nil {
		return nil, fmt.Errorf("creating the network client: %w", err)
	}
	return sc, nil
}

// UniqueManagedBy returns a managed-by value of its own for one test, so
// its backend sees only what it created.
func UniqueManagedBy() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "test-" + hex.EncodeToString(b)
}

// Backend returns a Neutron backend for the controller's user with opts
// (Getenv defaults to the user's OS_* variables, ManagedBy to a unique
// value), and deletes what it created when t ends.
func (c *Cloud) Backend(t testing.TB, opts neutron.Options) *neutron.Backend {
	t.Helper()
	if opts.Getenv == nil {
		opts.Getenv = Getenv(c.env)
	}
	if opts.ManagedBy == "" {
		opts.ManagedBy = UniqueManagedBy()
	}
	b, err := neutron.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("neutron.New: %v", err)
	}
	c.CleanupManagedBy(t, opts.ManagedBy)
	return b
}

// CleanupManagedBy deletes, when t ends, every network (with its subnets)
// of managed-by value managedBy in any project: tagged with it, or named by
// its description (a create interrupted before its tags, e.g. by a client
// timeout after Neutron went ahead).
func (c *Cloud) CleanupManagedBy(t testing.TB, managedBy string) {
	admin := c.Admin(t)
	t.Cleanup(func() {
		for _, n := range c.Networks(t, admin, "") {
			if !slices.Contains(n.Tags, neutron.ManagedByTagPrefix+managedBy) && !strings.HasSuffix(n.Description, "managed by "+managedBy) {
				continue
			}
			if err := networks.Delete(context.Background(), admin, n.ID).ExtractErr(); err != nil &&
				!gophercloud.ResponseCodeIs(err, 404) {
				t.Errorf("cleaning up network %s: %v", n.ID, err)
			}
		}
	})
}

// Networks lists, through client, the networks carrying every tag of tags
// (comma-separated; "" for all).
func (c *Cloud) Networks(t testing.TB, client *gophercloud.ServiceClient, tags string) []networks.Network {
	t.Helper()
	return listAll(t, "networks", networks.List(client, networks.ListOpts{Tags: tags}), networks.ExtractNetworks)
}

// Subnets lists, through client, the subnets of network networkID.
func (c *Cloud) Subnets(t testing.TB, client *gophercloud.ServiceClient, networkID string) []subnets.Subnet {
	t.Helper()
	return listAll(t, "subnets", subnets.List(client, subnets.ListOpts{NetworkID: networkID}), subnets.ExtractSubnets)
}

// listAll fetches every page of pager and extracts its items (what they
// are, in the plural, for the failure message).
func listAll[T any](t testing.TB, what string, pager pagination.Pager, extract func(pagination.Page) ([]T, error)) []T {
	t.Helper()
	pages, err := pager.AllPages(context.Background())
	if err != nil {
		t.Fatalf("listing %s: %v", what, err)
	}
	out, err := extract(pages)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// AddNetwork creates, as the admin, a network with a subnet in project
// projectID (ProjectID when ""), with tags, as an operator or another tool
// would; it is deleted when t ends. It returns the network.
func (c *Cloud) AddNetwork(t testing.TB, projectID, name, cidr, gateway string, tags ...string) networks.Network {
	t.Helper()
	if projectID == "" {
		projectID = c.ProjectID
	}
	ctx := context.Background()
	admin := c.Admin(t)
	n, err := networks.Create(ctx, admin, networks.CreateOpts{Name: name, Description: "created by an operator", ProjectID: projectID}).Extract()
	if err != nil {
		t.Fatalf("creating network %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := networks.Delete(context.Background(), admin, n.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("cleaning up network %s: %v", n.ID, err)
		}
	})
	gw, version := gateway, gophercloud.IPv4
	if strings.Contains(cidr, ":") {
		version = gophercloud.IPv6
	}
	if _, err := subnets.Create(ctx, admin, subnets.CreateOpts{NetworkID: n.ID, Name: name, CIDR: cidr, GatewayIP: &gw,
		IPVersion: version, ProjectID: projectID}).Extract(); err != nil {
		t.Fatalf("creating subnet of %s: %v", name, err)
	}
	if len(tags) > 0 {
		if n.Tags, err = attributestags.ReplaceAll(ctx, admin, "networks", n.ID, attributestags.ReplaceAllOpts{Tags: tags}).Extract(); err != nil {
			t.Fatalf("tagging network %s: %v", name, err)
		}
	}
	got, err := networks.Get(ctx, admin, n.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return *got
}

// AddRouter creates, as the admin, a router named name in project
// projectID (ProjectID when ""), as an operator would, and returns its
// ID; it is deleted when t ends (after its interfaces, which a test
// leaves only when it failed).
func (c *Cloud) AddRouter(t testing.TB, projectID, name string) string {
	t.Helper()
	if projectID == "" {
		projectID = c.ProjectID
	}
	admin := c.Admin(t)
	r, err := routers.Create(context.Background(), admin, routers.CreateOpts{Name: name, ProjectID: projectID}).Extract()
	if err != nil {
		t.Fatalf("creating router %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		pages, err := ports.List(admin, ports.ListOpts{DeviceID: r.ID, DeviceOwner: "network:router_interface"}).AllPages(ctx)
		if err == nil {
			ps, _ := ports.ExtractPorts(pages)
			for _, p := range ps {
				for _, ip := range p.FixedIPs {
					_, _ = routers.RemoveInterface(ctx, admin, r.ID, routers.RemoveInterfaceOpts{SubnetID: ip.SubnetID}).Extract()
				}
			}
		}
		if err := routers.Delete(ctx, admin, r.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("cleaning up router %s: %v", r.ID, err)
		}
	})
	return r.ID
}

// AddSubnetPool creates, as the admin, a subnet pool shared with every
// project (what the controller's member user takes ranges from), named
// name, over prefix, of subnets /defaultLength by default, and returns
// its ID; it is deleted when t ends (after the subnets of it, which the
// test's own cleanup deletes).
func (c *Cloud) AddSubnetPool(t testing.TB, name, prefix string, defaultLength int) string {
	t.Helper()
	admin := c.Admin(t)
	p, err := subnetpools.Create(context.Background(), admin, subnetpools.CreateOpts{
		Name: name, Prefixes: []string{prefix}, DefaultPrefixLen: defaultLength, Shared: true,
	}).Extract()
	if err != nil {
		t.Fatalf("creating subnet pool %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := subnetpools.Delete(context.Background(), admin, p.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("cleaning up subnet pool %s: %v", p.ID, err)
		}
	})
	return p.ID
}
