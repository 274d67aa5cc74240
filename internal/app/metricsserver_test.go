package app

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"
)

type authnFunc func(*http.Request) (*authenticator.Response, bool, error)

func (f authnFunc) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	return f(r)
}

type authzFunc func(authorizer.Attributes) (authorizer.Decision, string, error)

func (f authzFunc) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return f(a)
}

// TestAuthFilter covers the filter's answers; the real TokenReview and
// SubjectAccessReview are exercised in test/integration/metrics.
func TestAuthFilter(t *testing.T) {
	alice := &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}
	var seen authorizer.Attributes
	for _, tc := range []struct {
		name     string
		method   string
		authn    authnFunc
		authz    authzFunc
		wantCode int
		wantBody string
	}{
		{"no credentials are unauthorized", http.MethodGet,
			func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil }, nil,
			http.StatusUnauthorized, "Unauthorized"},
		{"a rejected token is unauthorized, not a server error", http.MethodGet,
			func(*http.Request) (*authenticator.Response, bool, error) {
				return nil, false, errors.New("invalid bearer token")
			}, nil,
			http.StatusUnauthorized, "Unauthorized"},
		{"an authenticated user without access is forbidden", http.MethodGet,
			func(*http.Request) (*authenticator.Response, bool, error) { return alice, true, nil },
			func(authorizer.Attributes) (authorizer.Decision, string, error) {
				return authorizer.DecisionNoOpinion, "no RBAC rule", nil
			},
			http.StatusForbidden, `user "alice" may not get /metrics`},
		{"an explicit deny is forbidden", http.MethodGet,
			func(*http.Request) (*authenticator.Response, bool, error) { return alice, true, nil },
			func(authorizer.Attributes) (authorizer.Decision, string, error) {
				return authorizer.DecisionDeny, "denied", nil
			},
			http.StatusForbidden, "Forbidden"},
		{"a failed authorization is a server error", http.MethodGet,
			func(*http.Request) (*authenticator.Response, bool, error) { return alice, true, nil },
			func(authorizer.Attributes) (authorizer.Decision, string, error) {
				return authorizer.DecisionNoOpinion, "", errors.New("API server unreachable")
			},
			http.StatusInternalServerError, "authorization failed"},
		{"an authorized user gets the handler", http.MethodGet,
			func(*http.Request) (*authenticator.Response, bool, error) { return alice, true, nil },
			func(a authorizer.Attributes) (authorizer.Decision, string, error) {
				seen = a
				return authorizer.DecisionAllow, "", nil
			},
			http.StatusOK, "metrics"},
		{"the verb is the lowercased method", http.MethodHead,
			func(*http.Request) (*authenticator.Response, bool, error) { return alice, true, nil },
			func(a authorizer.Attributes) (authorizer.Decision, string, error) {
				if a.GetVerb() != "head" {
					return authorizer.DecisionDeny, "", nil
				}
				return authorizer.DecisionAllow, "", nil
			},
			http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := authFilter(ktesting.NewLogger(t, ktesting.NewConfig()), tc.authn, tc.authz,
				http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics") }))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, "/metrics", nil))
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Fatalf("got %d %q, want %d containing %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
	if seen == nil || seen.IsResourceRequest() || seen.GetPath() != "/metrics" || seen.GetVerb() != "get" || seen.GetUser().GetName() != "alice" {
		t.Errorf("authorized attributes = %+v, want a non-resource get /metrics by alice", seen)
	}
}

// TestServingCertificateReloads: the certificate of --tls-cert-file is
// picked up again when the files change, as when a mounted Secret rotates.
func TestServingCertificateReloads(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(host string) {
		t.Helper()
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Key first: a reader never pairs the new certificate with the old key
		// for long (a mismatch is reported and the old pair kept).
		if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	served := func(cfg *tls.Config) (string, error) {
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			return "", err
		}
		if c.Leaf == nil || len(c.Leaf.DNSNames) != 1 {
			return "", errors.New("no parsed leaf with one DNS name")
		}
		return c.Leaf.DNSNames[0], nil
	}

	write("first.example")
	_, tctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(tctx)
	defer cancel()
	cfg, run, err := servingTLSConfig(ctx, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if cn, err := served(cfg); err != nil || cn != "first.example" {
		t.Fatalf("served certificate %q, %v; want first.example", cn, err)
	}
	done := make(chan struct{})
	go func() { defer close(done); run(ctx) }()
	defer func() { cancel(); <-done }()

	write("second.example")
	var last string
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last, _ = served(cfg)
		return last == "second.example", nil
	})
	if err != nil {
		t.Fatalf("served certificate %q after the files changed; want second.example: %v", last, err)
	}
}
