package framework

import (
	"fmt"
	"os"
	"path/filepath"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// AlertRulesSource is the PrometheusRule that holds the manager's alert
// rules, relative to the repository root: the one source of the rules the
// config/prometheus Component and the Helm chart ship.
const AlertRulesSource = "config/prometheus/prometheus_rule.yaml"

// AlertRulesFile returns the spec of AlertRulesSource as a plain Prometheus
// rule file (groups: ...), as written there, its comments and styles kept:
// what promtool checks, Prometheus loads from rule_files, and the chart
// ships (charts/controller-manager/files/alerts.yaml).
func AlertRulesFile() ([]byte, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(root, AlertRulesSource))
	if err != nil {
		return nil, err
	}
	doc, err := kyaml.Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AlertRulesSource, err)
	}
	if kind := doc.GetKind(); kind != "PrometheusRule" {
		return nil, fmt.Errorf("%s: a %q, not a PrometheusRule", AlertRulesSource, kind)
	}
	spec, err := doc.Pipe(kyaml.Lookup("spec"))
	if err != nil || spec == nil {
		return nil, fmt.Errorf("%s: no spec", AlertRulesSource)
	}
	s, err := spec.String()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AlertRulesSource, err)
	}
	return []byte(s), nil
}

// AlertRuleGroup is a group of a Prometheus rule file.
type AlertRuleGroup struct {
	Name  string      `json:"name"`
	Rules []AlertRule `json:"rules"`
}

// AlertRule is an alerting rule of a rule file.
type AlertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AlertRules returns the groups of AlertRulesSource.
func AlertRules() ([]AlertRuleGroup, error) {
	b, err := AlertRulesFile()
	if err != nil {
		return nil, err
	}
	var file struct {
		Groups []AlertRuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", AlertRulesSource, err)
	}
	return file.Groups, nil
}
