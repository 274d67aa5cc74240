package ingressmanager

import (
	"context"
	"encoding/json"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestApplyIngressRequest: applyIngress sends the same server-side apply as
// the typed client (patch type, body, field manager, force), with field
// validation off.
func TestApplyIngressRequest(t *testing.T) {
	client := fake.NewClientset()
	var got k8stesting.PatchActionImpl
	client.PrependReactor("patch", "ingresses", func(action k8stesting.Action) (bool, runtime.Object, error) {
		got = action.(k8stesting.PatchActionImpl)
		return true, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: got.Name, Namespace: got.Namespace}}, nil
	})
	ac := ApplyConfiguration(seedConstructIngress(service(nil, port("http", 80))))
	out, err := applyIngress(context.Background(), client, ac, metav1.ApplyOptions{FieldManager: "mgr", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(ac)
	if got.Name != *ac.Name || got.Namespace != *ac.Namespace || got.PatchType != types.ApplyPatchType || string(got.Patch) != string(want) {
		t.Errorf("request = %s %s/%s %s, want %s %s/%s %s", got.PatchType, got.Namespace, got.Name, got.Patch, types.ApplyPatchType, *ac.Namespace, *ac.Name, want)
	}
	opts := got.PatchOptions
	if opts.FieldManager != "mgr" || opts.Force == nil || !*opts.Force || opts.FieldValidation != metav1.FieldValidationIgnore {
		t.Errorf("patch options = %+v, want field manager mgr, force, field validation Ignore", opts)
	}
	if out == nil || out.Name != *ac.Name {
		t.Errorf("returned %v, want the server's Ingress", out)
	}

	noNamespace := &networkingv1ac.IngressApplyConfiguration{ObjectMetaApplyConfiguration: &metav1ac.ObjectMetaApplyConfiguration{Name: ptr.To("x")}}
	for _, bad := range []*networkingv1ac.IngressApplyConfiguration{nil, {}, noNamespace} {
		if _, err := applyIngress(context.Background(), client, bad, metav1.ApplyOptions{}); err == nil {
			t.Errorf("applyIngress(%v) without name or namespace: no error", bad)
		}
	}
}
