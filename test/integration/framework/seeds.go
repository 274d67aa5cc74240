package framework

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// SeedService returns a Service shaped like the ingress-manager's documented
// example my-nginx (port 80, selector app=<name>), named name, in ns, with
// annotations: the tests' Service whose Ingress the docs describe.
func SeedService(ns, name string, annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}, Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
		},
	}
}

// SeedNetwork is config/samples/network.yaml, the documented example, unchanged.
func SeedNetwork(t testing.TB) *samplecrdv1.Network {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "network.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var n samplecrdv1.Network
	if err := yaml.UnmarshalStrict(data, &n); err != nil {
		t.Fatalf("decoding config/samples/network.yaml: %v", err)
	}
	return &n
}
