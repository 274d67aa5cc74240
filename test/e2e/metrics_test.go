package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// scraperImage is the tests' client Pod image (test/e2e/scraper), built and
// loaded into the node by TestMain.
const scraperImage = "e2e-scraper:latest"

// metricsReaderRole is config/rbac's ClusterRole allowed to GET /metrics.
const metricsReaderRole = "controller-manager-metrics-reader"

// TestMetricsFromAnotherPod: a client Pod in another namespace scrapes
// /metrics over HTTPS through the metrics Service (kube-proxy's DNAT to a
// replica): with the token of a ServiceAccount bound to the metrics-reader
// ClusterRole it gets 200 and the controllers' series; with an unbound
// ServiceAccount's token 403; with no token 401.
func TestMetricsFromAnotherPod(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t)
	svc, err := client.CoreV1().Services(managerNamespace).Get(ctx, "controller-manager-metrics", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://%s:8443/metrics", svc.Spec.ClusterIP)

	// The NetworkPolicy admits the metrics port, so that on a network
	// plugin that enforces it the scrape works the same. The node's plugin
	// (bridge + host-local) enforces no NetworkPolicy: this test does not
	// show the policy filtering anything.
	np, err := client.NetworkingV1().NetworkPolicies(managerNamespace).Get(ctx, "controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the NetworkPolicy of config/default: %v", err)
	}
	if !slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
		return slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.String() == "metrics" })
	}) {
		t.Fatalf("NetworkPolicy %s does not admit the metrics port: %+v", np.Name, np.Spec.Ingress)
	}
	t.Logf("NetworkPolicy %s is applied and admits port metrics; the node's CNI (bridge) does not enforce NetworkPolicy", np.Name)

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"}}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "metrics-reader"}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	// The manager caches a denial for a while: scrape once the API server
	// authorizes the binding.
	framework.Eventually(t, timeout, "the API server to authorize the bound ServiceAccount", func(ctx context.Context) (bool, error) {
		sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + ns + ":metrics-reader",
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})

	for _, c := range []struct {
		pod, serviceAccount string
		token               bool
		status              string
	}{
		// 403 for an unbound account and 401 without a token are the
		// integration suite's (test/integration/metrics TestSecureMetrics,
		// the same RBAC and the API server's own reviews).
		{"bound", "metrics-reader", true, "200"},
	} {
		out := runScraper(t, ns, c.pod, c.serviceAccount, c.token, url)
		status := ""
		for _, line := range strings.Split(out, "\n") {
			if s, ok := strings.CutPrefix(line, "status: "); ok {
				status = s
			}
		}
		t.Logf("scrape as %s (token: %t): status %s", c.serviceAccount, c.token, status)
		if status != c.status {
			t.Errorf("scrape as ServiceAccount %s (token: %t): got %q, want status %s", c.serviceAccount, c.token, out, c.status)
		}
		if c.status == "200" {
			// The Service sends the scrape to either replica: the series
			// both have (the standby has reconciled nothing yet, and
			// controller_reconcile_total has no sample there).
			for _, series := range []string{"controller_manager_is_leader", "leader_election_master_status", "workqueue_depth"} {
				if !strings.Contains(out, " "+series) {
					t.Errorf("the 200 response has no %s series: %s", series, out)
				}
			}
		}
	}
}

// runScraper runs the scraper image as Pod name with the ServiceAccount
// given (its token mounted and sent only when token) against url, and
// returns its output once it has succeeded.
func runScraper(t *testing.T, ns, name, serviceAccount string, token bool, url string) string {
	t.Helper()
	ctx := context.Background()
	args := []string{"-url=" + url}
	if token {
		args = append(args, "-token-file=/var/run/secrets/kubernetes.io/serviceaccount/token")
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName:           serviceAccount,
			AutomountServiceAccountToken: ptr.To(token),
			RestartPolicy:                corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "scraper", Image: scraperImage, ImagePullPolicy: corev1.PullNever, Args: args,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, rolloutTimeout, "the scraper Pod "+name+" to succeed", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			return true, nil
		case corev1.PodFailed:
			logs, _ := client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
			t.Fatalf("the scraper Pod %s failed: %s; its log: %s", name, describePods([]corev1.Pod{*p}), logs)
		}
		return false, fmt.Errorf("%s", describePods([]corev1.Pod{*p}))
	})
	logs, err := client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(logs)
}
