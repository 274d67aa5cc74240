package ingressmanager

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// A Service is served by one object at a time, its target: an Ingress or an
// HTTPRoute, as its annotations ask (and the cluster allows). When the
// target changes kind, the Service moves make-before-break from the other
// kind's object to the target, in the same steps whichever way it goes,
// each step one sync, each wait a requeue or an event:
//
//  1. converge the target; a sync that wrote it decides nothing else on it
//     (its status is of the version the write replaced: the write's own
//     event brings the next decision, on fresh state);
//  2. a target that is not there (just created, someone else's object in
//     its place, refused by the API server) or that does not serve yet
//     (untilServes) keeps the old object, returned to external-dns if it
//     was withdrawn: there is never no published object while one serves;
//  3. a target withdrawn from external-dns earlier (the Service moved away
//     from it and back) is returned to it first, and judged on the
//     return's event;
//  4. once the target serves, and went on serving for --ingress-move-settle,
//     the old object is retired: withdrawn from external-dns, drained, then
//     deleted (retire).

// end is one end of a move: the Service's object of one kind as cached (the
// zero value when there is none) and that kind's write path.
type end[T object, AC any] struct {
	w   *writer[T, AC]
	obj T
}

// of reports whether e's object is the Service's own and not being deleted:
// the one a move keeps, withdraws or retires.
func (e end[T, AC]) of(svc *corev1.Service) bool {
	var zero T
	return e.obj != zero && isControlledBy(e.obj, svc) && !isBeingDeleted(e.obj)
}

// keep returns e's object, when it is the Service's own, to external-dns if
// it was withdrawn from it: whatever serves the Service stays published
// while its replacement does not serve.
func (e end[T, AC]) keep(ctx context.Context, svc *corev1.Service, why string, r *report) error {
	if !e.of(svc) {
		return nil
	}
	_, err := e.w.restore(ctx, e.obj, why, r)
	return err
}

// move converges to, the Service's target, to desired, and moves the Service
// off from, its object of the other kind (see the steps above). fix is what
// the user can do when someone else's object is in the target's place. It
// reports whether the target serves the Service as its annotations ask:
// converged, not written by this sync, and serving (untilServes).
func move[N object, NA any, O object, OA any](ctx context.Context, c *Controller, svc *corev1.Service, desired N, to end[N, NA], from end[O, OA], fix string, r *report) (bool, error) {
	ok, wrote, err := to.w.converge(ctx, svc, to.obj, desired, r, fix)
	if wrote {
		return false, err
	}
	if !ok || err != nil {
		why := fmt.Sprintf("%s %s, which replaces it, is not there yet", to.w.kind, desired.GetName())
		if err != nil {
			why = fmt.Sprintf("%s %s, which replaces it, cannot be written", to.w.kind, desired.GetName())
		}
		return false, errors.Join(err, from.keep(ctx, svc, why, r))
	}
	target := to.obj
	// A target the Service moved away from and is back on, withdrawn from
	// external-dns while it drained, is the one to resolve to again.
	returned, err := to.w.restore(ctx, target, fmt.Sprintf("the Service is on %s %s again", to.w.kind, target.GetName()), r)
	if err != nil {
		return false, err
	}
	if until := untilServes(target, c.gateway.lookup); until != "" {
		c.settling.reset(svc)
		if from.of(svc) {
			r.normal(to.w.reasons.waiting, string(target.GetUID()), fmt.Sprintf("Keeping %s %s until %s", from.w.kind, from.obj.GetName(), until))
		}
		return false, from.keep(ctx, svc, "it is kept until "+until, r)
	}
	if returned || withdrawalMarked(target) {
		// Not back in external-dns as far as the cache knows: the old
		// object stays in it until the target's update brings the
		// Service back.
		c.settling.reset(svc)
		return false, nil
	}
	if !from.of(svc) {
		return true, nil
	}
	if _, draining := withdrawnAt(from.obj); !draining {
		if wait := c.settling.remaining(svc, target.GetUID()); wait > 0 {
			return true, &controller.RequeueAfter{Delay: wait}
		}
	}
	return true, retire(ctx, from.w, c.cutover, from.obj, whyServes(target), r)
}

// keepWhileInvalid is move's step 2 for a target whose annotations are
// invalid: nothing is written to it, and the old object stays in
// external-dns unless the target, as it is, serves; a target that serves
// as it is and was withdrawn from external-dns (the Service moved away
// from it and back) is returned to it, as in step 3: it may be the only
// object left that serves.
func keepWhileInvalid[N object, NA any, O object, OA any](ctx context.Context, c *Controller, svc *corev1.Service, to end[N, NA], from end[O, OA], r *report) error {
	if to.of(svc) && untilServes(to.obj, c.gateway.lookup) == "" {
		_, err := to.w.restore(ctx, to.obj, fmt.Sprintf("the Service is on %s %s again, which serves it as it is while its annotations are invalid", to.w.kind, to.obj.GetName()), r)
		return err
	}
	return from.keep(ctx, svc, fmt.Sprintf("the annotations of its replacement's %s are invalid", to.w.kind), r)
}
