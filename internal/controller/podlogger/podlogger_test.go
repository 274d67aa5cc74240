package podlogger

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller"
)

func TestDescribe(t *testing.T) {
	base := podState{uid: "u1", resourceVersion: "1", phase: "Pending"}
	tests := []struct {
		name        string
		before      podState
		known       bool
		now         podState
		wantEvent   string
		wantChanges string
	}{
		{"first sight", podState{}, false, base, "added", "none"},
		{"same resource version", base, true, base, "", ""},
		{"label change", base, true, with(base, func(s *podState) { s.resourceVersion = "2" }), "updated", "metadata or spec only"},
		{"phase and node", base, true, with(base, func(s *podState) {
			s.resourceVersion, s.phase, s.node = "2", "Running", "node-1"
		}), "updated", `phase: "Pending" -> "Running", node: "" -> "node-1"`},
		{"ready and restarts", base, true, with(base, func(s *podState) {
			s.resourceVersion, s.ready, s.restarts = "2", true, 3
		}), "updated", "ready: false -> true, restarts: 0 -> 3"},
		{"deletion requested", base, true, with(base, func(s *podState) {
			s.resourceVersion, s.deleting = "2", true
		}), "updated", "deletion requested"},
		{"recreated under the same name", base, true, with(base, func(s *podState) {
			s.uid, s.resourceVersion = "u2", "9"
		}), "recreated", "uid: u1 -> u2 (deleted and created again under the same name)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			event, changes := describe(tc.before, tc.known, tc.now)
			if event != tc.wantEvent || changes != tc.wantChanges {
				t.Errorf("describe() = (%q, %q), want (%q, %q)", event, changes, tc.wantEvent, tc.wantChanges)
			}
		})
	}
}

func with(s podState, f func(*podState)) podState {
	f(&s)
	return s
}

// TestFailingSyncIsRetriedFiveTimesThenDropped drives the pod-logger's own
// queue configuration with a sync that always fails: 5 retries, then the
// key is dropped with an error log naming key and error.
func TestFailingSyncIsRetriedFiveTimesThenDropped(t *testing.T) {
	for _, failures := range []int{2, 5, 100} {
		t.Run("", func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()
			client := fake.NewClientset()
			factory := controller.NewInformers(controller.InformersConfig{Core: client.CoreV1(), Networking: client.NetworkingV1(), Client: client})
			c, err := New(ctx, &controller.Context{Core: client.CoreV1(), Informers: factory, DrainTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var attempts atomic.Int32
			c.Loop.Sync = func(context.Context, cache.ObjectName) error {
				if int(attempts.Add(1)) <= failures {
					return errors.New("injected failure")
				}
				return nil
			}
			factory.Start(ctx.Done())
			done := make(chan struct{})
			go func() { defer close(done); c.Run(ctx, 1) }()

			key := cache.ObjectName{Namespace: "ns", Name: "p"}
			c.Loop.Queue.Add(key)
			wantAttempts := min(failures+1, MaxRetries+1)
			err = wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return int(attempts.Load()) >= wantAttempts && c.Loop.Queue.NumRequeues(key) == 0 && c.Loop.Queue.Len() == 0, nil
			})
			if err != nil {
				t.Fatalf("attempts = %d, want %d and the key forgotten", attempts.Load(), wantAttempts)
			}
			cancel()
			<-done
			if got := int(attempts.Load()); got != wantAttempts {
				t.Errorf("attempts = %d, want %d", got, wantAttempts)
			}
			out := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			dropped := strings.Contains(out, "Dropping key out of the queue")
			if wantDrop := failures > MaxRetries; dropped != wantDrop {
				t.Errorf("dropped = %v, want %v; log:\n%s", dropped, wantDrop, out)
			}
			if dropped && (!strings.Contains(out, `key="ns/p"`) || !strings.Contains(out, "injected failure")) {
				t.Errorf("the drop log must name the key and the error:\n%s", out)
			}
		})
	}
}
