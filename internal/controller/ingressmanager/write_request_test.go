package ingressmanager

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	w := ingressWriter(client.NetworkingV1(), "mgr")
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

// TestCreatedAs: the sync a create's own event brings skips the comparison
// only for the object the create answered (same UID and ResourceVersion)
// and the Service version it was made from, once.
func TestCreatedAs(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "ingresses", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ing := action.(k8stesting.CreateAction).GetObject().(*networkingv1.Ingress).DeepCopy()
		ing.UID, ing.ResourceVersion = "uid-1", "7"
		return true, ing, nil
	})
	svc := service(nil, port("http", 80))
	svc.ResourceVersion = "3"
	desired := seedConstructIngress(svc)
	w := ingressWriter(client.NetworkingV1(), "mgr")
	live := func(uid types.UID, rv string) *networkingv1.Ingress {
		ing := desired.DeepCopy()
		ing.UID, ing.ResourceVersion = uid, rv
		return ing
	}
	edited := svc.DeepCopy()
	edited.ResourceVersion = "4"
	recreated := svc.DeepCopy()
	recreated.UID = "another-uid"
	for _, tc := range []struct {
		name string
		live *networkingv1.Ingress
		svc  *corev1.Service
		want bool
	}{
		{"the created object, the same Service version", live("uid-1", "7"), svc, true},
		{"changed since", live("uid-1", "8"), svc, false},
		{"another object", live("uid-2", "7"), svc, false},
		{"the Service changed since", live("uid-1", "7"), edited, false},
		{"another Service of the same name", live("uid-1", "7"), recreated, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := w.create(context.Background(), svc, desired.DeepCopy(), &report{}); err != nil {
				t.Fatal(err)
			}
			if got := w.createdAs(tc.live, tc.svc); got != tc.want {
				t.Errorf("createdAs = %v, want %v", got, tc.want)
			}
			if w.createdAs(live("uid-1", "7"), svc) {
				t.Error("createdAs = true a second time: the create was not forgotten")
			}
		})
	}
}
