package network_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// newNetwork returns a Network that already carries the finalizer, so its
// first sync goes to the backend.
func newNetwork(name, uid, cidr, gateway string) *samplecrdv1.Network {
	return &samplecrdv1.Network{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), Generation: 1, ResourceVersion: "1",
			Finalizers: []string{network.Finalizer}},
		Spec: samplecrdv1.NetworkSpec{CIDR: cidr, Gateway: gateway},
	}
}

// versionedClient returns a fake clientset holding objs that numbers
// resource versions as the API server does (the fake stores what it is
// given: without this every update looks like a resync), and counts the
// status writes per Network name.
func versionedClient(objs ...runtime.Object) (*fake.Clientset, func(name string) int) {
	client := fake.NewClientset(objs...)
	var rv atomic.Int64
	rv.Store(1)
	var mu sync.Mutex
	statusWrites := map[string]int{}
	client.PrependReactor("update", "networks", func(action clienttesting.Action) (bool, runtime.Object, error) {
		o := action.(clienttesting.UpdateAction).GetObject().(*samplecrdv1.Network)
		o.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
		if action.GetSubresource() == "status" {
			mu.Lock()
			statusWrites[o.Name]++
			mu.Unlock()
		}
		return false, nil, nil
	})
	return client, func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return statusWrites[name]
	}
}

// waitForReady waits until Network ns/name has a Ready condition cond accepts.
func waitForReady(ctx context.Context, t *testing.T, client *fake.Clientset, name string, cond func(*metav1.Condition) bool) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.SamplecrdV1().Networks("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
		return got != nil && cond(got), nil
	})
	if err != nil {
		t.Fatalf("Network %s: Ready = %+v, not what the test waits for: %v", name, got, err)
	}
	return got
}

// A status write of the controller's own brings an update event; that event
// must not queue the Network again, or an error whose text differs at every
// attempt (a request ID in a gateway's error page) is retried at once,
// forever, past the rate limiter.
func TestOwnStatusWriteNeverRequeues(t *testing.T) {
	t.Run("a permanent error whose text changes at every attempt is tried once, until PermanentRetry", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		client, _ := versionedClient()
		factory := externalversionsFactory(client)
		mem := memory.New()
		var attempts atomic.Int64
		scanned := make(chan struct{})
		var once sync.Once
		mem.SetFault(func(_ context.Context, op memory.Op, uid types.UID) error {
			if op == memory.OpList {
				once.Do(func() { close(scanned) })
			}
			if op == memory.OpCreate && uid == "u-bad" {
				n := attempts.Add(1)
				return network.Permanent("create network", samplecrdv1.ReasonBackendRejected, fmt.Errorf("refused (request id req-%d)", n))
			}
			return nil
		})
		done := runControllerWith(ctx, t, client, factory, record.NewFakeRecorder(1000), network.Options{Backend: mem})
		// The first backend scan queues every provisioned Network whose
		// backend network is missing, as a rejected one's is: the Network
		// comes once the scan listed the backend (and, unprovisioned,
		// would be skipped by it anyway), so that only its own status
		// write could queue it again.
		select {
		case <-scanned:
		case <-time.After(30 * time.Second):
			t.Fatal("no backend scan within 30s")
		}
		if err := client.Tracker().Add(newNetwork("bad", "u-bad", "10.0.0.0/24", "10.0.0.1")); err != nil {
			t.Fatal(err)
		}
		waitForReady(ctx, t, client, "bad", func(c *metav1.Condition) bool { return c.Reason == samplecrdv1.ReasonBackendRejected })
		// Its status write's event is delivered before the add of a second
		// Network, and the one worker takes keys in order: once the second
		// is provisioned, a requeue of the first would have been synced.
		if err := client.Tracker().Add(newNetwork("good", "u-good", "10.1.0.0/24", "10.1.0.1")); err != nil {
			t.Fatal(err)
		}
		waitForReady(ctx, t, client, "good", func(c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue })
		cancel()
		<-done
		if n := attempts.Load(); n != 1 {
			t.Errorf("create attempts for the rejected Network = %d, want 1 (its own status write requeued it)", n)
		}
	})

	t.Run("a transient error whose text changes at every attempt is retried with the rate limiter's backoff", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		client, statusWrites := versionedClient(newNetwork("busy", "u-busy", "10.0.0.0/24", "10.0.0.1"))
		factory := externalversionsFactory(client)
		mem := memory.New()
		const want = 7
		var mu sync.Mutex
		var at []time.Time
		reached := make(chan struct{})
		mem.SetFault(func(ctx context.Context, op memory.Op, uid types.UID) error {
			if op != memory.OpCreate {
				return nil
			}
			mu.Lock()
			at = append(at, time.Now())
			n := len(at)
			mu.Unlock()
			if n == want {
				close(reached)
			}
			return network.Transient("create network", samplecrdv1.ReasonBackendUnavailable,
				fmt.Errorf("429 Too Many Requests (request id req-%d)", n))
		})
		done := runControllerWith(ctx, t, client, factory, record.NewFakeRecorder(1000), network.Options{Backend: mem})
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d create attempts in 30s", len(at))
		}
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		// The rate limiter waits at least its base delay, doubled at each
		// failure, between attempts: a lower bound, whatever the machine.
		// The first retries may come early: the first backend scan queues
		// the Network too (it waited for the backend, and its network is
		// missing), once, around its first attempt, and a retry that finds
		// the Network waiting already for an earlier one's shorter delay
		// keeps that one. One extra add shifts that by one attempt at
		// most: from the fourth on, each waits the delay its own failure
		// set.
		var min time.Duration
		for i := 3; i < want-1; i++ {
			min += controller.DefaultRetryBaseDelay << i
		}
		if got := at[want-1].Sub(at[3]); got < min {
			t.Errorf("attempts 4 to %d in %v, want at least %v of backoff between them: something requeued the Network past the rate limiter", want, got, min)
		}
		if n := statusWrites("busy"); n > len(at) {
			t.Errorf("%d status writes for %d attempts", n, len(at))
		}
	})
}

func externalversionsFactory(client *fake.Clientset) externalversions.SharedInformerFactory {
	return externalversions.NewSharedInformerFactory(client, 0)
}

// A backend found down by a request of a sync is probed with a List. That
// List succeeding proves nothing about the failed request: when the next
// request fails the same way, the probe after it must wait longer, not
// start the backoff again (a flap every DownRetry, forever).
func TestProbeThatProvesNothingKeepsTheBackoff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client, _ := versionedClient(newNetwork("net", "u1", "10.0.0.0/24", "10.0.0.1"))
	mem := memory.New()
	const want = 5 // the first scan, then probes
	var mu sync.Mutex
	var lists []time.Time
	reached := make(chan struct{})
	mem.SetFault(func(_ context.Context, op memory.Op, _ types.UID) error {
		switch op {
		case memory.OpList:
			mu.Lock()
			lists = append(lists, time.Now())
			if len(lists) == want {
				close(reached)
			}
			mu.Unlock()
		case memory.OpCreate:
			return network.Down("create network", errors.New("503 Service Unavailable"))
		}
		return nil
	})
	const downRetry = 100 * time.Millisecond
	done := runControllerWith(ctx, t, client, externalversionsFactory(client), record.NewFakeRecorder(1000),
		network.Options{Backend: mem, DownRetry: downRetry, DownRetryMax: time.Minute})
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		t.Fatal("the backend was not probed again within 60s")
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	// Probes 2, 3, 4 of one failure each: DownRetry doubled at each, so the
	// last gap is at least 8 DownRetry (less jitter); a reset backoff gives
	// DownRetry.
	if gap := lists[want-1].Sub(lists[want-2]); gap < 4*downRetry {
		t.Errorf("gaps between probes: %v; the last is %v, want at least %v: the backoff was reset by a probe that proved nothing", gaps(lists), gap, 4*downRetry)
	}
}

func gaps(ts []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i].Sub(ts[i-1]).Round(time.Millisecond))
	}
	return out
}

// BackendCreated says the controller created something. A Create that only
// found the complete network an earlier attempt made (or another replica,
// before a restart) created nothing.
func TestNoBackendCreatedWhenCreateOnlyFound(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	obj := newNetwork("net", "u1", "10.0.0.0/24", "10.0.0.1")
	mem := memory.New()
	// The backend network is there, but not in the first List: made by an
	// attempt whose List result is not known yet.
	if _, err := mem.Create(ctx, network.Desired(obj)); err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	mem.SetFault(func(_ context.Context, op memory.Op, _ types.UID) error {
		if op == memory.OpList && lists.Add(1) == 1 {
			return network.Transient("list", samplecrdv1.ReasonBackendUnavailable, errors.New("500 Internal Server Error"))
		}
		return nil
	})
	client, _ := versionedClient(obj)
	recorder := record.NewFakeRecorder(100)
	done := runControllerWith(ctx, t, client, externalversionsFactory(client), recorder, network.Options{Backend: mem})
	waitForReady(ctx, t, client, "net", func(c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue })
	cancel()
	<-done
	close(recorder.Events)
	for ev := range recorder.Events {
		if strings.Contains(ev, network.ReasonCreated) {
			t.Errorf("event %q for a Create that created nothing", ev)
		}
	}
	if s := mem.Stats(); s.Creates != 1 {
		t.Errorf("backend creates = %d, want only the test's", s.Creates)
	}
}

// The first scan brings the backend up: Networks are served at once, and
// the backend networks left by deleted Networks are deleted beside them,
// however slow those deletes are.
func TestFirstScanServesBeforeCollectingGarbage(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem := memory.New()
	orphan := network.Network{UID: "u-orphan", Namespace: "ns", Name: "gone", CIDR: "10.9.0.0/24", Gateway: "10.9.0.1"}
	if _, err := mem.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	mem.SetFault(func(ctx context.Context, op memory.Op, uid types.UID) error {
		if op == memory.OpDelete && uid == orphan.UID {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	client, _ := versionedClient(newNetwork("net", "u1", "10.0.0.0/24", "10.0.0.1"))
	done := runControllerWith(ctx, t, client, externalversionsFactory(client), record.NewFakeRecorder(100), network.Options{Backend: mem})
	// The orphan's delete waits for the test: the Network is provisioned meanwhile.
	waitForReady(ctx, t, client, "net", func(c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue })
	close(release)
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := mem.Get(ctx, orphan.UID)
		return network.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the orphaned backend network is still there: %v", err)
	}
	cancel()
	<-done
}

// controller_network_backend_up follows the backend: 0 once a List finds it
// down (credentials refused here), 1 once a probe's List succeeds. Its
// backend label is the test's own, so no other test's controller moves it.
func TestBackendUpMetric(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const name = "backend-up-test"
	var refused atomic.Bool
	refused.Store(true)
	mem := memory.New()
	mem.SetFault(func(_ context.Context, op memory.Op, _ types.UID) error {
		if op == memory.OpList && refused.Load() {
			return network.Down("list", errors.New("authenticating to Keystone v3: 401 Unauthorized"))
		}
		return nil
	})
	client, _ := versionedClient(newNetwork("net", "u1", "10.0.0.0/24", "10.0.0.1"))
	done := runControllerWith(ctx, t, client, externalversionsFactory(client), record.NewFakeRecorder(100),
		network.Options{Backend: mem, BackendName: name, DownRetry: 10 * time.Millisecond, DownRetryMax: 50 * time.Millisecond})
	waitMetric := func(want float64) {
		t.Helper()
		var got float64
		var present bool
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got, present = backendUp(t, name)
			return present && got == want, nil
		}); err != nil {
			t.Fatalf("controller_network_backend_up{backend=%q} = %v (present: %v), want %v", name, got, present, want)
		}
	}
	waitMetric(0)
	refused.Store(false)
	waitMetric(1)
	waitForReady(ctx, t, client, "net", func(c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue })
	cancel()
	<-done
}

// backendUp reads controller_network_backend_up{backend} from the
// registry the manager serves /metrics from.
func backendUp(t *testing.T, backend string) (float64, bool) {
	t.Helper()
	return metricSample(t, "controller_network_backend_up", "backend", backend)
}

// metricValue is the sum of metric name's samples whose label is value
// (every sample when label is ""), 0 when there are none.
func metricValue(t *testing.T, name, label, value string) float64 {
	t.Helper()
	v, _ := metricSample(t, name, label, value)
	return v
}

// metricSample sums the samples of gauge or counter name whose label is
// value (all when label is ""), and reports whether there was one.
func metricSample(t *testing.T, name, label, value string) (sum float64, found bool) {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || l.GetName() == label && l.GetValue() == value
			}
			if match {
				found = true
				sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return sum, found
}
