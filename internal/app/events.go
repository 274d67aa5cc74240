package app

import (
	"context"

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
// Once ctx is done (the manager stops) the sink stops waiting, and writes
// what the broadcaster still hands it as it did without a limit.
type limitedEventSink struct {
	ctx     context.Context
	sink    record.EventSink
	limiter flowcontrol.RateLimiter
}

// newEventSink returns sink limited to qps Events per second with burst,
// or sink itself when qps is negative (no limit).
func newEventSink(ctx context.Context, sink record.EventSink, qps float32, burst int) record.EventSink {
	if qps < 0 {
		return sink
	}
	return &limitedEventSink{ctx: ctx, sink: sink, limiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

func (s *limitedEventSink) wait() {
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
