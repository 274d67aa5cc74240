package app

import (
	"context"
	"fmt"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
)

// newNeutronBackend connects to OpenStack Neutron the standard OpenStack
// way (OS_CLOUD + clouds.yaml, or the OS_* variables).
func newNeutronBackend(ctx context.Context, managedBy string) (network.Backend, error) {
	b, err := neutron.New(ctx, neutron.Options{ManagedBy: managedBy})
	if err != nil {
		return nil, fmt.Errorf("--network-backend=neutron: %w", err)
	}
	return b, nil
}

// newNeutronCloudBackend connects to one cloud entry of a Network's own
// credentials.
func newNeutronCloudBackend(managedBy string) func(context.Context, network.CloudConfig) (network.Backend, error) {
	return neutron.NewCloudBackend(neutron.Options{ManagedBy: managedBy})
}

// parseCloud reads a cloud entry of a Network's clouds.yaml.
func parseCloud(cloudsYAML []byte, cloudName string) (network.CloudConfig, error) {
	return neutron.ParseCloud(cloudsYAML, cloudName)
}

// validateNeutronManagedBy checks v by the Neutron backend's own rules (the
// tag it makes of v).
func validateNeutronManagedBy(v string) error { return neutron.ValidateManagedBy(v) }
