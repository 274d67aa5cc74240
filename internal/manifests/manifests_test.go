package manifests

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// tree writes files (path -> content) under a temporary directory and
// returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// mustRender renders the kustomization at the root of files.
func mustRender(t *testing.T, files map[string]string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Render(tree(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in %v", kind, name, ids(objs))
	return nil
}

func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, id(o))
	}
	return out
}

const base = `
apiVersion: v1
kind: ServiceAccount
metadata:
  name: sa
---
# a comment-only document is skipped
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: crb
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cr}
subjects:
- {kind: ServiceAccount, name: sa}
- {kind: ServiceAccount, name: sa, namespace: default}
- {kind: ServiceAccount, name: sa, namespace: placeholder}
- {kind: ServiceAccount, name: someone-else, namespace: kube-system}
- {kind: User, name: sa}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cr
rules: []
`

func TestRenderNamespaceAndLabels(t *testing.T) {
	dir := tree(t, map[string]string{
		"default/kustomization.yaml": `
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: prod
labels:
- pairs: {team: a}
  includeTemplates: true
- pairs: {tier: b}
resources:
- ../rbac
- manager.yaml
`,
		"rbac/kustomization.yaml": "resources: [rbac.yaml]\n",
		"rbac/rbac.yaml":          base,
		"default/manager.yaml": `
apiVersion: v1
kind: Namespace
metadata: {name: system, labels: {pod-security.kubernetes.io/enforce: restricted}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: manager, namespace: elsewhere}
spec:
  selector: {matchLabels: {app: m}}
  template:
    metadata: {labels: {app: m}}
    spec: {containers: [{name: m, image: m}]}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
`,
	})
	objs, err := Render(filepath.Join(dir, "default"))
	if err != nil {
		t.Fatal(err)
	}
	// kustomize's legacy order: Namespace, CRD, ServiceAccount, ClusterRole,
	// ClusterRoleBinding, Deployment.
	want := []string{
		"Namespace /prod",
		"CustomResourceDefinition.apiextensions.k8s.io /things.example.com",
		"ServiceAccount prod/sa",
		"ClusterRole.rbac.authorization.k8s.io /cr",
		"ClusterRoleBinding.rbac.authorization.k8s.io /crb",
		"Deployment.apps prod/manager",
	}
	if got := ids(objs); !reflect.DeepEqual(got, want) {
		t.Errorf("rendered\n%v\nwant\n%v", got, want)
	}

	ns := find(t, objs, "Namespace", "prod")
	if got := ns.GetLabels(); !reflect.DeepEqual(got, map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "team": "a", "tier": "b"}) {
		t.Errorf("Namespace labels = %v", got)
	}
	crd := find(t, objs, "CustomResourceDefinition", "things.example.com")
	if crd.GetNamespace() != "" {
		t.Errorf("cluster-scoped CRD got namespace %q", crd.GetNamespace())
	}
	crb := find(t, objs, "ClusterRoleBinding", "crb")
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	// As kubectl kustomize (v5.8.1) renders them.
	wantSubjects := []any{
		map[string]any{"kind": "ServiceAccount", "name": "sa", "namespace": "prod"},
		map[string]any{"kind": "ServiceAccount", "name": "sa", "namespace": "prod"},
		// Neither the account's namespace in its file nor its new one.
		map[string]any{"kind": "ServiceAccount", "name": "sa", "namespace": "placeholder"},
		// Not one of the rendered accounts: left alone.
		map[string]any{"kind": "ServiceAccount", "name": "someone-else", "namespace": "kube-system"},
		map[string]any{"kind": "User", "name": "sa"},
	}
	if !reflect.DeepEqual(subjects, wantSubjects) {
		t.Errorf("subjects = %v, want %v", subjects, wantSubjects)
	}

	d := find(t, objs, "Deployment", "manager")
	if got := d.GetLabels(); !reflect.DeepEqual(got, map[string]string{"team": "a", "tier": "b"}) {
		t.Errorf("Deployment labels = %v", got)
	}
	tpl, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	if !reflect.DeepEqual(tpl, map[string]string{"app": "m", "team": "a"}) {
		t.Errorf("template labels = %v (only includeTemplates labels belong there)", tpl)
	}
	sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
	if !reflect.DeepEqual(sel, map[string]string{"app": "m"}) {
		t.Errorf("selector = %v, must not change", sel)
	}
}

func TestRenderWithoutNamespaceKeepsObjects(t *testing.T) {
	objs := mustRender(t, map[string]string{
		"kustomization.yml": "resources: [rbac.yaml]\n",
		"rbac.yaml":         base,
	})
	sa := find(t, objs, "ServiceAccount", "sa")
	if sa.GetNamespace() != "" || sa.GetLabels() != nil {
		t.Errorf("ServiceAccount changed without namespace or labels: %v", sa.Object)
	}
	subjects, _, _ := unstructured.NestedSlice(find(t, objs, "ClusterRoleBinding", "crb").Object, "subjects")
	if ns := subjects[2].(map[string]any)["namespace"]; ns != "placeholder" {
		t.Errorf("subject namespace = %v, want it untouched", ns)
	}
}

func TestRenderErrors(t *testing.T) {
	sa := "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}\n"
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
	}{
		"no kustomization": {
			files: map[string]string{"x.yaml": sa},
			want:  "no kustomization file",
		},
		"two kustomization files": {
			files: map[string]string{"kustomization.yaml": "resources: []\n", "kustomization.yml": "resources: []\n"},
			want:  "keep one",
		},
		"unsupported field": {
			files: map[string]string{"kustomization.yaml": "resources: [x.yaml]\npatches: [{path: p.yaml}]\n", "x.yaml": sa},
			want:  `unknown field "patches"`,
		},
		"includeSelectors": {
			files: map[string]string{"kustomization.yaml": "labels: [{pairs: {a: b}, includeSelectors: true}]\n"},
			want:  "includeSelectors are not supported",
		},
		"image without name": {
			files: map[string]string{"kustomization.yaml": "images: [{newTag: v1}]\n"},
			want:  "images entry without name",
		},
		"labels without pairs": {
			files: map[string]string{"kustomization.yaml": "labels: [{includeTemplates: true}]\n"},
			want:  "labels entry without pairs",
		},
		"wrong kind": {
			files: map[string]string{"kustomization.yaml": "kind: Component\n"},
			want:  `kind "Component"`,
		},
		"missing resource": {
			files: map[string]string{"kustomization.yaml": "resources: [missing.yaml]\n"},
			want:  `resource "missing.yaml"`,
		},
		"duplicate": {
			files: map[string]string{"kustomization.yaml": "resources: [x.yaml, y.yaml]\n", "x.yaml": sa, "y.yaml": sa},
			want:  "ServiceAccount /sa is listed twice",
		},
		"object without a name": {
			files: map[string]string{"kustomization.yaml": "resources: [x.yaml]\n", "x.yaml": "apiVersion: v1\nkind: ConfigMap\n"},
			want:  "metadata.name are required",
		},
		"bad yaml": {
			files: map[string]string{"kustomization.yaml": "resources: [x.yaml]\n", "x.yaml": "a: [\n"},
			want:  "document 0",
		},
		"cycle": {
			files: map[string]string{"kustomization.yaml": "resources: [sub]\n", "sub/kustomization.yaml": "resources: [..]\n"},
			want:  "cycle",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Render(tree(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	objs := mustRender(t, map[string]string{
		"kustomization.yaml": "namespace: n\nresources: [rbac.yaml]\n",
		"rbac.yaml":          base,
	})
	out, err := Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "\n---\n"); n != len(objs)-1 {
		t.Errorf("%d separators for %d objects:\n%s", n, len(objs), out)
	}
	back, err := Decode(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids(back), ids(objs)) {
		t.Fatalf("decoded %v, want %v", ids(back), ids(objs))
	}
	for i := range objs {
		if !reflect.DeepEqual(back[i].Object, objs[i].Object) {
			t.Errorf("object %d changed in the round trip:\n%v\n%v", i, back[i].Object, objs[i].Object)
		}
	}
}

// TestRenderProjectConfig renders the project's own kustomizations: each must
// stay within the supported subset.
func TestRenderProjectConfig(t *testing.T) {
	for _, dir := range []string{"crd", "rbac", "manager", "default"} {
		objs, err := Render(filepath.Join("..", "..", "config", dir))
		if err != nil {
			t.Errorf("config/%s: %v", dir, err)
			continue
		}
		if len(objs) == 0 {
			t.Errorf("config/%s renders nothing", dir)
		}
	}
}

func TestRenderImages(t *testing.T) {
	objs := mustRender(t, map[string]string{
		"kustomization.yaml": `
resources: [w.yaml]
images:
- {name: controller-manager, newName: registry.example.com/cm, newTag: v1.2.3}
- {name: registry.k8s.io/pause, digest: "sha256:0123"}
- {name: localhost:5000/tool, newTag: "2"}
`,
		"w.yaml": `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      initContainers: [{name: i, image: "registry.k8s.io/pause:3.10"}]
      containers:
      - {name: a, image: controller-manager}
      - {name: b, image: "controller-manager:latest"}
      - {name: c, image: "controller-manager-other:latest"}
      - {name: d, image: "localhost:5000/tool"}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: a, image: "controller-manager@sha256:abcd"}]
`,
	})
	images := func(o *unstructured.Unstructured, path ...string) []string {
		list, _, _ := unstructured.NestedSlice(o.Object, path...)
		var out []string
		for _, c := range list {
			out = append(out, c.(map[string]any)["image"].(string))
		}
		return out
	}
	d := find(t, objs, "Deployment", "d")
	// As kubectl kustomize (v5.8.1) renders them.
	if got, want := images(d, "spec", "template", "spec", "containers"), []string{
		"registry.example.com/cm:v1.2.3", "registry.example.com/cm:v1.2.3", "controller-manager-other:latest", "localhost:5000/tool:2",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("containers = %v, want %v", got, want)
	}
	if got, want := images(d, "spec", "template", "spec", "initContainers"), []string{"registry.k8s.io/pause@sha256:0123"}; !reflect.DeepEqual(got, want) {
		t.Errorf("initContainers = %v, want %v", got, want)
	}
	c := find(t, objs, "CronJob", "c")
	if got, want := images(c, "spec", "jobTemplate", "spec", "template", "spec", "containers"), []string{"registry.example.com/cm:v1.2.3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("CronJob containers = %v, want %v", got, want)
	}
}
