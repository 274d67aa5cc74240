package neutrontest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
)

// User is a Keystone user of its own, with the member role in the
// controller's project, as the controller's user has: its requests are told
// apart from everyone else's in Neutron's access log, and its password can
// be changed without disturbing anyone.
type User struct {
	// ID is the Keystone user ID (the access log's user field).
	ID string
	// Env is its OS_* variables, as an openrc sets them.
	Env map[string]string

	identity *gophercloud.ServiceClient
}

// NewUser creates a user in the controller's project; the caller deletes
// it with Delete.
func (c *Cloud) NewUser(ctx context.Context) (*User, error) {
	return c.newUser(ctx, c.ProjectID, c.env["OS_PROJECT_NAME"])
}

// newUser creates a user with the member role in project projectID, named
// projectName.
func (c *Cloud) newUser(ctx context.Context, projectID, projectName string) (*User, error) {
	identity, err := c.adminIdentity(ctx)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name, password := "test-"+hex.EncodeToString(b), hex.EncodeToString(b)+"-secret"
	u, err := users.Create(ctx, identity, users.CreateOpts{Name: name, DomainID: "default", Password: password,
		DefaultProjectID: projectID}).Extract()
	if err != nil {
		return nil, fmt.Errorf("creating keystone user %s: %w", name, err)
	}
	user := &User{ID: u.ID, identity: identity, Env: c.Env()}
	user.Env["OS_USERNAME"], user.Env["OS_PASSWORD"], user.Env["OS_PROJECT_NAME"] = name, password, projectName
	delete(user.Env, "OS_PROJECT_ID")
	pages, err := roles.List(identity, roles.ListOpts{Name: "member"}).AllPages(ctx)
	if err == nil {
		var rs []roles.Role
		if rs, err = roles.ExtractRoles(pages); err == nil && len(rs) != 1 {
			err = fmt.Errorf("%d roles named member", len(rs))
		}
		if err == nil {
			err = roles.Assign(ctx, identity, rs[0].ID, roles.AssignOpts{UserID: u.ID, ProjectID: projectID}).ExtractErr()
		}
	}
	if err != nil {
		_ = user.Delete(ctx)
		return nil, fmt.Errorf("giving keystone user %s the member role: %w", name, err)
	}
	return user, nil
}

// CloudsYAML returns a clouds.yaml with one cloud, name, of the user's
// credentials (what a Network's Secret holds).
func (u *User) CloudsYAML(name string) []byte {
	e := u.Env
	return fmt.Appendf(nil, `clouds:
  %s:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: %s
      project_domain_name: %s
    region_name: %s
    interface: public
`, name, e["OS_AUTH_URL"], e["OS_USERNAME"], e["OS_PASSWORD"], e["OS_PROJECT_NAME"], e["OS_USER_DOMAIN_NAME"], e["OS_PROJECT_DOMAIN_NAME"], e["OS_REGION_NAME"])
}

// Project is a Keystone project of a test's own, with a user of its own
// that has the member role in it (and nothing else): a tenant.
type Project struct {
	ID, Name string
	User     *User
}

// Project creates a project and its member user; when t ends, it deletes
// every network left in the project, the user and the project.
func (c *Cloud) Project(t testing.TB) *Project {
	t.Helper()
	ctx := context.Background()
	identity, err := c.adminIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "tenant-" + hex.EncodeToString(b)
	p, err := projects.Create(ctx, identity, projects.CreateOpts{Name: name, DomainID: "default"}).Extract()
	if err != nil {
		t.Fatalf("creating keystone project %s: %v", name, err)
	}
	admin := c.Admin(t)
	t.Cleanup(func() {
		for _, n := range c.Networks(t, admin, "") {
			if n.ProjectID != p.ID {
				continue
			}
			if err := networks.Delete(ctx, admin, n.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
				t.Errorf("cleaning up network %s of project %s: %v", n.ID, name, err)
			}
		}
		if err := projects.Delete(ctx, identity, p.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			t.Errorf("deleting keystone project %s: %v", name, err)
		}
	})
	u, err := c.newUser(ctx, p.ID, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := u.Delete(ctx); err != nil {
			t.Error(err)
		}
	})
	return &Project{ID: p.ID, Name: name, User: u}
}

// SetPassword changes the user's password in Keystone, which also revokes
// its tokens. A request Keystone dropped unanswered (its uwsgi closing the
// connection under load) is sent again, up to three times: setting the
// same password twice changes nothing more.
func (u *User) SetPassword(ctx context.Context, password string) error {
	var err error
	for range 3 {
		if err = users.Update(ctx, u.identity, u.ID, users.UpdateOpts{Password: password}).Err; !errors.Is(err, io.EOF) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("changing the password of keystone user %s: %w", u.ID, err)
	}
	return nil
}

// Delete deletes the user.
func (u *User) Delete(ctx context.Context) error {
	if err := users.Delete(ctx, u.identity, u.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		return fmt.Errorf("deleting keystone user %s: %w", u.ID, err)
	}
	return nil
}

// adminIdentity returns an identity v3 client of the cloud admin.
func (c *Cloud) adminIdentity(ctx context.Context) (*gophercloud.ServiceClient, error) {
	ao, eo, _, err := neutron.ConfigFromEnv(Getenv(c.adminEnv))
	if err != nil {
		return nil, err
	}
	pc, err := openstack.AuthenticatedClient(ctx, ao)
	if err != nil {
		return nil, fmt.Errorf("authenticating as the admin: %w", err)
	}
	return openstack.NewIdentityV3(pc, eo)
}

// User is NewUser for a test: the user is deleted when t ends.
func (c *Cloud) User(t testing.TB) *User {
	t.Helper()
	u, err := c.NewUser(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := u.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return u
}
