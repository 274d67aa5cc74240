package neutrontest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"

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
	identity, err := c.adminIdentity(ctx)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name, password := "test-"+hex.EncodeToString(b), hex.EncodeToString(b)+"-secret"
	u, err := users.Create(ctx, identity, users.CreateOpts{Name: name, DomainID: "default", Password: password,
		DefaultProjectID: c.ProjectID}).Extract()
	if err != nil {
		return nil, fmt.Errorf("creating keystone user %s: %w", name, err)
	}
	user := &User{ID: u.ID, identity: identity, Env: c.Env()}
	user.Env["OS_USERNAME"], user.Env["OS_PASSWORD"] = name, password
	pages, err := roles.List(identity, roles.ListOpts{Name: "member"}).AllPages(ctx)
	if err == nil {
		var rs []roles.Role
		if rs, err = roles.ExtractRoles(pages); err == nil && len(rs) != 1 {
			err = fmt.Errorf("%d roles named member", len(rs))
		}
		if err == nil {
			err = roles.Assign(ctx, identity, rs[0].ID, roles.AssignOpts{UserID: u.ID, ProjectID: c.ProjectID}).ExtractErr()
		}
	}
	if err != nil {
		_ = user.Delete(ctx)
		return nil, fmt.Errorf("giving keystone user %s the member role: %w", name, err)
	}
	return user, nil
}

// SetPassword changes the user's password in Keystone, which also revokes
// its tokens.
func (u *User) SetPassword(ctx context.Context, password string) error {
	if err := users.Update(ctx, u.identity, u.ID, users.UpdateOpts{Password: password}).Err; err != nil {
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
