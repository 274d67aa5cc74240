package ingressmanager

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// withdrawalOf returns when obj was withdrawn from external-dns, as the
// API server has it, and an error while it is not (completely).
func withdrawalOf(obj metav1.Object) (time.Time, error) {
	ann := obj.GetAnnotations()
	for _, k := range []string{ingressmanager.AnnotationExternalDNSController, ingressmanager.AnnotationExternalDNSControllerLegacy} {
		if v := ann[k]; v == "" || v == "dns-controller" {
			return time.Time{}, fmt.Errorf("annotation %s is %q: not withdrawn", k, v)
		}
	}
	v, ok := ann[ingressmanager.AnnotationDNSWithdrawn]
	if !ok {
		return time.Time{}, fmt.Errorf("no %s annotation", ingressmanager.AnnotationDNSWithdrawn)
	}
	return time.Parse(time.RFC3339Nano, v)
}

// ownsOnly checks that field manager owns exactly want (FieldsV1 JSON) of
// obj.
func ownsOnly(obj metav1.Object, manager, want string) error {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager {
			if m.FieldsV1 == nil || string(m.FieldsV1.Raw) != want {
				return fmt.Errorf("%s owns %s, want %s", manager, m.FieldsV1, want)
			}
			return nil
		}
	}
	return fmt.Errorf("no managedFields entry of %s", manager)
}

// withdrawnFields is what the DNS field manager owns on a withdrawn object
// that had annotations; withdrawnFieldsNewMap on one that had none (the
// patch made the map).
const (
	withdrawnFields       = `{"f:metadata":{"f:annotations":{"f:external-dns.alpha.kubernetes.io/controller":{},"f:external-dns.kubernetes.io/controller":{},"f:ingress/dns-withdrawn":{}}}}`
	withdrawnFieldsNewMap = `{"f:metadata":{"f:annotations":{".":{},"f:external-dns.alpha.kubernetes.io/controller":{},"f:external-dns.kubernetes.io/controller":{},"f:ingress/dns-withdrawn":{}}}}`
)

// TestMoveDrainsTheOldObjectOutOfDNS: on the real API server, a move
// withdraws the old object from external-dns (its annotations alone, under
// a field manager of their own, on an object with annotations or without)
// once the new one is ready, keeps it for the drain, across a restart of
// the manager without writing the time again, and deletes it after; a
// Service that moves back mid-drain gets its object back in DNS, not
// deleted.
func TestMoveDrainsTheOldObjectOutOfDNS(t *testing.T) {
	const drain = 4 * time.Second
	opts := func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = 0, drain }
	e := setup(t, opts)
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx"}))
	e.WaitIngress("web", "the Ingress", nil)
	e.setIngressAddress("web")

	// To a route: the Ingress (without annotations of its own) is
	// withdrawn once the route is accepted, and stays.
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	e.waitRoute("web", "the route", nil)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	ing := e.WaitIngress("web", "the Ingress withdrawn from external-dns", func(ing *networkingv1.Ingress) error {
		_, err := withdrawalOf(ing)
		return err
	})
	at, _ := withdrawalOf(ing)
	if err := ownsOnly(ing, "ingress-manager-dns", withdrawnFieldsNewMap); err != nil {
		t.Error(err)
	}
	e.WaitEvent("web", corev1.EventTypeNormal, "WithdrawnFromDNS", "Withdrew Ingress web from external-dns")

	// A restart mid-drain: the new manager keeps the withdrawal time and
	// deletes the Ingress once the drain passed since then, not before.
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	e.Start(opts)
	var lastSeen, goneAt time.Time
	framework.EventuallyEvery(t, 50*time.Millisecond, framework.Timeout, "the Ingress deleted after the drain", func(ctx context.Context) (bool, error) {
		now := time.Now()
		ing, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			goneAt = now
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if got, err := withdrawalOf(ing); err != nil || !got.Equal(at) {
			t.Errorf("after the restart the Ingress is withdrawn at %v (%v), want the first withdrawal's %v", got, err, at)
		}
		lastSeen = now
		return false, nil
	})
	if lastSeen.Before(at.Add(drain - 200*time.Millisecond)) {
		t.Errorf("the Ingress, withdrawn at %v, was last seen at %v and gone at %v: before the drain %v passed", at, lastSeen, goneAt, drain)
	}
	t.Logf("withdrawn at %v, last seen %v after, gone %v after", at.Format(time.StampMilli), lastSeen.Sub(at).Round(time.Millisecond), goneAt.Sub(at).Round(time.Millisecond))

	// Back to an Ingress, the route with an annotation of its own: it is
	// withdrawn once the Ingress has an address.
	e.Annotate("web", map[string]*string{"ingress/annotations": ptr.To(`{"example.com/team":"shop"}`)})
	e.waitRoute("web", "the route with the Service's annotation", func(r *gatewayv1.HTTPRoute) error {
		if r.Annotations["example.com/team"] != "shop" {
			return fmt.Errorf("annotations %v: not the Service's yet", r.Annotations)
		}
		return nil
	})
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("")})
	e.WaitIngress("web", "the Ingress again", nil)
	e.setIngressAddress("web")
	route := e.waitRoute("web", "the route withdrawn from external-dns", func(r *gatewayv1.HTTPRoute) error {
		_, err := withdrawalOf(r)
		return err
	})
	if err := ownsOnly(route, "ingress-manager-dns", withdrawnFields); err != nil {
		t.Error(err)
	}

	// And to the route again mid-drain: it is returned to external-dns, not
	// deleted, and the Ingress is withdrawn and drained in its turn.
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	e.WaitEvent("web", corev1.EventTypeNormal, "ReturnedToDNS", "Returned HTTPRoute web to external-dns: the Service is on HTTPRoute web again")
	route = e.waitRoute("web", "the route back in external-dns", func(r *gatewayv1.HTTPRoute) error {
		for _, k := range []string{ingressmanager.AnnotationExternalDNSController, ingressmanager.AnnotationExternalDNSControllerLegacy, ingressmanager.AnnotationDNSWithdrawn} {
			if _, ok := r.Annotations[k]; ok {
				return fmt.Errorf("annotation %s still there", k)
			}
		}
		return nil
	})
	if route.Annotations["example.com/team"] != "shop" {
		t.Errorf("the route's own annotations %v were changed", route.Annotations)
	}
	e.WaitIngress("web", "the Ingress withdrawn in its turn", func(ing *networkingv1.Ingress) error {
		_, err := withdrawalOf(ing)
		return err
	})
	e.WaitNoIngress("web", "the Ingress deleted after its drain")
	if !e.routeExists("web") {
		t.Error("the route the Service moved back to was deleted")
	}
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors during the moves", n)
	}
}

// TestUsersControllerAnnotationRemovableAfterAReturn: on the real API
// server, a controller annotation of ingress/annotations ("someone-else",
// which keeps the host out of DNS) survives a withdrawal and a return to
// external-dns (the route no longer accepted), and once the Service is back
// on its Ingress and the key is removed from ingress/annotations, it goes
// from the Ingress too: the value given back is the controller's field
// manager's, not the DNS one's, which would keep it on the object (and the
// host out of DNS) for good.
func TestUsersControllerAnnotationRemovableAfterAReturn(t *testing.T) {
	const key = ingressmanager.AnnotationExternalDNSController
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = 0, time.Minute })
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx", "ingress/annotations": `{"` + key + `":"someone-else"}`}))
	e.WaitIngress("web", "the Ingress", nil)
	e.setIngressAddress("web")

	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	e.waitRoute("web", "the route", nil)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitIngress("web", "the Ingress withdrawn", func(ing *networkingv1.Ingress) error {
		_, err := withdrawalOf(ing)
		return err
	})
	e.setRouteStatus("web", "gw", metav1.ConditionFalse, "NotAllowedByListeners", "test")
	e.WaitIngress("web", "the Ingress returned to external-dns with the user's value", func(ing *networkingv1.Ingress) error {
		if _, ok := ing.Annotations[ingressmanager.AnnotationDNSWithdrawn]; ok || ing.Annotations[key] != "someone-else" {
			return fmt.Errorf("annotations %v", ing.Annotations)
		}
		return nil
	})

	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("")})
	e.waitRoute("web", "the route withdrawn", func(r *gatewayv1.HTTPRoute) error {
		_, err := withdrawalOf(r)
		return err
	})
	e.Annotate("web", map[string]*string{"ingress/annotations": ptr.To(`{}`)})
	e.WaitIngress("web", "the key removed from the Ingress with ingress/annotations", func(ing *networkingv1.Ingress) error {
		if v, ok := ing.Annotations[key]; ok {
			return fmt.Errorf("%s is still %q (managedFields %v)", key, v, managers(ing))
		}
		return nil
	})
}

// managers lists obj's managedFields entries, for failure messages.
func managers(obj metav1.Object) []string {
	var out []string
	for _, m := range obj.GetManagedFields() {
		fields := ""
		if m.FieldsV1 != nil {
			fields = string(m.FieldsV1.Raw)
		}
		out = append(out, fmt.Sprintf("%s %s %s", m.Manager, m.Operation, fields))
	}
	return out
}
