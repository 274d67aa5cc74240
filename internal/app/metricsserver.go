package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// How long TokenReview and SubjectAccessReview results are reused: a
// Prometheus scraping every few seconds costs the API server one review of
// each kind per TTL, and a revoked token or removed binding stops working
// within it. Denials are kept shorter, so a newly bound account (or a
// token just issued) is let in soon. Failed reviews are not kept.
const (
	authnCacheTTL     = time.Minute
	authnDenyTTL      = 10 * time.Second
	authzAllowTTL     = time.Minute
	authzDenyTTL      = 10 * time.Second
	authCacheSize     = 1024
	authReviewTimeout = 10 * time.Second
)

// authReviewBackoff retries a review that failed for the API server's
// reasons (unreachable, 5xx, 429), as kube-apiserver's delegating
// authentication does (DefaultAuthWebhookRetryBackoff of
// k8s.io/apiserver/pkg/server/options).
var authReviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// The secure metrics server asks the API server whose bearer token a scrape
// carries (TokenReview), then whether that user may get /metrics
// (SubjectAccessReview); both answers are cached.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// authenticateFunc returns the user of a request's credentials; nil and an
// error saying why when they are missing or rejected.
type authenticateFunc func(*http.Request) (*authenticationv1.UserInfo, error)

// authorizeFunc tells whether user may verb the non-resource URL path.
type authorizeFunc func(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (allowed bool, reason string, err error)

// withAuthnAuthz serves h only to requests whose bearer token the API server
// authenticates (TokenReview) and whose user it authorizes to the request's
// non-resource URL and verb (SubjectAccessReview), as kube-controller-manager
// guards its secure port. Not authenticated: 401; not authorized: 403.
//
// The reviews are those of k8s.io/apiserver's delegating authentication and
// authorization, done here with client-go: that package brings a generic
// API server's dependencies (CEL, gRPC, OpenTelemetry) into the binary and
// its memory, for two API calls and two caches.
func withAuthnAuthz(ctx context.Context, authn authenticationv1client.AuthenticationV1Interface, authz authorizationv1client.AuthorizationV1Interface, h http.Handler) (http.Handler, error) {
	rv := &reviewer{
		tokens: authn.TokenReviews(),
		access: authz.SubjectAccessReviews(),
		authn:  utilcache.NewLRUExpireCache(authCacheSize),
		authz:  utilcache.NewLRUExpireCache(authCacheSize),
	}
	logger := klog.FromContext(ctx).WithValues("server", "metrics")
	return authFilter(logger, rv.authenticate, rv.authorize, h), nil
}

func authFilter(logger klog.Logger, authn authenticateFunc, authz authorizeFunc, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := authn(r)
		if u == nil {
			// A rejected token is not the manager's error, nor is an API
			// server that cannot tell (the scraper retries): not logged loudly.
			logger.V(2).Info("Metrics request not authenticated", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "Unauthorized: send a ServiceAccount token as 'Authorization: Bearer <token>'", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(r.Method)
		allowed, reason, err := authz(r.Context(), u, verb, r.URL.Path)
		if allowed {
			h.ServeHTTP(w, r)
			return
		}
		if err != nil {
			logger.Error(err, "Metrics request authorization failed", "user", u.Username)
			http.Error(w, "Internal Server Error: authorization failed", http.StatusInternalServerError)
			return
		}
		logger.V(2).Info("Metrics request forbidden", "user", u.Username, "path", r.URL.Path, "reason", reason)
		http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s (bind it to the metrics-reader ClusterRole)", u.Username, verb, r.URL.Path), http.StatusForbidden)
	})
}

// reviewer asks the API server, and remembers its answers for a while.
type reviewer struct {
	tokens authenticationv1client.TokenReviewInterface
	access authorizationv1client.SubjectAccessReviewInterface
	// authn maps the SHA-256 of a token (never the token) to its
	// *authenticationv1.UserInfo, or to an error for a rejected one.
	authn *utilcache.LRUExpireCache
	// authz maps a SubjectAccessReview spec (JSON) to its answer.
	authz *utilcache.LRUExpireCache
}

// authzAnswer is a cached SubjectAccessReview answer.
type authzAnswer struct {
	allowed bool
	reason  string
}

// errNoBearerToken: the request carries no "Authorization: Bearer" token.
var errNoBearerToken = errors.New("no bearer token")

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header, read as kube-apiserver reads it.
func bearerToken(r *http.Request) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(r.Header.Get("Authorization")), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

func (rv *reviewer) authenticate(r *http.Request) (*authenticationv1.UserInfo, error) {
	token, ok := bearerToken(r)
	if !ok {
		return nil, errNoBearerToken
	}
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if v, ok := rv.authn.Get(key); ok {
		if u, ok := v.(*authenticationv1.UserInfo); ok {
			return u, nil
		}
		return nil, v.(error)
	}
	var status authenticationv1.TokenReviewStatus
	err := review(r.Context(), func(ctx context.Context) error {
		res, err := rv.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err == nil {
			status = res.Status
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("TokenReview: %w", err)
	}
	if !status.Authenticated {
		msg := status.Error
		if msg == "" {
			msg = "token not authenticated"
		}
		err := errors.New(msg)
		rv.authn.Add(key, err, authnDenyTTL)
		return nil, err
	}
	u := status.User.DeepCopy()
	rv.authn.Add(key, u, authnCacheTTL)
	return u, nil
}

func (rv *reviewer) authorize(ctx context.Context, u *authenticationv1.UserInfo, verb, path string) (bool, string, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:                  u.Username,
		UID:                   u.UID,
		Groups:                u.Groups,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	if len(u.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return false, "", err
	}
	key := string(keyBytes)
	if v, ok := rv.authz.Get(key); ok {
		a := v.(authzAnswer)
		return a.allowed, a.reason, nil
	}
	var status authorizationv1.SubjectAccessReviewStatus
	err = review(ctx, func(ctx context.Context) error {
		res, err := rv.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err == nil {
			status = res.Status
		}
		return err
	})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	a := authzAnswer{allowed: status.Allowed && !status.Denied, reason: status.Reason}
	if status.EvaluationError != "" && !a.allowed {
		a.reason = strings.TrimSpace(a.reason + " " + status.EvaluationError)
	}
	ttl := authzDenyTTL
	if a.allowed {
		ttl = authzAllowTTL
	}
	rv.authz.Add(key, a, ttl)
	return a.allowed, a.reason, nil
}

// review calls create, each try bounded by authReviewTimeout, retrying with
// authReviewBackoff while the API server is the one failing.
func review(ctx context.Context, create func(context.Context) error) error {
	return retry.OnError(authReviewBackoff, func(err error) bool {
		if ctx.Err() != nil {
			return false
		}
		var s apierrors.APIStatus
		if errors.As(err, &s) {
			code := s.Status().Code
			return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests
		}
		return true // no answer: connection refused, reset, timeout
	}, func() error {
		ctx, cancel := context.WithTimeout(ctx, authReviewTimeout)
		defer cancel()
		return create(ctx)
	})
}

// servingTLSConfig returns the metrics server's TLS configuration: the
// certificate and key of --tls-cert-file / --tls-private-key-file, reloaded
// when the files change (a rotated Secret), else a self-signed certificate
// generated now, in memory.
func servingTLSConfig(ctx context.Context, certFile, keyFile string) (*tls.Config, func(context.Context), error) {
	logger := klog.FromContext(ctx)
	if certFile == "" {
		host, _ := os.Hostname()
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("controller-manager", []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost", host})
		if err != nil {
			return nil, nil, fmt.Errorf("generating a self-signed metrics serving certificate: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("loading the self-signed metrics serving certificate: %w", err)
		}
		logger.Info("No --tls-cert-file given: serving metrics with a self-signed certificate generated at start; scrapers must skip verification or be given a certificate through --tls-cert-file / --tls-private-key-file")
		return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}, func(context.Context) {}, nil
	}
	kp := &keyPairFiles{certFile: certFile, keyFile: keyFile}
	if _, err := kp.load(); err != nil {
		return nil, nil, fmt.Errorf("--tls-cert-file / --tls-private-key-file: %w", err)
	}
	logger.Info("Serving metrics with the given certificate", "certFile", certFile, "keyFile", keyFile)
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.get}, kp.run, nil
}

// certReloadInterval is how often the serving certificate's files are read
// again: the kubelet updates a mounted Secret within a minute or so.
var certReloadInterval = 10 * time.Second

// keyPairFiles is a certificate and key read from files, and read again
// while run runs.
type keyPairFiles struct {
	certFile, keyFile string

	mu              sync.RWMutex
	certPEM, keyPEM []byte
	pair            *tls.Certificate
}

// load reads both files and, when either changed, parses them; a pair that
// does not parse (the key written before the certificate, say) leaves the
// previous one in place.
func (k *keyPairFiles) load() (changed bool, err error) {
	certPEM, err := os.ReadFile(k.certFile)
	if err != nil {
		return false, err
	}
	keyPEM, err := os.ReadFile(k.keyFile)
	if err != nil {
		return false, err
	}
	k.mu.RLock()
	same := bytes.Equal(certPEM, k.certPEM) && bytes.Equal(keyPEM, k.keyPEM)
	k.mu.RUnlock()
	if same {
		return false, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, err
	}
	k.mu.Lock()
	k.certPEM, k.keyPEM, k.pair = certPEM, keyPEM, &pair
	k.mu.Unlock()
	return true, nil
}

func (k *keyPairFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.pair, nil
}

// run reloads the files every certReloadInterval until ctx ends.
func (k *keyPairFiles) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("certFile", k.certFile, "keyFile", k.keyFile)
	tick := time.NewTicker(certReloadInterval)
	defer tick.Stop()
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		changed, err := k.load()
		switch {
		case err != nil:
			if err.Error() != lastErr {
				logger.Error(err, "Reading the metrics serving certificate failed: serving the previous one until the files are valid")
			}
			lastErr = err.Error()
		case changed:
			logger.Info("Reloaded the metrics serving certificate")
			lastErr = ""
		default:
			lastErr = ""
		}
	}
}
