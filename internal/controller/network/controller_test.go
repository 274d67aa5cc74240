package network_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// A Network stored before the API server validated specs (or written around
// it) must not reach the backend: Ready=False InvalidSpec, a Warning Event,
// no backend write, no retry loop.
func TestInvalidStoredSpecNeverReachesTheBackend(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bad := &samplecrdv1.Network{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad", UID: "u1", Finalizers: []string{network.Finalizer}},
		Spec:       samplecrdv1.NetworkSpec{CIDR: "10.0.0.1/8", Gateway: "192.168.0.1"},
	}
	client := fake.NewClientset(bad)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(10)
	mem := memory.New()
	c, err := network.New(ctx, &controller.Context{
		SampleClient:          client,
		SampleInformerFactory: factory,
		EventRecorder:         func(string) record.EventRecorder { return recorder },
		FieldManager:          "test",
	}, network.Options{Backend: mem})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		t.Fatal("cache not synced")
	}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 1) }()

	ev := <-recorder.Events
	if want := "Warning InvalidSpec"; len(ev) < len(want) || ev[:len(want)] != want {
		t.Errorf("event = %q, want %s ...", ev, want)
	}
	var cond *metav1.Condition
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.SamplecrdV1().Networks("ns").Get(ctx, "bad", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond = meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == samplecrdv1.ReasonInvalidSpec, nil
	})
	if err != nil {
		t.Errorf("Ready = %+v, want False/InvalidSpec", cond)
	}
	cancel()
	<-done
	if s := mem.Stats(); s.Writes() != 0 || s.Gets != 0 {
		t.Errorf("backend saw %+v for an invalid spec, want nothing", s)
	}
}
