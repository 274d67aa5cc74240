package framework

import (
	"context"
	"net/http"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-sample/controller-manager/internal/app"
)

// Timeout bounds a wait on the API server and the manager.
const Timeout = 30 * time.Second

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
// ns/name, retrying conflicts.
func Annotate(t testing.TB, client kubernetes.Interface, ns, name string, ann map[string]*string) {
	t.Helper()
	Eventually(t, Timeout, "annotating "+name, func(ctx context.Context) (bool, error) {
		svc, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		for k, v := range ann {
			if v == nil {
				delete(svc.Annotations, k)
			} else {
				svc.Annotations[k] = *v
			}
		}
		_, err = client.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// WaitObject waits until get finds the object and check (when not nil)
// accepts it, and returns it.
func WaitObject[T any](t testing.TB, what string, get func(ctx context.Context) (T, error), check func(T) error) T {
	t.Helper()
	var obj T
	Eventually(t, Timeout, what, func(ctx context.Context) (bool, error) {
		var err error
		if obj, err = get(ctx); err != nil {
			return false, err
		}
		if check != nil {
			if err := check(obj); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	return obj
}

// WaitGone waits until get answers NotFound.
func WaitGone[T any](t testing.TB, what string, get func(ctx context.Context) (T, error)) {
	t.Helper()
	Eventually(t, Timeout, what, func(ctx context.Context) (bool, error) {
		_, err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// WaitIngress waits until Ingress ns/name exists and check (when not nil)
// accepts it, and returns it.
func WaitIngress(t testing.TB, client kubernetes.Interface, ns, name, what string, check func(*networkingv1.Ingress) error) *networkingv1.Ingress {
	t.Helper()
	return WaitObject(t, what, getIngress(client, ns, name), check)
}

// WaitNoIngress waits until Ingress ns/name is gone.
func WaitNoIngress(t testing.TB, client kubernetes.Interface, ns, name, what string) {
	t.Helper()
	WaitGone(t, what, getIngress(client, ns, name))
}

func getIngress(client kubernetes.Interface, ns, name string) func(ctx context.Context) (*networkingv1.Ingress, error) {
	return func(ctx context.Context) (*networkingv1.Ingress, error) {
		return client.NetworkingV1().Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
	}
}
