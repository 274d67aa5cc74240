package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// gatewayAPIModule is the module whose standard-channel CRDs the control
// plane serves; its version is the one go.mod pins.
const gatewayAPIModule = "sigs.k8s.io/gateway-api"

// GatewayAPICRDs returns the directory of the standard-channel Gateway API
// CRDs (config/crd/standard) of the pinned sigs.k8s.io/gateway-api module,
// from the Go module cache.
func GatewayAPICRDs() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", gatewayAPIModule)
	cmd.Dir = root
	out, err := cmd.Output()
	if err == nil && strings.TrimSpace(string(out)) == "" {
		cmd = exec.Command("go", "mod", "download", "-json", gatewayAPIModule)
		cmd.Dir = root
		_, err = cmd.Output()
		if err == nil {
			cmd = exec.Command("go", "list", "-m", "-f", "{{.Dir}}", gatewayAPIModule)
			cmd.Dir = root
			out, err = cmd.Output()
		}
	}
	if err != nil {
		return "", fmt.Errorf("locating module %s: %w", gatewayAPIModule, err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	if !dirExists(dir) {
		return "", fmt.Errorf("module %s has no %s", gatewayAPIModule, dir)
	}
	return dir, nil
}

// InstallGatewayAPI installs the standard-channel Gateway API CRDs and waits
// until they are served.
func InstallGatewayAPI(cfg *rest.Config) error {
	dir, err := GatewayAPICRDs()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	return err
}

// RemoveHTTPRoutes deletes the HTTPRoute CRD (and so every HTTPRoute) and
// waits until discovery no longer lists httproutes: a cluster without the
// Gateway API, as far as ingress-manager can tell.
func RemoveHTTPRoutes(ctx context.Context, cfg *rest.Config) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	name := "httproutes." + gatewayv1.GroupName
	err = client.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting CRD %s: %w", name, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		served, err := ingressmanager.HTTPRoutesServed(disc)
		return err == nil && !served, nil
	})
}
