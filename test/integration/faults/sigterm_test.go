package faults

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// TestSIGTERMDrainsInFlightWork: SIGTERM while backend creates are in
// flight (every Neutron request takes 300ms): the manager stops taking
// work, lets the syncs in flight finish (backend network, subnet, tags and
// the Network's status), and exits 0 within --shutdown-timeout. A second
// manager then finishes the rest: nothing lost, nothing created twice.
func TestSIGTERMDrainsInFlightWork(t *testing.T) {
	t.Parallel()
	const shutdownTimeout = 30 * time.Second
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	sample := versioned.NewForConfigOrDie(framework.Config(cfg))
	ns := framework.CreateNamespace(t, kube)
	cloud := newCloud(t)
	cloud.SetLatency(300 * time.Millisecond)
	kubeconfig := framework.Kubeconfig(t, cfg)
	args := managerArgs(kubeconfig, ns, append(cloud.args(), "--shutdown-timeout="+shutdownTimeout.String(), "--network-workers=4")...)
	first := startProcess(t, "manager-1", cloud.Env(), args...)
	first.waitLog("Caches synced", time.Minute)

	// Twice as many Networks as workers: some syncs in flight, some queued.
	const networks = 8
	for i := range networks {
		if _, err := sample.SamplecrdV1().Networks(ns).Create(ctx, testNetwork(ns, i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, neutronSettle, "a backend create in flight", func(context.Context) (bool, error) {
		return cloud.Count("POST /v2.0/networks") >= 1, nil
	})
	first.Signal(syscall.SIGTERM)
	signalled := time.Now()
	code := first.Wait(shutdownTimeout + 10*time.Second)
	took := time.Since(signalled)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if took > shutdownTimeout {
		t.Errorf("exited %v after SIGTERM, more than --shutdown-timeout %v", took, shutdownTimeout)
	}
	if first.Count("Shutting down: waiting for in-flight work") == 0 || first.Count("Drain timeout passed") != 0 {
		t.Errorf("the manager did not drain its in-flight work within the timeout:\n%s", first.Logs())
	}

	// Every backend create that had started finished, status included,
	// before the process exited: nothing is half-done.
	started := cloud.Count("POST /v2.0/networks")
	nets, err := sample.SamplecrdV1().Networks(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	backend, _ := cloud.state()()
	ready := 0
	for _, n := range nets.Items {
		c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
		if c != nil && c.Status == metav1.ConditionTrue {
			ready++
		}
	}
	var halfDone []string
	for _, b := range backend {
		if b.UID == "" || b.Subnets != 1 {
			halfDone = append(halfDone, fmt.Sprintf("%+v", b))
		}
	}
	if len(halfDone) > 0 {
		t.Errorf("backend networks left half-done by the shutdown: %s", strings.Join(halfDone, ", "))
	}
	if len(cloud.CreatedNetworks()) != started || ready != started || started == 0 {
		t.Errorf("%d backend creates started before the exit, %d completed, %d Networks Ready; want all started ones completed and Ready",
			started, len(cloud.CreatedNetworks()), ready)
	}
	t.Logf("SIGTERM with %d backend creates in flight: exit code %d after %v; %d of %d Networks Ready at exit",
		started, code, took.Round(time.Millisecond), ready, networks)

	cloud.SetLatency(0)
	second := startProcess(t, "manager-2", cloud.Env(), args...)
	nothingLost(t, neutronSettle, settled{kube: kube, sample: sample, ns: ns, backend: cloud.state(),
		logs: []func() string{first.Logs, second.Logs}})
	_, creates := cloud.state()()
	most, total := maxCreates(creates)
	t.Logf("counts: %d Networks; restarts: 1 (SIGTERM); drained in %v; backend creates %d, at most %d per Network UID; synced by the second manager: %d",
		networks, took.Round(time.Millisecond), total, most, networks-ready)
}
