package app

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/internal/controller/network"
)

// Options are the manager's command-line options.
type Options struct {
	// Cluster connection.
	Kubeconfig   string
	Master       string
	KubeAPIQPS   float32
	KubeAPIBurst int
	EventQPS     float32
	EventBurst   int

	// Controllers.
	Controllers     []string
	Workers         map[string]int
	Namespace       string
	ResyncPeriod    time.Duration
	ShutdownTimeout time.Duration
	FieldManager    string

	// ingress-manager.
	IngressHostTemplate     string
	IngressClass            string
	IngressGateway          string
	GatewayAPICheckInterval time.Duration
	IngressMoveSettle       time.Duration
	IngressMoveDNSDrain     time.Duration
	// IngressNGINXHTTPRedirectCode is --ingress-nginx-http-redirect-code.
	IngressNGINXHTTPRedirectCode int
	IngressURLAnnotation         string

	// network.
	NetworkBackendName string
	NetworkGCInterval  time.Duration
	NeutronManagedBy   string
	// NetworkCredentialsFromSecrets lets Networks name credentials of
	// their own (spec.cloudCredentialsRef), read from Secrets.
	NetworkCredentialsFromSecrets bool
	NetworkCredentialsTTL         time.Duration
	// NetworkBackend, when set (tests, embedding), is used instead of
	// --network-backend.
	NetworkBackend network.Backend

	// Leader election: component-base's configuration and flags, as every
	// Kubernetes component has them, and this replica's identity.
	LeaderElection      componentbaseconfig.LeaderElectionConfiguration
	LeaderElectIdentity string

	// Servers.
	MetricsBindAddress     string
	MetricsSecure          bool
	TLSCertFile            string
	TLSPrivateKeyFile      string
	HealthProbeBindAddress string
	Profiling              bool

	Logs *logsapi.LoggingConfiguration
}

// Defaults.
const (
	// DefaultKubeAPIQPS and DefaultKubeAPIBurst are far above client-go's
	// 5/10, which would throttle a cold start over thousands of Services for
	// many minutes. The API server protects itself with API Priority and
	// Fairness; the client limit is only a guard against a runaway loop, so
	// it sits above what one API server can serve (docs/benchmarks.md has
	// the measurements).
	DefaultKubeAPIQPS   = 5000
	DefaultKubeAPIBurst = 10000

	// DefaultEventQPS and DefaultEventBurst are the kubelet's defaults for
	// the same purpose: Events go out at a steady rate behind the writes
	// they report, never at the rate of the writes themselves.
	DefaultEventQPS   = 50
	DefaultEventBurst = 100
)

// NewOptions returns options with their defaults.
func NewOptions() *Options {
	o := &Options{
		KubeAPIQPS:                   DefaultKubeAPIQPS,
		KubeAPIBurst:                 DefaultKubeAPIBurst,
		EventQPS:                     DefaultEventQPS,
		EventBurst:                   DefaultEventBurst,
		Controllers:                  []string{"*"},
		Workers:                      map[string]int{},
		ResyncPeriod:                 10 * time.Minute,
		ShutdownTimeout:              30 * time.Second,
		FieldManager:                 "controller-manager",
		IngressHostTemplate:          ingressmanager.DefaultHostTemplate,
		GatewayAPICheckInterval:      ingressmanager.DefaultGatewayAPICheckInterval,
		IngressMoveSettle:            ingressmanager.DefaultMoveSettle,
		IngressMoveDNSDrain:          ingressmanager.DefaultDNSDrain,
		IngressNGINXHTTPRedirectCode: ingressmanager.DefaultHTTPRedirectCode,
		IngressURLAnnotation:         ingressmanager.AnnotationURL,
		NetworkBackendName:           "memory",
		NetworkGCInterval:            10 * time.Minute,
		NeutronManagedBy:             network.ManagedBy,
		NetworkCredentialsTTL:        30 * time.Second,
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      resourcelock.LeasesResourceLock,
			ResourceName:      "controller-manager",
			ResourceNamespace: "kube-system",
		},
		MetricsBindAddress:     "127.0.0.1:8443",
		MetricsSecure:          true,
		HealthProbeBindAddress: "127.0.0.1:8081",
		Logs:                   logsapi.NewLoggingConfiguration(),
	}
	for _, d := range Controllers() {
		o.Workers[d.Name] = d.DefaultWorkers
	}
	return o
}

// Flags returns the options' flags, in named sections for --help.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets

	fs := fss.FlagSet("cluster")
	bindClusterFlags(fs, &o.Kubeconfig, &o.Master)
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS,
		"Client-side limit of API requests per second. Far above client-go's 5 so that a cold start over thousands of objects is limited by the API server (which protects itself with API Priority and Fairness), not by the client. A negative value disables client-side limiting.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst,
		"Client-side burst of API requests above --kube-api-qps.")
	fs.Float32Var(&o.EventQPS, "event-qps", o.EventQPS,
		"Events written per second (as the kubelet's --event-qps), so that the Events of a burst of writes (one per Ingress on a cold start over thousands of Services) follow the writes they report instead of taking the API server's capacity from them. Past the burst they go out in runs of a second's worth (at most --event-burst), not one at a time: alone on an idle connection an Event costs the manager and the API server several times the CPU of one in a run. Recording never blocks a controller: Events wait in client-go's queue of 1000 and beyond it are dropped. A negative value disables the limit.")
	fs.IntVar(&o.EventBurst, "event-burst", o.EventBurst,
		"Events written at once above --event-qps.")

	fs = fss.FlagSet("controllers")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers,
		"Controllers to run, comma-separated. '*' enables all, 'name' enables one, '-name' disables one (e.g. '*,-pod-logger'). Known: "+strings.Join(ControllerNames(), ", ")+".")
	for _, d := range Controllers() {
		fs.Var(newIntMapValue(o.Workers, d.Name), d.Name+"-workers",
			fmt.Sprintf("Number of %s workers syncing objects in parallel.", d.Name))
	}
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"Only watch and manage objects in this namespace. Empty means all namespaces.")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod,
		"How often the informers replay every cached object to the controllers, which then re-check it (no API writes when converged). 0 disables resync.")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout,
		"On SIGTERM/SIGINT, how long in-flight syncs may run to completion before they are cancelled. A second signal exits at once.")
	fs.StringVar(&o.FieldManager, "field-manager", o.FieldManager,
		"Field manager name of every write to the API server: at most 128 printable characters.")

	fs = fss.FlagSet("ingress-manager")
	fs.StringVar(&o.IngressHostTemplate, "ingress-host-template", o.IngressHostTemplate,
		"Template of the Ingress rule host for Services without the ingress/host annotation: text with {{.Name}} and {{.Namespace}} of the Service (Go template syntax, no functions or control structures), e.g. '{{.Name}}.{{.Namespace}}.apps.example.com'.")
	fs.StringVar(&o.IngressClass, "ingress-class", o.IngressClass,
		"spec.ingressClassName of Ingresses whose Service has no ingress/class annotation. Empty means none (the cluster's default IngressClass).")
	fs.StringVar(&o.IngressGateway, "ingress-gateway", o.IngressGateway,
		"<namespace>/<name> of the Gateway that annotated Services without their own ingress/gateway annotation attach to: they get a Gateway API HTTPRoute instead of an Ingress, and their Ingress is deleted once the route serves. A Service with ingress/gateway: \"\" stays on Ingress. Empty means none (every Service without ingress/gateway gets an Ingress).")
	fs.DurationVar(&o.IngressMoveSettle, "ingress-move-settle", o.IngressMoveSettle,
		"When a Service moves between Ingress and HTTPRoute, how long the old object is kept after the new one serves (docs/ingress-manager.md, \"When an object serves\"), so that the data plane serves the new one before the old one goes. 0 deletes it at once.")
	fs.DurationVar(&o.IngressMoveDNSDrain, "ingress-move-dns-drain", o.IngressMoveDNSDrain,
		"When a Service moves between Ingress and HTTPRoute, how long the old object keeps serving after it was withdrawn from external-dns (by its controller annotation, once the new object is ready and --ingress-move-settle passed), so that DNS resolvers forget its address before it goes; then it is deleted. The default covers external-dns's default --interval (1m) and the common record TTL of 300s. 0 deletes the old object at once, without withdrawing it.")
	fs.StringVar(&o.IngressURLAnnotation, "ingress-url-annotation", o.IngressURLAnnotation,
		"Annotation of the Service that ingress-manager writes, once its Ingress or HTTPRoute serves it (docs/ingress-manager.md, \"When an object serves\"), with the URL it is served at (https:// with ingress/tls-secret, the host, the path), and removes when the Service is no longer exposed. Empty disables it. One of the annotations ingress-manager reads (ingress/http, ingress/host and the other settings) or keeps on objects for itself is refused.")
	fs.IntVar(&o.IngressNGINXHTTPRedirectCode, "ingress-nginx-http-redirect-code", o.IngressNGINXHTTPRedirectCode,
		httpRedirectCodeHelp)
	fs.DurationVar(&o.GatewayAPICheckInterval, "gateway-api-check-interval", o.GatewayAPICheckInterval,
		"How often ingress-manager asks discovery whether the cluster serves the Gateway API (gateway.networking.k8s.io/v1 httproutes): while it does not, to watch HTTPRoutes once it does; while it does, to stop using them (and fall back to Ingress) once it no longer does; both without a restart.")

	fs = fss.FlagSet("network")
	fs.StringVar(&o.NetworkBackendName, "network-backend", o.NetworkBackendName,
		"Where Networks are reconciled into: 'memory' (in-process, logs each operation; for local runs and demos) or 'neutron' (OpenStack Neutron, configured by OS_CLOUD with clouds.yaml or the OS_* variables: OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME, OS_USER_DOMAIN_NAME, OS_PROJECT_DOMAIN_NAME, OS_REGION_NAME).")
	fs.DurationVar(&o.NetworkGCInterval, "network-gc-interval", o.NetworkGCInterval,
		"How often backend networks marked as ours whose Network no longer exists are deleted (also once at start).")

	fs.StringVar(&o.NeutronManagedBy, "neutron-managed-by", o.NeutronManagedBy,
		"Value of the managed-by tag on the Neutron networks this manager creates; lookups and garbage collection only see networks with it. Give each cluster sharing a Neutron project its own value.")
	fs.BoolVar(&o.NetworkCredentialsFromSecrets, "network-credentials-from-secrets", o.NetworkCredentialsFromSecrets,
		"Let a Network name OpenStack credentials of its own (spec.cloudCredentialsRef: the key clouds.yaml of a Secret in its namespace, read with get, never list or watch; the manager's ServiceAccount needs get on Secrets, which the default RBAC does not grant: add the config/network-credentials Component or the chart's network.credentialsFromSecrets). Off: such a Network gets Ready=False CredentialsNotEnabled and nothing is created for it. With the memory backend, each distinct cloud entry gets an in-memory backend of its own.")
	fs.DurationVar(&o.NetworkCredentialsTTL, "network-credentials-ttl", o.NetworkCredentialsTTL,
		"How long a credentials Secret read is used before it is read again (a change reaches the Networks that sync within it, and the probes of a cloud whose credentials are refused read it at once), and how often a Network whose Secret is missing or invalid is looked at again.")

	fs = fss.FlagSet("leader election")
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
	fs.Lookup("leader-elect").Usage += " Every replica keeps its caches warm; a replica that loses the lease exits with a non-zero code."
	fs.Lookup("leader-elect-lease-duration").Usage += " A whole number of seconds, at least 1s (the Lease stores seconds)."
	fs.Lookup("leader-elect-renew-deadline").Usage += fmt.Sprintf(" It must also be greater than %v x the retry period, the longest the elector waits between tries.", leaderelection.JitterFactor)
	fs.Lookup("leader-elect-resource-name").Usage += " A valid Lease name (lowercase DNS subdomain)."
	fs.Lookup("leader-elect-resource-namespace").Usage += " A valid namespace name."
	fs.StringVar(&o.LeaderElectIdentity, "leader-elect-identity", o.LeaderElectIdentity,
		"Identity of this replica in the Lease. Empty means <hostname>_<random>.")

	fs = fss.FlagSet("servers")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		"host:port of the Prometheus metrics endpoint (/metrics). '0' disables it. Use ':8443' to listen on every interface (as in a Pod).")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve /metrics over HTTPS to authenticated and authorized clients only: a bearer token the API server accepts (TokenReview) whose user may get the non-resource URL /metrics (SubjectAccessReview; the metrics-reader ClusterRole of config/rbac). false serves plain HTTP to anyone who can connect: for local runs on 127.0.0.1 only.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile,
		"PEM certificate (with any intermediates) of the metrics server, reloaded when the file changes. Empty: a self-signed certificate is generated at start.")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile,
		"PEM private key matching --tls-cert-file.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		"host:port of the /healthz and /readyz endpoints. '0' disables them.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling,
		"Serve Go's runtime profiles (CPU, heap, goroutines) at /debug/pprof/ on the metrics server, behind the same authentication and authorization as /metrics when --metrics-secure (the client's user must be allowed to get the non-resource URL /debug/pprof/*, which the metrics-reader ClusterRole does not grant). Needs the metrics server (--metrics-bind-address not '0').")

	logsapi.AddFlags(o.Logs, fss.FlagSet("logging"))
	return fss
}

// Validate returns every problem with the options, each naming its flag.
func (o *Options) Validate() error {
	var errs []error
	if err := validateControllers(o.Controllers); err != nil {
		errs = append(errs, flatten(err)...)
	}
	for name, n := range o.Workers {
		if n < 1 {
			errs = append(errs, fmt.Errorf("--%s-workers: must be at least 1, got %d", name, n))
		}
	}
	if err := validateNamespace(o.Namespace); err != nil {
		errs = append(errs, err)
	}
	if o.KubeAPIQPS == 0 {
		errs = append(errs, errors.New("--kube-api-qps: must not be 0 (use a negative value to disable client-side limiting)"))
	}
	if o.KubeAPIQPS > 0 && o.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst: must be at least 1 when --kube-api-qps is positive, got %d", o.KubeAPIBurst))
	}
	if o.EventQPS == 0 {
		errs = append(errs, errors.New("--event-qps: must not be 0 (use a negative value to disable the limit)"))
	}
	if o.EventQPS > 0 && o.EventBurst < 1 {
		errs = append(errs, fmt.Errorf("--event-burst: must be at least 1 when --event-qps is positive, got %d", o.EventBurst))
	}
	if o.ResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("--resync-period: must not be negative, got %v", o.ResyncPeriod))
	}
	if o.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout: must be positive, got %v", o.ShutdownTimeout))
	}
	if o.FieldManager == "" {
		errs = append(errs, errors.New("--field-manager: must not be empty"))
	}
	fieldManagerErrs := metav1validation.ValidateFieldManager(o.FieldManager, field.NewPath("--field-manager"))
	for _, e := range fieldManagerErrs {
		errs = append(errs, errors.New(e.Error()))
	}
	errs = append(errs, o.validateLeaderElection()...)
	ingress := o.ingressConfig()
	if o.FieldManager == "" || len(fieldManagerErrs) > 0 {
		ingress.FieldManager = "" // reported above, under its own flag
	}
	if _, err := ingressmanager.NewBuilder(ingress); err != nil {
		errs = append(errs, fmt.Errorf("--ingress-host-template / --ingress-class / --ingress-gateway / --ingress-url-annotation: %w", err))
	}
	if o.IngressMoveSettle < 0 {
		errs = append(errs, fmt.Errorf("--ingress-move-settle: must not be negative, got %v", o.IngressMoveSettle))
	}
	if o.IngressMoveDNSDrain < 0 {
		errs = append(errs, fmt.Errorf("--ingress-move-dns-drain: must not be negative, got %v", o.IngressMoveDNSDrain))
	}
	if err := validateHTTPRedirectCode(o.IngressNGINXHTTPRedirectCode); err != nil {
		errs = append(errs, err)
	}
	if o.GatewayAPICheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("--gateway-api-check-interval: must be positive, got %v", o.GatewayAPICheckInterval))
	}
	if o.NetworkBackendName != "memory" && o.NetworkBackendName != "neutron" {
		errs = append(errs, fmt.Errorf("--network-backend: unknown backend %q; use memory or neutron", o.NetworkBackendName))
	}
	if err := validateNeutronManagedBy(o.neutronManagedBy()); err != nil {
		errs = append(errs, fmt.Errorf("--neutron-managed-by: %w", err))
	}
	if o.NetworkCredentialsTTL <= 0 {
		errs = append(errs, fmt.Errorf("--network-credentials-ttl: must be positive, got %v", o.NetworkCredentialsTTL))
	}
	if o.NetworkGCInterval <= 0 {
		errs = append(errs, fmt.Errorf("--network-gc-interval: must be positive, got %v", o.NetworkGCInterval))
	}
	for flag, addr := range map[string]string{
		"--metrics-bind-address":      o.MetricsBindAddress,
		"--health-probe-bind-address": o.HealthProbeBindAddress,
	} {
		if err := validateBindAddress(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	if (o.TLSCertFile == "") != (o.TLSPrivateKeyFile == "") {
		errs = append(errs, fmt.Errorf("--tls-cert-file (%q) and --tls-private-key-file (%q): give both or neither", o.TLSCertFile, o.TLSPrivateKeyFile))
	}
	if o.TLSCertFile != "" && !o.MetricsSecure {
		errs = append(errs, errors.New("--tls-cert-file / --tls-private-key-file: only used with --metrics-secure=true; drop them or --metrics-secure=false"))
	}
	if o.Profiling && o.MetricsBindAddress == "0" {
		errs = append(errs, errors.New("--profiling: the profiles are served by the metrics server, which --metrics-bind-address=0 disables; give it an address or drop --profiling"))
	}
	return utilerrors.NewAggregate(errs)
}

// bindClusterFlags adds --kubeconfig and --master, the cluster's flags of
// the manager and of migrate-plan.
func bindClusterFlags(fs *pflag.FlagSet, kubeconfig, master *string) {
	fs.StringVar(kubeconfig, "kubeconfig", *kubeconfig,
		"Path to a kubeconfig file. Without it (and without --master): KUBECONFIG, then the in-cluster config when it runs in a Pod, then ~/.kube/config.")
	fs.StringVar(master, "master", *master,
		"Address of the Kubernetes API server; overrides the server in the kubeconfig.")
}

// validateNamespace checks --namespace: empty (all namespaces) or a
// namespace name.
func validateNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("--namespace: %q is not a valid namespace name: %v", ns, msgs)
	}
	return nil
}

// validateLeaderElection checks what component-base's
// ValidateLeaderElectionConfiguration checks, and what client-go's elector
// checks only once it starts, in flag names: component-base's errors name
// configuration fields, and show the renew deadline as the lease duration's
// invalid value.
func (o *Options) validateLeaderElection() []error {
	le := &o.LeaderElection
	if !le.LeaderElect {
		return nil
	}
	var errs []error
	// The Lease must be one the API server accepts: a name it refuses
	// would leave a Ready replica that never leads.
	if msgs := validation.IsDNS1123Label(le.ResourceNamespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-namespace: %q is not a valid namespace name: %s", le.ResourceNamespace, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Subdomain(le.ResourceName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-name: %q is not a valid Lease name: %s", le.ResourceName, strings.Join(msgs, "; ")))
	}
	if le.ResourceLock != resourcelock.LeasesResourceLock {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-lock: %q is not supported; use %q", le.ResourceLock, resourcelock.LeasesResourceLock))
	}
	lease, renew, retry := le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration
	if retry <= 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period: must be positive, got %v", retry))
	}
	// The elector waits up to JitterFactor x the retry period between tries.
	if renew <= time.Duration(leaderelection.JitterFactor*float64(retry)) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%v) must be greater than %v x --leader-elect-retry-period (%v)", renew, leaderelection.JitterFactor, retry))
	}
	// The Lease keeps its duration in whole seconds: under a second it
	// would be 0, which the API server refuses, and a fraction would be cut,
	// eating the margin over the renew deadline.
	if lease < time.Second || lease%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration: must be a whole number of seconds (the Lease stores seconds), got %v", lease))
	}
	if lease <= renew {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%v) must be greater than --leader-elect-renew-deadline (%v)", lease, renew))
	}
	return errs
}

func validateBindAddress(addr string) error {
	if addr == "0" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port or '0': %w", addr, err)
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		return fmt.Errorf("%q: host must be an IP address, 'localhost' or empty", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: port must be a number in 0-65535", addr)
	}
	return nil
}

// intMapValue is a pflag.Value for one entry of a map[string]int.
type intMapValue struct {
	m   map[string]int
	key string
}

func newIntMapValue(m map[string]int, key string) pflag.Value { return &intMapValue{m: m, key: key} }

func (v *intMapValue) String() string { return strconv.Itoa(v.m[v.key]) }
func (v *intMapValue) Type() string   { return "int" }
func (v *intMapValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not an integer: %q", s)
	}
	v.m[v.key] = n
	return nil
}

func flatten(err error) []error {
	if agg, ok := err.(utilerrors.Aggregate); ok {
		return agg.Errors()
	}
	return []error{err}
}

// httpRedirectCodeHelp is the help of --ingress-nginx-http-redirect-code,
// the manager's and migrate-plan's.
const httpRedirectCodeHelp = "The http-redirect-code of the ingress-nginx that served the Ingresses moving to the Gateway API (its ConfigMap's key; 308 by default): " +
	"the status of the redirect of plain HTTP to HTTPS (ssl-redirect, force-ssl-redirect) their routes carry. One of 301, 302, 307, 308. " +
	"301 and 302 are core in the Gateway API; a Gateway whose class does not list HTTPRoute307RedirectStatusCode or HTTPRoute308RedirectStatusCode " +
	"in status.supportedFeatures keeps the Ingresses that redirect on their Ingress."

// validateHTTPRedirectCode checks --ingress-nginx-http-redirect-code.
func validateHTTPRedirectCode(code int) error {
	if !slices.Contains(ingressmanager.HTTPRedirectCodes, code) {
		return fmt.Errorf("--ingress-nginx-http-redirect-code: must be one of %v (ingress-nginx's http-redirect-code), got %d", ingressmanager.HTTPRedirectCodes, code)
	}
	return nil
}
