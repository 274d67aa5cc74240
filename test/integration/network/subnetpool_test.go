package network

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// TestNeutronSubnetPool: a Network takes its range from a subnet pool the
// admin shares with every project, as the controller's member user:
// Neutron allocates it, status.subnet shows it and the pool; the create
// costs the pool's lookup and the create's 4 requests; a full pool is
// SubnetPoolExhausted until room is made, a missing one
// SubnetPoolNotFound; the API server refuses a cidr beside the pool.
func TestNeutronSubnetPool(t *testing.T) {
	e, cloud, managedBy, user := neutronUserEnv(t)
	name := "shared-" + string(uuid.NewUUID())[:8]
	pool := cloud.AddSubnetPool(t, name, "10.62.0.0/27", 26)
	log := e.startNeutronScanned(cloud, managedBy)

	n := &samplecrdv1.Network{ObjectMeta: metav1.ObjectMeta{Name: "pooled-0"}, Spec: samplecrdv1.NetworkSpec{
		SubnetPool: &samplecrdv1.SubnetPoolRef{Name: name}, PrefixLength: ptr(int32(28)), EnableDHCP: ptr(false),
	}}
	e.create(n)
	got := e.waitReady("pooled-0", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	create := lines(notLists(requests(t, log, user), managedBy))
	t.Logf("create from a subnet pool: %d Neutron requests: %v", len(create), create)
	if want := []string{"GET /v2.0/subnetpools?name=" + name, "POST /v2.0/networks", "PUT /v2.0/networks/<id>/tags", "POST /v2.0/subnets",
		"PUT /v2.0/subnets/<id>/tags"}; !slices.Equal(create, want) {
		t.Errorf("the create's requests are %v, want %v", create, want)
	}
	s := got.Status.Subnet
	p, err := netip.ParsePrefix(s.CIDR)
	if err != nil || p.Bits() != 28 || !netip.MustParsePrefix("10.62.0.0/27").Contains(p.Addr()) || s.SubnetPoolID != pool ||
		s.GatewayIP != p.Addr().Next().String() || s.EnableDHCP {
		t.Errorf("status.subnet = %+v, want a /28 of the pool, its first address as the gateway, the pool's ID, DHCP off", s)
	}

	// A second /28 fills the pool; a third waits for room.
	for _, name := range []string{"pooled-1", "pooled-2"} {
		m := n.DeepCopy()
		m.Name = name
		e.create(m)
	}
	// Which of the two gets the room is Neutron's pick.
	var waiting string
	framework.Eventually(t, timeout, "one of pooled-1 and pooled-2 provisioned, the other SubnetPoolExhausted", func(ctx context.Context) (bool, error) {
		reasons := map[string]string{}
		for _, name := range []string{"pooled-1", "pooled-2"} {
			cur, err := e.nets.Client.SamplecrdV1().Networks(e.NS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if c := meta.FindStatusCondition(cur.Status.Conditions, samplecrdv1.ConditionReady); c != nil {
				reasons[c.Reason] = name
			}
		}
		waiting = reasons[samplecrdv1.ReasonSubnetPoolExhausted]
		if waiting == "" || reasons[samplecrdv1.ReasonProvisioned] == "" {
			return false, fmt.Errorf("reasons %v", reasons)
		}
		return true, nil
	})
	if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, "pooled-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone("pooled-0")
	// An edit asks for a look at once, instead of the backoff's next.
	e.edit(waiting, func(n *samplecrdv1.Network) { n.Labels = map[string]string{"retry": "now"} })
	e.waitReady(waiting, metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)

	// A pool that is not there.
	lost := n.DeepCopy()
	lost.Name, lost.Spec.SubnetPool = "lost", &samplecrdv1.SubnetPoolRef{Name: "no-such-pool-" + name}
	e.create(lost)
	lostNet := e.waitReady("lost", metav1.ConditionFalse, samplecrdv1.ReasonSubnetPoolNotFound)
	e.waitEvent("lost", corev1.EventTypeWarning, samplecrdv1.ReasonSubnetPoolNotFound, "")
	if nets := cloud.Networks(t, cloud.Admin(t), neutron.UIDTagPrefix+string(lostNet.UID)); len(nets) != 0 || lostNet.Status.NetworkID != "" {
		t.Errorf("a network was created before its pool was found: %+v", nets)
	}

	// The API server refuses a cidr beside the pool.
	both := newNetwork("both", "10.63.0.0/24", "10.63.0.1")
	both.Spec.SubnetPool = &samplecrdv1.SubnetPoolRef{Name: name}
	_, err = e.nets.Client.SamplecrdV1().Networks(e.NS).Create(e.Ctx, both, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "subnetPool takes the subnet's range from the pool: remove cidr") {
		t.Errorf("cidr and subnetPool: %v, want Invalid saying what to remove", err)
	}
	// The Networks go before the pool (the test's cleanup deletes it).
	for _, name := range []string{"pooled-1", "pooled-2", "lost"} {
		if err := e.nets.Client.SamplecrdV1().Networks(e.NS).Delete(e.Ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitGone(name)
	}
}
