package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

// Namespaces of the HTTPRoute phase: the direct client's creates, and the
// Services the manager gives routes.
const (
	routeLimitNamespace = "bench-route-limit"
	routeNamespace      = "bench-routes"
)

// httpRoutePhase measures HTTPRoute cold convergence: the rate of N
// HTTPRoute creates by a direct client (custom resources travel as JSON,
// so this rate is the API server's own for them, and lower than L for
// Ingresses), then a manager started on N Services that ask for a Gateway,
// timed until an independent watch saw N HTTPRoutes it controls.
func (r *run) httpRoutePhase(ctx context.Context) error {
	n := r.cfg.N
	ctx, cancel := context.WithTimeout(ctx, 4*r.cfg.phaseTimeout())
	defer cancel()
	// Custom resources have no protobuf encoding.
	jsonCfg := rest.CopyConfig(r.admin)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	client, err := gatewayclient.NewForConfig(jsonCfg)
	if err != nil {
		return err
	}
	for _, ns := range []string{routeLimitNamespace, routeNamespace} {
		if err := createNamespace(ctx, r.client, ns); err != nil {
			return err
		}
	}
	b, err := ingressmanager.NewBuilder(ingressmanager.Config{FieldManager: "bench", Gateway: routeNamespace + "/gw"})
	if err != nil {
		return err
	}
	res := &RouteResult{}

	// The direct client, at the concurrency of L.
	conc := 64
	if len(r.res.Limit.Creates) > 0 {
		conc = slices.MaxFunc(r.res.Limit.Creates, func(a, b Rate) int { return cmpF(a.PerSecond, b.PerSecond) }).Concurrency
	}
	routes := client.GatewayV1().HTTPRoutes(routeLimitNamespace)
	res.Creates, err = r.measure(ctx, n, conc, func(ctx context.Context, i int) error {
		svc := benchService(routeLimitNamespace, fmt.Sprintf("lim-%06d", i), true)
		svc.UID = types.UID(uuid.NewUUID()) // a made-up owner, as for the Ingresses of L
		route, err := b.Parse(svc).HTTPRoute()
		if err != nil {
			return err
		}
		_, err = routes.Create(ctx, route, metav1.CreateOptions{FieldManager: "bench"})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating httproutes: %w", err)
	}
	r.res.HTTPRoute = res
	r.cfg.logf("HTTPRoute creates by a direct client: %.0f/s (concurrency %d, control plane CPU %.2f ms/create)", res.Creates.PerSecond, conc, res.Creates.CPUms)
	if err := routes.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the direct client's httproutes: %w", err)
	}

	// Cold: N annotated Services exist before the manager starts; its
	// --ingress-gateway gives each an HTTPRoute.
	svcs := r.client.CoreV1().Services(routeNamespace)
	if _, err := parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		_, err := svcs.Create(ctx, benchService(routeNamespace, fmt.Sprintf("svc-%06d", i), true), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating services: %w", err)
	}
	w, err := newRouteWatcher(ctx, client)
	if err != nil {
		return err
	}
	defer w.stop()
	before, err := r.counts(ctx)
	if err != nil {
		return err
	}
	return r.withManager(ctx, "httproute-cold", func(mgr *managerProcess) error {
		synced, err := mgr.waitReady(ctx)
		if err != nil {
			return err
		}
		done, err := w.waitFor(ctx, n)
		if err != nil {
			return err
		}
		after, err := r.settle(ctx, mgr)
		if err != nil {
			return err
		}
		d := after.diff(before)
		res.Cold = RoutePhase{
			Seconds:          done.Sub(mgr.Started).Seconds(),
			CacheSyncSeconds: synced.Sub(mgr.Started).Seconds(),
			Writes:           d.byVerb("httproutes"),
			IngressWrites:    d.writes("ingresses"),
			EventWrites:      d.writes("events"),
			CPUms:            1000 * d.controlPlaneCPU() / float64(n),
		}
		var total int64
		for _, v := range res.Cold.Writes {
			total += v
		}
		res.Cold.WritesPerObject = float64(total) / float64(n)
		res.Cold.Ratio = res.Cold.Seconds / (float64(n) / res.Creates.PerSecond)
		r.cfg.logf("httproute cold: %.2fs (%.2f x N/L_route), %.2f HTTPRoute writes/object %v, %d Ingress writes; control plane CPU %.2f ms/object",
			res.Cold.Seconds, res.Cold.Ratio, res.Cold.WritesPerObject, res.Cold.Writes, res.Cold.IngressWrites, res.Cold.CPUms)
		return nil
	}, "--namespace="+routeNamespace, "--ingress-gateway="+routeNamespace+"/gw")
}

// routeWatcher counts the HTTPRoutes of routeNamespace that a Service
// controls, from a watch of its own.
type routeWatcher struct {
	factory gatewayinformers.SharedInformerFactory
	cancel  context.CancelFunc
	mu      sync.Mutex
	owned   map[string]bool
	changed chan struct{}
}

func newRouteWatcher(ctx context.Context, client gatewayclient.Interface) (*routeWatcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &routeWatcher{cancel: cancel, owned: map[string]bool{}, changed: make(chan struct{}, 1)}
	w.factory = gatewayinformers.NewSharedInformerFactoryWithOptions(client, 0, gatewayinformers.WithNamespace(routeNamespace))
	inf := w.factory.Gateway().V1().HTTPRoutes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.see,
		UpdateFunc: func(_, obj any) { w.see(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	w.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("the HTTPRoute watch did not sync")
	}
	return w, nil
}

func (w *routeWatcher) see(obj any) {
	route, ok := obj.(*gatewayv1.HTTPRoute)
	if !ok || metav1.GetControllerOfNoCopy(route) == nil {
		return
	}
	w.mu.Lock()
	w.owned[route.Name] = true
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// waitFor returns when the watch saw n controlled HTTPRoutes.
func (w *routeWatcher) waitFor(ctx context.Context, n int) (time.Time, error) {
	for {
		w.mu.Lock()
		got := len(w.owned)
		w.mu.Unlock()
		if got >= n {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for %d HTTPRoutes (saw %d): %w", n, got, context.Cause(ctx))
		case <-w.changed:
		}
	}
}

func (w *routeWatcher) stop() {
	w.cancel()
	w.factory.Shutdown()
}
