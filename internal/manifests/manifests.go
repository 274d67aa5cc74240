// Package manifests renders the project's kustomizations (config/) without
// kustomize: it follows the small subset of kustomization.yaml the project
// uses (resources, namespace, labels, images) and fails on anything else, so that what
// it renders is what `kubectl apply -k` applies. `make manifests`, the
// deploy tests and the integration test framework (which applies the RBAC of
// config/default to the test API server) all render through it.
package manifests

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kustomizationFileNames are the names kustomize accepts, in its order.
var kustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Kustomization is the supported subset of kustomize's kustomization file.
// Any other field is an error (decoding is strict).
type Kustomization struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// Resources are files (one or more YAML documents) or directories
	// holding a kustomization, relative to the kustomization's directory.
	Resources []string `json:"resources,omitempty"`
	// Namespace is set on every namespaced object, names Namespace objects,
	// and follows ServiceAccounts into (Cluster)RoleBinding subjects.
	Namespace string `json:"namespace,omitempty"`
	// Labels are added to every object's metadata.labels.
	Labels []Label `json:"labels,omitempty"`
	// Images replace container images (`kustomize edit set image`).
	Images []Image `json:"images,omitempty"`
}

// Image is one entry of a kustomization's images: containers whose image is
// Name (with any tag or digest) get NewName (if set) and NewTag or Digest
// (if set; Digest wins).
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// Label is one entry of a kustomization's labels.
type Label struct {
	Pairs map[string]string `json:"pairs"`
	// IncludeTemplates also labels the Pod templates of workloads.
	IncludeTemplates bool `json:"includeTemplates,omitempty"`
	// IncludeSelectors is not supported: selectors are written out in the
	// resources (changing them after a first deploy breaks Deployments).
	IncludeSelectors bool `json:"includeSelectors,omitempty"`
}

// resource is one rendered object and the namespace it had in its file.
type resource struct {
	obj    *unstructured.Unstructured
	origNS string
}

// Render builds the kustomization in dir and returns its objects in the
// order `kustomize build` prints them (its legacy order: by kind as in
// kindOrder, then group, version, kind, namespace and name).
func Render(dir string) ([]*unstructured.Unstructured, error) {
	res, err := build(dir, nil)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(res, func(a, b *resource) int { return compare(a.obj, b.obj) })
	out := make([]*unstructured.Unstructured, len(res))
	for i, r := range res {
		out[i] = r.obj
	}
	return out, nil
}

// build renders the kustomization in dir; stack holds the directories being
// built, to report cycles.
func build(dir string, stack []string) ([]*resource, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("kustomization %s: %w", dir, err)
	}
	if slices.Contains(stack, abs) {
		return nil, fmt.Errorf("kustomization %s: cycle: %s", dir, strings.Join(append(stack, abs), " -> "))
	}
	stack = append(stack, abs)
	k, file, err := ReadKustomization(dir)
	if err != nil {
		return nil, err
	}
	var all []*resource
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: resource %q: %w", file, r, err)
		}
		var got []*resource
		if st.IsDir() {
			got, err = build(p, stack)
		} else {
			got, err = readResources(p)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
	}
	if err := checkDuplicates(all); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if k.Namespace != "" {
		setNamespace(all, k.Namespace)
	}
	for _, l := range k.Labels {
		addLabels(all, l)
	}
	for _, img := range k.Images {
		for _, r := range all {
			setImage(r.obj.Object, img)
		}
	}
	return all, nil
}

// ReadKustomization reads and strictly decodes the kustomization file of
// dir, returning it and its path.
func ReadKustomization(dir string) (*Kustomization, string, error) {
	var file string
	var data []byte
	for _, name := range kustomizationFileNames {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("reading %s: %w", p, err)
		}
		if file != "" {
			return nil, "", fmt.Errorf("%s: both %s and %s exist; keep one", dir, filepath.Base(file), name)
		}
		file, data = p, b
	}
	if file == "" {
		return nil, "", fmt.Errorf("%s: no kustomization file (%s)", dir, strings.Join(kustomizationFileNames, ", "))
	}
	k := &Kustomization{}
	if err := yaml.UnmarshalStrict(data, k); err != nil {
		return nil, "", fmt.Errorf("%s: %w (only resources, namespace, labels and images are supported: keep kustomizations simple, or extend internal/manifests)", file, err)
	}
	if k.Kind != "" && k.Kind != "Kustomization" {
		return nil, "", fmt.Errorf("%s: kind %q, want Kustomization", file, k.Kind)
	}
	for _, l := range k.Labels {
		if l.IncludeSelectors {
			return nil, "", fmt.Errorf("%s: labels with includeSelectors are not supported: write selectors in the resources", file)
		}
		if len(l.Pairs) == 0 {
			return nil, "", fmt.Errorf("%s: labels entry without pairs", file)
		}
	}
	for _, img := range k.Images {
		if img.Name == "" {
			return nil, "", fmt.Errorf("%s: images entry without name", file)
		}
	}
	return k, file, nil
}

// readResources reads every YAML document of a file as an object.
func readResources(path string) ([]*resource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	docs, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]*resource, 0, len(docs))
	for _, o := range docs {
		out = append(out, &resource{obj: o, origNS: o.GetNamespace()})
	}
	return out, nil
}

// Decode reads every non-empty YAML document of r as an object; each must
// have an apiVersion, a kind and a name.
func Decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 { // empty document, or only comments
			continue
		}
		o := &unstructured.Unstructured{Object: m}
		if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("document %d: apiVersion, kind and metadata.name are required", i)
		}
		out = append(out, o)
	}
}

func id(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	return fmt.Sprintf("%s %s/%s", schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, o.GetNamespace(), o.GetName())
}

func checkDuplicates(res []*resource) error {
	seen := map[string]bool{}
	for _, r := range res {
		k := id(r.obj)
		if seen[k] {
			return fmt.Errorf("%s is listed twice", k)
		}
		seen[k] = true
	}
	return nil
}

// clusterScoped are the kinds kustomize knows as cluster-scoped (every other
// kind is namespaced, as in kustomize).
var clusterScoped = map[string]bool{
	"APIService": true, "CSIDriver": true, "CSINode": true, "CertificateSigningRequest": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "ComponentStatus": true,
	"CustomResourceDefinition": true, "IngressClass": true, "MutatingWebhookConfiguration": true,
	"Namespace": true, "Node": true, "PersistentVolume": true, "PodSecurityPolicy": true,
	"PriorityClass": true, "RuntimeClass": true, "StorageClass": true, "VolumeAttachment": true,
	"ValidatingWebhookConfiguration": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true, "FlowSchema": true, "PriorityLevelConfiguration": true,
}

// IsClusterScoped tells whether kustomize treats kind as cluster-scoped.
func IsClusterScoped(kind string) bool { return clusterScoped[kind] }

// setNamespace applies a kustomization's namespace as kustomize does:
// metadata.namespace of namespaced objects, the name of v1 Namespace objects,
// and the namespace of (Cluster)RoleBinding subjects that name one of the
// ServiceAccounts being rendered (kustomize's name reference fix-up).
func setNamespace(res []*resource, ns string) {
	for _, r := range res {
		switch {
		case r.obj.GetKind() == "Namespace" && r.obj.GetAPIVersion() == "v1":
			r.obj.SetName(ns)
		case !IsClusterScoped(r.obj.GetKind()):
			r.obj.SetNamespace(ns)
		}
	}
	for _, r := range res {
		kind := r.obj.GetKind()
		if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
			continue
		}
		subjects, ok := r.obj.Object["subjects"].([]any)
		if !ok {
			continue
		}
		for _, s := range subjects {
			subject, ok := s.(map[string]any)
			if !ok || subject["kind"] != "ServiceAccount" {
				continue
			}
			if sa := findServiceAccount(res, subject); sa != nil {
				subject["namespace"] = sa.obj.GetNamespace()
			}
		}
	}
}

// findServiceAccount returns the rendered ServiceAccount a binding subject
// names: same name and, when the subject gives a namespace, the account's
// namespace in its file (default if none) or after the transformation.
func findServiceAccount(res []*resource, subject map[string]any) *resource {
	name, _ := subject["name"].(string)
	ns, _ := subject["namespace"].(string)
	for _, r := range res {
		if r.obj.GetKind() != "ServiceAccount" || r.obj.GetName() != name {
			continue
		}
		orig := r.origNS
		if orig == "" {
			orig = "default" // as kustomize sees an object without a namespace
		}
		if ns == "" || ns == orig || ns == r.obj.GetNamespace() {
			return r
		}
	}
	return nil
}

// templated are the kinds whose Pod template labels includeTemplates sets.
var templated = map[string]bool{
	"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true,
	"Job": true, "ReplicationController": true,
}

func addLabels(res []*resource, l Label) {
	for _, r := range res {
		r.obj.SetLabels(merge(r.obj.GetLabels(), l.Pairs))
		if !l.IncludeTemplates || !templated[r.obj.GetKind()] {
			continue
		}
		labels, _, _ := unstructured.NestedStringMap(r.obj.Object, "spec", "template", "metadata", "labels")
		_ = unstructured.SetNestedStringMap(r.obj.Object, merge(labels, l.Pairs), "spec", "template", "metadata", "labels")
	}
}

// setImage applies img to every container and init container found anywhere
// in obj (Pods, Pod templates, CronJob templates), as kustomize does.
func setImage(obj any, img Image) {
	switch v := obj.(type) {
	case map[string]any:
		for key, val := range v {
			if key == "containers" || key == "initContainers" {
				if list, ok := val.([]any); ok {
					for _, c := range list {
						if c, ok := c.(map[string]any); ok {
							if image, ok := c["image"].(string); ok {
								c["image"] = replaceImage(image, img)
							}
						}
					}
				}
			}
			setImage(val, img)
		}
	case []any:
		for _, e := range v {
			setImage(e, img)
		}
	}
}

// replaceImage returns image changed by img when its name is img.Name.
func replaceImage(image string, img Image) string {
	name, suffix := image, ""
	if i := strings.Index(name, "@"); i >= 0 {
		name, suffix = name[:i], name[i:]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, suffix = name[:i], name[i:]+suffix
	}
	if name != img.Name {
		return image
	}
	if img.NewName != "" {
		name = img.NewName
	}
	switch {
	case img.Digest != "":
		suffix = "@" + img.Digest
	case img.NewTag != "":
		suffix = ":" + img.NewTag
	}
	return name + suffix
}

func merge(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

// kindOrder is kustomize's "legacy" output order: kinds others depend on
// first (Namespaces, CRDs, accounts and RBAC before workloads), webhooks last.
var kindOrder = []string{
	"Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
	"ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding",
	"ClusterRoleBinding", "ConfigMap", "Secret", "Endpoints", "Service", "LimitRange",
	"PriorityClass", "PersistentVolume", "PersistentVolumeClaim", "Deployment",
	"StatefulSet", "CronJob", "PodDisruptionBudget",
}

var kindOrderLast = []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}

func compare(a, b *unstructured.Unstructured) int {
	if d := kindRank(a.GetKind()) - kindRank(b.GetKind()); d != 0 {
		return d
	}
	ga, gb := a.GroupVersionKind(), b.GroupVersionKind()
	return cmp.Or(
		cmp.Compare(ga.Group, gb.Group), cmp.Compare(ga.Version, gb.Version), cmp.Compare(ga.Kind, gb.Kind),
		cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
}

func kindRank(kind string) int {
	if i := slices.Index(kindOrder, kind); i >= 0 {
		return i
	}
	if i := slices.Index(kindOrderLast, kind); i >= 0 {
		return len(kindOrder) + 1 + i
	}
	return len(kindOrder)
}

// Marshal prints objects as a multi-document YAML stream.
func Marshal(objs []*unstructured.Unstructured) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("marshalling %s: %w", id(o), err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
