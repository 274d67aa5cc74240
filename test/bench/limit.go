package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// parallel runs do(i) for i in [0, n) on conc goroutines
// (framework.Parallel) and returns how long it took. The first error stops
// it.
func parallel(ctx context.Context, n, conc int, do func(ctx context.Context, i int) error) (time.Duration, error) {
	start := time.Now()
	err := framework.Parallel(ctx, conc, n, do)
	return time.Since(start), err
}

// measure runs do for n objects at concurrency conc and returns the rate
// and the control plane's CPU per object.
func (r *run) measure(ctx context.Context, n, conc int, do func(ctx context.Context, i int) error) (Rate, error) {
	before, err := r.counts(ctx)
	if err != nil {
		return Rate{}, err
	}
	took, err := parallel(ctx, n, conc, do)
	if err != nil {
		return Rate{}, err
	}
	after, err := r.counts(ctx)
	if err != nil {
		return Rate{}, err
	}
	return Rate{
		Concurrency: conc, Objects: n, Seconds: took.Seconds(), PerSecond: float64(n) / took.Seconds(),
		CPUms: 1000 * (after.controlPlaneCPU() - before.controlPlaneCPU()) / float64(n),
	}, nil
}

// benchService is one of the benchmark's Services, shaped like the
// my-nginx example of docs/ingress-manager.md, annotated for an Ingress when annotated is
// true. It is headless: the API server's cluster IP allocation slows down
// as tens of thousands of IPs are taken, which would only slow the harness
// down; ingress-manager reads no cluster IP.
func benchService(ns, name string, annotated bool) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{"app": name},
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
		},
	}
	if annotated {
		svc.Annotations = map[string]string{ingressmanager.AnnotationHTTP: "nginx"}
	}
	return svc
}

// desiredIngress is the Ingress ingress-manager writes for benchService
// (with a made-up owner UID).
func desiredIngress(b *ingressmanager.Builder, ns, name string) (*networkingv1.Ingress, error) {
	svc := benchService(ns, name, true)
	svc.UID = types.UID(uuid.NewUUID())
	return b.Parse(svc).Ingress()
}

// limit measures L: creates, updates and deletes of N Ingresses like the
// controller's at each concurrency, with a direct client.
func (r *run) limit(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Duration(len(r.cfg.Concurrencies)+1)*r.cfg.phaseTimeout())
	defer cancel()
	b, err := ingressmanager.NewBuilder(ingressmanager.Config{FieldManager: "bench"})
	if err != nil {
		return err
	}
	n := r.cfg.N
	// The Ingresses are watched meanwhile, as the independent watcher
	// watches the phases it times: both sides carry the same measuring
	// apparatus (a watch costs the API server an event per write, and the
	// harness the decoding).
	lw, err := newWatcher(r.client, limitNamespace)
	if err != nil {
		return err
	}
	defer lw.shutdown()
	if err := lw.start(ctx); err != nil {
		return err
	}
	ings := r.client.NetworkingV1().Ingresses(limitNamespace)
	lim := &r.res.Limit
	cpu0 := sampleCPU()
	defer func() { lim.OtherCPU = cpu0.otherShare(sampleCPU()) }()
	for _, conc := range r.cfg.Concurrencies {
		name := func(i int) string { return fmt.Sprintf("lim-c%d-%06d", conc, i) }
		created := make([]*networkingv1.Ingress, n)
		rt, err := r.measure(ctx, n, conc, func(ctx context.Context, i int) error {
			ing, err := desiredIngress(b, limitNamespace, name(i))
			if err != nil {
				return err
			}
			created[i], err = ings.Create(ctx, ing, metav1.CreateOptions{FieldManager: "bench"})
			return err
		})
		if err != nil {
			return fmt.Errorf("creating ingresses at concurrency %d: %w", conc, err)
		}
		lim.Creates = append(lim.Creates, rt)

		rt, err = r.measure(ctx, n, conc, func(ctx context.Context, i int) error {
			ing := created[i].DeepCopy()
			ing.Annotations = maps.Clone(ing.Annotations)
			if ing.Annotations == nil {
				ing.Annotations = map[string]string{}
			}
			ing.Annotations["bench/updated"] = "true"
			_, err := ings.Update(ctx, ing, metav1.UpdateOptions{FieldManager: "bench"})
			return err
		})
		if err != nil {
			return fmt.Errorf("updating ingresses at concurrency %d: %w", conc, err)
		}
		lim.Updates = append(lim.Updates, rt)

		rt, err = r.measure(ctx, n, conc, func(ctx context.Context, i int) error {
			return ings.Delete(ctx, name(i), metav1.DeleteOptions{})
		})
		if err != nil {
			return fmt.Errorf("deleting ingresses at concurrency %d: %w", conc, err)
		}
		lim.Deletes = append(lim.Deletes, rt)
		r.cfg.logf("limit at concurrency %d: %.0f creates/s, %.0f updates/s, %.0f deletes/s", conc,
			lim.Creates[len(lim.Creates)-1].PerSecond, lim.Updates[len(lim.Updates)-1].PerSecond, rt.PerSecond)
	}
	best := slices.MaxFunc(lim.Creates, func(a, b Rate) int { return cmpF(a.PerSecond, b.PerSecond) })
	lim.L = best.PerSecond
	r.createCPUms = best.CPUms
	lim.LUpdate = slices.MaxFunc(lim.Updates, func(a, b Rate) int { return cmpF(a.PerSecond, b.PerSecond) }).PerSecond
	lim.LDelete = slices.MaxFunc(lim.Deletes, func(a, b Rate) int { return cmpF(a.PerSecond, b.PerSecond) }).PerSecond
	r.l = lim.L

	// Server-side apply creates at the best concurrency: what creating by
	// apply would cost (ingress-manager creates with a plain create).
	conc := best.Concurrency
	rt, err := r.measure(ctx, n, conc, func(ctx context.Context, i int) error {
		ing, err := desiredIngress(b, limitNamespace, fmt.Sprintf("lim-apply-%06d", i))
		if err != nil {
			return err
		}
		ac, err := ingressmanager.ApplyConfiguration(ing)
		if err != nil {
			return err
		}
		_, err = ings.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "bench"})
		return err
	})
	if err != nil {
		return fmt.Errorf("applying ingresses at concurrency %d: %w", conc, err)
	}
	lim.Applies = append(lim.Applies, rt)
	lim.LApply = lim.Applies[0].PerSecond
	r.cfg.logf("L = %.0f creates/s (concurrency %d, control plane CPU %.2f ms/create); server-side apply creates: %.0f/s (%.2f ms/apply)",
		lim.L, conc, best.CPUms, lim.LApply, rt.CPUms)
	if err := ings.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the apply ingresses: %w", err)
	}
	return nil
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func createNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
