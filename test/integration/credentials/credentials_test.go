// Integration tests of Networks with credentials of their own
// (spec.cloudCredentialsRef) against a real kube-apiserver + etcd and the
// real Keystone and Neutron `make test` starts: two tenant projects, each
// with a member user of its own, whose clouds.yaml are Secrets of two
// namespaces; the manager runs with the RBAC of config/default plus the
// config/network-credentials Component, as deployed.
package credentials

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

type env struct {
	framework.Networks
	t    *testing.T
	ctx  context.Context
	kube kubernetes.Interface
}

func (e *env) secret(ns, name string, cloudsYAML []byte) {
	e.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{samplecrdv1.CloudCredentialsKey: cloudsYAML}}
	_, err := e.kube.CoreV1().Secrets(ns).Create(e.ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = e.kube.CoreV1().Secrets(ns).Update(e.ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		e.t.Fatalf("writing Secret %s/%s: %v", ns, name, err)
	}
}

func (e *env) create(ns, name, cidr, gateway, secret string) {
	e.t.Helper()
	n := framework.NewNetwork(ns, name, cidr, gateway)
	if secret != "" {
		n.Spec.CloudCredentialsRef = &samplecrdv1.CloudCredentialsRef{SecretName: secret, CloudName: "tenant"}
	}
	e.Create(n)
}

// inNeutron returns the Neutron network of Network uid, read as the admin
// (every project's), nil when there is none.
func inNeutron(t *testing.T, cloud *neutrontest.Cloud, uid types.UID) *networks.Network {
	t.Helper()
	got := cloud.Networks(t, cloud.Admin(t), neutron.UIDTagPrefix+string(uid))
	switch len(got) {
	case 0:
		return nil
	case 1:
		return &got[0]
	}
	t.Fatalf("%d Neutron networks carry the UID of Network %s", len(got), uid)
	return nil
}

// Networks in namespace A land in project A, in namespace B in project B,
// without credentials in the manager's own; B cannot use A's Secret; the
// orphan garbage collection covers the tenants' projects and no other; a
// password rotated in Keystone and in the Secret keeps working; a revoked
// user gives a condition on its Networks only.
func TestCredentialsPerNetwork(t *testing.T) {
	cloud := neutrontest.Get(t)
	cloud.SetEnv(t) // the manager's own cloud: project k8s
	managedBy := neutrontest.UniqueManagedBy()
	cloud.CleanupManagedBy(t, managedBy)
	kube, nsA := framework.Setup(t)
	nsB, nsOwn := framework.CreateNamespace(t, kube), framework.CreateNamespace(t, kube)
	e := &env{Networks: framework.NewNetworks(t), t: t, ctx: context.Background(), kube: kube}
	framework.InstallComponentRBAC(t, "config/network-credentials")

	tenantA, tenantB := cloud.Project(t), cloud.Project(t)
	e.secret(nsA, "team-a", tenantA.User.CloudsYAML("tenant"))
	e.secret(nsB, "team-b", tenantB.User.CloudsYAML("tenant"))
	// A's user in B's project, where it has no role.
	e.secret(nsA, "a-in-b", []byte(strings.Replace(string(tenantA.User.CloudsYAML("tenant")),
		"project_name: "+tenantA.Name, "project_name: "+tenantB.Name, 1)))

	// Orphans of this managed-by value, from before the manager started:
	// one in tenant A's project (its Network long gone), which A's scan
	// deletes, and one in the admin's project, for which the manager holds
	// no credentials, which nothing deletes.
	orphan := func(env map[string]string, cidr string) network.Network {
		b, err := neutron.New(e.ctx, neutron.Options{ManagedBy: managedBy, Getenv: neutrontest.Getenv(env)})
		if err != nil {
			t.Fatal(err)
		}
		n, err := b.Create(e.ctx, network.Network{UID: types.UID(uuid.NewUUID()), Namespace: nsA, Name: "gone-long-ago", CIDR: cidr, Gateway: strings.TrimSuffix(cidr, "0/24") + "1"})
		if err != nil {
			t.Fatal(err)
		}
		return *n
	}
	orphanA := orphan(tenantA.User.Env, "10.70.0.0/24")
	orphanAdmin := orphan(cloud.AdminEnv(), "10.71.0.0/24")

	accessLog, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	o := framework.Options()
	o.Controllers = []string{"network"}
	o.Namespace = "" // Networks of several namespaces
	o.NetworkBackendName = "neutron"
	o.NeutronManagedBy = managedBy
	o.NetworkCredentialsFromSecrets = true
	o.NetworkCredentialsTTL = time.Second
	m := framework.StartManager(t, framework.AdminConfig(), o)

	e.create(nsA, "a1", "10.60.0.0/24", "10.60.0.1", "team-a")
	e.create(nsB, "b1", "10.61.0.0/24", "10.61.0.1", "team-b")
	e.create(nsOwn, "own", "10.62.0.0/24", "10.62.0.1", "")
	// B names A's Secret: looked up in B's namespace only.
	e.create(nsB, "steal", "10.63.0.0/24", "10.63.0.1", "team-a")
	e.create(nsA, "no-access", "10.68.0.0/24", "10.68.0.1", "a-in-b")

	for _, c := range []struct {
		ns, name, project string
	}{{nsA, "a1", tenantA.ID}, {nsB, "b1", tenantB.ID}, {nsOwn, "own", cloud.ProjectID}} {
		n, _ := e.WaitReady(c.ns, c.name, metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
		if n.Status.Network == nil || n.Status.Network.ProjectID != c.project {
			t.Errorf("Network %s/%s: status.network = %+v, want project %s", c.ns, c.name, n.Status.Network, c.project)
		}
		if got := inNeutron(t, cloud, n.UID); got == nil || got.ProjectID != c.project || got.ID != n.Status.NetworkID {
			t.Errorf("Network %s/%s: in Neutron %+v, want network %s in project %s", c.ns, c.name, got, n.Status.NetworkID, c.project)
		}
	}
	steal, cond := e.WaitReady(nsB, "steal", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsNotFound)
	if !strings.Contains(cond.Message, "Secret team-a not found in namespace "+nsB) {
		t.Errorf("the Network naming another namespace's Secret says %q", cond.Message)
	}
	if got := inNeutron(t, cloud, steal.UID); got != nil {
		t.Errorf("a network was created for it: %+v", got)
	}
	_, cond = e.WaitReady(nsA, "no-access", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
	// What to check, and nothing of the Secret (its project's name).
	if strings.Contains(cond.Message, tenantB.Name) || !strings.Contains(cond.Message, "has a role (member) on the project") {
		t.Errorf("the Network whose user has no role on the project says %q", cond.Message)
	}
	// Tenant B's cloud cost its List (networks, subnets) and b1's create
	// (network, tags, subnet, tags), nothing per Network of other clouds.
	reqs, err := accessLog.Requests(e.ctx, tenantB.User.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tenant B's user: %d Neutron requests: %v", len(reqs), reqs)
	if len(reqs) != 6 {
		t.Errorf("tenant B's user made %d Neutron requests, want 6: the List's 2 and b1's create's 4", len(reqs))
	}
	framework.Eventually(t, framework.NeutronTimeout, "tenant A's orphan collected", func(ctx context.Context) (bool, error) {
		return inNeutron(t, cloud, orphanA.UID) == nil, nil
	})
	if inNeutron(t, cloud, orphanAdmin.UID) == nil {
		t.Errorf("the orphan in a project the manager holds no credentials for was deleted")
	}

	// A restart with every Network converged: each tenant cloud costs its
	// List (2 requests), nothing per Network.
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := accessLog.Reset(e.ctx); err != nil {
		t.Fatal(err)
	}
	queue := framework.MarkQueue(network.Name)
	m = framework.StartManager(t, framework.AdminConfig(), o)
	tenantRequests := func() (a, b []neutrontest.Request) {
		var err error
		if a, err = accessLog.Requests(e.ctx, tenantA.User.ID); err == nil {
			b, err = accessLog.Requests(e.ctx, tenantB.User.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	framework.Eventually(t, framework.NeutronTimeout, "both tenant clouds listed after the restart", func(ctx context.Context) (bool, error) {
		a, b := tenantRequests()
		return len(a) >= 2 && len(b) >= 2, nil
	})
	framework.Eventually(t, framework.NeutronTimeout, "every Network synced after its cloud's List", func(ctx context.Context) (bool, error) {
		return queue.Idle(), nil
	})
	a, b := tenantRequests()
	t.Logf("restart: tenant A's user %d Neutron requests %v, tenant B's %d %v", len(a), a, len(b), b)
	for _, reqs := range [][]neutrontest.Request{a, b} {
		if len(reqs) != 2 || !reqs[0].IsList(managedBy) || !reqs[1].IsList(managedBy) {
			t.Errorf("a tenant's restart cost %v, want its List only", reqs)
		}
	}

	// A password rotated in Keystone (which revokes the user's tokens),
	// then in the Secret: in between, A's Networks say the credentials
	// are refused; then they work again, no restart.
	probeA := validatedToken(t, tenantA.User.Env)
	stopped := strings.Count(m.Logs(), "Cloud entry no longer used: stopped")
	newPassword := tenantA.User.Env["OS_PASSWORD"] + "-rotated"
	if err := tenantA.User.SetPassword(e.ctx, newPassword); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, framework.NeutronTimeout, "Neutron refusing A's old tokens", func(ctx context.Context) (bool, error) {
		_, err := networks.List(probeA, networks.ListOpts{Name: "none"}).AllPages(ctx)
		return err != nil, nil
	})
	e.create(nsA, "a2", "10.64.0.0/24", "10.64.0.1", "team-a")
	e.WaitReady(nsA, "a2", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
	e.WaitReady(nsB, "b1", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	tenantA.User.Env["OS_PASSWORD"] = newPassword
	e.secret(nsA, "team-a", tenantA.User.CloudsYAML("tenant"))
	n, _ := e.WaitReady(nsA, "a2", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	e.Edit(nsA, "a1", func(n *samplecrdv1.Network) { n.Spec.Gateway = "10.60.0.254" })
	if got := inNeutron(t, cloud, n.UID); got == nil || got.ProjectID != tenantA.ID {
		t.Errorf("after the rotation, a2 in Neutron is %+v, want in project %s", got, tenantA.ID)
	}
	framework.Eventually(t, framework.NeutronTimeout, "a1's gateway moved in Neutron", func(ctx context.Context) (bool, error) {
		n, err := e.Client.SamplecrdV1().Networks(nsA).Get(ctx, "a1", metav1.GetOptions{})
		if err != nil || n.Status.Subnet == nil {
			return false, err
		}
		subs := cloud.Subnets(t, cloud.Admin(t), n.Status.NetworkID)
		return len(subs) == 1 && subs[0].GatewayIP == "10.60.0.254", nil
	})
	// The old entry, which Keystone refuses and no Network uses any more,
	// stops: no more logins with the old password (a Keystone with
	// account lockout would count them against the user just rotated).
	framework.Eventually(t, framework.NeutronTimeout, "the rotated entry stopped", func(ctx context.Context) (bool, error) {
		return strings.Count(m.Logs(), "Cloud entry no longer used: stopped") > stopped, nil
	})

	// Tenant B's user revoked: once Neutron refuses its tokens, B's
	// Networks say so; A's and the manager's own go on.
	probe := validatedToken(t, tenantB.User.Env)
	if err := tenantB.User.Delete(e.ctx); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, framework.NeutronTimeout, "Neutron refusing B's tokens", func(ctx context.Context) (bool, error) {
		_, err := networks.List(probe, networks.ListOpts{Name: "none"}).AllPages(ctx)
		return err != nil, nil
	})
	e.create(nsB, "b2", "10.65.0.0/24", "10.65.0.1", "team-b")
	e.create(nsA, "a3", "10.66.0.0/24", "10.66.0.1", "team-a")
	e.create(nsOwn, "own2", "10.67.0.0/24", "10.67.0.1", "")
	_, cond = e.WaitReady(nsB, "b2", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
	if !strings.Contains(cond.Message, "401") {
		t.Errorf("b2's message %q does not name Keystone's 401", cond.Message)
	}
	for _, v := range []string{"OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME"} {
		if strings.Contains(cond.Message, tenantB.User.Env[v]) {
			t.Errorf("b2's message %q quotes the Secret's %s", cond.Message, v)
		}
	}
	e.WaitReady(nsA, "a3", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	e.WaitReady(nsOwn, "own2", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if got := inNeutron(t, cloud, n.UID); got == nil {
		t.Errorf("a2's network went")
	}

	// Deleting A's Networks deletes their networks in A's project.
	for _, name := range []string{"a1", "a2", "a3"} {
		if err := e.Client.SamplecrdV1().Networks(nsA).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.WaitGone(nsA, name)
	}
	for _, nt := range cloud.Networks(t, cloud.Admin(t), neutron.ManagedByTagPrefix+managedBy) {
		if nt.ProjectID == tenantA.ID {
			t.Errorf("network %s left in tenant A's project", nt.ID)
		}
	}
	if logs := m.Logs(); strings.Contains(logs, tenantA.User.Env["OS_PASSWORD"]) || strings.Contains(logs, tenantB.User.Env["OS_PASSWORD"]) {
		t.Errorf("the manager logged a password")
	}
}

// validatedToken returns a network client of env's user whose token
// Neutron has just validated: after the manager's last request (it is idle
// now), so that once Neutron refuses this token (its validation cache
// expired), it refuses the manager's too.
func validatedToken(t *testing.T, env map[string]string) *gophercloud.ServiceClient {
	t.Helper()
	probe, err := neutrontest.NewClient(env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := networks.List(probe, networks.ListOpts{Name: "none"}).AllPages(context.Background()); err != nil {
		t.Fatal(err)
	}
	return probe
}

// TestCredentialsBoundToTheirProject, on the real Keystone and Neutron: a
// Network is bound to the project it was provisioned in. Its Secret
// pointed at another project creates nothing there (no second network,
// CredentialsProjectChanged); deleting it acts in its own project (a
// Detach detaches there, and the network stays, whatever garbage
// collection runs); a Network whose credentials Keystone refused from
// the start is deleted at once, nothing having been made for it.
func TestCredentialsBoundToTheirProject(t *testing.T) {
	cloud := neutrontest.Get(t)
	cloud.SetEnv(t)
	managedBy := neutrontest.UniqueManagedBy()
	cloud.CleanupManagedBy(t, managedBy)
	kube, ns := framework.Setup(t)
	e := &env{Networks: framework.NewNetworks(t), t: t, ctx: context.Background(), kube: kube}
	framework.InstallComponentRBAC(t, "config/network-credentials")
	first, second := cloud.Project(t), cloud.Project(t)
	e.secret(ns, "creds", first.User.CloudsYAML("tenant"))
	// Another Network keeps the first project's entry, and its garbage
	// collection, going.
	e.secret(ns, "stay", first.User.CloudsYAML("tenant"))
	typo := first.User.Env["OS_PASSWORD"] + "-typo"
	e.secret(ns, "typo", []byte(strings.Replace(string(first.User.CloudsYAML("tenant")), "password: "+first.User.Env["OS_PASSWORD"], "password: "+typo, 1)))

	o := framework.Options()
	o.Controllers = []string{"network"}
	o.Namespace = ns
	o.NetworkBackendName = "neutron"
	o.NeutronManagedBy = managedBy
	o.NetworkCredentialsFromSecrets = true
	o.NetworkCredentialsTTL = time.Second
	o.NetworkGCInterval = time.Second
	framework.StartManager(t, framework.AdminConfig(), o)

	e.create(ns, "kept", "10.72.0.0/24", "10.72.0.1", "creds")
	e.Edit(ns, "kept", func(n *samplecrdv1.Network) { n.Spec.OnDelete = samplecrdv1.OnDeleteDetach })
	e.create(ns, "gone", "10.73.0.0/24", "10.73.0.1", "creds")
	e.create(ns, "stays", "10.75.0.0/24", "10.75.0.1", "stay")
	e.WaitReady(ns, "stays", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	kept, _ := e.WaitReady(ns, "kept", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	gone, _ := e.WaitReady(ns, "gone", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	for _, n := range []*samplecrdv1.Network{kept, gone} {
		if n.Status.ProjectID != first.ID {
			t.Errorf("%s: status.projectID %q, want the first project %s", n.Name, n.Status.ProjectID, first.ID)
		}
	}

	// Refused from the start (a typo): deleted at once, nothing made.
	e.create(ns, "typo", "10.74.0.0/24", "10.74.0.1", "typo")
	e.WaitReady(ns, "typo", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
	if err := e.Client.SamplecrdV1().Networks(ns).Delete(e.ctx, "typo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitGone(ns, "typo")
	framework.WaitEvent(t, kube, framework.NeutronTimeout, ns, "Network", "typo", corev1.EventTypeNormal, network.ReasonReleased, "Nothing was created")

	// The Secret pointed at the second project: nothing there.
	e.secret(ns, "creds", second.User.CloudsYAML("tenant"))
	for _, name := range []string{"kept", "gone"} {
		// A converged Network syncs on an edit, and reads its Secret
		// again once the last read is a TTL old: edited until one sync
		// comes after the TTL.
		edits := 0
		framework.EventuallyEvery(t, 250*time.Millisecond, framework.NeutronTimeout, name+" sees the Secret pointed at the second project", func(ctx context.Context) (bool, error) {
			edits++
			e.Edit(ns, name, func(n *samplecrdv1.Network) { n.Labels = map[string]string{"look": strconv.Itoa(edits)} })
			n, err := e.Client.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cond := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
			return cond != nil && cond.Reason == samplecrdv1.ReasonCredentialsProjectChanged, nil
		})
		_, cond := e.WaitReady(ns, name, metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)
		if !strings.Contains(cond.Message, first.ID) {
			t.Errorf("%s: %q does not name the project it is bound to", name, cond.Message)
		}
	}
	for _, nt := range cloud.Networks(t, cloud.Admin(t), neutron.ManagedByTagPrefix+managedBy) {
		if nt.ProjectID == second.ID {
			t.Errorf("network %s was created in the second project", nt.ID)
		}
	}

	// Deleted: in the first project, through the entry that acted for
	// them; the detached network stays, garbage collection or not.
	for _, name := range []string{"kept", "gone"} {
		if err := e.Client.SamplecrdV1().Networks(ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.WaitGone(ns, name)
	}
	framework.WaitEvent(t, kube, framework.NeutronTimeout, ns, "Network", "kept", corev1.EventTypeNormal, network.ReasonDetached, "in project "+first.ID)
	framework.WaitEvent(t, kube, framework.NeutronTimeout, ns, "Network", "gone", corev1.EventTypeNormal, network.ReasonDeleted, "in project "+first.ID)
	log, err := cloud.AccessLog()
	if err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, framework.NeutronTimeout, "three scans of the first project since", func(ctx context.Context) (bool, error) {
		reqs, err := log.Requests(ctx, first.User.ID)
		if err != nil {
			return false, nil // the log's marker request timed out: read again
		}
		lists := 0
		for _, r := range reqs {
			if r.IsList(managedBy) {
				lists++
			}
		}
		return lists >= 6, nil
	})
	admin := cloud.Admin(t)
	got, err := networks.Get(e.ctx, admin, kept.Status.NetworkID).Extract()
	if err != nil {
		t.Fatalf("the detached network is gone: %v", err)
	}
	if got.ProjectID != first.ID || slices.ContainsFunc(got.Tags, func(tag string) bool { return strings.HasPrefix(tag, neutron.UIDTagPrefix) }) {
		t.Errorf("the detached network: project %s, tags %v; want the first project, no tag of ours", got.ProjectID, got.Tags)
	}
	if _, err := networks.Get(e.ctx, admin, gone.Status.NetworkID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("the deleted Network's network: %v, want it gone", err)
	}
	if err := e.Client.SamplecrdV1().Networks(ns).Delete(e.ctx, "stays", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitGone(ns, "stays")
}
