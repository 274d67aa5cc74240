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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// env is framework.Env running the ingress-manager alone.
type env struct{ *framework.Env }

func setup(t *testing.T, opts ...func(*app.Options)) *env {
	return &env{framework.NewEnv(t, []string{"ingress-manager"}, opts...)}
}

func rule(ing *networkingv1.Ingress) (host string, path networkingv1.HTTPIngressPath, err error) {
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
		return "", path, fmt.Errorf("want one rule with one path, got %+v", ing.Spec.Rules)
	}
	return ing.Spec.Rules[0].Host, ing.Spec.Rules[0].HTTP.Paths[0], nil
}

func TestSeedExample(t *testing.T) {
	e := setup(t)
	svc := e.CreateService(framework.SeedService(e.NS, "my-nginx", map[string]string{"ingress/http": "nginx"}))
	ing := e.WaitIngress("my-nginx", "the seed's Ingress", nil)

	if err := framework.ControlledBy(ing, svc.UID); err != nil {
		t.Error(err)
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
	e.WaitEvent("my-nginx", corev1.EventTypeNormal, "IngressCreated", "my-nginx")
	if n := e.Writes.Writes("ingresses"); n != 1 {
		t.Errorf("ingress writes = %d, want exactly 1 (%s)", n, e.Writes)
	}
}

func TestAnnotationRemovedAndReAdded(t *testing.T) {
	e := setup(t)
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx"}))
	e.WaitIngress("web", "Ingress created", nil)

	e.Annotate("web", map[string]*string{"ingress/http": nil})
	e.WaitNoIngress("web", "Ingress deleted when the annotation goes")
	e.WaitEvent("web", corev1.EventTypeNormal, "IngressDeleted", "no longer has the ingress/http annotation")

	e.Annotate("web", map[string]*string{"ingress/http": ptr.To("yes")})
	e.WaitIngress("web", "Ingress created again when the annotation is back", nil)

	// "false" disables like removal does.
	e.Annotate("web", map[string]*string{"ingress/http": ptr.To("false")})
	e.WaitNoIngress("web", `Ingress deleted for ingress/http: "false"`)
}

func TestDeletedIngressIsRecreated(t *testing.T) {
	e := setup(t)
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": ""}))
	first := e.WaitIngress("web", "Ingress created", nil)
	if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitIngress("web", "Ingress recreated", func(ing *networkingv1.Ingress) error {
		if ing.UID == first.UID {
			return fmt.Errorf("still the old Ingress")
		}
		return nil
	})
}

func TestDeletedServiceRemovesIngress(t *testing.T) {
	e := setup(t)
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "x"}))
	e.WaitIngress("web", "Ingress created", nil)
	if err := e.Client.CoreV1().Services(e.NS).Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The test control plane runs no garbage collector: the controller does it.
	e.WaitNoIngress("web", "Ingress deleted with its Service")
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
	foreign, err := e.Client.NetworkingV1().Ingresses(e.NS).Create(e.Ctx, foreignIngress(e.NS, "web", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx"}))
	e.WaitEvent("web", corev1.EventTypeWarning, "IngressExists", "not controlled by this Service")
	e.WaitSynced("web", 1)

	got, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the foreign Ingress was modified: %+v", got)
	}
	if n := e.Writes.Writes("ingresses"); n != 0 {
		t.Errorf("ingress writes = %d, want 0 (%s)", n, e.Writes)
	}

	// Reconciled again when the foreign Ingress goes.
	if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitIngress("web", "our Ingress once the foreign one is gone", func(ing *networkingv1.Ingress) error {
		if metav1.GetControllerOf(ing) == nil {
			return fmt.Errorf("not ours yet")
		}
		return nil
	})
}

func TestDriftIsRestoredAndForeignFieldsKept(t *testing.T) {
	e := setup(t)
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{
		"ingress/http":        "nginx",
		"ingress/annotations": `{"nginx.ingress.kubernetes.io/rewrite-target": "/"}`,
	}))
	ing := e.WaitIngress("web", "Ingress created", nil)

	// Someone edits a field we manage and adds an annotation of their own.
	ing.Spec.Rules[0].Host = "hijacked.example.org"
	ing.Annotations["team.example.com/owner"] = "payments"
	if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Update(e.Ctx, ing, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	e.WaitIngress("web", "host restored, foreign annotation kept", func(ing *networkingv1.Ingress) error {
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
	e.WaitEvent("web", corev1.EventTypeNormal, "IngressUpdated", "web")
	// The repair moved our fields from the create's Update entry to our
	// Apply entry (once): nothing of ours is left in an Update entry.
	e.WaitIngress("web", "our fields owned by our Apply entry only", func(ing *networkingv1.Ingress) error {
		for _, mf := range ing.ManagedFields {
			if mf.Manager == framework.Options().FieldManager && mf.Operation != metav1.ManagedFieldsOperationApply {
				return fmt.Errorf("managedFields entry %s %s left", mf.Manager, mf.Operation)
			}
		}
		return nil
	})

	// An annotation dropped from ingress/annotations goes; the foreign one stays.
	e.Annotate("web", map[string]*string{"ingress/annotations": ptr.To(`{}`)})
	e.WaitIngress("web", "our annotation removed, foreign annotation kept", func(ing *networkingv1.Ingress) error {
		if _, ok := ing.Annotations["nginx.ingress.kubernetes.io/rewrite-target"]; ok {
			return fmt.Errorf("dropped annotation still there: %v", ing.Annotations)
		}
		if ing.Annotations["team.example.com/owner"] != "payments" {
			return fmt.Errorf("foreign annotation lost: %v", ing.Annotations)
		}
		return nil
	})
}

func TestRestartWhenConvergedWritesNothing(t *testing.T) {
	e := setup(t)
	const n = 30
	for i := range n {
		e.CreateService(framework.SeedService(e.NS, fmt.Sprintf("svc-%d", i), map[string]string{"ingress/http": "nginx"}))
	}
	// Converge, counting writes: exactly one per Ingress.
	framework.Eventually(t, framework.Timeout, fmt.Sprintf("%d Ingresses", n), func(ctx context.Context) (bool, error) {
		list, err := e.Client.NetworkingV1().Ingresses(e.NS).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == n, err
	})
	for i := range n {
		e.WaitSynced(fmt.Sprintf("svc-%d", i), 1) // the create; the watch event of our own write brings no sync
	}
	if got := e.Writes.Writes("ingresses"); got != n {
		t.Errorf("ingress writes to converge %d Services = %d, want %d (%s)", n, got, n, e.Writes)
	}
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}

	// A new manager finds everything converged: every Service synced, no write.
	e.Start()
	for i := range n {
		e.WaitSynced(fmt.Sprintf("svc-%d", i), 1)
	}
	if got := e.Writes.Writes(""); got != 0 {
		t.Errorf("writes after a restart with converged state = %d, want 0 (%s)", got, e.Writes)
	}
	t.Logf("requests after restart: %s", e.Writes)
}

func TestResyncWritesNothing(t *testing.T) {
	e := setup(t, func(o *app.Options) { o.ResyncPeriod = 100 * time.Millisecond })
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx"}))
	e.WaitIngress("web", "Ingress created", nil)
	e.WaitSynced("web", 2)
	e.Writes.Reset()
	// Several resyncs re-check the Service ...
	e.WaitSynced("web", 6)
	// ... and write nothing.
	if got := e.Writes.Writes(""); got != 0 {
		t.Errorf("writes during resyncs = %d, want 0 (%s)", got, e.Writes)
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
	e := &env{&framework.Env{T: t, Ctx: context.Background(), Client: client, NS: ns, M: m, Controllers: []string{"ingress-manager"}}}
	e.CreateService(framework.SeedService(ns, "web", map[string]string{"ingress/http": "nginx"}))
	e.WaitEvent("web", corev1.EventTypeWarning, "IngressExists", "is not controlled by this Service")
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
