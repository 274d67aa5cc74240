package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// TestUpgradeByInstallYAML applies the next release's install.yaml over
// the installed one, as docs/install.md says: both replicas roll to the new
// image, the new leader says its version, every annotated Service keeps its
// Ingress, and none is deleted meanwhile (a watch sees every deletion). The
// installed release comes back when the test ends.
func TestUpgradeByInstallYAML(t *testing.T) {
	ns := createNamespace(t)
	annotated := map[string]string{ingressmanager.AnnotationHTTP: "nginx"}
	services := []*corev1.Service{createSeedService(t, ns, annotated)}
	for i := range 5 {
		services = append(services, createSeedService(t, ns, annotated, fmt.Sprintf("web-%02d", i)))
	}
	for _, svc := range services {
		framework.WaitIngress(t, client, ns, svc.Name, "the Ingress of Service "+svc.Name, func(ing *networkingv1.Ingress) error {
			return framework.ControlledBy(ing, svc.UID)
		})
	}

	deletions := watchIngressDeletions(t, ns)
	t.Cleanup(func() {
		if err := applyInstallYAML(installed); err != nil {
			t.Errorf("restoring %s: %v", installed.version, err)
		} else if err := waitRollout(context.Background()); err != nil {
			t.Errorf("restoring %s: %v", installed.version, err)
		}
	})
	if err := applyInstallYAML(upgrade); err != nil {
		t.Fatal(err)
	}
	if err := waitRollout(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkReplicas(t, 2, upgrade.image())
	waitLogLine(t, leaderPod(t), "Starting controller-manager", upgrade.version)

	// A new annotated Service is served by the new leader, and the old
	// ones kept their Ingress throughout.
	fresh := createSeedService(t, ns, annotated, "after-upgrade")
	framework.WaitIngress(t, client, ns, fresh.Name, "the Ingress of a Service annotated after the upgrade", func(ing *networkingv1.Ingress) error {
		return framework.ControlledBy(ing, fresh.UID)
	})
	if lost := deletions(); len(lost) > 0 {
		t.Fatalf("during the upgrade, Ingresses were deleted or the watch failed: %s", strings.Join(lost, "; "))
	}
}
