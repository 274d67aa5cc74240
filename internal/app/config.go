package app

import (
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/google/uuid"
	componentbaseconfig "k8s.io/component-base/config"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/internal/controller/network"
)

// CompletedConfig is what the manager runs with: the options validated and
// defaulted once (Options.Complete), split by concern. Only Complete makes
// one, so nothing can run on options that were not checked, as
// kube-controller-manager's CompletedConfig.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	Clients        ClientsConfig
	Manager        ManagerConfig
	Servers        ServersConfig
	LeaderElection LeaderElectionConfig
}

// ClientsConfig is how the manager reaches the API server.
type ClientsConfig struct {
	// Kubeconfig and Master select the cluster (see RESTConfig).
	Kubeconfig, Master string
	// QPS and Burst limit the API requests; EventQPS and EventBurst the
	// Events. A negative QPS disables the limit.
	QPS        float32
	Burst      int
	EventQPS   float32
	EventBurst int
}

// ManagerConfig is which controllers run, and how.
type ManagerConfig struct {
	// Enabled holds the name of every controller --controllers enables.
	Enabled map[string]bool
	// Workers is the number of workers of each controller.
	Workers map[string]int
	// Namespace is the one namespace watched, "" for all.
	Namespace       string
	ResyncPeriod    time.Duration
	ShutdownTimeout time.Duration
	// FieldManager is the field manager of every write.
	FieldManager string
	Ingress      ingressmanager.Config
	Network      NetworkConfig
}

// NetworkConfig configures the network controller and its backend.
type NetworkConfig struct {
	// BackendName is --network-backend; Backend, when set, is used instead.
	BackendName string
	Backend     network.Backend
	GCInterval  time.Duration
	// NeutronManagedBy is the value of the Neutron backend's managed-by tag.
	NeutronManagedBy string
	// CredentialsFromSecrets is --network-credentials-from-secrets,
	// CredentialsTTL --network-credentials-ttl.
	CredentialsFromSecrets bool
	CredentialsTTL         time.Duration
}

// ServersConfig is the metrics and health servers' configuration.
type ServersConfig struct {
	// MetricsBindAddress and HealthProbeBindAddress are host:port, "0"
	// when disabled.
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// MetricsSecure serves /metrics over HTTPS to authorized clients, with
	// the certificate of TLSCertFile and TLSPrivateKeyFile (self-signed
	// when empty).
	MetricsSecure                  bool
	TLSCertFile, TLSPrivateKeyFile string
	// Profiling serves /debug/pprof/ beside /metrics.
	Profiling bool
}

// LeaderElectionConfig is component-base's leader election configuration
// and this replica's identity in the Lease.
type LeaderElectionConfig struct {
	componentbaseconfig.LeaderElectionConfiguration
	Identity string
}

// Complete validates the options (every problem at once, each naming its
// flag) and returns the configuration the manager runs with, defaults
// filled in. It is the one place options become configuration.
func (o *Options) Complete() (*CompletedConfig, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := &completedConfig{
		Clients: ClientsConfig{
			Kubeconfig: o.Kubeconfig, Master: o.Master,
			QPS: o.KubeAPIQPS, Burst: o.KubeAPIBurst,
			EventQPS: o.EventQPS, EventBurst: o.EventBurst,
		},
		Manager: ManagerConfig{
			Enabled:         map[string]bool{},
			Workers:         maps.Clone(o.Workers),
			Namespace:       o.Namespace,
			ResyncPeriod:    o.ResyncPeriod,
			ShutdownTimeout: o.ShutdownTimeout,
			FieldManager:    o.FieldManager,
			Ingress:         o.ingressConfig(),
			Network: NetworkConfig{
				BackendName:      o.NetworkBackendName,
				Backend:          o.NetworkBackend,
				GCInterval:       o.NetworkGCInterval,
				NeutronManagedBy: o.neutronManagedBy(),

				CredentialsFromSecrets: o.NetworkCredentialsFromSecrets,
				CredentialsTTL:         o.NetworkCredentialsTTL,
			},
		},
		Servers: ServersConfig{
			MetricsBindAddress:     o.MetricsBindAddress,
			HealthProbeBindAddress: o.HealthProbeBindAddress,
			MetricsSecure:          o.MetricsSecure,
			TLSCertFile:            o.TLSCertFile,
			TLSPrivateKeyFile:      o.TLSPrivateKeyFile,
			Profiling:              o.Profiling,
		},
		LeaderElection: LeaderElectionConfig{LeaderElectionConfiguration: o.LeaderElection, Identity: o.LeaderElectIdentity},
	}
	for _, d := range Controllers() {
		c.Manager.Enabled[d.Name] = controllerEnabled(d.Name, o.Controllers)
	}
	if c.LeaderElection.LeaderElect && c.LeaderElection.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("--leader-elect-identity: empty, and the hostname to make one of is unknown: %w", err)
		}
		c.LeaderElection.Identity = host + "_" + uuid.NewString()
	}
	return &CompletedConfig{c}, nil
}

// ingressConfig is the ingress-manager configuration of the options.
func (o *Options) ingressConfig() ingressmanager.Config {
	return ingressmanager.Config{
		HostTemplate:            o.IngressHostTemplate,
		IngressClass:            o.IngressClass,
		FieldManager:            o.FieldManager,
		Gateway:                 o.IngressGateway,
		GatewayAPICheckInterval: o.GatewayAPICheckInterval,
		MoveSettle:              o.IngressMoveSettle,
		DNSDrain:                o.IngressMoveDNSDrain,
		URLAnnotation:           o.IngressURLAnnotation,
		HTTPRedirectCode:        o.IngressNGINXHTTPRedirectCode,
	}
}

// neutronManagedBy is --neutron-managed-by, the backend's default when
// empty.
func (o *Options) neutronManagedBy() string {
	if o.NeutronManagedBy == "" {
		return network.ManagedBy
	}
	return o.NeutronManagedBy
}
