// Integration tests of the pod-logger controller against a real
// kube-apiserver + etcd.
package podlogger

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func newPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "demo"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// waitLog waits until the manager logged a message containing msg, with
// every key/value in kv (as rendered by the text logger), n times in all.
func waitLog(t *testing.T, m *framework.Manager, n int, msg string, kv ...string) {
	t.Helper()
	framework.Eventually(t, framework.Timeout, fmt.Sprintf("%d log line(s) %q with %q", n, msg, kv), func(context.Context) (bool, error) {
		return countLines(m, msg, kv...) >= n, nil
	})
}

func countLines(m *framework.Manager, msg string, kv ...string) int {
	return framework.CountLines(m.Logs(), append([]string{msg}, kv...)...)
}

func TestPodLifecycleIsLogged(t *testing.T) {
	client, ns := framework.Setup(t)
	o := framework.ControllerOptions(ns, "pod-logger")
	m := framework.StartManager(t, framework.AdminConfig(), o)
	ctx := context.Background()

	// Add.
	pod, err := client.CoreV1().Pods(ns).Create(ctx, newPod(ns, "web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, m, 1, "Sync/Add/Update for Pod web", `event="added"`, fmt.Sprintf(`pod="%s/web"`, ns))

	// Update: a label change (metadata only).
	pod.Labels["tier"] = "frontend"
	if pod, err = client.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, m, 1, "Sync/Add/Update for Pod web", `event="updated"`, `changes="metadata or spec only"`)

	// Update: phase, readiness and restarts change (as a kubelet would report).
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "registry.k8s.io/pause:3.10", RestartCount: 2}}
	if pod, err = client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, m, 1, "Sync/Add/Update for Pod web", `event="updated"`, `phase: \"Pending\" -> \"Running\"`, "ready: false -> true", "restarts: 0 -> 2")

	// Delete.
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, m, 1, fmt.Sprintf("Pod %s/web does not exist anymore", ns))

	// Recreated under the same name: a new UID, reported as such.
	if _, err := client.CoreV1().Pods(ns).Create(ctx, newPod(ns, "web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, m, 2, "Sync/Add/Update for Pod web", `event="added"`)
}

func TestResyncLogsNothing(t *testing.T) {
	client, ns := framework.Setup(t)
	o := framework.ControllerOptions(ns, "pod-logger")
	o.ResyncPeriod = 200 * time.Millisecond
	m := framework.StartManager(t, framework.AdminConfig(), o)
	ctx := context.Background()

	if _, err := client.CoreV1().Pods(ns).Create(ctx, newPod(ns, "quiet"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, m, 1, "Sync/Add/Update for Pod quiet")
	// Let several resyncs of the Pod reach the controller.
	framework.Eventually(t, framework.Timeout, "three resyncs", func(context.Context) (bool, error) {
		return resyncsSeen(m) >= 3, nil
	})
	if n := countLines(m, "Sync/Add/Update for Pod quiet"); n != 1 {
		t.Errorf("the Pod was logged %d times; resyncs of an unchanged Pod must log nothing", n)
	}
}

// resyncsSeen counts the informer's resync replays the pod-logger received,
// from the shared handler's V(4) "resync" trace (see controller.Base.UnlessResync).
func resyncsSeen(m *framework.Manager) int {
	return m.CountLogs("Ignoring resync of unchanged object")
}
