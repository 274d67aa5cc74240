// Integration tests of the manager itself (leader election, readiness,
// shutdown, metrics) against a real kube-apiserver + etcd.
package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// leaderOptions runs every controller, so that a standby's readiness
// covers the caches of each.
func leaderOptions(ns, id string) *app.Options {
	o := framework.ControllerOptions(ns, "*")
	o.LeaderElection.LeaderElect = true
	o.LeaderElection.ResourceNamespace = ns
	o.LeaderElectIdentity = id
	o.LeaderElection.LeaseDuration.Duration = 3 * time.Second
	o.LeaderElection.RenewDeadline.Duration = 2 * time.Second
	o.LeaderElection.RetryPeriod.Duration = 200 * time.Millisecond
	return o
}

func lease(ctx context.Context, client kubernetes.Interface, ns string) (*coordinationv1.Lease, error) {
	return client.CoordinationV1().Leases(ns).Get(ctx, "controller-manager", metav1.GetOptions{})
}

func holder(ctx context.Context, client kubernetes.Interface, ns string) string {
	l, err := lease(ctx, client, ns)
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func get(addr, path string) (int, string, error) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestLeaderElectionFailover(t *testing.T) {
	client, ns := framework.Setup(t)
	ctx := context.Background()

	a := framework.StartManager(t, framework.AdminConfig(), leaderOptions(ns, "manager-a"))
	framework.Eventually(t, framework.Timeout, "manager-a to lead", func(ctx context.Context) (bool, error) {
		return holder(ctx, client, ns) == "manager-a" && a.CountLogs("Became leader") == 1, nil
	})

	b := framework.StartManager(t, framework.AdminConfig(), leaderOptions(ns, "manager-b"))
	// The standby becomes ready (warm caches) without leading.
	framework.Eventually(t, framework.Timeout, "manager-b to be ready as a standby", func(context.Context) (bool, error) {
		code, _, err := get(b.HealthAddress(), "/readyz")
		return code == http.StatusOK, err
	})
	// ... and stays a standby while the leader renews, twice over.
	first, err := lease(ctx, client, ns)
	if err != nil {
		t.Fatal(err)
	}
	renewals := 0
	last := first.Spec.RenewTime.Time
	framework.Eventually(t, framework.Timeout, "two renewals by manager-a", func(ctx context.Context) (bool, error) {
		l, err := lease(ctx, client, ns)
		if err != nil {
			return false, err
		}
		if *l.Spec.HolderIdentity != "manager-a" {
			return false, fmt.Errorf("lease taken over by %s while manager-a leads", *l.Spec.HolderIdentity)
		}
		if l.Spec.RenewTime.After(last) {
			renewals++
			last = l.Spec.RenewTime.Time
		}
		return renewals >= 2, nil
	})
	if n := b.CountLogs("Became leader"); n != 0 {
		t.Fatalf("manager-b started its controllers while manager-a leads")
	}
	if b.CountLogs("Another replica leads") == 0 {
		t.Error("manager-b did not log that it stands by")
	}

	// Stop the leader cleanly: it releases the lease, the standby takes over.
	if err := a.Stop(); err != nil {
		t.Fatalf("manager-a stopped with %v, want a clean stop", err)
	}
	stopped := time.Now()
	framework.Eventually(t, framework.Timeout, "manager-b to take over", func(ctx context.Context) (bool, error) {
		return holder(ctx, client, ns) == "manager-b" && b.CountLogs("Became leader") == 1, nil
	})
	takeover := time.Since(stopped)
	t.Logf("takeover after a clean stop of the leader: %v (retry period %v)", takeover, 200*time.Millisecond)
	if a.CountLogs("Became leader") != 1 {
		t.Error("manager-a led more than once")
	}
}

func TestLostLeaseStopsControllersAndFails(t *testing.T) {
	client, ns := framework.Setup(t)
	a := framework.StartManager(t, framework.AdminConfig(), leaderOptions(ns, "manager-a"))
	a.ExpectError()
	framework.Eventually(t, framework.Timeout, "manager-a to lead", func(ctx context.Context) (bool, error) {
		return a.CountLogs("Became leader") == 1, nil
	})

	// Another party takes the lease over (as after a network partition in
	// which the lease expired): manager-a can no longer renew.
	framework.Eventually(t, framework.Timeout, "the lease to be stolen", func(ctx context.Context) (bool, error) {
		l, err := lease(ctx, client, ns)
		if err != nil {
			return false, err
		}
		l.Spec.HolderIdentity = ptr.To("intruder")
		l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = client.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{})
		return err == nil, err
	})

	select {
	case <-a.Done():
	case <-time.After(framework.Timeout):
		t.Fatal("manager-a kept running after losing its lease")
	}
	if err := a.Err(); !errors.Is(err, app.ErrLeaderElectionLost) {
		t.Fatalf("Run returned %v, want ErrLeaderElectionLost (so the process exits non-zero)", err)
	}
	if a.CountLogs("Workers stopped") == 0 {
		t.Error("the controllers were not stopped")
	}
	if holder(context.Background(), client, ns) != "intruder" {
		t.Error("manager-a touched the lease after losing it")
	}
}

// A leader whose elector is wedged (its Lease requests hang, deaf to their
// context) can neither renew nor stop on its own: /healthz must fail once
// the last renewal is older than the lease duration and the probe's
// tolerance, so that the liveness probe restarts it.
func TestHealthzFailsForALeaderThatStoppedRenewing(t *testing.T) {
	_, ns := framework.Setup(t)
	var wedged atomic.Bool
	release := make(chan struct{})
	c := framework.Intercept(framework.AdminConfig(), func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if wedged.Load() && strings.Contains(req.URL.Path, "/leases/") {
			<-release
		}
		return next.RoundTrip(req)
	})
	a := framework.StartManager(t, c, leaderOptions(ns, "manager-a"))
	a.ExpectError()
	t.Cleanup(func() { close(release) }) // before the manager's own cleanup stops it
	framework.Eventually(t, framework.Timeout, "manager-a to lead", func(context.Context) (bool, error) {
		return a.CountLogs("Became leader") == 1, nil
	})
	if code, body, err := get(a.HealthAddress(), "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz of a renewing leader = %d %q, %v; want 200", code, body, err)
	}

	wedged.Store(true)
	lease := leaderOptions(ns, "").LeaderElection.LeaseDuration.Duration
	framework.Eventually(t, lease+healthzTolerance+framework.Timeout, "/healthz to fail for the leader that stopped renewing", func(context.Context) (bool, error) {
		code, body, err := get(a.HealthAddress(), "/healthz")
		if err != nil {
			return false, err
		}
		return code == http.StatusInternalServerError && strings.Contains(body, "leader election"), nil
	})
}

// healthzTolerance is how long past the lease duration /healthz of a leader
// that stopped renewing keeps answering 200 (the manager's, as
// kube-controller-manager's).
const healthzTolerance = 20 * time.Second

func TestReadyOnlyAfterCachesSync(t *testing.T) {
	_, ns := framework.Setup(t)

	// Hold every Pod LIST and WATCH until the test lets them through, so that
	// the informer cannot sync (client-go may stream the initial list over a
	// watch instead of listing).
	gate := make(chan struct{})
	c := framework.Intercept(framework.AdminConfig(), func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") {
			select {
			case <-gate:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		return next.RoundTrip(req)
	})
	o := framework.ControllerOptions(ns, "pod-logger")
	m := framework.StartManager(t, c, o)

	framework.Eventually(t, framework.Timeout, "/readyz to answer 503 while the caches are not synced", func(context.Context) (bool, error) {
		code, body, err := get(m.HealthAddress(), "/readyz")
		if err != nil {
			return false, err // not serving yet
		}
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "pod-logger") {
			return false, fmt.Errorf("/readyz = %d %q before the LIST was let through", code, body)
		}
		return true, nil
	})
	if code, _, err := get(m.HealthAddress(), "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz = %d, %v; want 200 while waiting for caches", code, err)
	}
	close(gate)
	framework.Eventually(t, framework.Timeout, "/readyz to answer 200 after sync", func(context.Context) (bool, error) {
		code, _, err := get(m.HealthAddress(), "/readyz")
		return code == http.StatusOK, err
	})
}

func TestMetricsAndCleanShutdown(t *testing.T) {
	client, ns := framework.Setup(t)
	o := leaderOptions(ns, "manager-m")
	o.MetricsBindAddress = "127.0.0.1:0"
	o.MetricsSecure = false // the secure server is tested in test/integration/metrics
	m := framework.StartManager(t, framework.AdminConfig(), o)
	framework.Eventually(t, framework.Timeout, "the manager to lead", func(context.Context) (bool, error) {
		return m.CountLogs("Became leader") == 1, nil
	})
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), podlessPod(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, framework.Timeout, "metrics of the pod-logger", func(context.Context) (bool, error) {
		code, body, err := get(m.MetricsAddress(), "/metrics")
		if err != nil || code != http.StatusOK {
			return false, err
		}
		for _, want := range []string{
			`workqueue_depth{name="pod-logger"}`,
			`workqueue_adds_total{name="pod-logger"}`,
			`workqueue_work_duration_seconds_bucket{name="pod-logger"`,
			`controller_reconcile_total{controller="pod-logger",result="success"}`,
			`controller_reconcile_duration_seconds_bucket{controller="pod-logger"`,
			`rest_client_requests_total{`,
			`controller_manager_is_leader 1`,
			`controller_manager_build_info{build_date="unknown",commit="unknown",go_version="` + runtime.Version() + `",version="unknown (not built by make from a git checkout)"} 1`,
		} {
			if !strings.Contains(body, want) {
				return false, fmt.Errorf("/metrics lacks %s", want)
			}
		}
		return true, nil
	})

	// A clean stop returns nil and releases the lease at once.
	if err := m.Stop(); err != nil {
		t.Fatalf("clean stop returned %v", err)
	}
	l, err := lease(context.Background(), client, ns)
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
		t.Errorf("lease still held by %q after a clean stop; want it released", h)
	}
}
func podlessPod(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metrics-pod", Labels: map[string]string{"app": "demo"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// TestShutdownDrainsInFlightWork: SIGTERM (context cancel) while a sync is
// in the middle of its API write: the write completes, then Run returns nil.
func TestShutdownDrainsInFlightWork(t *testing.T) {
	client, ns := framework.Setup(t)

	inFlight := make(chan struct{})
	release := make(chan struct{})
	c := framework.Intercept(framework.AdminConfig(), func(req *http.Request, next http.RoundTripper) (*http.Response, error) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/ingresses") {
			close(inFlight)
			<-release // no context: the write must not be cancelled by the shutdown
		}
		return next.RoundTrip(req)
	})
	o := framework.ControllerOptions(ns, "ingress-manager")
	m := framework.StartManager(t, c, o)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{"ingress/http": "nginx"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	if _, err := client.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inFlight:
	case <-time.After(framework.Timeout):
		t.Fatal("no Ingress create was sent")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- m.Stop() }()
	framework.Eventually(t, framework.Timeout, "the shutdown to start", func(context.Context) (bool, error) {
		return m.CountLogs("Shutting down: waiting for in-flight work") > 0, nil
	})
	select {
	case <-m.Done():
		t.Fatal("Run returned while a write was in flight")
	default:
	}
	// The ingress-manager's Services' workers; those of its queue of users'
	// Ingresses, with nothing in flight, stop at once.
	if framework.CountLines(m.Logs(), "Workers stopped", `controller="ingress-manager"`) != 0 {
		close(release)
		t.Fatal("workers stopped while a write was in flight")
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Run returned %v after draining, want nil", err)
	}
	if _, err := client.NetworkingV1().Ingresses(ns).Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the in-flight write did not complete: %v", err)
	}
}
