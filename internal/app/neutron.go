package app

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"

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

// validateNeutronManagedBy checks v by the Neutron backend's own rules (the
// tag it makes of v): given a client, the backend checks them and connects
// to nothing.
func validateNeutronManagedBy(v string) error {
	_, err := neutron.New(context.Background(), neutron.Options{ManagedBy: v, ServiceClient: &gophercloud.ServiceClient{}})
	return err
}
