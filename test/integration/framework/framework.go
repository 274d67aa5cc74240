// Package framework starts the real control plane the integration tests run
// against: etcd and kube-apiserver built by the project into bin/ (see
// hack/build-tools.sh), started on 127.0.0.1 by controller-runtime's envtest,
// with the project's CRDs (config/crd) installed. One control plane serves a
// whole test package (start it from TestMain with Main). Managers run as the
// ServiceAccount of config/default, with exactly its RBAC (see rbac.go).
package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RepoRoot returns the directory holding the project's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack", "build-tools.sh")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("project root (go.mod + hack/build-tools.sh) not found above the working directory")
		}
		dir = parent
	}
}

// Environment returns an envtest environment using the project's binaries
// (KUBEBUILDER_ASSETS, else <root>/bin) and CRDs (<root>/config/crd), and
// the standard-channel Gateway API CRDs of the pinned module.
func Environment() (*envtest.Environment, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make tools` (hack/build-tools.sh) first, or set KUBEBUILDER_ASSETS", b, assets)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ErrorIfCRDPathMissing:    false,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if crds := filepath.Join(root, "config", "crd"); dirExists(crds) {
		env.CRDDirectoryPaths = []string{crds}
		env.ErrorIfCRDPathMissing = true
	}
	// The Gateway API, as clusters moving off Ingress serve it.
	gateway, err := GatewayAPICRDs()
	if err != nil {
		return nil, err
	}
	env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, gateway)
	return env, nil
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Main starts the control plane, installs the manager's Namespace,
// ServiceAccount and RBAC from config/default, runs the package's tests and
// stops the control plane. Call it from TestMain:
//
//	func TestMain(m *testing.M) { framework.Main(m) }
//
// The tests reach the control plane through AdminConfig.
func Main(m *testing.M) {
	var cfg *rest.Config
	os.Exit(run(m, &cfg, nil))
}

// AdminConfig returns a copy of the control plane's admin (system:masters)
// config, once Main (or Run, RunWith) started it.
func AdminConfig() *rest.Config { return rest.CopyConfig(adminConfig) }

// Run is Main without the exit, storing the admin config in *cfg: it
// returns the exit code, for a TestMain that has more to clean up
// afterwards.
func Run(m *testing.M, cfg **rest.Config) int {
	return run(m, cfg, nil)
}

// RunWith is Run with setup called once the control plane is up, before
// the tests (with the admin config); the cleanup it returns runs after the
// tests, before the control plane stops. For what the package's tests
// share besides the control plane, such as an ingress controller.
func RunWith(m *testing.M, cfg **rest.Config, setup func(*rest.Config) (cleanup func(), err error)) int {
	return run(m, cfg, setup)
}

func run(m *testing.M, cfg **rest.Config, setup func(*rest.Config) (func(), error)) int {
	env, err := Environment()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	// As in hardened clusters: setting blockOwnerDeletion in an owner
	// reference needs update on the owner's finalizers (config/rbac grants
	// services/finalizers for it; without this plugin nothing would check).
	env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	c, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: starting control plane:", err)
		_ = env.Stop()
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: stopping control plane:", err)
		}
	}()
	// The manager runs as config/default's ServiceAccount (StartManager):
	// install its Namespace, ServiceAccount and RBAC.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := InstallManagerRBAC(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "integration: installing the manager's RBAC from config/default:", err)
		return 1
	}
	adminConfig = rest.CopyConfig(c)
	*cfg = c
	if setup != nil {
		cleanup, err := setup(rest.CopyConfig(c))
		if err != nil {
			fmt.Fprintln(os.Stderr, "integration: setting up the test package:", err)
			return 1
		}
		if cleanup != nil {
			defer cleanup()
		}
	}
	return m.Run()
}

// CreateNamespace creates a namespace with a generated name for one test.
// (A test control plane runs no namespace controller, so it is not deleted.)
func CreateNamespace(t testing.TB, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}

// Config returns a copy of cfg with high client-side limits, as the manager uses.
func Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS = 1000
	c.Burst = 2000
	return c
}
