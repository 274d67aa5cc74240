package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestObjectKey(t *testing.T) {
	svc := func(ns, name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	tests := []struct {
		name string
		obj  any
		want string // "" means an error
	}{
		{"object", svc("ns", "web"), "ns/web"},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: svc("ns", "web")}, "ns/web"},
		{"tombstone without object", cache.DeletedFinalStateUnknown{Key: "ns/gone"}, "ns/gone"},
		{"tombstone with a bad key: its object's key", cache.DeletedFinalStateUnknown{Key: "a/b/c", Obj: svc("ns", "web")}, "ns/web"},
		{"tombstone with an empty key and no object", cache.DeletedFinalStateUnknown{}, ""},
		{"tombstone key without name", cache.DeletedFinalStateUnknown{Key: "ns/"}, ""},
		{"tombstone key without namespace", cache.DeletedFinalStateUnknown{Key: "web", Obj: svc("", "web")}, ""},
		{"tombstone around a tombstone", cache.DeletedFinalStateUnknown{Key: "x", Obj: cache.DeletedFinalStateUnknown{Key: "ns/web"}}, ""},
		{"nil", nil, ""},
		{"nil pointer", (*corev1.Service)(nil), ""},
		{"no metadata", "ns/web", ""},
		{"tombstone pointer", &cache.DeletedFinalStateUnknown{Key: "ns/web"}, ""},
		{"cluster-scoped", svc("", "web"), ""},
		{"upper case", svc("NS", "web"), ""},
		{"name with a slash", svc("ns", "a/b"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ObjectKey(tc.obj)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ObjectKey(%#v) = %q, want an error", tc.obj, key)
				}
				return
			}
			if err != nil || key.String() != tc.want {
				t.Fatalf("ObjectKey(%#v) = %q, %v; want %q", tc.obj, key, err, tc.want)
			}
		})
	}
}
