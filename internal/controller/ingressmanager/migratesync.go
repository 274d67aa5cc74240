package ingressmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/metrics"
)

// The users' Ingresses that ask to move (migrate.go) have a queue of their
// own, keyed by the Ingress's namespace/name, beside the Services': a
// Service and an Ingress of one name are two keys, each synced by its own
// function, both moving by move. Their route of that name is the one
// object both could want; neither takes the other's (owner.owns).

// migrations is the migration side of the controller.
type migrations struct {
	loop  controller.Loop[cache.ObjectName]
	notes notes
	// states holds each opted-in Ingress's state as its last sync saw it,
	// for the metric.
	states sync.Map // cache.ObjectName -> string
	// redirectCode is Config.HTTPRedirectCode.
	redirectCode int
}

// The states of an Ingress that asks to move, as the metric names them.
const (
	stateBlocked  = "blocked"
	stateMoving   = "moving"
	stateDraining = "draining"
	stateMoved    = "moved"
)

var migrationStates = []string{stateBlocked, stateMoving, stateDraining, stateMoved}

// Indexes of the Ingress informer, of the Ingresses that ask to move
// (migrationWanted) alone: by the <namespace>/<name> of the Services their
// backends name, and of the Gateway they move to. A change of either
// brings them back.
const (
	byBackendService  = "migration-backend"
	byMigrationTarget = "migration-gateway"
)

func indexByBackendService(obj any) ([]string, error) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok || !migrationWanted(ing) {
		return nil, nil
	}
	var out []string
	for _, name := range backendServices(ing) {
		out = append(out, ing.Namespace+"/"+name)
	}
	return out, nil
}

func indexByMigrationTarget(obj any) ([]string, error) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok || !migrationWanted(ing) {
		return nil, nil
	}
	gw, _, _, _ := parseMigrationAnnotations(ing)
	if gw == nil {
		return nil, nil
	}
	return []string{gw.String()}, nil
}

// enqueueMigration queues the key of a user's Ingress that asks to move,
// or did (it has our route, or is withdrawn from external-dns), for an
// event of the Ingress or of a route of its name.
func (c *Controller) enqueueMigration(obj metav1.Object) {
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		if !serviceControlled(o) && (ingressNGINXCanary(o) || ingressClass(o) == "nginx" && (migrationWanted(o) || withdrawalMarked(o))) {
			c.queueCanaryMoves(o) // a canary and its main Ingress decide together
		}
		_, asks := o.Annotations[AnnotationGateway]
		switch {
		case serviceControlled(o):
			if !asks && !c.migrations.notes.has(cache.MetaObjectToName(o)) {
				return // nothing to say of it (see warnGatewayOnServiceIngress)
			}
		case !asks && !withdrawalMarked(o) && !c.hasMigratedRoute(o):
			return
		}
	case *gatewayv1.HTTPRoute:
		// A route made from an Ingress (its redirect route brings the
		// Ingress of its name without the suffix), or one in the place of
		// an Ingress's that asks to move (someone else's, deleted: its
		// route can be made now).
		if _, ok := o.Annotations[AnnotationMigratedFrom]; ok {
			if base, ok := strings.CutSuffix(o.Name, redirectRouteSuffix); ok && base != "" {
				c.migrations.loop.Queue.Add(cache.ObjectName{Namespace: o.Namespace, Name: base})
			}
		} else {
			// Someone else's in the place of the redirect route of an
			// Ingress that asks to move keeps that Ingress too (deleted:
			// its redirect route can be made now).
			if base, ok := strings.CutSuffix(o.Name, redirectRouteSuffix); ok && base != "" {
				key := cache.ObjectName{Namespace: o.Namespace, Name: base}
				if ing, err := cached[*networkingv1.Ingress](c.ingresses, key); err == nil && migrationWanted(ing) {
					c.migrations.loop.Queue.Add(key)
				}
			}
			ing, err := cached[*networkingv1.Ingress](c.ingresses, cache.MetaObjectToName(o))
			if err != nil || !migrationWanted(ing) {
				return
			}
		}
	default:
		return
	}
	c.migrations.loop.Queue.Add(cache.MetaObjectToName(obj))
}

// hasMigratedRoute reports whether the route of ing's name, or its
// redirect route, is made from it: an Ingress that no longer asks to move
// has them to take back (its redirect route may be all there is, made
// before the route).
func (c *Controller) hasMigratedRoute(ing *networkingv1.Ingress) bool {
	routes, _ := c.gateway.routeCache()
	if routes == nil {
		return false
	}
	for _, name := range []string{ing.Name, redirectRouteName(ing.Name)} {
		route, err := cached[*gatewayv1.HTTPRoute](routes, cache.ObjectName{Namespace: ing.Namespace, Name: name})
		if err == nil && route != nil && isMigratedFrom(route, ing, c.route.fieldManager) {
			return true
		}
	}
	return false
}

// updateIngress is the Ingress informer's update handler: an Ingress's
// owner (enqueueOwned) on a change; on a resync, a user's Ingress that asks
// to move, as a cheap periodic re-check (its canaries, say, have no event
// of their own here).
func (c *Controller) updateIngress(oldObj, newObj any) {
	if !controller.IsResync(oldObj, newObj) {
		c.enqueueOwned(newObj)
		return
	}
	if ing, ok := newObj.(*networkingv1.Ingress); ok && migrationWanted(ing) {
		c.migrations.loop.Queue.Add(cache.MetaObjectToName(ing))
	}
}

// enqueueMigrationsOf queues the Ingresses that ask to move and are
// indexed under key in index.
func (c *Controller) enqueueMigrationsOf(index, key string) {
	list, err := c.ingresses.ByIndex(index, key)
	if err != nil {
		return
	}
	for _, obj := range list {
		if ing, ok := obj.(*networkingv1.Ingress); ok {
			c.migrations.loop.Queue.Add(cache.MetaObjectToName(ing))
		}
	}
}

// serviceChanged brings back the Ingresses that ask to move whose backends
// name the Service of obj (added, deleted, its ports changed): a port by
// name resolves through it.
func (c *Controller) serviceChanged(obj any) {
	if key, err := controller.ObjectKey(obj); err == nil {
		c.enqueueMigrationsOf(byBackendService, key.String())
	}
}

// gatewayChanged brings back the Ingresses that ask to move to Gateway key.
func (c *Controller) gatewayChanged(key cache.ObjectName) {
	c.enqueueMigrationsOf(byMigrationTarget, key.String())
}

// migrationsAnswered queues every user's Ingress that asks to move, or is
// withdrawn from external-dns: whether the Gateway API is served is known,
// or changed.
func (c *Controller) migrationsAnswered() {
	for _, obj := range c.ingresses.List() {
		if ing, ok := obj.(*networkingv1.Ingress); ok && !serviceControlled(ing) && (migrationWanted(ing) || withdrawalMarked(ing)) {
			c.migrations.loop.Queue.Add(cache.MetaObjectToName(ing))
		}
	}
}

// syncMigration converges the user's Ingress of key that asks to move to
// an HTTPRoute (or did):
//
//   - gone (deleted, by its user or once moved): the route is left alone, the
//     user's from then on; withdrawn from external-dns, it is returned to it,
//     being the only object left that can serve the hosts;
//   - not asking (ingress/gateway removed): its traffic moves back from the
//     route made from it, make-before-break (back in external-dns, the
//     route withdrawn and drained once the Ingress serves, then deleted);
//   - asking, and blocked (keys the route cannot carry): the same;
//   - asking, and its route cannot be made (bad annotations, shapes the
//     rendering does not handle): nothing changes but that the Ingress is
//     returned to external-dns unless the route serves as it is;
//   - asking: the route is made and the Ingress moves to it (move), then
//     stays withdrawn, or is deleted with ingress/delete-after-move.
//
// Someone else's route of the name is never written (a Warning).
func (c *Controller) syncMigration(ctx context.Context, key cache.ObjectName) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("ingress", klog.KRef(key.Namespace, key.Name)))
	ing, err := cached[*networkingv1.Ingress](c.ingresses, key)
	if err != nil {
		return fmt.Errorf("reading ingress %s from the cache: %w", key, err)
	}
	routes, answered := c.gateway.routeCache()
	var route *gatewayv1.HTTPRoute
	if routes != nil {
		if route, err = cached[*gatewayv1.HTTPRoute](routes, key); err != nil {
			return fmt.Errorf("reading httproute %s from the cache: %w", key, err)
		}
	}
	if ing != nil && !isBeingDeleted(ing) && serviceControlled(ing) {
		c.forgetMigration(key, false)
		c.warnGatewayOnServiceIngress(ing)
		return nil
	}
	if ing == nil || isBeingDeleted(ing) {
		c.forgetMigration(key, ing == nil)
		if ing == nil && route != nil && metav1.GetControllerOfNoCopy(route) == nil && route.Annotations[AnnotationMigratedFrom] != "" &&
			ownsAnnotation(route, c.route.fieldManager, AnnotationMigratedFrom) {
			_, err := c.route.restore(ctx, route, fmt.Sprintf("Ingress %s, which it was made from, is gone", key.Name), &report{})
			return err
		}
		return nil
	}

	if ingressNGINXCanary(ing) {
		return c.syncCanary(ctx, key, ing)
	}
	// Its canaries follow it in external-dns: each of its syncs brings
	// them back (a no-op when nothing changed for them).
	defer c.queueCanaryMoves(ing)

	r := &report{}
	complete := false
	defer func() { c.migrations.notes.publish(ing, r, complete) }()
	own := migrationOwner(ing, c.route.fieldManager)
	ingress := end[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration]{w: c.ingress, obj: ing, user: true}
	if !migrationWanted(ing) {
		complete = true
		c.migrations.states.Delete(key)
		return c.moveBack(ctx, own, ingress, route, fmt.Sprintf("the Ingress no longer carries %s", AnnotationGateway), r)
	}
	if !answered {
		return nil // gatewayAnswered brings it back
	}
	complete = true
	if routes == nil {
		c.setState(key, stateBlocked)
		r.warn(ReasonGatewayAPINotInstalled, "", fmt.Sprintf(
			"the Ingress asks to move to an HTTPRoute attached to Gateway %s, but the cluster does not serve the Gateway API (gateway.networking.k8s.io/v1 httproutes); it stays as it is until the Gateway API CRDs are installed",
			quote(strings.TrimSpace(ing.Annotations[AnnotationGateway]))))
		_, err := c.ingress.restore(ctx, ing, "the Gateway API is not served", r)
		return err
	}

	m := renderMigration(c.migrationInput(ing))
	for _, p := range m.Problems {
		r.warn(p.Reason, "", p.Message)
	}
	if len(m.Unsupported) > 0 {
		r.warn(ReasonMigrationUnsupported, "", fmt.Sprintf("no HTTPRoute can be made from the Ingress, which stays as it is (a route made before is left as it was): %s",
			strings.Join(m.Unsupported, "; ")))
	}
	if !m.renderable() || m.Route == nil || m.Gateway == nil {
		c.setState(key, stateBlocked)
		if len(m.droppedCanaries) > 0 {
			// The route, as it is, does not carry their share: the Ingress
			// serves its hosts, with its canaries, from ingress-nginx, and
			// is what external-dns publishes (with them), whatever the
			// route serves.
			return ingress.keep(ctx, own, fmt.Sprintf("its route does not carry the share of its ingress-nginx %s %s",
				plural(len(m.droppedCanaries), "canary", "canaries"), strings.Join(m.droppedCanaries, ", ")), r)
		}
		// A route made with the redirect serves its hosts' plain HTTP only
		// through its redirect route: that one not serving, the Ingress is
		// what serves them, whatever the route says.
		live, ours, err := c.redirectRouteOf(own)
		if err != nil {
			return err
		}
		if ours {
			if until := redirectUntilServes(live, live.Spec.ParentRefs, c.gateway.lookup); until != "" {
				return ingress.keep(ctx, own, "its redirect route, made before, is not accepted: it is kept until "+until, r)
			}
		}
		return keepWhileInvalid(ctx, c, own, c.routeEnd(route), ingress, r)
	}
	if m.blocked() {
		c.setState(key, stateBlocked)
		r.warn(ReasonMigrationBlocked, "", fmt.Sprintf(
			"the Ingress stays on its Ingress controller: HTTPRoute %s cannot carry %s. List %s in %s (or \"*\") to move without %s, or remove %s from the Ingress",
			ing.Name, describeBlocking(m.Blocking), plural(len(m.Blocking), "it", "them"), AnnotationGatewayAcknowledged,
			plural(len(m.Blocking), "it", "them"), plural(len(m.Blocking), "it", "them")))
		return c.moveBack(ctx, own, ingress, route, "keys the route cannot carry keep the Ingress", r)
	}

	to := c.routeEnd(route)
	foreign := route != nil && !own.owns(route)
	if to.of(own) {
		warnRouteStatus(route, m.Route.Spec.ParentRefs[0], r)
	}
	ingress.deleteDrained = m.DeleteAfterMove
	if !foreign { // someone else's route in the way: move says so, and nothing is made
		if ready, err := c.syncRedirectRoute(ctx, own, m, route, ingress, r); !ready || err != nil {
			c.setState(key, stateMoving)
			return err
		}
	}
	settle := c.parentsDuringMove(ctx, own, route, m.Route)
	served, err := move(ctx, c, own, m.Route, to, ingress, "Delete or rename it, or remove "+AnnotationGateway+" from the Ingress", r)
	if err == nil && settle > 0 {
		err = &controller.RequeueAfter{Delay: settle}
	}
	c.setState(key, c.movingState(ing, foreign, served))
	return err
}

// warnGatewayOnServiceIngress tells, by a Warning on the Ingress, that
// the ingress/gateway it carries is not read: a Service controls it, and
// moves it by the Service's own annotations. Once, while it is there.
func (c *Controller) warnGatewayOnServiceIngress(ing *networkingv1.Ingress) {
	r := &report{}
	if _, ok := ing.Annotations[AnnotationGateway]; ok {
		svc := metav1.GetControllerOfNoCopy(ing).Name
		r.warn(ReasonGatewayOnServiceIngress, "present", fmt.Sprintf(
			"%s on Ingress %s is not read: Service %s controls it and moves it to an HTTPRoute by its own annotations; set %s on Service %s instead, and remove it here",
			AnnotationGateway, ing.Name, svc, AnnotationGateway, svc))
	}
	c.migrations.notes.publish(ing, r, true)
}

// moveBack moves a user's Ingress's traffic back from the route made from
// it (if there is one): the Ingress, taken as it is, is returned to
// external-dns, and once it serves, the route is withdrawn, drained and
// deleted. Without such a route, the Ingress is returned to external-dns
// if it was withdrawn.
func (c *Controller) moveBack(ctx context.Context, own owner, ingress end[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration], route *gatewayv1.HTTPRoute, why string, r *report) error {
	from := c.routeEnd(route)
	if !from.of(own) {
		// The route is gone (or not this Ingress's): its redirect
		// route has nothing left to redirect to.
		return errors.Join(ingress.keep(ctx, own, why, r), c.deleteRedirectRoute(ctx, own, "the HTTPRoute it redirects to is gone", r))
	}
	_, err := move(ctx, c, own, ingress.obj, ingress, from, "", r)
	return err
}

// movingState is the state of an Ingress moving to its route (foreign:
// someone else's route of its name is in the way; served: move says the
// route serves).
func (c *Controller) movingState(ing *networkingv1.Ingress, foreign, served bool) string {
	at, withdrawn := withdrawnAt(ing)
	switch {
	case foreign:
		return stateBlocked
	case !served || !withdrawn:
		return stateMoving
	case c.cutover.now().Sub(at) < c.cutover.drain:
		return stateDraining
	}
	return stateMoved
}

func (c *Controller) setState(key cache.ObjectName, state string) {
	c.migrations.states.Store(key, state)
}

// forgetMigration drops what the controller holds of the Ingress key (no
// longer a user's Ingress that moves); gone: it is not there at all.
func (c *Controller) forgetMigration(key cache.ObjectName, gone bool) {
	c.migrations.states.Delete(key)
	c.settling.forget(key, true)
	if gone {
		c.migrations.notes.forget(key)
		c.route.forget(types.NamespacedName(key))
	}
}

// migrationInput gathers from the caches what the route of ing is
// rendered from.
func (c *Controller) migrationInput(ing *networkingv1.Ingress) migrationInput {
	in := migrationInput{Ingress: ing, Services: map[string]*corev1.Service{}, RedirectCode: c.migrations.redirectCode}
	for _, name := range backendServices(ing) {
		if svc, err := cached[*corev1.Service](c.services, cache.ObjectName{Namespace: ing.Namespace, Name: name}); err == nil && svc != nil {
			in.Services[name] = svc
		}
	}
	if gw, _, _, _ := parseMigrationAnnotations(ing); gw != nil {
		in.Gateway, in.GatewayVisible = c.gateway.lookup(gw.Namespace, gw.Name)
		// What the Gateway's class supports decides what the route
		// carries, as for a Service's route (an extended feature it does
		// not list blocks its key).
		_, in.Supported = c.gateway.classOf(*gw)
	}
	in.Canaries = canariesOf(ing, c.ingresses)
	for _, canary := range in.Canaries {
		for _, name := range backendServices(canary) {
			if svc, err := cached[*corev1.Service](c.services, cache.ObjectName{Namespace: ing.Namespace, Name: name}); err == nil && svc != nil {
				in.Services[name] = svc
			}
		}
	}
	return in
}

// reportMigrations makes the running controller the source of
// controller_ingress_migrations until ctx ends.
func (c *Controller) reportMigrations(ctx context.Context) {
	defer metrics.ReportIngressMigrations(migrationStates, func(add func(string)) {
		c.migrations.states.Range(func(_, v any) bool {
			add(v.(string))
			return true
		})
	})()
	<-ctx.Done()
}

// redirectRouteOf returns own's redirect route as cached (nil: none), and
// whether it is own's.
func (c *Controller) redirectRouteOf(own owner) (*gatewayv1.HTTPRoute, bool, error) {
	routes, _ := c.gateway.routeCache()
	if routes == nil {
		return nil, false, nil
	}
	key := cache.ObjectName{Namespace: own.ing.Namespace, Name: redirectRouteName(own.ing.Name)}
	live, err := cached[*gatewayv1.HTTPRoute](routes, key)
	if err != nil {
		return nil, false, fmt.Errorf("reading httproute %s from the cache: %w", key, err)
	}
	return live, isRedirectRouteOf(live, own.ing, c.route.fieldManager), nil
}

// syncRedirectRoute converges the redirect route of a migration that
// carries the HTTPS redirect (m.RedirectRoute), and reports whether the
// move may go on: the redirect route is made and accepted on each of its
// plain-HTTP listeners (redirectUntilServes), or there is none to make.
// Until then the Ingress stays (returned to external-dns if it was
// withdrawn), and its route is not made, nor moved onto the HTTPS
// listener. Without a redirect, a redirect route made before is deleted
// once route, the Ingress's, no longer needs it (deleteRedirectRoute).
func (c *Controller) syncRedirectRoute(ctx context.Context, own owner, m *Migration, route *gatewayv1.HTTPRoute,
	ingress end[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration], r *report) (bool, error) {
	live, ours, err := c.redirectRouteOf(own)
	if err != nil {
		return false, err
	}
	if m.RedirectRoute == nil {
		// Delete it only once the route serves on the parent it has
		// without a redirect (the whole Gateway, or the listener named),
		// and on that one alone (not on a Gateway it moves away from):
		// until then its plain-HTTP requests are the redirect's.
		if ours && (!c.routeEnd(route).of(own) || len(route.Spec.ParentRefs) == 1 &&
			parentKey(route.Spec.ParentRefs[0], route.Namespace) == parentKey(m.Route.Spec.ParentRefs[0], route.Namespace) &&
			untilServes(route, c.gateway.lookup) == "") {
			return true, c.deleteRedirectRoute(ctx, own, "the HTTPRoute it redirects to serves plain HTTP itself, or is gone", r)
		}
		return true, nil
	}
	if live == nil && route != nil && !own.owns(route) {
		// Someone else's route has the Ingress's name: the move cannot
		// happen (move says why), and a redirect route made for it
		// would answer plain HTTP for the hosts, on the Gateway, with
		// a redirect to an HTTPS side that is not the Ingress's.
		return true, nil
	}
	desired := m.RedirectRoute
	if ours && c.routeEnd(route).of(own) {
		desired = desired.DeepCopy()
		redirectParentsDuringMove(live, route, desired)
	}
	ok, wrote, err := c.route.converge(ctx, own, live, desired, r,
		fmt.Sprintf("Delete or rename it, or set %s to \"false\" on the Ingress (or list it in %s) to move without the redirect", nginxSSLRedirect, AnnotationGatewayAcknowledged))
	if wrote {
		return false, err
	}
	if !ok || err != nil {
		why := fmt.Sprintf("HTTPRoute %s, which redirects plain HTTP to HTTPS for it, is not there yet", m.RedirectRoute.Name)
		if err != nil {
			why = fmt.Sprintf("HTTPRoute %s, which redirects plain HTTP to HTTPS for it, cannot be written", m.RedirectRoute.Name)
		}
		return false, errors.Join(err, ingress.keep(ctx, own, why, r))
	}
	for _, p := range live.Spec.ParentRefs {
		warnRouteStatus(live, p, r)
	}
	if until := redirectUntilServes(live, m.RedirectRoute.Spec.ParentRefs, c.gateway.lookup); until != "" {
		r.normal(c.route.reasons.waiting, string(live.UID), fmt.Sprintf("Keeping Ingress %s until %s", own.ing.Name, until))
		return false, ingress.keep(ctx, own, "it is kept until "+until, r)
	}
	return true, nil
}

// deleteRedirectRoute deletes own's redirect route, if it has one, only
// as cached (its resourceVersion a precondition too): its marker makes it
// own's, and its user may have changed that since (the route is theirs
// then); the change's event brings the Ingress back.
func (c *Controller) deleteRedirectRoute(ctx context.Context, own owner, why string, r *report) error {
	live, ours, err := c.redirectRouteOf(own)
	if err != nil || !ours {
		return err
	}
	return c.route.deleteExact(ctx, live, why, r)
}
