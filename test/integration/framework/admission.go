package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// DenyCreates makes the API server refuse every create of resource (in API
// group group) in namespace ns until the test ends, as an admission webhook
// or policy of a cluster may: a ValidatingAdmissionPolicy and its binding
// (admissionregistration.k8s.io/v1, served by kube-apiserver itself; no
// webhook server). The API server takes a new policy up from its own
// watch, a moment after the write: DenyCreates returns once probe, a
// dry-run create of such an object (dry runs are admitted like any
// request), is refused by the policy.
func DenyCreates(t testing.TB, client kubernetes.Interface, ns, group, resource string, probe func(ctx context.Context) error) {
	t.Helper()
	ctx := context.Background()
	name := "deny-create-" + resource + "-" + ns
	message := fmt.Sprintf("the test refuses every create of %s in namespace %s", resource, ns)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{group},
							APIVersions: []string{"*"},
							Resources:   []string{resource},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			},
		},
	}
	api := client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ValidatingAdmissionPolicy %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ValidatingAdmissionPolicyBinding %s: %v", name, err)
		}
		if err := api.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ValidatingAdmissionPolicy %s: %v", name, err)
		}
	})
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ValidatingAdmissionPolicyBinding %s: %v", name, err)
	}
	Eventually(t, Timeout, fmt.Sprintf("the API server refuses creates of %s in %s", resource, ns), func(ctx context.Context) (bool, error) {
		err := probe(ctx)
		switch {
		case err == nil:
			return false, errors.New("a dry-run create was admitted")
		case !strings.Contains(err.Error(), message):
			return false, err
		}
		return true, nil
	})
}
