package ingressmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// testDrain is the DNS drain of the cut-over tests, testNow their clock.
const testDrain = time.Minute

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 600000000, time.UTC)

// newCutoverFixture is a sync fixture with a DNS drain, a settle time and
// a clock of its own.
func newCutoverFixture(t *testing.T, drain time.Duration) *syncFixture {
	f := newSyncFixture(t)
	f.c.cutover = cutover{drain: drain, now: func() time.Time { return testNow }}
	f.c.settling.settle = 5 * time.Second
	f.c.settling.now = func() time.Time { return testNow }
	f.server.now = testNow
	f.kube.PrependReactor("patch", "ingresses", f.server.react(f.kube.Tracker()))
	f.gateway.PrependReactor("patch", "httproutes", f.server.react(f.gateway.Tracker()))
	return f
}

// serverClock is the API server's clock as the fakes answer a dry-run
// patch (which the fake clientsets would store, with the machine's time):
// the object as stored, with the dry-run's managedFields entry at now and
// the DNS field manager's at withdrawn (zero: the withdrawal annotation's
// time, the server's clock agreeing with the writer's), or none with
// noWithdrawalEntry. refuse, when set, is the answer instead.
type serverClock struct {
	now, withdrawn    time.Time
	noWithdrawalEntry bool
	refuse            error
}

func (s *serverClock) react(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchActionImpl)
		if len(p.PatchOptions.DryRun) == 0 {
			return false, nil, nil
		}
		if s.refuse != nil {
			return true, nil, s.refuse
		}
		stored, err := tracker.Get(p.Resource, p.Namespace, p.Name)
		if err != nil {
			return true, nil, err
		}
		obj := stored.DeepCopyObject()
		m, _ := meta.Accessor(obj)
		var entries []metav1.ManagedFieldsEntry
		for _, e := range m.GetManagedFields() {
			if e.Manager != dnsFieldManager {
				entries = append(entries, e)
			}
		}
		if at, ok := withdrawnAt(m); ok && !s.noWithdrawalEntry {
			if !s.withdrawn.IsZero() {
				at = s.withdrawn
			}
			entries = append(entries, metav1.ManagedFieldsEntry{Manager: dnsFieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: at}})
		}
		entries = append(entries, metav1.ManagedFieldsEntry{Manager: p.PatchOptions.FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: s.now}})
		m.SetManagedFields(entries)
		return true, obj, nil
	}
}

// withdrawn marks an object withdrawn from external-dns at, as the
// controller does.
func withdrawn[T metav1.Object](at time.Time) func(T) {
	return func(o T) {
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationExternalDNSController] = withdrawnValue
		ann[AnnotationExternalDNSControllerLegacy] = withdrawnValue
		ann[AnnotationDNSWithdrawn] = at.Format(time.RFC3339Nano)
		o.SetAnnotations(ann)
	}
}

// sendToServer writes the cached object's annotations to the fake API
// server as the DNS field manager did, so that the server holds what the
// cache says.
func sendToServer[T object](t *testing.T, indexer interface {
	GetByKey(string) (any, bool, error)
}, get func(context.Context, string, metav1.GetOptions) (T, error), update func(context.Context, T, metav1.UpdateOptions) (T, error), name string) {
	t.Helper()
	obj, _, err := indexer.GetByKey("default/" + name)
	if err != nil || obj == nil {
		t.Fatalf("not cached: %v", err)
	}
	live, err := get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.SetAnnotations(obj.(T).GetAnnotations())
	if _, err := update(context.Background(), live, metav1.UpdateOptions{FieldManager: dnsFieldManager}); err != nil {
		t.Fatal(err)
	}
}

func (f *syncFixture) syncIngressToServer() {
	f.t.Helper()
	ings := f.kube.NetworkingV1().Ingresses("default")
	sendToServer(f.t, f.c.ingresses, ings.Get, ings.Update, "my-nginx")
}

func (f *syncFixture) syncRouteToServer() {
	f.t.Helper()
	routes := f.gateway.GatewayV1().HTTPRoutes("default")
	sendToServer(f.t, f.routes, routes.Get, routes.Update, "my-nginx")
}

// patches returns the JSON patches the fakes received, decoded, with
// their field manager.
func (f *syncFixture) patches() (ops [][]map[string]any, managers []string) {
	f.t.Helper()
	for _, a := range slices.Concat(f.kube.Actions(), f.gateway.Actions()) {
		p, ok := a.(k8stesting.PatchActionImpl)
		if !ok || len(p.PatchOptions.DryRun) > 0 {
			continue
		}
		if p.PatchType != types.JSONPatchType {
			f.t.Errorf("a %s patch of %s, want JSON patches only", p.PatchType, p.Resource.Resource)
			continue
		}
		var o []map[string]any
		if err := json.Unmarshal(p.Patch, &o); err != nil {
			f.t.Fatal(err)
		}
		ops = append(ops, o)
		managers = append(managers, p.PatchOptions.FieldManager)
	}
	return ops, managers
}

// requeued returns the delay a sync's RequeueAfter asks for, 0 for none.
func requeued(t *testing.T, err error) time.Duration {
	t.Helper()
	var after *controller.RequeueAfter
	if errors.As(err, &after) {
		return after.Delay
	}
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return 0
}

// TestCutoverWithdrawsThenDrainsThenDeletes: on a move, once the new
// object is ready and settled, the old one is first withdrawn from
// external-dns by a patch of its annotations alone, then kept for the
// drain, then deleted; each step is one sync, each wait a requeue.
func TestCutoverWithdrawsThenDrainsThenDeletes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gateway   string // the Service's ingress/gateway
		oldKind   string // "ingresses" or "httproutes"
		ann       string // the Service's ingress/annotations
		justReady bool   // the new object is seen ready for the first time
		ingress   []func(*networkingv1.Ingress)
		route     []func(*gatewayv1.HTTPRoute)
		want      []string // writes
		wantAfter time.Duration
		reason    string // an Event expected, if any
	}{
		{name: "to a Gateway, the route accepted and settled: the Ingress is withdrawn first, nothing deleted",
			gateway: "gw", oldKind: "ingresses",
			ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want: []string{"patch ingresses"}, wantAfter: testDrain, reason: ReasonWithdrawnFromDNS},
		{name: "to a Gateway, the route just accepted: the settle time first, nothing written",
			gateway: "gw", oldKind: "ingresses", justReady: true,
			ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want: nil, wantAfter: 5 * time.Second},
		{name: "to a Gateway, an Ingress with annotations of its own: the withdrawal adds its keys alone",
			gateway: "gw", oldKind: "ingresses", ann: `{"example.com/team":"a"}`,
			ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want: []string{"patch ingresses"}, wantAfter: testDrain, reason: ReasonWithdrawnFromDNS},
		{name: "to a Gateway, mid-drain: no write, a requeue for what is left of the drain",
			gateway: "gw", oldKind: "ingresses",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-20 * time.Second))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want:    nil, wantAfter: 40 * time.Second},
		{name: "to a Gateway, the drain passed: the Ingress is deleted",
			gateway: "gw", oldKind: "ingresses",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want:    []string{"delete ingresses"}, reason: ReasonIngressDeleted},
		{name: "back on Ingress, it has an address and settled: the route is withdrawn first, nothing deleted",
			gateway: "", oldKind: "httproutes",
			ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want: []string{"patch httproutes"}, wantAfter: testDrain, reason: ReasonWithdrawnFromDNS},
		{name: "back on Ingress, mid-drain: no write",
			gateway: "", oldKind: "httproutes",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-59 * time.Second))},
			want:    nil, wantAfter: time.Second},
		{name: "back on Ingress, the drain passed: the route is deleted",
			gateway: "", oldKind: "httproutes",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-2 * testDrain))},
			want:    []string{"delete httproutes"}, reason: ReasonHTTPRouteDeleted},
		{name: "a withdrawal time ahead of this clock (another leader's) waits one drain at most",
			gateway: "gw", oldKind: "ingresses",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(time.Hour))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want:    nil, wantAfter: testDrain},
		{name: "a withdrawal time that does not parse: withdrawn again, the drain starts over",
			gateway: "gw", oldKind: "ingresses",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-time.Hour)), func(i *networkingv1.Ingress) {
				i.Annotations[AnnotationDNSWithdrawn] = "yesterday"
			}},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want:  []string{"patch ingresses"}, wantAfter: testDrain, reason: ReasonWithdrawnFromDNS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			svc := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
			if tc.ann != "" {
				svc.Annotations[AnnotationAnnotations] = tc.ann
			}
			svc.ResourceVersion = "1"
			f.addIngress(svc, both(tc.ingress...))
			f.syncIngressToServer()
			f.addRoute(svc, both(tc.route...))
			f.syncRouteToServer()
			f.addService(svc, true)
			// The settle time has passed since the new object was first
			// seen ready.
			if !tc.justReady {
				f.c.settling.since[settleKey{svc: cache.MetaObjectToName(svc)}] = readySince{uid: newUID(tc.oldKind), at: testNow.Add(-time.Hour)}
			}
			f.clearActions()
			err := f.sync(svc)
			if got := requeued(t, err); got != tc.wantAfter {
				t.Errorf("requeued after %v, want %v", got, tc.wantAfter)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			if reasons := f.reasons(); tc.reason != "" && !slices.Contains(reasons, tc.reason) {
				t.Errorf("Events %v, want one %s", reasons, tc.reason)
			}
			for _, a := range f.allActions() {
				if d, ok := a.(k8stesting.DeleteActionImpl); ok {
					if p := d.DeleteOptions.Preconditions; p == nil || p.UID == nil || *p.UID == "" {
						t.Errorf("delete of %s without a UID precondition", d.Resource.Resource)
					}
				}
			}
			if slices.Contains(tc.want, "patch "+tc.oldKind) {
				checkWithdrawPatch(t, f, tc.oldKind, tc.ann != "")
			}
		})
	}
}

// checkWithdrawPatch checks the one patch f received: a JSON patch by the
// DNS field manager that tests the old object's UID and sets external-dns's
// two controller annotations and the withdrawal time, nothing else; and
// that the object then carries them (and, with ownAnnotation, still its
// own).
func checkWithdrawPatch(t *testing.T, f *syncFixture, oldKind string, ownAnnotation bool) {
	t.Helper()
	ops, managers := f.patches()
	if len(ops) != 1 {
		t.Fatalf("%d patches, want 1", len(ops))
	}
	if managers[0] != dnsFieldManager {
		t.Errorf("field manager %q, want %q", managers[0], dnsFieldManager)
	}
	uid := "ingress-uid"
	if oldKind == "httproutes" {
		uid = "route-uid"
	}
	if op := ops[0][0]; op["op"] != "test" || op["path"] != "/metadata/uid" || op["value"] != uid {
		t.Errorf("first op %v, want a test of the UID %s", op, uid)
	}
	// Either each key is added, or (the object has no annotations) the
	// map of them, after a test that there is none.
	want := map[string]bool{AnnotationExternalDNSController: true, AnnotationExternalDNSControllerLegacy: true, AnnotationDNSWithdrawn: true}
	rest := ops[0][1:]
	if len(rest) == 2 && rest[0]["op"] == "test" && rest[0]["path"] == "/metadata/annotations" && rest[0]["value"] == nil &&
		rest[1]["op"] == "add" && rest[1]["path"] == "/metadata/annotations" {
		set, _ := rest[1]["value"].(map[string]any)
		for k := range set {
			if !want[k] {
				t.Errorf("annotation %s set, want only the withdrawal annotations", k)
			}
			delete(want, k)
		}
	} else {
		for _, op := range rest {
			key, _ := strings.CutPrefix(fmt.Sprint(op["path"]), "/metadata/annotations/")
			key = strings.NewReplacer("~1", "/", "~0", "~").Replace(key)
			if op["op"] != "add" || !want[key] {
				t.Errorf("op %v, want only adds of the withdrawal annotations", op)
			}
			delete(want, key)
		}
	}
	if len(want) > 0 {
		t.Errorf("annotations not set: %v", want)
	}
	var obj metav1.Object
	var err error
	if oldKind == "ingresses" {
		obj, err = f.kube.NetworkingV1().Ingresses("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
	} else {
		obj, err = f.gateway.GatewayV1().HTTPRoutes("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if v := obj.GetAnnotations()["example.com/team"]; ownAnnotation && v != "a" {
		t.Errorf("the object's own annotation is %q after the withdrawal, want it kept", v)
	}
	if at, ok := withdrawnAt(obj); !ok || !at.Equal(testNow) {
		t.Errorf("withdrawn at %v (%v), want %v; annotations %v", at, ok, testNow, obj.GetAnnotations())
	}
}

func (f *syncFixture) allActions() []k8stesting.Action {
	return slices.Concat(f.kube.Actions(), f.gateway.Actions())
}

// newUID is the UID the fixture gives the replacement of the old kind.
func newUID(oldKind string) types.UID {
	if oldKind == "ingresses" {
		return "route-uid"
	}
	return "ingress-uid"
}

// TestCutoverWithoutDrainDeletesAtOnce: --ingress-move-dns-drain=0 is the
// move as it was: the old object is deleted once the new one is ready and
// settled, with no patch.
func TestCutoverWithoutDrainDeletesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		gateway string
		want    string
	}{{"gw", "delete ingresses"}, {"", "delete httproutes"}} {
		f := newCutoverFixture(t, 0)
		f.c.settling.settle = 0
		svc := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
		svc.ResourceVersion = "1"
		f.addIngress(svc, withAddress)
		f.addRoute(svc, servedAt(1))
		f.syncExpecting(svc, []string{tc.want})
	}
}

// TestCutoverSurvivesARestart: a new controller (nothing in memory: no
// settle time seen) finds the old object withdrawn: it neither writes the
// time again nor waits the settle time again, only what is left of the
// drain, and deletes it when that passed.
func TestCutoverSurvivesARestart(t *testing.T) {
	at := testNow.Add(-45 * time.Second)
	f := newCutoverFixture(t, testDrain)
	svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
	svc.ResourceVersion = "1"
	f.addIngress(svc, both(withAddress, withdrawn[*networkingv1.Ingress](at)))
	f.syncIngressToServer()
	f.addRoute(svc, servedAt(1))
	f.addService(svc, true)
	f.clearActions()
	if got := requeued(t, f.sync(svc)); got != 15*time.Second {
		t.Errorf("requeued after %v, want the 15s left of the drain", got)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes = %q, want none", got)
	}
	live, err := f.kube.NetworkingV1().Ingresses("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := withdrawnAt(live); !got.Equal(at) {
		t.Errorf("withdrawn at %v, want the original %v", got, at)
	}
	f.c.cutover.now = func() time.Time { return at.Add(testDrain) }
	f.server.now = at.Add(testDrain) // the API server's clock too
	if err := f.sync(svc); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := f.writes(); !slices.Equal(got, []string{"delete ingresses"}) {
		t.Errorf("writes = %q once the drain passed, want the delete", got)
	}
}

// TestCutoverMoveBackMidDrain: a Service that moves back while its old
// object drains makes it the desired one again: the withdrawal is removed
// (by a patch that tests each value and removes only those keys), nothing
// is deleted, and the object it had moved to is not withdrawn before the
// returned one is seen back in external-dns.
func TestCutoverMoveBackMidDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gateway string // the Service's ingress/gateway now
		ingress []func(*networkingv1.Ingress)
		route   []func(*gatewayv1.HTTPRoute)
		want    []string
	}{
		{name: "back to the withdrawn Ingress", gateway: "",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-10 * time.Second))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want:    []string{"patch ingresses"}},
		{name: "back to the withdrawn route", gateway: "gw",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-10 * time.Second))},
			want:    []string{"patch httproutes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			f.c.settling.settle = 0
			svc := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
			svc.ResourceVersion = "1"
			f.addIngress(svc, both(tc.ingress...))
			f.syncIngressToServer()
			f.addRoute(svc, both(tc.route...))
			f.syncRouteToServer()
			f.addService(svc, true)
			f.clearActions()
			if err := f.sync(svc); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			if reasons := f.reasons(); !slices.Contains(reasons, ReasonReturnedToDNS) {
				t.Errorf("Events %v, want one %s", reasons, ReasonReturnedToDNS)
			}
			ops, managers := f.patches()
			if len(ops) != 1 || managers[0] != dnsFieldManager {
				t.Fatalf("patches %v by %v, want one by %s", ops, managers, dnsFieldManager)
			}
			removed := map[string]bool{}
			for i, op := range ops[0] {
				switch op["op"] {
				case "test":
				case "remove":
					if prev := ops[0][i-1]; prev["op"] != "test" || prev["path"] != op["path"] {
						t.Errorf("remove of %v not right after a test of its value", op["path"])
					}
					removed[op["path"].(string)] = true
				default:
					t.Errorf("op %v, want only tests and removes", op)
				}
			}
			if len(removed) != 3 {
				t.Errorf("removed %v, want the three withdrawal annotations", removed)
			}
			var obj metav1.Object
			var err error
			if tc.gateway == "" {
				obj, err = f.kube.NetworkingV1().Ingresses("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
			} else {
				obj, err = f.gateway.GatewayV1().HTTPRoutes("default").Get(context.Background(), "my-nginx", metav1.GetOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if withdrawalMarked(obj) {
				t.Errorf("annotations %v still mark it withdrawn", obj.GetAnnotations())
			}
		})
	}
}

// TestCutoverReturnsTheOldObjectWhenTheNewOneIsNotReady: the withdrawal
// holds while the new object is ready: a route no longer accepted (or an
// Ingress without an address) gives the old object back to external-dns,
// which still serves.
func TestCutoverReturnsTheOldObjectWhenTheNewOneIsNotReady(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gateway string
		ingress []func(*networkingv1.Ingress)
		route   []func(*gatewayv1.HTTPRoute)
		want    []string
		reason  string
	}{
		{name: "to a Gateway, the route no longer accepted", gateway: "gw",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-10 * time.Second))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1), func(r *gatewayv1.HTTPRoute) { r.Generation = 2 }},
			want:    []string{"patch ingresses"}, reason: ReasonWaitingForHTTPRoute},
		{name: "back on Ingress, the Ingress without an address", gateway: "",
			ingress: nil,
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-10 * time.Second))},
			want:    []string{"patch httproutes"}, reason: ReasonWaitingForIngress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			svc := service(map[string]string{AnnotationGateway: tc.gateway}, port("http", 80))
			svc.ResourceVersion = "1"
			f.addIngress(svc, both(tc.ingress...))
			f.syncIngressToServer()
			f.addRoute(svc, both(tc.route...))
			f.syncRouteToServer()
			f.syncExpecting(svc, tc.want)
			reasons := f.reasons()
			for _, want := range []string{tc.reason, ReasonReturnedToDNS} {
				if !slices.Contains(reasons, want) {
					t.Errorf("Events %v, want one %s", reasons, want)
				}
			}
		})
	}
}

// TestCutoverKeepsTheUsersControllerAnnotation: an old object that carries
// external-dns's controller annotation of its user's own (to pick an
// external-dns, or to keep the host out of DNS) gets it back when it is
// returned to external-dns: the withdrawal remembers it on the object, the
// return restores it instead of removing it.
func TestCutoverKeepsTheUsersControllerAnnotation(t *testing.T) {
	for _, tc := range []struct {
		name string
		own  map[string]string // the user's controller annotations on the Ingress
	}{
		{name: "dns-controller on the legacy key", own: map[string]string{AnnotationExternalDNSControllerLegacy: "dns-controller"}},
		{name: "a value that keeps the host out of DNS, on the current key", own: map[string]string{AnnotationExternalDNSController: "someone-else"}},
		{name: "values on both keys", own: map[string]string{AnnotationExternalDNSController: "dns-controller", AnnotationExternalDNSControllerLegacy: "dns-controller"}},
		{name: "none: the keys are removed on return", own: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
			svc.ResourceVersion = "1"
			f.addIngress(svc, both(withAddress, func(ing *networkingv1.Ingress) {
				for k, v := range tc.own {
					metav1.SetMetaDataAnnotation(&ing.ObjectMeta, k, v)
				}
			}))
			f.syncIngressToServer()
			f.addRoute(svc, servedAt(1))
			f.c.settling.since[settleKey{svc: cache.MetaObjectToName(svc)}] = readySince{uid: "route-uid", at: testNow.Add(-time.Hour)}
			f.addService(svc, true)
			ings := f.kube.NetworkingV1().Ingresses("default")

			// Withdrawn: both keys say so, whatever the user had.
			if got := requeued(t, f.sync(svc)); got != testDrain {
				t.Fatalf("requeued after %v, want the drain", got)
			}
			live, err := ings.Get(context.Background(), "my-nginx", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := withdrawnAt(live); !ok {
				t.Fatalf("not withdrawn: %v", live.Annotations)
			}
			if err := f.c.ingresses.Update(live); err != nil {
				t.Fatal(err)
			}

			// The route no longer serves: the Ingress is returned to
			// external-dns with the user's values.
			route, _, _ := f.routes.GetByKey("default/my-nginx")
			notServing := route.(*gatewayv1.HTTPRoute).DeepCopy()
			notServing.Generation = 2
			if err := f.routes.Update(notServing); err != nil {
				t.Fatal(err)
			}
			f.clearActions()
			if err := f.sync(svc); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if !slices.Contains(f.reasons(), ReasonReturnedToDNS) {
				t.Fatal("not returned to external-dns")
			}
			live, err = ings.Get(context.Background(), "my-nginx", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if withdrawalMarked(live) {
				t.Errorf("annotations %v still mark it withdrawn", live.Annotations)
			}
			for _, k := range externalDNSControllerKeys {
				want, wantOK := tc.own[k]
				if got, ok := live.Annotations[k]; got != want || ok != wantOK {
					t.Errorf("annotation %s = %q (present %v) after the return, want %q (present %v)", k, got, ok, want, wantOK)
				}
			}
		})
	}
}

// TestCutoverGivesItsOwnValueBackUnderItsFieldManager: a controller
// annotation the controller wrote itself (from ingress/annotations, owned by
// its field manager) is saved as its own when the object is withdrawn, and
// given back on return under the controller's field manager, not the DNS
// one: on the real API server a value the DNS field manager wrote back
// stays owned by it, and a later removal of the key from
// ingress/annotations would then leave it on the object, out of DNS for
// good. A value someone else set on the object (the legacy key here) is
// given back under the DNS field manager, as before, so that no apply of
// the controller ever removes it.
func TestCutoverGivesItsOwnValueBackUnderItsFieldManager(t *testing.T) {
	const fieldManager = "test" // the fixture controller's
	f := newCutoverFixture(t, testDrain)
	svc := service(map[string]string{AnnotationGateway: "gw", AnnotationAnnotations: `{"external-dns.kubernetes.io/controller":"someone-else"}`}, port("http", 80))
	svc.ResourceVersion = "1"
	f.addIngress(svc, both(withAddress, func(ing *networkingv1.Ingress) {
		metav1.SetMetaDataAnnotation(&ing.ObjectMeta, AnnotationExternalDNSControllerLegacy, "someone-else-legacy")
		ing.ManagedFields = []metav1.ManagedFieldsEntry{{
			Manager: fieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "networking.k8s.io/v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:external-dns.kubernetes.io/controller":{}}},"f:spec":{"f:rules":{}}}`)},
		}}
	}))
	f.syncIngressToServer()
	f.addRoute(svc, servedAt(1))
	f.c.settling.since[settleKey{svc: cache.MetaObjectToName(svc)}] = readySince{uid: "route-uid", at: testNow.Add(-time.Hour)}
	f.addService(svc, true)
	ings := f.kube.NetworkingV1().Ingresses("default")

	if got := requeued(t, f.sync(svc)); got != testDrain {
		t.Fatalf("requeued after %v, want the drain", got)
	}
	live, err := ings.Get(context.Background(), "my-nginx", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := live.Annotations[AnnotationDNSControllerOwn], AnnotationExternalDNSController; got != want {
		t.Errorf("withdrawn with %s = %q, want %q (the key the controller wrote)", AnnotationDNSControllerOwn, got, want)
	}
	live.ManagedFields = nil // the DNS field manager took the keys
	if err := f.c.ingresses.Update(live); err != nil {
		t.Fatal(err)
	}

	route, _, _ := f.routes.GetByKey("default/my-nginx")
	notServing := route.(*gatewayv1.HTTPRoute).DeepCopy()
	notServing.Generation = 2
	if err := f.routes.Update(notServing); err != nil {
		t.Fatal(err)
	}
	f.clearActions()
	if err := f.sync(svc); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if !slices.Contains(f.reasons(), ReasonReturnedToDNS) {
		t.Fatal("not returned to external-dns")
	}
	wrote := map[string]string{} // annotation -> the field manager that wrote it back
	patches, managers := f.patches()
	for i, ops := range patches {
		for _, op := range ops {
			if op["op"] == "replace" || op["op"] == "remove" {
				wrote[strings.TrimPrefix(strings.ReplaceAll(op["path"].(string), "~1", "/"), "/metadata/annotations/")] = managers[i]
			}
		}
	}
	for k, want := range map[string]string{
		AnnotationExternalDNSController:       fieldManager,
		AnnotationExternalDNSControllerLegacy: dnsFieldManager,
		AnnotationDNSWithdrawn:                dnsFieldManager,
	} {
		if got := wrote[k]; got != want {
			t.Errorf("%s given back by field manager %q, want %q (patches %v by %v)", k, got, want, patches, managers)
		}
	}
	live, err = ings.Get(context.Background(), "my-nginx", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if withdrawalMarked(live) {
		t.Errorf("annotations %v still mark it withdrawn", live.Annotations)
	}
	for k, want := range map[string]string{AnnotationExternalDNSController: "someone-else", AnnotationExternalDNSControllerLegacy: "someone-else-legacy"} {
		if got := live.Annotations[k]; got != want {
			t.Errorf("annotation %s = %q after the return, want %q", k, got, want)
		}
	}
}

// TestCutoverDrainOnTheAPIServersClock: the drain is measured on the API
// server's clock, from the time it recorded for the withdrawal (the DNS
// field manager's managedFields entry) to its now (a dry-run patch's
// entry), not between the clock of the leader that withdrew the object
// (its ingress/dns-withdrawn) and this one's.
func TestCutoverDrainOnTheAPIServersClock(t *testing.T) {
	for _, tc := range []struct {
		name       string
		annotation time.Time   // ingress/dns-withdrawn, the writer's clock
		server     serverClock // now defaults to testNow
		want       []string
		wantAfter  time.Duration
	}{
		{name: "withdrawn by a leader whose clock was behind (its time says 10m ago), 1m ago on the API server's: kept for the 5m left",
			annotation: testNow.Add(-10 * time.Minute), server: serverClock{withdrawn: testNow.Add(-time.Minute)},
			wantAfter: 5 * time.Minute},
		{name: "withdrawn by a leader whose clock was ahead (its time is in this one's future), 7m ago on the API server's: deleted",
			annotation: testNow.Add(3 * time.Minute), server: serverClock{withdrawn: testNow.Add(-7 * time.Minute)},
			want: []string{"delete ingresses"}},
		{name: "the API server's clock differs from this one: its own two times decide",
			annotation: testNow.Add(-7 * time.Minute), server: serverClock{now: testNow.Add(time.Hour), withdrawn: testNow.Add(time.Hour - 2*time.Minute)},
			wantAfter: 4 * time.Minute},
		{name: "no managedFields time of the withdrawal (withdrawn by an earlier version): its annotation against the API server's now",
			annotation: testNow.Add(-7 * time.Minute), server: serverClock{noWithdrawalEntry: true, now: testNow.Add(-2 * time.Minute)},
			wantAfter: time.Minute},
		{name: "the API server's times are to the second: the withdrawal counts from the second after its time",
			annotation: testNow.Add(-7 * time.Minute), server: serverClock{now: testNow.Truncate(time.Second), withdrawn: testNow.Truncate(time.Second).Add(-6 * time.Minute)},
			wantAfter: time.Second},
		{name: "the API server refuses the dry run (a webhook with side effects): this clock decides, as before",
			annotation: testNow.Add(-7 * time.Minute), server: serverClock{refuse: apierrors.NewBadRequest("admission webhook does not support dry run")},
			want: []string{"delete ingresses"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, 6*time.Minute)
			if tc.server.now.IsZero() {
				tc.server.now = testNow
			}
			f.server = tc.server
			svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
			svc.ResourceVersion = "1"
			f.addIngress(svc, both(withAddress, withdrawn[*networkingv1.Ingress](tc.annotation)))
			f.syncIngressToServer()
			f.addRoute(svc, servedAt(1))
			f.addService(svc, true)
			f.clearActions()
			if got := requeued(t, f.sync(svc)); got != tc.wantAfter {
				t.Errorf("requeued after %v, want %v", got, tc.wantAfter)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
		})
	}
}
