package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCompare(t *testing.T) {
	obj := func(kind, name string, labels map[string]any, spec map[string]any) *unstructured.Unstructured {
		meta := map[string]any{"name": name, "namespace": "ns"}
		if labels != nil {
			meta["labels"] = labels
		}
		o := map[string]any{"apiVersion": "apps/v1", "kind": kind, "metadata": meta}
		if spec != nil {
			o["spec"] = spec
		}
		return &unstructured.Unstructured{Object: o}
	}
	helmLabels := map[string]any{
		"app.kubernetes.io/part-of": "cm", "helm.sh/chart": "cm-0.1.0", "app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/instance": "cm", "app.kubernetes.io/version": "latest",
	}
	for _, tc := range []struct {
		name             string
		kustomize, chart []*unstructured.Unstructured
		want             []string // a substring of each difference, in order
	}{{
		name:      "the labels Helm adds are ignored",
		kustomize: []*unstructured.Unstructured{obj("Deployment", "d", map[string]any{"app.kubernetes.io/part-of": "cm"}, nil)},
		chart:     []*unstructured.Unstructured{obj("Deployment", "d", helmLabels, nil)},
	}, {
		name:      "an object whose only labels are Helm's equals one without labels",
		kustomize: []*unstructured.Unstructured{obj("Deployment", "d", nil, nil)},
		chart:     []*unstructured.Unstructured{obj("Deployment", "d", map[string]any{"helm.sh/chart": "cm-0.1.0"}, nil)},
	}, {
		name:      "any other label differs",
		kustomize: []*unstructured.Unstructured{obj("Deployment", "d", map[string]any{"app.kubernetes.io/part-of": "cm"}, nil)},
		chart:     []*unstructured.Unstructured{obj("Deployment", "d", map[string]any{"app.kubernetes.io/part-of": "other"}, nil)},
		want:      []string{`Deployment.apps ns/d differs`},
	}, {
		name:      "a spec field differs, integers compared by value",
		kustomize: []*unstructured.Unstructured{obj("Deployment", "d", nil, map[string]any{"replicas": int64(2)})},
		chart:     []*unstructured.Unstructured{obj("Deployment", "d", nil, map[string]any{"replicas": int64(3)})},
		want:      []string{`+  "replicas": 3`},
	}, {
		name: "a ServiceMonitor's selector may add the release's label",
		kustomize: []*unstructured.Unstructured{obj("ServiceMonitor", "sm", nil, map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/part-of": "cm"}}})},
		chart: []*unstructured.Unstructured{obj("ServiceMonitor", "sm", nil, map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/part-of": "cm", "app.kubernetes.io/instance": "cm"}}})},
	}, {
		name: "any other label of a ServiceMonitor's selector differs",
		kustomize: []*unstructured.Unstructured{obj("ServiceMonitor", "sm", nil, map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/part-of": "cm"}}})},
		chart: []*unstructured.Unstructured{obj("ServiceMonitor", "sm", nil, map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/part-of": "cm", "team": "a"}}})},
		want: []string{`ServiceMonitor.apps ns/sm differs`},
	}, {
		name:      "an object only one side has",
		kustomize: []*unstructured.Unstructured{obj("Deployment", "a", nil, nil)},
		chart:     []*unstructured.Unstructured{obj("StatefulSet", "a", nil, nil)},
		want:      []string{"only in config/default: Deployment.apps ns/a", "only in the rendering: StatefulSet.apps ns/a"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			diffs, err := compare(tc.kustomize, tc.chart)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) != len(tc.want) {
				t.Fatalf("got %d differences, want %d: %q", len(diffs), len(tc.want), diffs)
			}
			for i, w := range tc.want {
				if !strings.Contains(diffs[i], w) {
					t.Errorf("difference %d is %q, want it to contain %q", i, diffs[i], w)
				}
			}
		})
	}
}

func TestCompareRefusesDuplicates(t *testing.T) {
	d := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s", "namespace": "ns"}}}
	if _, err := compare(nil, []*unstructured.Unstructured{d, d.DeepCopy()}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("got %v, want an error naming the object rendered twice", err)
	}
}
