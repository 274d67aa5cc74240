package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// runLoop runs l in the background and returns a stop func that cancels it
// (with cause) and waits for Run to return.
func runLoop(ctx context.Context, l *Loop[string], workers int) (stop func(cause error), done <-chan struct{}) {
	ctx, cancel := context.WithCancelCause(ctx)
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		l.Run(ctx, workers)
	}()
	return func(cause error) { cancel(cause); <-ch }, ch
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// newTestContext returns a context whose logger writes to t and keeps every
// line in a buffer the test can read.
func newTestContext(t *testing.T) (klog.Logger, context.Context) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return logger, klog.NewContext(context.Background(), logger)
}

// newTestLoop returns a Loop of string keys named name, with a queue of the
// same name, running sync.
func newTestLoop(name string, sync func(context.Context, string) error) *Loop[string] {
	return &Loop[string]{Name: name, Queue: NewQueue[string](name), Sync: sync}
}

func logContains(logger klog.Logger, s string) bool {
	return strings.Contains(logger.GetSink().(ktesting.Underlier).GetBuffer().String(), s)
}

func TestLoopRetriesThenDrops(t *testing.T) {
	logger, ctx := newTestContext(t)
	var calls atomic.Int32
	l := newTestLoop("test-drop", func(context.Context, string) error {
		calls.Add(1)
		return errors.New("boom")
	})
	l.MaxRetries = 5
	stop, _ := runLoop(ctx, l, 2)
	l.Queue.Add("ns/bad")
	waitFor(t, "the key to be dropped", func() bool { return logContains(logger, "Dropping key out of the queue") })
	stop(nil)
	if got := calls.Load(); got != 6 {
		t.Errorf("sync ran %d times, want 6 (the first try and 5 retries)", got)
	}
	if n := l.Queue.NumRequeues("ns/bad"); n != 0 {
		t.Errorf("NumRequeues after drop = %d, want 0 (forgotten)", n)
	}
	out := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	for _, want := range []string{`key="ns/bad"`, "boom", "retries=5"} {
		if !strings.Contains(out, want) {
			t.Errorf("drop log lacks %s:\n%s", want, out)
		}
	}
}

func TestLoopRecoversAfterFailures(t *testing.T) {
	_, ctx := newTestContext(t)
	var calls atomic.Int32
	succeeded := make(chan struct{})
	l := newTestLoop("test-recover", func(context.Context, string) error {
		if calls.Add(1) <= 3 {
			return errors.New("transient")
		}
		close(succeeded)
		return nil
	})
	l.MaxRetries = 5
	stop, _ := runLoop(ctx, l, 1)
	defer stop(nil)
	l.Queue.Add("ns/flaky")
	select {
	case <-succeeded:
	case <-time.After(10 * time.Second):
		t.Fatal("sync never succeeded")
	}
	waitFor(t, "the key to be forgotten", func() bool { return l.Queue.NumRequeues("ns/flaky") == 0 && l.Queue.Len() == 0 })
	if got := calls.Load(); got != 4 {
		t.Errorf("sync ran %d times, want 4", got)
	}
}

func TestLoopUnlimitedRetriesAndPanics(t *testing.T) {
	logger, ctx := newTestContext(t)
	var calls atomic.Int32
	l := newTestLoop("test-panic", func(context.Context, string) error {
		if calls.Add(1) <= 7 { // more than pod-logger's cap: no cap here
			panic("bad object")
		}
		return nil
	})
	stop, _ := runLoop(ctx, l, 1)
	defer stop(nil)
	l.Queue.Add("ns/panicky")
	waitFor(t, "8 syncs", func() bool { return calls.Load() == 8 })
	waitFor(t, "the key to be forgotten", func() bool { return l.Queue.NumRequeues("ns/panicky") == 0 })
	if !logContains(logger, "panic while syncing: bad object") {
		t.Error("the panic was not logged")
	}
}

func TestLoopDrainsInFlightWork(t *testing.T) {
	_, ctx := newTestContext(t)
	started := make(chan struct{})
	release := make(chan struct{})
	var syncCtxErr atomic.Value
	var processed sync.Map
	l := newTestLoop("test-drain", func(ctx context.Context, key string) error {
		processed.Store(key, true)
		if key == "in-flight" {
			close(started)
			<-release
			syncCtxErr.Store(errOrNil{ctx.Err()})
		}
		return nil
	})
	l.DrainTimeout = time.Hour
	stop, done := runLoop(ctx, l, 1)
	l.Queue.Add("in-flight")
	<-started
	l.Queue.Add("queued") // behind the in-flight key, with the only worker busy
	go stop(nil)
	// Run must wait for the in-flight sync.
	waitFor(t, "the queue to shut down", func() bool { return l.Queue.ShuttingDown() })
	select {
	case <-done:
		t.Fatal("Run returned while a sync was in flight")
	default:
	}
	close(release)
	<-done
	if e := syncCtxErr.Load().(errOrNil).err; e != nil {
		t.Errorf("in-flight sync saw its context cancelled (%v); it should run to completion", e)
	}
	if _, ok := processed.Load("queued"); ok {
		t.Error("a key queued behind the shutdown was synced; only in-flight work should finish")
	}
}

type errOrNil struct{ err error }

func TestLoopDrainTimeoutCancelsInFlightWork(t *testing.T) {
	_, ctx := newTestContext(t)
	started := make(chan struct{})
	var cancelled atomic.Bool
	l := newTestLoop("test-drain-timeout", func(ctx context.Context, _ string) error {
		close(started)
		<-ctx.Done() // a sync that never ends by itself
		cancelled.Store(true)
		return ctx.Err()
	})
	l.DrainTimeout = 50 * time.Millisecond
	stop, _ := runLoop(ctx, l, 1)
	l.Queue.Add("stuck")
	<-started
	stop(nil) // returns only once Run has returned
	if !cancelled.Load() {
		t.Error("the stuck sync was not cancelled after the drain timeout")
	}
}

func TestLoopRequeueAfter(t *testing.T) {
	_, ctx := newTestContext(t)
	var calls atomic.Int32
	var first, second atomic.Int64
	l := newTestLoop("test-requeue-after", func(context.Context, string) error {
		switch calls.Add(1) {
		case 1:
			first.Store(time.Now().UnixNano())
			return &RequeueAfter{Delay: 100 * time.Millisecond, Err: errors.New("permanent problem")}
		default:
			second.Store(time.Now().UnixNano())
			return nil
		}
	})
	stop, _ := runLoop(ctx, l, 1)
	defer stop(nil)
	l.Queue.Add("k")
	waitFor(t, "the second sync", func() bool { return calls.Load() == 2 })
	if gap := time.Duration(second.Load() - first.Load()); gap < 100*time.Millisecond {
		t.Errorf("requeued after %v, want at least 100ms", gap)
	}
	if n := l.Queue.NumRequeues("k"); n != 0 {
		t.Errorf("NumRequeues = %d, want 0: RequeueAfter is not an error backoff", n)
	}
}
