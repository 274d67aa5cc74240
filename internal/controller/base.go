package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Base is the part of a controller that is the same for every controller:
// its Loop over namespace/name keys, the registration of its informer event
// handlers, and Name, HasSynced and Run of Interface. A controller embeds
// it and adds only what is particular to it: which events queue which keys,
// and its sync.
type Base struct {
	// Loop queues the keys and runs the sync.
	Loop Loop[cache.ObjectName]
	// Background, when set, runs beside the workers once the caches have
	// synced, until Run's context ends (e.g. a periodic scan of a backend).
	Background func(ctx context.Context)

	logger klog.Logger
	synced []cache.DoneChecker
	ready  []cache.DoneChecker
}

// NewBase returns the Base of the controller name, whose Loop syncs keys
// with sync and takes its shutdown settings from cctx.
func NewBase(ctx context.Context, cctx *Context, name string, sync SyncFunc[cache.ObjectName]) Base {
	return Base{
		Loop: Loop[cache.ObjectName]{
			Name:         name,
			Queue:        NewQueue[cache.ObjectName](name),
			Sync:         sync,
			DrainTimeout: cctx.DrainTimeout,
			StopNow:      cctx.StopNow,
		},
		logger: klog.FromContext(ctx).WithValues("controller", name),
	}
}

// AddEventHandler registers h on informer; HasSynced then waits for h to
// have seen the informer's initial list.
func (b *Base) AddEventHandler(informer cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	reg, err := informer.AddEventHandlerWithOptions(h, cache.HandlerOptions{Logger: ptr.To(b.logger)})
	if err != nil {
		// Only fails once the informer has stopped, which cannot be the
		// case before the factory started.
		return fmt.Errorf("%s: adding an event handler: %w", b.Loop.Name, err)
	}
	b.synced = append(b.synced, reg.HasSyncedChecker())
	return nil
}

// WaitFor adds a condition HasSynced (and so Run, before it starts the
// workers) waits for, besides the event handlers' initial lists.
func (b *Base) WaitFor(done cache.DoneChecker) { b.synced = append(b.synced, done) }

// ReadyAfter adds a condition HasSynced waits for but the workers do not:
// the sync itself holds back what depends on it.
func (b *Base) ReadyAfter(done cache.DoneChecker) { b.ready = append(b.ready, done) }

// Name implements Interface.
func (b *Base) Name() string { return b.Loop.Name }

// HasSynced implements Interface: the caches are in, and every condition
// of WaitFor and ReadyAfter is met.
func (b *Base) HasSynced() bool {
	for _, done := range slices.Concat(b.synced, b.ready) {
		if !cache.IsDone(done) {
			return false
		}
	}
	return true
}

// Run implements Interface: it waits for the caches, then runs the workers
// and Background until ctx is cancelled and the in-flight work drained.
func (b *Base) Run(ctx context.Context, workers int) {
	logger := klog.FromContext(ctx).WithValues("controller", b.Loop.Name)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting controller")
	defer logger.Info("Stopped controller")
	// Channels, not a 100ms poll: the workers start the moment the last
	// cache is in.
	if !cache.WaitFor(klog.NewContext(ctx, logger.V(2)), "caches to sync", b.synced...) {
		utilruntime.HandleErrorWithContext(ctx, nil, "Unable to sync caches")
		b.Loop.Queue.ShutDown()
		return
	}
	logger.Info("Caches are synced")
	var wg sync.WaitGroup
	if b.Background != nil {
		wg.Go(func() { b.Background(ctx) })
	}
	b.Loop.Run(ctx, workers)
	wg.Wait()
}

// Enqueue queues the namespace/name key of obj (an object, or the tombstone
// of a deleted one); an object without a usable key is reported and skipped
// (see ObjectKey). It is the Add and Delete handler of most informers.
func (b *Base) Enqueue(obj any) {
	key, err := ObjectKey(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("%s: cannot get the key of %T: %w", b.Loop.Name, obj, err))
		return
	}
	b.Loop.Queue.Add(key)
}

// EnqueueKey queues key.
func (b *Base) EnqueueKey(key cache.ObjectName) { b.Loop.Queue.Add(key) }

// UnlessResync returns an Update handler that passes the new object to
// enqueue unless the update is a resync (see IsResync): a resync replays
// the cache, and a level-triggered sync of an unchanged object has nothing
// to do.
func (b *Base) UnlessResync(enqueue func(obj any)) func(oldObj, newObj any) {
	return func(oldObj, newObj any) {
		if IsResync(oldObj, newObj) {
			if m, err := meta.Accessor(newObj); err == nil {
				b.logger.V(4).Info("Ignoring resync of unchanged object", "object", klog.KObj(m), "type", fmt.Sprintf("%T", newObj))
			}
			return
		}
		enqueue(newObj)
	}
}

// Handler returns the event handler that queues the key of every added,
// deleted or changed object, but not of a resync.
func (b *Base) Handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    b.Enqueue,
		UpdateFunc: b.UnlessResync(b.Enqueue),
		DeleteFunc: b.Enqueue,
	}
}

// IsResync reports whether an update event is an informer resync: both
// objects have metadata and the same ResourceVersion, so nothing changed.
func IsResync(oldObj, newObj any) bool {
	o, err1 := meta.Accessor(oldObj)
	n, err2 := meta.Accessor(newObj)
	return err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion()
}
