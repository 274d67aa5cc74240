package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// Names of the benchmark's Services (and of their Ingresses).
const (
	mainPrefix   = "svc-"    // the N Services of the cold/remove/re-add/recreate phases
	steadyPrefix = "steady-" // the pool the steady-state generator annotates
)

// watcher is the independent observer: its own informers on the benchmark
// namespace's Services and Ingresses, recording when each change became
// visible. It never reads the manager's logs or metrics.
type watcher struct {
	mu sync.Mutex
	// main Ingresses controlled by their Service: name -> UID.
	owned map[string]types.UID
	// mainAny counts main Ingresses, owned or not.
	mainAny map[string]bool
	// old is a snapshot of owned (recreate phase): an Ingress is fresh
	// when its UID differs from the snapshot's.
	old   map[string]types.UID
	fresh int
	// steady state: when each pool Service was first seen annotated and
	// its Ingress first seen.
	annotatedAt, ingressAt map[string]time.Time
	waiters                []*waiter
	factory                informers.SharedInformerFactory
	stop                   chan struct{}
}

type waiter struct {
	cond func(w *watcher) bool
	done chan struct{}
	at   time.Time
}

func newWatcher(client kubernetes.Interface, namespace string) (*watcher, error) {
	w := &watcher{
		owned:       map[string]types.UID{},
		mainAny:     map[string]bool{},
		annotatedAt: map[string]time.Time{},
		ingressAt:   map[string]time.Time{},
		stop:        make(chan struct{}),
	}
	w.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	if _, err := w.factory.Networking().V1().Ingresses().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.ingress(obj, false) },
		UpdateFunc: func(_, obj any) { w.ingress(obj, false) },
		DeleteFunc: func(obj any) { w.ingress(obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("watcher: %w", err)
	}
	if _, err := w.factory.Core().V1().Services().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.service,
		UpdateFunc: func(_, obj any) { w.service(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watcher: %w", err)
	}
	return w, nil
}

// start starts the informers and waits (bounded by ctx) for their caches.
func (w *watcher) start(ctx context.Context) error {
	w.factory.Start(w.stop)
	for typ, ok := range w.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("watcher: cache of %v did not sync: %w", typ, ctx.Err())
		}
	}
	return nil
}

func (w *watcher) shutdown() {
	close(w.stop)
	w.factory.Shutdown()
}

func (w *watcher) ingress(obj any, deleted bool) {
	now := time.Now()
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	owned := !deleted && isOwned(ing)
	switch {
	case strings.HasPrefix(ing.Name, mainPrefix):
		if prev, had := w.owned[ing.Name]; had && w.isFresh(ing.Name, prev) {
			w.fresh--
		}
		delete(w.owned, ing.Name)
		if owned {
			w.owned[ing.Name] = ing.UID
			if w.isFresh(ing.Name, ing.UID) {
				w.fresh++
			}
		}
		if deleted {
			delete(w.mainAny, ing.Name)
		} else {
			w.mainAny[ing.Name] = true
		}
	case strings.HasPrefix(ing.Name, steadyPrefix):
		if _, seen := w.ingressAt[ing.Name]; owned && !seen {
			w.ingressAt[ing.Name] = now
		}
	}
	w.check(now)
}

func (w *watcher) isFresh(name string, uid types.UID) bool {
	return w.old == nil || w.old[name] != uid
}

func isOwned(ing *networkingv1.Ingress) bool {
	ref := metav1.GetControllerOfNoCopy(ing)
	return ref != nil && ref.Kind == "Service" && ref.APIVersion == "v1" && ref.Name == ing.Name
}

func (w *watcher) service(obj any) {
	now := time.Now()
	svc, ok := obj.(*corev1.Service)
	if !ok || !strings.HasPrefix(svc.Name, steadyPrefix) || !ingressmanager.Enabled(svc) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.annotatedAt[svc.Name]; !seen {
		w.annotatedAt[svc.Name] = now
	}
	w.check(now)
}

// check fires the waiters whose condition holds (w.mu held).
func (w *watcher) check(now time.Time) {
	kept := w.waiters[:0]
	for _, wt := range w.waiters {
		if wt.cond(w) {
			wt.at = now
			close(wt.done)
			continue
		}
		kept = append(kept, wt)
	}
	w.waiters = kept
}

// waitFor waits until cond holds and returns when the event that made it
// hold was observed (now, if it holds already). The wait is bounded by ctx.
func (w *watcher) waitFor(ctx context.Context, what string, cond func(w *watcher) bool) (time.Time, error) {
	wt := &waiter{cond: cond, done: make(chan struct{})}
	w.mu.Lock()
	if cond(w) {
		w.mu.Unlock()
		return time.Now(), nil
	}
	w.waiters = append(w.waiters, wt)
	w.mu.Unlock()
	select {
	case <-wt.done:
		return wt.at, nil
	case <-ctx.Done():
		w.mu.Lock()
		state := w.stateLocked()
		w.mu.Unlock()
		return time.Time{}, fmt.Errorf("waiting for %s (%s): %w", what, state, context.Cause(ctx))
	}
}

// snapshot makes the current owned Ingresses the "old" ones: from now on
// only Ingresses with another UID count as fresh.
func (w *watcher) snapshot() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.old = make(map[string]types.UID, len(w.owned))
	for k, v := range w.owned {
		w.old[k] = v
	}
	w.fresh = 0
}

// counts returns the number of owned main Ingresses, of main Ingresses and
// of fresh (recreated) ones.
func (w *watcher) counts() (owned, any, fresh int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.owned), len(w.mainAny), w.fresh
}

func (w *watcher) stateLocked() string {
	return fmt.Sprintf("owned main Ingresses %d, main Ingresses %d, recreated %d, steady annotated %d, steady Ingresses %d",
		len(w.owned), len(w.mainAny), w.fresh, len(w.annotatedAt), len(w.ingressAt))
}

// latencies returns, for the given pool Services, the time from the Service
// seen annotated to its Ingress seen, and how many have no Ingress yet.
func (w *watcher) latencies(names []string) (lat []time.Duration, missing int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range names {
		a, ok1 := w.annotatedAt[n]
		i, ok2 := w.ingressAt[n]
		if !ok1 || !ok2 {
			missing++
			continue
		}
		d := i.Sub(a)
		if d < 0 {
			// The Ingress event was delivered before the Service's (two
			// watch streams): the latency is below our resolution.
			d = 0
		}
		lat = append(lat, d)
	}
	return lat, missing
}

// steadyCounts returns how many pool Services' Ingresses, and how many
// annotated pool Services, were seen.
func (w *watcher) steadyCounts() (ingresses, annotated int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ingressAt), len(w.annotatedAt)
}
