package ingressmanager

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// The tests of this file play the Gateway implementation where they need
// one: they write a route's status.parents as a Gateway controller would.
// (test/integration/traffic runs the real one, Traefik.)
const testGatewayController = "example.com/test-gateway-controller"

func (e *env) gateway() gatewayclient.Interface {
	return gatewayclient.NewForConfigOrDie(framework.Config(framework.AdminConfig()))
}

// waitRoute waits until the HTTPRoute name exists and check accepts it.
func (e *env) waitRoute(name, what string, check func(*gatewayv1.HTTPRoute) error) *gatewayv1.HTTPRoute {
	e.T.Helper()
	return framework.WaitObject(e.T, what, framework.Get(e.gateway().GatewayV1().HTTPRoutes(e.NS).Get, name), check)
}

func (e *env) waitNoRoute(name, what string) {
	e.T.Helper()
	framework.WaitGone(e.T, what, framework.Get(e.gateway().GatewayV1().HTTPRoutes(e.NS).Get, name))
}

// setRouteStatus writes the route's status for Gateway gw (in the test
// namespace) as a Gateway controller would: Accepted and ResolvedRefs; and
// makes Gateway gw one that serves (programmeGateway).
func (e *env) setRouteStatus(name, gw string, accepted metav1.ConditionStatus, reason, message string) {
	e.T.Helper()
	e.programGateway(gw)
	framework.Eventually(e.T, framework.Timeout, "writing the status of HTTPRoute "+name, func(ctx context.Context) (bool, error) {
		route, err := e.gateway().GatewayV1().HTTPRoutes(e.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now, observed := metav1.Now(), route.Generation
		route.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef:      gatewayv1.ParentReference{Name: gatewayv1.ObjectName(gw)},
			ControllerName: testGatewayController,
			Conditions: []metav1.Condition{
				{Type: "Accepted", Status: accepted, Reason: reason, Message: message, ObservedGeneration: observed, LastTransitionTime: now},
				{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", ObservedGeneration: observed, LastTransitionTime: now},
			},
		}}
		_, err = e.gateway().GatewayV1().HTTPRoutes(e.NS).UpdateStatus(ctx, route, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// programGateway makes Gateway name of the test namespace exist, Programmed
// for its generation and with an address, as a Gateway controller does once
// its data plane serves it.
func (e *env) programGateway(name string) {
	e.T.Helper()
	gws := e.gateway().GatewayV1().Gateways(e.NS)
	framework.Eventually(e.T, framework.Timeout, "programming Gateway "+name, func(ctx context.Context) (bool, error) {
		gw, err := gws.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			gw, err = gws.Create(ctx, &gatewayv1.Gateway{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: gatewayv1.GatewaySpec{GatewayClassName: "test",
					Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}},
			}, metav1.CreateOptions{})
		}
		if err != nil {
			return false, err
		}
		if len(gw.Status.Addresses) > 0 && meta.IsStatusConditionTrue(gw.Status.Conditions, "Programmed") {
			return true, nil
		}
		gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.10"}}
		meta.SetStatusCondition(&gw.Status.Conditions, metav1.Condition{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", ObservedGeneration: gw.Generation})
		_, err = gws.UpdateStatus(ctx, gw, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// setIngressAddress writes an address into the Ingress's status, as an
// Ingress controller does once it serves it.
func (e *env) setIngressAddress(name string) {
	e.T.Helper()
	framework.Eventually(e.T, framework.Timeout, "writing the status of Ingress "+name, func(ctx context.Context) (bool, error) {
		ing, err := e.Client.NetworkingV1().Ingresses(e.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "198.51.100.10"}}
		_, err = e.Client.NetworkingV1().Ingresses(e.NS).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
		return err == nil, err
	})
}

func (e *env) ingressExists(name string) bool {
	e.T.Helper()
	return exists(e, framework.Get(e.Client.NetworkingV1().Ingresses(e.NS).Get, name))
}

func (e *env) routeExists(name string) bool {
	e.T.Helper()
	return exists(e, framework.Get(e.gateway().GatewayV1().HTTPRoutes(e.NS).Get, name))
}

// exists reports whether get finds its object.
func exists[T any](e *env, get func(context.Context) (T, error)) bool {
	e.T.Helper()
	_, err := get(e.Ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		e.T.Fatal(err)
	}
	return err == nil
}

// TestGatewayAPIInstalledLater runs first in this package (file and
// declaration order), and removes the HTTPRoute CRD in any case: a cluster
// without the Gateway API.
func TestGatewayAPIInstalledLater(t *testing.T) {
	if err := framework.RemoveHTTPRoutes(context.Background(), framework.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(o *app.Options) {
		o.GatewayAPICheckInterval = 200 * time.Millisecond
		o.IngressMoveSettle = 0
		o.IngressMoveDNSDrain = 0
	})
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx", "ingress/gateway": "gw"}))
	e.WaitIngress("web", "an Ingress while the Gateway API is not served", nil)
	e.WaitEvent("web", corev1.EventTypeWarning, "GatewayAPINotInstalled", "keeps an Ingress until the Gateway API CRDs are installed")

	if err := framework.InstallGatewayAPI(framework.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	e.waitRoute("web", "the HTTPRoute, once the Gateway API is served, without a restart", nil)
	if !e.ingressExists("web") {
		t.Fatal("the Ingress went before the Gateway accepted the route")
	}
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitNoIngress("web", "the Ingress deleted once the route is accepted")
}

// onGatewayThenRemovable starts a manager that asks discovery every
// interval, moves Service web from its Ingress to a route served on Gateway
// gw (no settle, no drain), and installs the Gateway API CRDs again when the
// test ends: the later tests of the package need them, whatever the test
// removed.
func onGatewayThenRemovable(t *testing.T, interval time.Duration) *env {
	t.Helper()
	e := setup(t, func(o *app.Options) {
		o.GatewayAPICheckInterval = interval
		o.IngressMoveSettle = 0
		o.IngressMoveDNSDrain = 0
	})
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx"}))
	e.WaitIngress("web", "the Ingress", nil)
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	e.waitRoute("web", "the route", nil)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitNoIngress("web", "the Ingress deleted once the route is accepted")
	t.Cleanup(func() {
		if err := framework.InstallGatewayAPI(framework.AdminConfig()); err != nil {
			t.Errorf("installing the Gateway API CRDs again: %v", err)
		}
	})
	return e
}

// TestGatewayAPIRemovedWhileRunning: the HTTPRoute CRD removed while the
// manager runs is noticed as its arrival is: a Service on a Gateway, whose
// Ingress an earlier move deleted, gets an Ingress again without a restart,
// and its route again once the CRD is back.
func TestGatewayAPIRemovedWhileRunning(t *testing.T) {
	e := onGatewayThenRemovable(t, 200*time.Millisecond)
	// While the CRD terminates, the API server refuses to create routes
	// with 403 Forbidden: no RBAC is missing.
	e.M.ExpectForbidden()
	if err := framework.RemoveHTTPRoutes(context.Background(), framework.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	e.WaitIngress("web", "an Ingress again once the Gateway API is no longer served, without a restart", nil)
	e.WaitEvent("web", corev1.EventTypeWarning, "GatewayAPINotInstalled", "keeps an Ingress until the Gateway API CRDs are installed")

	if err := framework.InstallGatewayAPI(framework.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	e.waitRoute("web", "the route again once the Gateway API is served again", nil)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitNoIngress("web", "the Ingress deleted once the new route is accepted")
	for _, req := range e.M.Forbidden() {
		if !strings.HasPrefix(req, "POST ") || !strings.HasSuffix(req, "/namespaces/"+e.NS+"/httproutes") {
			t.Errorf("the API server refused a request of the manager but the creates of routes while the CRD terminates: %s", req)
		}
	}
}

// TestGatewayAPIRemovedFoundByAWrite: once the HTTPRoute CRD is gone, the
// API server's answer to a route's create ("the server could not find the
// requested resource") sends the Service to an Ingress at once, without
// waiting for discovery's next check (an hour here).
func TestGatewayAPIRemovedFoundByAWrite(t *testing.T) {
	e := onGatewayThenRemovable(t, time.Hour)
	e.M.ExpectForbidden() // the creates of routes while the CRD terminates
	if err := framework.RemoveHTTPRoutes(context.Background(), framework.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	e.WaitIngress("web", "an Ingress once a route's create is answered that HTTPRoutes are not served", nil)
	e.WaitEvent("web", corev1.EventTypeWarning, "GatewayAPINotInstalled", "keeps an Ingress until the Gateway API CRDs are installed")
}

// testFinalizer is held by a test on an Ingress or an HTTPRoute, as an
// ingress controller or a Gateway implementation holds one while it tears
// down what served the object: deleted, the object stays, its status (an
// address, Accepted=True) as it was.
const testFinalizer = "example.com/load-balancer"

// holdFinalizer sets (hold) or clears the test's finalizer with the merge
// patch of a typed client (its Patch method).
func holdFinalizer[T any](t testing.TB, patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error), name string, hold bool) {
	t.Helper()
	data := []byte(`{"metadata":{"finalizers":null}}`)
	if hold {
		data = []byte(`{"metadata":{"finalizers":["` + testFinalizer + `"]}}`)
	}
	if _, err := patch(context.Background(), name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatalf("setting the finalizers of %s: %v", name, err)
	}
}

// waitKept waits for a Normal Event reason on Service svc whose message
// contains msg, and fails the test if get answers NotFound first: the
// object a move must keep was deleted.
func waitKept[T any](e *env, what, svc string, get func(context.Context) (T, error), reason, msg string) {
	e.T.Helper()
	deleted := false
	framework.Eventually(e.T, framework.Timeout, what, func(ctx context.Context) (bool, error) {
		if _, err := get(ctx); apierrors.IsNotFound(err) {
			deleted = true
			return true, nil
		} else if err != nil {
			return false, err
		}
		ev, err := framework.FindEvent(ctx, e.Client, e.NS, "Service", svc, corev1.EventTypeNormal, reason, msg)
		return ev != nil, err
	})
	if deleted {
		e.T.Fatalf("%s: it was deleted, and nothing serves the Service once the finalizer goes", what)
	}
}

// checkBeingDeleted is an error until o is being deleted.
func checkBeingDeleted[T metav1.Object](o T) error {
	if o.GetDeletionTimestamp() == nil {
		return fmt.Errorf("not being deleted")
	}
	return nil
}

// checkReplaced is an error while the object is old itself.
func checkReplaced[T metav1.Object](old T) func(T) error {
	return func(o T) error {
		if o.GetUID() == old.GetUID() {
			return fmt.Errorf("still the old object")
		}
		return nil
	}
}

// TestMoveBackKeepsTheRouteWhileTheIngressIsBeingDeleted: a Service moved
// to a route backs out while its old Ingress is still being deleted (a
// finalizer holds it, its old address in status): the route stays until a
// new Ingress has an address, and the old Ingress is deleted once.
func TestMoveBackKeepsTheRouteWhileTheIngressIsBeingDeleted(t *testing.T) {
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = 0, 0 })
	ingresses := e.Client.NetworkingV1().Ingresses(e.NS)
	routes := e.gateway().GatewayV1().HTTPRoutes(e.NS)
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx"}))
	e.WaitIngress("web", "the Ingress", nil)
	holdFinalizer(t, ingresses.Patch, "web", true)
	e.setIngressAddress("web")

	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	e.waitRoute("web", "the route", nil)
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	old := e.WaitIngress("web", "the Ingress being deleted once the route is accepted", checkBeingDeleted[*networkingv1.Ingress])

	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("")})
	waitKept(e, "the route kept while the only Ingress is being deleted", "web", framework.Get(routes.Get, "web"),
		"WaitingForIngress", "Ingress web, which is being deleted, is gone")

	holdFinalizer(t, ingresses.Patch, "web", false)
	e.WaitIngress("web", "a new Ingress once the old one is gone", checkReplaced(old))
	if !e.routeExists("web") {
		t.Fatal("the route went before the new Ingress has an address")
	}
	e.setIngressAddress("web")
	e.waitNoRoute("web", "the route deleted once the new Ingress has an address")
	if n := e.M.CountLogs("Deleted Ingress"); n != 1 {
		t.Errorf("the Ingress was deleted %d times, want once: an object being deleted is not deleted again", n)
	}
}

func TestRouteForAnnotatedService(t *testing.T) {
	e := setup(t)
	svc := e.CreateService(framework.SeedService(e.NS, "my-nginx", map[string]string{"ingress/http": "nginx", "ingress/gateway": "infra/gw", "ingress/gateway-listener": "http"}))
	route := e.waitRoute("my-nginx", "the seed Service's HTTPRoute", nil)

	if err := framework.ControlledBy(route, svc.UID); err != nil {
		t.Error(err)
	}
	spec := route.Spec
	if len(spec.ParentRefs) != 1 || spec.ParentRefs[0].Name != "gw" || ptr.Deref(spec.ParentRefs[0].Namespace, "") != "infra" ||
		ptr.Deref(spec.ParentRefs[0].SectionName, "") != "http" || ptr.Deref(spec.ParentRefs[0].Kind, "") != "Gateway" {
		t.Errorf("parentRefs = %+v, want Gateway infra/gw, section http", spec.ParentRefs)
	}
	if len(spec.Hostnames) != 1 || spec.Hostnames[0] != "example.com" {
		t.Errorf("hostnames = %v, want [example.com]", spec.Hostnames)
	}
	if len(spec.Rules) != 1 || len(spec.Rules[0].Matches) != 1 || len(spec.Rules[0].BackendRefs) != 1 {
		t.Fatalf("rules = %+v, want one match and one backend", spec.Rules)
	}
	m, b := spec.Rules[0].Matches[0].Path, spec.Rules[0].BackendRefs[0]
	if m == nil || ptr.Deref(m.Type, "") != gatewayv1.PathMatchPathPrefix || ptr.Deref(m.Value, "") != "/" ||
		b.Name != "my-nginx" || ptr.Deref(b.Port, 0) != 80 {
		t.Errorf("rule = %+v -> %+v, want PathPrefix / -> my-nginx:80", m, b)
	}
	e.WaitEvent("my-nginx", corev1.EventTypeNormal, "HTTPRouteCreated", "my-nginx")
	e.WaitSynced("my-nginx", 1)
	if n := e.Writes.Writes("httproutes"); n != 1 {
		t.Errorf("httproute writes = %d, want exactly 1 (%s)", n, e.Writes)
	}
	if n := e.Writes.Writes("ingresses"); n != 0 || e.ingressExists("my-nginx") {
		t.Errorf("an Ingress was written (%d writes) for a Service that asks for a Gateway", n)
	}

	// Drift is repaired, and a field of someone else is kept.
	framework.Eventually(t, framework.Timeout, "changing the route", func(ctx context.Context) (bool, error) {
		r, err := e.gateway().GatewayV1().HTTPRoutes(e.NS).Get(ctx, "my-nginx", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		r.Spec.Hostnames = []gatewayv1.Hostname{"drift.example.com"}
		r.Labels = map[string]string{"team": "web"}
		_, err = e.gateway().GatewayV1().HTTPRoutes(e.NS).Update(ctx, r, metav1.UpdateOptions{FieldManager: "someone"})
		return err == nil, err
	})
	e.waitRoute("my-nginx", "drift repaired", func(r *gatewayv1.HTTPRoute) error {
		if len(r.Spec.Hostnames) != 1 || r.Spec.Hostnames[0] != "example.com" {
			return fmt.Errorf("hostnames %v", r.Spec.Hostnames)
		}
		if r.Labels["team"] != "web" {
			return fmt.Errorf("someone else's label went: %v", r.Labels)
		}
		return nil
	})

	// A restart finds it converged: no write.
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	e.Start()
	e.WaitSynced("my-nginx", 1)
	if got := e.Writes.Writes(""); got != 0 {
		t.Errorf("writes after a restart with converged state = %d, want 0 (%s)", got, e.Writes)
	}

	// Annotation gone: the route goes.
	e.Annotate("my-nginx", map[string]*string{"ingress/http": nil})
	e.waitNoRoute("my-nginx", "the route deleted with the annotation")
}

func TestMoveIngressToRouteAndBack(t *testing.T) {
	const settle = time.Second
	e := setup(t, func(o *app.Options) { o.IngressMoveSettle, o.IngressMoveDNSDrain = settle, 0 })
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx"}))
	e.WaitIngress("web", "the Ingress", nil)

	// To a route: made before the Ingress is broken.
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	e.waitRoute("web", "the route", nil)
	e.WaitEvent("web", corev1.EventTypeNormal, "WaitingForHTTPRoute", "until Gateway "+e.NS+"/gw accepts HTTPRoute web")
	if !e.ingressExists("web") {
		t.Fatal("the Ingress went before the Gateway accepted the route")
	}
	e.setRouteStatus("web", "gw", metav1.ConditionFalse, "NotAllowedByListeners", "no listener allows routes from this namespace")
	e.WaitEvent("web", corev1.EventTypeWarning, "HTTPRouteNotAccepted", "NotAllowedByListeners: no listener allows routes from this namespace")
	if !e.ingressExists("web") {
		t.Fatal("the Ingress went while the Gateway refuses the route")
	}
	start := time.Now()
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitNoIngress("web", "the Ingress deleted once the route is accepted")
	if took := time.Since(start); took < settle {
		t.Errorf("the Ingress went %v after the route was accepted, before the settle time %v", took, settle)
	}
	e.WaitEvent("web", corev1.EventTypeNormal, "IngressDeleted", "accepted HTTPRoute web")

	// And back: the route stays until the new Ingress has an address.
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("")})
	e.WaitIngress("web", "the Ingress again", nil)
	e.WaitEvent("web", corev1.EventTypeNormal, "WaitingForIngress", "until Ingress web has an address")
	e.waitRoute("web", "the route kept meanwhile", nil)
	start = time.Now()
	e.setIngressAddress("web")
	e.waitNoRoute("web", "the route deleted once the Ingress has an address")
	if took := time.Since(start); took < settle {
		t.Errorf("the route went %v after the Ingress got an address, before the settle time %v", took, settle)
	}
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors during the moves", n)
	}
}
