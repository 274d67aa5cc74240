package ingressmanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

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

// end is one end of a move: the owner's object of one kind as cached (the
// zero value when there is none) and that kind's write path.
type end[T object, AC any] struct {
	w   *writer[T, AC]
	obj T
	// user: the object is a user's own Ingress (a migration, see
	// migrate.go), not one the controller makes. As a target it is taken
	// as it is, never written but for its external-dns annotations; as the
	// old end of a move, once drained, it stays withdrawn from external-dns
	// unless deleteDrained, and is deleted only as it was when that was
	// decided (its resourceVersion a precondition too).
	user, deleteDrained bool
}

// of reports whether e's object is the owner's own and not being deleted:
// the one a move keeps, withdraws or retires.
func (e end[T, AC]) of(own owner) bool {
	var zero T
	return e.obj != zero && own.owns(e.obj) && !isBeingDeleted(e.obj)
}

// keep returns e's object, when it is the owner's own, to external-dns if
// it was withdrawn from it: whatever serves the owner stays published
// while its replacement does not serve.
func (e end[T, AC]) keep(ctx context.Context, own owner, why string, r *report) error {
	if !e.of(own) {
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
func move[N object, NA any, O object, OA any](ctx context.Context, c *Controller, own owner, desired N, to end[N, NA], from end[O, OA], fix string, r *report) (bool, error) {
	ok, wrote, err := to.of(own), false, error(nil)
	if !to.user {
		ok, wrote, err = to.w.converge(ctx, own, to.obj, desired, r, fix)
	}
	if wrote {
		return false, err
	}
	if !ok || err != nil {
		why := fmt.Sprintf("%s %s, which replaces it, is not there yet", to.w.kind, desired.GetName())
		if err != nil {
			why = fmt.Sprintf("%s %s, which replaces it, cannot be written", to.w.kind, desired.GetName())
		}
		return false, errors.Join(err, from.keep(ctx, own, why, r))
	}
	target := to.obj
	// A target the Service moved away from and is back on, withdrawn from
	// external-dns while it drained, is the one to resolve to again.
	returned, err := to.w.restore(ctx, target, fmt.Sprintf("%s on %s %s again", own.subject(), to.w.kind, target.GetName()), r)
	if err != nil {
		return false, err
	}
	if until := untilServes(target, c.gateway.lookup); until != "" {
		c.settling.reset(own)
		if from.of(own) {
			r.normal(to.w.reasons.waiting, string(target.GetUID()), fmt.Sprintf("Keeping %s %s until %s", from.w.kind, from.obj.GetName(), until))
		}
		return false, from.keep(ctx, own, "it is kept until "+until, r)
	}
	if returned || withdrawalMarked(target) {
		// Not back in external-dns as far as the cache knows: the old
		// object stays in it until the target's update brings the
		// Service back.
		c.settling.reset(own)
		return false, nil
	}
	if !from.of(own) {
		return true, nil
	}
	if _, draining := withdrawnAt(from.obj); !draining {
		if wait := c.settling.remaining(own, target.GetUID()); wait > 0 {
			return true, &controller.RequeueAfter{Delay: wait}
		}
	}
	return true, retire(ctx, from, c.cutover, whyServes(own, target), r)
}

// keepWhileInvalid is move's step 2 for a target whose annotations are
// invalid: nothing is written to it, and the old object stays in
// external-dns unless the target, as it is, serves; a target that serves
// as it is and was withdrawn from external-dns (the Service moved away
// from it and back) is returned to it, as in step 3: it may be the only
// object left that serves.
func keepWhileInvalid[N object, NA any, O object, OA any](ctx context.Context, c *Controller, own owner, to end[N, NA], from end[O, OA], r *report) error {
	if to.of(own) && untilServes(to.obj, c.gateway.lookup) == "" {
		_, err := to.w.restore(ctx, to.obj, fmt.Sprintf("%s on %s %s again, which serves it as it is while its annotations are invalid", own.subject(), to.w.kind, to.obj.GetName()), r)
		return err
	}
	return from.keep(ctx, own, fmt.Sprintf("the annotations of its replacement's %s are invalid", to.w.kind), r)
}

// ingressEnd and routeEnd are the Service's Ingress and HTTPRoute as ends
// of a move.
func (c *Controller) ingressEnd(ing *networkingv1.Ingress) end[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration] {
	return end[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration]{w: c.ingress, obj: ing}
}

func (c *Controller) routeEnd(route *gatewayv1.HTTPRoute) end[*gatewayv1.HTTPRoute, gatewayv1ac.HTTPRouteApplyConfiguration] {
	return end[*gatewayv1.HTTPRoute, gatewayv1ac.HTTPRouteApplyConfiguration]{w: c.route, obj: route}
}

// syncIngress moves the Service onto its Ingress (see move). It reports
// whether the Ingress serves it as its annotations ask.
func (c *Controller) syncIngress(ctx context.Context, svc *corev1.Service, in *Intent, ing *networkingv1.Ingress, route *gatewayv1.HTTPRoute, r *report) (bool, error) {
	to, from, own := c.ingressEnd(ing), c.routeEnd(route), serviceOwner(svc)
	desired, err := in.Ingress()
	if reportInvalid(ctx, r, err, "the Ingress is left as it is until the annotations are fixed") {
		return false, keepWhileInvalid(ctx, c, own, to, from, r)
	}
	if err != nil {
		return false, fmt.Errorf("computing the desired ingress of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return move(ctx, c, own, desired, to, from, "Delete or rename it, or remove the "+AnnotationHTTP+" annotation", r)
}

// syncRoute moves the Service onto its HTTPRoute (see move), and its route
// between Gateways (see parentsDuringMove). It reports whether the route
// serves it as its annotations ask.
func (c *Controller) syncRoute(ctx context.Context, svc *corev1.Service, in *Intent, ing *networkingv1.Ingress, route *gatewayv1.HTTPRoute, r *report) (bool, error) {
	to, from, own := c.routeEnd(route), c.ingressEnd(ing), serviceOwner(svc)
	desired, err := in.HTTPRoute()
	if reportInvalid(ctx, r, err, "nothing is changed until the annotations are fixed") {
		return false, keepWhileInvalid(ctx, c, own, to, from, r)
	}
	if err != nil {
		return false, fmt.Errorf("computing the desired httproute of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if ignored := in.IngressOnly; len(ignored) > 0 {
		r.warn(ReasonIgnoredForRoute, "", fmt.Sprintf(
			"%s %s only for an Ingress and %s ignored for HTTPRoute %s: the Gateway's listener decides the class and terminates TLS",
			strings.Join(ignored, " and "), plural(len(ignored), "is", "are"), plural(len(ignored), "is", "are"), desired.Name))
	}
	if ignored := in.IngressOnlyAnnotations; len(ignored) > 0 {
		r.warn(ReasonIgnoredForRoute, "", fmt.Sprintf(
			"%s sets %s, read only by an Ingress controller and ignored on HTTPRoute %s; with the Gateway API, use instead: %s",
			AnnotationAnnotations, describeKeys(ignored), desired.Name, insteadOf(ignored)))
	}
	if msg := carriedMessage(in, desired.Name); msg != "" {
		r.normal(ReasonCarriedToHTTPRoute, "", msg)
	}
	if to.of(own) {
		warnRouteStatus(route, desired.Spec.ParentRefs[0], r)
	}
	settle := c.parentsDuringMove(ctx, own, route, desired)
	served, err := move(ctx, c, own, desired, to, from, "Delete or rename it, or set "+AnnotationGateway+` to "" to keep an Ingress`, r)
	if err == nil && settle > 0 {
		err = &controller.RequeueAfter{Delay: settle}
	}
	return served, err
}

// carriedMessage says what route carries of ingress/annotations, what it
// leaves off as acknowledged, and which features it renders without the
// Gateway's class saying it supports them; "" when nothing.
func carriedMessage(in *Intent, route string) string {
	c := &in.Carried
	var parts []string
	if len(c.Keys) > 0 {
		keys := make([]string, len(c.Keys))
		for i, k := range c.Keys {
			keys[i] = fmt.Sprintf("%s (%s)", k, c.Effects[k])
		}
		parts = append(parts, fmt.Sprintf("HTTPRoute %s carries from %s: %s", route, AnnotationAnnotations, strings.Join(keys, "; ")))
	}
	if len(in.Acknowledged) > 0 {
		parts = append(parts, fmt.Sprintf("it leaves off %s, which %s lists", listSome(in.Acknowledged), AnnotationGatewayAcknowledged))
	}
	if len(c.Unverified) > 0 {
		class := "the class of Gateway " + in.Gateway.String() + " is not known"
		if in.GatewayClass != "" {
			class = "Gateway class " + in.GatewayClass + " publishes no status.supportedFeatures"
		}
		names := make([]string, len(c.Unverified))
		for i, f := range c.Unverified {
			names[i] = string(f)
		}
		parts = append(parts, fmt.Sprintf("it uses %s, extended features of the Gateway API, without knowing they are supported: %s",
			strings.Join(names, ", "), class))
	}
	return strings.Join(parts, "; ")
}

// warnRouteStatus tells, by Warnings, what the Gateway of parent says of
// route when it refuses it; whether the route serves is untilServes's alone
// to say.
func warnRouteStatus(route *gatewayv1.HTTPRoute, parent gatewayv1.ParentReference, r *report) {
	gw := gatewayName(parent, route.Namespace)
	for _, st := range parentStatuses(route, parent) {
		for _, cond := range st.Conditions {
			switch {
			case cond.Type == string(gatewayv1.RouteConditionAccepted) && cond.Status == metav1.ConditionFalse:
				r.warn(ReasonHTTPRouteNotAccepted, conditionID(route, cond), fmt.Sprintf(
					"Gateway %s (%s) does not accept HTTPRoute %s: %s: %s", gw, st.ControllerName, route.Name, cond.Reason, cond.Message))
			case cond.Type == string(gatewayv1.RouteConditionResolvedRefs) && cond.Status == metav1.ConditionFalse:
				r.warn(ReasonHTTPRouteRefsNotResolved, conditionID(route, cond), fmt.Sprintf(
					"Gateway %s (%s) cannot resolve the references of HTTPRoute %s: %s: %s", gw, st.ControllerName, route.Name, cond.Reason, cond.Message))
			}
		}
	}
}

// maxParentRefs is the Gateway API's limit on an HTTPRoute's parentRefs.
const maxParentRefs = 32

// parentsDuringMove makes a move of the Service's route between Gateways
// (or listeners, or ports of one: its ingress/gateway, ingress/listener or
// the --ingress-gateway default changed) make-before-break: desired, the
// route as the annotations ask, keeps the live route's other parents after
// its own until its own serves it (untilServes) and went on serving for the
// settle time; only then are they dropped. Until then the Gateways it
// moves away from go on routing the Service. It returns how long the old
// parents stay, 0 when there are none or they go now.
func (c *Controller) parentsDuringMove(ctx context.Context, own owner, live, desired *gatewayv1.HTTPRoute) time.Duration {
	if live == nil || !own.owns(live) || isBeingDeleted(live) {
		return 0
	}
	want := parentKey(desired.Spec.ParentRefs[0], desired.Namespace)
	var old []gatewayv1.ParentReference
	for _, p := range live.Spec.ParentRefs {
		if parentKey(p, live.Namespace) != want {
			old = append(old, p)
		}
	}
	if len(old) == 0 {
		c.settling.resetParents(own)
		return 0
	}
	var settle time.Duration
	if len(live.Spec.ParentRefs) > 0 && parentKey(live.Spec.ParentRefs[0], live.Namespace) == want && untilServes(live, c.gateway.lookup) == "" {
		if settle = c.settling.remainingParents(own, live.UID); settle == 0 {
			klog.FromContext(ctx).Info("The route's Gateway serves it; dropping the Gateways it moved away from",
				"gateway", gatewayName(desired.Spec.ParentRefs[0], desired.Namespace), "dropped", len(old))
			return 0
		}
	} else {
		c.settling.resetParents(own)
	}
	// Up to the Gateway API's limit: parents a Gateway accepted (which
	// route the Service) before those that never did (Gateways asked for
	// and left before they served), each kept in the live order.
	keep := make([]bool, len(old))
	n := len(desired.Spec.ParentRefs)
	for _, accepted := range []bool{true, false} {
		for i, p := range old {
			if n < maxParentRefs && acceptedEver(live, p) == accepted && canShareRoute(slices.Concat(desired.Spec.ParentRefs, kept(old, keep)), p, desired.Namespace) {
				keep[i] = true
				n++
			}
		}
	}
	desired.Spec.ParentRefs = append(desired.Spec.ParentRefs, kept(old, keep)...)
	return settle
}

// kept returns the parents whose keep is true, in order.
func kept(parents []gatewayv1.ParentReference, keep []bool) []gatewayv1.ParentReference {
	var out []gatewayv1.ParentReference
	for i, p := range parents {
		if keep[i] {
			out = append(out, p)
		}
	}
	return out
}

// acceptedEver reports whether a Gateway controller reports parent as
// having accepted route, for any generation of it.
func acceptedEver(route *gatewayv1.HTTPRoute, parent gatewayv1.ParentReference) bool {
	for _, st := range parentStatuses(route, parent) {
		for _, c := range st.Conditions {
			if c.Type == string(gatewayv1.RouteConditionAccepted) && c.Status == metav1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

// canShareRoute reports whether parent may join parents in one route's
// spec.parentRefs: the Gateway API admits two references to the same
// Gateway only when both name a listener (sectionName), each another. A
// move between the whole of a Gateway and one of its listeners therefore
// rewrites the parent in place, on the Gateway that serves both.
func canShareRoute(parents []gatewayv1.ParentReference, parent gatewayv1.ParentReference, namespace string) bool {
	for _, p := range parents {
		if !isGatewayRef(p) || !isGatewayRef(parent) || gatewayName(p, namespace) != gatewayName(parent, namespace) {
			continue
		}
		if p.SectionName == nil || parent.SectionName == nil || *p.SectionName == *parent.SectionName {
			return false
		}
	}
	return true
}

// settling holds, per Service moving between Ingress and HTTPRoute (or its
// route between Gateways), when the new object (or parent) was first seen
// ready. The old one is retired only a settle time later: a Gateway
// implementation marks a route Accepted (and an Ingress controller
// publishes an address) when its control plane took the object, and its
// data plane serves it a moment later. Kept in memory: after a restart the
// settle time starts again, which only delays.
type settling struct {
	settle time.Duration
	now    func() time.Time
	mu     sync.Mutex
	since  map[settleKey]readySince
}

// settleKey is one move of one owner: between kinds, or (parents) of its
// route between Gateways. migration: the owner is a user's Ingress, not
// the Service of the same name.
type settleKey struct {
	svc                cache.ObjectName
	parents, migration bool
}

type readySince struct {
	uid types.UID
	at  time.Time
}

// remaining returns how much longer the old object of own is kept, now
// that the new object uid is ready.
func (s *settling) remaining(own owner, uid types.UID) time.Duration {
	return s.wait(own.settleKey(false), uid)
}

// remainingParents returns how much longer the Gateways the route uid of
// own moves away from stay its parents, now that the one it is for serves
// it.
func (s *settling) remainingParents(own owner, uid types.UID) time.Duration {
	return s.wait(own.settleKey(true), uid)
}

func (s *settling) wait(key settleKey, uid types.UID) time.Duration {
	if s.settle <= 0 {
		return 0
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.since[key]
	if !ok || r.uid != uid {
		r = readySince{uid: uid, at: now}
		s.since[key] = r
	}
	if left := s.settle - now.Sub(r.at); left > 0 {
		return left
	}
	delete(s.since, key)
	return 0
}

// reset forgets own's ready time: the new object is not ready (any more).
func (s *settling) reset(own owner) { s.drop(own.settleKey(false)) }

// resetParents forgets when the parent own's route is for first served it.
func (s *settling) resetParents(own owner) { s.drop(own.settleKey(true)) }

func (s *settling) drop(key settleKey) {
	s.mu.Lock()
	delete(s.since, key)
	s.mu.Unlock()
}

// forget drops everything of the owner key (it is gone).
func (s *settling) forget(key cache.ObjectName, migration bool) {
	s.drop(settleKey{svc: key, migration: migration})
	s.drop(settleKey{svc: key, parents: true, migration: migration})
}
