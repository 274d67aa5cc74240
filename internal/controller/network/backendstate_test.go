package network

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

func TestKnownReplaceKeepsWhatWasSetSinceTheListStarted(t *testing.T) {
	k := newKnown()
	k.set("old", &Network{UID: "old", NetworkID: "n-old"})
	k.set("gone", &Network{UID: "gone", NetworkID: "n-gone"})
	mark := k.mark()
	// While the List runs: a create and a delete of the controller's own.
	k.set("new", &Network{UID: "new", NetworkID: "n-new"})
	k.set("deleted", nil)
	got := k.replace([]Network{{UID: "old", NetworkID: "n-old2"}, {UID: "deleted", NetworkID: "n-deleted"}}, mark)

	for _, tc := range []struct {
		name string
		uid  types.UID
		want string // network ID, "" for none
	}{
		{"what the List returns replaces what was known before it", "old", "n-old2"},
		{"what the List does not return is gone", "gone", ""},
		{"a create during the List is kept", "new", "n-new"},
		{"a delete during the List is not undone by it", "deleted", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := k.get(tc.uid)
			id := ""
			if n != nil {
				id = n.NetworkID
			}
			if id != tc.want {
				t.Errorf("get(%s) = %q, want %q", tc.uid, id, tc.want)
			}
			if m, ok := got[tc.uid]; ok != (tc.want != "") || m.NetworkID != tc.want {
				t.Errorf("replace's result for %s = %+v, %v; want %q", tc.uid, m, ok, tc.want)
			}
		})
	}
}

func TestBackendStateWaitersComeBackOnce(t *testing.T) {
	s := newBackendState()
	a, b := cache.ObjectName{Namespace: "ns", Name: "a"}, cache.ObjectName{Namespace: "ns", Name: "b"}
	if up, _, msg := s.waitUnlessUp(a); up || msg != "" {
		t.Fatalf("before the first List: up=%v message=%q, want waiting without a message", up, msg)
	}
	if changed, msg := s.down(b, nil, samplecrdv1.ReasonBackendUnavailable, "first"); !changed || msg != "first" {
		t.Fatalf("first failure: changed=%v message=%q", changed, msg)
	}
	if changed, msg := s.down(b, nil, samplecrdv1.ReasonBackendUnavailable, "second"); changed || msg != "first" {
		t.Fatalf("second failure: changed=%v message=%q, want no change and the first message", changed, msg)
	}
	if up, _, msg := s.waitUnlessUp(a); up || msg != "first" {
		t.Fatalf("while down: up=%v message=%q", up, msg)
	}
	waiting, wasDown, _ := s.up()
	slices.SortFunc(waiting, func(x, y cache.ObjectName) int { return strings.Compare(x.Name, y.Name) })
	if !wasDown || !slices.Equal(waiting, []cache.ObjectName{a, b}) {
		t.Fatalf("up: waiting=%v wasDown=%v, want [a b] true", waiting, wasDown)
	}
	if waiting, wasDown, _ := s.up(); wasDown || len(waiting) != 0 {
		t.Fatalf("up again: waiting=%v wasDown=%v, want nothing", waiting, wasDown)
	}
	if up, _, _ := s.waitUnlessUp(a); !up {
		t.Fatal("up: a sync still waits")
	}
}

// TestCloudEvictedBeforeRunIsNotStarted: a cloud made before the controller
// runs, and evicted (no Network uses it) before then, gets no scan loop.
func TestCloudEvictedBeforeRunIsNotStarted(t *testing.T) {
	s := &cloudSet{max: 4, byKey: map[string]*cloud{}, byUID: map[types.UID]string{}, bound: map[types.UID]string{}, now: time.Now,
		start: func(context.Context, *cloud) {}}
	used := map[types.UID]bool{"a": true, "b": true}
	inUse := func(uid types.UID) bool { return used[uid] }
	clouds := map[string]*cloud{}
	for _, k := range []string{"a", "b"} {
		cl, err := s.use(types.UID(k), secretRef{namespace: k}, CloudConfig{Key: k}, inUse)
		if err != nil {
			t.Fatal(err)
		}
		clouds[k] = cl
	}
	delete(used, "a")
	s.evict(inUse, 0)
	s.run(t.Context())
	// A started cloud has the cancel of its scan loop.
	for k, want := range map[string]bool{"a": false, "b": true} {
		clouds[k].mu.Lock()
		started := clouds[k].cancel != nil
		clouds[k].mu.Unlock()
		if started != want {
			t.Errorf("cloud %s: scan loop started %v, want %v", k, started, want)
		}
	}
}

// A cloud keeps only the Secret references Networks still make (its
// probes read those Secrets); references not known (the cache failed)
// prune nothing.
func TestPruneRefsKeepsTheOnesInUse(t *testing.T) {
	s := &cloudSet{max: 4, byKey: map[string]*cloud{}, byUID: map[types.UID]string{}, bound: map[types.UID]string{}, now: time.Now}
	cl := newCloud("k", nil)
	used, stale := secretRef{namespace: "a", secret: "s", cloud: "c"}, secretRef{namespace: "b", secret: "old", cloud: "c"}
	cl.refs[used], cl.refs[stale] = struct{}{}, struct{}{}
	s.byKey["k"] = cl
	s.pruneRefs(nil)
	if len(cl.refs) != 2 {
		t.Fatalf("pruned %v with nothing known", cl.refs)
	}
	s.pruneRefs(map[secretRef]bool{used: true})
	if _, ok := cl.refs[used]; !ok || len(cl.refs) != 1 {
		t.Errorf("refs after pruning %v, want %v alone", cl.refs, used)
	}
}

// One namespace's Secrets hold at most perNamespace distinct entries:
// another namespace still gets its own while the first is at its bound.
func TestCloudsBoundedPerNamespace(t *testing.T) {
	s := &cloudSet{max: 10, perNamespace: 2, byKey: map[string]*cloud{}, byUID: map[types.UID]string{}, bound: map[types.UID]string{}, now: time.Now}
	inUse := func(types.UID) bool { return true }
	use := func(ns, key string) error {
		_, err := s.use(types.UID(ns+key), secretRef{namespace: ns, secret: key, cloud: "c"}, CloudConfig{Key: key}, inUse)
		return err
	}
	for _, k := range []string{"a1", "a2"} {
		if err := use("a", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := use("a", "a3"); !errors.Is(err, errTooManyClouds) || !strings.Contains(err.Error(), "namespace a") {
		t.Errorf("a third entry of namespace a = %v, want refused naming the namespace", err)
	}
	if err := use("a", "a1"); err != nil {
		t.Errorf("an entry namespace a holds already = %v, want it", err)
	}
	if err := use("b", "b1"); err != nil {
		t.Errorf("namespace b's first entry = %v, want it", err)
	}
}
