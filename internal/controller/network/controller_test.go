package network_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// A Network stored before the API server validated specs (or written around
// it) must not reach the backend: Ready=False InvalidSpec, a Warning Event,
// no backend write, no retry loop.
func TestInvalidStoredSpecNeverReachesTheBackend(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		spec       samplecrdv1.NetworkSpec
	}{
		{name: "invalid", want: "Invalid spec", spec: samplecrdv1.NetworkSpec{CIDR: "10.0.0.1/8", Gateway: "192.168.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testStoredSpecNeverReachesTheBackend(t, tc.spec, tc.want) })
	}
}

func testStoredSpecNeverReachesTheBackend(t *testing.T, spec samplecrdv1.NetworkSpec, want string) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bad := &samplecrdv1.Network{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad", UID: "u1", Finalizers: []string{network.Finalizer}},
		Spec:       spec,
	}
	client := fake.NewClientset(bad)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(10)
	mem := memory.New()
	done := runController(ctx, t, client, factory, recorder, mem)

	select {
	case ev := <-recorder.Events:
		if want := "Warning InvalidSpec"; !strings.HasPrefix(ev, want) {
			t.Errorf("event = %q, want %s ...", ev, want)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("no Warning InvalidSpec Event within 10s")
	}
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.SamplecrdV1().Networks("ns").Get(ctx, "bad", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond = meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == samplecrdv1.ReasonInvalidSpec &&
			strings.Contains(cond.Message, want), nil
	})
	if err != nil {
		t.Errorf("Ready = %+v, want False/InvalidSpec saying %q", cond, want)
	}
	cancel()
	<-done
	if s := mem.Stats(); s.Writes() != 0 || s.Gets != 0 {
		t.Errorf("backend saw %+v for an invalid spec, want nothing", s)
	}
}

// runController starts the factory and a network controller on backend
// with one worker, once its caches synced; done closes when it returned
// (after ctx ends).
func runController(ctx context.Context, t *testing.T, client *fake.Clientset, factory externalversions.SharedInformerFactory,
	recorder record.EventRecorder, backend network.Backend) (done <-chan struct{}) {
	t.Helper()
	return runControllerWith(ctx, t, client, factory, recorder, network.Options{Backend: backend})
}

// runControllerWith is runController with opts.
func runControllerWith(ctx context.Context, t *testing.T, client *fake.Clientset, factory externalversions.SharedInformerFactory,
	recorder record.EventRecorder, opts network.Options) (done <-chan struct{}) {
	t.Helper()
	c, err := network.New(ctx, &controller.Context{
		SampleClient:          client,
		SampleInformerFactory: factory,
		EventRecorder:         func(string) record.EventRecorder { return recorder },
		FieldManager:          "test",
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		t.Fatal("cache not synced")
	}
	ch := make(chan struct{})
	go func() { defer close(ch); c.Run(ctx, 1) }()
	return ch
}

// recordingBackend records which create method the controller calls.
type recordingBackend struct {
	*memory.Backend
	mu    sync.Mutex
	calls []string
}

func (b *recordingBackend) record(call string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, call)
}

func (b *recordingBackend) Create(ctx context.Context, d network.Network) (*network.Network, error) {
	b.record("Create")
	return b.Backend.Create(ctx, d)
}

func (b *recordingBackend) CreateNew(ctx context.Context, d network.Network) (*network.Network, error) {
	b.record("CreateNew")
	return b.Backend.CreateNew(ctx, d)
}

// Only the process that added the finalizer may skip the lookup of an
// earlier attempt's leftovers, and only on its first attempt: a Network
// that had the finalizer already, or a retry, is looked for first.
func TestCreateNewOnlyForTheFirstAttemptAfterTheFinalizer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []string
		failFirst  bool
		want       []string
	}{
		{name: "a Network whose finalizer this process adds is created without a lookup", want: []string{"CreateNew"}},
		{name: "a Network with the finalizer already (another process may have created it) is looked for", finalizers: []string{network.Finalizer}, want: []string{"Create"}},
		{name: "the retry of a failed first create is looked for", failFirst: true, want: []string{"CreateNew", "Create"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			obj := &samplecrdv1.Network{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "net", UID: "u1", Finalizers: tc.finalizers},
				Spec:       samplecrdv1.NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1"},
			}
			obj.ResourceVersion = "1"
			client, _ := versionedClient(obj)
			factory := externalversions.NewSharedInformerFactory(client, 0)
			backend := &recordingBackend{Backend: memory.New()}
			if tc.failFirst {
				backend.SetFault(func(_ context.Context, op memory.Op, _ types.UID) error {
					backend.mu.Lock()
					first := len(backend.calls) == 1
					backend.mu.Unlock()
					if op == memory.OpCreate && first {
						return network.Transient("create", samplecrdv1.ReasonBackendUnavailable, errors.New("injected"))
					}
					return nil
				})
			}
			done := runController(ctx, t, client, factory, record.NewFakeRecorder(100), backend)
			var cond *metav1.Condition
			err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err := client.SamplecrdV1().Networks("ns").Get(ctx, "net", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				cond = meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady)
				return cond != nil && cond.Status == metav1.ConditionTrue, nil
			})
			if err != nil {
				t.Errorf("Ready = %+v, want True", cond)
			}
			cancel()
			<-done
			backend.mu.Lock()
			defer backend.mu.Unlock()
			if !slices.Equal(backend.calls, tc.want) {
				t.Errorf("create calls = %v, want %v", backend.calls, tc.want)
			}
		})
	}
}

// A Network with onDelete: Detach leaves its backend network when
// deleted: the finalizer is released, the network is no longer ours, and
// a garbage collection pass (as after a restart) does not delete it.
func TestDetachKeepsTheBackendNetwork(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem := memory.New()
	if _, err := mem.Create(ctx, network.Network{UID: "u1", Namespace: "ns", Name: "keep", CIDR: "10.0.0.0/8", Gateway: "10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	obj := &samplecrdv1.Network{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "keep", UID: "u1", Finalizers: []string{network.Finalizer}, DeletionTimestamp: &now},
		Spec:       samplecrdv1.NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "10.0.0.1", OnDelete: samplecrdv1.OnDeleteDetach},
	}
	client := fake.NewClientset(obj)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(10)
	done := runController(ctx, t, client, factory, recorder, mem)
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.SamplecrdV1().Networks("ns").Get(ctx, "keep", metav1.GetOptions{})
		return err == nil && len(got.Finalizers) == 0, err
	})
	if err != nil {
		t.Fatalf("the finalizer was not released: %v", err)
	}
	cancel()
	<-done
	// The Network gone, a fresh controller's scan finds nothing to collect.
	if err := client.SamplecrdV1().Networks("ns").Delete(context.Background(), "keep", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	c, err := network.New(ctx2, &controller.Context{
		SampleClient:          client,
		SampleInformerFactory: externalversions.NewSharedInformerFactory(client, 0),
		EventRecorder:         func(string) record.EventRecorder { return record.NewFakeRecorder(10) },
		FieldManager:          "test",
	}, network.Options{Backend: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CollectGarbage(ctx2); err != nil {
		t.Fatal(err)
	}
	if s, o := mem.Stats(), mem.Objects(); s.Deletes != 0 || len(o) != 1 || o[0].Owned || o[0].CIDR != "10.0.0.0/8" || o[0].Gateway != "10.0.0.1" {
		t.Errorf("backend saw %+v and holds %+v, want the network kept as it was, not ours", s, o)
	}
}

// An Unmanaged Network only reads the backend: a cidr or gateway that
// differs is reported (SpecMismatch), never repaired, and deleting the
// Network releases its finalizer without a backend call.
func TestUnmanagedImportOnlyReads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deleting bool
		gateway  string
		reason   string
	}{
		{name: "matches", gateway: "172.20.0.1", reason: samplecrdv1.ReasonObserved},
		{name: "gateway differs", gateway: "172.20.0.9", reason: samplecrdv1.ReasonSpecMismatch},
		{name: "deleted", deleting: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			mem := memory.New()
			id := mem.AddForeign("provider", "172.20.0.0/24", "172.20.0.1")
			obj := &samplecrdv1.Network{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "obs", UID: "u1", Finalizers: []string{network.Finalizer}},
				Spec: samplecrdv1.NetworkSpec{ManagementPolicy: samplecrdv1.ManagementPolicyUnmanaged, Gateway: tc.gateway,
					Import: &samplecrdv1.NetworkImport{NetworkID: id}},
			}
			if tc.deleting {
				now := metav1.Now()
				obj.DeletionTimestamp = &now
			}
			client := fake.NewClientset(obj)
			factory := externalversions.NewSharedInformerFactory(client, 0)
			done := runController(ctx, t, client, factory, record.NewFakeRecorder(10), mem)
			err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err := client.SamplecrdV1().Networks("ns").Get(ctx, "obs", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if tc.deleting {
					return len(got.Finalizers) == 0, nil
				}
				c := meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady)
				return c != nil && c.Reason == tc.reason && got.Status.NetworkID == id, nil
			})
			if err != nil {
				t.Fatalf("the Network did not reach %s (deleting: %v): %v", tc.reason, tc.deleting, err)
			}
			cancel()
			<-done
			if s := mem.Stats(); s.Writes() != 0 || (tc.deleting && s.Gets != 0) {
				t.Errorf("backend saw %+v, want no write (and no call at all for a deletion)", s)
			}
			if o := mem.Objects(); len(o) != 1 || o[0].Owned || o[0].Gateway != "172.20.0.1" {
				t.Errorf("backend holds %+v, want the observed network unchanged", o)
			}
		})
	}
}

// An import by filter that matches nothing waits (Ready=False
// ImportNotFound, retried with the queue's backoff) and binds the network
// once it appears; one that matches several names them and picks none.
func TestImportByFilter(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem := memory.New()
	a := mem.AddForeign("twice", "172.21.0.0/24", "172.21.0.1")
	b := mem.AddForeign("twice", "172.21.1.0/24", "172.21.1.1")
	byName := func(name string) *samplecrdv1.Network {
		return &samplecrdv1.Network{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Finalizers: []string{network.Finalizer}},
			Spec:       samplecrdv1.NetworkSpec{Import: &samplecrdv1.NetworkImport{Filter: &samplecrdv1.NetworkFilter{Name: name}}},
		}
	}
	client := fake.NewClientset(byName("later"), byName("twice"))
	factory := externalversions.NewSharedInformerFactory(client, 0)
	done := runController(ctx, t, client, factory, record.NewFakeRecorder(100), mem)
	waitFor := func(name, reason string, ok func(*samplecrdv1.Network, *metav1.Condition) bool) {
		t.Helper()
		var got *samplecrdv1.Network
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			if got, err = client.SamplecrdV1().Networks("ns").Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady)
			return c != nil && c.Reason == reason && ok(got, c), nil
		})
		if err != nil {
			t.Fatalf("Network %s = %+v, want Ready reason %s", name, got, reason)
		}
	}
	waitFor("twice", samplecrdv1.ReasonBackendRejected, func(_ *samplecrdv1.Network, c *metav1.Condition) bool {
		return strings.Contains(c.Message, a) && strings.Contains(c.Message, b)
	})
	waitFor("later", samplecrdv1.ReasonImportNotFound, func(*samplecrdv1.Network, *metav1.Condition) bool { return true })
	id := mem.AddForeign("later", "172.21.2.0/24", "172.21.2.1")
	waitFor("later", samplecrdv1.ReasonProvisioned, func(n *samplecrdv1.Network, _ *metav1.Condition) bool { return n.Status.NetworkID == id })
	cancel()
	<-done
	for _, o := range mem.Objects() {
		if o.Owned != (o.NetworkID == id) {
			t.Errorf("backend object %+v: only %s should be adopted", o, id)
		}
	}
}

// Scans read the networks of bound Unmanaged Networks in one Observe, never
// one Import per Network: scan after scan, with every Network converged,
// the backend sees a List and an Observe and nothing per Network, and the
// API server no write.
func TestRescanObservesUnmanagedInOneCall(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem := memory.New()
	const n = 5
	var objs []runtime.Object
	for i := range n {
		id := mem.AddForeign(fmt.Sprintf("provider-%d", i), fmt.Sprintf("172.23.%d.0/24", i), fmt.Sprintf("172.23.%d.1", i))
		objs = append(objs, &samplecrdv1.Network{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("obs-%d", i), UID: types.UID(fmt.Sprintf("u%d", i)), Finalizers: []string{network.Finalizer}},
			Spec: samplecrdv1.NetworkSpec{ManagementPolicy: samplecrdv1.ManagementPolicyUnmanaged,
				Import: &samplecrdv1.NetworkImport{NetworkID: id}},
		})
	}
	client := fake.NewClientset(objs...)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	done := runControllerWith(ctx, t, client, factory, record.NewFakeRecorder(100), network.Options{Backend: mem, GCInterval: 20 * time.Millisecond})
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.SamplecrdV1().Networks("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, got := range list.Items {
			if c := meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady); c == nil || c.Reason != samplecrdv1.ReasonObserved {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the Networks were not observed: %v", err)
	}
	// Past any sync still running from the binds: two scans.
	waitScans := func(k int64) {
		t.Helper()
		start := mem.Stats().Lists
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return mem.Stats().Lists >= start+2*k, nil
		}); err != nil {
			t.Fatalf("no %d scans: %v", k, err)
		}
	}
	waitScans(2)
	before, actions := mem.Stats(), len(client.Actions())
	waitScans(5)
	cancel()
	<-done
	after := mem.Stats()
	if after.Gets != before.Gets {
		t.Errorf("rescans of %d converged Unmanaged Networks imported %d times, want none (one Observe per scan)", n, after.Gets-before.Gets)
	}
	for _, a := range client.Actions()[actions:] {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
			t.Errorf("a rescan of converged Networks wrote %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// status.network and status.subnet show what the backend holds, for a
// Network it created, a Managed import and an Unmanaged one; a change made
// in the backend behind the controller's back (a rename) shows in an
// Unmanaged Network's status after the next scan, and scans of converged
// Networks write no status.
func TestStatusShowsTheBackendNetwork(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem := memory.New()
	observedID := mem.AddForeign("provider", "172.25.0.0/24", "172.25.0.1", "team=a")
	adoptedID := mem.AddForeign("terraformed", "172.25.1.0/24", "172.25.1.1")
	withFinalizer := func(name string, spec samplecrdv1.NetworkSpec) *samplecrdv1.Network {
		return &samplecrdv1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Finalizers: []string{network.Finalizer}}, Spec: spec}
	}
	client := fake.NewClientset(
		withFinalizer("created", samplecrdv1.NetworkSpec{CIDR: "10.60.0.0/24", Gateway: "10.60.0.1"}),
		withFinalizer("adopted", samplecrdv1.NetworkSpec{Import: &samplecrdv1.NetworkImport{NetworkID: adoptedID}}),
		withFinalizer("observed", samplecrdv1.NetworkSpec{ManagementPolicy: samplecrdv1.ManagementPolicyUnmanaged,
			Import: &samplecrdv1.NetworkImport{NetworkID: observedID}}),
	)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	done := runControllerWith(ctx, t, client, factory, record.NewFakeRecorder(100), network.Options{Backend: mem, GCInterval: 20 * time.Millisecond})
	defer func() { cancel(); <-done }()
	waitStatus := func(name string, ok func(samplecrdv1.NetworkStatus) bool) samplecrdv1.NetworkStatus {
		t.Helper()
		var st samplecrdv1.NetworkStatus
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := client.SamplecrdV1().Networks("ns").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st = got.Status
			return ok(st), nil
		}); err != nil {
			t.Fatalf("status of %s = %+v: %v", name, st, err)
		}
		return st
	}
	for _, tc := range []struct {
		name, backendName, cidr, gateway, tag string
	}{
		{"created", "k8s-ns-created", "10.60.0.0/24", "10.60.0.1", "managed-by=" + network.ManagedBy},
		{"adopted", "terraformed", "172.25.1.0/24", "172.25.1.1", "k8s-network-uid=uid-adopted"},
		{"observed", "provider", "172.25.0.0/24", "172.25.0.1", "team=a"},
	} {
		st := waitStatus(tc.name, func(st samplecrdv1.NetworkStatus) bool { return st.Network != nil && st.Subnet != nil })
		n, s := st.Network, st.Subnet
		if n.ID != st.NetworkID || n.Name != tc.backendName || n.Status != "ACTIVE" || n.AdminStateUp == nil || !*n.AdminStateUp ||
			n.MTU != memory.MTU || n.ProjectID != memory.ProjectID || !slices.Contains(n.Tags, tc.tag) || n.RevisionNumber == 0 {
			t.Errorf("%s: status.network = %+v, want %s named %q, ACTIVE, up, MTU, project, tag %s, a revision", tc.name, *n, st.NetworkID, tc.backendName, tc.tag)
		}
		if s.ID != st.SubnetID || s.CIDR != tc.cidr || s.GatewayIP != tc.gateway || s.IPVersion != 4 || len(s.AllocationPools) == 0 {
			t.Errorf("%s: status.subnet = %+v, want %s, %s via %s, IPv4, its pools", tc.name, *s, st.SubnetID, tc.cidr, tc.gateway)
		}
	}

	// Converged: scans write nothing.
	scans := func(k int64) {
		t.Helper()
		start := mem.Stats().Lists
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return mem.Stats().Lists >= start+2*k, nil
		}); err != nil {
			t.Fatalf("no %d scans: %v", k, err)
		}
	}
	scans(2)
	writes := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" || a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	before := writes()
	scans(5)
	if w := writes() - before; w != 0 {
		t.Errorf("5 scans of 3 converged Networks wrote %d times, want none", w)
	}

	// Renamed behind the controller's back: the next scan shows it.
	mem.RenameForeign(observedID, "provider-renamed")
	st := waitStatus("observed", func(st samplecrdv1.NetworkStatus) bool {
		return st.Network != nil && st.Network.Name == "provider-renamed"
	})
	if st.Network.RevisionNumber <= 2 {
		t.Errorf("status.network after the rename = %+v, want its new revision", *st.Network)
	}
}

// untaggedBackend lists its networks as a backend whose tags do not name
// the Network (tagged before they did): no namespace, no name.
type untaggedBackend struct{ *memory.Backend }

func (b untaggedBackend) List(ctx context.Context) ([]network.Network, error) {
	nets, err := b.Backend.List(ctx)
	for i := range nets {
		nets[i].Namespace, nets[i].Name = "", ""
	}
	return nets, err
}

// A manager of every namespace deletes an untagged backend network only
// when the API server confirms its Network's UID gone (the cache alone
// does not: it may lag); one limited to a namespace never does, since
// the network may be another namespace's.
func TestUntaggedOrphans(t *testing.T) {
	for _, tc := range []struct {
		name      string
		namespace string
		deleted   []types.UID
	}{
		{name: "every namespace: only the one the API server confirms gone", deleted: []types.UID{"gone"}},
		{name: "one namespace: none", namespace: "ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := memory.New(memory.WithOverlappingCIDRs())
			for _, uid := range []types.UID{"gone", "live"} {
				if _, err := mem.Create(ctx, network.Network{UID: uid, Namespace: "ns", Name: string(uid), CIDR: "10.0.0.0/24", Gateway: "10.0.0.1"}); err != nil {
					t.Fatal(err)
				}
			}
			// "live" exists in the API server; the informer has not
			// synced (never started): not in the cache.
			client := fake.NewClientset(&samplecrdv1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live", UID: "live"}})
			c, err := network.New(ctx, &controller.Context{
				SampleClient: client, SampleInformerFactory: externalversions.NewSharedInformerFactory(client, 0), Namespace: tc.namespace,
				EventRecorder: func(string) record.EventRecorder { return record.NewFakeRecorder(10) }, FieldManager: "test",
			}, network.Options{Backend: untaggedBackend{mem}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.CollectGarbage(ctx); err != nil {
				t.Fatal(err)
			}
			var left []types.UID
			for _, o := range mem.Objects() {
				left = append(left, o.UID)
			}
			for _, uid := range []types.UID{"gone", "live"} {
				if slices.Contains(tc.deleted, uid) == slices.Contains(left, uid) {
					t.Errorf("backend holds %v after the scan, want %v deleted", left, tc.deleted)
				}
			}
		})
	}
}

// A Network the backend refused for good (BackendRejected, nothing in the
// backend) is looked at again after PermanentRetry or on an edit, not at
// every scan of the backend.
func TestRejectedNotRetriedByScans(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem := memory.New()
	var mu sync.Mutex
	creates := 0
	mem.SetFault(func(_ context.Context, op memory.Op, _ types.UID) error {
		if op != memory.OpCreate {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		creates++
		return network.Permanent("create network", samplecrdv1.ReasonBackendRejected, fmt.Errorf("refused"))
	})
	obj := &samplecrdv1.Network{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "refused", UID: "u1", Finalizers: []string{network.Finalizer}},
		Spec: samplecrdv1.NetworkSpec{CIDR: "10.0.0.0/24", Gateway: "10.0.0.1"}}
	client := fake.NewClientset(obj)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	done := runControllerWith(ctx, t, client, factory, record.NewFakeRecorder(100), network.Options{Backend: mem, GCInterval: 5 * time.Millisecond, PermanentRetry: time.Hour})
	defer func() { cancel(); <-done }()
	waitForReady(ctx, t, client, "refused", func(c *metav1.Condition) bool { return c.Reason == samplecrdv1.ReasonBackendRejected })
	mu.Lock()
	before := creates
	mu.Unlock()
	lists := mem.Stats().Lists
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return mem.Stats().Lists >= lists+2*10, nil // 10 scans (a List and an Observe each)
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if creates-before > 1 {
		t.Errorf("10 scans tried the refused create %d more times, want none (a sync under way aside)", creates-before)
	}
}
