package network

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-sample/controller-manager/internal/controller/handlertest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
)

// FuzzSyncSpec runs the controller's sync on a Network with an arbitrary
// spec (as stored before the API server validated specs, or written around
// it), then with an arbitrary new gateway, then deletes it. The controller
// must never panic; an invalid spec must never reach the backend and must
// set Ready=False InvalidSpec; a valid one must be created once, exactly as
// specified, set Ready=True, and cause no backend write when synced again;
// a valid gateway change must update the backend; the delete must release
// the finalizer.
// Run it with: go test ./internal/controller/network -run '^$' -fuzz FuzzSyncSpec
func FuzzSyncSpec(f *testing.F) {
	for _, s := range [][3]string{
		{"192.168.0.0/16", "192.168.0.1", "192.168.1.1"},
		{"192.168.0.0/16", "192.168.0.1", "10.0.0.1"},
		{"10.0.0.1/8", "10.0.0.2", "10.0.0.3"},
		{"fd00:10::/64", "fd00:10::1", "FD00:10::2"},
		{"fd00:10::/64", "fd00:10::1", "fd00:10::0:1"},
		{"0.0.0.0/0", "10.0.0.1", "::1"},
		{"", "", ""},
		{"::ffff:10.0.0.0/104", "10.0.0.1", "10.0.0.2"},
		{"fe80::%eth0/64", "fe80::1", "fe80::2"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	handlertest.Quiet(f)
	backend := &specBackend{}
	c := newFuzzController(f, backend)
	// The tracker of NewClientset needs the type's apply schema, which
	// generated code for custom resources does not have.
	c.client = fake.NewSimpleClientset() //nolint:staticcheck // see above
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, cidr, gateway, gateway2 string) {
		backend.reset()
		net := &samplecrdv1.Network{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "net", UID: "uid-1", Generation: 1, Finalizers: []string{Finalizer}},
			Spec:       samplecrdv1.NetworkSpec{CIDR: cidr, Gateway: gateway},
		}
		client := c.client.SamplecrdV1().Networks("ns")
		if _, err := client.Create(ctx, net, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		key := cache.MetaObjectToName(net)
		defer func() {
			_ = client.Delete(ctx, "net", metav1.DeleteOptions{})
			_ = c.indexer.Delete(net)
		}()
		// sync runs the controller's sync on the stored Network, as the
		// informer would deliver it.
		sync := func(mutate func(n *samplecrdv1.Network)) *samplecrdv1.Network {
			t.Helper()
			cur, err := client.Get(ctx, "net", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if mutate != nil {
				mutate(cur)
				if cur, err = client.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.indexer.Update(cur); err != nil {
				t.Fatal(err)
			}
			if err := c.sync(ctx, key); err != nil {
				t.Fatalf("sync of %+v: %v", cur.Spec, err)
			}
			after, err := client.Get(ctx, "net", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			return after
		}
		checkReady := func(n *samplecrdv1.Network, valid bool) {
			t.Helper()
			cond := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
			switch {
			case cond == nil:
				t.Fatalf("no Ready condition for spec %+v", n.Spec)
			case valid && (cond.Status != metav1.ConditionTrue || n.Status.ObservedGeneration != n.Generation || n.Status.SubnetID == ""):
				t.Fatalf("valid spec %+v: status %+v", n.Spec, n.Status)
			case !valid && (cond.Status != metav1.ConditionFalse || cond.Reason != samplecrdv1.ReasonInvalidSpec):
				t.Fatalf("invalid spec %+v: Ready = %+v, want False InvalidSpec", n.Spec, cond)
			}
		}

		valid := samplecrdv1.ValidateSpec(net.Spec) == nil
		n := sync(nil)
		checkReady(n, valid)
		want := map[string]int{}
		if valid {
			want["create"] = 1
			if got, ok := backend.get(net.UID); !ok || got.CIDR != cidr || got.Gateway != gateway {
				t.Fatalf("backend holds %+v (%v) for spec %+v", got, ok, net.Spec)
			}
		}
		backend.expect(t, want)

		// Converged: syncing again writes nothing.
		checkReady(sync(nil), valid)
		backend.expect(t, want)

		// A new gateway.
		valid2 := samplecrdv1.ValidateSpec(samplecrdv1.NetworkSpec{CIDR: cidr, Gateway: gateway2}) == nil
		n = sync(func(n *samplecrdv1.Network) { n.Spec.Gateway = gateway2; n.Generation = 2 })
		checkReady(n, valid2)
		if valid2 {
			switch {
			case !valid: // first provisioned now
				want["create"] = 1
			case !SameIP(gateway, gateway2):
				want["updateGateway"] = 1
			}
			if got, ok := backend.get(net.UID); !ok || got.Gateway != gateway2 || want["create"] != 1 {
				t.Fatalf("backend holds %+v (%v) after the gateway change to %q (first spec valid: %v)", got, ok, gateway2, valid)
			}
		}
		backend.expect(t, want)

		// Delete: the backend network goes, then the finalizer.
		now := metav1.Now()
		n = sync(func(n *samplecrdv1.Network) { n.DeletionTimestamp = &now })
		if n != nil && len(n.Finalizers) != 0 {
			t.Fatalf("finalizers %v left after the delete", n.Finalizers)
		}
		if _, ok := backend.get(net.UID); ok {
			t.Fatalf("backend network left after the delete")
		}
	})
}

// specBackend is a Backend in memory that counts writes and fails the test
// (through expect) when it is asked to create an invalid spec.
type specBackend struct {
	mu      sync.Mutex
	nets    map[types.UID]Network
	calls   map[string]int
	invalid []string
}

func (b *specBackend) Project() string { return "fuzz" }

func (b *specBackend) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nets, b.calls, b.invalid = map[types.UID]Network{}, map[string]int{}, nil
}

func (b *specBackend) get(uid types.UID) (Network, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.nets[uid]
	return n, ok
}

// expect fails t unless the writes are exactly want and every write was valid.
func (b *specBackend) expect(t *testing.T, want map[string]int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.invalid) > 0 {
		t.Fatalf("invalid specs reached the backend: %v", b.invalid)
	}
	for _, op := range []string{"create", "updateGateway", "delete"} {
		if b.calls[op] != want[op] {
			t.Fatalf("backend %s calls = %d, want %d (all calls: %v)", op, b.calls[op], want[op], b.calls)
		}
	}
}

func (b *specBackend) Get(_ context.Context, uid types.UID) (*Network, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.nets[uid]
	if !ok {
		return nil, fmt.Errorf("uid %s: %w", uid, ErrNotFound)
	}
	return &n, nil
}

func (b *specBackend) Create(_ context.Context, d Network) (*Network, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls["create"]++
	if err := samplecrdv1.ValidateSpec(samplecrdv1.NetworkSpec{CIDR: d.CIDR, Gateway: d.Gateway}); err != nil {
		b.invalid = append(b.invalid, fmt.Sprintf("create %+v: %v", d, err))
	}
	// Stored the way a backend returns it: parsed and printed again.
	if p, err := netip.ParsePrefix(d.CIDR); err == nil {
		d.CIDR = p.String()
	}
	d.NetworkID, d.SubnetID = "net-"+string(d.UID), "subnet-"+string(d.UID)
	b.nets[d.UID] = d
	return &d, nil
}

func (b *specBackend) CreateNew(ctx context.Context, d Network) (*Network, error) {
	b.mu.Lock()
	_, exists := b.nets[d.UID]
	b.mu.Unlock()
	if exists {
		return nil, Permanent("create new", samplecrdv1.ReasonBackendRejected, fmt.Errorf("uid %s exists already", d.UID))
	}
	return b.Create(ctx, d)
}

// Update is UpdateGateway: the fuzzed specs set no settings.
func (b *specBackend) Update(ctx context.Context, cur, desired Network) (*Network, error) {
	return b.UpdateGateway(ctx, cur, desired.Gateway)
}

func (b *specBackend) UpdateGateway(_ context.Context, cur Network, gateway string) (*Network, error) {
	uid := cur.UID
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls["updateGateway"]++
	n, ok := b.nets[uid]
	if !ok {
		return nil, fmt.Errorf("uid %s: %w", uid, ErrNotFound)
	}
	if err := samplecrdv1.ValidateSpec(samplecrdv1.NetworkSpec{CIDR: n.CIDR, Gateway: gateway}); err != nil {
		b.invalid = append(b.invalid, fmt.Sprintf("update gateway of %+v to %q: %v", n, gateway, err))
	}
	n.Gateway = gateway
	b.nets[uid] = n
	return &n, nil
}

func (b *specBackend) Delete(_ context.Context, n Network) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.nets[n.UID]; ok {
		b.calls["delete"]++
		delete(b.nets, n.UID)
	}
	return nil
}

func (b *specBackend) List(context.Context) ([]Network, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Network, 0, len(b.nets))
	for _, n := range b.nets {
		out = append(out, n)
	}
	return out, nil
}

// Import is counted: the fuzzed specs never import.
func (b *specBackend) Import(_ context.Context, d Network, ref Ref, _ bool) (*Network, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls["import"]++
	return nil, fmt.Errorf("import %s: %w", ref, ErrNotFound)
}

func (b *specBackend) Detach(context.Context, Network) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls["detach"]++
	return nil
}

// Observe is counted when it has something to read: the fuzzed specs never
// import.
func (b *specBackend) Observe(_ context.Context, want []Network) ([]Network, error) {
	if len(want) == 0 {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls["observe"]++
	return nil, nil
}
