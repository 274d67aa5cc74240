package ingressmanager

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// The tests of this file try to break the HTTPS redirect of a migrated
// Ingress on the real API server: restarts at each step, edits by another
// writer, a finalizer, and ssl-redirect turned off once moved.

// moveWithRedirect moves Ingress web (with TLS, on Gateway gw) to its
// routes, playing the Gateway controller, and returns it as created.
func (e *env) moveWithRedirect() *networkingv1.Ingress {
	e.T.Helper()
	e.createRedirectGateway("gw")
	orig := e.createIngress(redirectIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	e.waitRedirectRoute(orig, "the redirect route")
	e.acceptOnEachParent("web-https-redirect")
	e.waitRoute("web", "the route, on the HTTPS listener", func(r *gatewayv1.HTTPRoute) error { return onListeners(r, "gw", "https") })
	e.acceptOnEachParent("web")
	e.WaitIngress("web", "the Ingress withdrawn", withdrawnOrNot(orig, true))
	e.waitIngressEvent("web", corev1.EventTypeNormal, "MovedToHTTPRoute")
	return orig
}

// internalError answers req with a 500, as an API server that cannot take it.
func internalError(req *http.Request) *http.Response {
	body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"refused by the test","reason":"InternalError","code":500}`
	return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}
}

// TestMigrateRedirectRestarts: the manager stopped at each step of a move
// with the redirect (the redirect route made, not the route; the route
// made, the Ingress not withdrawn; moving back, the route gone and the
// redirect route not yet) converges once started again: nothing replaced,
// no redirect route left behind, and the Ingress in DNS whenever the
// routes do not serve.
func TestMigrateRedirectRestarts(t *testing.T) {
	opts := migrateOpts(time.Second)
	e := setup(t, opts)
	e.createRedirectGateway("gw")
	orig := e.createIngress(redirectIngress(e.NS, "web", map[string]string{"ingress/gateway": "gw"}))
	redirect := e.waitRedirectRoute(orig, "the redirect route")
	stop := func() {
		t.Helper()
		if err := e.M.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	stop()
	e.acceptOnEachParent("web-https-redirect")
	e.Start()
	e.waitRoute("web", "the route, on the HTTPS listener, made after a restart", func(r *gatewayv1.HTTPRoute) error { return onListeners(r, "gw", "https") })
	e.WaitIngress("web", "the Ingress in DNS while the route does not serve", withdrawnOrNot(orig, false))

	stop()
	e.acceptOnEachParent("web")
	e.Start()
	e.WaitIngress("web", "the Ingress withdrawn after a restart", withdrawnOrNot(orig, true))
	e.waitIngressEvent("web", corev1.EventTypeNormal, "MovedToHTTPRoute")
	if got := e.waitRoute("web-https-redirect", "the redirect route", nil); got.UID != redirect.UID {
		t.Error("the redirect route was replaced")
	}

	// Moving back with a manager whose deletes of the redirect route fail:
	// it stops with the route gone and the redirect route still there.
	stop()
	var refused atomic.Int32
	cfg := framework.Intercept(framework.AdminConfig(), func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if req.Method == http.MethodDelete && strings.HasSuffix(req.URL.Path, "/httproutes/web-https-redirect") {
			refused.Add(1)
			return internalError(req), nil
		}
		return next.RoundTrip(req)
	})
	o := framework.ControllerOptions(e.NS, e.Controllers...)
	opts(o)
	failing := framework.StartManager(t, cfg, o)
	e.annotateIngress("web", map[string]*string{"ingress/gateway": nil})
	wantNow := orig.DeepCopy()
	delete(wantNow.Annotations, "ingress/gateway")
	e.WaitIngress("web", "the Ingress back in DNS", withdrawnOrNot(wantNow, false))
	e.waitNoRoute("web", "the route withdrawn, drained and deleted")
	framework.Eventually(t, framework.Timeout, "the manager deleting the redirect route", func(context.Context) (bool, error) { return refused.Load() > 0, nil })
	if err := failing.Stop(); err != nil {
		t.Fatal(err)
	}
	if !e.routeExists("web-https-redirect") {
		t.Fatal("the redirect route is gone: the restart is not tested")
	}

	e.Start()
	e.waitNoRoute("web-https-redirect", "the redirect route deleted after a restart")
	e.WaitIngress("web", "the Ingress in DNS, as its user wrote it", withdrawnOrNot(wantNow, false))
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors after the restart", n)
	}
}

// TestMigrateRedirectEditedAndTurnedOff: once moved, another writer's
// annotation on the redirect route costs no write, and its change of the
// redirect is taken back once (the Ingress in DNS until the Gateway
// accepts the route again), not fought over. ssl-redirect "false" then
// moves the route onto the whole Gateway; the redirect route, held by a
// finalizer, is deleted once that route serves there, and only once;
// after that, an edit of the Ingress writes nothing.
func TestMigrateRedirectEditedAndTurnedOff(t *testing.T) {
	e := setup(t, migrateOpts(time.Second))
	orig := e.moveWithRedirect()
	routes := e.gateway().GatewayV1().HTTPRoutes(e.NS)
	writes := func() int { return e.Writes.Writes("ingresses") + e.Writes.Writes("httproutes") }

	before := writes()
	syncs := e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	e.editRoute("web-https-redirect", func(r *gatewayv1.HTTPRoute) { r.Annotations["example.com/owner"] = "payments" })
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	if n := writes() - before; n != 0 {
		t.Errorf("%d writes for another writer's annotation on the redirect route (%s)", n, e.Writes)
	}

	before = writes()
	e.editRoute("web-https-redirect", func(r *gatewayv1.HTTPRoute) {
		r.Spec.Rules[0].Filters[0].RequestRedirect.StatusCode = ptr.To(302)
	})
	e.waitRoute("web-https-redirect", "the redirect's status taken back, the other writer's annotation kept", func(r *gatewayv1.HTTPRoute) error {
		if code := ptr.Deref(r.Spec.Rules[0].Filters[0].RequestRedirect.StatusCode, 0); code != 308 || r.Annotations["example.com/owner"] != "payments" {
			return fmt.Errorf("status %d, annotations %v", code, r.Annotations)
		}
		return nil
	})
	e.WaitIngress("web", "the Ingress in DNS while the redirect route's generation is not accepted", withdrawnOrNot(orig, false))
	e.acceptOnEachParent("web-https-redirect")
	e.WaitIngress("web", "the Ingress withdrawn again", withdrawnOrNot(orig, true))
	// the take-back, the return, the withdrawal, and the test's own status write
	if n := writes() - before; n > 5 {
		t.Errorf("%d writes for one edit of the redirect route, want a handful (%s)", n, e.Writes)
	}

	holdFinalizer(t, routes.Patch, "web-https-redirect", true)
	e.annotateIngress("web", map[string]*string{"nginx.ingress.kubernetes.io/ssl-redirect": ptr.To("false")})
	e.waitRoute("web", "the route on the whole Gateway", func(r *gatewayv1.HTTPRoute) error {
		if len(r.Spec.ParentRefs) != 1 || r.Spec.ParentRefs[0].Name != "gw" || r.Spec.ParentRefs[0].SectionName != nil {
			return fmt.Errorf("parents %+v", r.Spec.ParentRefs)
		}
		return nil
	})
	if got, err := routes.Get(e.Ctx, "web-https-redirect", metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("the redirect route is going (%v) before the route serves on the whole Gateway", err)
	}
	e.acceptOnEachParent("web")
	e.waitRoute("web-https-redirect", "the redirect route deleted once the route serves on the whole Gateway", checkBeingDeleted[*gatewayv1.HTTPRoute])
	wantNow := orig.DeepCopy()
	wantNow.Annotations["nginx.ingress.kubernetes.io/ssl-redirect"] = "false"
	e.WaitIngress("web", "the Ingress withdrawn", withdrawnOrNot(wantNow, true))
	syncs = e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	e.annotateIngress("web", map[string]*string{"example.com/note": ptr.To("after")})
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	if n := e.Writes.Count(http.MethodDelete, "httproutes"); n != 1 {
		t.Errorf("%d deletes of routes, want one of the redirect route (being deleted, it is not deleted again)", n)
	}
	holdFinalizer(t, routes.Patch, "web-https-redirect", false)
	e.waitNoRoute("web-https-redirect", "the redirect route gone with its finalizer")

	before = writes()
	syncs = e.M.Syncs(ingressmanager.MigrationsName, e.NS, "web")
	e.annotateIngress("web", map[string]*string{"example.com/note": ptr.To("again")})
	e.M.WaitSynced(t, ingressmanager.MigrationsName, e.NS, "web", syncs+1)
	if n := writes() - before; n != 0 {
		t.Errorf("%d writes once moved without the redirect (%s)", n, e.Writes)
	}
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors", n)
	}
}
