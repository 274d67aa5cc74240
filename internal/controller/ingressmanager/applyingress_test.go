package ingressmanager

import (
	"context"
	"encoding/json"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestApplyRequest: the writer's apply sends the same server-side apply as
// the typed client (patch type, body, field manager, force), with field
// validation off.
func TestApplyRequest(t *testing.T) {
	client := fake.NewClientset()
	var got k8stesting.PatchActionImpl
	client.PrependReactor("patch", "ingresses", func(action k8stesting.Action) (bool, runtime.Object, error) {
		got = action.(k8stesting.PatchActionImpl)
		return true, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: got.Name, Namespace: got.Namespace}}, nil
	})
	ac := mustApplyConfiguration(t, seedConstructIngress(service(nil, port("http", 80))))
	w := ingressWriter(client.NetworkingV1(), "mgr", nil)
	if err := w.apply(context.Background(), *ac.Namespace, *ac.Name, ac); err != nil {
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
}
