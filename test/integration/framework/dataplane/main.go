package dataplane

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// MainWithTraefik is the TestMain of a package whose tests send requests
// through Traefik: in a private network namespace (Main), it starts the
// control plane (framework.RunWith) and one Traefik with o for every test
// of the package, storing them in *cfg and *tr, and exits with the tests'
// code. Without a network namespace *tr stays nil and every test skips (or
// fails under CI) in Require.
func MainWithTraefik(m *testing.M, name string, cfg **rest.Config, tr **Traefik, o TraefikOptions) {
	os.Exit(Main(func() int {
		return framework.RunWith(m, cfg, func(c *rest.Config) (func(), error) {
			fmt.Fprintf(os.Stderr, "%s: %s\n", name, Isolation())
			if !Available() {
				return nil, nil
			}
			started, err := StartTraefik(c, o)
			if err != nil {
				return nil, err
			}
			*tr = started
			return started.Stop, nil
		})
	}))
}
