package controller_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// TestInformersAreSharedScopedAndTransformed: one informer per kind however
// often it is asked for, listing only the configured namespace, each object
// through the transform, all started by Start and stopped by Shutdown.
func TestInformersAreSharedScopedAndTransformed(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "s"}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "i"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}},
	)
	inf := controller.NewInformers(controller.InformersConfig{
		Core: client.CoreV1(), Networking: client.NetworkingV1(), Client: client,
		Namespace: "a",
		Transform: func(obj any) (any, error) {
			obj.(metav1.Object).SetLabels(map[string]string{"transformed": "yes"})
			return obj, nil
		},
	})
	if inf.Services().Informer() != inf.Services().Informer() {
		t.Fatal("Services() returned two informers")
	}
	synced := []cache.InformerSynced{inf.Services().Informer().HasSynced, inf.Ingresses().Informer().HasSynced, inf.Pods().Informer().HasSynced}
	stop := make(chan struct{})
	inf.Start(stop)
	inf.Start(stop) // a second Start starts nothing twice
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("the informers did not sync")
	}

	svcs, err := inf.Services().Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 1 || svcs[0].Namespace != "a" {
		t.Errorf("Services listed %v, want only a/s", svcs)
	}
	ing, err := inf.Ingresses().Lister().Ingresses("a").Get("i")
	if err != nil {
		t.Fatal(err)
	}
	pod, err := inf.Pods().Lister().Pods("a").Get("p")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []metav1.Object{svcs[0], ing, pod} {
		if o.GetLabels()["transformed"] != "yes" {
			t.Errorf("%s/%s was cached without the transform", o.GetNamespace(), o.GetName())
		}
	}

	close(stop)
	inf.Shutdown()
	// Informers asked for after Shutdown are never started.
	inf.Start(make(chan struct{}))
}
