package neutron

// Authentication to Keystone: the first token, with retries of a busy
// gateway; the project the token is scoped to.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

// authenticate gets pc its first token. Keystone, or a gateway in front of
// it, answering 5xx or closing the connection without an answer is retried
// with backoff until ctx ends (then the last such error is returned): a
// Keystone busy for a moment must not stop the manager. Anything else, a
// refused password or nothing listening at the URL, is the error at once.
func authenticate(ctx context.Context, pc *gophercloud.ProviderClient, ao *gophercloud.AuthOptions) error {
	delay := 250 * time.Millisecond
	var last error
	for {
		err := openstack.AuthenticateV3(ctx, pc, ao, gophercloud.EndpointOpts{})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil && last != nil {
			return last
		}
		code, answered := statusCode(err)
		if answered && code < 500 || !answered && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return last
		case <-time.After(delay):
		}
		delay = min(2*delay, 4*time.Second)
	}
}

// projectOf returns the ID of the project pc's Keystone v3 token is scoped
// to, or "" when it is not known (then lookups are not limited by project).
func projectOf(pc *gophercloud.ProviderClient) string {
	if pc == nil {
		return ""
	}
	r, ok := pc.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return ""
	}
	if p, err := r.ExtractProject(); err == nil && p != nil {
		return p.ID
	}
	return ""
}

func who(ao gophercloud.AuthOptions) string {
	switch {
	case ao.ApplicationCredentialID != "":
		return "application credential " + ao.ApplicationCredentialID
	case ao.ApplicationCredentialName != "":
		return "application credential " + ao.ApplicationCredentialName
	case ao.Username != "":
		return fmt.Sprintf("user %q", ao.Username)
	default:
		return fmt.Sprintf("user ID %q", ao.UserID)
	}
}
