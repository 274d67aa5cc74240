package app

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
)

// recordingSink records the Events written to it.
type recordingSink struct{ written chan string }

func (s *recordingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.written <- "create " + e.Name
	return e, nil
}

func (s *recordingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.written <- "update " + e.Name
	return e, nil
}

func (s *recordingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s.written <- "patch " + e.Name
	return e, nil
}

func event(name string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// stepLimiter is a limiter that reports each TryAccept and Wait on steps:
// while open both take a token at once; closed, TryAccept fails and Wait
// blocks until ctx is done.
type stepLimiter struct {
	flowcontrol.RateLimiter
	steps chan string
	open  bool
}

func (l *stepLimiter) TryAccept() bool {
	l.steps <- "try"
	return l.open
}

func (l *stepLimiter) Wait(ctx context.Context) error {
	l.steps <- "wait"
	if l.open {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestNewEventSink: a negative QPS is no limit, any other a token bucket of
// the QPS and burst, whose sink pauses, once the tokens are spent, for a
// run of them to come back: a second's worth, at most the burst.
func TestNewEventSink(t *testing.T) {
	if s := (&recordingSink{}); newEventSink(context.Background(), s, -1, 0) != s {
		t.Errorf("newEventSink with a negative QPS wraps the sink, want the sink itself")
	}
	for _, tc := range []struct {
		qps   float32
		burst int
		pause time.Duration
	}{
		{50, 100, time.Second},                              // a run of 50
		{7, 9, time.Second},                                 // a run of 7
		{1000, 10, 10 * time.Millisecond},                   // the burst: a run of 10
		{0.5, 1, 2 * time.Second},                           // a run of 1
		{2.5, 4, time.Duration(1.2 * float64(time.Second))}, // a run of 3
		{0, 10, 0}, // no token after the burst: no run
	} {
		limited, ok := newEventSink(context.Background(), &recordingSink{}, tc.qps, tc.burst).(*limitedEventSink)
		if !ok || limited.limiter.QPS() != tc.qps || limited.pause != tc.pause {
			t.Errorf("newEventSink(%v, %d) = %#v, want a sink limited to %v QPS pausing %v", tc.qps, tc.burst, limited, tc.qps, tc.pause)
		}
	}
}

// TestEventSink: every write takes a token first, at once while there are
// some; out of them, it pauses, then waits for one; once the manager stops,
// a waiting Event is written without waiting more.
func TestEventSink(t *testing.T) {
	steps := make(chan string, 8)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	limiter := &stepLimiter{steps: steps, open: true}
	sink := &limitedEventSink{ctx: ctx, sink: &recordingSink{written: steps}, limiter: limiter, pause: time.Millisecond}
	if _, err := sink.Create(event("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Update(event("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Patch(event("c"), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"try", "create a", "try", "update b", "try", "patch c"} {
		if got := <-steps; got != want {
			t.Fatalf("got step %q, want %q", got, want)
		}
	}

	limiter.open = false
	done := make(chan error)
	go func() {
		_, err := sink.Create(event("d"))
		done <- err
	}()
	for _, want := range []string{"try", "wait"} {
		if got := <-steps; got != want {
			t.Fatalf("got step %q, want the Create to %s first", got, want)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := <-steps; got != "create d" {
		t.Fatalf("got step %q once the manager stopped, want %q", got, "create d")
	}

	// Stopped during the pause: written without waiting.
	sink.pause = time.Hour
	go func() {
		_, err := sink.Create(event("e"))
		done <- err
	}()
	if got := <-steps; got != "try" {
		t.Fatalf("got step %q, want the Create to try first", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := <-steps; got != "create e" {
		t.Fatalf("got step %q with the manager stopped during the pause, want %q", got, "create e")
	}
}
