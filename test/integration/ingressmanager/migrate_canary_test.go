package ingressmanager

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// The tests of this file move an ingress-nginx canary by weight with its
// main Ingress: its backend joins the main Ingress's route, weighted, and
// it follows the main Ingress in external-dns, never deleted.

// usersCanary is usersIngress as an ingress-nginx canary of weight of its
// host and path, to Service web-canary.
func usersCanary(ns, name, weight string, ann map[string]string) *networkingv1.Ingress {
	a := map[string]string{"nginx.ingress.kubernetes.io/canary": "true", "nginx.ingress.kubernetes.io/canary-weight": weight}
	maps.Copy(a, ann)
	ing := usersIngress(ns, name, a)
	ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "web-canary"
	return ing
}

// routeWeights lists the backends of each rule of route as
// "<name>=<weight>".
func routeWeights(route *gatewayv1.HTTPRoute) [][]string {
	var out [][]string
	for _, rule := range route.Spec.Rules {
		var ws []string
		for _, b := range rule.BackendRefs {
			w := "nil"
			if b.Weight != nil {
				w = strconv.Itoa(int(*b.Weight))
			}
			ws = append(ws, string(b.Name)+"="+w)
		}
		out = append(out, ws)
	}
	return out
}

// waitRouteWeights waits for the route made from main to have rules of
// the backends want.
func (e *env) waitRouteWeights(main *networkingv1.Ingress, what string, want ...[]string) *gatewayv1.HTTPRoute {
	e.T.Helper()
	return e.waitRoute(main.Name, what, func(r *gatewayv1.HTTPRoute) error {
		if r.Annotations[ingressmanager.AnnotationMigratedFrom] != string(main.UID) {
			return fmt.Errorf("not made from Ingress %s", main.Name)
		}
		if got := routeWeights(r); !slices.EqualFunc(got, want, slices.Equal) {
			return fmt.Errorf("backends %q, want %q", got, want)
		}
		return nil
	})
}

// migrateWrites is the number of writes of Ingresses and routes so far.
func (e *env) migrateWrites() int {
	return e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes")
}

// TestMigrateCanaryMovesWithItsMain: on the real API server, a canary and
// its main Ingress that both ask for Gateway gw: one route, the main
// Ingress's, with the canary's backend weighted 20 of 100; the canary
// stays in external-dns while the main Ingress does, is withdrawn once the
// main one is (its route serving, carrying the share), and nothing is
// written once both moved, however many syncs each brings to the other.
// With ingress/gateway removed from the main Ingress both are returned,
// as their users wrote them, the route is deleted, and the canary is
// never deleted nor written but for its external-dns controller
// annotations.
func TestMigrateCanaryMovesWithItsMain(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	main := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	canary := e.createIngress(usersCanary(e.NS, "web-canary", "20", map[string]string{"ingress/gateway": "gw"}))

	e.waitRouteWeights(main, "the main Ingress's route, the canary's backend weighted", []string{"web=80", "web-canary=20"})
	if ing, _ := e.Client.NetworkingV1().Ingresses(e.NS).Get(e.Ctx, "web-canary", metav1.GetOptions{}); sameAsItsUserWrote(ing, canary, false) != nil {
		t.Fatalf("the canary changed before the route served: %v", sameAsItsUserWrote(ing, canary, false))
	}
	if e.routeExists("web-canary") {
		t.Error("the canary got a route of its own")
	}

	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web", "the main Ingress withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, main, true) })
	e.WaitIngress("web-canary", "the canary withdrawn with it", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, true) })
	e.waitIngressEvent("web-canary", "Normal", "WithdrawnFromDNS", "it stays, withdrawn, and is not deleted")

	// Moved: edits that change nothing of the route bring syncs of both,
	// and no write; a ping-pong of syncs would show by the second edit.
	writes := e.migrateWrites()
	canarySyncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web-canary")
	for i, who := range []string{"web", "web-canary", "web"} {
		syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
		cSyncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web-canary")
		e.annotateIngress(who, map[string]*string{"example.com/note": ptrTo(strconv.Itoa(i))})
		e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
		e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web-canary", cSyncs+1)
	}
	if n := e.migrateWrites() - writes; n != 0 {
		t.Errorf("%d writes once both moved, want none (%s)", n, e.Writes)
	}
	if n := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web-canary") - canarySyncs; n > 9 {
		t.Errorf("%d syncs of the canary for three edits, want a few each", n)
	}
	canary.Annotations["example.com/note"] = "1"
	main.Annotations["example.com/note"] = "2"

	// Back.
	e.annotateIngress("web", map[string]*string{"ingress/gateway": nil})
	delete(main.Annotations, "ingress/gateway")
	e.WaitIngress("web", "the main Ingress back in external-dns", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, main, false) })
	e.WaitIngress("web-canary", "the canary back in external-dns", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, false) })
	e.waitNoRoute("web", "the route withdrawn, drained and deleted")
	e.WaitIngress("web-canary", "the canary intact", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, false) })
	if n := e.Writes.Count(http.MethodDelete, "ingresses"); n != 0 {
		t.Errorf("%d deletes of Ingresses", n)
	}
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors", n)
	}
}

// TestMigrateCanaryAfterARestart: the manager stopped with the main
// Ingress withdrawn and the canary not (yet) converges on its start: the
// canary is withdrawn, the main Ingress's withdrawal kept.
func TestMigrateCanaryAfterARestart(t *testing.T) {
	opts := migrateOpts(time.Second)
	e := setup(t, opts)
	main := e.createIngress(usersIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	canary := e.createIngress(usersCanary(e.NS, "web-canary", "20", map[string]string{"ingress/gateway": "gw"}))
	e.waitRouteWeights(main, "the route carrying the canary", []string{"web=80", "web-canary=20"})
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	withdrawnMain := e.WaitIngress("web", "the main Ingress withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, main, true) })
	e.WaitIngress("web-canary", "the canary withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, true) })
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	// As if stopped before the canary's withdrawal: it is as its user
	// wrote it.
	restore := map[string]*string{ingressmanager.AnnotationDNSWithdrawn: nil, ingressmanager.AnnotationDNSControllerSaved: nil,
		ingressmanager.AnnotationExternalDNSControllerLegacy: nil, ingressmanager.AnnotationExternalDNSController: ptrTo("dns-controller")}
	e.annotateIngress("web-canary", restore)
	e.WaitIngress("web-canary", "the canary in external-dns", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, false) })

	e.Start(opts)
	e.WaitIngress("web-canary", "the canary withdrawn after the restart", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, true) })
	ing := e.WaitIngress("web", "the main Ingress kept withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, main, true) })
	if got, want := ing.Annotations[ingressmanager.AnnotationDNSWithdrawn], withdrawnMain.Annotations[ingressmanager.AnnotationDNSWithdrawn]; got != want {
		t.Errorf("the main Ingress withdrawn at %s after the restart, want %s", got, want)
	}
}

// moveWithCanary creates a main Ingress web and its canary web-canary of
// weight 20, both asking for Gateway gw (the main Ingress with more
// annotations), and waits until both moved.
func (e *env) moveWithCanary(mainAnn map[string]string) (main, canary *networkingv1.Ingress) {
	e.T.Helper()
	main = e.createIngress(usersIngress(e.NS, "web", mainAnn))
	canary = e.createIngress(usersCanary(e.NS, "web-canary", "20", map[string]string{"ingress/gateway": "gw"}))
	e.waitRouteWeights(main, "the route carrying the canary", []string{"web=80", "web-canary=20"})
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web-canary", "the canary withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, true) })
	return main, canary
}

// inDNS checks that ing is not withdrawn from external-dns.
func inDNS(ing *networkingv1.Ingress) error {
	if _, err := withdrawalOf(ing); err == nil {
		return fmt.Errorf("withdrawn")
	}
	return nil
}

// TestMigrateCanaryChanges: once moved, a canary's weight changed: the
// route carries the new one, both Ingresses are back in external-dns
// until the route's new generation serves, then withdrawn again. The
// canary deleted: the route drops its share (its deletion brings the main
// Ingress back), the main Ingress moves again.
func TestMigrateCanaryChanges(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	main, canary := e.moveWithCanary(map[string]string{"ingress/gateway": "gw"})

	e.annotateIngress("web-canary", map[string]*string{"nginx.ingress.kubernetes.io/canary-weight": ptrTo("50")})
	canary.Annotations["nginx.ingress.kubernetes.io/canary-weight"] = "50"
	e.waitRouteWeights(main, "the route carrying the new weight", []string{"web=50", "web-canary=50"})
	e.WaitIngress("web", "the main Ingress back in external-dns until the route's new generation serves", inDNS)
	e.WaitIngress("web-canary", "the canary too", inDNS)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web", "the main Ingress withdrawn again", func(ing *networkingv1.Ingress) error { _, err := withdrawalOf(ing); return err })
	e.WaitIngress("web-canary", "the canary withdrawn again", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, true) })

	if err := e.Client.NetworkingV1().Ingresses(e.NS).Delete(e.Ctx, "web-canary", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRoute("web", "the route without the canary's share", func(r *gatewayv1.HTTPRoute) error {
		if len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].BackendRefs) != 1 || r.Spec.Rules[0].BackendRefs[0].Name != "web" {
			return fmt.Errorf("backends %q", routeWeights(r))
		}
		return nil
	})
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web", "the main Ingress withdrawn, moved alone", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, main, true) })
	if n := e.Writes.Count(http.MethodDelete, "ingresses"); n != 0 {
		t.Errorf("%d deletes of Ingresses", n)
	}
}

// TestMigrateCanaryStopsAsking: a canary that stops asking once moved
// keeps its main Ingress on its Ingress: both are returned to
// external-dns, the route left as it was, the canary as its user wrote
// it.
func TestMigrateCanaryStopsAsking(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	main, canary := e.moveWithCanary(map[string]string{"ingress/gateway": "gw"})
	route := e.waitMigratedRoute(main)
	e.annotateIngress("web-canary", map[string]*string{"ingress/gateway": nil})
	delete(canary.Annotations, "ingress/gateway")
	e.waitIngressEvent("web", "Warning", "MigrationUnsupported", "web-canary")
	e.WaitIngress("web", "the main Ingress back in external-dns", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, main, false) })
	e.WaitIngress("web-canary", "the canary back, as its user wrote it", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, false) })
	if got := e.waitMigratedRoute(main); got.Generation != route.Generation {
		t.Errorf("the route was written: generation %d, was %d", got.Generation, route.Generation)
	}
}

// TestMigrateCanaryMainDeletedAfterMove: the main Ingress deleted after
// its move (ingress/delete-after-move) leaves the canary withdrawn, its
// share on the route, now its user's: its events write nothing.
func TestMigrateCanaryMainDeletedAfterMove(t *testing.T) {
	e := setup(t, migrateOpts(3*time.Second))
	main, canary := e.moveWithCanary(map[string]string{"ingress/gateway": "gw", "ingress/delete-after-move": "true"})
	e.WaitNoIngress("web", "the main Ingress deleted after its drain")
	route := e.waitRouteWeights(main, "the route kept, carrying the canary", []string{"web=80", "web-canary=20"})
	writes := e.migrateWrites()
	for i := range 3 {
		syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web-canary")
		e.annotateIngress("web-canary", map[string]*string{"example.com/note": ptrTo(strconv.Itoa(i))})
		e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web-canary", syncs+1)
	}
	canary.Annotations["example.com/note"] = "2"
	if n := e.migrateWrites() - writes; n != 0 {
		t.Errorf("%d writes once the main Ingress was gone, want none (%s)", n, e.Writes)
	}
	e.WaitIngress("web-canary", "the canary kept withdrawn", func(ing *networkingv1.Ingress) error { return sameAsItsUserWrote(ing, canary, true) })
	if got := e.waitMigratedRoute(main); got.Generation != route.Generation {
		t.Error("the route was written once its Ingress was gone")
	}
}
