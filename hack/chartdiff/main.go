// Command chartdiff keeps the Helm chart (charts/controller-manager) and
// config/default from drifting apart.
//
// With -rendered FILE (what `helm template --include-crds` printed of the
// chart with its default values) it compares those objects with
// config/default rendered by kustomize: the same objects (by group, kind,
// namespace and name), each with the same content, up to what Helm alone
// adds (helmOnlyLabels, helmOnlyAnnotations). Each difference is printed,
// and the exit code is 1. hack/verify-chart.sh runs it in `make verify`.
// With -image IMAGE as well, config/default's manager image is IMAGE, as
// `make deploy IMG=IMAGE` sets it: hack/release.sh checks the release's
// install.yaml and packaged chart so.
//
// With -components as well (repository paths of kustomize Components,
// comma-separated), the objects compared with are config/default's with
// those Components added: hack/verify-chart.sh renders the chart with its
// monitoring values on and compares it so with config/prometheus.
//
// With -write-crds DIR it writes the CRDs of config/default, as kustomize
// renders them, into DIR (the chart's crds/, which Helm installs verbatim
// and never templates), removing any other file there; with -write-rules
// FILE, the spec of config/prometheus's PrometheusRule as a plain rule file
// (the chart's files/alerts.yaml, which its PrometheusRule reads untemplated):
// `make chart-crds` does both.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// helmOnlyLabels are the labels a Helm chart puts on its objects and a
// kustomization does not: who manages the object, which release, which
// chart and app version.
var helmOnlyLabels = []string{
	"helm.sh/chart",
	"app.kubernetes.io/managed-by",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
}

// helmOnlyAnnotations are annotations only Helm reads: the chart keeps its
// Namespace on uninstall.
var helmOnlyAnnotations = []string{"helm.sh/resource-policy"}

func main() {
	rendered := flag.String("rendered", "", "File holding the chart as `helm template --include-crds` renders it with default values; compared with config/default.")
	writeCRDs := flag.String("write-crds", "", "Write the CRDs of config/default into this directory (the chart's crds/).")
	writeRules := flag.String("write-rules", "", "Write the alert rules of config/prometheus, as a plain Prometheus rule file, into this file (the chart's files/alerts.yaml).")
	image := flag.String("image", "", "With -rendered: the image config/default's manager runs, as `make deploy IMG=...` sets it.")
	components := flag.String("components", "", "With -rendered: kustomize Components (comma-separated repository paths) added to config/default before comparing.")
	flag.Parse()
	var err error
	switch {
	case *rendered != "" && *writeCRDs == "" && *writeRules == "":
		var comps []string
		if *components != "" {
			comps = strings.Split(*components, ",")
		}
		err = compareWith(*rendered, *image, comps)
	case *rendered == "" && (*writeCRDs != "" || *writeRules != ""):
		if *writeCRDs != "" {
			err = writeCRDFiles(*writeCRDs)
		}
		if err == nil && *writeRules != "" {
			err = writeRulesFile(*writeRules)
		}
	default:
		err = errors.New("give one of -rendered FILE, or -write-crds DIR and/or -write-rules FILE")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartdiff:", err)
		os.Exit(1)
	}
}

// managerImage is the image config/ names the manager's; `make deploy`
// and kustomize's images entry replace it.
const managerImage = "controller-manager"

func compareWith(file, image string, components []string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	chart, err := decodeAll(f)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	kustomized, err := framework.Manifests()
	side := "config/default"
	if len(components) > 0 {
		kustomized, err = framework.ManifestsWith(components...)
		side += " with " + strings.Join(components, ", ")
	}
	if err != nil {
		return err
	}
	if image != "" {
		if err := setImage(kustomized, image); err != nil {
			return err
		}
	}
	diffs, err := compare(kustomized, chart)
	if err != nil {
		return err
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s and %s (kustomize) differ:\n%s\n"+
			"Change both together: config/ and the chart's templates or values.yaml; "+
			"`make chart-crds` rewrites charts/controller-manager/crds from config/crd and files/alerts.yaml from config/prometheus", file, side, strings.Join(diffs, "\n"))
	}
	fmt.Printf("chartdiff: %s holds the %d objects of %s\n", file, len(chart), side)
	return nil
}

// setImage makes every container of objs that runs managerImage run image.
func setImage(objs []*unstructured.Unstructured, image string) error {
	n := 0
	for _, o := range objs {
		containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return fmt.Errorf("%s: %w", key(o), err)
		}
		for _, c := range containers {
			if c, ok := c.(map[string]any); ok && c["image"] != nil {
				name, _, _ := strings.Cut(fmt.Sprint(c["image"]), ":")
				if name == managerImage {
					c["image"] = image
					n++
				}
			}
		}
		if len(containers) > 0 {
			if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
				return fmt.Errorf("%s: %w", key(o), err)
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("no container of config/default runs %s", managerImage)
	}
	return nil
}

// decodeAll reads every YAML document of r, skipping empty ones. Through
// JSON into unstructured, as framework.Manifests decodes config/default, so
// that numbers have the same Go types on both sides.
func decodeAll(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
}

// key names an object: its group, kind, namespace and name.
func key(o *unstructured.Unstructured) string {
	gk := schema.FromAPIVersionAndKind(o.GetAPIVersion(), o.GetKind()).GroupKind()
	name := o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return gk.String() + " " + name
}

// compare says how the chart's objects differ from config/default's: one
// entry per object only one side has, or whose content differs (a diff,
// config/default's lines marked -, the chart's +).
func compare(kustomized, chart []*unstructured.Unstructured) ([]string, error) {
	want, err := index(kustomized, "config/default")
	if err != nil {
		return nil, err
	}
	got, err := index(chart, "the rendering")
	if err != nil {
		return nil, err
	}
	var diffs []string
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		if !ok {
			diffs = append(diffs, "only in config/default: "+k)
			continue
		}
		w := normalize(want[k])
		g = normalize(g)
		if !equality.Semantic.DeepEqual(w.Object, g.Object) {
			diffs = append(diffs, fmt.Sprintf("%s differs (- config/default, + the rendering):\n%s", k, diff.Diff(w.Object, g.Object)))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "only in the rendering: "+k)
		}
	}
	return diffs, nil
}

func index(objs []*unstructured.Unstructured, side string) (map[string]*unstructured.Unstructured, error) {
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		k := key(o)
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%s renders %s twice", side, k)
		}
		m[k] = o
	}
	return m, nil
}

func sortedKeys(m map[string]*unstructured.Unstructured) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// normalize returns a copy of o without what Helm alone adds: its labels
// and annotations, and the release's label in a ServiceMonitor's selector.
func normalize(o *unstructured.Unstructured) *unstructured.Unstructured {
	o = o.DeepCopy()
	if o.GetKind() == "ServiceMonitor" {
		unstructured.RemoveNestedField(o.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/instance")
	}
	if labels := o.GetLabels(); labels != nil {
		for _, l := range helmOnlyLabels {
			delete(labels, l)
		}
		if len(labels) == 0 {
			labels = nil // removes the field
		}
		o.SetLabels(labels)
	}
	if ann := o.GetAnnotations(); ann != nil {
		for _, a := range helmOnlyAnnotations {
			delete(ann, a)
		}
		if len(ann) == 0 {
			ann = nil
		}
		o.SetAnnotations(ann)
	}
	return o
}

const crdHeader = "# Generated by `make chart-crds` from config/default (kustomize) for Helm's crds/:\n" +
	"# installed before the templates, never upgraded nor deleted by Helm.\n" +
	"# Do not edit: `make verify` fails when it differs from config/crd.\n"

func writeCRDFiles(dir string) error {
	objs, err := framework.Manifests()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", key(o), err)
		}
		name := o.GetName() + ".yaml"
		keep[name] = true
		if err := os.WriteFile(filepath.Join(dir, name), append([]byte(crdHeader), b...), 0o644); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

const rulesHeader = "# Generated by `make chart-crds` from the spec of config/prometheus/prometheus_rule.yaml:\n" +
	"# the manager's alert rules, a plain Prometheus rule file, which the chart's\n" +
	"# PrometheusRule reads untemplated. Do not edit: `make verify` fails when it differs.\n"

func writeRulesFile(file string) error {
	b, err := framework.AlertRulesFile()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, append([]byte(rulesHeader), b...), 0o644)
}
