package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	samplecrd "github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// neutronComponent is the kustomize Component that runs the network
// controller on Neutron; cloudsSecret the Secret it mounts (docs/deploying.md).
const (
	neutronComponent = "config/neutron"
	cloudsSecret     = "controller-manager-openstack"
	managedByTag     = neutron.ManagedByTagPrefix + "controller-manager" // --neutron-managed-by's default
)

// TestNeutronFromPod: the manager deployed with the Neutron backend, as the
// deploy docs say (a Secret with clouds.yaml, config/neutron), reaches the
// real Keystone and Neutron over the Pod network (they run in the node's
// network namespace, on the node's address). Killing the leader's
// container in the middle of 30 creates leaves exactly one Neutron network
// per Network; the seed's Network becomes Ready with Neutron's IDs, and its
// gateway update and its deletion reach Neutron.
func TestNeutronFromPod(t *testing.T) {
	ctx := context.Background()
	cloud, err := neutrontest.Load(testNode.OpenStackDir())
	if err != nil {
		t.Fatalf("the node's OpenStack (started by TestMain): %v", err)
	}
	admin := cloud.Admin(t)

	// The user's clouds.yaml: the controller's user, as cloud "openstack".
	b, err := os.ReadFile(filepath.Join(cloud.Dir, "clouds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var clouds struct {
		Clouds map[string]any `json:"clouds"`
	}
	if err := yaml.Unmarshal(b, &clouds); err != nil {
		t.Fatal(err)
	}
	cy, err := yaml.Marshal(map[string]any{"clouds": map[string]any{"openstack": clouds.Clouds["local"]}})
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cloudsSecret}, StringData: map[string]string{"clouds.yaml": string(cy)}}
	if _, err := client.CoreV1().Secrets(managerNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := createNamespace(t)
	nets := samplecrd.NewForConfigOrDie(cfg).SamplecrdV1().Networks(ns)
	t.Cleanup(func() {
		// The Networks go while the Neutron backend runs (their finalizer),
		// then config/default comes back.
		ctx := context.Background()
		if err := nets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("deleting the Networks: %v", err)
		}
		framework.Eventually(t, rolloutTimeout, "the Networks gone", func(ctx context.Context) (bool, error) {
			list, err := nets.List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == 0, err
		})
		if err := makeDeploy(""); err != nil {
			t.Error(err)
		}
		restoreRollout(t)
		_ = client.CoreV1().Secrets(managerNamespace).Delete(ctx, cloudsSecret, metav1.DeleteOptions{})
	})
	if err := makeDeploy(neutronComponent); err != nil {
		t.Fatal(err)
	}
	restoreRollout(t)

	// 30 creates, and the leader's container killed in their middle.
	const n = 30
	start := time.Now()
	err = framework.Parallel(ctx, 4, n, func(ctx context.Context, i int) error {
		_, err := nets.Create(ctx, &samplecrdv1.Network{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("net-%02d", i)},
			Spec:       samplecrdv1.NetworkSpec{CIDR: fmt.Sprintf("10.0.%d.0/24", i), Gateway: fmt.Sprintf("10.0.%d.1", i)},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	leader := leaderPod(t)
	framework.Eventually(t, timeout, "5 Networks Ready", func(ctx context.Context) (bool, error) {
		list, err := nets.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return countReady(list.Items) >= 5, nil
	})
	// SIGKILL, not a graceful stop: creates in flight are cut between
	// Neutron's answer and the status write, and the next leader must find
	// their networks by tag instead of creating them again.
	pod, err := client.CoreV1().Pods(managerNamespace).Get(ctx, leader, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := containerID(t, pod)
	killed := time.Now()
	if _, err := testNode.Ctr(ctx, "task", "kill", "--signal", "SIGKILL", id); err != nil {
		t.Fatal(err)
	}
	var list *samplecrdv1.NetworkList
	framework.Eventually(t, rolloutTimeout, fmt.Sprintf("all %d Networks Ready", n), func(ctx context.Context) (bool, error) {
		list, err = nets.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if ready := countReady(list.Items); ready != n {
			return false, fmt.Errorf("%d of %d Ready", ready, n)
		}
		return true, nil
	})
	converged := time.Since(start)

	// Neutron holds exactly one network per Network: the one its status names.
	byUID := map[string][]string{}
	pages, err := networks.List(admin, networks.ListOpts{Tags: managedByTag}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := networks.ExtractNetworks(pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, nn := range all {
		for _, tag := range nn.Tags {
			if uid, ok := strings.CutPrefix(tag, neutron.UIDTagPrefix); ok {
				byUID[uid] = append(byUID[uid], nn.ID)
			}
		}
	}
	lost, duplicated := 0, 0
	for _, nw := range list.Items {
		ids := byUID[string(nw.UID)]
		delete(byUID, string(nw.UID))
		switch {
		case len(ids) == 0 || !slices.Contains(ids, nw.Status.NetworkID):
			lost++
			t.Errorf("Network %s (status network %s): Neutron networks %v", nw.Name, nw.Status.NetworkID, ids)
		case len(ids) > 1:
			duplicated++
			t.Errorf("Network %s has %d Neutron networks: %v", nw.Name, len(ids), ids)
		}
	}
	extra := len(byUID)
	for uid, ids := range byUID {
		t.Errorf("Neutron networks %v tagged %s belong to no Network", ids, uid)
	}
	t.Logf("outcome: %d Networks, %d Neutron networks tagged %s, %d lost, %d duplicated, %d extra; the leader %s killed %.1fs after the creates began; all Ready %.1fs after",
		n, len(all), managedByTag, lost, duplicated, extra, leader, killed.Sub(start).Seconds(), converged.Seconds())
	restoreRollout(t)

	// The seed's Network: Ready with Neutron's IDs, and Neutron has them.
	seed, err := nets.Create(ctx, framework.SeedNetwork(t), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := framework.WaitObject(t, "the seed's Network Ready with Neutron IDs", framework.Get(nets.Get, seed.Name), networkReady)
	net, err := networks.Get(ctx, admin, ready.Status.NetworkID).Extract()
	if err != nil {
		t.Fatalf("Neutron network %s of the seed's status: %v", ready.Status.NetworkID, err)
	}
	if !slices.Contains(net.Tags, neutron.UIDTagPrefix+string(seed.UID)) || !slices.Contains(net.Tags, managedByTag) {
		t.Errorf("Neutron network %s has tags %v, want the Network's UID and %s", net.ID, net.Tags, managedByTag)
	}
	sub, err := subnets.Get(ctx, admin, ready.Status.SubnetID).Extract()
	if err != nil {
		t.Fatalf("Neutron subnet %s of the seed's status: %v", ready.Status.SubnetID, err)
	}
	if sub.NetworkID != net.ID || sub.CIDR != seed.Spec.CIDR || sub.GatewayIP != seed.Spec.Gateway {
		t.Errorf("Neutron subnet %s: network %s, cidr %s, gateway %s; want %s, %s, %s", sub.ID, sub.NetworkID, sub.CIDR, sub.GatewayIP, net.ID, seed.Spec.CIDR, seed.Spec.Gateway)
	}
	t.Logf("the seed's Network is Neutron network %s, subnet %s (%s via %s)", net.ID, sub.ID, sub.CIDR, sub.GatewayIP)

	// The gateway update reaches Neutron, on the same subnet.
	patch := []byte(`{"spec":{"gateway":"192.168.0.254"}}`)
	if _, err := nets.Patch(ctx, seed.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, "Neutron subnet "+sub.ID+" with gateway 192.168.0.254", func(ctx context.Context) (bool, error) {
		s, err := subnets.Get(ctx, admin, sub.ID).Extract()
		if err != nil {
			return false, err
		}
		if s.GatewayIP != "192.168.0.254" {
			return false, fmt.Errorf("gateway %s", s.GatewayIP)
		}
		return true, nil
	})

	// The deletion reaches Neutron before the finalizer lets the Network go.
	if err := nets.Delete(ctx, seed.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitGone(t, "the seed's Network", framework.Get(nets.Get, seed.Name))
	if _, err := networks.Get(ctx, admin, net.ID).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("Neutron network %s after the Network's deletion: got %v, want 404", net.ID, err)
	}
}

// networkReady checks that a Network is Ready with Neutron's IDs.
func networkReady(n *samplecrdv1.Network) error {
	c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue || n.Status.NetworkID == "" || n.Status.SubnetID == "" {
		return fmt.Errorf("status %+v", n.Status)
	}
	return nil
}

func countReady(list []samplecrdv1.Network) int {
	ready := 0
	for i := range list {
		if networkReady(&list[i]) == nil {
			ready++
		}
	}
	return ready
}
