package neutron

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

// TestUnanswered: a create is awaited (never sent again at once) only when
// it may be running in Neutron: its connection lost after it was sent.
// Refused at the dial, answered with an error, or answered 401 with the
// new login refused (a revoked token, the password changed), it runs
// nowhere, and the retry creates without waiting.
func TestUnanswered(t *testing.T) {
	answered := func(code int) error {
		return gophercloud.ErrUnexpectedResponseCode{Method: http.MethodPost, URL: "http://neutron/v2.0/networks", Actual: code}
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"the connection reset after the request was sent", fmt.Errorf("create network: %w", reset), true},
		{"no answer within the timeout", errors.New("context deadline exceeded"), true},
		{"refused at the dial", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
		{"answered 500", answered(http.StatusInternalServerError), false},
		{"answered 401, then Keystone refusing the new login", fmt.Errorf("create network: %w",
			&gophercloud.ErrUnableToReauthenticate{ErrOriginal: answered(http.StatusUnauthorized), ErrReauth: answered(http.StatusUnauthorized)}), false},
		{"answered 401, then Keystone unreachable", gophercloud.ErrUnableToReauthenticate{ErrOriginal: answered(http.StatusUnauthorized), ErrReauth: reset}, false},
		{"logged in again, then the retried request's connection reset", &gophercloud.ErrErrorAfterReauthentication{ErrOriginal: reset}, true},
	} {
		if got := unanswered(c.err); got != c.want {
			t.Errorf("%s: unanswered = %v, want %v", c.name, got, c.want)
		}
	}
}
