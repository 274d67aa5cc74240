package app

import (
	"context"
	"testing"

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

// stepLimiter is a limiter that reports each Wait on steps and then blocks
// until ctx is done, or returns at once while open.
type stepLimiter struct {
	flowcontrol.RateLimiter
	steps chan string
	open  bool
}

func (l *stepLimiter) Wait(ctx context.Context) error {
	l.steps <- "wait"
	if l.open {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestEventSink: every write waits for the limiter first; once the manager
// stops, a waiting Event is written without waiting more. A negative QPS is
// no limit, any other a token bucket of the QPS and burst.
func TestEventSink(t *testing.T) {
	if s := (&recordingSink{}); newEventSink(context.Background(), s, -1, 0) != s {
		t.Errorf("newEventSink with a negative QPS wraps the sink, want the sink itself")
	}
	limited, ok := newEventSink(context.Background(), &recordingSink{}, 7, 9).(*limitedEventSink)
	if !ok || limited.limiter.QPS() != 7 {
		t.Errorf("newEventSink(7, 9) = %#v, want a sink limited to 7 QPS", limited)
	}

	steps := make(chan string, 8)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	limiter := &stepLimiter{steps: steps, open: true}
	sink := &limitedEventSink{ctx: ctx, sink: &recordingSink{written: steps}, limiter: limiter}
	if _, err := sink.Create(event("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Update(event("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Patch(event("c"), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wait", "create a", "wait", "update b", "wait", "patch c"} {
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
	if got := <-steps; got != "wait" {
		t.Fatalf("got step %q, want the Create to wait first", got)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := <-steps; got != "create d" {
		t.Fatalf("got step %q once the manager stopped, want %q", got, "create d")
	}
}
