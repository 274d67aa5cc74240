package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstallComponentRBAC applies to the package's API server the RBAC
// objects that the kustomize Component component (a repository path, e.g.
// config/network-credentials) adds to config/default, rendered by
// kustomize from an overlay of both as a user writes it, waits until they
// are granted, and deletes them when t ends.
func InstallComponentRBAC(t testing.TB, component string) {
	t.Helper()
	objs, err := ManifestsWith(component)
	if err != nil {
		t.Fatal(err)
	}
	base, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	inBase := map[string]bool{}
	for _, o := range base {
		inBase[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
	}
	var added []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if !inBase[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] {
				added = append(added, o)
			}
		}
	}
	if len(added) == 0 {
		t.Fatalf("%s adds no RBAC object to config/default", component)
	}
	ctx := context.Background()
	if err := Apply(ctx, adminConfig, added, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dyn := dynamic.NewForConfigOrDie(adminConfig)
		for _, o := range added {
			gvr := o.GroupVersionKind().GroupVersion().WithResource(map[string]string{
				"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings"}[o.GetKind()])
			if err := dyn.Resource(gvr).Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})
}

// ManifestsWith returns the objects of config/default with the kustomize
// Components components (repository paths, e.g. config/prometheus) added,
// rendered by kustomize from an overlay of them as a user writes it.
func ManifestsWith(components ...string) ([]*unstructured.Unstructured, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "overlay")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rel := func(p string) (string, error) { return filepath.Rel(dir, filepath.Join(root, p)) }
	base, err := rel("config/default")
	if err != nil {
		return nil, err
	}
	var comps []string
	for _, c := range components {
		r, err := rel(c)
		if err != nil {
			return nil, err
		}
		comps = append(comps, r)
	}
	overlay := fmt.Sprintf("resources: [%s]\ncomponents: [%s]\n", base, strings.Join(comps, ", "))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o600); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionUnspecified
	resources, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("rendering config/default with %s: %w", strings.Join(components, ", "), err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		b, err := r.MarshalJSON()
		o := &unstructured.Unstructured{}
		if err == nil {
			err = o.UnmarshalJSON(b)
		}
		if err != nil {
			return nil, fmt.Errorf("rendering config/default with %s: %s: %w", strings.Join(components, ", "), r.CurId(), err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}
