// Integration tests of the ingress-manager controller against a real
// kube-apiserver + etcd.
package ingressmanager

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
	m      *framework.Manager
	writes *framework.RequestCounter
}

// setup creates a namespace and runs a manager with only ingress-manager,
// scoped to it, whose requests are counted.
func setup(t *testing.T, mutate ...func(*app.Options)) *env {
	client, ns := framework.Setup(t)
	e := &env{t: t, ctx: context.Background(), client: client, ns: ns}
	e.start(mutate...)
	return e
}

func (e *env) start(mutate ...func(*app.Options)) {
	o := framework.ControllerOptions(e.ns, "ingress-manager")
	for _, f := range mutate {
		f(o)
	}
	c, counter := framework.CountRequests(framework.AdminConfig())
	e.writes = counter
	e.m = framework.StartManager(e.t, c, o)
}

func (e *env) createService(svc *corev1.Service) *corev1.Service {
	e.t.Helper()
	out, err := e.client.CoreV1().Services(e.ns).Create(e.ctx, svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating service: %v", err)
	}
	return out
}

// annotate sets (value non-nil) or removes (nil) Service annotations.
func (e *env) annotate(name string, ann map[string]*string) {
	e.t.Helper()
	framework.Annotate(e.t, e.client, e.ns, name, ann)
}

// waitIngress waits until the Ingress name exists and check accepts it.
func (e *env) waitIngress(name, what string, check func(*networkingv1.Ingress) error) *networkingv1.Ingress {
	e.t.Helper()
	return framework.WaitIngress(e.t, e.client, e.ns, name, what, check)
}

func (e *env) waitNoIngress(name, what string) {
	e.t.Helper()
	framework.WaitGone(e.t, what, framework.Get(e.client.NetworkingV1().Ingresses(e.ns).Get, name))
}

// waitEvent waits for an Event of reason on the Service name whose message
// contains msg, and returns it.
func (e *env) waitEvent(name, eventType, reason, msg string) *corev1.Event {
	e.t.Helper()
	return framework.WaitEvent(e.t, e.client, framework.Timeout, e.ns, "Service", name, eventType, reason, msg)
}

// waitSynced waits until the manager synced the Service key n times in all.
func (e *env) waitSynced(name string, n int) {
	e.t.Helper()
	framework.Eventually(e.t, framework.Timeout, fmt.Sprintf("%d syncs of %s", n, name), func(context.Context) (bool, error) {
		return e.syncs(name) >= n, nil
	})
}

// syncs counts the manager's syncs of the Service key so far.
func (e *env) syncs(name string) int {
	key := fmt.Sprintf(`key="%s/%s"`, e.ns, name)
	count := 0
	for _, line := range strings.Split(e.m.Logs(), "\n") {
		if strings.HasPrefix(line, "INFO Synced ") && strings.Contains(line, key) && strings.Contains(line, `controller="ingress-manager"`) {
			count++
		}
	}
	return count
}

func rule(ing *networkingv1.Ingress) (host string, path networkingv1.HTTPIngressPath, err error) {
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
		return "", path, fmt.Errorf("want one rule with one path, got %+v", ing.Spec.Rules)
	}
	return ing.Spec.Rules[0].Host, ing.Spec.Rules[0].HTTP.Paths[0], nil
}

func TestSeedExample(t *testing.T) {
	e := setup(t)
	svc := e.createService(framework.SeedService(e.ns, "my-nginx", map[string]string{"ingress/http": "nginx"}))
	ing := e.waitIngress("my-nginx", "the seed's Ingress", nil)

	ref := metav1.GetControllerOf(ing)
	if ref == nil || ref.Kind != "Service" || ref.APIVersion != "v1" || ref.Name != "my-nginx" || ref.UID != svc.UID ||
		!ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller owner reference = %+v, want Service my-nginx %s with blockOwnerDeletion", ref, svc.UID)
	}
	host, path, err := rule(ing)
	if err != nil {
		t.Fatal(err)
	}
	if host != "example.com" || path.Path != "/" || ptr.Deref(path.PathType, "") != networkingv1.PathTypePrefix ||
		path.Backend.Service == nil || path.Backend.Service.Name != "my-nginx" || path.Backend.Service.Port.Number != 80 {
		t.Errorf("rule = host %q path %+v, want example.com / Prefix -> my-nginx:80", host, path)
	}
	if ing.Spec.IngressClassName != nil || len(ing.Spec.TLS) != 0 {
		t.Errorf("spec = %+v, want no class and no TLS as in the seed", ing.Spec)
	}
	e.waitEvent("my-nginx", corev1.EventTypeNormal, "IngressCreated", "my-nginx")
	if n := e.writes.Writes("ingresses"); n != 1 {
		t.Errorf("ingress writes = %d, want exactly 1 (%s)", n, e.writes)
	}
}

func TestAnnotationRemovedAndReAdded(t *testing.T) {
	e := setup(t)
	e.createService(framework.SeedService(e.ns, "web", map[string]string{"ingress/http": "nginx"}))
	e.waitIngress("web", "Ingress created", nil)

	e.annotate("web", map[string]*string{"ingress/http": nil})
	e.waitNoIngress("web", "Ingress deleted when the annotation goes")
	e.waitEvent("web", corev1.EventTypeNormal, "IngressDeleted", "no longer has the ingress/http annotation")

	e.annotate("web", map[string]*string{"ingress/http": ptr.To("yes")})
	e.waitIngress("web", "Ingress created again when the annotation is back", nil)

	// "false" disables like removal does.
	e.annotate("web", map[string]*string{"ingress/http": ptr.To("false")})
	e.waitNoIngress("web", `Ingress deleted for ingress/http: "false"`)
}

func TestDeletedIngressIsRecreated(t *testing.T) {
	e := setup(t)
	e.createService(framework.SeedService(e.ns, "web", map[string]string{"ingress/http": ""}))
	first := e.waitIngress("web", "Ingress created", nil)
	if err := e.client.NetworkingV1().Ingresses(e.ns).Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitIngress("web", "Ingress recreated", func(ing *networkingv1.Ingress) error {
		if ing.UID == first.UID {
			return fmt.Errorf("still the old Ingress")
		}
		return nil
	})
}

func TestDeletedServiceRemovesIngress(t *testing.T) {
	e := setup(t)
	e.createService(framework.SeedService(e.ns, "web", map[string]string{"ingress/http": "x"}))
	e.waitIngress("web", "Ingress created", nil)
	if err := e.client.CoreV1().Services(e.ns).Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The test control plane runs no garbage collector: the controller does it.
	e.waitNoIngress("web", "Ingress deleted with its Service")
}

// A Service being deleted (here held by a finalizer; in a cluster, by the
// garbage collector's foreground deletion until what it owns is gone) keeps
// no Ingress: one deleted meanwhile is not recreated.
func TestServiceBeingDeletedGetsNoNewIngress(t *testing.T) {
	e := setup(t)
	svc := framework.SeedService(e.ns, "web", map[string]string{"ingress/http": "x"})
	svc.Finalizers = []string{"test.kube-sample.io/hold"}
	e.createService(svc)
	e.waitIngress("web", "Ingress created", nil)
	e.waitSynced("web", 1) // the create; the watch event of our own write brings no sync
	e.writes.Reset()

	if err := e.client.CoreV1().Services(e.ns).Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitSynced("web", 2)
	if err := e.client.NetworkingV1().Ingresses(e.ns).Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitSynced("web", 3)
	if _, err := e.client.NetworkingV1().Ingresses(e.ns).Get(e.ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Ingress of a Service being deleted was recreated (get: %v)", err)
	}
	if n := e.writes.Writes("ingresses"); n != 0 {
		t.Errorf("ingress writes = %d, want 0 (%s)", n, e.writes)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := e.client.CoreV1().Services(e.ns).Patch(e.ctx, "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, "the Service", framework.Get(e.client.CoreV1().Services(e.ns).Get, "web"))
}

func foreignIngress(ns, name string, owner *metav1.OwnerReference) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"team": "other"}},
		Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "elsewhere", Port: networkingv1.ServiceBackendPort{Number: 8080}}},
		},
	}
	if owner != nil {
		ing.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return ing
}

func TestForeignIngressIsLeftAlone(t *testing.T) {
	e := setup(t)
	foreign, err := e.client.NetworkingV1().Ingresses(e.ns).Create(e.ctx, foreignIngress(e.ns, "web", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.createService(framework.SeedService(e.ns, "web", map[string]string{"ingress/http": "nginx"}))
	e.waitEvent("web", corev1.EventTypeWarning, "IngressExists", "not controlled by this Service")
	e.waitSynced("web", 1)

	got, err := e.client.NetworkingV1().Ingresses(e.ns).Get(e.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the foreign Ingress was modified: %+v", got)
	}
	if n := e.writes.Writes("ingresses"); n != 0 {
		t.Errorf("ingress writes = %d, want 0 (%s)", n, e.writes)
	}

	// Reconciled again when the foreign Ingress goes.
	if err := e.client.NetworkingV1().Ingresses(e.ns).Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitIngress("web", "our Ingress once the foreign one is gone", func(ing *networkingv1.Ingress) error {
		if metav1.GetControllerOf(ing) == nil {
			return fmt.Errorf("not ours yet")
		}
		return nil
	})

	// A foreign Ingress controlled by something else is not touched when
	// the annotation goes either.
	e.createService(framework.SeedService(e.ns, "plain", nil))
	other := foreignIngress(e.ns, "plain", &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "plain",
		UID: types.UID("4f1a5a3c-0000-4000-8000-000000000001"), Controller: ptr.To(true)})
	if _, err := e.client.NetworkingV1().Ingresses(e.ns).Create(e.ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitSynced("plain", 2)
	if _, err := e.client.NetworkingV1().Ingresses(e.ns).Get(e.ctx, "plain", metav1.GetOptions{}); err != nil {
		t.Errorf("a foreign Ingress next to an unannotated Service was removed: %v", err)
	}
}

func TestStaleOwnerIsReplaced(t *testing.T) {
	e := setup(t)
	stale := foreignIngress(e.ns, "web", &metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: "web",
		UID: types.UID("0b6c2a4e-0000-4000-8000-00000000dead"), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)})
	old, err := e.client.NetworkingV1().Ingresses(e.ns).Create(e.ctx, stale, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc := e.createService(framework.SeedService(e.ns, "web", map[string]string{"ingress/http": "nginx"}))
	e.waitIngress("web", "the stale Ingress replaced", func(ing *networkingv1.Ingress) error {
		if ing.UID == old.UID {
			return fmt.Errorf("still the stale Ingress")
		}
		if ref := metav1.GetControllerOf(ing); ref == nil || ref.UID != svc.UID {
			return fmt.Errorf("owner = %+v, want the current Service", ref)
		}
		if ing.Spec.DefaultBackend != nil {
			return fmt.Errorf("the replacement kept the stale spec")
		}
		return nil
	})
}

func TestDriftIsRestoredAndForeignFieldsKept(t *testing.T) {
	e := setup(t)
	e.createService(framework.SeedService(e.ns, "web", map[string]string{
		"ingress/http":        "nginx",
		"ingress/annotations": `{"nginx.ingress.kubernetes.io/rewrite-target": "/"}`,
	}))
	ing := e.waitIngress("web", "Ingress created", nil)

	// Someone edits a field we manage and adds an annotation of their own.
	ing.Spec.Rules[0].Host = "hijacked.example.org"
	ing.Annotations["team.example.com/owner"] = "payments"
	if _, err := e.client.NetworkingV1().Ingresses(e.ns).Update(e.ctx, ing, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	e.waitIngress("web", "host restored, foreign annotation kept", func(ing *networkingv1.Ingress) error {
		host, _, err := rule(ing)
		if err != nil {
			return err
		}
		if host != "example.com" {
			return fmt.Errorf("host = %q", host)
		}
		if ing.Annotations["team.example.com/owner"] != "payments" {
			return fmt.Errorf("foreign annotation lost: %v", ing.Annotations)
		}
		if ing.Annotations["nginx.ingress.kubernetes.io/rewrite-target"] != "/" {
			return fmt.Errorf("our annotation lost: %v", ing.Annotations)
		}
		return nil
	})
	e.waitEvent("web", corev1.EventTypeNormal, "IngressUpdated", "web")
	// The repair moved our fields from the create's Update entry to our
	// Apply entry (once): nothing of ours is left in an Update entry.
	e.waitIngress("web", "our fields owned by our Apply entry only", func(ing *networkingv1.Ingress) error {
		for _, mf := range ing.ManagedFields {
			if mf.Manager == framework.Options().FieldManager && mf.Operation != metav1.ManagedFieldsOperationApply {
				return fmt.Errorf("managedFields entry %s %s left", mf.Manager, mf.Operation)
			}
		}
		return nil
	})

	// An annotation dropped from ingress/annotations goes; the foreign one stays.
	e.annotate("web", map[string]*string{"ingress/annotations": ptr.To(`{}`)})
	e.waitIngress("web", "our annotation removed, foreign annotation kept", func(ing *networkingv1.Ingress) error {
		if _, ok := ing.Annotations["nginx.ingress.kubernetes.io/rewrite-target"]; ok {
			return fmt.Errorf("dropped annotation still there: %v", ing.Annotations)
		}
		if ing.Annotations["team.example.com/owner"] != "payments" {
			return fmt.Errorf("foreign annotation lost: %v", ing.Annotations)
		}
		return nil
	})
}

func TestOptions(t *testing.T) {
	e := setup(t, func(o *app.Options) {
		o.IngressHostTemplate = "{{.Name}}.{{.Namespace}}.apps.example.com"
		o.IngressClass = "nginx"
	})
	svc := framework.SeedService(e.ns, "api", map[string]string{"ingress/http": "nginx"})
	svc.Spec.Ports = []corev1.ServicePort{
		{Name: "grpc", Port: 9090, TargetPort: intstr.FromInt32(9090)},
		{Name: "web", Port: 8080, TargetPort: intstr.FromInt32(8080)},
		{Name: "metrics", Port: 9100, TargetPort: intstr.FromInt32(9100)},
	}
	svc.Annotations["ingress/port"] = "web"
	e.createService(svc)

	// Defaults from the flags: host template and class; port by name.
	e.waitIngress("api", "Ingress with flag defaults", func(ing *networkingv1.Ingress) error {
		host, path, err := rule(ing)
		if err != nil {
			return err
		}
		if want := "api." + e.ns + ".apps.example.com"; host != want {
			return fmt.Errorf("host = %q, want %q", host, want)
		}
		if ptr.Deref(ing.Spec.IngressClassName, "") != "nginx" {
			return fmt.Errorf("class = %v, want nginx", ing.Spec.IngressClassName)
		}
		if path.Backend.Service.Port.Number != 8080 {
			return fmt.Errorf("port = %d, want 8080 (named web)", path.Backend.Service.Port.Number)
		}
		return nil
	})

	// Every annotation at once.
	e.annotate("api", map[string]*string{
		"ingress/host":        ptr.To("api.example.com"),
		"ingress/path":        ptr.To("/v1"),
		"ingress/path-type":   ptr.To("Exact"),
		"ingress/port":        ptr.To("9090"),
		"ingress/class":       ptr.To("internal"),
		"ingress/tls-secret":  ptr.To("api-tls"),
		"ingress/annotations": ptr.To(`{"cert-manager.io/cluster-issuer": "letsencrypt"}`),
	})
	e.waitIngress("api", "Ingress with every option", func(ing *networkingv1.Ingress) error {
		host, path, err := rule(ing)
		if err != nil {
			return err
		}
		switch {
		case host != "api.example.com":
			return fmt.Errorf("host = %q", host)
		case path.Path != "/v1" || ptr.Deref(path.PathType, "") != networkingv1.PathTypeExact:
			return fmt.Errorf("path = %q %v", path.Path, path.PathType)
		case path.Backend.Service.Port.Number != 9090:
			return fmt.Errorf("port = %d", path.Backend.Service.Port.Number)
		case ptr.Deref(ing.Spec.IngressClassName, "") != "internal":
			return fmt.Errorf("class = %v", ing.Spec.IngressClassName)
		case len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "api-tls" ||
			len(ing.Spec.TLS[0].Hosts) != 1 || ing.Spec.TLS[0].Hosts[0] != "api.example.com":
			return fmt.Errorf("tls = %+v", ing.Spec.TLS)
		case ing.Annotations["cert-manager.io/cluster-issuer"] != "letsencrypt":
			return fmt.Errorf("annotations = %v", ing.Annotations)
		}
		return nil
	})

	// Options removed again: back to the defaults, TLS gone.
	e.annotate("api", map[string]*string{
		"ingress/host": nil, "ingress/path": nil, "ingress/path-type": nil, "ingress/class": nil,
		"ingress/tls-secret": nil, "ingress/annotations": nil, "ingress/port": ptr.To("web"),
	})
	e.waitIngress("api", "Ingress back to defaults", func(ing *networkingv1.Ingress) error {
		host, path, err := rule(ing)
		if err != nil {
			return err
		}
		if host != "api."+e.ns+".apps.example.com" || path.Path != "/" || len(ing.Spec.TLS) != 0 ||
			ptr.Deref(ing.Spec.IngressClassName, "") != "nginx" {
			return fmt.Errorf("spec = %+v", ing.Spec)
		}
		if _, ok := ing.Annotations["cert-manager.io/cluster-issuer"]; ok {
			return fmt.Errorf("annotation not removed: %v", ing.Annotations)
		}
		return nil
	})
}

// TestBadValuesWarnAndWriteNothing: a bad value is a Warning Event on the
// Service, and no write, until it is fixed. Each annotation's bad values and
// reasons are the unit tests' (TestSyncBadValueWarnsThenConverges, and the
// rendering tests); here one of them, through the API server.
func TestBadValuesWarnAndWriteNothing(t *testing.T) {
	tests := []struct {
		name, key, bad, reason, msg string
		fix                         *string
	}{
		{"path", "ingress/path", "no-slash", "InvalidPath", "ingress/path", ptr.To("/ok")},
	}
	e := setup(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("bad-%d", i)
			e.t = t
			before := e.writes.Writes("ingresses")
			e.createService(framework.SeedService(e.ns, name, map[string]string{"ingress/http": "nginx", tc.key: tc.bad}))
			ev := e.waitEvent(name, corev1.EventTypeWarning, tc.reason, tc.msg)
			t.Logf("event: %s: %s", ev.Reason, ev.Message)
			e.waitSynced(name, 1)
			if _, err := e.client.NetworkingV1().Ingresses(e.ns).Get(e.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("an Ingress exists for a Service with a bad %s (err %v)", tc.key, err)
			}
			if n := e.writes.Writes("ingresses") - before; n != 0 {
				t.Errorf("ingress writes = %d for a bad value, want 0", n)
			}
			// Fixing the annotation converges.
			e.annotate(name, map[string]*string{tc.key: tc.fix})
			e.waitIngress(name, "Ingress once the annotation is fixed", nil)
		})
	}

	// Ambiguous port: several ports, none 80 or named http.
	e.t = t
	svc := framework.SeedService(e.ns, "ambiguous", map[string]string{"ingress/http": "nginx"})
	svc.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 81}, {Name: "b", Port: 82}}
	e.createService(svc)
	e.waitEvent("ambiguous", corev1.EventTypeWarning, "AmbiguousPort", "ingress/port")
	// No hot loop: the bad Service is synced once, not retried.
	e.waitSynced("ambiguous", 1)
	if n := e.m.CountLogs("Error syncing"); n != 0 {
		t.Errorf("bad input was retried as an error %d times", n)
	}
}

func TestRestartWhenConvergedWritesNothing(t *testing.T) {
	e := setup(t)
	const n = 30
	for i := range n {
		e.createService(framework.SeedService(e.ns, fmt.Sprintf("svc-%d", i), map[string]string{"ingress/http": "nginx"}))
	}
	// Converge, counting writes: exactly one per Ingress.
	framework.Eventually(t, framework.Timeout, fmt.Sprintf("%d Ingresses", n), func(ctx context.Context) (bool, error) {
		list, err := e.client.NetworkingV1().Ingresses(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == n, err
	})
	for i := range n {
		e.waitSynced(fmt.Sprintf("svc-%d", i), 1) // the create; the watch event of our own write brings no sync
	}
	if got := e.writes.Writes("ingresses"); got != n {
		t.Errorf("ingress writes to converge %d Services = %d, want %d (%s)", n, got, n, e.writes)
	}
	if err := e.m.Stop(); err != nil {
		t.Fatal(err)
	}

	// A new manager finds everything converged: every Service synced, no write.
	e.start()
	for i := range n {
		e.waitSynced(fmt.Sprintf("svc-%d", i), 1)
	}
	if got := e.writes.Writes(""); got != 0 {
		t.Errorf("writes after a restart with converged state = %d, want 0 (%s)", got, e.writes)
	}
	t.Logf("requests after restart: %s", e.writes)
}

func TestResyncWritesNothing(t *testing.T) {
	e := setup(t, func(o *app.Options) { o.ResyncPeriod = 100 * time.Millisecond })
	e.createService(framework.SeedService(e.ns, "web", map[string]string{"ingress/http": "nginx"}))
	e.waitIngress("web", "Ingress created", nil)
	e.waitSynced("web", 2)
	e.writes.Reset()
	// Several resyncs re-check the Service ...
	e.waitSynced("web", 6)
	// ... and write nothing.
	if got := e.writes.Writes(""); got != 0 {
		t.Errorf("writes during resyncs = %d, want 0 (%s)", got, e.writes)
	}
}

// TestForeignIngressAppearingDuringCreateIsLeftAlone forces the race in
// which someone creates the same-named Ingress, with exactly the values the
// controller writes, after the controller read its cache and before its
// create reaches the API server: the controller must not take it over (an
// apply would have merged into it without a conflict; a create fails).
func TestForeignIngressAppearingDuringCreateIsLeftAlone(t *testing.T) {
	client, ns := framework.Setup(t)
	var raced atomic.Bool
	c := framework.Intercept(framework.AdminConfig(), func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/namespaces/"+ns+"/ingresses") && raced.CompareAndSwap(false, true) {
			// Someone else creates the very Ingress the controller is about to create.
			foreign := &networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
				Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
					Host: "example.com",
					IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
						Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
							Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
								Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
					}},
				}}},
			}
			if _, err := client.NetworkingV1().Ingresses(ns).Create(req.Context(), foreign, metav1.CreateOptions{FieldManager: "someone-else"}); err != nil {
				return nil, err
			}
		}
		return next.RoundTrip(req)
	})
	m := framework.StartManager(t, c, framework.ControllerOptions(ns, "ingress-manager"))
	e := &env{t: t, ctx: context.Background(), client: client, ns: ns, m: m}
	e.createService(framework.SeedService(ns, "web", map[string]string{"ingress/http": "nginx"}))
	e.waitEvent("web", corev1.EventTypeWarning, "IngressExists", "is not controlled by this Service")
	if !raced.Load() {
		t.Fatal("the race was not exercised")
	}
	framework.Eventually(t, framework.Timeout, "the foreign Ingress to be left as its creator made it", func(ctx context.Context) (bool, error) {
		ing, err := client.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(ing.OwnerReferences) != 0 {
			return false, fmt.Errorf("owner references %v on the foreign Ingress", ing.OwnerReferences)
		}
		for _, mf := range ing.ManagedFields {
			if mf.Manager != "someone-else" {
				return false, fmt.Errorf("the foreign Ingress was written by %s (%s)", mf.Manager, mf.Operation)
			}
		}
		return true, nil
	})
}
