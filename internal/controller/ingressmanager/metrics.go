package ingressmanager

import (
	"context"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// with how long past the drain it is (negative while it drains): one that
// stays well past it is stuck (its deletion refused, held by a finalizer,
// or this controller not syncing its Service). A user's Ingress moved to a
// route is not, unless it asked to be deleted (controller_ingress_migrations
// counts them).
func (c *Controller) moves(add func(kind string, overdue time.Duration)) {
	now := c.cutover.now()
	each := func(kind string, objs []any) {
		for _, o := range objs {
			obj, ok := o.(metav1.Object)
			if !ok {
				continue
			}
			if ing, ok := obj.(*networkingv1.Ingress); ok && staysWithdrawn(ing) {
				continue // a user's Ingress kept once moved: not a drain that ends
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
