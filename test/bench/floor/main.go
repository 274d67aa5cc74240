// Command floor is the benchmark's informer floor: the least any
// informer-based controller does on a cold start, with none of a
// controller's own work. It starts client-go's shared informers on Services
// and Ingresses (protobuf, no client-side rate limit, as the manager's
// clients), waits for their caches, then 64 goroutines create the desired
// Ingress (ingress-manager's own Builder, the same object the manager
// creates) of every annotated Service that has none, and it waits for
// SIGTERM. No workqueue, no sync of what the creates bring back, no logs,
// no Events, no metrics, Go's default garbage collector target.
//
// `make bench` runs it in the peer phase beside the manager and its
// controller-runtime peer, on a fresh control plane of its own, so that the
// manager's cold/(N/L) can be read against the cold/(N/L) a controller
// could reach at best on the same machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// workers is the manager's default --workers for ingress-manager and the
// direct client's concurrency when the benchmark measures L.
const workers = 64

func main() {
	kubeconfig := flag.String("kubeconfig", "", "Path to the kubeconfig of the cluster.")
	namespace := flag.String("namespace", "", "Namespace of the Services (all when empty).")
	fieldManager := flag.String("field-manager", "controller-manager", "Field manager of the creates (the manager's default).")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace, *fieldManager); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace, fieldManager string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	builder, err := ingressmanager.NewBuilder(ingressmanager.Config{FieldManager: fieldManager})
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	services := factory.Core().V1().Services()
	ingresses := factory.Networking().V1().Ingresses()
	synced := []cache.DoneChecker{services.Informer().HasSyncedChecker(), ingresses.Informer().HasSyncedChecker()}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitFor(ctx, "caches to sync", synced...) {
		return ctx.Err()
	}

	list, err := services.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	todo := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range todo {
				svc := list[i]
				if !ingressmanager.Enabled(svc) {
					continue
				}
				if _, err := ingresses.Lister().Ingresses(svc.Namespace).Get(svc.Name); !apierrors.IsNotFound(err) {
					continue
				}
				desired, err := builder.Parse(svc).Ingress()
				if err == nil {
					_, err = client.NetworkingV1().Ingresses(svc.Namespace).Create(ctx, desired, metav1.CreateOptions{FieldManager: fieldManager})
				}
				if err != nil && ctx.Err() == nil {
					select {
					case errs <- fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err):
					default:
					}
				}
			}
		})
	}
	for i := range list {
		todo <- i
	}
	close(todo)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	<-ctx.Done()
	return nil
}
