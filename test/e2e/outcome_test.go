package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// The fault tests share one measure, the fault suite's: a known set of
// annotated Services; at the end each has exactly its Ingress and nothing
// else exists (lost, extra); no Ingress was created twice (duplicated); and
// every write the manager made came from the replica that held the Lease at
// that moment (writes by a non-holder), told by the API server's audit log:
// who wrote (the ServiceAccount token names the Pod) and who held the Lease
// (the Lease writes, logged with their bodies).

// podNameExtra is the user extra of a Pod-bound ServiceAccount token that
// names the Pod.
const podNameExtra = "authentication.kubernetes.io/pod-name"

// workload is the Services of one fault test, in a namespace of their own:
// created unannotated, then annotated while the fault happens.
type workload struct {
	t     *testing.T
	ns    string
	names []string
	uids  map[string]types.UID
	// window starts the test's part of the audit log, and who held the
	// Lease then.
	mark                     int64
	markHolder, markIdentity string
	start                    time.Time

	mu        sync.Mutex
	annotated []string
}

// newWorkload creates n Services (headless: the node has 254 cluster IPs)
// without the annotation, and opens the test's audit window.
func newWorkload(t *testing.T, n int) *workload {
	t.Helper()
	w := &workload{t: t, ns: createNamespace(t), uids: map[string]types.UID{}}
	ctx := context.Background()
	var mu sync.Mutex
	err := framework.Parallel(ctx, 8, n, func(ctx context.Context, i int) error {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%04d", i)},
			Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		created, err := client.CoreV1().Services(w.ns).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		w.uids[created.Name] = created.UID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		w.names = append(w.names, fmt.Sprintf("svc-%04d", i))
	}
	if w.mark, err = testNode.AuditMark(); err != nil {
		t.Fatal(err)
	}
	w.markIdentity = leaseIdentity(t)
	w.markHolder, _, _ = strings.Cut(w.markIdentity, "_")
	w.start = time.Now()
	return w
}

// annotate annotates Services [from, to) one after the other, one every
// `every`, so that they keep coming while a fault happens; it returns at
// once, and the channel gets the outcome.
func (w *workload) annotate(from, to int, every time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for _, name := range w.names[from:to] {
			<-tick.C
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true","ingress/host":%q}}}`, ingressmanager.AnnotationHTTP, name+".example.com")
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			_, err := client.CoreV1().Services(w.ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			cancel()
			if err != nil {
				done <- fmt.Errorf("annotating Service %s: %w", name, err)
				return
			}
			w.mu.Lock()
			w.annotated = append(w.annotated, name)
			w.mu.Unlock()
		}
		done <- nil
	}()
	return done
}

// outcome is what a fault test counts (the fault suite's framework.Outcome:
// lost, extra, duplicated, writes by a non-holder) and prints.
type outcome struct {
	framework.Outcome
	// writes is every successful Ingress write of the manager.
	writes int
	// handovers are the Lease's changes of holder in the window.
	handovers []handover
	converged time.Duration
}

// handover is a change of the Lease's holder identity: from a Pod (or ""
// when released) to another, or to a new process of the same Pod.
type handover struct {
	at       time.Time
	from, to string // Pods
	toID     string // the new holder identity
}

// settle waits until every annotated Service has its Ingress and nothing
// else exists (at most rolloutTimeout), then counts from the audit log, and
// fails the test when any count is wrong. It prints the counts either way.
func (w *workload) settle(annotating <-chan error) outcome {
	t := w.t
	t.Helper()
	if err := <-annotating; err != nil {
		t.Fatal(err)
	}
	var o outcome
	var problems []string
	framework.Eventually(t, rolloutTimeout, fmt.Sprintf("every annotated Service of %s with its Ingress, and no other Ingress", w.ns), func(ctx context.Context) (bool, error) {
		list, err := client.NetworkingV1().Ingresses(w.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		problems = w.ingressProblems(list.Items, &o)
		if len(problems) > 0 {
			return false, fmt.Errorf("%d lost, %d extra: %s", o.Lost, o.Extra, strings.Join(problems[:min(len(problems), 5)], "; "))
		}
		return true, nil
	})
	o.converged = time.Since(w.start)
	if err := w.countWrites(&o); err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, h := range o.handovers {
		hs = append(hs, fmt.Sprintf("%s -> %s at +%.1fs", or(h.from, "(released)"), or(h.toID, "(released)"), h.at.Sub(w.start).Seconds()))
	}
	t.Logf("outcome: %d annotated Services, %d lost, %d extra, %d duplicated, %d Ingress writes (%.2f per Service), %d by a replica not holding the Lease; Lease holders: %s; converged %.1fs after the start",
		o.Wanted, o.Lost, o.Extra, o.Duplicated, o.writes, float64(o.writes)/float64(max(o.Wanted, 1)), o.NonLeader, strings.Join(hs, ", "), o.converged.Seconds())
	if o.Bad() > 0 {
		t.Errorf("want 0 lost, 0 extra, 0 duplicated and 0 writes by a replica not holding the Lease")
	}
	return o
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ingressProblems compares the Ingresses of the namespace with the
// annotated Services (framework.CompareIngresses): each has exactly its
// own Ingress (controlled by it, host <name>.example.com), and no other
// exists.
func (w *workload) ingressProblems(ings []networkingv1.Ingress, o *outcome) []string {
	w.mu.Lock()
	want := map[string]framework.IngressWant{}
	for _, name := range w.annotated {
		want[name] = framework.IngressWant{UID: w.uids[name], Check: func(ing *networkingv1.Ingress) error {
			if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != name+".example.com" {
				return fmt.Errorf("rules %+v, want host %s.example.com", ing.Spec.Rules, name)
			}
			return nil
		}}
	}
	w.mu.Unlock()
	c := framework.CompareIngresses(ings, want, nil)
	// Every Ingress of the namespace is the manager's: one not wanted is extra.
	for _, ing := range ings {
		if _, ok := want[ing.Name]; !ok && metav1.GetControllerOf(&ing) == nil {
			c.Extra++
			c.Problems = append(c.Problems, ing.Name+": an Ingress whose Service is not annotated")
		}
	}
	o.Wanted, o.Lost, o.Extra = c.Wanted, c.Lost, c.Extra
	return c.Problems
}

// countWrites reads the audit window: the Lease's holders over time, and
// every Ingress write of the namespace; it counts creates per name and
// writes made by a replica that did not hold the Lease when the API server
// received them.
func (w *workload) countWrites(o *outcome) error {
	events, err := testNode.Audit(w.mark, func(ev *auditv1.Event) bool {
		r := ev.ObjectRef
		if r == nil || ev.ResponseStatus == nil || ev.ResponseStatus.Code/100 != 2 {
			return false
		}
		lease := r.Resource == "leases" && r.Namespace == managerNamespace && r.Name == leaseName
		ingress := r.Resource == "ingresses" && r.Namespace == w.ns && ev.User.Username == managerUser
		return (lease || ingress) && slices.Contains([]string{"create", "update", "patch", "delete"}, ev.Verb)
	})
	if err != nil {
		return err
	}
	// Lease writes take effect when they complete; a write by a replica
	// counts from when the API server received it.
	type holding struct {
		at            time.Time
		pod, identity string
	}
	holders := []holding{{time.Time{}, w.markHolder, w.markIdentity}}
	for _, ev := range events {
		if ev.ObjectRef.Resource != "leases" {
			continue
		}
		identity, err := leaseHolder(&ev)
		if err != nil {
			return err
		}
		pod, _, _ := strings.Cut(identity, "_")
		if last := holders[len(holders)-1]; identity != last.identity {
			o.handovers = append(o.handovers, handover{at: ev.StageTimestamp.Time, from: last.pod, to: pod, toID: identity})
		}
		holders = append(holders, holding{ev.StageTimestamp.Time, pod, identity})
	}
	slices.SortStableFunc(holders, func(a, b holding) int { return a.at.Compare(b.at) })
	holderAt := func(t time.Time) string {
		h := ""
		for _, x := range holders {
			if x.at.After(t) {
				break
			}
			h = x.pod
		}
		return h
	}
	creates := map[string]int{}
	var wrong []string
	for _, ev := range events {
		if ev.ObjectRef.Resource != "ingresses" {
			continue
		}
		o.writes++
		if ev.Verb == "create" {
			creates[ev.ObjectRef.Name]++
		}
		pod := ""
		if p := ev.User.Extra[podNameExtra]; len(p) > 0 {
			pod = p[0]
		}
		if h := holderAt(ev.RequestReceivedTimestamp.Time); pod != h {
			o.NonLeader++
			wrong = append(wrong, fmt.Sprintf("%s %s by %s at +%.3fs while %s held the Lease", ev.Verb, ev.ObjectRef.Name, pod,
				ev.RequestReceivedTimestamp.Sub(w.start).Seconds(), or(h, "no one")))
		}
	}
	o.CountCreates(creates)
	wrong = append(wrong, o.Problems...)
	for _, s := range wrong[:min(len(wrong), 10)] {
		w.t.Log(s)
	}
	return nil
}

// leaseHolder returns the holder identity an audited Lease write names (""
// for a release): <hostname>_<random>, and a Pod's hostname is its name.
func leaseHolder(ev *auditv1.Event) (string, error) {
	if ev.Verb == "delete" {
		return "", nil
	}
	if ev.RequestObject == nil {
		return "", fmt.Errorf("the audit log has no body for the %s of Lease %s (audit policy of hack/node-up.sh)", ev.Verb, leaseName)
	}
	var l coordinationv1.Lease
	if err := json.Unmarshal(ev.RequestObject.Raw, &l); err != nil {
		return "", fmt.Errorf("the %s of Lease %s in the audit log: %w", ev.Verb, leaseName, err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
}
