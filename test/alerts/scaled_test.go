package alerts

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// timeScale is the factor of the scaled copy the fault suite loads.
const timeScale = 30

// durationRun matches a PromQL duration literal (5m, 1h30m, 250ms)
// anywhere in an expression, inside brackets or not: found by other means
// than ScaledAlertRulesFile's own reading of the expression, so that a
// duration it left as it was shows here as a pair that is not scaled.
var durationRun = regexp.MustCompile(`\b(?:[0-9]+(?:ms|[smhdwy]))+\b`)

// The copy of the rules the fault suite runs against real managers, with
// time compressed 30 times so that each alert fires in seconds, differs
// from the shipped rules in durations alone: the same groups, alerts,
// labels and annotations; each for and each duration of each expression
// divided by 30; the rest of each expression byte for byte; and a group
// label that tells its alerts from the shipped ones'. promtool reads it as
// it reads the shipped file.
func TestScaledRulesDifferInDurationsAlone(t *testing.T) {
	shipped, err := framework.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	b, err := framework.ScaledAlertRulesFile(timeScale)
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := framework.ParseAlertRules(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(scaled) != len(shipped) {
		t.Fatalf("%d groups scaled, %d shipped", len(scaled), len(shipped))
	}
	scaledDurations := 0
	for i, g := range shipped {
		s := scaled[i]
		if s.Name != g.Name || len(s.Rules) != len(g.Rules) {
			t.Errorf("group %d: %s with %d rules scaled, %s with %d shipped", i, s.Name, len(s.Rules), g.Name, len(g.Rules))
			continue
		}
		if want := map[string]string{framework.TimeScaleLabel: fmt.Sprintf("1/%d", timeScale)}; !maps.Equal(s.Labels, want) || len(g.Labels) != 0 {
			t.Errorf("group %s: labels %v scaled, %v shipped; want %v and none", g.Name, s.Labels, g.Labels, want)
		}
		for j, r := range g.Rules {
			sr := s.Rules[j]
			if sr.Alert != r.Alert || !maps.Equal(sr.Labels, r.Labels) || !maps.Equal(sr.Annotations, r.Annotations) {
				t.Errorf("rule %d: %s %v scaled, %s %v shipped; want the same alert, labels and annotations", j, sr.Alert, sr.Labels, r.Alert, r.Labels)
				continue
			}
			if (r.For == "") != (sr.For == "") {
				t.Errorf("%s: for %q scaled, %q shipped", r.Alert, sr.For, r.For)
			} else if r.For != "" {
				checkScaled(t, r.Alert+": for", r.For, sr.For)
			}
			// The expression: the same text between durations, each
			// duration divided.
			if got, want := durationRun.ReplaceAllString(sr.Expr, "<d>"), durationRun.ReplaceAllString(r.Expr, "<d>"); got != want {
				t.Errorf("%s: the expression differs beyond durations:\nscaled:  %s\nshipped: %s", r.Alert, sr.Expr, r.Expr)
				continue
			}
			sd, rd := durationRun.FindAllString(sr.Expr, -1), durationRun.FindAllString(r.Expr, -1)
			for k := range rd {
				checkScaled(t, r.Alert+": expr", rd[k], sd[k])
				scaledDurations++
			}
		}
	}
	if scaledDurations == 0 {
		t.Error("no duration of an expression was compared: the shipped rules have windows ([5m], [30m])")
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alerts-scaled.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "alerts-scaled.yaml")
}

// checkScaled checks that scaled is shipped divided by timeScale.
func checkScaled(t *testing.T, what, shipped, scaled string) {
	t.Helper()
	s, err1 := model.ParseDuration(shipped)
	c, err2 := model.ParseDuration(scaled)
	if err1 != nil || err2 != nil || time.Duration(c)*timeScale != time.Duration(s) {
		t.Errorf("%s: %s scaled to %s, want 1/%d of it (%v, %v)", what, shipped, scaled, timeScale, err1, err2)
	}
}
