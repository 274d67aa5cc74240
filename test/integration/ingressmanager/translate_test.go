package ingressmanager

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// TestRouteCarriesIngressNginxAnnotations: ingress-nginx's annotations in
// ingress/annotations are rendered into the HTTPRoute the real API server
// admits (the CRD's schema and CEL rules: a redirect rule without
// backends, one URLRewrite with path and host, CORS, timeouts, the rule
// redirecting "/"), and never copied onto it; a key the table cannot carry
// keeps the Service on its Ingress; and once the Gateway's class says it
// does not support CORS (its status, read by the controller's
// GatewayClass informer), the Service that needs it goes back to an
// Ingress. What was rendered reads back as written: a restart writes
// nothing.
func TestRouteCarriesIngressNginxAnnotations(t *testing.T) {
	e := setup(t)
	class := "narrow-" + e.NS
	e.classGateway("narrow", class)
	nginx := func(kv ...string) *string {
		s := "{"
		for i := 0; i+1 < len(kv); i += 2 {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf("%q: %q", kv[i], kv[i+1])
		}
		return ptr.To(s + "}")
	}
	const p = "nginx.ingress.kubernetes.io/"
	e.CreateService(framework.SeedService(e.NS, "carried", map[string]string{
		"ingress/http": "nginx", "ingress/gateway": "narrow", "ingress/path": "/api",
		"ingress/annotations": *nginx(p+"rewrite-target", "/v1", p+"upstream-vhost", "in.example.com", p+"x-forwarded-prefix", "/api",
			p+"enable-cors", "true", p+"cors-allow-origin", "https://a.example.com", p+"proxy-read-timeout", "30", p+"app-root", "/app",
			"team.example.com/owner", "shop"),
	}))
	e.CreateService(framework.SeedService(e.NS, "redirect", map[string]string{
		"ingress/http": "nginx", "ingress/gateway": "narrow",
		"ingress/annotations": *nginx(p+"permanent-redirect", "https://new.example.com/landing", p+"permanent-redirect-code", "308"),
	}))
	e.CreateService(framework.SeedService(e.NS, "blocked", map[string]string{
		"ingress/http": "nginx", "ingress/gateway": "narrow", "ingress/annotations": *nginx(p+"limit-rps", "5"),
	}))

	route := e.waitRoute("carried", "the route carrying the annotations", nil)
	if !reflect.DeepEqual(route.Annotations, map[string]string{"team.example.com/owner": "shop"}) {
		t.Errorf("route annotations %v, want only the one of no Ingress controller", route.Annotations)
	}
	if rules := route.Spec.Rules; len(rules) != 2 || len(rules[0].Filters) != 1 || rules[0].Filters[0].RequestRedirect == nil ||
		len(rules[1].Filters) != 3 || rules[1].Timeouts == nil || ptr.Deref(rules[1].Timeouts.Request, "") != "1m35s" ||
		rules[1].Filters[1].URLRewrite == nil || ptr.Deref(rules[1].Filters[1].URLRewrite.Hostname, "") != "in.example.com" ||
		rules[1].Filters[2].CORS == nil || !ptr.Deref(rules[1].Filters[2].CORS.AllowCredentials, false) || len(rules[1].BackendRefs) != 1 {
		t.Errorf("rules %+v, want the app-root rule, then the Service's with a header, a rewrite, CORS and timeouts", rules)
	}
	e.WaitEvent("carried", corev1.EventTypeNormal, "CarriedToHTTPRoute", p+"enable-cors (a CORS filter)",
		"extended features of the Gateway API, without knowing they are supported: Gateway class "+class+" publishes no status.supportedFeatures")

	redirect := e.waitRoute("redirect", "the redirecting route", nil)
	if rules := redirect.Spec.Rules; len(rules) != 1 || len(rules[0].BackendRefs) != 0 || len(rules[0].Filters) != 1 ||
		ptr.Deref(rules[0].Filters[0].RequestRedirect.StatusCode, 0) != 308 {
		t.Errorf("rules %+v, want one redirecting with 308, without backends", rules)
	}

	e.WaitIngress("blocked", "the Ingress of the Service whose key cannot be carried", nil)
	e.WaitEvent("blocked", corev1.EventTypeWarning, "NotCarriedToHTTPRoute", p+"limit-rps limits the rate")
	if e.routeExists("blocked") {
		t.Error("a route was made for a Service whose key cannot be carried")
	}

	// What was rendered reads back as written: a restart writes nothing.
	if err := e.M.Stop(); err != nil {
		t.Fatal(err)
	}
	e.Start()
	for _, name := range []string{"carried", "redirect", "blocked"} {
		e.WaitSynced(name, 1)
	}
	if got := e.Writes.Writes(""); got != 0 {
		t.Errorf("writes after a restart with converged state = %d, want 0 (%s)", got, e.Writes)
	}

	// The class says what it supports, without CORS: the Service that
	// needs it goes back to an Ingress; the other keeps its route.
	e.setClassFeatures(class, "HTTPRoute", "HTTPRoutePathRewrite", "HTTPRouteHostRewrite", "HTTPRoutePathRedirect",
		"HTTPRouteSchemeRedirect", "HTTPRoute308RedirectStatusCode", "HTTPRouteRequestTimeout", "HTTPRouteBackendTimeout")
	e.WaitIngress("carried", "an Ingress again, CORS not supported", nil)
	e.WaitEvent("carried", corev1.EventTypeWarning, "NotCarriedToHTTPRoute", "Gateway "+e.NS+"/narrow (class "+class+")",
		p+"enable-cors needs HTTPRouteCORS, which the Gateway's class does not support")
	if !e.routeExists("redirect") {
		t.Error("the redirect's route went, though its class supports what it uses")
	}
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors", n)
	}
}

// classGateway makes Gateway name of the test namespace, of GatewayClass
// class (made too, listing no supported features), programmed with an
// address.
func (e *env) classGateway(name, class string) {
	e.T.Helper()
	classes := e.gateway().GatewayV1().GatewayClasses()
	if _, err := classes.Create(e.Ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: testGatewayController}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { _ = classes.Delete(context.Background(), class, metav1.DeleteOptions{}) })
	gws := e.gateway().GatewayV1().Gateways(e.NS)
	gw, err := gws.Create(e.Ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class),
			Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.10"}}
	meta.SetStatusCondition(&gw.Status.Conditions, metav1.Condition{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", ObservedGeneration: gw.Generation})
	if _, err := gws.UpdateStatus(e.Ctx, gw, metav1.UpdateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// setClassFeatures writes the features class supports into its status, as
// its Gateway controller does.
func (e *env) setClassFeatures(class string, names ...string) {
	e.T.Helper()
	classes := e.gateway().GatewayV1().GatewayClasses()
	framework.Eventually(e.T, framework.Timeout, "writing the supported features of GatewayClass "+class, func(ctx context.Context) (bool, error) {
		gc, err := classes.Get(ctx, class, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		gc.Status.SupportedFeatures = nil
		for _, n := range names {
			gc.Status.SupportedFeatures = append(gc.Status.SupportedFeatures, gatewayv1.SupportedFeature{Name: gatewayv1.FeatureName(n)})
		}
		_, err = classes.UpdateStatus(ctx, gc, metav1.UpdateOptions{})
		return err == nil, err
	})
}
