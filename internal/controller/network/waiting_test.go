package network_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// A Network that waits for what only its namespace's owners or the cloud's
// operator can give (the project's quota, a pool's room, the network it
// imports, ports removed from the network it deletes) is retried with
// backoff, but its syncs are not the manager's errors: in a quiet cluster
// they are the only syncs, and counted as errors they would make every
// controller_reconcile_total of the network controller an error, firing
// ControllerManagerReconcileErrors for as long as one tenant's quota is
// used up. They count as result "waiting"; the backend failing still
// counts as an error.
func TestWaitingIsNoSyncError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		network *samplecrdv1.Network
		fault   func(memory.Op) error // for every call
		deleted bool                  // the fault is for the Network's deletion
		error   bool                  // its syncs are errors
	}{
		{name: "the project's quota used up", network: newNetwork("quota", "u-quota", "10.61.0.0/24", "10.61.0.1"),
			fault: onCreate(network.Transient("create network", samplecrdv1.ReasonQuotaExceeded, errors.New("409 OverQuota")))},
		{name: "the subnet pool exhausted", network: newNetwork("pool", "u-pool", "10.62.0.0/24", "10.62.0.1"),
			fault: onCreate(network.Transient("create subnet", samplecrdv1.ReasonSubnetPoolExhausted, errors.New("SubnetAllocationError")))},
		{name: "the network to import not there yet", network: importing("import", "u-import", "0d3a0c1e-0000-4000-8000-00000000abcd")},
		{name: "ports left on the network being deleted", network: newNetwork("inuse", "u-inuse", "10.63.0.0/24", "10.63.0.1"), deleted: true,
			fault: func(op memory.Op) error {
				if op != memory.OpDelete {
					return nil
				}
				return network.Transient("delete network", samplecrdv1.ReasonBackendInUse, errors.New("409 NetworkInUse"))
			}},
		{name: "the backend failing (a 500): an error", network: newNetwork("failing", "u-failing", "10.64.0.0/24", "10.64.0.1"), error: true,
			fault: onCreate(network.Transient("create network", samplecrdv1.ReasonBackendUnavailable, errors.New("500 Internal Server Error")))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			mem := memory.New()
			// Before the controller starts: set after, the create (or the
			// delete, right after markDeleted) could come first and succeed.
			if tc.fault != nil {
				mem.SetFault(func(_ context.Context, op memory.Op, _ types.UID) error { return tc.fault(op) })
			}
			client, _ := versionedClient(tc.network)
			done := runController(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(1000), mem)
			defer func() { cancel(); <-done }()
			if tc.deleted {
				waitForReady(ctx, t, client, tc.network.Name, func(*metav1.Condition) bool { return true })
				markDeleted(ctx, t, client, "ns", tc.network.Name)
			}
			syncs0, _ := metricWith(t, "controller_reconcile_total", map[string]string{"controller": network.Name})
			errors0, _ := metricWith(t, "controller_reconcile_total", map[string]string{"controller": network.Name, "result": "error"})
			// The backoff starts at 5ms: a few retries come in well under a second.
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				syncs, _ := metricWith(t, "controller_reconcile_total", map[string]string{"controller": network.Name})
				return syncs-syncs0 >= 4, nil
			}); err != nil {
				t.Fatal("the Network was not retried")
			}
			syncs, _ := metricWith(t, "controller_reconcile_total", map[string]string{"controller": network.Name})
			errs, _ := metricWith(t, "controller_reconcile_total", map[string]string{"controller": network.Name, "result": "error"})
			if got := errs - errors0; tc.error != (got > 0) {
				t.Errorf("%v of %v syncs counted as errors, want errors: %v", got, syncs-syncs0, tc.error)
			}
		})
	}
}

func onCreate(err error) func(memory.Op) error {
	return func(op memory.Op) error {
		if op == memory.OpCreate {
			return err
		}
		return nil
	}
}

func importing(name, uid, id string) *samplecrdv1.Network {
	n := newNetwork(name, uid, "", "")
	n.Spec = samplecrdv1.NetworkSpec{Import: &samplecrdv1.NetworkImport{NetworkID: id}}
	return n
}
