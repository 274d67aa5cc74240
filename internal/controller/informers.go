package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	networkingv1listers "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Informers is the shared informers of the built-in kinds the controllers
// read, what client-go's informers.SharedInformerFactory does for every
// kind: each informer is created on first use, once, however many
// controllers read it, and Start runs those not running yet.
//
// It knows only the kinds the controllers read, on purpose: the generated
// factory and kubernetes.Interface name every API group of client-go in
// their method sets, and the linker then keeps the type descriptors of every
// group's typed clients and apply configurations, which the process maps in
// full at start-up.
type Informers struct {
	core       corev1client.CoreV1Interface
	networking networkingv1client.NetworkingV1Interface
	namespace  string
	resync     time.Duration
	transform  cache.TransformFunc
	// client is handed to the reflector, which asks it whether it supports
	// watch-list semantics (a fake clientset does not).
	client any

	mu           sync.Mutex
	informers    map[string]cache.SharedIndexInformer // by resource
	started      map[string]bool
	wg           sync.WaitGroup
	shuttingDown bool
}

// InformersConfig is what NewInformers builds the informers from.
type InformersConfig struct {
	// Core and Networking are the typed clients of core/v1 and
	// networking.k8s.io/v1.
	Core       corev1client.CoreV1Interface
	Networking networkingv1client.NetworkingV1Interface
	// Namespace is the watch scope ("" means all namespaces).
	Namespace string
	// ResyncPeriod is the informers' resync period (0 disables resync).
	ResyncPeriod time.Duration
	// Transform, when set, is every informer's transform.
	Transform cache.TransformFunc
	// Client, when set, is asked by the reflectors whether it supports
	// watch-list semantics; tests pass their fake clientset.
	Client any
}

// NewInformers returns the shared informers of cfg; none exists yet.
func NewInformers(cfg InformersConfig) *Informers {
	return &Informers{
		core: cfg.Core, networking: cfg.Networking, namespace: cfg.Namespace, resync: cfg.ResyncPeriod,
		transform: cfg.Transform, client: cfg.Client,
		informers: map[string]cache.SharedIndexInformer{}, started: map[string]bool{},
	}
}

// Shared is one shared informer and the lister over its cache.
type Shared[L any] struct {
	informer cache.SharedIndexInformer
	lister   L
}

// Informer is the shared informer.
func (s Shared[L]) Informer() cache.SharedIndexInformer { return s.informer }

// Lister lists from the informer's cache.
func (s Shared[L]) Lister() L { return s.lister }

// Services is the shared Service informer.
func (f *Informers) Services() Shared[corev1listers.ServiceLister] {
	i := f.informerFor("services", func() cache.SharedIndexInformer {
		return NewSharedInformer[*corev1.ServiceList](f.core.Services(f.namespace), &corev1.Service{}, f.resync, f.transform, f.client)
	})
	return Shared[corev1listers.ServiceLister]{i, corev1listers.NewServiceLister(i.GetIndexer())}
}

// Pods is the shared Pod informer.
func (f *Informers) Pods() Shared[corev1listers.PodLister] {
	i := f.informerFor("pods", func() cache.SharedIndexInformer {
		return NewSharedInformer[*corev1.PodList](f.core.Pods(f.namespace), &corev1.Pod{}, f.resync, f.transform, f.client)
	})
	return Shared[corev1listers.PodLister]{i, corev1listers.NewPodLister(i.GetIndexer())}
}

// Ingresses is the shared Ingress informer.
func (f *Informers) Ingresses() Shared[networkingv1listers.IngressLister] {
	i := f.informerFor("ingresses.networking.k8s.io", func() cache.SharedIndexInformer {
		return NewSharedInformer[*networkingv1.IngressList](f.networking.Ingresses(f.namespace), &networkingv1.Ingress{}, f.resync, f.transform, f.client)
	})
	return Shared[networkingv1listers.IngressLister]{i, networkingv1listers.NewIngressLister(i.GetIndexer())}
}

// informerFor returns the informer of resource, made by newInformer on
// first use.
func (f *Informers) informerFor(resource string, newInformer func() cache.SharedIndexInformer) cache.SharedIndexInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i, ok := f.informers[resource]; ok {
		return i
	}
	i := newInformer()
	f.informers[resource] = i
	return i
}

// ListWatcher is the list and watch of one kind, as a generated typed
// client scoped to a namespace has them; L is the kind's list type.
type ListWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewSharedInformer returns an informer of obj on client, built the way
// client-go's generated informers are: a namespace index, the resync
// period, transform (when not nil), and watch-list semantics unless
// semantics (the clientset, say a fake one) reports it has none.
func NewSharedInformer[L runtime.Object](client ListWatcher[L], obj runtime.Object, resync time.Duration, transform cache.TransformFunc, semantics any) cache.SharedIndexInformer {
	i := cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.List(ctx, o)
			},
			WatchFuncWithContext: client.Watch,
		}, semantics),
		obj,
		cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		})
	if transform != nil {
		if err := i.SetTransform(transform); err != nil {
			// Only an informer already started refuses one; this one is new.
			klog.Background().Error(err, "Setting the informer transform", "type", fmt.Sprintf("%T", obj))
		}
	}
	return i
}

// Start runs every informer created so far and not running yet, until stop
// is closed.
func (f *Informers) Start(stop <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shuttingDown {
		return
	}
	for resource, i := range f.informers {
		if !f.started[resource] {
			f.wg.Go(func() { i.Run(stop) })
			f.started[resource] = true
		}
	}
}

// Shutdown marks the informers shut down (Start then starts nothing) and
// waits for the running ones to return; close Start's stop channel first.
func (f *Informers) Shutdown() {
	f.mu.Lock()
	f.shuttingDown = true
	f.mu.Unlock()
	f.wg.Wait()
}
