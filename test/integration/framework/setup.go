package framework

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-sample/controller-manager/internal/app"
)

// Setup gives a test its share of the package's control plane: an admin
// client (with the manager's client-side limits) and a namespace of its own.
func Setup(t testing.TB) (kubernetes.Interface, string) {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(Config(adminConfig))
	return client, CreateNamespace(t, client)
}

// ControllerOptions returns Options running only controllers, scoped to
// namespace ns.
func ControllerOptions(ns string, controllers ...string) *app.Options {
	o := Options()
	o.Controllers = controllers
	o.Namespace = ns
	return o
}

// Intercept returns a copy of cfg whose requests go through f, which sends
// them on with next (or answers them itself).
func Intercept(cfg *rest.Config, f func(req *http.Request, next http.RoundTripper) (*http.Response, error)) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) { return f(req, next) })
	})
	return c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Annotate sets (value non-nil) or removes (nil) annotations of Service
// ns/name with one merge patch, retried on errors until Timeout.
func Annotate(t testing.TB, client kubernetes.Interface, ns, name string, ann map[string]*string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		t.Fatal(err)
	}
	Eventually(t, Timeout, "annotating "+name, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err == nil, err
	})
}
