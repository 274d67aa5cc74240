package app

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func managed(names ...string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, n := range names {
		out = append(out, metav1.ManagedFieldsEntry{Manager: n, Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}})
	}
	return out
}

// TestCacheTransformService: a cached Service keeps what ingress-manager
// reads (identity, annotations, ports) and nothing else it could do without.
func TestCacheTransformService(t *testing.T) {
	ports := []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "ns", UID: "uid-1", ResourceVersion: "42", Generation: 1,
			Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{
				"ingress/http": "true", "ingress/host": "web.example.com", "team": "a",
				corev1.LastAppliedConfigAnnotation: `{"a whole":"copy"}`,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "uid-o"}},
			ManagedFields:   managed("kubectl", "controller-manager"),
		},
		Spec: corev1.ServiceSpec{
			Ports: ports, Selector: map[string]string{"app": "web"}, ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"},
			Type: corev1.ServiceTypeClusterIP, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
		},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}}},
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "ns", UID: "uid-1", ResourceVersion: "42", Generation: 1,
			Annotations:     map[string]string{"ingress/http": "true", "ingress/host": "web.example.com", "team": "a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "uid-o"}},
			ManagedFields:   managed("controller-manager"),
		},
		Spec: corev1.ServiceSpec{Ports: ports},
	}
	got, err := CacheTransform("controller-manager")(svc)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("cached Service =\n%#v\nwant\n%#v", got, want)
	}
}

// TestCacheTransformOthers: Ingresses and Pods only lose other writers'
// managedFields (and Pods the last-applied annotation); objects without
// metadata pass through.
func TestCacheTransformOthers(t *testing.T) {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"a": "b"},
			Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{}"},
			ManagedFields: managed("kubectl", "controller-manager")},
		Spec:   networkingv1.IngressSpec{IngressClassName: ptr.To("nginx")},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "1.2.3.4"}}}},
	}
	wantIng := ing.DeepCopy()
	wantIng.ManagedFields = managed("controller-manager")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "x": "y"}, ManagedFields: managed("kubelet")},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	wantPod := pod.DeepCopy()
	wantPod.ManagedFields = nil
	wantPod.Annotations = map[string]string{"x": "y"}

	transform := CacheTransform("controller-manager")
	for _, tc := range []struct{ in, want any }{{ing, wantIng}, {pod, wantPod}, {"not an object", "not an object"}} {
		got, err := transform(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("transform(%T) =\n%#v\nwant\n%#v", tc.in, got, tc.want)
		}
	}
}
