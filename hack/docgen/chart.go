package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// chartValues writes docs/reference/chart-values.md: every value of the Helm
// chart, its default and the comment above it in values.yaml. A value
// without a comment is an error: values.yaml is where users read them.
func chartValues(root string, files map[string][]byte) error {
	const rel = "charts/controller-manager/values.yaml"
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return err
	}
	doc, err := kyaml.Parse(string(b))
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	var rows []string
	if err := valueRows(doc.YNode(), "", &rows); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	var s strings.Builder
	s.WriteString(header("the comments and defaults of `charts/controller-manager/values.yaml`"))
	s.WriteString("# Helm chart values\n\nEvery value of `charts/controller-manager` and its default; " +
		"`values.schema.json` checks them at `helm install` and `helm upgrade`. " +
		"With the defaults the chart installs what `config/default` installs (`make verify` checks it). " +
		"[Deploying](../deploying.md#helm) says how to install it.\n\n" +
		"| value | default | meaning |\n|---|---|---|\n")
	for _, r := range rows {
		s.WriteString(r)
	}
	files["docs/reference/chart-values.md"] = []byte(s.String())
	return nil
}

// valueRows appends a table row for every documented value under node: a
// mapping whose keys are documented is descended into, anything else is one
// value.
func valueRows(node *kyaml.Node, prefix string, rows *[]string) error {
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		path := prefix + k.Value
		if v.Kind == kyaml.MappingNode && documentedKeys(v) {
			if err := valueRows(v, path+".", rows); err != nil {
				return err
			}
			continue
		}
		why := comment(k.HeadComment)
		if why == "" {
			return fmt.Errorf("%s has no comment saying what it is", path)
		}
		var def any
		if err := v.Decode(&def); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		j, err := json.Marshal(def)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		*rows = append(*rows, fmt.Sprintf("| `%s` | `%s` | %s |\n", path, strings.ReplaceAll(string(j), "|", `\|`), cell(why)))
	}
	return nil
}

// documentedKeys tells whether a key of mapping node has a comment.
func documentedKeys(node *kyaml.Node) bool {
	for i := 0; i < len(node.Content); i += 2 {
		if node.Content[i].HeadComment != "" {
			return true
		}
	}
	return false
}

// comment is the text of a YAML head comment, without its #s.
func comment(c string) string {
	var lines []string
	for _, l := range strings.Split(c, "\n") {
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")))
	}
	return strings.TrimSpace(strings.Join(lines, " "))
}
