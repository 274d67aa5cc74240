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
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"
)

// TestAuthFilter covers the filter's answers; the real TokenReview and
// SubjectAccessReview are exercised in test/integration/metrics.
func TestAuthFilter(t *testing.T) {
	alice := &authenticationv1.UserInfo{Username: "alice"}
	authenticated := func(*http.Request) (*authenticationv1.UserInfo, error) { return alice, nil }
	type authz = func(string, string) (bool, string, error)
	var seenVerb, seenPath string
	for _, tc := range []struct {
		name     string
		method   string
		authn    authenticateFunc
		authz    authz
		wantCode int
		wantBody string
	}{
		{"no credentials are unauthorized", http.MethodGet,
			func(*http.Request) (*authenticationv1.UserInfo, error) { return nil, errNoBearerToken }, nil,
			http.StatusUnauthorized, "Unauthorized"},
		{"a rejected token is unauthorized, not a server error", http.MethodGet,
			func(*http.Request) (*authenticationv1.UserInfo, error) {
				return nil, errors.New("invalid bearer token")
			}, nil,
			http.StatusUnauthorized, "Unauthorized"},
		{"an authenticated user without access is forbidden", http.MethodGet, authenticated,
			func(string, string) (bool, string, error) { return false, "no RBAC rule", nil },
			http.StatusForbidden, `user "alice" may not get /metrics`},
		{"a failed authorization is a server error", http.MethodGet, authenticated,
			func(string, string) (bool, string, error) { return false, "", errors.New("API server unreachable") },
			http.StatusInternalServerError, "authorization failed"},
		{"an authorized user gets the handler", http.MethodGet, authenticated,
			func(verb, path string) (bool, string, error) {
				seenVerb, seenPath = verb, path
				return true, "", nil
			},
			http.StatusOK, "metrics"},
		{"the verb is the lowercased method", http.MethodHead, authenticated,
			func(verb, _ string) (bool, string, error) { return verb == "head", "", nil },
			http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			authorize := func(_ context.Context, u *authenticationv1.UserInfo, verb, path string) (bool, string, error) {
				if u != alice {
					t.Errorf("authorizing %+v, want alice", u)
				}
				return tc.authz(verb, path)
			}
			h := authFilter(ktesting.NewLogger(t, ktesting.NewConfig()), tc.authn, authorize,
				http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics") }))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, "/metrics", nil))
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Fatalf("got %d %q, want %d containing %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
	if seenVerb != "get" || seenPath != "/metrics" {
		t.Errorf("authorized %q %q, want get /metrics", seenVerb, seenPath)
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{
		"":                     "",
		"Bearer":               "",
		"Bearer ":              "",
		"Basic dXNlcjpwdw==":   "",
		"Bearer abc":           "abc",
		"bearer abc":           "abc",
		"  BEARER abc  ":       "abc",
		"Bearer abc extra":     "abc",
		"Bearer  double-space": "",
	} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		got, ok := bearerToken(r)
		if got != want || ok != (want != "") {
			t.Errorf("bearerToken(%q) = %q, %v; want %q", header, got, ok, want)
		}
	}
}

// TestReviewerCaching: answers are kept (denials too, for less time), a
// failed review is not, and a review the API server failed is retried.
// The reviews' real answers are covered in test/integration/metrics.
func TestReviewerCaching(t *testing.T) {
	client := fake.NewClientset()
	var tokenReviews, sars int
	failNext := 0
	client.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		tokenReviews++
		if failNext > 0 {
			failNext--
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		}
		tr := a.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if strings.HasPrefix(tr.Spec.Token, "good") {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "alice", UID: "1", Groups: []string{"g"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
		} else {
			tr.Status = authenticationv1.TokenReviewStatus{Error: "token expired"}
		}
		return true, tr, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sars++
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		if sar.Spec.User != "alice" || sar.Spec.UID != "1" || !slices.Equal(sar.Spec.Groups, []string{"g"}) || sar.Spec.Extra["k"][0] != "v" ||
			sar.Spec.NonResourceAttributes == nil || sar.Spec.ResourceAttributes != nil {
			t.Errorf("SubjectAccessReview spec %+v, want alice's user, UID, groups and extra, and a non-resource URL", sar.Spec)
		}
		sar.Status.Allowed = sar.Spec.NonResourceAttributes.Path == "/metrics"
		return true, sar, nil
	})
	rv := &reviewer{
		tokens: client.AuthenticationV1().TokenReviews(),
		access: client.AuthorizationV1().SubjectAccessReviews(),
		authn:  utilcache.NewLRUExpireCache(authCacheSize),
		authz:  utilcache.NewLRUExpireCache(authCacheSize),
	}
	req := func(token string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}

	for range 3 {
		if u, err := rv.authenticate(req("good")); err != nil || u.Username != "alice" {
			t.Fatalf("authenticate(good) = %+v, %v", u, err)
		}
		if u, err := rv.authenticate(req("stale")); u != nil || err == nil || !strings.Contains(err.Error(), "token expired") {
			t.Fatalf("authenticate(stale) = %+v, %v; want the API server's error", u, err)
		}
	}
	if tokenReviews != 2 {
		t.Errorf("%d TokenReviews for 3 rounds of two tokens, want 2 (both answers cached)", tokenReviews)
	}

	// A review the API server fails is retried, and its failure not kept.
	failNext = 1
	if u, err := rv.authenticate(req("good-2")); err != nil || u == nil {
		t.Fatalf("authenticate with one 503 first = %+v, %v; want a retry that succeeds", u, err)
	}
	if tokenReviews != 4 {
		t.Errorf("%d TokenReviews, want 4 (one 503 retried)", tokenReviews)
	}

	alice, _ := rv.authenticate(req("good"))
	for range 3 {
		if ok, _, err := rv.authorize(context.Background(), alice, "get", "/metrics"); !ok || err != nil {
			t.Fatalf("authorize get /metrics = %v, %v", ok, err)
		}
		if ok, _, err := rv.authorize(context.Background(), alice, "get", "/debug"); ok || err != nil {
			t.Fatalf("authorize get /debug = %v, %v; want denied", ok, err)
		}
	}
	if sars != 2 {
		t.Errorf("%d SubjectAccessReviews for 3 rounds of two paths, want 2 (both answers cached)", sars)
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

	certReloadInterval = 20 * time.Millisecond
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

// TestServingCertificateRefusesBadFiles: a missing certificate, or a key of
// another one, is an error at start naming the flags.
func TestServingCertificateRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	pair := func(name string) (string, string) {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(name, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, k := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		if err := errors.Join(os.WriteFile(c, certPEM, 0o600), os.WriteFile(k, keyPEM, 0o600)); err != nil {
			t.Fatal(err)
		}
		return c, k
	}
	cert, _ := pair("one.example")
	_, otherKey := pair("other.example")
	for name, files := range map[string][2]string{
		"missing files":              {filepath.Join(dir, "nope.crt"), filepath.Join(dir, "nope.key")},
		"key of another certificate": {cert, otherKey},
	} {
		_, tctx := ktesting.NewTestContext(t)
		if _, _, err := servingTLSConfig(tctx, files[0], files[1]); err == nil || !strings.Contains(err.Error(), "--tls-cert-file") {
			t.Errorf("%s: err = %v, want one naming --tls-cert-file", name, err)
		}
	}
}

// TestProfiling: --profiling adds Go's profiles beside /metrics, and only
// then.
func TestProfiling(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		h := metricsHandler(profiling)
		for path, wantBody := range map[string]string{"/debug/pprof/": "goroutine", "/debug/pprof/cmdline": "", "/metrics": "# HELP"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			want := http.StatusOK
			if !profiling && path != "/metrics" {
				want = http.StatusNotFound
			}
			if rec.Code != want || want == http.StatusOK && !strings.Contains(rec.Body.String(), wantBody) {
				t.Errorf("profiling=%v: GET %s = %d %.80q, want %d with %q", profiling, path, rec.Code, rec.Body.String(), want, wantBody)
			}
		}
	}
}
