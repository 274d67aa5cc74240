package e2e

import (
	"context"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// TestUpgradeByInstallYAML applies the next release's install.yaml over
// the installed one, as docs/install.md says, while a few hundred Services
// are being annotated: both replicas roll to the new image, the new leader
// says its version and serves a Service annotated afterwards, and no
// Ingress is lost, created twice, or written by the outgoing leader once
// the incoming one holds the Lease (the fault suite's outcome, from the
// audit log). The installed release comes back when the test ends.
func TestUpgradeByInstallYAML(t *testing.T) {
	w := newWorkload(t, 300)
	t.Cleanup(func() {
		if err := applyInstallYAML(installed); err != nil {
			t.Errorf("restoring %s: %v", installed.version, err)
		} else if err := waitRollout(context.Background()); err != nil {
			t.Errorf("restoring %s: %v", installed.version, err)
		}
	})
	annotating := w.annotate(0, 300, 100*time.Millisecond)
	w.waitAnnotated(20)
	if err := applyInstallYAML(upgrade); err != nil {
		t.Fatal(err)
	}
	if err := waitRollout(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkReplicas(t, 2, upgrade.image())
	waitLogLine(t, leaderPod(t), "Starting controller-manager", upgrade.version)
	if o := w.settle(annotating); len(o.handovers) == 0 {
		t.Errorf("the rolling update replaced the leader, but the Lease never changed hands")
	}

	ns := createNamespace(t)
	fresh := createSeedService(t, ns, map[string]string{ingressmanager.AnnotationHTTP: "nginx"}, "after-upgrade")
	framework.WaitIngress(t, client, ns, fresh.Name, "the Ingress of a Service annotated after the upgrade", func(ing *networkingv1.Ingress) error {
		return framework.ControlledBy(ing, fresh.UID)
	})
}
