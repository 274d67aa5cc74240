package app

import (
	"context"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
)

// limitedEventSink writes Events at the rate of its limiter
// (--event-qps/--event-burst), as the kubelet does with its event client:
// an Event reports a write, and the Events of a burst of writes (one per
// Ingress on a cold start over thousands of Services) must not take the API
// server's capacity from the writes they report. The recorder never blocks:
// client-go queues Events for the sink and drops them, silently, when its
// queue is full.
//
// Once the limiter's tokens are spent the sink pauses until a run of them
// (a second's worth, at most the burst) is back, then writes that many
// Events back to back, instead of one Event each 1/QPS: an Event that
// arrives alone on an idle connection costs the manager and the API server
// several times the CPU of one in a run. The rate over time is the
// limiter's either way.
//
// Once ctx is done (the manager stops) the sink stops waiting, and writes
// what the broadcaster still hands it as it did without a limit.
type limitedEventSink struct {
	ctx     context.Context
	sink    record.EventSink
	limiter flowcontrol.RateLimiter
	// pause is how long the tokens of a run take to come back.
	pause time.Duration
}

// newEventSink returns sink limited to qps Events per second with burst,
// or sink itself when qps is negative (no limit).
func newEventSink(ctx context.Context, sink record.EventSink, qps float32, burst int) record.EventSink {
	if qps < 0 {
		return sink
	}
	limiter := flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	if qps == 0 {
		return &limitedEventSink{ctx: ctx, sink: sink, limiter: limiter}
	}
	run := min(float64(max(burst, 1)), max(1, math.Ceil(float64(qps))))
	return &limitedEventSink{ctx: ctx, sink: sink, limiter: limiter,
		pause: time.Duration(run / float64(qps) * float64(time.Second))}
}

// wait takes a token: at once while there are some, else after a pause
// that brings a run of them back.
func (s *limitedEventSink) wait() {
	if s.limiter.TryAccept() {
		return
	}
	if s.pause > 0 {
		t := time.NewTimer(s.pause)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	_ = s.limiter.Wait(s.ctx) // an error means ctx is done: write without waiting
}

func (s *limitedEventSink) Create(event *corev1.Event) (*corev1.Event, error) {
	s.wait()
	return s.sink.Create(event)
}

func (s *limitedEventSink) Update(event *corev1.Event) (*corev1.Event, error) {
	s.wait()
	return s.sink.Update(event)
}

func (s *limitedEventSink) Patch(oldEvent *corev1.Event, data []byte) (*corev1.Event, error) {
	s.wait()
	return s.sink.Patch(oldEvent, data)
}
