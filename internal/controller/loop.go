package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/metrics"
)

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

// Waiting, returned (or wrapped) by a sync, is a failure that waits for
// what only others can give (a quota raised, a network created, ports
// removed): retried with the queue's backoff and logged as any error, but
// counted as result "waiting", not "error". The error ratio operators
// alert on is the manager's and its backends' failures; the object's
// condition says what it waits for.
type Waiting struct{ Err error }

func (w *Waiting) Error() string { return w.Err.Error() }

func (w *Waiting) Unwrap() error { return w.Err }

// result is how a sync that returned err is counted.
func result(err error) string {
	var after *RequeueAfter
	var waiting *Waiting
	switch {
	case err == nil, errors.As(err, &after): // handled: not a failure
		return metrics.ResultSuccess
	case errors.As(err, &waiting):
		return metrics.ResultWaiting
	}
	return metrics.ResultError
}

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
	// StopNow, when it ends, stops the loop at once: in-flight syncs are
	// cancelled instead of drained, also in the middle of a drain. A leader
	// that lost its lease must not write on: another replica may already be.
	// nil never stops at once.
	StopNow context.Context
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
	// but not the drain timeout, nor the end of StopNow.
	workCtx, cancelWork := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
	defer cancelWork()
	ctx, stopTaking := context.WithCancel(ctx)
	defer stopTaking()
	if l.StopNow != nil {
		defer context.AfterFunc(l.StopNow, func() {
			logger.Info("Stopping at once: cancelling in-flight work", "cause", context.Cause(l.StopNow))
			cancelWork() // first: the drain must not start on the way
			stopTaking()
		})()
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
	if workCtx.Err() == nil {
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
	metrics.ObserveReconcile(l.Name, took, result(err))
	var after *RequeueAfter
	if err == nil || errors.As(err, &after) {
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
