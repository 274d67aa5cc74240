package ingressmanager

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// Name is the controller's name in --controllers.
const Name = "ingress-manager"

// Controller keeps an Ingress, or an HTTPRoute, for every Service annotated
// ingress/http.
type Controller struct {
	controller.Base
	// services and ingresses are the informers' caches.
	services  cache.Indexer
	ingresses cache.Indexer
	// serviceClient reads a Service absent from the cache before what it
	// owned is deleted.
	serviceClient corev1client.ServicesGetter
	builder       *Builder
	ingress       *writer[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration]
	route         *writer[*gatewayv1.HTTPRoute, gatewayv1ac.HTTPRouteApplyConfiguration]
	gateway       *gatewayAPI
	notes         notes
	settling      settling
	cutover       cutover
	// migrations are the users' Ingresses that move to a route (migrate.go).
	migrations migrations
	workers    int
}

// The shared Service and Ingress informers, in every namespace.
// +kubebuilder:rbac:groups="",resources=services,verbs=list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=list;watch

// New builds the controller on the shared Service and Ingress informers;
// the HTTPRoute informer starts in Run, once the cluster serves the
// Gateway API.
func New(ctx context.Context, cctx *controller.Context, cfg Config) (*Controller, error) {
	cfg.FieldManager = cctx.FieldManager
	builder, err := NewBuilder(cfg)
	if err != nil {
		return nil, err
	}
	svcInformer := cctx.Informers.Services()
	ingInformer := cctx.Informers.Ingresses()
	recorder := cctx.EventRecorder(Name)
	c := &Controller{
		services:      svcInformer.Informer().GetIndexer(),
		ingresses:     ingInformer.Informer().GetIndexer(),
		serviceClient: cctx.Core,
		builder:       builder,
		ingress:       ingressWriter(cctx.Networking, builder.fieldManager),
		route:         routeWriter(cctx.Gateway, builder.fieldManager),
		notes:         notes{recorder: recorder, sent: map[cache.ObjectName]sets.Set[string]{}},
		settling:      settling{settle: cfg.MoveSettle, now: time.Now, since: map[settleKey]readySince{}},
		cutover:       cutover{drain: cfg.DNSDrain, now: time.Now},
	}
	c.Base = controller.NewBase(ctx, cctx, Name, c.sync)
	c.migrations = migrations{
		loop: controller.Loop[cache.ObjectName]{Name: MigrationsName, Queue: controller.NewQueue[cache.ObjectName](MigrationsName),
			Sync: c.syncMigration, DrainTimeout: cctx.DrainTimeout, StopNow: cctx.StopNow},
		notes:        notes{recorder: recorder, sent: map[cache.ObjectName]sets.Set[string]{}},
		redirectCode: cfg.HTTPRedirectCode,
	}
	// A held event of a name that a create's answer does not explain may be
	// of a user's Ingress that asks to move: its key is queued too (a
	// cheap sync when it is not).
	requeue := func(key types.NamespacedName) {
		c.EnqueueKey(cache.ObjectName(key))
		c.migrations.loop.Queue.Add(cache.ObjectName(key))
		if base, ok := strings.CutSuffix(key.Name, redirectRouteSuffix); ok && base != "" {
			c.migrations.loop.Queue.Add(cache.ObjectName{Namespace: key.Namespace, Name: base}) // a redirect route's Ingress
		}
	}
	c.ingress.requeue, c.route.requeue = requeue, requeue
	owned := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addOwned,
		UpdateFunc: c.UnlessResync(c.enqueueOwned), // the Service's own resync re-checks it
		DeleteFunc: c.enqueueOwned,
	}
	interval := cfg.GatewayAPICheckInterval
	if interval <= 0 {
		interval = DefaultGatewayAPICheckInterval
	}
	c.gateway = &gatewayAPI{
		discovery:              cctx.Discovery,
		client:                 cctx.Gateway,
		namespace:              cctx.Namespace,
		resync:                 cctx.ResyncPeriod,
		transform:              cctx.Transform,
		interval:               interval,
		handler:                owned,
		enqueueRoute:           c.enqueueOwned,
		enqueueGatewayServices: c.classesChanged,
		gatewayChanged:         c.gatewayChanged,
		knownCh:                make(chan struct{}),
		askNow:                 make(chan struct{}, 1),
	}
	if err := c.AddEventHandler(svcInformer.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.Enqueue(obj); c.serviceChanged(obj) },
		UpdateFunc: c.updateService,
		DeleteFunc: func(obj any) { c.Enqueue(obj); c.serviceChanged(obj) },
	}); err != nil {
		return nil, err
	}
	if err := ingInformer.Informer().AddIndexers(cache.Indexers{byBackendService: indexByBackendService, byMigrationTarget: indexByMigrationTarget, byNGINXHost: indexByNGINXHost}); err != nil {
		return nil, fmt.Errorf("%s: indexing Ingresses: %w", Name, err)
	}
	if err := c.AddEventHandler(ingInformer.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addOwned,
		UpdateFunc: c.updateIngress,
		DeleteFunc: c.enqueueOwned,
	}); err != nil {
		return nil, err
	}
	// Until it is known whether HTTPRoutes are served (and if so, until
	// their cache is in) the sync holds back the Services that ask for a
	// Gateway: a restart must not take "not looked yet" for "not installed"
	// and make Ingresses for them. The others need not wait: the HTTPRoutes
	// they may still own are seen once the answer brings their owners back
	// (gatewayAnswered). Readiness waits for the answer.
	c.ReadyAfter(c.gateway)
	// The migrations' loop logs under its own name alone, not under the
	// Services' loop's too.
	logger := klog.FromContext(ctx)
	c.Background = func(ctx context.Context) {
		var wg sync.WaitGroup
		wg.Go(func() { c.reportMoves(ctx) })
		wg.Go(func() { c.reportMigrations(ctx) })
		c.migrations.loop.Run(klog.NewContext(ctx, logger), c.workers)
		wg.Wait()
	}
	return c, nil
}

// MigrationsName names the queue (and the reconcile metrics) of the users'
// Ingresses that move to an HTTPRoute.
const MigrationsName = Name + "-migrations"

// Run implements controller.Interface: the Services' workers, and as many
// for the users' Ingresses that move, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.workers = workers
	c.Base.Run(ctx, workers)
}

// Warm implements controller.Warmer: the watch of HTTPRoutes (and the
// discovery checks telling whether they are served) runs until ctx ends.
// The Services that ask for a Gateway wait for its first answer.
func (c *Controller) Warm(ctx context.Context) {
	c.gateway.run(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", Name)), c.gatewayAnswered)
}

// updateService queues a Service when something the sync reads changed:
// its UID, whether it is being deleted, its ingress/* annotations or its
// ports. A resync (same
// ResourceVersion) of an annotated Service is queued too, as a cheap
// periodic re-check that writes nothing when converged.
func (c *Controller) updateService(oldObj, newObj any) {
	oldSvc, ok1 := oldObj.(*corev1.Service)
	newSvc, ok2 := newObj.(*corev1.Service)
	if !ok1 || !ok2 {
		c.Enqueue(newObj)
		return
	}
	if controller.IsResync(oldSvc, newSvc) {
		if Enabled(newSvc) {
			c.Enqueue(newObj)
		}
		return
	}
	if oldSvc.UID != newSvc.UID || oldSvc.DeletionTimestamp.IsZero() != newSvc.DeletionTimestamp.IsZero() ||
		!serviceInputsEqual(oldSvc, newSvc) {
		c.Enqueue(newObj)
	}
	if oldSvc.UID != newSvc.UID || !equality.Semantic.DeepEqual(oldSvc.Spec.Ports, newSvc.Spec.Ports) {
		c.serviceChanged(newObj)
	}
}

// addOwned queues the Service of a new Ingress or HTTPRoute, unless the
// object is this process's own create from the Service as it is, and the
// Service has nothing of the other kind to move from or to: the sync it
// would bring has nothing to do (the create made what the Service asks
// for, and nothing waits for it to be ready). A cold start creates one
// object per Service: this halves its syncs.
func (c *Controller) addOwned(obj any) {
	if !c.ownAdd(obj) {
		c.enqueueOwned(obj)
	}
}

// ownAdd reports whether the Add of obj is the event of this process's own
// create (see writer.ownAdd), with no object of the other kind cached for
// its Service.
func (c *Controller) ownAdd(obj any) bool {
	var key types.NamespacedName
	var v objectVersion
	var other cache.Indexer
	var own func(types.NamespacedName, objectVersion, *corev1.Service) bool
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		key, v, own = types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, objectVersion{string(o.UID), o.ResourceVersion}, c.ingress.ownAdd
		other, _ = c.gateway.routeCache()
	case *gatewayv1.HTTPRoute:
		key, v, own = types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, objectVersion{string(o.UID), o.ResourceVersion}, c.route.ownAdd
		other = c.ingresses
		if base, ok := strings.CutSuffix(o.Name, redirectRouteSuffix); ok && base != "" {
			// A redirect route (or a route of such a name): the Ingress
			// it redirects for moves on once it is made, and its sync
			// says what the move waits for.
			if _, exists, err := c.ingresses.GetByKey(o.Namespace + "/" + base); err != nil || exists {
				return false
			}
		}
	default:
		return false
	}
	name := cache.ObjectName(key)
	if other != nil {
		if _, exists, err := other.GetByKey(name.String()); err != nil || exists {
			return false
		}
	}
	svc, err := cached[*corev1.Service](c.services, name)
	if err != nil {
		return false
	}
	return own(key, v, svc)
}

// enqueueOwned queues the Service an Ingress or HTTPRoute belongs to: the
// Service of the same name (ours, or one a foreign object is in the way
// of), and the controlling Service if it has another name.
func (c *Controller) enqueueOwned(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	var o metav1.Object
	switch obj := obj.(type) {
	case *networkingv1.Ingress:
		o = obj
	case *gatewayv1.HTTPRoute:
		o = obj
	}
	key, err := controller.ObjectKey(o)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("ingress-manager: unexpected object %T in the Ingress or HTTPRoute informer: %w", obj, err))
		return
	}
	c.EnqueueKey(key)
	c.enqueueMigration(o)
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil && isServiceRef(ref) && ref.Name != key.Name {
		// An owner reference's name is not validated by the API server.
		owner := cache.ObjectName{Namespace: key.Namespace, Name: ref.Name}
		if err := controller.CheckKey(owner); err != nil {
			utilruntime.HandleError(fmt.Errorf("ingress-manager: %T %s has a controller reference to an impossible Service: %w", obj, key, err))
			return
		}
		c.EnqueueKey(owner)
	}
}

// classesChanged queues every Service that asks for a Gateway and every
// user's Ingress that asks to move (or did): what a Gateway's class
// supports (its status.supportedFeatures, a Gateway's class) changed, or
// is known now, and decides what their routes carry.
func (c *Controller) classesChanged() {
	c.enqueueGatewayServices()
	c.migrationsAnswered()
}

// enqueueGatewayServices queues every Service that asks for a Gateway.
func (c *Controller) enqueueGatewayServices() {
	for _, obj := range c.services.List() {
		if svc, ok := obj.(*corev1.Service); ok && c.builder.target(svc) == TargetHTTPRoute {
			c.EnqueueKey(cache.MetaObjectToName(svc))
		}
	}
}

// gatewayAnswered queues every Service that asks for a Gateway, and the
// Services of the cached HTTPRoutes: whether the Gateway API is served is
// known (first answer), or it became served. The first were held back
// until now, or may now move to an HTTPRoute; the others were synced,
// meanwhile, without the HTTPRoutes they may own (one left from a Service
// back on an Ingress, or from a Service gone): the informer's own events for
// them may have been handled before its cache was published.
func (c *Controller) gatewayAnswered() {
	c.migrationsAnswered()
	c.enqueueGatewayServices()
	if routes, _ := c.gateway.routeCache(); routes != nil {
		for _, obj := range routes.List() {
			c.enqueueOwned(obj)
		}
	}
}
