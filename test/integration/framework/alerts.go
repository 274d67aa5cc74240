package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/model"
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
	Name string `json:"name"`
	// Labels are added to every alert of the group (the scaled copy's
	// TimeScaleLabel; the shipped rules have none).
	Labels map[string]string `json:"labels,omitempty"`
	Rules  []AlertRule       `json:"rules"`
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
	groups, err := ParseAlertRules(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AlertRulesSource, err)
	}
	return groups, nil
}

// ParseAlertRules returns the groups of the rule file b.
func ParseAlertRules(b []byte) ([]AlertRuleGroup, error) {
	var file struct {
		Groups []AlertRuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &file); err != nil {
		return nil, err
	}
	return file.Groups, nil
}

// TimeScaleLabel is the label ScaledAlertRulesFile gives every alert of
// its copy ("1/<factor>"), so that a Prometheus that loads both tells the
// copy's alerts (and their ALERTS series) from the shipped rules'.
const TimeScaleLabel = "time_scale"

// ScaledAlertRulesFile returns AlertRulesFile with time compressed by
// factor, for tests that watch the rules fire against a running manager
// without waiting minutes per alert: every rule's `for`, and every
// duration of its expression (range selectors, subqueries, offsets), is
// divided by factor (3m becomes 6s at 30, a [30m] window [1m]); each group
// gets the label TimeScaleLabel. Nothing else changes: the alerts, their
// expressions but for those durations, their labels and annotations are the
// shipped ones, as written. A duration it cannot read, or one that factor
// does not divide into whole milliseconds, is an error, never left as it
// was.
func ScaledAlertRulesFile(factor int) ([]byte, error) {
	if factor < 1 {
		return nil, fmt.Errorf("time scale factor %d: must be at least 1", factor)
	}
	b, err := AlertRulesFile()
	if err != nil {
		return nil, err
	}
	doc, err := kyaml.Parse(string(b))
	if err != nil {
		return nil, err
	}
	groups, err := doc.Pipe(kyaml.Lookup("groups"))
	if err != nil || groups == nil {
		return nil, fmt.Errorf("%s: no groups", AlertRulesSource)
	}
	scale := func(s string) (string, error) { return scaleDuration(s, factor) }
	err = groups.VisitElements(func(g *kyaml.RNode) error {
		if err := g.PipeE(kyaml.SetField("labels", kyaml.NewMapRNode(&map[string]string{
			TimeScaleLabel: fmt.Sprintf("1/%d", factor)}))); err != nil {
			return err
		}
		rules, err := g.Pipe(kyaml.Lookup("rules"))
		if err != nil || rules == nil {
			return fmt.Errorf("group %s: no rules", g.Field("name").Value.YNode().Value)
		}
		return rules.VisitElements(func(r *kyaml.RNode) error {
			name := "?"
			if f := r.Field("alert"); f != nil {
				name = f.Value.YNode().Value
			}
			if f := r.Field("for"); f != nil {
				v, err := scale(f.Value.YNode().Value)
				if err != nil {
					return fmt.Errorf("%s: for: %w", name, err)
				}
				f.Value.YNode().Value = v
			}
			if f := r.Field("expr"); f != nil {
				v, err := scaleExpr(f.Value.YNode().Value, scale)
				if err != nil {
					return fmt.Errorf("%s: expr: %w", name, err)
				}
				f.Value.YNode().Value = v
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AlertRulesSource, err)
	}
	s, err := doc.String()
	return []byte(s), err
}

// scaleDuration divides the Prometheus duration s by factor.
func scaleDuration(s string, factor int) (string, error) {
	d, err := model.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return "", err
	}
	ms := time.Duration(d).Milliseconds()
	if ms == 0 || ms%int64(factor) != 0 {
		return "", fmt.Errorf("duration %q: %d does not divide it into whole milliseconds", s, factor)
	}
	return model.Duration(time.Duration(ms/int64(factor)) * time.Millisecond).String(), nil
}

// scaleExpr rewrites the durations of the PromQL expression expr with
// scale: those of range selectors ([5m]), subqueries ([30m:1m], [30m:])
// and offsets (offset 5m). Everything else, string literals and comments
// included, is copied byte for byte.
func scaleExpr(expr string, scale func(string) (string, error)) (string, error) {
	var b strings.Builder
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return "", fmt.Errorf("unterminated string at %d", i)
			}
			b.WriteString(expr[i : j+1])
			i = j + 1
		case c == '#':
			j := strings.IndexByte(expr[i:], '\n')
			if j < 0 {
				j = len(expr) - i
			}
			b.WriteString(expr[i : i+j])
			i += j
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return "", fmt.Errorf("unterminated [ at %d", i)
			}
			rng, step, subquery := strings.Cut(expr[i+1:i+j], ":")
			r, err := scale(rng)
			if err != nil {
				return "", err
			}
			b.WriteString("[" + r)
			if subquery {
				b.WriteString(":")
				if strings.TrimSpace(step) != "" {
					s, err := scale(step)
					if err != nil {
						return "", err
					}
					b.WriteString(s)
				}
			}
			b.WriteString("]")
			i += j + 1
		case isIdentByte(c) && (i == 0 || !isIdentByte(expr[i-1])):
			j := i
			for j < len(expr) && isIdentByte(expr[j]) {
				j++
			}
			b.WriteString(expr[i:j])
			word := expr[i:j]
			i = j
			if word != "offset" {
				continue
			}
			for i < len(expr) && (expr[i] == ' ' || expr[i] == '\t' || expr[i] == '\n') {
				b.WriteByte(expr[i])
				i++
			}
			j = i
			if j < len(expr) && expr[j] == '-' {
				b.WriteByte('-')
				i, j = i+1, j+1
			}
			for j < len(expr) && isIdentByte(expr[j]) {
				j++
			}
			if j == i || expr[i] < '0' || expr[i] > '9' {
				continue // a label or metric named offset
			}
			d, err := scale(expr[i:j])
			if err != nil {
				return "", err
			}
			b.WriteString(d)
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
