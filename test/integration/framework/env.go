package framework

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-sample/controller-manager/internal/app"
)

// Env is one test's share of the package's control plane (an admin client
// and a namespace of its own) and a manager running controllers scoped to
// that namespace, whose requests are counted. A suite embeds it and adds
// what is particular to it.
type Env struct {
	// T is the running (sub)test: a test that runs subtests on one Env
	// sets it to each.
	T      *testing.T
	Ctx    context.Context
	Client kubernetes.Interface
	NS     string
	M      *Manager
	// Writes counts the requests of the manager of the last Start.
	Writes *RequestCounter
	// Controllers the manager runs; Opts change its options at each Start.
	Controllers []string
	Opts        []func(*app.Options)
}

// NewEnv makes a namespace and starts a manager running controllers in it,
// its options changed by opts.
func NewEnv(t *testing.T, controllers []string, opts ...func(*app.Options)) *Env {
	t.Helper()
	client, ns := Setup(t)
	e := &Env{T: t, Ctx: context.Background(), Client: client, NS: ns, Controllers: controllers, Opts: opts}
	e.Start()
	return e
}

// Start starts a manager (again, once the previous one stopped) with the
// Env's options changed by Opts, then by more.
func (e *Env) Start(more ...func(*app.Options)) {
	e.T.Helper()
	o := ControllerOptions(e.NS, e.Controllers...)
	for _, f := range append(slices.Clone(e.Opts), more...) {
		f(o)
	}
	c, counter := CountRequests(AdminConfig())
	e.Writes = counter
	e.M = StartManager(e.T, c, o)
}

// CreateService creates svc (in any namespace it names; NS when none).
func (e *Env) CreateService(svc *corev1.Service) *corev1.Service {
	e.T.Helper()
	if svc.Namespace == "" {
		svc.Namespace = e.NS
	}
	return CreateService(e.T, e.Client, svc)
}

// Annotate sets (value non-nil) or removes (nil) annotations of Service name.
func (e *Env) Annotate(name string, ann map[string]*string) {
	e.T.Helper()
	Annotate(e.T, e.Client, e.NS, name, ann)
}

// WaitIngress waits until the Ingress name exists and check (when not nil)
// accepts it, and returns it.
func (e *Env) WaitIngress(name, what string, check func(*networkingv1.Ingress) error) *networkingv1.Ingress {
	e.T.Helper()
	return WaitIngress(e.T, e.Client, e.NS, name, what, check)
}

// WaitNoIngress waits until the Ingress name is gone, and logs how long that took.
func (e *Env) WaitNoIngress(name, what string) {
	e.T.Helper()
	start := time.Now()
	WaitGone(e.T, what, Get(e.Client.NetworkingV1().Ingresses(e.NS).Get, name))
	e.T.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// WaitEvent waits for an Event of eventType and reason on the Service name
// whose message contains every one of contains, and returns it.
func (e *Env) WaitEvent(name, eventType, reason string, contains ...string) *corev1.Event {
	e.T.Helper()
	return WaitEvent(e.T, e.Client, Timeout, e.NS, "Service", name, eventType, reason, contains...)
}

// WaitSynced waits until the manager's first controller synced the key
// NS/name n times in all.
func (e *Env) WaitSynced(name string, n int) {
	e.T.Helper()
	e.M.WaitSynced(e.T, e.Controllers[0], e.NS, name, n)
}
