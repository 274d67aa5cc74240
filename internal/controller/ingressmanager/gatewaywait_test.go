package ingressmanager

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	discoveryfake "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
)

// TestOnlyGatewayServicesWaitForTheGatewayAPI: until it is known whether
// the Gateway API is served, a Service that asks for a Gateway is held back
// (a restart must not take "not looked yet" for "not installed"), while the
// others get their Ingress at once; the answer brings the held-back ones
// back, and readiness waits for it.
func TestOnlyGatewayServicesWaitForTheGatewayAPI(t *testing.T) {
	ctx := context.Background()
	c, client := newTestControllerClient(t)
	plain := service(nil, port("http", 80))
	plain.Name, plain.UID, plain.ResourceVersion = "plain", "uid-plain", "1"
	onGateway := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
	onGateway.Name, onGateway.UID, onGateway.ResourceVersion = "on-gateway", "uid-gw", "1"
	for _, svc := range []*corev1.Service{plain, onGateway} {
		if err := c.services.Add(svc); err != nil {
			t.Fatal(err)
		}
	}
	created := func() map[string]bool {
		out := map[string]bool{}
		for _, a := range client.Actions() {
			if a, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "ingresses" {
				out[a.GetObject().(metav1.Object).GetName()] = true
			}
		}
		return out
	}
	for _, svc := range []*corev1.Service{plain, onGateway} {
		if err := c.sync(ctx, cache.MetaObjectToName(svc)); err != nil {
			t.Fatalf("sync %s: %v", svc.Name, err)
		}
	}
	if got := created(); !got["plain"] || got["on-gateway"] {
		t.Fatalf("before the Gateway API's answer, Ingresses created: %v; want only plain's", got)
	}
	if c.HasSynced() {
		t.Error("HasSynced before the Gateway API's answer")
	}

	// The answer: not served.
	c.gateway.markKnown()
	c.gatewayAnswered()
	if q := queued(c); !q["default/on-gateway"] || q["default/plain"] {
		t.Fatalf("queued on the answer: %v; want the Service on a Gateway only", q)
	}
	if err := c.sync(ctx, cache.MetaObjectToName(onGateway)); err != nil {
		t.Fatal(err)
	}
	if got := created(); !got["on-gateway"] {
		t.Fatalf("after the answer \"not served\", Ingresses created: %v; want one for on-gateway too", got)
	}
}

// TestGatewayAnswerBringsRouteOwnersBack: the Services synced before the
// HTTPRoute cache was published (without the routes they may own) are
// synced again once it is: the owners of every cached route.
func TestGatewayAnswerBringsRouteOwnersBack(t *testing.T) {
	c, _ := newTestControllerClient(t)
	routes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	route := seedRoute(service(nil, port("http", 80)))
	route.Name = "left-over"
	if err := routes.Add(route); err != nil {
		t.Fatal(err)
	}
	c.gateway.routes.Store(&routes)
	c.gateway.markKnown()
	c.gatewayAnswered()
	owner := metav1.GetControllerOf(route)
	if owner == nil {
		t.Fatal("seedRoute made a route without a controller")
	}
	if q := queued(c); !q["default/left-over"] || !q["default/"+owner.Name] {
		t.Fatalf("queued on the answer: %v; want the route's key and its controlling Service %s", q, owner.Name)
	}
}

// TestGatewayAPIGoingAway: discovery is asked again while HTTPRoutes are
// watched. An error asking is no answer (the watch and its cache stay);
// once it no longer lists them the route cache is dropped and the Services
// are synced again (to an Ingress), and once it lists them again they are
// watched again: no restart either way.
func TestGatewayAPIGoingAway(t *testing.T) {
	const (
		served = iota
		failing
		notServed
	)
	var mode, asked, answers atomic.Int32
	disc := &discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: gatewayv1.GroupVersion.String(), APIResources: []metav1.APIResource{{Name: "httproutes"}},
	}}}}
	disc.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		asked.Add(1)
		switch mode.Load() {
		case failing:
			return true, nil, errors.New("connection refused")
		case notServed:
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: gatewayv1.GroupName}, "v1")
		}
		return false, nil, nil
	})
	g, waitFor := runGatewayAPI(t, disc, 10*time.Millisecond, &answers)
	watched := func() bool {
		routes, answered := g.routeCache()
		return answered && routes != nil
	}

	waitFor("HTTPRoutes watched", func() bool { return watched() && answers.Load() == 1 })
	mode.Store(failing)
	before := asked.Load()
	waitFor("discovery asked again, and failing", func() bool { return asked.Load() >= before+3 })
	if !watched() || answers.Load() != 1 {
		t.Fatalf("after discovery errors: watched %v, answers %d; want the watch kept, no new answer", watched(), answers.Load())
	}
	mode.Store(notServed)
	waitFor("the route cache dropped once HTTPRoutes are no longer served", func() bool {
		routes, answered := g.routeCache()
		return answered && routes == nil && answers.Load() == 2
	})
	mode.Store(served)
	waitFor("HTTPRoutes watched again once served again", func() bool { return watched() && answers.Load() == 3 })
}

// fakeGatewayV1 is the fake clientset's gateway.networking.k8s.io/v1 client
// that tells a reflector, as the clientset does, that it has no watch-list
// semantics.
type fakeGatewayV1 struct {
	gatewayv1client.GatewayV1Interface
	*gatewayfake.Clientset
}

// TestGatewayAPIAskedAgainAtOnce: a sync answered that HTTPRoutes are not
// served (askAgain) has discovery asked at once, not at the next interval
// (an hour here): the route cache is dropped and the Services are synced
// again, to their Ingress.
func TestGatewayAPIAskedAgainAtOnce(t *testing.T) {
	var notServed atomic.Bool
	var answers atomic.Int32
	disc := &discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: gatewayv1.GroupVersion.String(), APIResources: []metav1.APIResource{{Name: "httproutes"}},
	}}}}
	disc.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		if notServed.Load() {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: gatewayv1.GroupName}, "v1")
		}
		return false, nil, nil
	})
	g, waitFor := runGatewayAPI(t, disc, time.Hour, &answers)
	waitFor("HTTPRoutes watched", func() bool {
		routes, answered := g.routeCache()
		return answered && routes != nil && answers.Load() == 1
	})
	notServed.Store(true)
	g.askAgain()
	g.askAgain() // never blocks
	waitFor("the route cache dropped at once", func() bool {
		routes, answered := g.routeCache()
		return answered && routes == nil && answers.Load() == 2
	})
	notServed.Store(false)
	g.askAgain()
	waitFor("HTTPRoutes watched again at once", func() bool {
		routes, _ := g.routeCache()
		return routes != nil && answers.Load() == 3
	})
}

// listedDiscovery is a fake discovery whose gateway.networking.k8s.io/v1
// lists httproutes, and gateways while withGateways is set.
type listedDiscovery struct {
	*discoveryfake.FakeDiscovery
	withGateways *atomic.Bool
}

func (d listedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	list := &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "httproutes"}}}
	if d.withGateways.Load() {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: "gateways"})
	}
	return list, nil
}

// TestGatewaysServedLaterKeepTheRoutes: a cluster that serves HTTPRoutes
// and then Gateways too (the Gateway CRD installed after the HTTPRoute
// CRD, as where a mesh installed HTTPRoutes alone), or no longer serves
// Gateways, has its watch started again with them. HTTPRoutes were served
// all along: no Service may meanwhile take them for gone (a route cache
// dropped and answered is "the Gateway API is not served": every Service on
// a Gateway would get an Ingress, and its move back to the route later),
// and the watch must start again at once, not an interval later.
func TestGatewaysServedLaterKeepTheRoutes(t *testing.T) {
	var withGateways atomic.Bool
	var answers, unserved atomic.Int32
	disc := listedDiscovery{&discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{}}, &withGateways}
	client := gatewayfake.NewClientset()
	g := &gatewayAPI{discovery: disc, client: fakeGatewayV1{client.GatewayV1(), client}, interval: 200 * time.Millisecond,
		handler: cache.ResourceEventHandlerFuncs{}, enqueueRoute: func(any) {}, knownCh: make(chan struct{}), askNow: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.run(ctx, func() {
			answers.Add(1)
			if routes, _ := g.routeCache(); routes == nil {
				unserved.Add(1)
			}
		})
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFor := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, within, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: not within %v", what, within)
		}
	}
	routesGone := func() {
		for {
			select {
			case <-ctx.Done():
				return
			default:
			}
			if routes, answered := g.routeCache(); answered && routes == nil {
				unserved.Add(1)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	waitFor("HTTPRoutes watched, Gateways not", 10*time.Second, func() bool {
		routes, answered := g.routeCache()
		return answered && routes != nil && g.gatewayCache() == nil && answers.Load() == 1
	})
	go routesGone()
	withGateways.Store(true)
	// Discovery finds Gateways at its next check (an interval); the watch
	// starts again with them at once, well within a second interval.
	waitFor("Gateways watched once served", 10*time.Second, func() bool { return g.gatewayCache() != nil })
	if n := unserved.Load(); n != 0 {
		t.Errorf("Gateways served too: HTTPRoutes were taken for not served %d times meanwhile; want never", n)
	}
	withGateways.Store(false)
	waitFor("Gateways no longer watched once not served", 10*time.Second, func() bool {
		routes, _ := g.routeCache()
		return g.gatewayCache() == nil && routes != nil
	})
	if n := unserved.Load(); n != 0 {
		t.Errorf("Gateways no longer served: HTTPRoutes were taken for not served %d times meanwhile; want never", n)
	}
}

// TestGatewaysForbiddenAreTakenOnTheRoutesWord: a manager whose RBAC does
// not let it list Gateways (a ClusterRole of an earlier release, or one
// written by hand from the HTTPRoute rules) cannot see them, like one
// confined to another namespace: a route is taken on its word. The
// Services on a Gateway must not wait for the Gateway cache for ever (held
// back, the manager never ready), and a Gateway cache that comes once the
// RBAC is fixed is used from then on.
func TestGatewaysForbiddenAreTakenOnTheRoutesWord(t *testing.T) {
	var forbidden atomic.Bool
	forbidden.Store(true)
	var withGateways atomic.Bool
	withGateways.Store(true)
	var answers atomic.Int32
	disc := listedDiscovery{&discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{}}, &withGateways}
	// The Gateway API's fake clientset stores no Gateways: the API server
	// is these reactors, which list Gateway gw once it is allowed.
	client := gatewayfake.NewClientset()
	refuse := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if forbidden.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: gatewayv1.GroupName, Resource: "gateways"}, "",
				errors.New(`User "system:serviceaccount:system:controller-manager" cannot list resource "gateways"`))
		}
		return true, &gatewayv1.GatewayList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []gatewayv1.Gateway{*programmedGateway("gw")}}, nil
	}
	client.PrependReactor("list", "gateways", refuse)
	client.PrependWatchReactor("gateways", func(a k8stesting.Action) (bool, watch.Interface, error) {
		if forbidden.Load() {
			_, _, err := refuse(a)
			return true, nil, err
		}
		return true, watch.NewFake(), nil
	})
	g := &gatewayAPI{discovery: disc, client: fakeGatewayV1{client.GatewayV1(), client}, interval: 100 * time.Millisecond,
		handler: cache.ResourceEventHandlerFuncs{}, enqueueRoute: func(any) {}, knownCh: make(chan struct{}), askNow: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.run(ctx, func() { answers.Add(1) })
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFor := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, within, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: not within %v", what, within)
		}
	}
	waitFor("HTTPRoutes watched while Gateways cannot be listed", 10*time.Second, func() bool {
		routes, answered := g.routeCache()
		return answered && routes != nil
	})
	if gw, visible := g.lookup("default", "gw"); visible {
		t.Errorf("a Gateway that cannot be listed is visible (%v); want it taken on the route's word", gw)
	}
	forbidden.Store(false)
	waitFor("Gateways watched once they can be listed", 30*time.Second, func() bool {
		gw, visible := g.lookup("default", "gw")
		return visible && gw != nil
	})
	if answers.Load() < 2 {
		t.Errorf("%d answers; want the Services brought back once the Gateways are seen", answers.Load())
	}
}

// runGatewayAPI runs a gatewayAPI on disc, asking every interval (and at
// once when asked again), counting its answers, until the test ends; it
// returns it and a wait for a condition on it.
func runGatewayAPI(t *testing.T, disc discovery.DiscoveryInterface, interval time.Duration, answers *atomic.Int32) (*gatewayAPI, func(string, func() bool)) {
	client := gatewayfake.NewClientset()
	g := &gatewayAPI{discovery: disc, client: fakeGatewayV1{client.GatewayV1(), client}, interval: interval,
		handler: cache.ResourceEventHandlerFuncs{}, knownCh: make(chan struct{}), askNow: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.run(ctx, func() { answers.Add(1) })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return g, func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

// TestGatewayClassesWatched: the GatewayClasses are watched with the
// Gateways: what a Gateway's class lists in status.supportedFeatures is
// read from the cache, and a change of it, or of a Gateway's class, brings
// back every Service on a Gateway (those a class keeps on their Ingress
// have no route to be found by). Classes that cannot be listed leave what
// they support unknown, and hold nothing back.
func TestGatewayClassesWatched(t *testing.T) {
	for _, forbidden := range []bool{false, true} {
		var withGateways atomic.Bool
		withGateways.Store(true)
		var brought atomic.Int32
		disc := listedDiscovery{&discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{}}, &withGateways}
		gw := programmedGateway("gw", func(gw *gatewayv1.Gateway) { gw.Spec.GatewayClassName = "example"; gw.ResourceVersion = "1" })
		class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "example", ResourceVersion: "1"}}
		// The fake clientset lists no Gateways to an informer: the API
		// server is these reactors, and the watches the test's.
		client := gatewayfake.NewClientset()
		var gwWatch, classWatch atomic.Pointer[watch.FakeWatcher]
		client.PrependReactor("list", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, &gatewayv1.GatewayList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []gatewayv1.Gateway{*gw.DeepCopy()}}, nil
		})
		client.PrependWatchReactor("gateways", func(k8stesting.Action) (bool, watch.Interface, error) {
			w := watch.NewFakeWithChanSize(10, false)
			gwWatch.Store(w)
			return true, w, nil
		})
		client.PrependReactor("list", "gatewayclasses", func(k8stesting.Action) (bool, runtime.Object, error) {
			if forbidden {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: gatewayv1.GroupName, Resource: "gatewayclasses"}, "", errors.New("forbidden"))
			}
			return true, &gatewayv1.GatewayClassList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []gatewayv1.GatewayClass{*class.DeepCopy()}}, nil
		})
		client.PrependWatchReactor("gatewayclasses", func(k8stesting.Action) (bool, watch.Interface, error) {
			w := watch.NewFakeWithChanSize(10, false)
			classWatch.Store(w)
			return true, w, nil
		})
		g := &gatewayAPI{discovery: disc, client: fakeGatewayV1{client.GatewayV1(), client}, interval: time.Hour,
			handler: cache.ResourceEventHandlerFuncs{}, enqueueRoute: func(any) {}, enqueueGatewayServices: func() { brought.Add(1) },
			knownCh: make(chan struct{}), askNow: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.run(ctx, func() {})
		}()
		waitFor := func(what string, cond func() bool) {
			t.Helper()
			if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
				t.Fatalf("forbidden %v: %s: not within 10s", forbidden, what)
			}
		}
		ref := GatewayRef{Namespace: "default", Name: "gw"}
		waitFor("the caches published", func() bool { routes, answered := g.routeCache(); return answered && routes != nil })
		if name, s := g.classOf(ref); name != "example" || s != nil {
			t.Errorf("forbidden %v: class %q supporting %v, want example, not known", forbidden, name, s)
		}
		if n := brought.Load(); n != 0 {
			t.Errorf("forbidden %v: the first list brought the Services back %d times; the answer does", forbidden, n)
		}
		if !forbidden {
			waitFor("the class watched", func() bool { return classWatch.Load() != nil })
			class = class.DeepCopy()
			class.ResourceVersion = "2"
			class.Status.SupportedFeatures = []gatewayv1.SupportedFeature{{Name: "HTTPRouteCORS"}}
			classWatch.Load().Modify(class)
			waitFor("the class's features read", func() bool { _, s := g.classOf(ref); return s.Has("HTTPRouteCORS") })
			waitFor("the Services brought back", func() bool { return brought.Load() == 1 })
		}
		waitFor("the Gateway watched", func() bool { return gwWatch.Load() != nil })
		before := brought.Load()
		gw = gw.DeepCopy()
		gw.ResourceVersion, gw.Spec.GatewayClassName = "2", "other"
		gwWatch.Load().Modify(gw)
		waitFor("the Services brought back by the Gateway's new class", func() bool {
			name, _ := g.classOf(ref)
			return name == "other" && brought.Load() == before+1
		})
		cancel()
		<-done
	}
}
