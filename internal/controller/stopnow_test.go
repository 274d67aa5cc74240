package controller

import (
	"context"
	"testing"
	"time"
)

// A leader that loses its lease while it drains after SIGTERM must stop
// its in-flight syncs at once, as when it loses the lease while working:
// another replica may already be writing. The drain timeout is far away
// here; the sync is cancelled by the stop-now context instead.
func TestLoopStopNowDuringDrain(t *testing.T) {
	logger, ctx := newTestContext(t)
	inFlight := make(chan struct{})
	cancelled := make(chan struct{})
	l := &Loop[string]{
		Name:         "test-stop-now",
		Queue:        NewQueue[string]("test-stop-now"),
		DrainTimeout: time.Hour,
		Sync: func(ctx context.Context, _ string) error {
			close(inFlight)
			<-ctx.Done()
			close(cancelled)
			return ctx.Err()
		},
	}
	lease, loseLease := context.WithCancel(context.Background())
	defer loseLease()
	l.StopNow = lease
	stop, done := runLoop(ctx, l, 1)
	l.Queue.Add("ns/slow")
	<-inFlight
	go stop(nil) // SIGTERM: drain
	waitFor(t, "the drain to start", func() bool { return logContains(logger, "Shutting down: waiting for in-flight work") })
	select {
	case <-cancelled:
		t.Fatal("the in-flight sync was cancelled by a graceful stop")
	case <-time.After(100 * time.Millisecond):
	}
	loseLease()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("losing the lease during the drain did not cancel the in-flight sync")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the in-flight sync was cancelled")
	}
	if !logContains(logger, "Stopping at once") {
		t.Error("the loop did not log that it stopped at once")
	}
}

// Losing the lease before any stop stops the loop at once too.
func TestLoopStopNowWhileRunning(t *testing.T) {
	_, ctx := newTestContext(t)
	inFlight := make(chan struct{})
	l := &Loop[string]{
		Name:         "test-stop-now-running",
		Queue:        NewQueue[string]("test-stop-now-running"),
		DrainTimeout: time.Hour,
		Sync: func(ctx context.Context, _ string) error {
			close(inFlight)
			<-ctx.Done()
			return ctx.Err()
		},
	}
	lease, loseLease := context.WithCancel(context.Background())
	l.StopNow = lease
	_, done := runLoop(ctx, l, 1)
	l.Queue.Add("ns/slow")
	<-inFlight
	loseLease()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when the stop-now context ended")
	}
}
