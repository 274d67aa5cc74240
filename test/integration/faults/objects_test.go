package faults

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// annotatedService returns Service i of a test: annotated ingress/http,
// every third one with a host of its own.
func annotatedService(ns string, i int) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc-%04d", i),
			Annotations: map[string]string{"ingress/http": "true"}},
		// Headless: the test API server has 254 cluster IPs.
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	if i%3 == 0 {
		svc.Annotations["ingress/host"] = fmt.Sprintf("svc-%d.example.com", i)
	}
	return svc
}

// testNetwork returns Network i of a test: 10.<i/256>.<i%256>.0/24.
func testNetwork(ns string, i int) *samplecrdv1.Network {
	return &samplecrdv1.Network{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("net-%03d", i)},
		Spec: samplecrdv1.NetworkSpec{
			CIDR:    fmt.Sprintf("10.%d.%d.0/24", i/256, i%256),
			Gateway: fmt.Sprintf("10.%d.%d.1", i/256, i%256),
		},
	}
}

// createAll creates services annotated Services and networks Networks in ns
// with 16 parallel clients, retrying every failure (the API server may be
// down meanwhile) until each exists or ctx ends. It returns at once; the
// channel gets the outcome.
func createAll(ctx context.Context, kube kubernetes.Interface, sample versioned.Interface, ns string, services, networks int) <-chan error {
	var jobs []func(context.Context) error
	for i := range max(services, networks) {
		if i < networks {
			n := testNetwork(ns, i)
			jobs = append(jobs, func(ctx context.Context) error {
				_, err := sample.SamplecrdV1().Networks(ns).Create(ctx, n, metav1.CreateOptions{})
				return err
			})
		}
		if i < services {
			svc := annotatedService(ns, i)
			jobs = append(jobs, func(ctx context.Context) error {
				_, err := kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
				return err
			})
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- framework.Parallel(ctx, 16, len(jobs), func(ctx context.Context, i int) error { return retry(ctx, jobs[i]) })
	}()
	return done
}

// retry runs a create until it succeeds or finds the object there (a
// previous attempt that succeeded but whose answer was lost), or until ctx
// ends.
func retry(ctx context.Context, create func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = create(ctx)
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err != nil {
		return fmt.Errorf("%w (last error: %w)", err, last)
	}
	return nil
}
