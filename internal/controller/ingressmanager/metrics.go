package ingressmanager

import (
	"context"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/metrics"
)

// The kinds of the objects a move drains, as the metrics name them.
const (
	kindIngress   = "Ingress"
	kindHTTPRoute = "HTTPRoute"
)

// reportMoves makes the running controller the source of the move metrics
// (controller_ingress_moves_draining, _move_drain_overdue_seconds) until
// ctx ends.
func (c *Controller) reportMoves(ctx context.Context) {
	defer metrics.ReportIngressMoves([]string{kindIngress, kindHTTPRoute}, c.moves)()
	<-ctx.Done()
}

// moves adds each cached Ingress and HTTPRoute withdrawn from external-dns
// that the controller deletes once drained (endsItsDrain) with how long
// past the drain it is (negative while it drains): one that stays well past
// it is stuck (its deletion refused, held by a finalizer, or this
// controller not syncing its Service or Ingress).
func (c *Controller) moves(add func(kind string, overdue time.Duration)) {
	now := c.cutover.now()
	each := func(kind string, objs []any) {
		for _, o := range objs {
			obj, ok := o.(metav1.Object)
			if !ok {
				continue
			}
			if !endsItsDrain(obj) {
				continue
			}
			if at, withdrawn := withdrawnAt(obj); withdrawn {
				add(kind, now.Sub(at)-max(c.cutover.drain, 0))
			}
		}
	}
	each(kindIngress, c.ingresses.List())
	if routes, _ := c.gateway.routeCache(); routes != nil {
		each(kindHTTPRoute, routes.List())
	}
}

// endsItsDrain reports whether obj, once withdrawn from external-dns and
// drained, is deleted by the controller: a Service's Ingress or HTTPRoute,
// a user's Ingress that asked to be (ingress/delete-after-move), a route
// made from a user's Ingress moving back to it. Anything else withdrawn is
// no move that ends: an object orphaned with its Service's deletion, a
// user's Ingress kept once moved (controller_ingress_migrations counts
// those).
func endsItsDrain(obj metav1.Object) bool {
	if serviceControlled(obj) {
		return true
	}
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		return !staysWithdrawn(o)
	case *gatewayv1.HTTPRoute:
		_, marked := o.Annotations[AnnotationMigratedFrom]
		return marked && metav1.GetControllerOfNoCopy(o) == nil
	}
	return false
}

// staysWithdrawn reports whether ing is a user's Ingress that is not
// deleted once drained: it did not ask to be (ingress/delete-after-move),
// or no longer asks to move.
func staysWithdrawn(ing *networkingv1.Ingress) bool {
	if serviceControlled(ing) {
		return false
	}
	_, _, deleteAfter, _ := parseMigrationAnnotations(ing)
	return !migrationWanted(ing) || !deleteAfter
}
