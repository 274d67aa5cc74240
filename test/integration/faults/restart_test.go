package faults

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// controlPlane is a control plane of one test whose etcd data and API
// server certificates live in fixed directories, so that it can be stopped
// and started again with its state, its address and its users intact.
type controlPlane struct {
	env *envtest.Environment
	cfg *rest.Config // admin
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	env, err := framework.Environment()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certs, data := filepath.Join(dir, "certs"), filepath.Join(dir, "etcd")
	for _, d := range []string{certs, data} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env.ControlPlane.GetAPIServer().CertDir = certs
	// On SIGTERM, end the watches of clients still connected within 2s
	// instead of waiting for them until the shutdown timeout (60s).
	env.ControlPlane.GetAPIServer().Configure().Set("shutdown-watch-termination-grace-period", "2s")
	// As framework.Main's control plane (see there).
	env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: data}
	c, err := env.Start()
	if err != nil {
		_ = env.Stop()
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return &controlPlane{env: env, cfg: c}
}

// stop stops the API server, then etcd (SIGTERM, as a node shutting down).
func (cp *controlPlane) stop(t *testing.T) {
	t.Helper()
	if err := cp.env.ControlPlane.Stop(); err != nil {
		t.Fatalf("stopping the control plane: %v", err)
	}
}

// start starts etcd, then the API server, on their previous data,
// certificates and ports, and waits until the API server is healthy.
func (cp *controlPlane) start(t *testing.T) {
	t.Helper()
	if err := cp.env.ControlPlane.Etcd.Start(); err != nil {
		t.Fatalf("starting etcd again: %v", err)
	}
	if err := cp.env.ControlPlane.APIServer.Start(); err != nil {
		t.Fatalf("starting kube-apiserver again: %v", err)
	}
}

// installManagerRBAC applies config/default's Namespace, ServiceAccount and
// RBAC to the control plane, as framework.Main does to the package's.
func (cp *controlPlane) installManagerRBAC(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := framework.InstallManagerRBAC(ctx, cp.cfg); err != nil {
		t.Fatal(err)
	}
}

// gate holds the requests of a kind after the first n until it is opened.
type gate struct {
	n       int64
	seen    atomic.Int64
	open    chan struct{}
	matches func(*http.Request) bool

	mu        sync.Mutex
	forbidden []time.Time
}

func newGate(n int64, matches func(*http.Request) bool) *gate {
	return &gate{n: n, open: make(chan struct{}), matches: matches}
}

// wait counts a request and holds it while the gate is closed and it is
// past the first n.
func (g *gate) wait(ctx context.Context) {
	if g.seen.Add(1) > g.n {
		select {
		case <-g.open:
		case <-ctx.Done():
		}
	}
}

// wrap holds cfg's matching requests at the gate, and records when the
// API server answered 403 Forbidden.
func (g *gate) wrap(cfg *rest.Config) *rest.Config {
	return framework.Intercept(cfg, func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if g.matches(req) {
			g.wait(req.Context())
		}
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			g.mu.Lock()
			g.forbidden = append(g.forbidden, time.Now())
			g.mu.Unlock()
		}
		return resp, err
	})
}

// forbiddenAfter returns how many 403 answers came after t.
func (g *gate) forbiddenAfter(t time.Time) (after, all int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range g.forbidden {
		if f.After(t) {
			after++
		}
	}
	return after, len(g.forbidden)
}

// TestControlPlaneRestartMidConvergence: kube-apiserver and etcd stop and
// start again (same data, certificates and address) while the manager is
// converging 500 Services and 50 Networks; the manager, which keeps running
// throughout, converges everything afterwards, with at most one backend
// create per Network.
//
// To stop the control plane in the middle of the work, deterministically,
// the manager's Ingress writes after the first 150 and its backend creates
// after the first 10 are held until the control plane is down; then they
// fail against it, as writes in flight do when a control plane dies.
func TestControlPlaneRestartMidConvergence(t *testing.T) {
	const services, networks = 500, 50
	const ingressesBefore, networksBefore = 150, 10
	cp := startControlPlane(t)
	cp.installManagerRBAC(t)
	admin := framework.Config(cp.cfg)
	kube := kubernetes.NewForConfigOrDie(admin)
	sample := versioned.NewForConfigOrDie(admin)
	ns := framework.CreateNamespace(t, kube)

	ingressGate := newGate(ingressesBefore, func(r *http.Request) bool {
		// Ingress writes: creates, and applies or patches of one Ingress.
		return (r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/ingresses")) ||
			(r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/ingresses/"))
	})
	networkGate := newGate(networksBefore, nil)
	var creates syncMap
	mem := memory.New()
	mem.SetFault(func(ctx context.Context, op memory.Op, uid types.UID) error {
		switch op {
		case memory.OpCreate:
			networkGate.wait(ctx)
		case memory.OpCreateSubnet:
			creates.inc(uid)
		}
		return nil
	})

	saNS, saName, err := framework.ManagerServiceAccount()
	if err != nil {
		t.Fatal(err)
	}
	o := framework.ControllerOptions(ns, "ingress-manager", "network")
	o.NetworkBackend = mem
	m := framework.StartManager(t, ingressGate.wrap(framework.AsServiceAccount(cp.cfg, saNS, saName)), o)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	created := createAll(ctx, kube, sample, ns, services, networks)

	framework.Eventually(t, 2*time.Minute, "the manager to reach the gates", func(context.Context) (bool, error) {
		return ingressGate.seen.Load() > ingressesBefore && networkGate.seen.Load() > networksBefore, nil
	})
	ingsBefore, err := kube.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createdBefore := len(creates.copy())
	errorsBefore := m.CountLogs("Error syncing")
	stopped := time.Now()
	cp.stop(t)
	close(ingressGate.open)
	close(networkGate.open)
	// The held writes fail against the stopped control plane.
	framework.Eventually(t, time.Minute, "the manager to see the control plane down", func(context.Context) (bool, error) {
		return m.CountLogs("Error syncing") > errorsBefore, nil
	})
	cp.start(t)
	down := time.Since(stopped)
	t.Logf("control plane down for %v, after %d Ingresses were written (of %d Services) and %d backend networks created (of %d)",
		down.Round(time.Millisecond), len(ingsBefore.Items), services, createdBefore, networks)
	// Until the restarted API server's RBAC authorizer has its cache, it
	// refuses every request of the manager's ServiceAccount with 403 (as
	// any restarted API server does): those are expected, none after (but
	// for answers still on their way).
	waitAuthorized(t, kube, saNS, saName, ns)
	authorized := time.Now()
	m.ExpectForbidden()

	if err := <-created; err != nil {
		t.Fatalf("creating the objects: %v", err)
	}
	nothingLost(t, 3*time.Minute, settled{
		kube: kube, sample: sample, ns: ns,
		backend: memoryState(mem, ns, creates.copy),
		logs:    []func() string{m.Logs},
	})
	late, forbidden := ingressGate.forbiddenAfter(authorized.Add(2 * time.Second))
	if late > 0 {
		t.Errorf("the API server refused %d requests of the manager with 403 after its RBAC was back: %v", late, m.Forbidden())
	}
	most, total := maxCreates(creates.copy())
	t.Logf("counts: %d Services, %d Networks; control plane restarts: 1; Ingress writes: %d; backend creates: %d, at most %d per Network UID; sync errors retried: %d; requests refused while RBAC warmed up: %d",
		services, networks, ingressGate.seen.Load(), total, most, m.CountLogs("Error syncing"), forbidden)
}

// waitAuthorized waits until the API server's authorizer lets
// ServiceAccount saNS/saName create Ingresses in ns again.
func waitAuthorized(t *testing.T, kube kubernetes.Interface, saNS, saName, ns string) {
	t.Helper()
	user, groups := framework.ServiceAccountUser(saNS, saName)
	framework.Eventually(t, time.Minute, "the manager's RBAC to be served again", func(ctx context.Context) (bool, error) {
		sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "create", Group: "networking.k8s.io", Resource: "ingresses",
			}},
		}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})
}
