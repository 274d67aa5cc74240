package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// How long TokenReview and SubjectAccessReview results are reused: a
// Prometheus scraping every few seconds costs the API server one review of
// each kind per TTL, and a revoked token or removed binding stops working
// within it. Denials are kept shorter, so a newly bound account is let in soon.
const (
	authnCacheTTL     = time.Minute
	authzAllowTTL     = time.Minute
	authzDenyTTL      = 10 * time.Second
	authReviewTimeout = 10 * time.Second
)

// authReviewBackoff retries a failed review as kube-apiserver's delegating
// authentication does (k8s.io/apiserver/pkg/server/options.DefaultAuthWebhookRetryBackoff,
// not imported for this one value: that package pulls in the whole generic server).
var authReviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// The secure metrics server asks the API server whose bearer token a scrape
// carries (TokenReview), then whether that user may get /metrics
// (SubjectAccessReview); both answers are cached.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// withAuthnAuthz serves h only to requests whose bearer token the API server
// authenticates (TokenReview) and whose user it authorizes to the request's
// non-resource URL and verb (SubjectAccessReview), as kube-controller-manager
// guards its secure port. Not authenticated: 401; not authorized: 403.
//
// controller-runtime's metrics filter does the same with the same apiserver
// packages, but it answers 500 to a token the API server rejects, and its
// package registers controller-runtime's workqueue metrics provider, which
// would compete with component-base's for client-go's workqueues.
func withAuthnAuthz(ctx context.Context, client kubernetes.Interface, h http.Handler) (http.Handler, error) {
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		TokenAccessReviewClient:  client.AuthenticationV1(),
		TokenAccessReviewTimeout: authReviewTimeout,
		WebhookRetryBackoff:      &authReviewBackoff,
		CacheTTL:                 authnCacheTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("configuring metrics authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL:             authzAllowTTL,
		DenyCacheTTL:              authzDenyTTL,
		WebhookRetryBackoff:       &authReviewBackoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("configuring metrics authorization: %w", err)
	}
	logger := klog.FromContext(ctx).WithValues("server", "metrics")
	return authFilter(logger, authn, authz, h), nil
}

func authFilter(logger klog.Logger, authn authenticator.Request, authz authorizer.Authorizer, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok, err := authn.AuthenticateRequest(r)
		if !ok {
			// A rejected token comes back as an error too; a client's bad
			// token is not the manager's error, so it is not logged loudly.
			logger.V(2).Info("Metrics request not authenticated", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "Unauthorized: send a ServiceAccount token as 'Authorization: Bearer <token>'", http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{
			User:            res.User,
			Verb:            strings.ToLower(r.Method),
			Path:            r.URL.Path,
			ResourceRequest: false,
		}
		decision, reason, err := authz.Authorize(r.Context(), attrs)
		if decision == authorizer.DecisionAllow {
			h.ServeHTTP(w, r)
			return
		}
		if err != nil {
			logger.Error(err, "Metrics request authorization failed", "user", res.User.GetName())
			http.Error(w, "Internal Server Error: authorization failed", http.StatusInternalServerError)
			return
		}
		logger.V(2).Info("Metrics request forbidden", "user", res.User.GetName(), "path", r.URL.Path, "reason", reason)
		http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s (bind it to the metrics-reader ClusterRole)", res.User.GetName(), attrs.Verb, r.URL.Path), http.StatusForbidden)
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
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("metrics-serving-cert", certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert-file / --tls-private-key-file: %w", err)
	}
	var (
		mu       sync.Mutex
		lastCert []byte
		parsed   *tls.Certificate
	)
	getCertificate := func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		certPEM, keyPEM := content.CurrentCertKeyContent()
		mu.Lock()
		defer mu.Unlock()
		if parsed == nil || !bytes.Equal(certPEM, lastCert) {
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return nil, fmt.Errorf("metrics serving certificate: %w", err)
			}
			lastCert, parsed = certPEM, &pair
		}
		return parsed, nil
	}
	logger.Info("Serving metrics with the given certificate", "certFile", certFile, "keyFile", keyFile)
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCertificate}, func(ctx context.Context) { content.Run(ctx, 1) }, nil
}
