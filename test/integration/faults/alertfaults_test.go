package faults

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientretry "k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func adminClient(t *testing.T) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(framework.Config(cfg))
}

// alertTimeout bounds the wait for an alert to fire or resolve: the
// manager's own detection (a probe's backoff, a Lease's renew deadline),
// plus the scaled for, on a machine loaded by the rest of the suite.
const alertTimeout = 2 * time.Minute

// TestAlertsNeutronDown: Neutron stops answering (the fault proxy drops
// every connection) under a manager that runs one Network: its scan finds
// the backend down, and ControllerManagerNetworkBackendDown fires for the
// manager's own cloud (backend neutron); with Neutron back, the next probe
// finds it up and the alert resolves. Nothing else fires, before, during
// or after.
func TestAlertsNeutronDown(t *testing.T) {
	t.Parallel()
	nets := framework.NewNetworks(t)
	ns := framework.CreateNamespace(t, adminClient(t))
	cloud := newCloud(t)
	// The scan that finds the backend down without any Network changing
	// runs every --network-gc-interval (10 minutes by default).
	m := newReplica(t, "manager", framework.Kubeconfig(t, cfg), ns, cloud.Env(), false, append(cloud.args(), "--network-gc-interval=3s")...)
	m.start()
	w := watchAlerts(t, ns, m)
	nets.Create(testNetwork(ns, 0))
	nets.WaitReady(ns, "net-000", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	w.waitScraped(`controller_network_backend_up{backend="neutron"} == 1`, 1)
	w.quiet("Neutron answers, one Network Ready")

	cloud.SetDown(true)
	down := time.Now()
	w.fires(down, alertTimeout, expected{"ControllerManagerNetworkBackendDown", map[string]string{"backend": "neutron"}})
	w.onlyFiring("ControllerManagerNetworkBackendDown")
	cloud.SetDown(false)
	w.resolves("ControllerManagerNetworkBackendDown", map[string]string{"backend": "neutron"}, time.Now(), alertTimeout)
	nets.WaitReady(ns, "net-000", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	w.quiet("Neutron back")
}

// TestAlertsTenantPasswordRefused: Keystone refuses the password of a
// tenant's user (changed in Keystone, which revokes its tokens) while the
// tenant's Networks use its credentials (spec.cloudCredentialsRef): a new
// Network of that Secret waits, Ready=False CredentialsRefused, and
// ControllerManagerNetworkTenantCloudDown (that cloud, of the namespace)
// and ControllerManagerNetworkCredentialsRefused (the namespace) fire;
// the manager's own cloud is not alerted on. With the password back, the
// next probe of the tenant's cloud succeeds, the Network is provisioned,
// and both resolve.
func TestAlertsTenantPasswordRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := adminClient(t)
	nets := framework.NewNetworks(t)
	ns := framework.CreateNamespace(t, client)
	cloud := newCloud(t)
	tenant := cloud.real.Project(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		Data: map[string][]byte{samplecrdv1.CloudCredentialsKey: tenant.User.CloudsYAML("tenant")}}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tenantNetwork := func(i int) *samplecrdv1.Network {
		n := testNetwork(ns, i)
		n.Spec.CloudCredentialsRef = &samplecrdv1.CloudCredentialsRef{SecretName: "tenant", CloudName: "tenant"}
		return n
	}
	m := newReplica(t, "manager", framework.Kubeconfig(t, cfg), ns, cloud.Env(), false,
		append(cloud.args(), "--network-credentials-from-secrets", "--network-credentials-ttl=1s")...)
	m.start()
	w := watchAlerts(t, ns, m)
	nets.Create(tenantNetwork(0))
	nets.WaitReady(ns, "net-000", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	w.waitScraped(fmt.Sprintf(`controller_network_cloud_up{network_namespace=%q} == 1`, ns), 1)
	w.quiet("the tenant's cloud answers, its Network Ready")

	// A token of the user that Neutron has just validated: once Neutron
	// refuses it, it refuses the manager's too.
	probe, err := neutrontest.NewClient(tenant.User.Env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := networks.List(probe, networks.ListOpts{Name: "none"}).AllPages(ctx); err != nil {
		t.Fatal(err)
	}
	password := tenant.User.Env["OS_PASSWORD"]
	if err := tenant.User.SetPassword(ctx, password+"-changed"); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	framework.Eventually(t, framework.NeutronTimeout, "Neutron refusing the tenant user's tokens", func(ctx context.Context) (bool, error) {
		_, err := networks.List(probe, networks.ListOpts{Name: "none"}).AllPages(ctx)
		return err != nil, nil
	})
	nets.Create(tenantNetwork(1))
	nets.WaitReady(ns, "net-001", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
	match := map[string]string{"network_namespace": ns}
	w.fires(changed, alertTimeout, expected{"ControllerManagerNetworkTenantCloudDown", match}, expected{"ControllerManagerNetworkCredentialsRefused", match})
	w.onlyFiring("ControllerManagerNetworkTenantCloudDown", "ControllerManagerNetworkCredentialsRefused")

	if err := tenant.User.SetPassword(ctx, password); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	w.resolves("ControllerManagerNetworkTenantCloudDown", match, restored, alertTimeout)
	w.resolves("ControllerManagerNetworkCredentialsRefused", match, restored, alertTimeout)
	nets.WaitReady(ns, "net-001", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	w.quiet("the password back")
}

// leaderPair starts two replicas of the manager with leader election in
// e's namespace, each as the deployed ServiceAccount (a token of it, the
// Lease rules of config/default in the namespace), waits until manager-a
// leads and manager-b stands by, and has the package's Prometheus scrape
// both.
func (e *leaderEnv) scrapedPair() (a, b *replica, w *alertWatch) {
	e.t.Helper()
	kubeconfig := framework.ManagerKubeconfig(e.t, cfg, e.ns)
	replicaOf := func(id string) *replica {
		return newReplica(e.t, id, kubeconfig, e.ns, e.cloud.Env(), true, e.cloud.args()...)
	}
	a, b = replicaOf("manager-a"), replicaOf("manager-b")
	a.start()
	e.waitHolder(a.identity(), time.Minute)
	a.run().waitLog("Became leader", time.Minute)
	b.start()
	b.run().waitLog("Another replica leads", time.Minute)
	w = watchAlerts(e.t, e.ns, a, b)
	w.waitScraped(`controller_manager_is_leader == 1`, 1)
	return a, b, w
}

// TestAlertsLeaderFailoverAndCrashLoop: the leader killed (SIGKILL) is a
// failover, which must fire nothing: the standby leads within about a
// lease duration, and the shipped ControllerManagerNoLeader (for 3m)
// goes pending for that time and back, never firing. (The scaled copy's
// 6s stands for 3m: a 10s failover is a 5-minute one to it, so it is not
// the judge here.) The killed replica restarted, as the kubelet does,
// stands by. Then it crashes twice more within a minute (a crash loop):
// ControllerManagerRestarting fires for its instance, which kept its
// address, and resolves once the restarts leave its window ([30m],
// scaled [1m]).
func TestAlertsLeaderFailoverAndCrashLoop(t *testing.T) {
	t.Parallel()
	e := newLeaderEnv(t)
	a, b, w := e.scrapedPair()
	w.quiet("manager-a leads, manager-b stands by")

	a.kill()
	killed := time.Now()
	var shippedPending []time.Time // activeAt of each pending alert seen
	scaledFired := false
	framework.EventuallyEvery(t, 200*time.Millisecond, time.Minute, "manager-b to lead and NoLeader to clear", func(ctx context.Context) (bool, error) {
		noLeader := false
		for _, al := range w.alerts() {
			if al.Name() != "ControllerManagerNoLeader" {
				continue
			}
			noLeader = true
			switch {
			case !scaled(al) && al.State == "firing":
				return false, fmt.Errorf("the shipped ControllerManagerNoLeader fired on a failover: %s", al)
			case !scaled(al) && !slices.ContainsFunc(shippedPending, al.ActiveAt.Equal):
				shippedPending = append(shippedPending, al.ActiveAt)
			case scaled(al) && al.State == "firing":
				scaledFired = true
			}
		}
		h, _, err := e.holder(ctx)
		return err == nil && h == b.identity() && !noLeader && len(shippedPending) > 0, err
	})
	cleared := time.Now()
	if len(shippedPending) != 1 {
		t.Errorf("the shipped ControllerManagerNoLeader went pending %d times during the failover, want once", len(shippedPending))
	}
	t.Logf("failover after kill -9 of the leader: no leader as Prometheus saw it from %v after the kill until %v after it (shipped NoLeader pending %v, its for 3m: never fired; the scaled copy's, for 6s, fired: %v)",
		shippedPending[0].Sub(killed).Round(100*time.Millisecond), cleared.Sub(killed).Round(100*time.Millisecond),
		cleared.Sub(shippedPending[0]).Round(100*time.Millisecond), scaledFired)
	a.start().waitLog("Another replica leads", time.Minute)
	w.quiet("manager-b leads, manager-a restarted once stands by")

	// A crash loop: two more restarts of manager-a, each scraped.
	startTime := func() float64 {
		v, err := w.value(fmt.Sprintf(`process_start_time_seconds{instance=%q}`, a.addr))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := startTime()
	var crashed time.Time
	for range 2 {
		a.kill()
		crashed = time.Now()
		a.start()
		framework.Eventually(t, time.Minute, "Prometheus to scrape manager-a's new start time", func(context.Context) (bool, error) {
			v, err := w.value(fmt.Sprintf(`process_start_time_seconds{instance=%q}`, a.addr))
			return err == nil && v != before, nil
		})
		before = startTime()
	}
	al := w.fires(crashed, alertTimeout, expected{"ControllerManagerRestarting", map[string]string{"instance": a.addr}})[0]
	if v, err := strconv.ParseFloat(al.Value, 64); err != nil || v < 2 {
		t.Errorf("ControllerManagerRestarting's value %q, want the 2 restarts or more", al.Value)
	}
	w.onlyFiring("ControllerManagerRestarting")
	w.resolves("ControllerManagerRestarting", map[string]string{"instance": a.addr}, crashed, 3*time.Minute)
	if h, _, err := e.holder(context.Background()); err != nil || h != b.identity() {
		t.Errorf("the Lease is held by %q (%v), want %s, which led throughout the crash loop", h, err, b.identity())
	}
	w.quiet("the crash loop over", "ControllerManagerRestarting")
}

// TestAlertsLeaseHeldByAnother: the Lease taken by an identity the
// replicas do not know (another installation with the same Lease, or a
// holder that stopped renewing a long lease): the leader cannot renew, so
// it exits and, restarted, stands by as the other replica does; no
// replica leads, and ControllerManagerNoLeader fires. The foreign Lease
// deleted, a replica takes it and the alert resolves.
func TestAlertsLeaseHeldByAnother(t *testing.T) {
	t.Parallel()
	e := newLeaderEnv(t)
	a, b, w := e.scrapedPair()
	w.quiet("manager-a leads, manager-b stands by")

	ctx := context.Background()
	leases := e.kube.CoordinationV1().Leases(e.ns)
	if err := clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, "controller-manager", metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NowMicro()
		l.Spec.HolderIdentity = ptr.To("another-installation")
		l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	if code := a.run().Wait(time.Minute); code == 0 || code == -1 {
		t.Errorf("manager-a exit code %d once another holder took its Lease; want non-zero from the process itself", code)
	}
	a.start().waitLog("Another replica leads", time.Minute)
	w.fires(taken, alertTimeout, expected{"ControllerManagerNoLeader", nil})
	w.onlyFiring("ControllerManagerNoLeader")

	if err := leases.Delete(ctx, "controller-manager", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.resolves("ControllerManagerNoLeader", nil, time.Now(), alertTimeout)
	h, _, err := e.holder(ctx)
	if err != nil || (h != a.identity() && h != b.identity()) {
		t.Errorf("the Lease is held by %q (%v), want %s or %s", h, err, a.identity(), b.identity())
	}
	w.quiet(h + " leads again")
}

// TestAlertsLeaseUpdateRefused: the API server refuses a verb the manager
// needs, update on its Lease (RBAC drift: the Role of another version
// applied). The leader cannot renew, exits and, restarted, stands by;
// neither replica can take the Lease. ControllerManagerAPIRefused fires
// (403 to PUT) and ControllerManagerNoLeader too. The Role of
// config/default applied again, a replica leads and both resolve.
func TestAlertsLeaseUpdateRefused(t *testing.T) {
	t.Parallel()
	e := newLeaderEnv(t)
	a, b, w := e.scrapedPair()
	w.quiet("manager-a leads, manager-b stands by")

	ctx := context.Background()
	roles := e.kube.RbacV1().Roles(e.ns)
	list, err := roles.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, r := range list.Items {
		changed := false
		for i, rule := range r.Rules {
			if slices.Contains(rule.Resources, "leases") && slices.Contains(rule.Verbs, "update") {
				r.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "update" })
				changed = true
			}
		}
		if changed {
			if _, err := roles.Update(ctx, &r, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Fatalf("no Role of namespace %s grants update on leases", e.ns)
	}
	cut := time.Now()
	if code := a.run().Wait(time.Minute); code == 0 || code == -1 {
		t.Errorf("manager-a exit code %d once it could not renew its Lease; want non-zero from the process itself", code)
	}
	if a.run().Count("Lost the leader lease") == 0 {
		t.Errorf("manager-a did not say it lost its Lease")
	}
	a.start().waitLog("Another replica leads", time.Minute)
	refusedPut := map[string]string{"code": "403", "method": "PUT"}
	w.fires(cut, alertTimeout, expected{"ControllerManagerAPIRefused", refusedPut}, expected{"ControllerManagerNoLeader", nil})
	w.onlyFiring("ControllerManagerAPIRefused", "ControllerManagerNoLeader")

	gctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := framework.GrantLeaseAccess(gctx, framework.Config(cfg), e.ns); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	w.resolves("ControllerManagerNoLeader", nil, restored, alertTimeout)
	w.resolves("ControllerManagerAPIRefused", map[string]string{"code": "403"}, restored, alertTimeout)
	h, _, err := e.holder(ctx)
	if err != nil || (h != a.identity() && h != b.identity()) {
		t.Errorf("the Lease is held by %q (%v), want %s or %s", h, err, a.identity(), b.identity())
	}
	// The shipped rule's [5m] window still holds the 403s: pending.
	w.quiet(h+" leads again", "ControllerManagerAPIRefused")
}
