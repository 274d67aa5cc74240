package controller

import (
	"context"
	"testing"
	"time"
)

// A leader that loses its lease must stop its in-flight syncs at once,
// while it works and while it drains after SIGTERM alike: another replica
// may already be writing. The drain timeout is far away here; the sync is
// cancelled by the end of StopNow instead.
func TestLoopStopNow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain bool // SIGTERM first, then the lease is lost
	}{
		{"lease lost while running", false},
		{"lease lost during the drain", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, ctx := newTestContext(t)
			inFlight := make(chan struct{})
			cancelled := make(chan struct{})
			lease, loseLease := context.WithCancel(context.Background())
			defer loseLease()
			l := &Loop[string]{
				Name:         "test-stop-now",
				Queue:        NewQueue[string]("test-stop-now"),
				DrainTimeout: time.Hour,
				StopNow:      lease,
				Sync: func(ctx context.Context, _ string) error {
					close(inFlight)
					<-ctx.Done()
					close(cancelled)
					return ctx.Err()
				},
			}
			stop, done := runLoop(ctx, l, 1)
			l.Queue.Add("ns/slow")
			<-inFlight
			if tc.drain {
				go stop(nil) // SIGTERM: drain
				waitFor(t, "the drain to start", func() bool { return logContains(logger, "Shutting down: waiting for in-flight work") })
				select {
				case <-cancelled:
					t.Fatal("the in-flight sync was cancelled by a graceful stop")
				case <-time.After(100 * time.Millisecond):
				}
			}
			loseLease()
			select {
			case <-cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("losing the lease did not cancel the in-flight sync")
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after the in-flight sync was cancelled")
			}
			if !logContains(logger, "Stopping at once") {
				t.Error("the loop did not log that it stopped at once")
			}
		})
	}
}
