package ingressmanager

import (
	"context"
	"time"

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

// moves adds each cached Ingress and HTTPRoute of a Service (its controller
// reference) withdrawn from external-dns with how long past the drain it is
// (negative while it drains): one that stays well past it is stuck (its
// deletion refused, held by a finalizer, or this controller not syncing its
// Service). One that no Service controls (orphaned with its Service's
// deletion) is no move: the controller never deletes it.
func (c *Controller) moves(add func(kind string, overdue time.Duration)) {
	now := c.cutover.now()
	each := func(kind string, objs []any) {
		for _, o := range objs {
			obj, ok := o.(metav1.Object)
			if !ok {
				continue
			}
			if ref := metav1.GetControllerOfNoCopy(obj); ref == nil || !isServiceRef(ref) {
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
