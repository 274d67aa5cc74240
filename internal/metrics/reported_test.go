package metrics

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
)

// gather returns the samples of the families named, as the metrics server
// serves them, one "name{labels} value" line each.
func gather(t *testing.T, names ...string) string {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range families {
		for _, n := range names {
			if f.GetName() != n {
				continue
			}
			for _, m := range f.GetMetric() {
				var l []string
				for _, p := range m.GetLabel() {
					l = append(l, p.GetName()+"="+p.GetValue())
				}
				lines = append(lines, n+"{"+strings.Join(l, ",")+"} "+strconv.FormatFloat(m.GetGauge().GetValue(), 'g', -1, 64))
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run registers sources and returns what stops them.
		run  func() []func()
		want string
	}{
		{
			name: "nothing is reported while no controller runs",
			run:  func() []func() { return nil },
			want: "",
		},
		{
			name: "Networks are counted by namespace, status and reason",
			run: func() []func() {
				return []func(){ReportNetworks(func(add func(namespace, ready, reason string)) {
					add("team-a", "False", "CredentialsRefused")
					add("team-a", "False", "CredentialsRefused")
					add("team-a", "True", "Provisioned")
					add("team-b", "Unknown", "")
				})}
			},
			want: `controller_networks{network_namespace=team-a,ready=False,reason=CredentialsRefused} 2
controller_networks{network_namespace=team-a,ready=True,reason=Provisioned} 1
controller_networks{network_namespace=team-b,ready=Unknown,reason=} 1`,
		},
		{
			name: "two controllers seeing the same Networks report them once, the larger count",
			run: func() []func() {
				one := func(n int) func() {
					return ReportNetworks(func(add func(namespace, ready, reason string)) {
						for range n {
							add("team-a", "True", "Provisioned")
						}
					})
				}
				return []func(){one(2), one(3)}
			},
			want: `controller_networks{network_namespace=team-a,ready=True,reason=Provisioned} 3`,
		},
		{
			name: "a cloud is 1 while up, 0 while down, per namespace of its Secrets",
			run: func() []func() {
				return []func(){ReportNetworkClouds(func(add func(backend, cloud, namespace string, up bool)) {
					add("neutron", "entry 0123456789ab", "team-a", false)
					add("neutron", "entry 0123456789ab", "team-b", false)
					add("neutron", "entry ba9876543210", "team-c", true)
				})}
			},
			want: `controller_network_cloud_up{backend=neutron,cloud=entry 0123456789ab,network_namespace=team-a} 0
controller_network_cloud_up{backend=neutron,cloud=entry 0123456789ab,network_namespace=team-b} 0
controller_network_cloud_up{backend=neutron,cloud=entry ba9876543210,network_namespace=team-c} 1`,
		},
		{
			name: "moves: both kinds reported, draining counted, overdue the oldest past its drain and never negative",
			run: func() []func() {
				return []func(){ReportIngressMoves([]string{"Ingress", "HTTPRoute"}, func(add func(kind string, overdue time.Duration)) {
					add("Ingress", -time.Minute)
					add("Ingress", 90*time.Second)
					add("Ingress", 30*time.Second)
					add("HTTPRoute", -5*time.Minute)
				})}
			},
			want: `controller_ingress_move_drain_overdue_seconds{kind=HTTPRoute} 0
controller_ingress_move_drain_overdue_seconds{kind=Ingress} 90
controller_ingress_moves_draining{kind=HTTPRoute} 1
controller_ingress_moves_draining{kind=Ingress} 3`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stops := tc.run()
			got := gather(t, "controller_networks", "controller_network_cloud_up", "controller_ingress_moves_draining", "controller_ingress_move_drain_overdue_seconds")
			for _, stop := range stops {
				stop()
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if after := gather(t, "controller_networks", "controller_network_cloud_up", "controller_ingress_moves_draining", "controller_ingress_move_drain_overdue_seconds"); after != "" {
				t.Errorf("after the sources stopped, still reported:\n%s", after)
			}
		})
	}
}
