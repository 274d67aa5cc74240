// Integration tests of the secure metrics server (--metrics-secure) against a
// real kube-apiserver + etcd: the API server issues the ServiceAccount tokens
// and answers the manager's TokenReviews and SubjectAccessReviews, and the
// manager runs as the deployed ServiceAccount with exactly its RBAC.
package metrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// metricsReaderRole returns config/default's ClusterRole that grants GET
// /metrics (Main has applied it).
func metricsReaderRole(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	objs, err := framework.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && strings.HasSuffix(o.GetName(), "metrics-reader") {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("config/default has %d ClusterRoles named *metrics-reader; want one", len(found))
	}
	return found[0]
}

// serviceAccountToken creates ServiceAccount ns/name, bound to role unless it
// is nil (the binding in effect before it returns), and returns a token the
// API server issues for it.
func serviceAccountToken(t *testing.T, client kubernetes.Interface, ns, name string, role *unstructured.Unstructured) string {
	t.Helper()
	ctx := context.Background()
	objs := []runtime.Object{&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	if role != nil {
		objs = append(objs, &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.GetName()},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		})
	}
	var us []*unstructured.Unstructured
	if role != nil {
		// Apply waits until the rules of the roles it applies are granted.
		us = append(us, role)
	}
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		us = append(us, &unstructured.Unstructured{Object: m})
	}
	if err := framework.Apply(ctx, framework.AdminConfig(), us, false); err != nil {
		t.Fatal(err)
	}
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// servingCert writes a CA-signed serving certificate for 127.0.0.1 into dir
// and returns the files and a pool trusting its CA.
func servingCert(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("controller-manager-test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("no certificate in the generated PEM")
	}
	return certFile, keyFile, roots
}

// scrape GETs url with token ("" for none) and returns the status and body.
func scrape(ctx context.Context, client *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func startManager(t *testing.T, c *rest.Config, ns string, mutate func(*app.Options)) *framework.Manager {
	t.Helper()
	o := framework.ControllerOptions(ns, "pod-logger")
	o.MetricsBindAddress = "127.0.0.1:0"
	o.MetricsSecure = true
	if mutate != nil {
		mutate(o)
	}
	return framework.StartManager(t, c, o)
}

// TestSecureMetrics scrapes the manager's HTTPS /metrics as the API server's
// ServiceAccounts: only a token whose account is bound to the metrics-reader
// ClusterRole gets the metrics.
func TestSecureMetrics(t *testing.T) {
	client, ns := framework.Setup(t)
	readerToken := serviceAccountToken(t, client, ns, "prometheus", metricsReaderRole(t))
	otherToken := serviceAccountToken(t, client, ns, "someone-else", nil)

	certFile, keyFile, roots := servingCert(t)
	managerCfg, reviews := framework.CountRequests(framework.AdminConfig())
	m := startManager(t, managerCfg, ns, func(o *app.Options) { o.TLSCertFile, o.TLSPrivateKeyFile = certFile, keyFile })
	url := "https://" + m.MetricsAddress() + "/metrics"
	// The certificate is verified: it is the one given by the flags.
	httpsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "controller-manager-test"}}}
	framework.Eventually(t, framework.Timeout, "the manager's caches to sync", func(ctx context.Context) (bool, error) {
		code, _, err := scrape(ctx, http.DefaultClient, "http://"+m.HealthAddress()+"/readyz", "")
		return code == http.StatusOK, err
	})

	for _, tc := range []struct {
		name  string
		token string
		code  int
	}{
		{"a request without a token is not authenticated", "", http.StatusUnauthorized},
		{"a garbage token is not authenticated", "not-a-token", http.StatusUnauthorized},
		{"a token the API server did not issue is not authenticated", readerToken[:len(readerToken)-4] + "AAAA", http.StatusUnauthorized},
		{"an account without the metrics-reader role is forbidden", otherToken, http.StatusForbidden},
		{"an account bound to the metrics-reader role gets the metrics", readerToken, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), framework.Timeout)
			defer cancel()
			code, body, err := scrape(ctx, httpsClient, url, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Fatalf("status %d, want %d; body:\n%.500s", code, tc.code, body)
			}
			hasMetrics := strings.Contains(body, "workqueue_depth")
			if tc.code == http.StatusOK {
				for _, want := range []string{`workqueue_depth{name="pod-logger"}`, `workqueue_adds_total{name="pod-logger"}`, `controller_manager_is_leader 1`} {
					if !strings.Contains(body, want) {
						t.Errorf("/metrics lacks %s", want)
					}
				}
			} else if hasMetrics {
				t.Errorf("status %d, yet the body holds metrics", code)
			}
		})
	}

	t.Run("plain HTTP to the TLS port gets no metrics", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), framework.Timeout)
		defer cancel()
		code, body, err := scrape(ctx, http.DefaultClient, "http://"+m.MetricsAddress()+"/metrics", readerToken)
		if err == nil && (code == http.StatusOK || strings.Contains(body, "workqueue_")) {
			t.Fatalf("plain HTTP: status %d, body:\n%.500s", code, body)
		}
		t.Logf("plain HTTP: status %d, err %v, body %q", code, err, body)
	})

	t.Run("repeated scrapes reuse the cached reviews", func(t *testing.T) {
		// A fresh token of the reader: its first scrape needs a TokenReview
		// (the user's SubjectAccessReview may be cached already); the
		// following ones, none.
		token := serviceAccountToken(t, client, ns, "prometheus", nil)
		reviews.Reset()
		ctx, cancel := context.WithTimeout(context.Background(), framework.Timeout)
		defer cancel()
		for i := range 5 {
			code, _, err := scrape(ctx, httpsClient, url, token)
			if err != nil || code != http.StatusOK {
				t.Fatalf("scrape %d: status %d, err %v", i, code, err)
			}
		}
		tokenReviews, sars := reviews.Count(http.MethodPost, "tokenreviews"), reviews.Count(http.MethodPost, "subjectaccessreviews")
		if tokenReviews != 1 || sars > 1 {
			t.Errorf("5 scrapes made %d TokenReviews and %d SubjectAccessReviews, want 1 and at most 1 (%s)", tokenReviews, sars, reviews)
		}
	})

	t.Run("the health server stays plain HTTP without authentication", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), framework.Timeout)
		defer cancel()
		for _, path := range []string{"/healthz", "/readyz"} {
			code, body, err := scrape(ctx, http.DefaultClient, "http://"+m.HealthAddress()+path, "")
			if err != nil || code != http.StatusOK {
				t.Errorf("%s: status %d, err %v, body %q", path, code, err, body)
			}
		}
	})
}

// TestSelfSignedCertificate: without --tls-cert-file the manager serves
// HTTPS with a certificate it generates, says so in its log, and still
// requires a token.
func TestSelfSignedCertificate(t *testing.T) {
	client, ns := framework.Setup(t)
	readerToken := serviceAccountToken(t, client, ns, "prometheus", metricsReaderRole(t))
	m := startManager(t, framework.AdminConfig(), ns, nil)
	if m.CountLogs("self-signed certificate") != 1 {
		t.Errorf("the log does not say the certificate is self-signed:\n%s", m.Logs())
	}
	url := "https://" + m.MetricsAddress() + "/metrics"
	ctx, cancel := context.WithTimeout(context.Background(), framework.Timeout)
	defer cancel()

	// Not signed by a CA the system trusts.
	if _, _, err := scrape(ctx, &http.Client{Timeout: 10 * time.Second}, url, readerToken); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("verifying the self-signed certificate: err = %v, want a certificate error", err)
	}
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, tc := range []struct {
		token string
		code  int
	}{{"", http.StatusUnauthorized}, {readerToken, http.StatusOK}} {
		code, body, err := scrape(ctx, insecure, url, tc.token)
		if err != nil || code != tc.code {
			t.Errorf("token %t: status %d, err %v, want %d; body:\n%.300s", tc.token != "", code, err, tc.code, body)
		}
	}
}
