package framework

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// Get binds a typed client's Get to name, for WaitObject and WaitGone:
// Get(client.NetworkingV1().Ingresses(ns).Get, name).
func Get[T any](get func(context.Context, string, metav1.GetOptions) (T, error), name string) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) { return get(ctx, name, metav1.GetOptions{}) }
}

// WaitIngress waits until Ingress ns/name exists and check (when not nil)
// accepts it, and returns it.
func WaitIngress(t testing.TB, client kubernetes.Interface, ns, name, what string, check func(*networkingv1.Ingress) error) *networkingv1.Ingress {
	t.Helper()
	return WaitObject(t, what, Get(client.NetworkingV1().Ingresses(ns).Get, name), check)
}

// WaitEvent waits up to timeout for an Event in ns of eventType and reason
// on the object kind/name whose message contains every one of contains,
// and returns it.
func WaitEvent(t testing.TB, client kubernetes.Interface, timeout time.Duration, ns, kind, name, eventType, reason string, contains ...string) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	Eventually(t, timeout, fmt.Sprintf("%s event %s on %s", eventType, reason, name), func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			ev := &list.Items[i]
			if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name && ev.Type == eventType && ev.Reason == reason &&
				!slices.ContainsFunc(contains, func(c string) bool { return !strings.Contains(ev.Message, c) }) {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	return found
}
