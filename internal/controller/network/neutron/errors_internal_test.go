package neutron

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

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

// The manager's own Keystone URL may carry user information (a proxy's
// basic-auth credentials in front of Keystone): no message made of a
// refused request quotes it. A refused login's message becomes the Ready
// condition and the BackendDown Event of every Network of the manager's
// own cloud, which their namespaces' readers see, and a log line.
func TestNoURLUserInfoInMessages(t *testing.T) {
	const password = "proxy-pass-4f1e"
	keystone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`))
	}))
	defer keystone.Close()
	withUser := strings.Replace(keystone.URL, "://", "://proxy-user:"+password+"@", 1) + "/v3"
	answered := func(url string, code int) error {
		return gophercloud.ErrUnexpectedResponseCode{Method: http.MethodPost, URL: url, Actual: code,
			Body: []byte(`{"error": {"code": 401, "message": "The request you have made requires authentication."}}`)}
	}
	_, newErr := New(context.Background(), Options{RequestTimeout: 5 * time.Second, AuthOptions: &gophercloud.AuthOptions{
		IdentityEndpoint: withUser, Username: "manager", Password: "wrong", DomainName: "Default", TenantName: "admin"}})
	if newErr == nil {
		t.Fatal("New with refused credentials succeeded")
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"a create answered 401, then the new login refused", classify("create network", &gophercloud.ErrUnableToReauthenticate{
			ErrOriginal: answered("http://neutron.example:9696/v2.0/networks", http.StatusUnauthorized),
			ErrReauth:   answered(withUser+"/auth/tokens", http.StatusUnauthorized)})},
		{"a request refused at an endpoint with user information", classify("list networks", answered(strings.Replace(withUser, "/v3", "/v2.0/networks", 1), http.StatusUnauthorized))},
		{"the first login refused", newErr},
		{"a Keystone URL that does not parse", func() error {
			_, err := New(context.Background(), Options{AuthOptions: &gophercloud.AuthOptions{IdentityEndpoint: "http://proxy-user:" + password + "@key stone/v3"}})
			return err
		}()},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if msg := c.err.Error(); strings.Contains(msg, password) {
			t.Errorf("%s: the message quotes the URL's password: %s", c.name, msg)
		}
	}
}
