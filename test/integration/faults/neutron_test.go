package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// TestNeutronFaults runs the network controller on the Neutron backend
// while Neutron fails: 500s and 503s (on any request, on tagging a created
// network, on creating a subnet), 2s per request, and down (connections
// dropped) during deletes, when the finalizer must hold the Networks until
// Neutron is back, the backend as a whole found down. Everything converges
// with no orphans and no network created twice.
func TestNeutronFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	sample := versioned.NewForConfigOrDie(framework.Config(cfg))
	ns := framework.CreateNamespace(t, kube)
	cloud := newCloud(t)
	backend := cloud.backend()
	o := framework.ControllerOptions(ns, "network")
	o.NetworkBackend = backend
	m := framework.StartManager(t, cfg, o)
	check := settled{kube: kube, sample: sample, ns: ns, backend: cloud.state(), logs: []func() string{m.Logs}}
	create := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := sample.SamplecrdV1().Networks(ns).Create(ctx, testNetwork(ns, i), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// 500s: the first 20 Neutron requests, 3 taggings of a created network
	// (which leaves it untagged: the retry must adopt it, not create
	// another), 3 subnet creations.
	cloud.FailNext(20, 500)
	cloud.FailRoute("PUT /v2.0/networks/{id}/tags", 500, 3)
	cloud.FailRoute("POST /v2.0/subnets", 503, 3)
	create(0, 10)
	nothingLost(t, neutronSettle, check)
	errors500, adopted := m.CountLogs("Error syncing"), m.CountLogs("Adopting a Neutron network")
	if errors500 == 0 || adopted == 0 {
		t.Errorf("the 500s were not exercised: %d sync errors, %d untagged networks adopted", errors500, adopted)
	}

	// 2s per request: creates and a gateway update take tens of seconds.
	cloud.SetLatency(2 * time.Second)
	slowStart := time.Now()
	create(10, 12)
	framework.Eventually(t, neutronSettle, "update the gateway of net-000", func(ctx context.Context) (bool, error) {
		n, err := sample.SamplecrdV1().Networks(ns).Get(ctx, "net-000", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n.Spec.Gateway = "10.0.0.254"
		_, err = sample.SamplecrdV1().Networks(ns).Update(ctx, n, metav1.UpdateOptions{})
		return err == nil, err
	})
	nothingLost(t, neutronSettle, check)
	slow := time.Since(slowStart)
	cloud.SetLatency(0)

	// Down during deletes: the finalizer holds each Network, Ready=False
	// with the one backend-down message, until Neutron is back; the
	// Networks are not retried one by one meanwhile.
	retriedBefore := 0
	deleted := []string{"net-001", "net-002", "net-010", "net-011"}
	for _, name := range deleted {
		retriedBefore += framework.CountLines(m.Logs(), "Error syncing", fmt.Sprintf("key=%q", ns+"/"+name))
	}
	cloud.SetDown(true)
	downSince := m.CountLogs("The network backend is down")
	for _, name := range deleted {
		if err := sample.SamplecrdV1().Networks(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range deleted {
		framework.Eventually(t, neutronSettle, name+" held by its finalizer, waiting for the backend", func(ctx context.Context) (bool, error) {
			n, err := sample.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("%s deleted while Neutron is down: its backend network leaks", name)
			}
			if err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
			return c != nil && c.Reason == samplecrdv1.ReasonBackendUnavailable && strings.Contains(c.Message, "backend is down"), nil
		})
	}
	if n := m.CountLogs("The network backend is down") - downSince; n != 1 {
		t.Errorf("Neutron down: %d 'backend is down' log lines, want 1", n)
	}
	retried := -retriedBefore
	for _, name := range deleted {
		retried += framework.CountLines(m.Logs(), "Error syncing", fmt.Sprintf("key=%q", ns+"/"+name))
	}
	dropped := cloud.Counts()
	cloud.SetDown(false)
	recovered := time.Now()
	nothingLost(t, neutronSettle, check)
	for _, name := range deleted {
		if _, err := sample.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s not deleted after Neutron came back: %v", name, err)
		}
	}
	_, creates := cloud.state()()
	most, total := maxCreates(creates)
	t.Logf("counts: 12 Networks, 4 deleted; sync errors retried: %d (%d during the 500s, %d of the deleted while Neutron was down); untagged networks adopted: %d; "+
		"converged in %v at 2s per request; deletes completed %v after Neutron came back; Neutron requests: %d; backend creates %d, at most %d per Network UID",
		m.CountLogs("Error syncing"), errors500, retried, adopted, slow.Round(time.Millisecond), time.Since(recovered).Round(time.Millisecond),
		sum(dropped), total, most)
}

func sum(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}
