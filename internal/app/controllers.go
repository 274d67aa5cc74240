package app

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/internal/controller/podlogger"
)

// Descriptor describes one controller the manager can run.
type Descriptor struct {
	// Name is the controller's name in --controllers, --<name>-workers, logs,
	// metrics and the workqueue name.
	Name string
	// DefaultWorkers is the default of --<name>-workers.
	DefaultWorkers int
	// New builds the controller: it obtains the informers it reads from the
	// shared factories in cctx and registers its event handlers. It must not
	// start anything.
	New func(ctx context.Context, cctx *controller.Context, c *ManagerConfig) (controller.Interface, error)
}

// Controllers is the registry: every controller the manager knows, in start
// order. Registration is explicit, here and nowhere else.
func Controllers() []Descriptor {
	return []Descriptor{
		{
			Name: ingressmanager.Name,
			// Workers mostly wait on API round trips: enough of them keep a
			// cold start over thousands of Services bound by the API server,
			// not by us (throughput = workers / round trip, and a round trip
			// grows under load; docs/benchmarks.md has the measurements).
			DefaultWorkers: 64,
			New: func(ctx context.Context, cctx *controller.Context, c *ManagerConfig) (controller.Interface, error) {
				return ingressmanager.New(ctx, cctx, c.Ingress)
			},
		},
		{
			Name: network.Name,
			// Backend calls are slow (Neutron: tens of ms to seconds).
			DefaultWorkers: 8,
			New: func(ctx context.Context, cctx *controller.Context, c *ManagerConfig) (controller.Interface, error) {
				backend, err := c.Network.backend(ctx)
				if err != nil {
					return nil, err
				}
				return network.New(ctx, cctx, network.Options{Backend: backend, BackendName: c.Network.BackendName, GCInterval: c.Network.GCInterval,
					Credentials: c.Network.credentials(cctx)})
			},
		},
		{
			Name:           podlogger.Name,
			DefaultWorkers: 2,
			New: func(ctx context.Context, cctx *controller.Context, _ *ManagerConfig) (controller.Interface, error) {
				return podlogger.New(ctx, cctx)
			},
		},
	}
}

// ControllerNames returns the names of every registered controller, sorted.
func ControllerNames() []string {
	var names []string
	for _, d := range Controllers() {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	return names
}

// validateControllers checks a --controllers list: each entry is "*", a known
// name, or a known name prefixed with "-".
func validateControllers(list []string) error {
	if len(list) == 0 {
		return fmt.Errorf("--controllers: empty list; use '*' to enable every controller")
	}
	known := ControllerNames()
	var errs []error
	for _, item := range list {
		if item == "*" {
			continue
		}
		name := strings.TrimPrefix(item, "-")
		if name == "" || !slices.Contains(known, name) {
			errs = append(errs, fmt.Errorf("--controllers: unknown controller %q; known controllers: %s", item, strings.Join(known, ", ")))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// controllerEnabled applies kube-controller-manager's --controllers rules:
// "-name" disables name, "name" enables it, and "*" enables every controller
// not disabled explicitly. The first entry naming a controller wins. Same
// as k8s.io/controller-manager/app.IsControllerEnabled, whose package would
// link the etcd client and the apiserver routes into the binary for these
// few lines.
func controllerEnabled(name string, list []string) bool {
	hasStar := false
	for _, item := range list {
		switch item {
		case name:
			return true
		case "-" + name:
			return false
		case "*":
			hasStar = true
		}
	}
	return hasStar
}

// backend returns the backend of --network-backend (or the one set in
// Options.NetworkBackend).
func (c *NetworkConfig) backend(ctx context.Context) (network.Backend, error) {
	if c.Backend != nil {
		return c.Backend, nil
	}
	switch c.BackendName {
	case "memory":
		return memory.New(), nil
	case "neutron":
		return newNeutronBackend(ctx, c.NeutronManagedBy)
	}
	return nil, fmt.Errorf("--network-backend: unknown backend %q; use memory or neutron", c.BackendName)
}

// The Networks' own credentials (--network-credentials-from-secrets): the
// Secret a Network names, in its namespace, read by name. Not in the
// default role: the config/network-credentials Component (and the chart's
// network.credentialsFromSecrets) grant get on Secrets, nothing more.

// credentials returns the network controller's Credentials, nil unless
// --network-credentials-from-secrets. Both backends parse clouds.yaml the
// same way; the memory backend gives each distinct entry an in-memory
// backend of its own (a project of its own, in effect), without
// authenticating.
func (c *NetworkConfig) credentials(cctx *controller.Context) *network.Credentials {
	if !c.CredentialsFromSecrets {
		return nil
	}
	creds := &network.Credentials{
		GetSecret: func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
			return cctx.Core.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		},
		Parse: parseCloud,
		TTL:   c.CredentialsTTL,
	}
	switch c.BackendName {
	case "neutron":
		creds.NewBackend = newNeutronCloudBackend(c.NeutronManagedBy)
	default:
		creds.NewBackend = func(context.Context, network.CloudConfig) (network.Backend, error) { return memory.New(), nil }
	}
	return creds
}
