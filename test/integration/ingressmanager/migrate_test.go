package ingressmanager

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// The tests of this file move users' Ingresses (ones no Service controls)
// to HTTPRoutes, playing their Ingress controller (an address in the
// Ingress's status) and the Gateway's (the route's status, the Gateway
// programmed with an address).

// migrateOpts: no settle time, a short DNS drain.
func migrateOpts(drain time.Duration) func(*app.Options) {
	return func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = 0, drain }
}

// usersIngress is Ingress name as a user writes it: host shop.example.com,
// path / (Prefix) to Service web port 80, a TTL for external-dns, the
// user's own external-dns controller value, and ann.
func usersIngress(ns, name string, ann map[string]string) *networkingv1.Ingress {
	a := map[string]string{
		"external-dns.alpha.kubernetes.io/ttl":         "60",
		ingressmanager.AnnotationExternalDNSController: "dns-controller",
		"example.com/team":                             "shop",
	}
	maps.Copy(a, ann)
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: a},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"), Rules: []networkingv1.IngressRule{{Host: "shop.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
			}}}}}}},
	}
}

// createIngress creates ing as its user, and gives it an address.
func (e *env) createIngress(ing *networkingv1.Ingress) *networkingv1.Ingress {
	e.T.Helper()
	if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Create(e.Ctx, ing, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		e.T.Fatal(err)
	}
	e.setIngressAddress(ing.Name)
	got, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, ing.Name, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return got
}

// annotateIngress sets (non-nil) or removes (nil) annotations of Ingress
// name, as its user.
func (e *env) annotateIngress(name string, ann map[string]*string) {
	e.T.Helper()
	patch := map[string]any{"metadata": map[string]any{"annotations": ann}}
	data, err := json.Marshal(patch)
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Client.NetworkingV1().Ingresses(e.NS).Patch(e.Ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
		e.T.Fatal(err)
	}
}

// waitIngressEvent waits for an Event on Ingress name.
func (e *env) waitIngressEvent(name, eventType, reason string, contains ...string) *corev1.Event {
	e.T.Helper()
	return framework.WaitEvent(e.T, e.Client, framework.Timeout, e.NS, "Ingress", name, eventType, reason, contains...)
}

// sameAsItsUserWrote checks that ing is as its user wrote it (want), but
// for the annotations of a withdrawal from external-dns when withdrawn.
func sameAsItsUserWrote(ing, want *networkingv1.Ingress, withdrawn bool) error {
	if !equality.Semantic.DeepEqual(ing.Spec, want.Spec) || ing.Generation != want.Generation {
		return fmt.Errorf("spec changed: %+v, generation %d (was %d)", ing.Spec, ing.Generation, want.Generation)
	}
	ann := maps.Clone(ing.Annotations)
	wantAnn := maps.Clone(want.Annotations)
	if withdrawn {
		if _, err := withdrawalOf(ing); err != nil {
			return err
		}
		for _, k := range []string{ingressmanager.AnnotationExternalDNSController, ingressmanager.AnnotationExternalDNSControllerLegacy,
			ingressmanager.AnnotationDNSWithdrawn, ingressmanager.AnnotationDNSControllerSaved} {
			delete(ann, k)
			delete(wantAnn, k)
		}
	}
	if !maps.Equal(ann, wantAnn) {
		return fmt.Errorf("annotations %v, want %v", ing.Annotations, want.Annotations)
	}
	return nil
}

// waitMigratedRoute waits for the route made from Ingress ing.
func (e *env) waitMigratedRoute(ing *networkingv1.Ingress) *gatewayv1.HTTPRoute {
	e.T.Helper()
	return e.waitRoute(ing.Name, "the route made from the Ingress", func(r *gatewayv1.HTTPRoute) error {
		if r.Annotations[ingressmanager.AnnotationMigratedFrom] != string(ing.UID) || len(r.OwnerReferences) != 0 {
			return fmt.Errorf("annotations %v, owners %v: not the route made from Ingress uid %s", r.Annotations, r.OwnerReferences, ing.UID)
		}
		return nil
	})
}

// TestMigrateIngressToRouteAndBack: on the real API server, a user's
// Ingress that asks for Gateway gw gets a route made from its rules (with
// its external-dns TTL, its user's controller value, no owner), keeps
// serving until the route serves, then is withdrawn from external-dns,
// drained and kept, withdrawn; nothing else of it changes, and once moved
// nothing is written at a resync or an unrelated edit. With ingress/gateway
// removed its traffic moves back: it is returned to external-dns as its
// user wrote it, and the route is withdrawn, drained and deleted.
func TestMigrateIngressToRouteAndBack(t *testing.T) {
	const drain = 2 * time.Second
	e := setup(t, migrateOpts(drain))
	orig := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))

	route := e.waitMigratedRoute(orig)
	if got := route.Spec.Hostnames; len(got) != 1 || got[0] != "shop.example.com" {
		t.Errorf("hostnames %v", got)
	}
	if route.Annotations["external-dns.alpha.kubernetes.io/ttl"] != "60" || route.Annotations[ingressmanager.AnnotationExternalDNSController] != "dns-controller" {
		t.Errorf("route annotations %v, want the Ingress's external-dns ones", route.Annotations)
	}
	e.waitIngressEvent("web", corev1.EventTypeNormal, "HTTPRouteCreated", "Created HTTPRoute web")
	e.waitIngressEvent("web", corev1.EventTypeNormal, "WaitingForHTTPRoute", "Keeping Ingress web until Gateway")
	if ing, _ := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web", metav1.GetOptions{}); sameAsItsUserWrote(ing, orig, false) != nil {
		t.Fatalf("the Ingress changed before the route served: %v", sameAsItsUserWrote(ing, orig, false))
	}

	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web", "the Ingress withdrawn from external-dns", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, orig, true) })
	e.waitIngressEvent("web", corev1.EventTypeNormal, "WithdrawnFromDNS", "Withdrew Ingress web from external-dns")
	e.waitIngressEvent("web", corev1.EventTypeNormal, "MovedToHTTPRoute", "It stays, withdrawn from external-dns")
	e.WaitIngress("web", "the Ingress kept", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, orig, true) })

	// Moved: an edit of the Ingress that changes nothing of its route, and
	// the syncs it brings, write nothing.
	writes := e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes")
	syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	e.annotateIngress("web", map[string]*string{"example.com/note": ptr.To("moved")})
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	if got := e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes"); got != writes {
		t.Errorf("%d writes of Ingresses and routes once moved, want none (%s)", got-writes, e.Writes)
	}
	if v, ok := framework.InProcessMetric("controller_ingress_migrations", map[string]string{"state": "moved"}); !ok || v < 1 {
		t.Errorf("controller_ingress_migrations{state=moved} = %v (%v), want 1", v, ok)
	}

	// Back: ingress/gateway removed.
	e.annotateIngress("web", map[string]*string{"ingress/gateway": nil})
	e.waitIngressEvent("web", corev1.EventTypeNormal, "ReturnedToDNS", "Returned Ingress web to external-dns")
	e.WaitIngress("web", "the Ingress back in external-dns, as its user wrote it", func(ing *networkingv1.Ingress) error {
		wantNow := orig.DeepCopy()
		wantNow.Annotations = maps.Clone(orig.Annotations)
		delete(wantNow.Annotations, "ingress/gateway")
		wantNow.Annotations["example.com/note"] = "moved"
		return sameAsItsUserWrote(ing, wantNow, false)
	})
	e.waitNoRoute("web", "the route withdrawn, drained and deleted")
	e.waitIngressEvent("web", corev1.EventTypeNormal, "HTTPRouteDeleted", "withdrawn from external-dns")
	if !e.ingressExists("web") {
		t.Error("the user's Ingress was deleted")
	}
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors", n)
	}
}

// TestMigrateDeleteAfterMove: with ingress/delete-after-move "true" the
// Ingress is deleted once the route served and its drain passed, and its
// deletion leaves the route, the user's from then on.
func TestMigrateDeleteAfterMove(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	ing := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw", "ingress/delete-after-move": "true"}))
	e.waitMigratedRoute(ing)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitNoIngress("web", "the Ingress deleted after its drain")
	e.waitIngressEvent("web", corev1.EventTypeNormal, "IngressDeleted", "ingress/delete-after-move asks for its deletion")
	route := e.waitMigratedRoute(ing)
	syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "") // an event of the route
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	if got := e.waitMigratedRoute(ing); got.UID != route.UID || !equality.Semantic.DeepEqual(got.Spec, route.Spec) {
		t.Errorf("the route changed once its Ingress was gone: %+v", got)
	}
}

// TestMigrateAnnotationRemovedMidDrain: ingress/gateway removed while the
// Ingress drains: it is returned to external-dns at once, the route goes
// after its own drain, the Ingress is intact.
func TestMigrateAnnotationRemovedMidDrain(t *testing.T) {
	e := setup(t, migrateOpts(time.Minute))
	orig := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	e.waitMigratedRoute(orig)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web", "the Ingress withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, orig, true) })
	// A shorter drain for the route's own, as a restarted manager with
	// another --ingress-move-dns-drain would have.
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	e.Start(migrateOpts(2 * time.Second))
	e.annotateIngress("web", map[string]*string{"ingress/gateway": nil})
	wantNow := orig.DeepCopy()
	delete(wantNow.Annotations, "ingress/gateway")
	e.WaitIngress("web", "the Ingress back in external-dns", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, wantNow, false) })
	e.waitNoRoute("web", "the route deleted after its drain")
	e.WaitIngress("web", "the Ingress intact", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, wantNow, false) })
}

// TestMigrateIngressDeletedMidMove: the Ingress deleted by its user while
// it drains leaves the route, which serves.
func TestMigrateIngressDeletedMidMove(t *testing.T) {
	e := setup(t, migrateOpts(time.Minute))
	ing := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	route := e.waitMigratedRoute(ing)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web", "the Ingress withdrawn", func(i *networkingv1.Ingress) error { _, err := withdrawalOf(i); return err })
	syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	if got := e.waitMigratedRoute(ing); got.UID != route.UID {
		t.Error("the route was replaced")
	}
	if n := e.Writes.Count(http.MethodDelete, "httproutes"); n != 0 {
		t.Errorf("%d deletes of routes", n)
	}
}

// TestMigrateForeignRouteAndReplacedIngress: a route of the Ingress's name
// that is not made from it (someone else's, or made from an Ingress of the
// name deleted before) is never written: a Warning, and the Ingress stays
// in external-dns.
func TestMigrateForeignRouteAndReplacedIngress(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	routes := e.gateway().GatewayV1().HTTPRoutes(e.NS)
	foreign, err := routes.Create(e.Ctx, &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	e.waitIngressEvent("web", corev1.EventTypeWarning, "HTTPRouteExists", "was not made from this Ingress")
	syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "") // it serves: still not the Ingress's
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	if got, _ := routes.Get(e.Ctx, "web", metav1.GetOptions{}); got.Generation != foreign.Generation || len(got.Annotations) != 0 {
		t.Errorf("the foreign route was changed: %+v", got)
	}
	if ing, _ := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web", metav1.GetOptions{}); ing.Annotations[ingressmanager.AnnotationDNSWithdrawn] != "" {
		t.Error("the Ingress was withdrawn for a route not made from it")
	}

	// The Ingress of a route made from it is deleted and made again: the
	// new one (another UID) does not take the old one's route.
	if err := routes.Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	old := e.createIngress(usersIngress(e.NS, "shop", map[string]string{"ingress/gateway": "gw"}))
	oldRoute := e.waitMigratedRoute(old)
	if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, "the old Ingress", framework.Get(e.Client.NetworkingV1().Ingresses(e.NS).Get, "shop"))
	e.createIngress(usersIngress(e.NS, "shop", map[string]string{"ingress/gateway": "gw"}))
	e.waitIngressEvent("shop", corev1.EventTypeWarning, "HTTPRouteExists", "names another Ingress")
	if got := e.waitMigratedRoute(old); got.ResourceVersion != oldRoute.ResourceVersion {
		t.Errorf("the old Ingress's route was written for the new one: %+v", got)
	}
}

// TestMigrateSurvivesARestart: the manager stopped mid-move and started
// again goes on where the move was (the withdrawal time kept), deletes
// nothing unasked, and reaches moved.
func TestMigrateSurvivesARestart(t *testing.T) {
	opts := migrateOpts(3 * time.Second)
	e := setup(t, opts)
	orig := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	route := e.waitMigratedRoute(orig)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	withdrawnIng := e.WaitIngress("web", "the Ingress withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, orig, true) })
	at, _ := withdrawalOf(withdrawnIng)
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	e.Start(opts)
	e.waitIngressEvent("web", corev1.EventTypeNormal, "MovedToHTTPRoute")
	ing := e.WaitIngress("web", "the Ingress kept, withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, orig, true) })
	if got, _ := withdrawalOf(ing); !got.Equal(at) {
		t.Errorf("withdrawn at %v after the restart, want the first withdrawal's %v", got, at)
	}
	if got := e.waitMigratedRoute(orig); got.UID != route.UID {
		t.Error("the route was replaced")
	}
	if n := e.Writes.Count(http.MethodDelete, "ingresses") + e.Writes.Count(http.MethodDelete, "httproutes"); n != 0 {
		t.Errorf("%d deletes", n)
	}
}

// TestMigratePlanCommand: controller-manager migrate-plan against the real
// API server, as a user runs it with a kubeconfig: the route of an Ingress
// that does not ask to move yet (its port by name resolved through its
// Service, the Gateway of --gateway), and where the move of one that asks
// stands; it writes nothing.
func TestMigratePlanCommand(t *testing.T) {
	e := setup(t, migrateOpts(time.Minute))
	svc := framework.SeedService(e.NS, "web", nil)
	svc.Spec.Ports[0].Port = 8081 // named http
	e.CreateService(svc)
	plain := usersIngress(e.NS, "plain", nil)
	plain.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{Name: "http"}
	e.createIngress(plain)
	asking := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	e.waitMigratedRoute(asking)

	kubeconfig := framework.Kubeconfig(t, framework.AdminConfig())
	writes := e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes")
	cmd := app.NewCommand()
	var out, errOut strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"migrate-plan", "--kubeconfig", kubeconfig, "--namespace", e.NS, "--gateway", "infra/shared"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("migrate-plan: %v\n%s", err, errOut.String())
	}
	plan := out.String()
	for _, want := range []string{
		fmt.Sprintf("# Ingress %s/plain does not ask to move (no ingress/gateway); the plan is for Gateway infra/shared (--gateway).", e.NS),
		"port: 8081", // the Service's port named http
		fmt.Sprintf("# Ingress %s/web asks to move to Gateway gw (ingress/gateway).", e.NS),
		fmt.Sprintf("#   Move: HTTPRoute %s/web is made from this Ingress and does not serve yet", e.NS),
		"#   The Ingress is in external-dns.",
		"ingress/migrated-from: " + string(asking.UID),
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan does not say %q:\n%s", want, plan)
		}
	}
	if got := e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes"); got != writes {
		t.Errorf("the manager wrote %d times while the plan ran", got-writes)
	}
}
