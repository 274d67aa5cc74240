// Package alerts tests the alert rules the manager ships (the PrometheusRule
// of config/prometheus, framework.AlertRulesSource) with promtool, built from
// the pinned Prometheus module into bin/promtool (`make tools`, or
// hack/build-tools.sh promtool): `promtool check rules`, and `promtool test
// rules` on testdata/<alert>.yaml, one file per alert with cases where it
// fires and where it does not. It also checks that every expression reads
// metrics, labels and label values that the manager's code registers and
// serves, and that every rule says what to do and links its runbook.
//
// The rules are written, as the chart ships them, to alerts.yaml beside
// copies of the test files, which name it in rule_files.
package alerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// promtool returns the path of promtool: $PROMTOOL, else <root>/bin/promtool.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "bin", "promtool")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found: run `make tools` (hack/build-tools.sh promtool) first, or set PROMTOOL", p)
	}
	return p
}

// rulesDir returns a directory holding the shipped rules as alerts.yaml and
// a copy of every test file of testdata.
func rulesDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rules, err := framework.AlertRulesFile()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range testFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no test files in testdata")
	}
	return files
}

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

// The rules parse, their expressions and templates are valid, and no two
// rules are the same.
func TestPromtoolCheckRules(t *testing.T) {
	run(t, rulesDir(t), "check", "rules", "--lint=all", "--lint-fatal", "alerts.yaml")
}

// Each alert's cases: it fires on the series of its fault, with its labels
// and its annotations rendered, and stays quiet where it must.
func TestPromtoolTestRules(t *testing.T) {
	dir := rulesDir(t)
	for _, f := range testFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			run(t, dir, "test", "rules", filepath.Base(f))
		})
	}
}

// testFile is what a promtool test file says of alerts.
type testFile struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// Every rule has its test file, testdata/<alert>.yaml, with a case where it
// fires and one where it does not; no test file is for an alert that does
// not exist.
func TestEveryRuleIsTestedFiringAndQuiet(t *testing.T) {
	groups, err := framework.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
		}
	}
	for _, f := range testFiles(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if !alerts[name] {
			t.Errorf("%s: no rule alerts %s", f, name)
		}
	}
	for alert := range alerts {
		f := filepath.Join("testdata", alert+".yaml")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("%s has no test file: %v", alert, err)
			continue
		}
		var tf testFile
		if err := yaml.Unmarshal(b, &tf); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !slices.Equal(tf.RuleFiles, []string{"alerts.yaml"}) {
			t.Errorf("%s: rule_files is %q, want [alerts.yaml] (the shipped rules, written beside it)", f, tf.RuleFiles)
		}
		var fires, quiet bool
		for _, tc := range tf.Tests {
			for _, a := range tc.AlertRuleTest {
				if a.Alertname != alert {
					t.Errorf("%s: case %q tests %s", f, tc.Name, a.Alertname)
					continue
				}
				if len(a.ExpAlerts) > 0 {
					fires = true
				} else {
					quiet = true
				}
			}
		}
		if !fires || !quiet {
			t.Errorf("%s: a case where %s fires: %v, one where it does not: %v; want both", f, alert, fires, quiet)
		}
	}
}

// runbookBase is where the runbooks are: docs/operations.md as GitHub shows
// it; each alert's is at the anchor of its heading (hack/docgen writes them).
const runbookBase = "https://github.com/kube-sample/controller-manager/blob/main/docs/operations.md#"

// Every rule has a severity an Alertmanager route can use, a summary, a
// description saying what to do, and its runbook in docs/operations.md.
func TestEveryRuleSaysWhatToDo(t *testing.T) {
	groups, err := framework.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule that is not an alert (%s): the rules are alerts only", g.Name, r.Expr)
				continue
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s", r.Alert, a)
				}
			}
			if want := runbookBase + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
		}
	}
}
