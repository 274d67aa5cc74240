package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
)

// NeutronTimeout bounds a wait on a Network. Real Neutron shares one API
// worker with every test package running at once, and a request of it can
// take its whole 30s timeout before the retry goes through.
const NeutronTimeout = 2 * time.Minute

// Networks creates, edits and waits on the project's Network objects as
// the admin, for the network and credentials suites.
type Networks struct {
	T      testing.TB
	Client versioned.Interface
}

// NewNetworks is Networks with an admin client of the package's control
// plane.
func NewNetworks(t testing.TB) Networks {
	return Networks{T: t, Client: versioned.NewForConfigOrDie(Config(AdminConfig()))}
}

// NewNetwork is a Network of cidr and gateway in namespace ns.
func NewNetwork(ns, name, cidr, gateway string) *samplecrdv1.Network {
	return &samplecrdv1.Network{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       samplecrdv1.NetworkSpec{CIDR: cidr, Gateway: gateway},
	}
}

// Create creates n and returns it as the API server stored it.
func (c Networks) Create(n *samplecrdv1.Network) *samplecrdv1.Network {
	c.T.Helper()
	out, err := c.Client.SamplecrdV1().Networks(n.Namespace).Create(context.Background(), n, metav1.CreateOptions{})
	if err != nil {
		c.T.Fatalf("creating Network %s/%s: %v", n.Namespace, n.Name, err)
	}
	return out
}

// WaitReady waits until Network ns/name's Ready condition has status and
// reason (reason "" = any) for its current generation, and returns the
// Network and the condition.
func (c Networks) WaitReady(ns, name string, status metav1.ConditionStatus, reason string) (*samplecrdv1.Network, *metav1.Condition) {
	c.T.Helper()
	var got *samplecrdv1.Network
	var cond *metav1.Condition
	Eventually(c.T, NeutronTimeout, fmt.Sprintf("Network %s/%s Ready=%s %s", ns, name, status, reason), func(ctx context.Context) (bool, error) {
		n, err := c.Client.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cur := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
		if cur == nil || cur.Status != status || (reason != "" && cur.Reason != reason) || cur.ObservedGeneration != n.Generation {
			return false, fmt.Errorf("ready condition = %+v", cur)
		}
		got, cond = n, cur
		return true, nil
	})
	return got, cond
}

// WaitGone waits until Network ns/name is gone.
func (c Networks) WaitGone(ns, name string) {
	c.T.Helper()
	Eventually(c.T, NeutronTimeout, "Network "+ns+"/"+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := c.Client.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// Edit changes Network ns/name as change says, reading it again when the
// controller wrote it in between (409 Conflict).
func (c Networks) Edit(ns, name string, change func(*samplecrdv1.Network)) {
	c.T.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Client.SamplecrdV1().Networks(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		_, err = c.Client.SamplecrdV1().Networks(ns).Update(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		c.T.Fatalf("editing Network %s/%s: %v", ns, name, err)
	}
}
