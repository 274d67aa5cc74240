// Package backendtest is the conformance test of network.Backend: every
// backend runs it from its own tests,
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backendtest.Setup {
//			return backendtest.Setup{Backend: memory.New(), ...}
//		})
//	}
//
// so the controller can rely on the same behaviour from all of them.
package backendtest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Setup is a fresh, empty backend and the hooks the suite needs to reach
// around it.
type Setup struct {
	// Backend is the backend under test. It must be empty.
	Backend network.Backend

	// AddForeign adds, behind the backend's back, a network and subnet that
	// the controller did not create (as an operator or another tool would),
	// with the given name and tags, and returns an ID for ForeignIntact.
	AddForeign func(t *testing.T, name, cidr, gateway string, tags ...string) string
	// ForeignIntact returns an error unless the foreign network id still
	// exists with its subnet, cidr and gateway unchanged.
	ForeignIntact func(t *testing.T, id, cidr, gateway string) error

	// InterruptNextCreate, if set, makes the next Create fail after it
	// created the network but before it created the subnet (a crash or
	// timeout half-way).
	InterruptNextCreate func(t *testing.T)

	// Writes, if set, returns the number of write requests the backend has
	// made so far, to check that idempotent calls write nothing.
	Writes func() int

	// AddRouter, if set, adds a router the backend's project can use, named
	// name, and returns its ID.
	AddRouter func(t *testing.T, name string) string
	// ForeignRouter, if set, returns the ID of a router the backend's
	// project cannot use (another project's).
	ForeignRouter func(t *testing.T) string

	// AddSubnetPool, if set, adds a subnet pool the backend's project can
	// take ranges from (Neutron: a shared one of the admin's), named name,
	// over prefix, of subnets /defaultLength by default, and returns its ID.
	AddSubnetPool func(t *testing.T, name, prefix string, defaultLength int) string

	// RejectsOverlap says the backend is configured to reject a CIDR that
	// overlaps another network's (a shared address scope).
	RejectsOverlap bool
}

// Run runs the conformance suite; newSetup is called once per subtest.
func Run(t *testing.T, newSetup func(t *testing.T) Setup) {
	for _, tc := range []struct {
		name string
		test func(t *testing.T, ctx context.Context, s Setup)
	}{
		{"GetMissing", testGetMissing},
		{"CreateAndGet", testCreateAndGet},
		{"CreateIPv6", testCreateIPv6},
		{"CreateIsIdempotentByUID", testCreateIdempotent},
		{"CreateCompletesInterruptedCreate", testCreateCompletes},
		{"CreateNewThenCreateFindsIt", testCreateNew},
		{"UpdateGateway", testUpdateGateway},
		{"UpdateGatewayMissing", testUpdateGatewayMissing},
		{"Ensure", testEnsure},
		{"Delete", testDelete},
		{"DeleteAbsent", testDeleteAbsent},
		{"DeleteInterruptedCreate", testDeleteInterrupted},
		{"ListOursOnly", testListOursOnly},
		{"ForeignUntouched", testForeignUntouched},
		{"OverlappingCIDR", testOverlap},
		{"Concurrent", testConcurrent},
		{"CancelledContext", testCancelled},
		{"ImportUnmanagedOnlyReads", testImportUnmanaged},
		{"ImportManagedAdopts", testImportManaged},
		{"ImportPicksTheSubnetOfTheCIDR", testImportCIDR},
		{"ImportMissing", testImportMissing},
		{"ImportNeverSteals", testImportNeverSteals},
		{"ImportByExactFilter", testImportFilter},
		{"DetachLeavesTheNetwork", testDetach},
		{"ObserveReadsWhatImportReads", testObserve},
		{"ObservationsAreWhatTheNextScanReads", testObservations},
		{"SettingsAtCreate", testSettingsAtCreate},
		{"SettingsUpdatedInPlace", testSettingsUpdated},
		{"SettingsRefused", testSettingsRefused},
		{"RouterAttachedAndDetached", testRouter},
		{"RouterMissingOrNotUsable", testRouterMissing},
		{"SubnetPoolAllocatesUntilExhausted", testSubnetPool},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			s := newSetup(t)
			if s.Backend == nil {
				t.Fatal("Setup.Backend is nil")
			}
			tc.test(t, ctx, s)
		})
	}
}

func desired(i int, cidr, gateway string) network.Network {
	return network.Network{
		UID:       uuid.NewUUID(),
		Namespace: "ns-" + fmt.Sprint(i%3),
		Name:      fmt.Sprintf("net-%d", i),
		CIDR:      cidr,
		Gateway:   gateway,
	}
}

func mustCreate(t *testing.T, ctx context.Context, b network.Backend, d network.Network) *network.Network {
	t.Helper()
	got, err := b.Create(ctx, d)
	if err != nil {
		t.Fatalf("Create(%v): %v", d, err)
	}
	return got
}

// checkMatches fails unless got is the complete backend network of d.
func checkMatches(t *testing.T, what string, got *network.Network, d network.Network) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil network", what)
	}
	if got.UID != d.UID || got.NetworkID == "" || got.SubnetID == "" ||
		!network.SameCIDR(got.CIDR, d.CIDR) || !network.SameIP(got.Gateway, d.Gateway) {
		t.Fatalf("%s = %+v, want uid %s, cidr %s, gateway %s and both IDs set", what, *got, d.UID, d.CIDR, d.Gateway)
	}
	if got.Namespace != d.Namespace || got.Name != d.Name {
		t.Fatalf("%s: namespace/name = %s/%s, want %s/%s", what, got.Namespace, got.Name, d.Namespace, d.Name)
	}
}

func checkNotFound(t *testing.T, ctx context.Context, b network.Backend, uid types.UID) {
	t.Helper()
	got, err := b.Get(ctx, uid)
	if !network.IsNotFound(err) {
		t.Fatalf("Get(%s) = %+v, %v; want an error wrapping ErrNotFound", uid, got, err)
	}
	if network.IsPermanent(err) {
		t.Fatalf("Get(%s): not-found error is classified permanent: %v", uid, err)
	}
}

func listUIDs(t *testing.T, ctx context.Context, b network.Backend) []types.UID {
	t.Helper()
	list, err := b.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	uids := make([]types.UID, 0, len(list))
	for _, n := range list {
		uids = append(uids, n.UID)
	}
	slices.Sort(uids)
	return uids
}

// createInterrupted creates d with InterruptNextCreate armed, so that the
// backend is left with d's network and no subnet; it skips t when the backend
// cannot interrupt a Create.
func createInterrupted(t *testing.T, ctx context.Context, s Setup, d network.Network) {
	t.Helper()
	if s.InterruptNextCreate == nil {
		t.Skip("the backend cannot interrupt a Create")
	}
	s.InterruptNextCreate(t)
	if got, err := s.Backend.Create(ctx, d); err == nil {
		t.Fatalf("interrupted Create succeeded: %+v", got)
	}
}

func writes(s Setup) int {
	if s.Writes == nil {
		return 0
	}
	return s.Writes()
}

func testGetMissing(t *testing.T, ctx context.Context, s Setup) {
	checkNotFound(t, ctx, s.Backend, uuid.NewUUID())
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != 0 {
		t.Fatalf("List of an empty backend = %v", uids)
	}
}

func testCreateAndGet(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "192.168.0.0/16", "192.168.0.1")
	created := mustCreate(t, ctx, s.Backend, d)
	checkMatches(t, "Create", created, d)
	got, err := s.Backend.Get(ctx, d.UID)
	if err != nil {
		t.Fatalf("Get after Create: %v", err)
	}
	checkMatches(t, "Get", got, d)
	if got.NetworkID != created.NetworkID || got.SubnetID != created.SubnetID {
		t.Fatalf("Get = %+v, Create returned %+v", *got, *created)
	}
	if uids := listUIDs(t, ctx, s.Backend); !slices.Equal(uids, []types.UID{d.UID}) {
		t.Fatalf("List = %v, want [%s]", uids, d.UID)
	}
}

func testCreateIPv6(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "fd00:10::/64", "fd00:10::1")
	checkMatches(t, "Create", mustCreate(t, ctx, s.Backend, d), d)
	got, err := s.Backend.Get(ctx, d.UID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	checkMatches(t, "Get", got, d)
}

func testCreateIdempotent(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.1.0.0/16", "10.1.0.1")
	first := mustCreate(t, ctx, s.Backend, d)
	if first.Existed {
		t.Errorf("Create of a new network says it existed: %+v", *first)
	}
	before := writes(s)
	again := mustCreate(t, ctx, s.Backend, d)
	if again.NetworkID != first.NetworkID || again.SubnetID != first.SubnetID {
		t.Fatalf("second Create made another network: %+v, first %+v", *again, *first)
	}
	if !again.Existed {
		t.Errorf("second Create, which created nothing, does not say the network existed: %+v", *again)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("second Create of a complete network wrote %d times, want 0", w)
	}
	// A Create with another gateway returns what exists, unchanged.
	other := d
	other.Gateway = "10.1.0.254"
	third := mustCreate(t, ctx, s.Backend, other)
	if third.NetworkID != first.NetworkID || !network.SameIP(third.Gateway, d.Gateway) {
		t.Fatalf("Create with another gateway = %+v, want the existing network unchanged", *third)
	}
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != 1 {
		t.Fatalf("List after three Creates of one UID = %v, want one", uids)
	}
}

func testCreateNew(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.7.0.0/16", "10.7.0.1")
	got, err := s.Backend.CreateNew(ctx, d)
	if err != nil {
		t.Fatalf("CreateNew(%v): %v", d, err)
	}
	checkMatches(t, "CreateNew", got, d)
	if g, err := s.Backend.Get(ctx, d.UID); err != nil || g.NetworkID != got.NetworkID || g.SubnetID != got.SubnetID {
		t.Fatalf("Get after CreateNew = %+v, %v; want %+v", g, err, *got)
	}
	// A retry that cannot know what the first attempt did calls Create:
	// it finds the network, and creates nothing.
	before := writes(s)
	again := mustCreate(t, ctx, s.Backend, d)
	if again.NetworkID != got.NetworkID || again.SubnetID != got.SubnetID {
		t.Fatalf("Create after CreateNew made another network: %+v, first %+v", *again, *got)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("Create after CreateNew wrote %d times, want 0", w)
	}
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != 1 {
		t.Fatalf("List after CreateNew and Create of one UID = %v, want one", uids)
	}
}

func testCreateCompletes(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.2.0.0/16", "10.2.0.1")
	createInterrupted(t, ctx, s, d)
	partial, err := s.Backend.Get(ctx, d.UID)
	if err != nil {
		t.Fatalf("Get after an interrupted Create: %v (want the network without subnet)", err)
	}
	if partial.NetworkID == "" || partial.SubnetID != "" {
		t.Fatalf("Get after an interrupted Create = %+v, want a network without subnet", *partial)
	}
	if uids := listUIDs(t, ctx, s.Backend); !slices.Equal(uids, []types.UID{d.UID}) {
		t.Fatalf("List after an interrupted Create = %v, want [%s] (so it can be garbage-collected)", uids, d.UID)
	}
	got := mustCreate(t, ctx, s.Backend, d)
	checkMatches(t, "Create after an interrupted Create", got, d)
	if got.NetworkID != partial.NetworkID {
		t.Fatalf("Create made network %s instead of completing %s", got.NetworkID, partial.NetworkID)
	}
	// Ensure does the same from the partial state.
	d2 := desired(2, "10.3.0.0/16", "10.3.0.1")
	createInterrupted(t, ctx, s, d2)
	got2, action, err := network.Ensure(ctx, s.Backend, d2, nil, false)
	if err != nil || action != network.ActionCreated {
		t.Fatalf("Ensure after an interrupted Create = %v, %q; want created", err, action)
	}
	checkMatches(t, "Ensure after an interrupted Create", got2, d2)
}

func testUpdateGateway(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.4.0.0/16", "10.4.0.1")
	created := mustCreate(t, ctx, s.Backend, d)
	d.Gateway = "10.4.255.254"
	got, err := s.Backend.UpdateGateway(ctx, *created, d.Gateway)
	if err != nil {
		t.Fatalf("UpdateGateway: %v", err)
	}
	checkMatches(t, "UpdateGateway", got, d)
	if got.NetworkID != created.NetworkID || got.SubnetID != created.SubnetID {
		t.Fatalf("UpdateGateway replaced the network: %+v, was %+v", *got, *created)
	}
	if got, err = s.Backend.Get(ctx, d.UID); err != nil {
		t.Fatalf("Get: %v", err)
	}
	checkMatches(t, "Get after UpdateGateway", got, d)
	before := writes(s)
	if _, err := s.Backend.UpdateGateway(ctx, network.Network{UID: d.UID}, d.Gateway); err != nil {
		t.Fatalf("UpdateGateway (by UID alone) to the same gateway: %v", err)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("UpdateGateway to the current gateway wrote %d times, want 0", w)
	}
}

func testUpdateGatewayMissing(t *testing.T, ctx context.Context, s Setup) {
	_, err := s.Backend.UpdateGateway(ctx, network.Network{UID: uuid.NewUUID()}, "10.0.0.1")
	if !network.IsNotFound(err) {
		t.Fatalf("UpdateGateway of a missing network = %v, want ErrNotFound", err)
	}
	// By the IDs of a network deleted since: not found either.
	d := desired(1, "10.4.0.0/16", "10.4.0.1")
	created := mustCreate(t, ctx, s.Backend, d)
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backend.UpdateGateway(ctx, *created, "10.4.0.2"); !network.IsNotFound(err) {
		t.Fatalf("UpdateGateway by the IDs of a deleted network = %v, want ErrNotFound", err)
	}
}

func testEnsure(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.5.0.0/16", "10.5.0.1")
	got, action, err := network.Ensure(ctx, s.Backend, d, nil, true)
	if err != nil || action != network.ActionCreated {
		t.Fatalf("Ensure of a network never created = %v, %q; want created", err, action)
	}
	checkMatches(t, "Ensure", got, d)
	before := writes(s)
	if _, action, err = network.Ensure(ctx, s.Backend, d, got, false); err != nil || action != network.ActionNone {
		t.Fatalf("Ensure of an up-to-date network = %v, %q; want nothing done", err, action)
	}
	// Not knowing it (a crash before its result was recorded): found, not
	// created again.
	again, _, err := network.Ensure(ctx, s.Backend, d, nil, false)
	if err != nil || again.NetworkID != got.NetworkID || again.SubnetID != got.SubnetID {
		t.Fatalf("Ensure of an existing network not known = %+v, %v; want %+v", again, err, got)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("Ensure of an up-to-date network wrote %d times, want 0", w)
	}
	d.Gateway = "10.5.0.254"
	if got, action, err = network.Ensure(ctx, s.Backend, d, got, false); err != nil || action != network.ActionUpdated {
		t.Fatalf("Ensure with a new gateway = %v, %q; want updated", err, action)
	}
	checkMatches(t, "Ensure with a new gateway", got, d)
	d.CIDR, d.Gateway = "10.6.0.0/16", "10.6.0.1"
	_, _, err = network.Ensure(ctx, s.Backend, d, got, false)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonCIDRMismatch {
		t.Fatalf("Ensure with another cidr = %v, want a permanent %s error", err, samplecrdv1.ReasonCIDRMismatch)
	}
}

func testDelete(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.7.0.0/16", "10.7.0.1")
	keep := desired(2, "10.8.0.0/16", "10.8.0.1")
	mustCreate(t, ctx, s.Backend, d)
	mustCreate(t, ctx, s.Backend, keep)
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkNotFound(t, ctx, s.Backend, d.UID)
	if uids := listUIDs(t, ctx, s.Backend); !slices.Equal(uids, []types.UID{keep.UID}) {
		t.Fatalf("List after Delete = %v, want [%s]", uids, keep.UID)
	}
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	// Deleting by UID alone (as garbage collection of a List entry may).
	if err := s.Backend.Delete(ctx, network.Network{UID: keep.UID}); err != nil {
		t.Fatalf("Delete by UID: %v", err)
	}
	checkNotFound(t, ctx, s.Backend, keep.UID)
	// The CIDR is free again.
	mustCreate(t, ctx, s.Backend, desired(3, "10.7.0.0/16", "10.7.0.1"))
}

func testDeleteAbsent(t *testing.T, ctx context.Context, s Setup) {
	if err := s.Backend.Delete(ctx, desired(1, "10.9.0.0/16", "10.9.0.1")); err != nil {
		t.Fatalf("Delete of a network that never existed: %v", err)
	}
	if err := s.Backend.Delete(ctx, network.Network{UID: uuid.NewUUID()}); err != nil {
		t.Fatalf("Delete by UID of a network that never existed: %v", err)
	}
}

func testDeleteInterrupted(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.10.0.0/16", "10.10.0.1")
	createInterrupted(t, ctx, s, d)
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatalf("Delete of an interrupted Create: %v", err)
	}
	checkNotFound(t, ctx, s.Backend, d.UID)
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != 0 {
		t.Fatalf("List after deleting = %v", uids)
	}
}

func testListOursOnly(t *testing.T, ctx context.Context, s Setup) {
	var want []types.UID
	byUID := map[types.UID]network.Network{}
	for i := range 3 {
		d := desired(i, fmt.Sprintf("10.%d.0.0/16", 20+i), fmt.Sprintf("10.%d.0.1", 20+i))
		mustCreate(t, ctx, s.Backend, d)
		want = append(want, d.UID)
		byUID[d.UID] = d
	}
	slices.Sort(want)
	if s.AddForeign != nil {
		s.AddForeign(t, "operator-net", "172.16.0.0/24", "172.16.0.1")
		s.AddForeign(t, network.DisplayName("ns-0", "net-0"), "172.16.1.0/24", "172.16.1.1")
	}
	list, err := s.Backend.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var got []types.UID
	for _, n := range list {
		got = append(got, n.UID)
		checkMatches(t, "List entry", &n, byUID[n.UID])
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want exactly %v", got, want)
	}
}

func testForeignUntouched(t *testing.T, ctx context.Context, s Setup) {
	if s.AddForeign == nil || s.ForeignIntact == nil {
		t.Skip("the backend cannot hold foreign networks")
	}
	d := desired(1, "10.30.0.0/16", "10.30.0.1")
	// A foreign network with the very name ours gets: names never identify.
	sameName := s.AddForeign(t, network.DisplayName(d.Namespace, d.Name), "172.17.0.0/24", "172.17.0.1")
	other := s.AddForeign(t, "operator-net", "172.17.1.0/24", "172.17.1.1")
	checkNotFound(t, ctx, s.Backend, d.UID)

	created := mustCreate(t, ctx, s.Backend, d)
	checkMatches(t, "Create next to a foreign network of the same name", created, d)
	if _, err := s.Backend.UpdateGateway(ctx, *created, "10.30.0.2"); err != nil {
		t.Fatalf("UpdateGateway: %v", err)
	}
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.Backend.Delete(ctx, network.Network{UID: uuid.NewUUID(), Namespace: d.Namespace, Name: d.Name}); err != nil {
		t.Fatalf("Delete of an absent network: %v", err)
	}
	for _, f := range []struct{ id, cidr, gw string }{{sameName, "172.17.0.0/24", "172.17.0.1"}, {other, "172.17.1.0/24", "172.17.1.1"}} {
		if err := s.ForeignIntact(t, f.id, f.cidr, f.gw); err != nil {
			t.Fatalf("foreign network %s was touched: %v", f.id, err)
		}
	}
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != 0 {
		t.Fatalf("List = %v, want no network (foreign ones are not ours)", uids)
	}
}

func testOverlap(t *testing.T, ctx context.Context, s Setup) {
	if !s.RejectsOverlap {
		t.Skip("the backend allows overlapping CIDRs")
	}
	a := desired(1, "10.40.0.0/16", "10.40.0.1")
	mustCreate(t, ctx, s.Backend, a)
	b := desired(2, "10.40.128.0/17", "10.40.128.1")
	_, err := s.Backend.Create(ctx, b)
	if err == nil || !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonCIDROverlap {
		t.Fatalf("Create of an overlapping cidr = %v, want a permanent %s error", err, samplecrdv1.ReasonCIDROverlap)
	}
	if err := s.Backend.Delete(ctx, b); err != nil {
		t.Fatalf("Delete of the rejected network: %v", err)
	}
	checkNotFound(t, ctx, s.Backend, b.UID)
	if err := s.Backend.Delete(ctx, a); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	mustCreate(t, ctx, s.Backend, b) // no longer overlaps
}

func testConcurrent(t *testing.T, ctx context.Context, s Setup) {
	const n = 8
	nets := make([]network.Network, n)
	for i := range nets {
		nets[i] = desired(i, fmt.Sprintf("10.%d.0.0/16", 100+i), fmt.Sprintf("10.%d.0.1", 100+i))
	}
	run := func(f func(d network.Network) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range nets {
			wg.Go(func() { errs[i] = f(nets[i]) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	run(func(d network.Network) error { _, err := s.Backend.Create(ctx, d); return err })
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != n {
		t.Fatalf("List after %d concurrent Creates = %d networks", n, len(uids))
	}
	run(func(d network.Network) error {
		_, err := s.Backend.UpdateGateway(ctx, network.Network{UID: d.UID}, d.Gateway[:len(d.Gateway)-1]+"2")
		return err
	})
	run(func(d network.Network) error { return s.Backend.Delete(ctx, d) })
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != 0 {
		t.Fatalf("List after concurrent Deletes = %v", uids)
	}
}

func testCancelled(t *testing.T, ctx context.Context, s Setup) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	d := desired(1, "10.50.0.0/16", "10.50.0.1")
	if _, err := s.Backend.Create(cctx, d); err == nil || network.IsPermanent(err) {
		t.Fatalf("Create with a cancelled context = %v, want a transient error", err)
	}
	dctx, cancel2 := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel2()
	<-dctx.Done()
	if _, err := s.Backend.List(dctx); err == nil || network.IsPermanent(err) {
		t.Fatalf("List past its deadline = %v, want a transient error", err)
	}
	checkNotFound(t, ctx, s.Backend, d.UID)
}

// foreign adds a foreign network for an import test, skipping t when the
// backend cannot hold one.
func foreign(t *testing.T, s Setup, name, cidr, gateway string, tags ...string) string {
	t.Helper()
	if s.AddForeign == nil || s.ForeignIntact == nil {
		t.Skip("the backend cannot hold foreign networks")
	}
	return s.AddForeign(t, name, cidr, gateway, tags...)
}

func testImportUnmanaged(t *testing.T, ctx context.Context, s Setup) {
	id := foreign(t, s, "provider", "172.18.0.0/24", "172.18.0.1")
	d := desired(1, "", "")
	before := writes(s)
	for i := range 2 {
		got, err := s.Backend.Import(ctx, d, network.Ref{NetworkID: id}, false)
		if err != nil {
			t.Fatalf("Import #%d: %v", i, err)
		}
		checkMatches(t, "Import", got, network.Network{UID: d.UID, Namespace: d.Namespace, Name: d.Name, CIDR: "172.18.0.0/24", Gateway: "172.18.0.1"})
		if got.NetworkID != id {
			t.Fatalf("Import returned network %s, want %s", got.NetworkID, id)
		}
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("an Unmanaged import made %d writes, want none", w)
	}
	checkNotFound(t, ctx, s.Backend, d.UID)
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != 0 {
		t.Fatalf("List = %v, want nothing: an observed network is not ours", uids)
	}
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.ForeignIntact(t, id, "172.18.0.0/24", "172.18.0.1"); err != nil {
		t.Fatalf("the observed network was touched: %v", err)
	}
}

func testImportManaged(t *testing.T, ctx context.Context, s Setup) {
	id := foreign(t, s, "made-by-terraform", "172.18.1.0/24", "172.18.1.1")
	d := desired(1, "172.18.1.0/24", "172.18.1.1")
	got, err := s.Backend.Import(ctx, d, network.Ref{NetworkID: id}, true)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	checkMatches(t, "Import", got, d)
	if got.Existed {
		t.Error("the first adoption says it existed")
	}
	before := writes(s)
	again, err := s.Backend.Import(ctx, d, network.Ref{NetworkID: id}, true)
	if err != nil || !again.Existed || again.NetworkID != id {
		t.Fatalf("Import again = %+v, %v; want the same network, Existed", again, err)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("adopting an adopted network made %d writes, want none", w)
	}
	// Adopted, it is the Network's like one created for it.
	checkMatches(t, "Get of an adopted network", mustGet(t, ctx, s.Backend, d.UID), d)
	if uids := listUIDs(t, ctx, s.Backend); !slices.Equal(uids, []types.UID{d.UID}) {
		t.Fatalf("List = %v, want the adopted %s", uids, d.UID)
	}
	list, _ := s.Backend.List(ctx)
	if len(list) != 1 || list[0].Namespace != d.Namespace || list[0].Name != d.Name {
		t.Fatalf("List = %+v, want it to name %s/%s (garbage collection reads it back)", list, d.Namespace, d.Name)
	}
	if _, err := s.Backend.UpdateGateway(ctx, *got, "172.18.1.254"); err != nil {
		t.Fatalf("UpdateGateway: %v", err)
	}
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkNotFound(t, ctx, s.Backend, d.UID)
	if _, err := s.Backend.Import(ctx, d, network.Ref{NetworkID: id}, false); !network.IsNotFound(err) {
		t.Fatalf("Import after Delete: %v, want not found", err)
	}
}

func testImportCIDR(t *testing.T, ctx context.Context, s Setup) {
	id := foreign(t, s, "provider", "172.18.2.0/24", "172.18.2.1")
	d := desired(1, "172.18.3.0/24", "")
	_, err := s.Backend.Import(ctx, d, network.Ref{NetworkID: id}, false)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected {
		t.Fatalf("Import asking for a cidr the network has no subnet of: %v, want a permanent BackendRejected error", err)
	}
	d.CIDR = "172.18.2.0/24"
	got, err := s.Backend.Import(ctx, d, network.Ref{NetworkID: id}, false)
	if err != nil || got.CIDR != "172.18.2.0/24" {
		t.Fatalf("Import = %+v, %v", got, err)
	}
}

func testImportMissing(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "", "")
	for _, adopt := range []bool{false, true} {
		got, err := s.Backend.Import(ctx, d, network.Ref{NetworkID: "0b7a5f3e-5a1d-4c1e-9a57-2f1f3c0f6d11"}, adopt)
		if !network.IsNotFound(err) || network.IsPermanent(err) {
			t.Fatalf("Import(adopt=%v) of a missing network = %+v, %v; want a transient not-found error", adopt, got, err)
		}
	}
}

func testImportNeverSteals(t *testing.T, ctx context.Context, s Setup) {
	owner := desired(1, "10.31.0.0/24", "10.31.0.1")
	created := mustCreate(t, ctx, s.Backend, owner)
	thief := desired(2, "", "")
	before := writes(s)
	_, err := s.Backend.Import(ctx, thief, network.Ref{NetworkID: created.NetworkID}, true)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected {
		t.Fatalf("adopting another Network's network: %v, want a permanent BackendRejected error", err)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("a refused adoption made %d writes", w)
	}
	checkMatches(t, "the owner's network after a refused adoption", mustGet(t, ctx, s.Backend, owner.UID), owner)
	checkNotFound(t, ctx, s.Backend, thief.UID)
	// Observing it (Unmanaged) takes nothing.
	if _, err := s.Backend.Import(ctx, thief, network.Ref{NetworkID: created.NetworkID}, false); err != nil {
		t.Fatalf("observing another Network's network: %v", err)
	}
}

func mustGet(t *testing.T, ctx context.Context, b network.Backend, uid types.UID) *network.Network {
	t.Helper()
	got, err := b.Get(ctx, uid)
	if err != nil {
		t.Fatalf("Get(%s): %v", uid, err)
	}
	return got
}

func testImportFilter(t *testing.T, ctx context.Context, s Setup) {
	// Names of the test's own: the backend may be shared.
	name := "app-" + string(uuid.NewUUID())[:8]
	a, b := "tier="+name, "env=prod"
	want := foreign(t, s, name, "172.19.0.0/24", "172.19.0.1", a, b)
	foreign(t, s, name+"-2", "172.19.1.0/24", "172.19.1.1", a, b)                          // shares the prefix
	foreign(t, s, strings.ToUpper(name[:1])+name[1:], "172.19.2.0/24", "172.19.2.1", a, b) // differs in case
	some := foreign(t, s, name, "172.19.3.0/24", "172.19.3.1", a)                          // only some of the tags
	d := desired(1, "", "")
	before := writes(s)
	got, err := s.Backend.Import(ctx, d, network.Ref{Name: name, Tags: []string{a, b}}, false)
	if err != nil || got.NetworkID != want {
		t.Fatalf("Import by name and tags = %+v, %v; want network %s", got, err, want)
	}
	got, err = s.Backend.Import(ctx, d, network.Ref{Tags: []string{b, a}}, false)
	if err == nil || !network.IsPermanent(err) {
		t.Fatalf("Import by tags that three networks carry = %+v, %v; want a permanent error", got, err)
	}
	_, err = s.Backend.Import(ctx, d, network.Ref{Name: name}, true)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected ||
		!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), some) {
		t.Fatalf("Import by a name two networks have: %v; want a permanent BackendRejected error naming %s and %s", err, want, some)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("imports by filter made %d writes, want none", w)
	}
	later := name + "-later"
	if _, err := s.Backend.Import(ctx, d, network.Ref{Name: later}, true); !network.IsNotFound(err) || network.IsPermanent(err) {
		t.Fatalf("Import of a network not there yet: %v; want a transient not-found error", err)
	}
	id := foreign(t, s, later, "172.19.4.0/24", "172.19.4.1")
	if got, err := s.Backend.Import(ctx, d, network.Ref{Name: later}, true); err != nil || got.NetworkID != id {
		t.Fatalf("Import once it is there = %+v, %v; want network %s", got, err, id)
	}
}

func testDetach(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.32.0.0/24", "10.32.0.1")
	created := mustCreate(t, ctx, s.Backend, d)
	if err := s.Backend.Detach(ctx, d); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	checkNotFound(t, ctx, s.Backend, d.UID)
	if uids := listUIDs(t, ctx, s.Backend); len(uids) != 0 {
		t.Fatalf("List = %v after Detach, want nothing (garbage collection would delete it)", uids)
	}
	before := writes(s)
	if err := s.Backend.Detach(ctx, d); err != nil {
		t.Fatalf("Detach again: %v", err)
	}
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatalf("Delete after Detach: %v", err)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("Detach and Delete of a detached network made %d writes, want none", w)
	}
	got, err := s.Backend.Import(ctx, desired(2, "", ""), network.Ref{NetworkID: created.NetworkID}, false)
	if err != nil || got.SubnetID != created.SubnetID || got.CIDR != d.CIDR || got.Gateway != d.Gateway {
		t.Fatalf("the detached network = %+v, %v; want it left as it was (%+v)", got, err, *created)
	}
	// Nobody's now, it can be adopted again.
	again := desired(3, "", "")
	if _, err := s.Backend.Import(ctx, again, network.Ref{NetworkID: created.NetworkID}, true); err != nil {
		t.Fatalf("adopting the detached network: %v", err)
	}
	if err := s.Backend.Delete(ctx, again); err != nil {
		t.Fatalf("Delete: %v", err)
	}
}

// testObserve: Observe returns, for each bound Unmanaged Network, what
// Import without adopt returns, leaves out what Import would fail on (a
// network gone, no subnet of the spec's cidr), and writes nothing.
func testObserve(t *testing.T, ctx context.Context, s Setup) {
	if got, err := s.Backend.Observe(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("Observe of nothing = %+v, %v", got, err)
	}
	a := foreign(t, s, "observed-a", "172.22.0.0/24", "172.22.0.1")
	b := foreign(t, s, "observed-b", "172.22.1.0/24", "172.22.1.1")
	owner := desired(9, "10.33.0.0/24", "10.33.0.1")
	theirs := mustCreate(t, ctx, s.Backend, owner) // another Network's: observed all the same
	var want []network.Network
	bind := func(i int, id, cidr string) network.Network {
		d := desired(i, cidr, "")
		got, err := s.Backend.Import(ctx, d, network.Ref{NetworkID: id}, false)
		if err != nil {
			t.Fatalf("Import(%s): %v", id, err)
		}
		d.NetworkID = got.NetworkID
		want = append(want, d)
		return *got
	}
	imported := map[types.UID]network.Network{}
	for i, id := range []string{a, b, theirs.NetworkID, a} { // a twice: two Networks observe it
		n := bind(i, id, "")
		imported[n.UID] = n
	}
	// A Network whose network is gone, and one whose cidr the network has
	// no subnet of: left out.
	gone := desired(5, "", "")
	gone.NetworkID = "0b7a5f3e-5a1d-4c1e-9a57-2f1f3c0f6d12"
	wrongCIDR := desired(6, "172.22.9.0/24", "")
	wrongCIDR.NetworkID = b
	want = append(want, gone, wrongCIDR)
	before := writes(s)
	got, err := s.Backend.Observe(ctx, want)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("Observe made %d writes, want none", w)
	}
	seen := map[types.UID]bool{}
	for _, n := range got {
		seen[n.UID] = true
		imp, ok := imported[n.UID]
		if !ok {
			t.Errorf("Observe returned %+v, which Import would not bind", n)
			continue
		}
		if n.NetworkID != imp.NetworkID || n.SubnetID != imp.SubnetID || n.CIDR != imp.CIDR || n.Gateway != imp.Gateway ||
			n.Namespace != imp.Namespace || n.Name != imp.Name {
			t.Errorf("Observe = %+v, Import returned %+v", n, imp)
		}
	}
	if len(seen) != len(imported) || len(got) != len(imported) {
		t.Fatalf("Observe returned %d networks (%v), want the %d imported ones once each", len(got), seen, len(imported))
	}
	if err := s.ForeignIntact(t, a, "172.22.0.0/24", "172.22.0.1"); err != nil {
		t.Fatalf("an observed network was touched: %v", err)
	}
}

// testObservations: every method that returns a network returns what the
// Network's status shows of it (Observed, ObservedSubnet), exactly as the
// next scan (List, or Observe for an Unmanaged Network) reads it, so that
// status written from one is not written again after the scan; and those
// observations say what the network is.
func testObservations(t *testing.T, ctx context.Context, s Setup) {
	scanned := func(uid types.UID) network.Network {
		t.Helper()
		list, err := s.Backend.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, n := range list {
			if n.UID == uid {
				return n
			}
		}
		t.Fatalf("List lacks %s", uid)
		return network.Network{}
	}
	same := func(what string, got, scan network.Network) {
		t.Helper()
		if !equality.Semantic.DeepEqual(got.Observed, scan.Observed) || !equality.Semantic.DeepEqual(got.ObservedSubnet, scan.ObservedSubnet) {
			t.Errorf("%s returned %+v / %+v, the next scan reads %+v / %+v", what, got.Observed, got.ObservedSubnet, scan.Observed, scan.ObservedSubnet)
		}
	}
	check := func(what string, n network.Network, name string) {
		t.Helper()
		o, sub := n.Observed, n.ObservedSubnet
		if o == nil || sub == nil {
			t.Fatalf("%s has no observation: %+v", what, n)
		}
		if o.ID != n.NetworkID || o.Name != name || o.Status == "" || o.AdminStateUp == nil || o.MTU <= 0 || o.RevisionNumber <= 0 ||
			!slices.IsSorted(o.Tags) {
			t.Errorf("%s: network observed as %+v, want ID %s, name %q, a status, admin state, MTU and revision, tags sorted", what, *o, n.NetworkID, name)
		}
		wantVersion := int32(4)
		if strings.Contains(n.CIDR, ":") {
			wantVersion = 6
		}
		if sub.ID != n.SubnetID || sub.CIDR != n.CIDR || sub.GatewayIP != n.Gateway || sub.IPVersion != wantVersion || len(sub.AllocationPools) == 0 {
			t.Errorf("%s: subnet observed as %+v, want ID %s, cidr %s, gateway %s, IPv%d, its pools", what, *sub, n.SubnetID, n.CIDR, n.Gateway, wantVersion)
		}
	}

	d := desired(1, "10.34.0.0/24", "10.34.0.1")
	created := mustCreate(t, ctx, s.Backend, d)
	check("Create", *created, network.DisplayName(d.Namespace, d.Name))
	same("Create", *created, scanned(d.UID))
	updated, err := s.Backend.UpdateGateway(ctx, *created, "10.34.0.254")
	if err != nil {
		t.Fatalf("UpdateGateway: %v", err)
	}
	check("UpdateGateway", *updated, network.DisplayName(d.Namespace, d.Name))
	same("UpdateGateway", *updated, scanned(d.UID))
	if updated.ObservedSubnet.RevisionNumber <= created.ObservedSubnet.RevisionNumber {
		t.Errorf("the subnet's revision went from %d to %d with its gateway's update, want it higher",
			created.ObservedSubnet.RevisionNumber, updated.ObservedSubnet.RevisionNumber)
	}
	if s.AddForeign == nil {
		return
	}

	name := "observed-" + string(uuid.NewUUID())[:8]
	id := s.AddForeign(t, name, "172.24.0.0/24", "172.24.0.1", "team=a")
	obs := desired(2, "", "")
	got, err := s.Backend.Import(ctx, obs, network.Ref{NetworkID: id}, false)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	check("Import (Unmanaged)", *got, name)
	if !slices.Contains(got.Observed.Tags, "team=a") {
		t.Errorf("Import (Unmanaged): tags %v, want the network's own", got.Observed.Tags)
	}
	obs.NetworkID = id
	observed, err := s.Backend.Observe(ctx, []network.Network{obs})
	if err != nil || len(observed) != 1 {
		t.Fatalf("Observe = %+v, %v", observed, err)
	}
	same("Import (Unmanaged)", *got, observed[0])

	adopter := desired(3, "", "")
	adopted, err := s.Backend.Import(ctx, adopter, network.Ref{NetworkID: id}, true)
	if err != nil {
		t.Fatalf("Import (Managed): %v", err)
	}
	check("Import (Managed)", *adopted, name)
	same("Import (Managed)", *adopted, scanned(adopter.UID))
	if adopted.Observed.RevisionNumber <= got.Observed.RevisionNumber {
		t.Errorf("the network's revision went from %d to %d with its adoption, want it higher", got.Observed.RevisionNumber, adopted.Observed.RevisionNumber)
	}
	if err := s.Backend.Delete(ctx, adopter); err != nil {
		t.Fatalf("Delete: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// withSettings returns d with every setting set, valid for a /24 cidr
// whose gateway is its first address.
func withSettings(d network.Network) network.Network {
	p := strings.TrimSuffix(d.CIDR, "0/24")
	d.Settings = network.Settings{
		Description:     ptr("team a's build network"),
		Tags:            []string{"env=ci", "team=a"},
		MTU:             ptr(int32(1400)),
		AdminStateUp:    ptr(false),
		EnableDHCP:      ptr(false),
		DNSNameservers:  []string{p + "53", p + "54"},
		AllocationPools: []samplecrdv1.AllocationPoolSpec{{Start: p + "10", End: p + "99"}},
		HostRoutes:      []samplecrdv1.HostRoute{{Destination: "10.200.0.0/16", Nexthop: p + "254"}},
	}
	return d
}

// checkSettings fails unless got holds every setting d sets, in what it
// returned and in what the next List reads (no drift to repair).
func checkSettings(t *testing.T, ctx context.Context, b network.Backend, what string, got *network.Network, d network.Network) {
	t.Helper()
	if diff := d.Settings.Diff(got.Settings); diff != nil {
		t.Errorf("%s: %v", what, diff)
	}
	list, err := b.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, n := range list {
		if n.UID == d.UID {
			if diff := d.Settings.Diff(n.Settings); diff != nil {
				t.Errorf("%s, then List: %v", what, diff)
			}
			if !equality.Semantic.DeepEqual(got.Observed, n.Observed) || !equality.Semantic.DeepEqual(got.ObservedSubnet, n.ObservedSubnet) {
				t.Errorf("%s returned %+v / %+v, the next scan reads %+v / %+v", what, got.Observed, got.ObservedSubnet, n.Observed, n.ObservedSubnet)
			}
			return
		}
	}
	t.Fatalf("List lacks %s", d.UID)
}

func testSettingsAtCreate(t *testing.T, ctx context.Context, s Setup) {
	d := withSettings(desired(1, "10.41.0.0/24", "10.41.0.1"))
	created := mustCreate(t, ctx, s.Backend, d)
	checkMatches(t, "Create", created, d)
	checkSettings(t, ctx, s.Backend, "Create", created, d)
	if o := created.Observed; o == nil || o.MTU != 1400 || o.AdminStateUp == nil || *o.AdminStateUp ||
		!slices.Contains(o.Tags, "team=a") || !strings.Contains(o.Description, "team a's build network") {
		t.Errorf("Create: network observed as %+v, want the settings", o)
	}
	if sub := created.ObservedSubnet; sub == nil || sub.EnableDHCP || len(sub.DNSNameservers) != 2 || len(sub.HostRoutes) != 1 ||
		len(sub.AllocationPools) != 1 || sub.AllocationPools[0].Start != "10.41.0.10" || !slices.Contains(sub.Tags, "env=ci") {
		t.Errorf("Create: subnet observed as %+v, want the settings", sub)
	}
	// Nothing to do: Ensure writes nothing.
	before := writes(s)
	if _, action, err := network.Ensure(ctx, s.Backend, d, created, false); err != nil || action != network.ActionNone {
		t.Fatalf("Ensure of a network with its settings = %v, %q; want nothing done", err, action)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("Ensure of a network with its settings wrote %d times, want 0", w)
	}
	// Unset settings are the backend's: a network created without any
	// holds some, and Ensure without settings leaves them.
	plain := desired(2, "10.42.0.0/24", "10.42.0.1")
	got := mustCreate(t, ctx, s.Backend, plain)
	if set := got.Settings; set.Description == nil || set.MTU == nil || set.AdminStateUp == nil || !*set.AdminStateUp ||
		set.EnableDHCP == nil || set.Tags == nil || set.DNSNameservers == nil || len(set.AllocationPools) == 0 || set.HostRoutes == nil {
		t.Errorf("Create without settings returned settings %+v, want every one the backend holds", set)
	}
}

func testSettingsUpdated(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.43.0.0/24", "10.43.0.1")
	cur := mustCreate(t, ctx, s.Backend, d)
	for _, step := range []struct {
		name   string
		change func(*network.Network)
	}{
		{"every setting added", func(d *network.Network) { *d = withSettings(*d) }},
		{"mtu and admin state", func(d *network.Network) { d.Settings.MTU, d.Settings.AdminStateUp = ptr(int32(1300)), ptr(true) }},
		{"dhcp on, one dns server, no route", func(d *network.Network) {
			d.Settings.EnableDHCP, d.Settings.DNSNameservers, d.Settings.HostRoutes = ptr(true), []string{"10.43.0.54"}, []samplecrdv1.HostRoute{}
		}},
		{"pools and the gateway moved", func(d *network.Network) {
			d.Gateway = "10.43.0.254"
			d.Settings.AllocationPools = []samplecrdv1.AllocationPoolSpec{{Start: "10.43.0.2", End: "10.43.0.100"}, {Start: "10.43.0.200", End: "10.43.0.250"}}
		}},
		{"a tag removed, one added, description changed", func(d *network.Network) {
			d.Settings.Tags, d.Settings.Description = []string{"owner=b", "team=a"}, ptr("handed to team b")
		}},
		{"every tag removed, description emptied", func(d *network.Network) { d.Settings.Tags, d.Settings.Description = []string{}, ptr("") }},
	} {
		step.change(&d)
		before := writes(s)
		got, action, err := network.Ensure(ctx, s.Backend, d, cur, false)
		if err != nil || action != network.ActionUpdated {
			t.Fatalf("%s: Ensure = %v, %q; want updated", step.name, err, action)
		}
		if s.Writes != nil && writes(s) == before {
			t.Errorf("%s: Ensure updated without a write", step.name)
		}
		checkMatches(t, step.name, got, d)
		if got.NetworkID != cur.NetworkID || got.SubnetID != cur.SubnetID {
			t.Fatalf("%s: the network was replaced, not updated in place: %+v, was %+v", step.name, *got, *cur)
		}
		checkSettings(t, ctx, s.Backend, step.name, got, d)
		// From what Get reads, not what Ensure returned: the same.
		read := mustGet(t, ctx, s.Backend, d.UID)
		if diff := d.Settings.Diff(read.Settings); diff != nil {
			t.Errorf("%s, then Get: %v", step.name, diff)
		}
		cur = got
	}
	// Unsetting leaves what the backend holds.
	held := cur.Settings
	d.Settings = network.Settings{}
	before := writes(s)
	got, action, err := network.Ensure(ctx, s.Backend, d, cur, false)
	if err != nil || action != network.ActionNone || writes(s) != before {
		t.Fatalf("Ensure with the settings unset = %v, %q, %d writes; want nothing done", err, action, writes(s)-before)
	}
	if diff := held.Diff(got.Settings); diff != nil {
		t.Errorf("the settings changed when unset: %v", diff)
	}
}

func testSettingsRefused(t *testing.T, ctx context.Context, s Setup) {
	d := desired(1, "10.44.0.0/24", "10.44.0.1")
	cur := mustCreate(t, ctx, s.Backend, d)
	for _, tc := range []struct {
		name string
		set  network.Settings
	}{
		{"gateway inside a pool", network.Settings{AllocationPools: []samplecrdv1.AllocationPoolSpec{{Start: "10.44.0.1", End: "10.44.0.20"}}}},
		{"overlapping pools", network.Settings{AllocationPools: []samplecrdv1.AllocationPoolSpec{{Start: "10.44.0.10", End: "10.44.0.20"}, {Start: "10.44.0.15", End: "10.44.0.30"}}}},
		{"mtu beyond the network's", network.Settings{MTU: ptr(int32(9000))}},
	} {
		want := d
		want.Settings = tc.set
		_, _, err := network.Ensure(ctx, s.Backend, want, cur, false)
		if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected {
			t.Errorf("%s: Ensure = %v, want a permanent %s error", tc.name, err, samplecrdv1.ReasonBackendRejected)
		}
	}
	// Nothing was changed.
	got := mustGet(t, ctx, s.Backend, d.UID)
	if diff := cur.Settings.Diff(got.Settings); diff != nil {
		t.Errorf("refused updates changed the network: %v", diff)
	}
	// Refused at create too, with nothing left half-made that List shows
	// as done.
	bad := desired(2, "10.45.0.0/24", "10.45.0.1")
	bad.Settings.AllocationPools = []samplecrdv1.AllocationPoolSpec{{Start: "10.45.0.1", End: "10.45.0.20"}}
	if _, err := s.Backend.Create(ctx, bad); !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendRejected {
		t.Errorf("Create with the gateway inside a pool = %v, want a permanent %s error", err, samplecrdv1.ReasonBackendRejected)
	}
}

func addRouter(t *testing.T, s Setup, name string) string {
	t.Helper()
	if s.AddRouter == nil {
		t.Skip("the setup cannot add routers")
	}
	return s.AddRouter(t, name)
}

// checkRouter fails unless got, and the next List, show the subnet
// attached to router (none when "").
func checkRouter(t *testing.T, ctx context.Context, b network.Backend, what string, got *network.Network, router string) {
	t.Helper()
	if got.RouterID != router || (router != "") != (got.RouterPortID != "") {
		t.Errorf("%s: router %q port %q, want router %q", what, got.RouterID, got.RouterPortID, router)
	}
	list, err := b.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, n := range list {
		if n.UID == got.UID {
			if n.RouterID != got.RouterID || n.RouterPortID != got.RouterPortID {
				t.Errorf("%s returned router %q port %q, the next List %q %q", what, got.RouterID, got.RouterPortID, n.RouterID, n.RouterPortID)
			}
			return
		}
	}
	t.Fatalf("List lacks %s", got.UID)
}

func testRouter(t *testing.T, ctx context.Context, s Setup) {
	name := "edge-" + string(uuid.NewUUID())[:8]
	router := addRouter(t, s, name)
	d := desired(1, "10.49.0.0/24", "10.49.0.1")
	d.Router = &network.RouterRef{Name: name}
	created := mustCreate(t, ctx, s.Backend, d)
	checkRouter(t, ctx, s.Backend, "Create with a router by name", created, router)
	before := writes(s)
	if _, action, err := network.Ensure(ctx, s.Backend, d, created, false); err != nil || action != network.ActionNone {
		t.Fatalf("Ensure of an attached subnet = %v, %q; want nothing done", err, action)
	}
	if w := writes(s) - before; w != 0 {
		t.Fatalf("Ensure of an attached subnet wrote %d times, want 0", w)
	}
	// A changed setting leaves the interface.
	d.Settings.DNSNameservers = []string{"10.49.0.53"}
	got, _, err := network.Ensure(ctx, s.Backend, d, created, false)
	if err != nil {
		t.Fatalf("Ensure with a dns server: %v", err)
	}
	checkRouter(t, ctx, s.Backend, "Ensure with a dns server", got, router)
	// The gateway of a routed subnet cannot move: the interface holds it.
	moved := d
	moved.Gateway = "10.49.0.254"
	if _, _, err := network.Ensure(ctx, s.Backend, moved, got, false); !network.IsPermanent(err) {
		t.Errorf("Ensure moving the gateway of a routed subnet = %v, want a permanent error", err)
	}
	// Removed from the spec: the interface goes.
	d.Router = nil
	if got, _, err = network.Ensure(ctx, s.Backend, d, got, false); err != nil {
		t.Fatalf("Ensure without the router: %v", err)
	}
	checkRouter(t, ctx, s.Backend, "Ensure without the router", got, "")
	// By ID, then deleted with the interface.
	d.Router = &network.RouterRef{ID: router}
	if got, _, err = network.Ensure(ctx, s.Backend, d, got, false); err != nil {
		t.Fatalf("Ensure with the router by id: %v", err)
	}
	checkRouter(t, ctx, s.Backend, "Ensure with the router by id", got, router)
	// Removed from the spec with the gateway moved in the same edit, as
	// the API's refusal of a moved gateway says to: the interface goes
	// first, then the gateway moves.
	moved.Router, moved.Settings = nil, d.Settings
	if got, _, err = network.Ensure(ctx, s.Backend, moved, got, false); err != nil {
		t.Fatalf("Ensure without the router and with a moved gateway: %v", err)
	}
	checkRouter(t, ctx, s.Backend, "Ensure without the router and with a moved gateway", got, "")
	if got.Gateway != moved.Gateway {
		t.Errorf("Ensure without the router and with a moved gateway: gateway %s, want %s", got.Gateway, moved.Gateway)
	}
	d.Gateway = moved.Gateway
	if got, _, err = network.Ensure(ctx, s.Backend, d, got, false); err != nil {
		t.Fatalf("Ensure with the router by id again: %v", err)
	}
	checkRouter(t, ctx, s.Backend, "Ensure with the router by id again", got, router)
	if err := s.Backend.Delete(ctx, d); err != nil {
		t.Fatalf("Delete of a routed network: %v", err)
	}
	checkNotFound(t, ctx, s.Backend, d.UID)
}

func testRouterMissing(t *testing.T, ctx context.Context, s Setup) {
	name := "edge-" + string(uuid.NewUUID())[:8]
	addRouter(t, s, name)
	missing := []*network.RouterRef{{Name: "no-such-router-" + name}, {ID: string(uuid.NewUUID())}}
	if s.ForeignRouter != nil {
		missing = append(missing, &network.RouterRef{ID: s.ForeignRouter(t)})
	}
	for i, ref := range missing {
		d := desired(i, fmt.Sprintf("10.50.%d.0/24", i), fmt.Sprintf("10.50.%d.1", i))
		d.Router = ref
		got, _, err := network.Ensure(ctx, s.Backend, d, nil, true)
		if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonRouterNotFound {
			t.Errorf("Ensure with %s = %+v, %v; want a permanent %s error", ref, got, err, samplecrdv1.ReasonRouterNotFound)
		}
		// Nothing was made: every reference is resolved before the
		// network is created. Once the router is right, Ensure creates
		// and attaches.
		checkNotFound(t, ctx, s.Backend, d.UID)
		d.Router = &network.RouterRef{Name: name}
		got, _, err = network.Ensure(ctx, s.Backend, d, nil, false)
		if err != nil || got.RouterID == "" {
			t.Errorf("Ensure with the router fixed = %+v, %v; want it attached", got, err)
		}
		if err := s.Backend.Delete(ctx, d); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
}

func testSubnetPool(t *testing.T, ctx context.Context, s Setup) {
	if s.AddSubnetPool == nil {
		t.Skip("the setup cannot add subnet pools")
	}
	name := "shared-" + string(uuid.NewUUID())[:8]
	pool := s.AddSubnetPool(t, name, "10.60.0.0/27", 28)
	var made []network.Network
	for i, ref := range []*network.SubnetPoolRef{{Name: name}, {ID: pool}} {
		d := desired(i, "", "")
		d.SubnetPool = ref
		d.Settings.DNSNameservers = []string{"10.60.0.53"}
		got, action, err := network.Ensure(ctx, s.Backend, d, nil, true)
		if err != nil || action != network.ActionCreated {
			t.Fatalf("Ensure from %s = %v, %q; want created", ref, err, action)
		}
		p, perr := netip.ParsePrefix(got.CIDR)
		if perr != nil || p.Bits() != 28 || !netip.MustParsePrefix("10.60.0.0/27").Contains(p.Addr()) || got.Gateway != p.Addr().Next().String() {
			t.Fatalf("Ensure from %s: cidr %q gateway %q, want a /28 of the pool and its first address", ref, got.CIDR, got.Gateway)
		}
		if got.ObservedSubnet == nil || got.ObservedSubnet.SubnetPoolID != pool || got.ObservedSubnet.CIDR != got.CIDR {
			t.Errorf("Ensure from %s: subnet observed as %+v, want the pool's ID and the cidr", ref, got.ObservedSubnet)
		}
		checkSettings(t, ctx, s.Backend, "Ensure from the pool", got, d)
		before := writes(s)
		if _, action, err := network.Ensure(ctx, s.Backend, d, got, false); err != nil || action != network.ActionNone || writes(s) != before {
			t.Fatalf("Ensure of a network from the pool = %v, %q, %d writes; want nothing done", err, action, writes(s)-before)
		}
		made = append(made, d)
	}
	// The pool is full: a transient error, retried until room is made.
	full := desired(3, "", "")
	full.SubnetPool = &network.SubnetPoolRef{Name: name}
	_, _, err := network.Ensure(ctx, s.Backend, full, nil, true)
	if network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonSubnetPoolExhausted {
		t.Fatalf("Ensure from a full pool = %v, want a transient %s error", err, samplecrdv1.ReasonSubnetPoolExhausted)
	}
	if err := s.Backend.Delete(ctx, made[0]); err != nil {
		t.Fatal(err)
	}
	got, _, err := network.Ensure(ctx, s.Backend, full, nil, false)
	if err != nil || got.SubnetID == "" {
		t.Fatalf("Ensure once the pool has room = %+v, %v", got, err)
	}
	// A pool that is not there.
	missing := desired(4, "", "")
	missing.SubnetPool = &network.SubnetPoolRef{Name: "no-such-pool-" + name}
	if _, _, err := network.Ensure(ctx, s.Backend, missing, nil, true); !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonSubnetPoolNotFound {
		t.Errorf("Ensure from a missing pool = %v, want a permanent %s error", err, samplecrdv1.ReasonSubnetPoolNotFound)
	}
	checkNotFound(t, ctx, s.Backend, missing.UID) // nothing made before the pool was found
	for _, d := range []network.Network{made[1], full, missing} {
		if err := s.Backend.Delete(ctx, d); err != nil {
			t.Errorf("Delete: %v", err)
		}
	}
}
