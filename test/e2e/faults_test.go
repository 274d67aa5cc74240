package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// leaseDuration is the manager's default --leader-elect-lease-duration,
// which config/default keeps: how long a standby waits for a Lease its
// holder stopped renewing without releasing it.
const leaseDuration = 15 * time.Second

// The fault tests below each leave the Deployment rolled out again (two
// Ready replicas), as the next test expects, also when they fail.

// TestFaultLeaderPodDeleted: the leader Pod is deleted (the kubelet sends
// SIGTERM, the manager drains and releases the Lease); the other replica
// takes the Lease at once, not after the lease duration, and Services
// annotated meanwhile get their Ingresses.
func TestFaultLeaderPodDeleted(t *testing.T) {
	w := newWorkload(t, 150)
	t.Cleanup(func() { restoreRollout(t) })
	leader := w.markHolder
	annotating := w.annotate(0, 150, 40*time.Millisecond)
	w.waitAnnotated(30)
	deleted := time.Now()
	if err := client.CoreV1().Pods(managerNamespace).Delete(context.Background(), leader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	o := w.settle(annotating)
	h, ok := o.takeover(deleted, func(h handover) bool { return h.to != "" && h.to != leader })
	if !ok {
		t.Fatalf("no other replica took the Lease after leader %s was deleted", leader)
	}
	t.Logf("handover: %s took the Lease %.2fs after leader %s was deleted", h.to, h.at.Sub(deleted).Seconds(), leader)
	if h.at.Sub(deleted) >= leaseDuration {
		t.Errorf("the handover took %v, not less than the lease duration (%v): the deleted leader did not release the Lease", h.at.Sub(deleted), leaseDuration)
	}
}

// TestFaultDrain: `kubectl drain` of the node evicts one replica; its
// replacement cannot be scheduled (the node is cordoned), so with one
// replica not Ready, evicting the other is refused (429, the PDB), and the
// drain waits on the PDB until its timeout, as a user would see it. Then
// the test uncordons, the replacement runs, and nothing was lost.
func TestFaultDrain(t *testing.T) {
	ctx := context.Background()
	w := newWorkload(t, 100)
	annotating := w.annotate(0, 100, 100*time.Millisecond)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		uncordon(t)
		restoreRollout(t)
	})
	drainCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	drain := exec.CommandContext(drainCtx, filepath.Join(root, "bin", "kubectl"), "--kubeconfig", testNode.Kubeconfig(),
		"drain", testNode.Name, "--pod-selector", managerSelector, "--ignore-daemonsets", "--timeout=40s")
	var out bytes.Buffer
	drain.Stdout, drain.Stderr = &out, &out
	if err := drain.Start(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- drain.Wait() }()

	var ready corev1.Pod
	framework.Eventually(t, timeout, "one replica evicted, its replacement Pending on the cordoned node, the other Ready", func(ctx context.Context) (bool, error) {
		pods, err := managerPods(ctx)
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return podReady(&p) })
		pending := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodPending })
		if len(pods) != 2 || i < 0 || pending < 0 {
			return false, fmt.Errorf("%s", describePods(pods))
		}
		ready = pods[i]
		return true, nil
	})
	err = client.PolicyV1().Evictions(managerNamespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: ready.Name, Namespace: managerNamespace},
	})
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "disruption budget") {
		t.Fatalf("evicting the only Ready replica %s: got %v, want 429 TooManyRequests for the PodDisruptionBudget", ready.Name, err)
	}
	t.Logf("evicting the only Ready replica %s: %v", ready.Name, err)

	err = <-drained
	t.Logf("kubectl drain: %v\n%s", err, out.String())
	if err == nil {
		t.Fatalf("kubectl drain finished, want it to wait on the PDB until its timeout")
	}
	if !strings.Contains(out.String(), "Cannot evict pod as it would violate the pod's disruption budget") {
		t.Fatalf("kubectl drain did not report the PDB: %s", out.String())
	}
	uncordon(t)
	restoreRollout(t)
	w.settle(annotating)
}

// uncordon makes the node schedulable again.
func uncordon(t *testing.T) {
	t.Helper()
	patch := []byte(`{"spec":{"unschedulable":false}}`)
	if _, err := client.CoreV1().Nodes().Patch(context.Background(), testNode.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("uncordoning node %s: %v", testNode.Name, err)
	}
}

// waitAnnotated waits until n Services are annotated.
func (w *workload) waitAnnotated(n int) {
	w.t.Helper()
	framework.EventuallyEvery(w.t, 10*time.Millisecond, timeout, fmt.Sprintf("%d Services annotated", n), func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.annotated) >= n, nil
	})
}

// takeover returns the first change of the Lease's holder after t that
// matches.
func (o outcome) takeover(t time.Time, match func(handover) bool) (handover, bool) {
	for _, h := range o.handovers {
		if h.at.After(t) && match(h) {
			return h, true
		}
	}
	return handover{}, false
}

// jsonPatch returns a JSON patch of one operation.
func jsonPatch(op, path string, value any) []byte {
	b, err := json.Marshal([]map[string]any{{"op": op, "path": path, "value": value}})
	if err != nil {
		panic(err) // only values json can encode are passed
	}
	return b
}

// containerID returns the runtime's ID of the manager container of p and
// its restart count.
func containerID(t *testing.T, p *corev1.Pod) (string, int32) {
	t.Helper()
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "manager" {
			_, id, ok := strings.Cut(c.ContainerID, "://")
			if !ok {
				t.Fatalf("pod %s: container ID %q", p.Name, c.ContainerID)
			}
			return id, c.RestartCount
		}
	}
	t.Fatalf("pod %s has no manager container status: %s", p.Name, describePods([]corev1.Pod{*p}))
	return "", 0
}

// leaseIdentity returns the Lease's holder identity now.
func leaseIdentity(t *testing.T) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases(managerNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// restoreRollout waits until the Deployment is rolled out (two Ready
// replicas of its current template) and the replaced Pods are gone, so
// that the next test starts from a quiet state.
func restoreRollout(t *testing.T) {
	t.Helper()
	if err := waitRollout(context.Background()); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, rolloutTimeout, "the replaced manager Pods to terminate", func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(managerNamespace).List(ctx, metav1.ListOptions{LabelSelector: managerSelector})
		if err != nil {
			return false, err
		}
		if len(list.Items) != 2 {
			return false, fmt.Errorf("%d Pods: %s", len(list.Items), describePods(list.Items))
		}
		return true, nil
	})
}
