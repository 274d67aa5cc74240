// Package faults holds the fault suite: the controllers against a real
// kube-apiserver + etcd while things break (the control plane restarting,
// a black-holed watch, the leader killed or partitioned, SIGTERM with work
// in flight, Neutron failing), plus a model-based test of the
// ingress-manager, and the shipped alerts read from a real Prometheus
// scraping the managers under those faults (alerts_test.go). Each test
// ends by checking, from live LISTs once things settled, that nothing was
// lost (see nothingLost), and logs its counts.
package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

var cfg *rest.Config

// binDir holds the controller-manager binary built for the tests that run
// it as a separate process.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	binDir = dir
	code := framework.Run(m, &cfg)
	stopPrometheus()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var build struct {
	once sync.Once
	path string
	err  error
}

// managerBinary builds cmd/controller-manager once (without the race
// detector: the child's speed matters, its races are the unit tests'
// business) and returns its path.
func managerBinary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		root, err := framework.RepoRoot()
		if err != nil {
			build.err = err
			return
		}
		path := filepath.Join(binDir, "controller-manager")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/controller-manager")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/controller-manager: %w\n%s", err, out)
			return
		}
		build.path = path
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}
