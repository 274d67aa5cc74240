package faults

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// leaderEnv is a namespace, a cloud and two managers competing for the
// namespace's Lease.
type leaderEnv struct {
	t      *testing.T
	kube   kubernetes.Interface
	sample versioned.Interface
	ns     string
	cloud  *cloud
}

func newLeaderEnv(t *testing.T) *leaderEnv {
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	cloud := newCloud(t)
	// Slow enough that a backend create is a multi-second affair in flight.
	cloud.SetLatency(50 * time.Millisecond)
	return &leaderEnv{t: t, kube: kube, sample: versioned.NewForConfigOrDie(framework.Config(cfg)),
		ns: framework.CreateNamespace(t, kube), cloud: cloud}
}

// start runs a manager with identity id through kubeconfig, with extra
// arguments.
func (e *leaderEnv) start(id, kubeconfig string, extra ...string) *process {
	args := managerArgs(kubeconfig, e.ns, append(append(leaderArgs(e.ns, id), e.cloud.args()...), extra...)...)
	return startProcess(e.t, id, e.cloud.Env(), args...)
}

// startPair starts manager-a through kubeconfigA (with extra arguments),
// waits until it leads, then starts manager-b, talking to the API server
// directly, and waits until it stands by.
func (e *leaderEnv) startPair(kubeconfigA string, extra ...string) (a, b *process) {
	e.t.Helper()
	a = e.start("manager-a", kubeconfigA, extra...)
	e.waitHolder("manager-a", time.Minute)
	a.waitLog("Became leader", time.Minute)
	b = e.start("manager-b", framework.Kubeconfig(e.t, cfg))
	b.waitLog("Another replica leads", time.Minute)
	return a, b
}

func (e *leaderEnv) holder(ctx context.Context) (string, int32, error) {
	l, err := e.kube.CoordinationV1().Leases(e.ns).Get(ctx, "controller-manager", metav1.GetOptions{})
	if err != nil {
		return "", 0, err
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), ptr.Deref(l.Spec.LeaseTransitions, 0), nil
}

// waitHolder waits until id holds the Lease and returns when it was seen.
func (e *leaderEnv) waitHolder(id string, timeout time.Duration) time.Time {
	e.t.Helper()
	var seen time.Time
	framework.Eventually(e.t, timeout, id+" to hold the Lease", func(ctx context.Context) (bool, error) {
		h, _, err := e.holder(ctx)
		seen = time.Now()
		return h == id, err
	})
	return seen
}

// midWork creates 100 Services and 20 Networks and waits until the leader
// is in the middle of them: some Ingresses written, a backend create sent.
func (e *leaderEnv) midWork(ctx context.Context) <-chan error {
	e.t.Helper()
	created := createAll(ctx, e.kube, e.sample, e.ns, 100, 20)
	framework.Eventually(e.t, neutronSettle, "the leader to be in the middle of the work", func(ctx context.Context) (bool, error) {
		ings, err := e.kube.NetworkingV1().Ingresses(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(ings.Items) >= 10 && e.cloud.Count("POST /v2.0/networks") >= 1, err
	})
	return created
}

// finish waits for the objects to be created, checks that nothing was lost
// and that b kept the Lease, and returns the most backend creates of a
// Network UID and their total. The Lease is read with a deadline of its
// own: settling on a loaded Neutron may take most of neutronSettle.
func (e *leaderEnv) finish(created <-chan error, a, b *process) (most, total int) {
	e.t.Helper()
	if err := <-created; err != nil {
		e.t.Fatal(err)
	}
	nothingLost(e.t, neutronSettle, settled{kube: e.kube, sample: e.sample, ns: e.ns, backend: e.cloud.state(), logs: []func() string{a.Logs, b.Logs}})
	ctx, cancel := context.WithTimeout(context.Background(), framework.Timeout)
	defer cancel()
	if h, transitions, err := e.holder(ctx); err != nil || h != b.Name || transitions != 1 {
		e.t.Errorf("Lease held by %q after %d transitions (%v); want %s after 1", h, transitions, err, b.Name)
	}
	_, creates := e.cloud.state()()
	return maxCreates(creates)
}

// TestLeaderKilled: two managers, the leader is killed (SIGKILL) in the
// middle of the work; the standby takes over within about a lease
// duration and finishes the work: nothing lost, no backend network created
// twice (a create the old leader had in flight is adopted, not repeated).
func TestLeaderKilled(t *testing.T) {
	t.Parallel()
	e := newLeaderEnv(t)
	a, b := e.startPair(framework.Kubeconfig(t, cfg))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	created := e.midWork(ctx)
	if h, _, err := e.holder(ctx); err != nil || h != "manager-a" {
		t.Fatalf("the Lease is held by %q (%v) before the kill, want manager-a", h, err)
	}
	ingresses, _ := e.kube.NetworkingV1().Ingresses(e.ns).List(ctx, metav1.ListOptions{})
	createsSent := e.cloud.Count("POST /v2.0/networks")
	a.Signal(syscall.SIGKILL)
	killed := time.Now()
	if code := a.Wait(10 * time.Second); code != -1 {
		t.Errorf("manager-a exit code %d after SIGKILL", code)
	}
	took := e.waitHolder("manager-b", time.Minute).Sub(killed)
	b.waitLog("Became leader", time.Minute)
	t.Logf("takeover after kill -9 of the leader: %v (lease duration %v, renew deadline %v, retry period %v)",
		took.Round(time.Millisecond), leaseDuration, renewDeadline, retryPeriod)

	most, total := e.finish(created, a, b)
	t.Logf("counts: 100 Services, 20 Networks; at the kill: %d Ingresses, %d backend creates sent; takeover %v; backend creates %d, at most %d per Network UID",
		len(ingresses.Items), createsSent, took.Round(time.Millisecond), total, most)
}

// TestLeaderPartitioned: the leader's connection to the API server is
// black-holed (a TCP proxy drops everything, closing nothing). It cannot
// renew its Lease: it must stop its controllers and exit non-zero on its
// own, and nothing it sends reaches the API server once the standby
// leads; the standby takes over and finishes the work.
func TestLeaderPartitioned(t *testing.T) {
	t.Parallel()
	e := newLeaderEnv(t)
	p := newProxy(t, cfg)
	a, b := e.startPair(framework.Kubeconfig(t, p.config(cfg)))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	created := e.midWork(ctx)
	p.BlackHole()
	holed := time.Now()
	sentBefore := p.toServer.Load()

	led := e.waitHolder("manager-b", time.Minute)
	took := led.Sub(holed)
	b.waitLog("Became leader", time.Minute)
	// From here on the old leader may reach the API server again: if it
	// were still running its controllers (or took the Lease back), its
	// requests would get through.
	p.Restore()
	code := a.Wait(time.Minute)
	exited := a.ExitedAt().Sub(holed)
	if code == 0 || code == -1 {
		t.Errorf("manager-a exit code %d after losing its Lease; want non-zero from the process itself", code)
	}
	if a.Count("Lost the leader lease") == 0 {
		t.Errorf("manager-a did not say it lost its Lease")
	}
	if sent := p.toServer.Load() - sentBefore; sent != 0 {
		t.Errorf("manager-a got %d bytes through to the API server after the partition", sent)
	}
	// The old leader's workers (and their in-flight syncs) are all gone
	// before the new leader starts its own.
	margin := stoppedBefore(t, a, b)
	t.Logf("partitioned leader: the standby led %v after the partition (seen by polling the Lease); the old leader's workers had stopped %v before; it exited (code %d) %v after the partition",
		took.Round(time.Millisecond), margin.Round(time.Millisecond), code, exited.Round(time.Millisecond))

	most, total := e.finish(created, a, b)
	t.Logf("counts: 100 Services, 20 Networks; takeover %v; old leader exit %v after the partition with code %d; bytes of the old leader after the partition: %d; backend creates %d, at most %d per Network UID",
		took.Round(time.Millisecond), exited.Round(time.Millisecond), code, p.toServer.Load()-sentBefore, total, most)
}

// TestLeaderLosesLeaseWhileDraining: SIGTERM reaches the leader while its
// connection to the API server is black-holed, with syncs in flight (a
// backend create takes seconds). It drains, but it cannot renew its Lease
// meanwhile: once the Lease is lost the standby may lead, so the old
// leader must cancel its in-flight syncs at once instead of letting them
// run on to --shutdown-timeout, and exit (0: it was asked to stop).
func TestLeaderLosesLeaseWhileDraining(t *testing.T) {
	t.Parallel()
	const shutdownTimeout = 30 * time.Second
	e := newLeaderEnv(t)
	e.cloud.SetLatency(500 * time.Millisecond)
	p := newProxy(t, cfg)
	a, b := e.startPair(framework.Kubeconfig(t, p.config(cfg)), "--shutdown-timeout="+shutdownTimeout.String())

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	created := e.midWork(ctx)
	p.BlackHole()
	sentBefore := p.toServer.Load()
	a.Signal(syscall.SIGTERM)
	signalled := time.Now()
	code := a.Wait(shutdownTimeout + 30*time.Second)
	exited := a.ExitedAt().Sub(signalled)
	if code != 0 {
		t.Errorf("manager-a exit code %d after SIGTERM, want 0", code)
	}
	if a.Count("Drain timeout passed") != 0 || a.Count("Stopping at once") == 0 || exited >= shutdownTimeout {
		t.Errorf("manager-a kept its in-flight syncs after losing its Lease (exited %v after SIGTERM); want them cancelled at once:\n%s", exited, a.Logs())
	}
	e.waitHolder("manager-b", time.Minute)
	b.waitLog("Became leader", time.Minute)
	margin := stoppedBefore(t, a, b)
	p.Restore()
	if sent := p.toServer.Load() - sentBefore; sent != 0 {
		t.Errorf("manager-a got %d bytes through to the API server after the partition", sent)
	}
	most, total := e.finish(created, a, b)
	t.Logf("counts: 100 Services, 20 Networks; SIGTERM to a partitioned leader: exit code %d %v after it (--shutdown-timeout %v); its workers stopped %v before the standby led; backend creates %d, at most %d per Network UID",
		code, exited.Round(time.Millisecond), shutdownTimeout, margin.Round(time.Millisecond), total, most)
}

// stoppedBefore checks, from their logs, that every worker of old had
// stopped before new became leader, and returns by how much.
func stoppedBefore(t *testing.T, old, new *process) time.Duration {
	t.Helper()
	stopped, started := old.logTimes("Workers stopped"), new.logTimes("Became leader")
	if len(stopped) == 0 || len(started) == 0 {
		t.Errorf("%s logged %d \"Workers stopped\", %s logged %d \"Became leader\"", old.Name, len(stopped), new.Name, len(started))
		return 0
	}
	last := slices.MaxFunc(stopped, time.Time.Compare)
	if !last.Before(started[0]) {
		t.Errorf("%s still had workers until %s, after %s became leader at %s", old.Name, last.Format("15:04:05.000"), new.Name, started[0].Format("15:04:05.000"))
	}
	return started[0].Sub(last)
}
