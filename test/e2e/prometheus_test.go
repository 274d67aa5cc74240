package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/test/integration/framework"
	"github.com/kube-sample/controller-manager/test/integration/framework/prom"
)

// metricsService is config/default's Service in front of the replicas'
// metrics ports, which config/prometheus's ServiceMonitor selects.
const metricsService = "controller-manager-metrics"

// TestPrometheusScrapesTheDeployedManager: a real Prometheus (bin/prometheus,
// run by this test in the node's network namespace) scrapes each replica of
// the deployed manager, every endpoint of the metrics Service, over HTTPS
// with the token of a ServiceAccount bound to the metrics-reader
// ClusterRole, as docs/deploying.md tells users to and config/prometheus's
// ServiceMonitor does (the self-signed certificate not verified), with the
// shipped alert rules loaded: both targets up, one replica leading, and no
// alert firing in the steady state.
func TestPrometheusScrapesTheDeployedManager(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"}}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	framework.Eventually(t, timeout, "the API server to authorize Prometheus's ServiceAccount", func(ctx context.Context) (bool, error) {
		sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":prometheus",
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}

	// The Service's endpoints, as the ServiceMonitor's scrape finds them:
	// each ready replica's address and metrics port.
	var targets []prom.Target
	framework.Eventually(t, timeout, "two ready endpoints of Service "+metricsService, func(ctx context.Context) (bool, error) {
		list, err := client.DiscoveryV1().EndpointSlices(managerNamespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + metricsService})
		if err != nil {
			return false, err
		}
		targets = nil
		for _, s := range list.Items {
			port := int32(0)
			for _, p := range s.Ports {
				if p.Name != nil && *p.Name == "metrics" && p.Port != nil {
					port = *p.Port
				}
			}
			for _, e := range s.Endpoints {
				if port == 0 || !ptr.Deref(e.Conditions.Ready, false) || len(e.Addresses) == 0 || e.TargetRef == nil {
					continue
				}
				targets = append(targets, prom.Target{Job: metricsService, Addr: net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(port))),
					HTTPS: true, BearerTokenFile: tokenFile,
					Labels: map[string]string{"namespace": managerNamespace, "service": metricsService, "pod": e.TargetRef.Name}})
			}
		}
		if len(targets) != 2 {
			return false, fmt.Errorf("ready endpoints: %+v", targets)
		}
		return true, nil
	})
	rules, err := prom.RulesFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prom.Start(ctx, prom.Options{Dir: dir, Targets: targets, RuleFiles: []string{rules}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	framework.Eventually(t, timeout, "Prometheus to scrape both replicas", func(ctx context.Context) (bool, error) {
		health, err := p.Targets(ctx)
		if err != nil {
			return false, err
		}
		up := 0
		for _, h := range health {
			if h.Health == "up" {
				up++
			}
		}
		if up != 2 {
			return false, fmt.Errorf("targets: %+v", health)
		}
		return true, nil
	})
	for expr, want := range map[string]float64{
		`count(controller_manager_build_info{job="` + metricsService + `"})`:  2,
		`sum(controller_manager_is_leader{job="` + metricsService + `"})`:     1,
		`count(workqueue_depth{job="` + metricsService + `",name="network"})`: 2,
	} {
		framework.Eventually(t, timeout, fmt.Sprintf("%s = %v", expr, want), func(ctx context.Context) (bool, error) {
			got, err := p.Query(ctx, expr)
			if err != nil || len(got) != 1 || got[0].Value != want {
				return false, fmt.Errorf("%+v (%v)", got, err)
			}
			return true, nil
		})
	}
	// The steady state of the deployed manager: the rules evaluated on
	// what was scraped, nothing fires.
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.Evaluated(qctx, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	active, err := p.Alerts(qctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range active {
		if a.State == "firing" {
			t.Errorf("firing on the deployed manager in its steady state: %s", a)
		} else {
			t.Logf("pending (its for not over): %s", a)
		}
	}
	t.Logf("Prometheus scraped %d replicas over HTTPS with a metrics-reader token; alerts active: %d", len(targets), len(active))
}
