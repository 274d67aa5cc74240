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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// sync converges the Ingress or HTTPRoute of one Service key: it removes
// what a Service no longer there controlled, parses the Service once, and
// converges what its intent's target asks for.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("service", klog.KRef(key.Namespace, key.Name))
	ctx = klog.NewContext(ctx, logger)

	svc, err := cached[*corev1.Service](c.services, key)
	if err != nil {
		return fmt.Errorf("reading service %s from the cache: %w", key, err)
	}
	ing, err := cached[*networkingv1.Ingress](c.ingresses, key)
	if err != nil {
		return fmt.Errorf("reading ingress %s from the cache: %w", key, err)
	}
	var route *gatewayv1.HTTPRoute
	routes, answered := c.gateway.routeCache()
	if routes != nil {
		if route, err = cached[*gatewayv1.HTTPRoute](routes, key); err != nil {
			return fmt.Errorf("reading httproute %s from the cache: %w", key, err)
		}
	}

	// Every Event of this sync leaves by r. Only a sync that looked at
	// everything the Service asks for may forget what earlier ones said.
	r := &report{}
	complete := false
	defer func() {
		if svc != nil {
			c.notes.publish(svc, r, complete)
		}
	}()

	// An object controlled by a Service of this name that is not the
	// current one (deleted, or deleted and recreated) is stale: remove it,
	// so that the current Service (if any) gets a fresh one.
	staleIng := ing != nil && isStale(ing, key.Name, svc)
	staleRoute := route != nil && isStale(route, key.Name, svc)
	if staleIng && !isBeingDeleted(ing) || staleRoute && !isBeingDeleted(route) {
		// Absent from the cache is not gone, and another UID in the cache
		// is not the live one: a new leader's or a relisting informer's
		// Service cache may be behind its Ingress cache, by one
		// incarnation of the Service. Ask the API server first, as the
		// garbage collector does.
		live, err := c.liveService(ctx, key)
		if err != nil {
			return err
		}
		if behind := serviceCacheBehind(svc, live); behind != nil {
			// Deciding on the cached Service would delete the live one's
			// object and make one owned by a dead UID: nothing is written
			// until the cache has the live Service (its events bring the
			// key back; the error retries it meanwhile).
			return behind
		}
		staleIng = staleIng && isStale(ing, key.Name, live)
		staleRoute = staleRoute && isStale(route, key.Name, live)
	}
	var errs []error
	if staleIng {
		errs = append(errs, c.ingress.delete(ctx, ing, "its Service no longer exists", r))
		ing = nil
	}
	if staleRoute {
		errs = append(errs, c.route.delete(ctx, route, "its Service no longer exists", r))
		route = nil
	}
	if err := errors.Join(errs...); err != nil || svc == nil {
		if svc == nil {
			c.notes.forget(key)
			c.settling.forget(key)
			c.ingress.forget(types.NamespacedName(key))
			c.route.forget(types.NamespacedName(key))
		}
		return err
	}
	// What a Service being deleted owns is the garbage collector's to
	// delete (first, in a foreground deletion): recreating it meanwhile
	// would fight the collector and hold the Service's deletion up.
	if svc.DeletionTimestamp != nil {
		return nil
	}

	in := c.builder.Parse(svc)
	if in.Target == TargetHTTPRoute && !answered {
		// Whether the Gateway API is served is not known yet: the answer
		// brings the Service back (gatewayAnswered).
		return nil
	}
	complete = true
	if in.Target == TargetNone {
		why := fmt.Sprintf("the Service no longer has the %s annotation", AnnotationHTTP)
		if ing != nil && isControlledBy(ing, svc) {
			errs = append(errs, c.ingress.delete(ctx, ing, why, r))
		}
		if route != nil && isControlledBy(route, svc) {
			errs = append(errs, c.route.delete(ctx, route, why, r))
		}
		return errors.Join(append(errs, c.publishURL(ctx, svc, in, "", r))...)
	}
	rendering := in.Target
	if rendering == TargetHTTPRoute && routes == nil {
		rendering = TargetIngress
		warnGatewayAPINotServed(r, in)
	}
	if guarded, onIngress := guardedKeys(in, svc, ing, c.builder.fieldManager); rendering == TargetHTTPRoute && len(guarded) > 0 && in.invalid(TargetHTTPRoute) == nil {
		// An HTTPRoute would serve the Service without the access control
		// only its Ingress controller enforces: keep (or go back to) the
		// Ingress until the user says the Gateway side has it.
		rendering = TargetIngress
		where, remove := AnnotationAnnotations, AnnotationAnnotations
		if len(onIngress) > 0 {
			where = fmt.Sprintf("%s or Ingress %s itself", AnnotationAnnotations, ing.Name)
			remove = fmt.Sprintf("%s or the Ingress", AnnotationAnnotations)
		}
		r.warn(ReasonAccessControlOnIngress, "", fmt.Sprintf(
			"the Service asks for an HTTPRoute attached to Gateway %s, but %s restricts access with %s, which an HTTPRoute ignores; "+
				"it stays on an Ingress so that it is not served without them. Enforce the equivalent on the Gateway side (%s), "+
				"then list the keys in %s (or \"*\") or remove them from %s",
			in.Gateway, where, describeKeys(guarded), insteadOf(guarded),
			AnnotationGatewayAcknowledged, remove))
	}
	var served bool
	if rendering == TargetHTTPRoute {
		served, err = c.syncRoute(ctx, svc, in, ing, route, r)
		if routesNotServed(err) {
			// The HTTPRoute CRD is gone and discovery does not say so yet:
			// the Service gets its Ingress now, and discovery is asked
			// again at once (its answer drops the route cache and brings
			// every Service on a Gateway to its Ingress).
			klog.FromContext(ctx).Info("The API server does not serve HTTPRoutes; the Service gets an Ingress", "err", err)
			c.gateway.askAgain()
			rendering, route, err = TargetIngress, nil, nil
			warnGatewayAPINotServed(r, in)
		}
	}
	if rendering != TargetHTTPRoute {
		served, err = c.syncIngress(ctx, svc, in, ing, route, r)
	}
	// The URL names the target once it serves what the annotations ask
	// for; until then it is left as it is, across a move naming what the
	// old object still serves.
	if served && in.invalid(rendering) == nil {
		if urlErr := c.publishURL(ctx, svc, in, in.URL, r); urlErr != nil {
			return errors.Join(err, urlErr)
		}
	}
	return err
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

// ingressEnd and routeEnd are the Service's Ingress and HTTPRoute as ends
// of a move.
func (c *Controller) ingressEnd(ing *networkingv1.Ingress) end[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration] {
	return end[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration]{c.ingress, ing}
}

func (c *Controller) routeEnd(route *gatewayv1.HTTPRoute) end[*gatewayv1.HTTPRoute, gatewayv1ac.HTTPRouteApplyConfiguration] {
	return end[*gatewayv1.HTTPRoute, gatewayv1ac.HTTPRouteApplyConfiguration]{c.route, route}
}

// syncIngress moves the Service onto its Ingress (see move). It reports
// whether the Ingress serves it as its annotations ask.
func (c *Controller) syncIngress(ctx context.Context, svc *corev1.Service, in *Intent, ing *networkingv1.Ingress, route *gatewayv1.HTTPRoute, r *report) (bool, error) {
	to, from := c.ingressEnd(ing), c.routeEnd(route)
	desired, err := in.Ingress()
	if reportInvalid(ctx, r, err, "the Ingress is left as it is until the annotations are fixed") {
		return false, keepWhileInvalid(ctx, c, svc, to, from, r)
	}
	if err != nil {
		return false, fmt.Errorf("computing the desired ingress of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return move(ctx, c, svc, desired, to, from, "Delete or rename it, or remove the "+AnnotationHTTP+" annotation", r)
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

// syncRoute moves the Service onto its HTTPRoute (see move), and its route
// between Gateways (see parentsDuringMove). It reports whether the route
// serves it as its annotations ask.
func (c *Controller) syncRoute(ctx context.Context, svc *corev1.Service, in *Intent, ing *networkingv1.Ingress, route *gatewayv1.HTTPRoute, r *report) (bool, error) {
	to, from := c.routeEnd(route), c.ingressEnd(ing)
	desired, err := in.HTTPRoute()
	if reportInvalid(ctx, r, err, "nothing is changed until the annotations are fixed") {
		return false, keepWhileInvalid(ctx, c, svc, to, from, r)
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
	if to.of(svc) {
		warnRouteStatus(route, desired.Spec.ParentRefs[0], r)
	}
	settle := c.parentsDuringMove(ctx, svc, route, desired)
	served, err := move(ctx, c, svc, desired, to, from, "Delete or rename it, or set "+AnnotationGateway+` to "" to keep an Ingress`, r)
	if err == nil && settle > 0 {
		err = &controller.RequeueAfter{Delay: settle}
	}
	return served, err
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
func (c *Controller) parentsDuringMove(ctx context.Context, svc *corev1.Service, live, desired *gatewayv1.HTTPRoute) time.Duration {
	if live == nil || !isControlledBy(live, svc) || isBeingDeleted(live) {
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
		c.settling.resetParents(svc)
		return 0
	}
	var settle time.Duration
	if len(live.Spec.ParentRefs) > 0 && parentKey(live.Spec.ParentRefs[0], live.Namespace) == want && untilServes(live, c.gateway.lookup) == "" {
		if settle = c.settling.remainingParents(svc, live.UID); settle == 0 {
			klog.FromContext(ctx).Info("The route's Gateway serves it; dropping the Gateways it moved away from",
				"gateway", gatewayName(desired.Spec.ParentRefs[0], desired.Namespace), "dropped", len(old))
			return 0
		}
	} else {
		c.settling.resetParents(svc)
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

// parentStatuses returns the entries of route's status for parent (one per
// Gateway controller that reports on it).
func parentStatuses(route *gatewayv1.HTTPRoute, parent gatewayv1.ParentReference) []gatewayv1.RouteParentStatus {
	var out []gatewayv1.RouteParentStatus
	want := parentKey(parent, route.Namespace)
	for _, st := range route.Status.Parents {
		if parentKey(st.ParentRef, route.Namespace) == want {
			out = append(out, st)
		}
	}
	return out
}

// parentKey spells out a parentRef with its defaults, for comparison.
func parentKey(p gatewayv1.ParentReference, routeNamespace string) string {
	group, kind, section, port := gatewayv1.GroupName, "Gateway", "", ""
	if p.Group != nil {
		group = string(*p.Group)
	}
	if p.Kind != nil {
		kind = string(*p.Kind)
	}
	if p.SectionName != nil {
		section = string(*p.SectionName)
	}
	if p.Port != nil {
		port = fmt.Sprint(*p.Port)
	}
	return strings.Join([]string{group, kind, gatewayName(p, routeNamespace), section, port}, "/")
}

// gatewayName is the <namespace>/<name> of the Gateway p refers to from a
// route in routeNamespace.
func gatewayName(p gatewayv1.ParentReference, routeNamespace string) string {
	ns := routeNamespace
	if p.Namespace != nil && *p.Namespace != "" {
		ns = string(*p.Namespace)
	}
	return ns + "/" + string(p.Name)
}

// conditionID identifies a condition of a route, for once-per-change Events.
func conditionID(route *gatewayv1.HTTPRoute, cond metav1.Condition) string {
	return fmt.Sprintf("%s/%d/%s/%s/%s", route.UID, cond.ObservedGeneration, cond.Status, cond.Reason, cond.Message)
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

// settleKey is one move of one Service: between kinds, or (parents) of its
// route between Gateways.
type settleKey struct {
	svc     cache.ObjectName
	parents bool
}

type readySince struct {
	uid types.UID
	at  time.Time
}

// remaining returns how much longer the old object of svc is kept, now that
// the new object uid is ready.
func (s *settling) remaining(svc *corev1.Service, uid types.UID) time.Duration {
	return s.wait(settleKey{svc: cache.MetaObjectToName(svc)}, uid)
}

// remainingParents returns how much longer the Gateways the route uid of
// svc moves away from stay its parents, now that the one it is for serves
// it.
func (s *settling) remainingParents(svc *corev1.Service, uid types.UID) time.Duration {
	return s.wait(settleKey{svc: cache.MetaObjectToName(svc), parents: true}, uid)
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

// reset forgets svc's ready time: the new object is not ready (any more).
func (s *settling) reset(svc *corev1.Service) { s.drop(settleKey{svc: cache.MetaObjectToName(svc)}) }

// resetParents forgets when the parent svc's route is for first served it.
func (s *settling) resetParents(svc *corev1.Service) {
	s.drop(settleKey{svc: cache.MetaObjectToName(svc), parents: true})
}

func (s *settling) drop(key settleKey) {
	s.mu.Lock()
	delete(s.since, key)
	s.mu.Unlock()
}

// forget drops everything of the Service key (it is gone).
func (s *settling) forget(key cache.ObjectName) {
	s.drop(settleKey{svc: key})
	s.drop(settleKey{svc: key, parents: true})
}
