package ingressmanager

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// sync converges the Ingress or HTTPRoute of one Service key, in three
// parts: it gathers what the caches hold of the key (observe), removes what
// a Service no longer there controlled (removeStale), then decides from the
// Service's annotations which kind serves it (chooseTarget, which writes
// nothing) and moves it there (syncIngress, syncRoute: see move), writing
// its URL once the target serves.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("service", klog.KRef(key.Namespace, key.Name))
	ctx = klog.NewContext(ctx, logger)

	o, err := c.observe(key)
	if err != nil {
		return err
	}
	// Every Event of this sync leaves by r. Only a sync that looked at
	// everything the Service asks for may forget what earlier ones said.
	r := &report{}
	complete := false
	defer func() {
		if o.svc != nil {
			c.notes.publish(o.svc, r, complete)
		}
	}()

	if done, err := c.removeStale(ctx, key, &o, r); done {
		return err
	}
	svc := o.svc
	in := c.builder.Parse(svc)
	if in.Target == TargetHTTPRoute && !o.answered {
		// Whether the Gateway API is served is not known yet: the answer
		// brings the Service back (gatewayAnswered).
		return nil
	}
	if in.Target == TargetHTTPRoute && in.Gateway != nil {
		// What the route carries depends on what its Gateway's class
		// supports.
		in.carry(c.gateway.classOf(*in.Gateway))
	}
	complete = true
	if in.Target == TargetNone {
		why := fmt.Sprintf("the Service no longer has the %s annotation", AnnotationHTTP)
		var errs []error
		if o.ing != nil && isControlledBy(o.ing, svc) {
			errs = append(errs, c.ingress.delete(ctx, o.ing, why, r))
		}
		if o.route != nil && isControlledBy(o.route, svc) {
			errs = append(errs, c.route.delete(ctx, o.route, why, r))
		}
		return errors.Join(append(errs, c.publishURL(ctx, svc, in, "", r))...)
	}

	target := chooseTarget(in, svc, o.ing, o.routesServed, c.builder.fieldManager, r)
	var served bool
	if target == TargetHTTPRoute {
		served, err = c.syncRoute(ctx, svc, in, o.ing, o.route, r)
		if routesNotServed(err) {
			// The HTTPRoute CRD is gone and discovery does not say so yet:
			// the Service gets its Ingress now, and discovery is asked
			// again at once (its answer drops the route cache and brings
			// every Service on a Gateway to its Ingress).
			klog.FromContext(ctx).Info("The API server does not serve HTTPRoutes; the Service gets an Ingress", "err", err)
			c.gateway.askAgain()
			target, o.route, err = TargetIngress, nil, nil
			warnGatewayAPINotServed(r, in)
		}
	}
	if target != TargetHTTPRoute {
		served, err = c.syncIngress(ctx, svc, in, o.ing, o.route, r)
	}
	// The URL names the target once it serves what the annotations ask
	// for; until then it is left as it is, across a move naming what the
	// old object still serves.
	if served && in.invalid(target) == nil {
		if urlErr := c.publishURL(ctx, svc, in, in.URL, r); urlErr != nil {
			return errors.Join(err, urlErr)
		}
	}
	return err
}

// observed is what the caches hold of one Service key.
type observed struct {
	svc   *corev1.Service
	ing   *networkingv1.Ingress
	route *gatewayv1.HTTPRoute
	// routesServed: HTTPRoutes are served and watched; answered: whether
	// they are is known (see gatewayAPI.routeCache).
	routesServed, answered bool
}

// observe reads the Service of key, and the Ingress and HTTPRoute of its
// name, from the informers' caches.
func (c *Controller) observe(key cache.ObjectName) (observed, error) {
	var o observed
	var err error
	if o.svc, err = cached[*corev1.Service](c.services, key); err != nil {
		return o, fmt.Errorf("reading service %s from the cache: %w", key, err)
	}
	if o.ing, err = cached[*networkingv1.Ingress](c.ingresses, key); err != nil {
		return o, fmt.Errorf("reading ingress %s from the cache: %w", key, err)
	}
	routes, answered := c.gateway.routeCache()
	o.routesServed, o.answered = routes != nil, answered
	if routes != nil {
		if o.route, err = cached[*gatewayv1.HTTPRoute](routes, key); err != nil {
			return o, fmt.Errorf("reading httproute %s from the cache: %w", key, err)
		}
	}
	return o, nil
}

// removeStale deletes an Ingress or HTTPRoute of key's name controlled by
// a Service of that name that is not the current one (deleted, or deleted
// and recreated), so that the current Service (if any) gets a fresh one.
// done reports that the sync ends here: nothing more to do (no Service, or
// one being deleted), or an error.
func (c *Controller) removeStale(ctx context.Context, key cache.ObjectName, o *observed, r *report) (done bool, err error) {
	svc := o.svc
	staleIng := o.ing != nil && isStale(o.ing, key.Name, svc)
	staleRoute := o.route != nil && isStale(o.route, key.Name, svc)
	if staleIng && !isBeingDeleted(o.ing) || staleRoute && !isBeingDeleted(o.route) {
		// Absent from the cache is not gone, and another UID in the cache
		// is not the live one: a new leader's or a relisting informer's
		// Service cache may be behind its Ingress cache, by one
		// incarnation of the Service. Ask the API server first, as the
		// garbage collector does.
		live, err := c.liveService(ctx, key)
		if err != nil {
			return true, err
		}
		if behind := serviceCacheBehind(svc, live); behind != nil {
			// Deciding on the cached Service would delete the live one's
			// object and make one owned by a dead UID: nothing is written
			// until the cache has the live Service (its events bring the
			// key back; the error retries it meanwhile).
			return true, behind
		}
		staleIng = staleIng && isStale(o.ing, key.Name, live)
		staleRoute = staleRoute && isStale(o.route, key.Name, live)
	}
	var errs []error
	if staleIng {
		errs = append(errs, c.ingress.delete(ctx, o.ing, "its Service no longer exists", r))
		o.ing = nil
	}
	if staleRoute {
		errs = append(errs, c.route.delete(ctx, o.route, "its Service no longer exists", r))
		o.route = nil
	}
	if err := errors.Join(errs...); err != nil || svc == nil {
		if svc == nil {
			c.notes.forget(key)
			c.settling.forget(key, false)
			c.ingress.forget(types.NamespacedName(key))
			c.route.forget(types.NamespacedName(key))
		}
		return true, err
	}
	// What a Service being deleted owns is the garbage collector's to
	// delete (first, in a foreground deletion): recreating it meanwhile
	// would fight the collector and hold the Service's deletion up.
	return svc.DeletionTimestamp != nil, nil
}

// chooseTarget decides which kind serves the Service, as its intent asks
// unless the cluster or the Service forbids it, and tells why in r. It
// writes nothing.
//
//   - A Service that asks for a Gateway keeps an Ingress while HTTPRoutes
//     are not served.
//   - It keeps an Ingress while it sets keys (on the Service's
//     ingress/annotations, or the Ingress itself) that an HTTPRoute cannot
//     carry, access control only the Ingress controller enforces among
//     them, not acknowledged as done on the Gateway side.
func chooseTarget(in *Intent, svc *corev1.Service, ing *networkingv1.Ingress, routesServed bool, fieldManager string, r *report) Target {
	if in.Target != TargetHTTPRoute {
		return in.Target
	}
	if !routesServed {
		warnGatewayAPINotServed(r, in)
		return TargetIngress
	}
	guarded, onIngress := guardedKeys(in, svc, ing, fieldManager)
	if len(guarded) == 0 || in.invalid(TargetHTTPRoute) != nil {
		return TargetHTTPRoute
	}
	// An HTTPRoute would serve the Service without what only its Ingress
	// controller does: keep (or go back to) the Ingress until the user
	// says the Gateway side has it.
	where, remove := AnnotationAnnotations, AnnotationAnnotations
	if len(onIngress) > 0 {
		where = fmt.Sprintf("%s or Ingress %s itself", AnnotationAnnotations, ing.Name)
		remove = fmt.Sprintf("%s or the Ingress", AnnotationAnnotations)
	}
	var access []string
	var other []BlockedKey
	for _, b := range guarded {
		if b.Access {
			access = append(access, b.Key)
		} else {
			other = append(other, b)
		}
	}
	gateway := in.Gateway.String()
	if in.GatewayClass != "" {
		gateway += " (class " + in.GatewayClass + ")"
	}
	if len(access) > 0 {
		msg := fmt.Sprintf(
			"the Service asks for an HTTPRoute attached to Gateway %s, but %s restricts access with %s, which an HTTPRoute ignores; "+
				"it stays on an Ingress so that it is not served without them. Enforce the equivalent on the Gateway side (%s), "+
				"then list the keys in %s (or \"*\") or remove them from %s",
			in.Gateway, where, describeKeys(access), insteadOf(access),
			AnnotationGatewayAcknowledged, remove)
		if len(other) > 0 {
			msg += fmt.Sprintf(". It also sets keys an HTTPRoute of Gateway %s cannot carry, to list or remove as well: %s", gateway, describeBlocked(other))
		}
		r.warn(ReasonAccessControlOnIngress, "", msg)
		return TargetIngress
	}
	r.warn(ReasonNotCarried, "", fmt.Sprintf(
		"the Service asks for an HTTPRoute attached to Gateway %s, but %s sets keys an HTTPRoute cannot carry: %s; "+
			"it stays on an Ingress so that it is not served without what they do. Do the equivalent on the Gateway side, "+
			"then list the keys in %s (or \"*\") or remove them from %s (the keys an HTTPRoute carries: docs/reference/translations.md)",
		gateway, where, describeBlocked(other), AnnotationGatewayAcknowledged, remove))
	return TargetIngress
}

// warnGatewayAPINotServed tells that the Service, which asks for a
// Gateway, keeps an Ingress because the cluster does not serve HTTPRoutes.
func warnGatewayAPINotServed(r *report, in *Intent) {
	what := "a Gateway"
	if in.Gateway != nil {
		what = "Gateway " + in.Gateway.String()
	}
	r.warn(ReasonGatewayAPINotInstalled, "", fmt.Sprintf(
		"the Service asks for an HTTPRoute attached to %s, but the cluster does not serve the Gateway API (gateway.networking.k8s.io/v1 httproutes); it keeps an Ingress until the Gateway API CRDs are installed", what))
}

// cached returns the object of key in an informer's cache, nil when there
// is none. A lister's Get would make a NotFound error for every absence,
// and absence is the common case: the first sync of a new Service finds no
// Ingress, and every sync looks for an HTTPRoute most Services never have.
func cached[T runtime.Object](indexer cache.Indexer, key cache.ObjectName) (T, error) {
	var none T
	obj, exists, err := indexer.GetByKey(key.String())
	if err != nil || !exists {
		return none, err
	}
	t, ok := obj.(T)
	if !ok {
		return none, fmt.Errorf("the cache holds a %T, not a %T", obj, none)
	}
	return t, nil
}

// reportInvalid reports whether err is bad input (an InvalidError), and if
// so tells the user on the Service, with meanwhile: what happens until it
// is fixed. Nothing is written and nothing retried: the fix is an edit of
// the Service, which requeues it.
func reportInvalid(ctx context.Context, r *report, err error, meanwhile string) bool {
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		return false
	}
	r.warn(invalid.Reason, "", invalid.Message+"; "+meanwhile)
	klog.FromContext(ctx).V(2).Info("Invalid ingress annotations", "reason", invalid.Reason, "message", invalid.Message)
	return true
}

// A Service absent from the cache, or cached with another UID than the
// controller of its object, is read from the API server before that object
// is deleted.
// +kubebuilder:rbac:groups="",resources=services,verbs=get

// liveService reads the Service of key from the API server; nil when there
// is none.
func (c *Controller) liveService(ctx context.Context, key cache.ObjectName) (*corev1.Service, error) {
	svc, err := c.serviceClient.Services(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading service %s from the API server before deleting what another Service of the name owned: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Read the Service from the API server", "uid", svc.UID)
	return svc, nil
}

// errServiceCacheBehind: the Service cache does not hold the live Service
// of a name.
var errServiceCacheBehind = errors.New("the service cache is behind the API server")

// serviceCacheBehind returns an error wrapping errServiceCacheBehind when
// cached, the Service of a name in the cache (nil: none), is not live, the
// one the API server has (nil: none): a cached Service whose UID is not
// the live one's, or that the API server no longer has. A Service absent
// from the cache is not behind: what it owned is judged on live alone.
func serviceCacheBehind(cached, live *corev1.Service) error {
	switch {
	case cached == nil || live != nil && live.UID == cached.UID:
		return nil
	case live == nil:
		return fmt.Errorf("service %s/%s (uid %s) is cached but gone from the API server: %w",
			cached.Namespace, cached.Name, cached.UID, errServiceCacheBehind)
	default:
		return fmt.Errorf("service %s/%s is cached with uid %s but the API server has uid %s: %w",
			cached.Namespace, cached.Name, cached.UID, live.UID, errServiceCacheBehind)
	}
}

// isStale reports whether obj is controlled by a Service named name that is
// not svc (svc nil: no such Service).
func isStale(obj metav1.Object, name string, svc *corev1.Service) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || !isServiceRef(ref) || ref.Name != name {
		return false
	}
	return svc == nil || ref.UID != svc.UID
}

// controllerOf describes obj's controller for a message.
func controllerOf(obj metav1.Object) string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return fmt.Sprintf("controller %s %s", ref.Kind, ref.Name)
	}
	return "no controller"
}
