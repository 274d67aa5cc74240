package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// CreateService creates svc in its namespace and returns it as stored.
func CreateService(t testing.TB, client kubernetes.Interface, svc *corev1.Service) *corev1.Service {
	t.Helper()
	out, err := client.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Service %s: %v", svc.Name, err)
	}
	return out
}

// SetAppProtocol sets (protocol nil: removes) the appProtocol of the first
// port of Service ns/name. A data plane may refuse to route to a port whose
// protocol it cannot speak: Traefik's Gateway provider answers 500 and
// reports the route's references unresolved (ResolvedRefs=False,
// UnsupportedProtocol) for anything but http, https, h2c, ws and wss,
// while its Ingress provider does not read appProtocol.
func SetAppProtocol(t testing.TB, client kubernetes.Interface, ns, name string, protocol *string) {
	t.Helper()
	op := map[string]any{"op": "remove", "path": "/spec/ports/0/appProtocol"}
	if protocol != nil {
		op = map[string]any{"op": "add", "path": "/spec/ports/0/appProtocol", "value": *protocol}
	}
	patch, err := json.Marshal([]map[string]any{op})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services(ns).Patch(context.Background(), name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("setting the appProtocol of Service %s/%s: %v", ns, name, err)
	}
}

// ControlledBy returns nil when obj's controller is the Service of uid
// with blockOwnerDeletion set (the garbage collector's foreground deletion
// needs it), else what is wrong.
func ControlledBy(obj metav1.Object, uid types.UID) error {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Service" || ref.UID != uid {
		return fmt.Errorf("%s: want controller Service (uid %s), ownerReferences: %+v", obj.GetName(), uid, obj.GetOwnerReferences())
	}
	if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		return fmt.Errorf("%s: the ownerReference to Service %s does not block its deletion: %+v", obj.GetName(), ref.Name, *ref)
	}
	return nil
}

// Syncs counts the syncs of key ns/name the manager's controller logged so far.
func (m *Manager) Syncs(controller, ns, name string) int {
	return CountLines(m.Logs(), "INFO Synced ", fmt.Sprintf(`key="%s/%s"`, ns, name), fmt.Sprintf(`controller=%q`, controller))
}

// WaitSynced waits until the manager's controller synced key ns/name n
// times in all: what a test waits for before it checks that something did
// not happen.
func (m *Manager) WaitSynced(t testing.TB, controller, ns, name string, n int) {
	t.Helper()
	Eventually(t, Timeout, fmt.Sprintf("%d syncs of %s/%s by %s", n, ns, name, controller), func(context.Context) (bool, error) {
		return m.Syncs(controller, ns, name) >= n, nil
	})
}

// CountLines counts the lines of logs that contain every one of parts.
func CountLines(logs string, parts ...string) int {
	n := 0
	for line := range strings.SplitSeq(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}
