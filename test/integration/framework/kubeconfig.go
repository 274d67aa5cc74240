package framework

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// WriteKubeconfig writes a kubeconfig for cfg (server, CA, client
// certificate or token) to path.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	if cfg.Impersonate.UserName != "" {
		return errors.New("writing a kubeconfig: impersonating configs are not supported")
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return err
		}
		ca = b
	}
	auth := &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		ClientCertificate:     cfg.CertFile,
		ClientKey:             cfg.KeyFile,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca, TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos["test"] = auth
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, path)
}

// Kubeconfig writes a kubeconfig for cfg into the test's temporary
// directory and returns its path.
func Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// ManagerKubeconfig writes into the test's temporary directory a
// kubeconfig that authenticates to admin's API server as the manager's
// ServiceAccount (config/default's), with a token the API server issues
// for it (TokenRequest, valid an hour), and returns its path: for the
// manager's binary run as deployed, under exactly config/default's RBAC.
// With leaseNS set, the account is also granted config/default's Lease
// rules there (GrantLeaseAccess), for leader election in that namespace.
func ManagerKubeconfig(t testing.TB, admin *rest.Config, leaseNS string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if leaseNS != "" {
		if err := GrantLeaseAccess(ctx, admin, leaseNS); err != nil {
			t.Fatal(err)
		}
	}
	saNS, saName, err := ManagerServiceAccount()
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := client.CoreV1().ServiceAccounts(saNS).CreateToken(ctx, saName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", saNS, saName, err)
	}
	c := rest.AnonymousClientConfig(admin)
	c.BearerToken = tr.Status.Token
	return Kubeconfig(t, c)
}
