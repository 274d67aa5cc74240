package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// refusedNetworks is how many Networks wait while Keystone refuses the
// credentials; maxRefusedRequests bounds the requests to Keystone and
// Neutron over refusedWindow, whatever refusedNetworks is: the syncs in
// flight when the refusal is found (at most a worker's each) and the
// probes' backoff.
const (
	refusedNetworks    = 200
	refusedWindow      = time.Minute
	maxRefusedRequests = 60
)

// TestNeutronCredentialsRefused: the real Keystone refuses the manager's
// credentials (its user's password changed, which revokes its tokens) while
// 200 Networks wait to be created. The backend is found down once: one log
// line, one Warning Event, the metric at 0, every waiting Network
// Ready=False with the one message; requests to Keystone and Neutron over a
// minute stay bounded independently of the 200 Networks. With the password
// back, all of them converge without a restart.
func TestNeutronCredentialsRefused(t *testing.T) {
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	sample := versioned.NewForConfigOrDie(framework.Config(cfg))
	ns := framework.CreateNamespace(t, kube)
	real := neutrontest.Get(t)
	user := real.User(t)
	counter := real.NewProxy(t) // counts, injects nothing
	managedBy := neutrontest.UniqueManagedBy()
	real.CleanupManagedBy(t, managedBy)
	backend, err := neutron.New(ctx, neutron.Options{Getenv: neutrontest.Getenv(counter.Env(user.Env)), ManagedBy: managedBy})
	if err != nil {
		t.Fatal(err)
	}
	o := framework.ControllerOptions(ns, "network")
	o.NetworkBackend, o.NetworkBackendName = backend, "neutron"
	m := framework.StartManager(t, cfg, o)
	create := func(i int) {
		t.Helper()
		if _, err := sample.SamplecrdV1().Networks(ns).Create(ctx, testNetwork(ns, i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	readyCount := func(ctx context.Context, reason string) (int, string, error) {
		list, err := sample.SamplecrdV1().Networks(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, "", err
		}
		n, messages := 0, map[string]bool{}
		for _, net := range list.Items {
			c := meta.FindStatusCondition(net.Status.Conditions, samplecrdv1.ConditionReady)
			if c != nil && c.Reason == reason && c.ObservedGeneration == net.Generation {
				n++
				messages[c.Message] = true
			}
		}
		if reason != samplecrdv1.ReasonBackendUnavailable {
			return n, "", nil
		}
		// Waiting for the backend: all with the one message.
		var one string
		for msg := range messages {
			one = msg
		}
		if len(messages) > 1 {
			return n, "", fmt.Errorf("%d different %s messages", len(messages), reason)
		}
		return n, one, nil
	}

	// Working credentials: one Network converges.
	create(0)
	framework.Eventually(t, neutronSettle, "the first Network Ready", func(ctx context.Context) (bool, error) {
		n, _, err := readyCount(ctx, samplecrdv1.ReasonProvisioned)
		return n == 1, err
	})

	// A token of the same user, validated by Neutron after the manager's
	// last request (it is idle now): once Neutron refuses it, it refuses
	// the manager's too.
	probe, err := neutrontest.NewClient(user.Env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := networks.List(probe, networks.ListOpts{Name: "none"}).AllPages(ctx); err != nil {
		t.Fatal(err)
	}
	password := user.Env["OS_PASSWORD"]
	if err := user.SetPassword(ctx, password+"-changed"); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, neutronSettle, "Neutron refusing the user's tokens", func(ctx context.Context) (bool, error) {
		_, err := networks.List(probe, networks.ListOpts{Name: "none"}).AllPages(ctx)
		return err != nil, nil
	})

	// Refused: the Networks wait, the requests do not grow with them.
	routesBefore := counter.Counts()
	windowStart := time.Now()
	for i := 1; i <= refusedNetworks; i++ {
		create(i)
	}
	var message string
	framework.Eventually(t, neutronSettle, "every new Network waiting with the one message", func(ctx context.Context) (bool, error) {
		n, msg, err := readyCount(ctx, samplecrdv1.ReasonBackendUnavailable)
		message = msg
		return n == refusedNetworks, err
	})
	if !strings.Contains(message, "Keystone") || !strings.Contains(message, "401") {
		t.Errorf("the waiting Networks' message %q does not say Keystone refused the credentials", message)
	}
	if v, ok := framework.InProcessMetric("controller_network_backend_up", map[string]string{"backend": "neutron"}); !ok || v != 0 {
		t.Errorf("controller_network_backend_up{backend=neutron} = %v (present: %v), want 0", v, ok)
	}
	time.Sleep(time.Until(windowStart.Add(refusedWindow))) // the measurement window, not a wait for a condition
	routes := diff(counter.Counts(), routesBefore)
	refused := sum(routes)
	t.Logf("credentials refused, %d Networks waiting: %d requests to Keystone and Neutron in %v: %v", refusedNetworks, refused, refusedWindow, routes)
	if refused > maxRefusedRequests {
		t.Errorf("%d requests in %v while the credentials were refused, want at most %d (independent of the %d Networks)", refused, refusedWindow, maxRefusedRequests, refusedNetworks)
	}
	if n := m.CountLogs("The network backend is down"); n != 1 {
		t.Errorf("%d 'backend is down' log lines, want 1", n)
	}
	if n := m.CountLogs("Error syncing"); n != 0 {
		t.Errorf("%d 'Error syncing' lines: the Networks were retried one by one", n)
	}

	// The password back: everything converges, no restart.
	if err := user.SetPassword(ctx, password); err != nil {
		t.Fatal(err)
	}
	recovered := time.Now()
	framework.Eventually(t, 10*time.Minute, "every Network Ready once the credentials work", func(ctx context.Context) (bool, error) {
		n, _, err := readyCount(ctx, samplecrdv1.ReasonProvisioned)
		return n == refusedNetworks+1, err
	})
	t.Logf("all %d Networks Ready %v after the password was restored", refusedNetworks+1, time.Since(recovered).Round(time.Millisecond))
	if v, ok := framework.InProcessMetric("controller_network_backend_up", map[string]string{"backend": "neutron"}); !ok || v != 1 {
		t.Errorf("controller_network_backend_up{backend=neutron} = %v (present: %v), want 1", v, ok)
	}
	if n := m.CountLogs("The network backend answers again"); n != 1 {
		t.Errorf("%d 'answers again' log lines, want 1", n)
	}
	for reason, want := range map[string]string{network.ReasonBackendDown: corev1.EventTypeWarning, network.ReasonBackendUp: corev1.EventTypeNormal} {
		evs, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", reason).String()})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) != 1 || evs.Items[0].Count > 1 || evs.Items[0].Type != want {
			t.Errorf("%s Events: %+v, want one %s", reason, evs.Items, want)
		}
	}
	if nets := real.Networks(t, real.Admin(t), neutron.ManagedByTagPrefix+managedBy); len(nets) != refusedNetworks+1 {
		t.Errorf("%d Neutron networks of ours, want %d", len(nets), refusedNetworks+1)
	}
}

// diff returns the counts of after that grew since before.
func diff(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
