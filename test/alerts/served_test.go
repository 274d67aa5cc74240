package alerts

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/metrics"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// targetLabels are the labels Prometheus gives every series of a target
// (job, instance; and, through a ServiceMonitor, where the Pod runs): a rule
// may match and group by them whatever the metric.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

// served is what the manager's registry serves: each family's label names,
// and the values each label takes.
type served map[string]map[string]map[string]bool

// serve makes this process's registry, the one the manager's /metrics
// serves, hold a sample of every metric the rules read, as the manager's
// own code produces them: a controller's queue and syncs (one failing), the
// leader gauge, the network backend and a tenant cloud down, Networks whose
// credentials Keystone refuses, a move draining, and a request the API
// server refuses with 403. It returns what the registry then serves.
func serve(t *testing.T) served {
	t.Helper()
	q := controller.NewQueue[string]("network")
	t.Cleanup(q.ShutDown)
	q.Add("default/net")
	metrics.ObserveReconcile("network", time.Millisecond, metrics.ResultSuccess)
	metrics.ObserveReconcile("network", time.Millisecond, metrics.ResultError)
	metrics.ObserveReconcile("network", time.Millisecond, metrics.ResultWaiting)
	metrics.SetLeader(true)
	metrics.SetNetworkBackendUp("neutron", false)
	t.Cleanup(metrics.ReportNetworks(func(add func(namespace, ready, reason string)) {
		add("team-a", string(metav1.ConditionFalse), samplecrdv1.ReasonCredentialsRefused)
	}))
	t.Cleanup(metrics.ReportNetworkClouds(func(add func(backend, cloud, namespace string, up bool)) {
		add("neutron", "entry 0123456789ab", "team-a", false)
	}))
	t.Cleanup(metrics.ReportIngressMoves([]string{"Ingress", "HTTPRoute"}, func(add func(kind string, overdue time.Duration)) {
		add("Ingress", time.Minute)
	}))
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
	}))
	defer forbidden.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: forbidden.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services("default").Get(context.Background(), "my-nginx", metav1.GetOptions{}); err == nil {
		t.Fatal("the API server stand-in did not refuse")
	}

	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := served{}
	for _, f := range families {
		labels := map[string]map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] == nil {
					labels[l.GetName()] = map[string]bool{}
				}
				labels[l.GetName()][l.GetValue()] = true
			}
		}
		out[f.GetName()] = labels
		// A histogram's series as Prometheus stores them.
		if f.GetType().String() == "HISTOGRAM" {
			bucket := map[string]map[string]bool{"le": {}}
			for k, v := range labels {
				bucket[k] = v
			}
			out[f.GetName()+"_bucket"], out[f.GetName()+"_sum"], out[f.GetName()+"_count"] = bucket, labels, labels
		}
	}
	return out
}

// Every metric the rules read is one the manager serves, every label they
// match or group by is one it has (or a target's), and every value they
// match exactly is one the code produces: a rule on a renamed metric, a
// missing label or a misspelt value would never fire.
func TestRulesReadWhatTheManagerServes(t *testing.T) {
	have := serve(t)
	groups, err := framework.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			sels, grouping, err := parseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
				continue
			}
			if len(sels) == 0 {
				t.Errorf("%s: reads no metric", r.Alert)
			}
			labelsOfRule := map[string]bool{}
			for _, l := range targetLabels {
				labelsOfRule[l] = true
			}
			for _, s := range sels {
				family, ok := have[s.metric]
				if !ok {
					t.Errorf("%s reads %s, which the manager does not serve", r.Alert, s.metric)
					continue
				}
				for l := range family {
					labelsOfRule[l] = true
				}
				for _, m := range s.matchers {
					values, ok := family[m.label]
					if !ok && !slices.Contains(targetLabels, m.label) {
						t.Errorf("%s matches %s{%s}, a label %s does not have (it has %v)", r.Alert, s.metric, m.label, s.metric, keys(family))
						continue
					}
					if ok && m.op == "=" && m.value != "" && !values[m.value] {
						t.Errorf("%s matches %s{%s=%q}, a value the manager's code does not give it (it gives %v)", r.Alert, s.metric, m.label, m.value, keys(values))
					}
				}
			}
			for _, l := range grouping {
				if !labelsOfRule[l] {
					t.Errorf("%s groups or matches by %q, a label none of its metrics has", r.Alert, l)
				}
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// selector is a vector selector of an expression: a metric and its label
// matchers.
type selector struct {
	metric   string
	matchers []matcher
}

type matcher struct{ label, op, value string }

var (
	identRE   = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
	matcherRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?`)
	// keywords are PromQL's words that are neither metrics nor functions.
	keywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right"}
	// aggregations may be followed by their grouping before their
	// parenthesis: sum by (job) (x).
	aggregations = []string{"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
	// groupers take a list of label names in parentheses.
	groupers = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
)

// parseExpr returns the vector selectors of the PromQL expression expr and
// the label names it groups or matches by. It knows as much PromQL as rules
// need: identifiers, functions and aggregations, label lists, matchers,
// ranges, numbers and operators.
func parseExpr(expr string) (sels []selector, grouping []string, err error) {
	s := expr
	for len(s) > 0 {
		switch c := s[0]; {
		case c == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, nil, errors.New("unclosed [")
			}
			s = s[end+1:]
		case c == '{':
			return nil, nil, errors.New("a selector without a metric name")
		case c == '"' || c == '\'':
			return nil, nil, errors.New("a string outside a selector")
		case identRE.MatchString(s) && !(c >= '0' && c <= '9'):
			ident := identRE.FindString(s)
			s = s[len(ident):]
			rest := strings.TrimLeft(s, " \t\n")
			switch {
			case slices.Contains(groupers, ident) && strings.HasPrefix(rest, "("):
				end := strings.IndexByte(rest, ')')
				if end < 0 {
					return nil, nil, errors.New("unclosed " + ident + " (")
				}
				for _, l := range strings.Split(rest[1:end], ",") {
					if l = strings.TrimSpace(l); l != "" {
						grouping = append(grouping, l)
					}
				}
				s = rest[end+1:]
			case slices.Contains(keywords, ident), slices.Contains(aggregations, ident):
			case strings.HasPrefix(rest, "("):
				// A function or an aggregation.
			case strings.HasPrefix(rest, "{"):
				sel := selector{metric: ident}
				rest = rest[1:]
				for !strings.HasPrefix(strings.TrimSpace(rest), "}") {
					m := matcherRE.FindStringSubmatch(rest)
					if m == nil {
						return nil, nil, errors.New("a matcher of " + ident + " does not parse: " + rest)
					}
					sel.matchers = append(sel.matchers, matcher{label: m[1], op: m[2], value: m[3]})
					rest = rest[len(m[0]):]
				}
				s = strings.TrimSpace(rest)[1:]
				sels = append(sels, sel)
			default:
				sels = append(sels, selector{metric: ident})
			}
		default:
			// Numbers (with their units or exponents), operators, spaces,
			// parentheses, commas.
			if n := regexp.MustCompile(`^[0-9][0-9a-zA-Z.+]*`).FindString(s); n != "" {
				s = s[len(n):]
			} else {
				s = s[1:]
			}
		}
	}
	return sels, grouping, nil
}

func TestParseExpr(t *testing.T) {
	sels, grouping, err := parseExpr(`sum by (namespace, job) (rate(controller_reconcile_total{result="error", controller=~"net.*"}[5m])) / 2e3
		> 0.1 and on (job, instance) max_over_time(controller_manager_build_info[30m]) or absent(up)`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sels {
		got = append(got, s.metric)
		for _, m := range s.matchers {
			got = append(got, m.label+m.op+m.value)
		}
	}
	if want := []string{"controller_reconcile_total", "result=error", "controller=~net.*", "controller_manager_build_info", "up"}; !slices.Equal(got, want) {
		t.Errorf("selectors %q, want %q", got, want)
	}
	if want := []string{"namespace", "job", "job", "instance"}; !slices.Equal(grouping, want) {
		t.Errorf("grouping %q, want %q", grouping, want)
	}
}
