package app

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/internal/controller/network"
)

// TestComplete: the options become the configuration the manager runs
// with once, validated, defaulted and split by concern.
func TestComplete(t *testing.T) {
	o := NewOptions()
	o.Controllers = []string{"*", "-pod-logger"}
	o.FieldManager = "mine"
	o.IngressClass = "nginx"
	o.IngressGateway = "infra/shared"
	o.IngressHostTemplate = "{{.Name}}.apps.example.com"
	o.NeutronManagedBy = ""
	o.KubeAPIQPS, o.EventBurst = 7, 9
	o.MetricsBindAddress = "0"
	c, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	if c.Manager.Enabled["pod-logger"] || !c.Manager.Enabled[ingressmanager.Name] || !c.Manager.Enabled[network.Name] {
		t.Errorf("enabled = %v, want every controller but pod-logger", c.Manager.Enabled)
	}
	if in := c.Manager.Ingress; in.FieldManager != "mine" || in.IngressClass != "nginx" || in.Gateway != "infra/shared" ||
		in.HostTemplate != "{{.Name}}.apps.example.com" || in.MoveSettle != ingressmanager.DefaultMoveSettle {
		t.Errorf("ingress config = %+v, want --field-manager, --ingress-class, --ingress-gateway, --ingress-host-template and the default settle time", c.Manager.Ingress)
	}
	if c.Manager.Network.NeutronManagedBy != network.ManagedBy {
		t.Errorf("an empty --neutron-managed-by = %q, want the backend's default %q", c.Manager.Network.NeutronManagedBy, network.ManagedBy)
	}
	if c.Clients.QPS != 7 || c.Clients.EventBurst != 9 || c.Servers.MetricsBindAddress != "0" {
		t.Errorf("clients %+v, servers %+v: not the options'", c.Clients, c.Servers)
	}
	if c.LeaderElection.Identity != "" {
		t.Errorf("identity %q without --leader-elect", c.LeaderElection.Identity)
	}
	o.Workers[ingressmanager.Name] = 3
	if c.Manager.Workers[ingressmanager.Name] == 3 {
		t.Error("the completed config shares the options' workers map")
	}

	o = NewOptions()
	o.LeaderElection.LeaderElect = true
	if c, err = o.Complete(); err != nil || c.LeaderElection.Identity == "" {
		t.Errorf("with --leader-elect: identity %q, %v; want <hostname>_<random>", c.LeaderElection.Identity, err)
	}
	o.LeaderElectIdentity = "replica-a"
	if c, err = o.Complete(); err != nil || c.LeaderElection.Identity != "replica-a" || c.LeaderElection.LeaseDuration.Duration != 15*time.Second {
		t.Errorf("with --leader-elect-identity: %+v, %v", c.LeaderElection, err)
	}
}

// TestCompleteRefusesBadOptions: a configuration is never made of options
// that do not validate; each problem is reported once, under its flag.
func TestCompleteRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
		want   []string // each error's beginning
	}{
		{"a field manager the API server refuses, once, under its own flag",
			func(o *Options) { o.FieldManager = strings.Repeat("m", 129) }, []string{"--field-manager"}},
		{"a URL annotation that is one of the Service annotations ingress-manager reads",
			func(o *Options) { o.IngressURLAnnotation = "ingress/host" }, []string{"--ingress-host-template / --ingress-class / --ingress-gateway / --ingress-url-annotation: invalid URL annotation \"ingress/host\": it is"}},
		{"a URL annotation that is ingress-manager's switch",
			func(o *Options) { o.IngressURLAnnotation = "ingress/http" }, []string{"--ingress-host-template / --ingress-class / --ingress-gateway / --ingress-url-annotation: invalid URL annotation \"ingress/http\": it is"}},
		{"a managed-by tag longer than Neutron allows",
			func(o *Options) { o.NeutronManagedBy = strings.Repeat("m", 60) }, []string{"--neutron-managed-by"}},
		{"a managed-by tag with a comma, which Neutron's tag lists cannot hold",
			func(o *Options) { o.NeutronManagedBy = "a,b" }, []string{"--neutron-managed-by"}},
		{"a redirect code ingress-nginx's http-redirect-code does not take",
			func(o *Options) { o.IngressNGINXHTTPRedirectCode = 303 }, []string{"--ingress-nginx-http-redirect-code: must be one of [301 302 307 308]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.mutate(o)
			c, err := o.Complete()
			if c != nil || err == nil {
				t.Fatalf("Complete() = %v, %v; want an error", c, err)
			}
			errs := flatten(err)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %q, want %d", errs, len(tc.want))
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d = %q, want it to begin with %q", i, e, tc.want[i])
				}
			}
		})
	}
	o := NewOptions()
	o.IngressURLAnnotation = "example.com/url"
	if _, err := o.Complete(); err != nil {
		t.Errorf("a URL annotation of its own is refused: %v", err)
	}
	o = NewOptions()
	o.NeutronManagedBy = "cluster/a"
	if _, err := o.Complete(); err != nil {
		t.Errorf("a managed-by tag Neutron takes is refused: %v", err)
	}
}
