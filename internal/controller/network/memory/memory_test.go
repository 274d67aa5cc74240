package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/backendtest"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

func setup(t *testing.T) backendtest.Setup {
	b := memory.New()
	return backendtest.Setup{
		Backend:   b,
		AddRouter: func(t *testing.T, name string) string { return b.AddRouter(name) },
		AddSubnetPool: func(t *testing.T, name, prefix string, defaultLength int) string {
			return b.AddSubnetPool(name, prefix, defaultLength)
		},
		AddForeign: func(t *testing.T, name, cidr, gateway string, tags ...string) string {
			return b.AddForeign(name, cidr, gateway, tags...)
		},
		ForeignIntact: func(t *testing.T, id, cidr, gateway string) error {
			for _, o := range b.Objects() {
				if o.NetworkID == id {
					if o.Owned || o.CIDR != cidr || o.Gateway != gateway || o.SubnetID == "" {
						return fmt.Errorf("it is now %+v", o)
					}
					return nil
				}
			}
			return errors.New("it is gone")
		},
		InterruptNextCreate: func(t *testing.T) {
			var armed atomic.Bool
			armed.Store(true)
			b.SetFault(func(_ context.Context, op memory.Op, _ types.UID) error {
				if op == memory.OpCreateSubnet && armed.CompareAndSwap(true, false) {
					return network.Transient("create subnet", samplecrdv1.ReasonBackendUnavailable, errors.New("interrupted by the test"))
				}
				return nil
			})
		},
		Writes:         func() int { return int(b.Stats().Writes()) },
		RejectsOverlap: true,
	}
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, setup)
}

func TestConformanceOverlappingAllowed(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backendtest.Setup {
		return backendtest.Setup{Backend: memory.New(memory.WithOverlappingCIDRs())}
	})
}

var example = network.Network{UID: "uid-1", Namespace: "default", Name: "example-network", CIDR: "192.168.0.0/16", Gateway: "192.168.0.1"}

func TestStats(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := memory.New()
	if _, err := b.Create(ctx, example); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, example); err != nil { // idempotent: no write
		t.Fatal(err)
	}
	if _, err := b.UpdateGateway(ctx, network.Network{UID: example.UID}, "192.168.0.254"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateGateway(ctx, network.Network{UID: example.UID}, "192.168.0.254"); err != nil { // unchanged: no write
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, example.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.List(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, example); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, example); err != nil { // absent: no write
		t.Fatal(err)
	}
	want := memory.Stats{Gets: 1, Lists: 1, Creates: 1, Updates: 1, Deletes: 1}
	if got := b.Stats(); got != want || got.Writes() != 3 {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

func TestFailNext(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := memory.New()
	boom := network.Transient("create network", samplecrdv1.ReasonBackendUnavailable, errors.New("boom"))
	rejected := network.Permanent("create network", samplecrdv1.ReasonBackendRejected, errors.New("no"))
	b.FailNext(boom, rejected)
	if _, err := b.Create(ctx, example); !errors.Is(err, boom) || network.IsPermanent(err) {
		t.Fatalf("first Create = %v, want %v", err, boom)
	}
	if _, err := b.Create(ctx, example); !errors.Is(err, rejected) || !network.IsPermanent(err) ||
		network.Reason(err) != samplecrdv1.ReasonBackendRejected {
		t.Fatalf("second Create = %v, want %v", err, rejected)
	}
	if _, err := b.Get(ctx, example.UID); !network.IsNotFound(err) {
		t.Fatalf("failed Creates created something: Get = %v", err)
	}
	if _, err := b.Create(ctx, example); err != nil {
		t.Fatalf("third Create: %v", err)
	}
	if s := b.Stats(); s.Creates != 1 {
		t.Fatalf("Stats = %+v, want 1 create", s)
	}
}

func TestFaultHook(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := memory.New()
	var ops []memory.Op
	b.SetFault(func(_ context.Context, op memory.Op, uid types.UID) error {
		ops = append(ops, op)
		if op == memory.OpDelete {
			return network.Transient("delete network", samplecrdv1.ReasonBackendUnavailable, errors.New("backend down"))
		}
		return nil
	})
	if _, err := b.Create(ctx, example); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, example); err == nil || network.IsPermanent(err) {
		t.Fatalf("Delete = %v, want the injected transient error", err)
	}
	if _, err := b.Get(ctx, example.UID); err != nil {
		t.Fatalf("a failed Delete deleted: %v", err)
	}
	want := []memory.Op{memory.OpCreate, memory.OpCreateSubnet, memory.OpDelete, memory.OpGet}
	if fmt.Sprint(ops) != fmt.Sprint(want) {
		t.Fatalf("hook saw %v, want %v", ops, want)
	}
	b.SetFault(nil)
	if err := b.Delete(ctx, example); err != nil {
		t.Fatal(err)
	}
}

func TestLatency(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := memory.New()
	b.SetLatency(50 * time.Millisecond)
	start := time.Now()
	if _, err := b.List(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("List took %v, want at least the 50ms latency", d)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	_, err := b.Create(tctx, example)
	if !errors.Is(err, context.DeadlineExceeded) || network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonBackendUnavailable {
		t.Fatalf("Create past its deadline = %v, want a transient deadline error", err)
	}
	b.SetLatency(0)
	if _, err := b.Get(ctx, example.UID); !network.IsNotFound(err) {
		t.Fatalf("a timed-out Create created the network: %v", err)
	}
}

func TestOverlap(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := memory.New()
	b.AddForeign("operator-net", "10.0.0.0/8", "10.0.0.1")
	d := network.Network{UID: "uid-2", Namespace: "default", Name: "inside", CIDR: "10.1.0.0/16", Gateway: "10.1.0.1"}
	_, err := b.Create(ctx, d)
	if !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonCIDROverlap ||
		!strings.Contains(err.Error(), "overlaps cidr 10.0.0.0/8 of backend network") {
		t.Fatalf("Create = %v, want a permanent overlap error naming the other network", err)
	}
	if _, err := memory.New(memory.WithOverlappingCIDRs()).Create(ctx, d); err != nil {
		t.Fatalf("Create with overlapping CIDRs allowed: %v", err)
	}
}

func TestInvalidSpec(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := memory.New()
	bad := example
	bad.Gateway = "10.0.0.1"
	if _, err := b.Create(ctx, bad); !network.IsPermanent(err) || network.Reason(err) != samplecrdv1.ReasonInvalidSpec {
		t.Fatalf("Create with the gateway outside = %v, want a permanent InvalidSpec error", err)
	}
	if _, err := b.Create(ctx, example); err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateGateway(ctx, network.Network{UID: example.UID}, "fd00::1"); !network.IsPermanent(err) {
		t.Fatalf("UpdateGateway to another family = %v, want a permanent error", err)
	}
}

// TestLogs checks that every write is logged, so a local run shows what a
// real backend would have been asked to do.
func TestLogs(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	b := memory.New()
	if _, err := b.Create(ctx, example); err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateGateway(ctx, network.Network{UID: example.UID}, "192.168.0.254"); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, example); err != nil {
		t.Fatal(err)
	}
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	for _, want := range []string{
		`[Neutron mock] Created network network="default/example-network" uid="uid-1"`,
		`[Neutron mock] Created subnet network="default/example-network"`,
		`cidr="192.168.0.0/16" gateway="192.168.0.1"`,
		`[Neutron mock] Updated network gateway and settings network="default/example-network"`,
		`oldGateway="192.168.0.1" gateway="192.168.0.254"`,
		`[Neutron mock] Deleted network network="default/example-network"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}

// CreateNew is the caller's promise that nothing of the UID exists: the
// memory backend refuses it when something does, as a broken promise.
func TestCreateNewRefusesAnExistingUID(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := memory.New()
	if _, err := b.CreateNew(ctx, example); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateNew(ctx, example); !network.IsPermanent(err) {
		t.Fatalf("second CreateNew of one UID = %v, want a permanent error", err)
	}
	if objs := b.Objects(); len(objs) != 1 {
		t.Fatalf("%d networks after a refused CreateNew, want 1", len(objs))
	}
}
