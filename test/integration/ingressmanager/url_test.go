package ingressmanager

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// waitURL waits until the Service's ingress/url annotation is want ("":
// absent) and returns the Service.
func (e *env) waitURL(name, want string) *corev1.Service {
	e.T.Helper()
	var svc *corev1.Service
	framework.Eventually(e.T, framework.Timeout, fmt.Sprintf("ingress/url of %s = %q", name, want), func(ctx context.Context) (bool, error) {
		var err error
		if svc, err = e.Client.CoreV1().Services(e.NS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		got, ok := svc.Annotations["ingress/url"]
		return got == want && ok == (want != ""), nil
	})
	return svc
}

// TestURLWrittenOnceServed: the URL goes on the Service only once what
// exposes it serves, through its own field manager and only that
// annotation; it follows TLS, stays across a move to an HTTPRoute, and
// goes when the Service is no longer exposed.
func TestURLWrittenOnceServed(t *testing.T) {
	e := setup(t, func(o *app.Options) { o.IngressMoveDNSDrain = 0 })
	e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx", "team": "shop"}))
	e.WaitIngress("web", "the Ingress", nil)
	e.WaitSynced("web", 1)
	e.waitURL("web", "")

	e.setIngressAddress("web")
	svc := e.waitURL("web", "http://example.com/")
	if svc.Annotations["team"] != "shop" || svc.Annotations["ingress/http"] != "nginx" {
		t.Errorf("annotations = %v: the Service's own were changed", svc.Annotations)
	}
	var entry *metav1.ManagedFieldsEntry
	for i, m := range svc.ManagedFields {
		if m.Manager == "ingress-manager-url" {
			entry = &svc.ManagedFields[i]
		}
	}
	if entry == nil || entry.FieldsV1 == nil {
		t.Fatalf("no managedFields entry of ingress-manager-url: %+v", svc.ManagedFields)
	}
	if got, want := string(entry.FieldsV1.Raw), `{"f:metadata":{"f:annotations":{"f:ingress/url":{}}}}`; got != want {
		t.Errorf("ingress-manager-url owns %s, want %s (that annotation alone)", got, want)
	}

	e.Annotate("web", map[string]*string{"ingress/tls-secret": ptr.To("web-tls")})
	e.waitURL("web", "https://example.com/")

	// To an HTTPRoute: the URL stays while the Ingress serves, and once
	// the route does.
	e.Annotate("web", map[string]*string{"ingress/gateway": ptr.To("gw")})
	e.waitRoute("web", "the route", nil)
	e.WaitEvent("web", corev1.EventTypeNormal, "WaitingForHTTPRoute", "until Gateway")
	e.waitURL("web", "https://example.com/")
	e.setRouteStatus("web", "gw", metav1.ConditionTrue, "Accepted", "")
	e.WaitNoIngress("web", "the Ingress deleted once the route is accepted")
	e.waitURL("web", "https://example.com/")

	e.Annotate("web", map[string]*string{"ingress/http": nil})
	e.waitNoRoute("web", "the route deleted with the annotation")
	e.waitURL("web", "")
	if n := e.M.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d sync errors during the moves", n)
	}
}

// TestURLAnnotationFlag: --ingress-url-annotation renames the annotation;
// empty writes none.
func TestURLAnnotationFlag(t *testing.T) {
	for _, key := range []string{"example.com/url", ""} {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			e := setup(t, func(o *app.Options) { o.IngressURLAnnotation = key })
			e.CreateService(framework.SeedService(e.NS, "web", map[string]string{"ingress/http": "nginx"}))
			e.WaitIngress("web", "the Ingress", nil)
			e.setIngressAddress("web")
			e.WaitSynced("web", 2) // the create, the address
			framework.Eventually(t, framework.Timeout, "the URL under "+key, func(ctx context.Context) (bool, error) {
				svc, err := e.Client.CoreV1().Services(e.NS).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if _, ok := svc.Annotations["ingress/url"]; ok {
					return false, fmt.Errorf("ingress/url written with --ingress-url-annotation=%q", key)
				}
				return key == "" || svc.Annotations[key] == "http://example.com/", nil
			})
		})
	}
}
