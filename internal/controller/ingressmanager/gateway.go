package ingressmanager

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// DefaultGatewayAPICheckInterval is how often the controller asks discovery
// whether the Gateway API is served: while it is not, to start watching
// HTTPRoutes once it is, and while it is, to stop once their CRD is removed.
const DefaultGatewayAPICheckInterval = 30 * time.Second

// DefaultMoveSettle is Config.MoveSettle's default: well above what data
// planes take to serve an object their control plane has accepted.
const DefaultMoveSettle = 5 * time.Second

// gatewayAPI watches HTTPRoutes while the cluster serves them. A cluster may
// install the Gateway API CRDs after the manager started, or remove them:
// while discovery does not list gateway.networking.k8s.io/v1 httproutes,
// there is no informer (a watch of an unserved resource would only fail and
// retry), and Services that ask for a Gateway keep or get an Ingress.
type gatewayAPI struct {
	discovery discovery.DiscoveryInterface
	client    gatewayv1client.GatewayV1Interface
	namespace string
	resync    time.Duration
	transform cache.TransformFunc
	interval  time.Duration
	handler   cache.ResourceEventHandler

	// known is set (and knownCh closed) once the first answer is in: not
	// served, or served and the informer synced. Until then the sync holds
	// back every Service that asks for a Gateway, so a restart never
	// mistakes "not looked yet" for "not installed"; the other Services go
	// on (readiness waits for it).
	known     atomic.Bool
	knownCh   chan struct{}
	knownOnce sync.Once
	routes    atomic.Pointer[cache.Indexer]
	// gateways is the Gateway informer's cache, published with routes
	// (before it) when the cluster serves Gateways too; nil otherwise. A
	// route serves only on a Gateway that is programmed with an address
	// (see untilServes).
	gateways atomic.Pointer[cache.Indexer]
	// classes is the GatewayClass informer's cache, published with
	// gateways (before it) once synced; nil when Gateways are not watched
	// or GatewayClasses cannot be listed. What a class supports
	// (status.supportedFeatures) decides what its routes carry (classOf).
	classes atomic.Pointer[cache.Indexer]
	// classFeatures holds, by class name, the set of the features the
	// class's cached version lists (a supportedByVersion), so that a sync
	// does not build it again.
	classFeatures sync.Map
	// enqueueRoute brings back the Service of a route whose Gateway's
	// verdict (untilServes) changed.
	enqueueRoute func(route any)
	// enqueueGatewayServices brings back every Service that asks for a
	// Gateway: what a GatewayClass supports changed.
	enqueueGatewayServices func()
	// gatewayChanged, when set, is told of every Gateway added, deleted,
	// or changed in its spec or verdict: the user's Ingresses that move to
	// it check its listeners (migrate.go).
	gatewayChanged func(key cache.ObjectName)
	// askNow (buffered, one) asks discovery again at once, before the
	// interval is up: a sync was answered that HTTPRoutes are not served
	// (see routesNotServed). Nil: only at the interval.
	askNow chan struct{}
}

// askAgain has discovery asked again at once whether HTTPRoutes are
// served; it never blocks.
func (g *gatewayAPI) askAgain() {
	select {
	case g.askNow <- struct{}{}:
	default:
	}
}

// routesNotServed reports whether err, the answer to a create, read or
// write of an HTTPRoute, says that the API server does not serve
// HTTPRoutes (their CRD removed; discovery says so only at its next
// check), not that one route is absent: a RESTMapper's no kind match, or a
// 404 that names no object or that is the API server's "could not find the
// requested resource" (a Status without details while the group is still
// served, or no Status at all once it is not). A create is never answered
// NotFound for the route itself.
func routesNotServed(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	st := status.Status()
	return st.Details == nil || st.Details.Name == "" || strings.HasPrefix(st.Message, "the server could not find the requested resource")
}

// markKnown sets known (and closes knownCh, once).
func (g *gatewayAPI) markKnown() {
	g.known.Store(true)
	g.knownOnce.Do(func() { close(g.knownCh) })
}

// Name and Done make the first answer a cache.DoneChecker.
func (g *gatewayAPI) Name() string          { return "whether the Gateway API is served" }
func (g *gatewayAPI) Done() <-chan struct{} { return g.knownCh }

// routeCache returns the HTTPRoute informer's cache, or nil while the API is
// not served; answered is false until the first answer is in (then the
// cache, nil or not, says nothing yet). The cache is stored before known is
// set, so an answered true always comes with the cache of a served API.
func (g *gatewayAPI) routeCache() (routes cache.Indexer, answered bool) {
	answered = g.known.Load()
	if i := g.routes.Load(); i != nil {
		return *i, answered
	}
	return nil, answered
}

// HTTPRoutesServed reports whether the API server serves HTTPRoutes in
// gateway.networking.k8s.io/v1, as discovery lists them.
func HTTPRoutesServed(disc discovery.DiscoveryInterface) (bool, error) {
	routes, _, err := gatewayAPIServed(disc)
	return routes, err
}

// gatewayAPIServed reports whether the API server serves HTTPRoutes, and
// Gateways, in gateway.networking.k8s.io/v1, as discovery lists them.
func gatewayAPIServed(disc discovery.DiscoveryInterface) (routes, gateways bool, err error) {
	list, err := disc.ServerResourcesForGroupVersion(gatewayv1.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	for _, r := range list.APIResources {
		routes = routes || r.Name == "httproutes"
		gateways = gateways || r.Name == "gateways"
	}
	return routes, gateways, nil
}

// run watches HTTPRoutes while discovery lists them, asking it every
// interval whether they are served. It calls answered once the first answer
// is in (not served, or served and synced) and again each time the answer
// changes (served and synced later, or no longer served): the Services that
// ask for a Gateway, and the owners of the HTTPRoutes, are synced again then.
// It returns when ctx ends.
func (g *gatewayAPI) run(ctx context.Context, answered func()) {
	logger := klog.FromContext(ctx)
	for {
		ok, gateways, err := gatewayAPIServed(g.discovery)
		switch {
		case err != nil:
			logger.Info("Cannot tell whether the Gateway API is served; asking again", "err", err)
		case ok:
			// Gateways served now and not before (or the other way round):
			// the watch starts again at once, with them.
			for again := true; again && ctx.Err() == nil; {
				again, gateways = g.watch(ctx, gateways, answered)
			}
		case !g.known.Load():
			logger.Info("The Gateway API is not served (no gateway.networking.k8s.io/v1 httproutes): Services that ask for a Gateway keep an Ingress until it is", "checkInterval", g.interval)
			g.markKnown()
			answered()
		}
		delay := g.interval
		if err != nil && !g.known.Load() {
			delay = min(delay, time.Second) // Services on a Gateway wait for the first answer
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		case <-g.askNow:
		}
	}
}

// Whether the Gateway API is served is asked of discovery, which every
// authenticated user may read; the HTTPRoute and Gateway informers need
// list and watch.
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes;gateways,verbs=list;watch

// What a Gateway's class supports (status.supportedFeatures) decides which
// annotations of a Service its route carries; without list and watch on
// gatewayclasses they are rendered on trust.
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses,verbs=list;watch

// byGateway indexes routes by the Gateway they are for (the first of their
// parentRefs, see untilServes), as <namespace>/<name>.
const byGateway = "gateway"

func indexByGateway(obj any) ([]string, error) {
	route, ok := obj.(*gatewayv1.HTTPRoute)
	if !ok || len(route.Spec.ParentRefs) == 0 || !isGatewayRef(route.Spec.ParentRefs[0]) {
		return nil, nil
	}
	return []string{gatewayName(route.Spec.ParentRefs[0], route.Namespace)}, nil
}

// watch runs an HTTPRoute informer, and a Gateway informer when gateways
// are served too, and publishes their caches once synced, until ctx ends
// or discovery answers that HTTPRoutes are no longer served (their CRD
// removed). The caches are then dropped, as if the API had never been
// served: the informers would only fail, and the Services on a Gateway get
// an Ingress meanwhile. An error asking discovery is no answer. When
// HTTPRoutes are still served but Gateways now are and were not (or the
// other way round), it returns again true, with whether Gateways are
// served: the caches are kept, a moment behind, until the next watch
// publishes its own, since dropping them would tell every Service on a
// Gateway that HTTPRoutes are not served.
func (g *gatewayAPI) watch(ctx context.Context, gateways bool, answered func()) (again, gatewaysNow bool) {
	logger := klog.FromContext(ctx)
	// On the gateway.networking.k8s.io/v1 client alone: the generated
	// factory's interfaces name every version of the Gateway API, whose
	// types the linker would then keep.
	informer := controller.NewSharedInformer[*gatewayv1.HTTPRouteList](g.client.HTTPRoutes(g.namespace), &gatewayv1.HTTPRoute{}, g.resync, g.transform, g.client)
	if err := informer.AddIndexers(cache.Indexers{byGateway: indexByGateway}); err != nil {
		logger.Error(err, "Cannot index HTTPRoutes by Gateway; Services that ask for a Gateway keep an Ingress")
		g.markKnown()
		return false, gateways
	}
	reg, err := informer.AddEventHandlerWithOptions(g.handler, cache.HandlerOptions{Logger: &logger})
	if err != nil {
		logger.Error(err, "Cannot watch HTTPRoutes; Services that ask for a Gateway keep an Ingress")
		g.markKnown()
		return false, gateways
	}
	routesSynced := reg.HasSyncedChecker()
	var gwInformer cache.SharedIndexInformer
	var gwSynced cache.DoneChecker
	var classes *classWatch
	// forbidden is closed once listing Gateways is forbidden (RBAC without
	// list and watch on gateways): the controller cannot see them, and
	// takes routes on their word until it can.
	forbidden := make(chan struct{})
	if gateways {
		gwInformer = controller.NewSharedInformer[*gatewayv1.GatewayList](g.client.Gateways(g.namespace), &gatewayv1.Gateway{}, g.resync, g.transform, g.client)
		var once sync.Once
		if err := gwInformer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			if apierrors.IsForbidden(err) {
				once.Do(func() { close(forbidden) })
			}
			cache.DefaultWatchErrorHandler(ctx, r, err)
		}); err != nil {
			logger.Error(err, "Cannot watch Gateways; Services that ask for a Gateway keep an Ingress")
			g.markKnown()
			return false, gateways
		}
		gwReg, err := gwInformer.AddEventHandlerWithOptions(g.gatewayHandler(informer.GetIndexer()), cache.HandlerOptions{Logger: &logger})
		if err != nil {
			logger.Error(err, "Cannot watch Gateways; Services that ask for a Gateway keep an Ingress")
			g.markKnown()
			return false, gateways
		}
		gwSynced = gwReg.HasSyncedChecker()
		if classes, err = g.watchClasses(); err != nil {
			logger.Error(err, "Cannot watch GatewayClasses; what their routes carry is rendered on trust")
		}
	} else {
		logger.Info("The cluster serves HTTPRoutes but not Gateways (gateway.networking.k8s.io/v1 gateways): a route serves once its Gateway accepts it, whether the Gateway is programmed or not")
	}
	served, stop := context.WithCancel(ctx)
	defer stop()
	var running sync.WaitGroup
	running.Go(func() { informer.RunWithContext(served) })
	if gwInformer != nil {
		running.Go(func() { gwInformer.RunWithContext(served) })
	}
	if classes != nil {
		running.Go(func() { classes.informer.RunWithContext(served) })
	}
	running.Go(func() {
		if !cache.WaitFor(served, "", routesSynced) {
			return
		}
		seen := false
		if gwInformer != nil {
			select {
			case <-served.Done():
				return
			case <-gwSynced.Done():
				seen = true
			case <-forbidden:
				logger.Error(nil, "Cannot list Gateways (RBAC: list and watch on gateways.gateway.networking.k8s.io): a route is taken on its word, whether its Gateway is programmed or not, until they can be listed")
			}
		}
		classesSeen := seen && classes != nil && classes.wait(served)
		if served.Err() != nil {
			return
		}
		g.publishClasses(classes, classesSeen)
		if seen {
			gws := gwInformer.GetIndexer()
			g.gateways.Store(&gws)
		} else {
			g.gateways.Store(nil) // a watch before this one's, when Gateways were served
		}
		indexer := informer.GetIndexer()
		g.routes.Store(&indexer)
		g.markKnown()
		logger.Info("Watching HTTPRoutes: the Gateway API is served", "gateways", seen)
		answered()
		if gwInformer != nil && !seen && cache.WaitFor(served, "", gwSynced) {
			g.publishClasses(classes, classes != nil && classes.wait(served))
			gws := gwInformer.GetIndexer()
			g.gateways.Store(&gws)
			logger.Info("Watching Gateways: they can be listed now")
			answered()
		} else if classes != nil && seen && !classesSeen && cache.WaitFor(served, "", classes.synced) {
			g.publishClasses(classes, true)
			logger.Info("Watching GatewayClasses: they can be listed now")
			if g.enqueueGatewayServices != nil {
				g.enqueueGatewayServices()
			}
		}
	})
	tick := time.NewTicker(g.interval)
	defer tick.Stop()
	for gone := false; !gone; {
		select {
		case <-served.Done():
			gone = true
			continue
		case <-tick.C:
		case <-g.askNow:
		}
		ok, gws, err := gatewayAPIServed(g.discovery)
		if err != nil {
			logger.V(2).Info("Cannot tell whether the Gateway API is still served; asking again", "err", err)
		}
		// Gateways served now and not before (or the other way round):
		// the watch starts again with them.
		gone = err == nil && (!ok || gws != gateways)
		again, gatewaysNow = ok, gws
	}
	stop()
	running.Wait()
	if ctx.Err() != nil {
		return false, gateways // shutting down: syncs still draining keep the last cache
	}
	if again {
		return true, gatewaysNow
	}
	g.gateways.Store(nil)
	g.classes.Store(nil)
	if g.routes.Swap(nil) != nil {
		logger.Info("The Gateway API is no longer served (no gateway.networking.k8s.io/v1 httproutes): stopped watching HTTPRoutes; Services that ask for a Gateway get an Ingress until it is served again", "checkInterval", g.interval)
		answered()
	}
	return false, gateways
}

// gatewayHandler brings back the Services whose routes are for a Gateway
// whose verdict (untilGatewayServes) changed: added, deleted, programmed,
// given an address or losing it; and every Service on a Gateway when a
// Gateway is added after the first list or changes class. Other changes
// of a Gateway (and resyncs) change nothing of a route's; a change of its
// spec (its listeners, its class) is told to gatewayChanged.
func (g *gatewayAPI) gatewayHandler(routes cache.Indexer) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		key, err := controller.ObjectKey(obj) // a tombstone's too
		if err != nil {
			return
		}
		for _, route := range routeList(routes, key.String()) {
			g.enqueueRoute(route)
		}
		if g.gatewayChanged != nil {
			g.gatewayChanged(key)
		}
	}
	// A Gateway's class decides what the routes of the Services on it
	// carry, and which of those Services stay on their Ingress: those
	// have no route to be found by.
	classChanged := func() {
		if g.enqueueGatewayServices != nil {
			g.enqueueGatewayServices()
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			enqueue(obj)
			if !isInInitialList {
				classChanged()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*gatewayv1.Gateway)
			n, ok2 := newObj.(*gatewayv1.Gateway)
			if ok1 && ok2 && o.Spec.GatewayClassName != n.Spec.GatewayClassName {
				classChanged()
			}
			switch {
			case !ok1 || !ok2 || untilGatewayServes(o) != untilGatewayServes(n):
				enqueue(newObj)
			case o.Generation != n.Generation && g.gatewayChanged != nil:
				if key, err := controller.ObjectKey(n); err == nil {
					g.gatewayChanged(key)
				}
			}
		},
		DeleteFunc: enqueue,
	}
}

// classWatch is the GatewayClass informer of a watch.
type classWatch struct {
	informer cache.SharedIndexInformer
	synced   cache.DoneChecker
	// forbidden is closed once listing GatewayClasses is forbidden.
	forbidden chan struct{}
}

// watchClasses makes the GatewayClass informer of a watch. Its handler
// brings back every Service on a Gateway when what a class supports
// changes.
func (g *gatewayAPI) watchClasses() (*classWatch, error) {
	w := &classWatch{forbidden: make(chan struct{})}
	// GatewayClasses are cluster-scoped: one informer whatever --namespace.
	w.informer = controller.NewSharedInformer[*gatewayv1.GatewayClassList](g.client.GatewayClasses(), &gatewayv1.GatewayClass{}, g.resync, g.transform, g.client)
	var once sync.Once
	if err := w.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			once.Do(func() { close(w.forbidden) })
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		return nil, err
	}
	enqueue := func(any) {
		if g.enqueueGatewayServices != nil {
			g.enqueueGatewayServices()
		}
	}
	reg, err := w.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		// The classes listed first are those of the cache published with
		// the Gateway API's answer, which brings every Service back.
		AddFunc: func(obj any, isInInitialList bool) {
			if !isInInitialList {
				enqueue(obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*gatewayv1.GatewayClass)
			n, ok2 := newObj.(*gatewayv1.GatewayClass)
			if ok1 && ok2 && equality.Semantic.DeepEqual(o.Status.SupportedFeatures, n.Status.SupportedFeatures) {
				return
			}
			enqueue(newObj)
		},
		DeleteFunc: enqueue,
	})
	if err != nil {
		return nil, err
	}
	w.synced = reg.HasSyncedChecker()
	return w, nil
}

// wait reports whether the GatewayClasses are listed, waiting until they
// are, listing them is forbidden, or ctx ends.
func (w *classWatch) wait(ctx context.Context) bool {
	select {
	case <-w.synced.Done():
		return true
	case <-w.forbidden:
		klog.FromContext(ctx).Error(nil, "Cannot list GatewayClasses (RBAC: list and watch on gatewayclasses.gateway.networking.k8s.io): what routes carry is rendered on trust, without knowing what their Gateway's class supports")
	case <-ctx.Done():
	}
	return false
}

// publishClasses publishes the cache of classes when seen (synced), or
// none.
func (g *gatewayAPI) publishClasses(classes *classWatch, seen bool) {
	if !seen {
		g.classes.Store(nil)
		return
	}
	idx := classes.informer.GetIndexer()
	g.classes.Store(&idx)
}

// classOf returns the class of the Gateway ref and the features it
// supports (status.supportedFeatures); class "" when the Gateway is not
// known, and features nil when what it supports is not known (not
// watched, or none listed).
func (g *gatewayAPI) classOf(ref GatewayRef) (string, sets.Set[features.FeatureName]) {
	gw, _ := g.lookup(ref.Namespace, ref.Name)
	if gw == nil {
		return "", nil
	}
	class := string(gw.Spec.GatewayClassName)
	var classes cache.Indexer
	if i := g.classes.Load(); i != nil {
		classes = *i
	}
	if classes == nil {
		return class, nil
	}
	obj, exists, err := classes.GetByKey(class)
	gc, ok := obj.(*gatewayv1.GatewayClass)
	if err != nil || !exists || !ok || len(gc.Status.SupportedFeatures) == 0 {
		return class, nil
	}
	if v, ok := g.classFeatures.Load(class); ok && v.(supportedByVersion).version == gc.ResourceVersion {
		return class, v.(supportedByVersion).features
	}
	supported := sets.New[features.FeatureName]()
	for _, f := range gc.Status.SupportedFeatures {
		supported.Insert(features.FeatureName(f.Name))
	}
	g.classFeatures.Store(class, supportedByVersion{gc.ResourceVersion, supported})
	return class, supported
}

// supportedByVersion is what one version of a GatewayClass supports; the
// set is never changed once stored.
type supportedByVersion struct {
	version  string
	features sets.Set[features.FeatureName]
}

// routeList returns the routes indexed under Gateway key.
func routeList(routes cache.Indexer, key string) []any {
	list, err := routes.ByIndex(byGateway, key)
	if err != nil {
		return nil
	}
	return list
}

// gatewayCache returns the Gateway informer's cache, nil when Gateways are
// not watched.
func (g *gatewayAPI) gatewayCache() cache.Indexer {
	if i := g.gateways.Load(); i != nil {
		return *i
	}
	return nil
}

// lookup finds the Gateway namespace/name in the cache. visible is false
// when the controller does not watch it: Gateways are not served, or not
// in the one namespace the manager watches (--namespace).
func (g *gatewayAPI) lookup(namespace, name string) (gw *gatewayv1.Gateway, visible bool) {
	gws := g.gatewayCache()
	if gws == nil || g.namespace != "" && namespace != g.namespace {
		return nil, false
	}
	obj, exists, err := gws.GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return nil, true
	}
	gw, _ = obj.(*gatewayv1.Gateway)
	return gw, true
}
