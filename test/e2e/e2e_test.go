package e2e

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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	samplecrd "github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// garbageCollector is the user kube-controller-manager's garbage collector
// deletes as (--use-service-account-credentials).
const garbageCollector = "system:serviceaccount:kube-system:generic-garbage-collector"

// sandboxImage is the image hack/node-up.sh builds and loads: the one image
// besides the product's that the node has, so the one a test Pod can run.
const sandboxImage = "localhost/pause:3.10.2"

// managerUser is the manager's ServiceAccount as the API server names it.
const managerUser = "system:serviceaccount:" + managerNamespace + ":controller-manager"

// logPoll is how often a wait reads a whole log (a Pod's, the audit log).
const logPoll = 250 * time.Millisecond

// TestReplicasReadyAndOneLeads: both replicas of config/default run, pass
// their probes, never restarted, and exactly one of them leads.
func TestReplicasReadyAndOneLeads(t *testing.T) {
	ctx := context.Background()
	pods, err := managerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 {
		t.Fatalf("want the 2 replicas of config/default, found %d: %s", len(pods), describePods(pods))
	}
	for _, p := range pods {
		if !podReady(&p) || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("pod %s is not Ready, or restarted: %s", p.Name, describePods([]corev1.Pod{p}))
		}
	}
	leader := leaderPod(t)
	if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == leader }) {
		t.Fatalf("the Lease is held by %q, not by a replica: %s", leader, describePods(pods))
	}
	// The other replica knows it does not lead: it stands by.
	for _, p := range pods {
		want, notWant := "Another replica leads", "Became leader"
		if p.Name == leader {
			want, notWant = "Became leader", "Another replica leads"
		}
		framework.EventuallyEvery(t, logPoll, timeout, fmt.Sprintf("pod %s logs %q", p.Name, want), func(ctx context.Context) (bool, error) {
			logs, err := podLogs(ctx, p.Name, false, 0)
			if strings.Contains(logs, notWant) {
				return false, fmt.Errorf("pod %s logged %q (the Lease is held by %s)", p.Name, notWant, leader)
			}
			return strings.Contains(logs, want), err
		})
	}
}

// TestPodSecurityRestricted: the manager's namespace enforces the
// "restricted" Pod Security Standard, so the replicas running there were
// admitted under it.
func TestPodSecurityRestricted(t *testing.T) {
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Get(ctx, managerNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Fatalf("namespace %s enforces Pod Security %q, want restricted", managerNamespace, got)
	}
	// Enforcement is on: a Pod that runs as root with no security context
	// is refused there.
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-unrestricted"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: sandboxImage}}},
	}
	_, err = client.CoreV1().Pods(managerNamespace).Create(ctx, bare, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
		t.Fatalf("a Pod without a security context in %s: got %v, want Forbidden by PodSecurity restricted", managerNamespace, err)
	}
	pods, err := managerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) == 0 {
		t.Fatal("no manager Pod was admitted")
	}
}

// TestInClusterConfig: the replicas reach the API server with the
// in-cluster config, the ServiceAccount token the kubelet mounts, and
// nothing else: no kubeconfig, no other volume. The API server's audit log
// shows the leader's Lease writes made with its Pod's token.
func TestInClusterConfig(t *testing.T) {
	pods, err := managerPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	leader := leaderPod(t)
	framework.EventuallyEvery(t, logPoll, timeout, "a Lease write with the leader Pod's ServiceAccount token", func(context.Context) (bool, error) {
		events, err := testNode.Audit(0, func(ev *auditv1.Event) bool {
			r := ev.ObjectRef
			return ev.Verb == "update" && r != nil && r.Resource == "leases" && r.Namespace == managerNamespace && r.Name == leaseName &&
				ev.ResponseStatus != nil && ev.ResponseStatus.Code == 200
		})
		if err != nil || len(events) == 0 {
			return false, err
		}
		u := events[len(events)-1].User
		if u.Username != managerUser || !slices.Contains(u.Extra["authentication.kubernetes.io/pod-name"], leader) {
			return false, fmt.Errorf("the last Lease update came from %s (extra %v), want %s of Pod %s", u.Username, u.Extra, managerUser, leader)
		}
		return true, nil
	})
	for _, p := range pods {
		if p.Spec.ServiceAccountName != "controller-manager" {
			t.Errorf("pod %s runs as ServiceAccount %q, want controller-manager", p.Name, p.Spec.ServiceAccountName)
		}
		for _, v := range p.Spec.Volumes {
			if v.Projected == nil || !strings.HasPrefix(v.Name, "kube-api-access-") {
				t.Errorf("pod %s has volume %s, want only the ServiceAccount token's kube-api-access-*", p.Name, v.Name)
			}
		}
		for _, c := range p.Spec.Containers {
			for _, a := range append(slices.Clone(c.Command), c.Args...) {
				if strings.HasPrefix(a, "--kubeconfig") || strings.HasPrefix(a, "--master") {
					t.Errorf("pod %s container %s is given %s", p.Name, c.Name, a)
				}
			}
			for _, e := range c.Env {
				if e.Name == "KUBECONFIG" {
					t.Errorf("pod %s container %s has KUBECONFIG=%s", p.Name, c.Name, e.Value)
				}
			}
		}
	}
}

// TestSeedIngress is the ingress-manager's seed on a real cluster: the
// my-nginx Service annotated ingress/http gets its Ingress; removing the
// annotation removes it; a deleted Ingress comes back; and deleting the
// Service makes the garbage collector delete the Ingress.
func TestSeedIngress(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t)
	svc := createSeedService(t, ns, map[string]string{ingressmanager.AnnotationHTTP: "nginx"})
	ings := client.NetworkingV1().Ingresses(ns)

	check := func(ing *networkingv1.Ingress) error {
		if err := framework.ControlledBy(ing, svc.UID); err != nil {
			return err
		}
		if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "example.com" || ing.Spec.Rules[0].HTTP == nil ||
			len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
			return fmt.Errorf("want one rule for host example.com with one path, got %+v", ing.Spec.Rules)
		}
		p := ing.Spec.Rules[0].HTTP.Paths[0]
		if p.Path != "/" || p.PathType == nil || *p.PathType != networkingv1.PathTypePrefix || p.Backend.Service == nil ||
			p.Backend.Service.Name != "my-nginx" || p.Backend.Service.Port.Number != 80 {
			return fmt.Errorf("want path / (Prefix) to my-nginx:80, got %+v", p)
		}
		return nil
	}
	ing := framework.WaitIngress(t, client, ns, "my-nginx", "the seed's Ingress", check)

	setAnnotation(t, ns, "my-nginx", nil)
	framework.WaitGone(t, "the Ingress once the annotation is removed", framework.Get(ings.Get, "my-nginx"))

	setAnnotation(t, ns, "my-nginx", ptr.To("nginx"))
	ing = framework.WaitIngress(t, client, ns, "my-nginx", "the Ingress once the annotation is back", check)
	if err := ings.Delete(ctx, "my-nginx", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitIngress(t, client, ns, "my-nginx", "the Ingress recreated after its deletion", func(got *networkingv1.Ingress) error {
		if got.UID == ing.UID {
			return fmt.Errorf("still the deleted Ingress %s", got.UID)
		}
		return check(got)
	})

	deleteOwnerExpectCollected(t, svc, "Ingress", "ingresses", func(ctx context.Context) (metav1.Object, error) {
		return ings.Get(ctx, "my-nginx", metav1.GetOptions{})
	})

	// `kubectl delete service` (background propagation): the Ingress goes
	// too, whether the garbage collector or the manager gets to it first.
	web := createSeedService(t, ns, map[string]string{ingressmanager.AnnotationHTTP: "nginx"}, "web")
	framework.WaitIngress(t, client, ns, web.Name, "the Ingress of Service web", func(ing *networkingv1.Ingress) error { return framework.ControlledBy(ing, web.UID) })
	if err := client.CoreV1().Services(ns).Delete(ctx, web.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, "the Ingress of the deleted Service web", framework.Get(ings.Get, web.Name))
}

// TestSeedHTTPRoute: a Service that asks for a Gateway gets an HTTPRoute
// instead, and the garbage collector deletes it with the Service.
func TestSeedHTTPRoute(t *testing.T) {
	ns := createNamespace(t)
	svc := createSeedService(t, ns, map[string]string{
		ingressmanager.AnnotationHTTP:    "nginx",
		ingressmanager.AnnotationGateway: "gateway-system/public",
	})
	routes := gatewayclient.NewForConfigOrDie(cfg).GatewayV1().HTTPRoutes(ns)
	framework.WaitObject(t, "the Service's HTTPRoute", framework.Get(routes.Get, "my-nginx"), func(r *gatewayv1.HTTPRoute) error {
		if err := framework.ControlledBy(r, svc.UID); err != nil {
			return err
		}
		if len(r.Spec.ParentRefs) != 1 || r.Spec.ParentRefs[0].Name != "public" {
			return fmt.Errorf("want a parentRef to Gateway gateway-system/public, got %+v", r.Spec.ParentRefs)
		}
		return nil
	})
	deleteOwnerExpectCollected(t, svc, "HTTPRoute", "httproutes", func(ctx context.Context) (metav1.Object, error) {
		return routes.Get(ctx, "my-nginx", metav1.GetOptions{})
	})
}

// TestSeedPodLogger is the pod-logger's seed: a Pod scheduled and run on
// the node shows in the leader's log with the seed's sync line, and its
// deletion with the seed's line.
func TestSeedPodLogger(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "seed-pod"},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "pause", Image: sandboxImage, ImagePullPolicy: corev1.PullNever}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, rolloutTimeout, "pod seed-pod Running on the node", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != testNode.Name {
			return false, fmt.Errorf("%s", describePods([]corev1.Pod{*p}))
		}
		return true, nil
	})
	leader := leaderPod(t)
	waitLogLine(t, leader, "Sync/Add/Update for Pod seed-pod", ns+"/seed-pod")
	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, "pod seed-pod gone", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	waitLogLine(t, leader, fmt.Sprintf("Pod %s/seed-pod does not exist anymore", ns))
}

// TestSeedNetwork is the network controller's seed with the in-memory
// backend (config/default's): the seed's Network becomes Ready, and its
// deletion releases the finalizer.
func TestSeedNetwork(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t)
	seed := framework.SeedNetwork(t)
	networks := samplecrd.NewForConfigOrDie(cfg).SamplecrdV1().Networks(ns)
	if _, err := networks.Create(ctx, seed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitObject(t, "the seed's Network Ready", framework.Get(networks.Get, seed.Name), func(n *samplecrdv1.Network) error {
		c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || n.Status.NetworkID == "" || n.Status.SubnetID == "" {
			return fmt.Errorf("status %+v", n.Status)
		}
		return nil
	})
	if err := networks.Delete(ctx, seed.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, "the seed's Network, its finalizer released", framework.Get(networks.Get, seed.Name))
}

// createNamespace makes a namespace for one test, deleted when it ends
// (the node runs the namespace controller).
func createNamespace(t *testing.T) string {
	t.Helper()
	ns := framework.CreateNamespace(t, client)
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	return ns
}

// createSeedService creates the seed's my-nginx Service (or one shaped
// like it, of the name given) with annotations.
func createSeedService(t *testing.T, ns string, annotations map[string]string, name ...string) *corev1.Service {
	t.Helper()
	n := "my-nginx"
	if len(name) > 0 {
		n = name[0]
	}
	created, err := client.CoreV1().Services(ns).Create(context.Background(), framework.SeedService(ns, n, annotations), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// setAnnotation sets (or with nil removes) the ingress/http annotation.
func setAnnotation(t *testing.T, ns, name string, value *string) {
	t.Helper()
	framework.Annotate(t, client, ns, name, map[string]*string{ingressmanager.AnnotationHTTP: value})
}

// deleteOwnerExpectCollected deletes the Service with foreground
// propagation, as `kubectl delete --cascade=foreground` does, and checks
// that the kube-controller-manager's garbage collector deleted the object
// (kind, resource) that get reads: the API server's audit log names who
// deleted it. In foreground deletion the Service stays until the garbage
// collector has deleted what it owns, while the manager leaves a Service
// being deleted alone.
func deleteOwnerExpectCollected(t *testing.T, svc *corev1.Service, kind, resource string, get func(context.Context) (metav1.Object, error)) {
	t.Helper()
	ctx := context.Background()
	mark, err := testNode.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	err = client.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		Preconditions:     &metav1.Preconditions{UID: &svc.UID},
	})
	if err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, "the Service", framework.Get(client.CoreV1().Services(svc.Namespace).Get, svc.Name))
	framework.Eventually(t, timeout, fmt.Sprintf("%s %s/%s deleted with its Service", kind, svc.Namespace, svc.Name), func(ctx context.Context) (bool, error) {
		obj, err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("it still exists with ownerReferences %+v: the garbage collector deletes only what names its deleted owner's UID", obj.GetOwnerReferences())
	})
	var deleters []string
	framework.EventuallyEvery(t, logPoll, timeout, fmt.Sprintf("the audit log's deletion of %s %s/%s", kind, svc.Namespace, svc.Name), func(context.Context) (bool, error) {
		events, err := testNode.Audit(mark, func(ev *auditv1.Event) bool {
			r := ev.ObjectRef
			return ev.Verb == "delete" && r != nil && r.Resource == resource && r.Namespace == svc.Namespace && r.Name == svc.Name &&
				ev.ResponseStatus != nil && ev.ResponseStatus.Code/100 == 2 && !ev.RequestReceivedTimestamp.Time.Before(deleted)
		})
		deleters = nil
		for _, ev := range events {
			deleters = append(deleters, ev.User.Username)
		}
		return len(events) > 0, err
	})
	// More than one deletion by the collector is possible: the manager may
	// see the object go before it sees its Service being deleted, and
	// recreate it once.
	if slices.ContainsFunc(deleters, func(u string) bool { return u != garbageCollector }) {
		t.Fatalf("%s %s/%s was deleted by %v, want the garbage collector (%s) alone", kind, svc.Namespace, svc.Name, deleters, garbageCollector)
	}
}

// leaderPod returns the name of the replica holding the Lease: its
// identity is <hostname>_<random>, and a Pod's hostname is its name.
func leaderPod(t *testing.T) string {
	t.Helper()
	var holder string
	framework.Eventually(t, timeout, "a holder of Lease "+leaseName, func(ctx context.Context) (bool, error) {
		l, err := client.CoordinationV1().Leases(managerNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder = ptr.Deref(l.Spec.HolderIdentity, "")
		return holder != "", nil
	})
	name, _, _ := strings.Cut(holder, "_")
	return name
}

// waitLogLine waits until a line of pod's log contains every one of parts.
func waitLogLine(t *testing.T, pod string, parts ...string) {
	t.Helper()
	framework.EventuallyEvery(t, logPoll, timeout, fmt.Sprintf("a line of %s's log with %q", pod, parts), func(ctx context.Context) (bool, error) {
		logs, err := podLogs(ctx, pod, false, 0)
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(logs, "\n") {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
				return true, nil
			}
		}
		return false, nil
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
