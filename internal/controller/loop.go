package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/metrics"
)

// ErrStopNow, as the cause of the context passed to Loop.Run (see
// context.WithCancelCause), makes the loop cancel in-flight syncs at once
// instead of letting them finish: used when the leader lease is lost, where
// another replica may already be writing.
var ErrStopNow = errors.New("stop at once")

type stopNowKey struct{}

// WithStopNow returns a copy of ctx for Loop.Run that makes the loop stop at
// once (as with ErrStopNow) when stopNow ends, even after ctx ended and the
// loop is letting its in-flight syncs finish: a leader that loses its lease
// while it drains after SIGTERM must not write on, since another replica may
// already be writing.
func WithStopNow(ctx, stopNow context.Context) context.Context {
	return context.WithValue(ctx, stopNowKey{}, stopNow)
}

// RequeueAfter, returned (or wrapped) by a sync, asks for the key to be
// synced again after its delay, without the error backoff: for conditions
// that no retry soon can fix (bad input, a permanent backend error) but a
// later look might (someone fixed the other side).
type RequeueAfter struct {
	Delay time.Duration
	// Err is what is wrong, for the log; may be nil.
	Err error
}

func (r *RequeueAfter) Error() string {
	if r.Err == nil {
		return fmt.Sprintf("requeue after %v", r.Delay)
	}
	return fmt.Sprintf("%v (requeue after %v)", r.Err, r.Delay)
}

func (r *RequeueAfter) Unwrap() error { return r.Err }

// SyncFunc reconciles one key. It must be idempotent and level-triggered: it
// reads the current state and converges it, whatever happened before.
type SyncFunc[T comparable] func(ctx context.Context, key T) error

// Loop runs a typed rate-limited workqueue with a pool of workers.
//
// A failed sync is requeued with the queue's rate limiter; with MaxRetries > 0
// the key is dropped (and logged) after MaxRetries retries, otherwise it is
// retried for as long as it fails, its delay growing up to the rate limiter's
// cap. A panicking sync is recovered, logged with its stack and retried, so
// one bad object never takes the other objects down with it.
type Loop[T comparable] struct {
	// Name names the queue (workqueue metrics) and the controller (reconcile
	// metrics, logs).
	Name string
	// Queue holds the keys; create it with NewQueue.
	Queue workqueue.TypedRateLimitingInterface[T]
	// Sync reconciles one key.
	Sync SyncFunc[T]
	// MaxRetries caps retries of a failing key; 0 retries without limit.
	MaxRetries int
	// DrainTimeout bounds the wait for in-flight syncs on shutdown; once it
	// passes their context is cancelled. 0 means 30s.
	DrainTimeout time.Duration
}

// Default rate limits for retries: per-item exponential backoff from 5ms to
// 5 minutes (client-go's default caps at 1000s, too long to notice recovery
// of a backend), with no overall token bucket: a single bad key must never
// slow every other key down, and the API server's own limits apply anyway.
const (
	DefaultRetryBaseDelay = 5 * time.Millisecond
	DefaultRetryMaxDelay  = 5 * time.Minute
)

// NewQueue returns a named typed rate-limited queue with the default backoff.
// The name labels the client-go workqueue metrics (workqueue_depth{name=...}).
func NewQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](DefaultRetryBaseDelay, DefaultRetryMaxDelay),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name},
	)
}

// Run starts workers and blocks until ctx is cancelled. Then it stops taking
// new keys, lets the syncs in flight finish (ShutDownWithDrain) for at most
// DrainTimeout, cancels whatever is still running, and returns once every
// worker has exited. Keys still queued are not synced: they are reconciled
// from the informers' initial list by whichever instance runs next.
func (l *Loop[T]) Run(ctx context.Context, workers int) {
	logger := klog.FromContext(ctx).WithValues("controller", l.Name)
	if workers < 1 {
		workers = 1
	}
	drainTimeout := l.DrainTimeout
	if drainTimeout <= 0 {
		drainTimeout = 30 * time.Second
	}
	// In-flight syncs outlive ctx (they run to completion during the drain)
	// but not the drain timeout, nor the end of a stop-now context.
	workCtx, cancelWork := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
	defer cancelWork()
	if stopNow, ok := ctx.Value(stopNowKey{}).(context.Context); ok {
		parent := ctx
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(stopNow, func() {
			cancel(ErrStopNow)
			if parent.Err() != nil && workCtx.Err() == nil { // draining
				logger.Info("Stopping at once: cancelling in-flight work", "cause", context.Cause(stopNow))
			}
			cancelWork()
		})
		defer stop()
	}

	logger.Info("Starting workers", "count", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for l.processNext(ctx, workCtx) {
			}
		})
	}

	<-ctx.Done()
	if errors.Is(context.Cause(ctx), ErrStopNow) {
		logger.Info("Stopping at once: cancelling in-flight work", "cause", context.Cause(ctx))
		cancelWork()
	} else {
		logger.Info("Shutting down: waiting for in-flight work", "timeout", drainTimeout)
	}
	drained := make(chan struct{})
	go func() {
		l.Queue.ShutDownWithDrain()
		close(drained)
	}()
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
		logger.Info("Drain timeout passed: cancelling in-flight work", "timeout", drainTimeout)
		cancelWork()
		l.Queue.ShutDown()
		<-drained
	}
	wg.Wait()
	logger.Info("Workers stopped")
}

// RunAfterSync waits for the informer caches (synced), then runs workers
// like Run. If ctx ends before the caches sync, it shuts the queue down and
// returns.
func (l *Loop[T]) RunAfterSync(ctx context.Context, workers int, synced ...cache.InformerSynced) {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", l.Name))
	if !cache.WaitForNamedCacheSyncWithContext(ctx, synced...) {
		l.Queue.ShutDown()
		return
	}
	l.Run(ctx, workers)
}

// EnqueueObject adds the namespace/name key of obj (an object, or the
// tombstone of a deleted one) to l's queue; an object without a usable key is
// reported and skipped (see ObjectKey).
func EnqueueObject(l *Loop[cache.ObjectName], obj any) {
	key, err := ObjectKey(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("%s: cannot get the key of %T: %w", l.Name, obj, err))
		return
	}
	l.Queue.Add(key)
}

// processNext handles one key; it returns false once the queue shut down.
func (l *Loop[T]) processNext(ctx, workCtx context.Context) bool {
	key, shutdown := l.Queue.Get()
	if shutdown {
		return false
	}
	defer l.Queue.Done(key)
	if ctx.Err() != nil {
		// Shutting down: the queue is draining, do not start new work.
		return true
	}

	start := time.Now()
	err := l.safeSync(workCtx, key)
	took := time.Since(start)
	var after *RequeueAfter
	if errors.As(err, &after) {
		metrics.ObserveReconcile(l.Name, took, nil) // handled: not a failure
	} else {
		metrics.ObserveReconcile(l.Name, took, err)
	}
	if err == nil || after != nil {
		klog.FromContext(workCtx).V(4).Info("Synced", "key", key, "duration", took)
	}
	l.handleErr(workCtx, key, err)
	return true
}

func (l *Loop[T]) safeSync(ctx context.Context, key T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while syncing: %v\n%s", r, debug.Stack())
		}
	}()
	return l.Sync(ctx, key)
}

func (l *Loop[T]) handleErr(ctx context.Context, key T, err error) {
	if err == nil {
		l.Queue.Forget(key)
		return
	}
	logger := klog.FromContext(ctx)
	var after *RequeueAfter
	if errors.As(err, &after) {
		l.Queue.Forget(key)
		if after.Err != nil {
			// A failure that retrying cannot fix (it waits for an edit):
			// once per change or per delay, so the default log shows it.
			logger.Info("Sync failed; not retrying until the object changes or the delay passes", "key", key, "after", after.Delay, "err", after.Err)
		} else {
			logger.V(2).Info("Sync asked to look again later", "key", key, "after", after.Delay)
		}
		l.Queue.AddAfter(key, after.Delay)
		return
	}
	if ctx.Err() != nil {
		// Cancelled by the drain timeout: the next instance picks it up.
		logger.V(2).Info("Sync cancelled by shutdown", "key", key, "err", err)
		return
	}
	retries := l.Queue.NumRequeues(key)
	if l.MaxRetries > 0 && retries >= l.MaxRetries {
		l.Queue.Forget(key)
		utilruntime.HandleErrorWithContext(ctx, err, "Dropping key out of the queue after retries", "key", key, "retries", retries)
		return
	}
	logger.Info("Error syncing; will retry", "key", key, "retries", retries, "err", err)
	l.Queue.AddRateLimited(key)
}
