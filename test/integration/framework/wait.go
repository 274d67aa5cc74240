package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Timeout bounds a wait on the API server and the manager.
const Timeout = 30 * time.Second

// Eventually polls cond every 20ms until it returns true; the test fails
// with msg when timeout passes first. An error of cond counts as "not yet",
// and the last one is part of the failure.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	EventuallyEvery(t, 20*time.Millisecond, timeout, msg, cond)
}

// EventuallyEvery is Eventually polling every interval, for conditions
// that cost more to ask (a Pod's whole log, a file).
func EventuallyEvery(t testing.TB, interval, timeout time.Duration, msg string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			// The deadline's own error (a request cut short) would hide the
			// last one that tells why the condition does not hold.
			if ctx.Err() == nil || lastErr == nil {
				lastErr = err
			}
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		if lastErr != nil {
			t.Fatalf("%s: not true within %v (last error: %v)", msg, timeout, lastErr)
		}
		t.Fatalf("%s: not true within %v", msg, timeout)
	}
}

// WaitObject waits until get finds the object and check (when not nil)
// accepts it, and returns it.
func WaitObject[T any](t testing.TB, what string, get func(ctx context.Context) (T, error), check func(T) error) T {
	t.Helper()
	var obj T
	Eventually(t, Timeout, what, func(ctx context.Context) (bool, error) {
		var err error
		if obj, err = get(ctx); err != nil {
			return false, err
		}
		if check != nil {
			if err := check(obj); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	return obj
}

// WaitGone waits until get answers NotFound.
func WaitGone[T any](t testing.TB, what string, get func(ctx context.Context) (T, error)) {
	t.Helper()
	Eventually(t, Timeout, what, func(ctx context.Context) (bool, error) {
		_, err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// Get binds a typed client's Get to name, for WaitObject and WaitGone:
// Get(client.NetworkingV1().Ingresses(ns).Get, name).
func Get[T any](get func(context.Context, string, metav1.GetOptions) (T, error), name string) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) { return get(ctx, name, metav1.GetOptions{}) }
}

// WaitIngress waits until Ingress ns/name exists and check (when not nil)
// accepts it, and returns it.
func WaitIngress(t testing.TB, client kubernetes.Interface, ns, name, what string, check func(*networkingv1.Ingress) error) *networkingv1.Ingress {
	t.Helper()
	return WaitObject(t, what, Get(client.NetworkingV1().Ingresses(ns).Get, name), check)
}

// WaitEvent waits up to timeout for an Event in ns of eventType and reason
// on the object kind/name whose message contains every one of contains,
// and returns it.
func WaitEvent(t testing.TB, client kubernetes.Interface, timeout time.Duration, ns, kind, name, eventType, reason string, contains ...string) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	Eventually(t, timeout, fmt.Sprintf("%s event %s on %s", eventType, reason, name), func(ctx context.Context) (bool, error) {
		var err error
		found, err = FindEvent(ctx, client, ns, kind, name, eventType, reason, contains...)
		return found != nil, err
	})
	return found
}

// FindEvent returns the Event in ns of eventType and reason on the object
// kind/name whose message contains every one of contains, nil when there is
// none (yet): WaitEvent's condition, for a wait on one of several outcomes.
func FindEvent(ctx context.Context, client kubernetes.Interface, ns, kind, name, eventType, reason string, contains ...string) (*corev1.Event, error) {
	list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		ev := &list.Items[i]
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name && ev.Type == eventType && ev.Reason == reason &&
			!slices.ContainsFunc(contains, func(c string) bool { return !strings.Contains(ev.Message, c) }) {
			return ev, nil
		}
	}
	return nil, nil
}
