package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/metrics"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	samplescheme "github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/scheme"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

func init() {
	// Events about Networks need the recorder's scheme to know the type, as
	// in sample-controller.
	utilruntime.Must(samplescheme.AddToScheme(scheme.Scheme))
}

// ErrLeaderElectionLost is returned by Run when this replica could not renew
// its lease: it stopped every controller at once and must exit non-zero, so
// that two replicas never write at the same time.
var ErrLeaderElectionLost = errors.New("leader election lost")

// Manager runs the enabled controllers on shared informers.
type Manager struct {
	opts      *Options
	client    *kubeClients
	informers *controller.Informers
	// sampleFactory informs on samplecrd.k8s.io types.
	sampleFactory externalversions.SharedInformerFactory
	broadcaster   record.EventBroadcaster
	controllers   []controller.Interface
	health        *health
	// stopNow ends (with --leader-elect) when the lease is lost: every
	// controller then stops at once (controller.Context.StopNow).
	stopNow     context.Context
	loseLeaders context.CancelCauseFunc

	metricsLn, healthLn net.Listener
	// metricsHandler serves /metrics, behind authentication and
	// authorization with --metrics-secure; metricsTLS is then its TLS
	// configuration and runMetricsTLS keeps its certificate current.
	metricsHandler http.Handler
	metricsTLS     *tls.Config
	runMetricsTLS  func(context.Context)
}

// RESTConfig returns the config to reach the cluster: --kubeconfig/--master
// when given, else KUBECONFIG, else the in-cluster config when running in a
// Pod, else ~/.kube/config.
func (o *Options) RESTConfig() (*rest.Config, error) {
	if o.Kubeconfig != "" || o.Master != "" {
		cfg, err := clientcmd.BuildConfigFromFlags(o.Master, o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %q / --master %q: %w", o.Kubeconfig, o.Master, err)
		}
		return cfg, nil
	}
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return cfg, nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("loading the in-cluster config: %w", err)
		}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no cluster configured: pass --kubeconfig or --master, set KUBECONFIG, run in a Pod, or use `make run` to start a local control plane")
		}
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, nil
}

// kubeClients are the typed clients of the built-in API groups the manager
// uses. They share one HTTP client (one connection to the API server) and
// one rate limiter of --kube-api-qps/--kube-api-burst, as a
// kubernetes.Clientset's groups do; the manager does not build a Clientset:
// kubernetes.Interface names every API group of client-go, and the linker
// then keeps the type descriptors of all their typed clients and apply
// configurations, which the process maps in full at start-up.
type kubeClients struct {
	core           corev1client.CoreV1Interface
	networking     networkingv1client.NetworkingV1Interface
	coordination   coordinationv1client.CoordinationV1Interface
	authentication authenticationv1client.AuthenticationV1Interface
	authorization  authorizationv1client.AuthorizationV1Interface
	discovery      discovery.DiscoveryInterface
}

func newKubeClients(cfg *rest.Config) (*kubeClients, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	c := &kubeClients{}
	if c.core, err = corev1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the core/v1 client: %w", err)
	}
	if c.networking, err = networkingv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the networking.k8s.io/v1 client: %w", err)
	}
	if c.coordination, err = coordinationv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the coordination.k8s.io/v1 client: %w", err)
	}
	if c.authentication, err = authenticationv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the authentication.k8s.io/v1 client: %w", err)
	}
	if c.authorization, err = authorizationv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the authorization.k8s.io/v1 client: %w", err)
	}
	if c.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	return c, nil
}

// The event broadcaster records the Events of every controller and of
// leader election (patch when client-go aggregates repeats).
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// NewManager builds the clients, the shared informer factory and every
// enabled controller, and binds the metrics and health listeners (so a bad
// address fails here). It starts nothing: call Run.
func NewManager(ctx context.Context, o *Options, cfg *rest.Config) (*Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = o.KubeAPIQPS
	cfg.Burst = o.KubeAPIBurst
	if cfg.UserAgent == "" {
		cfg.UserAgent = "controller-manager"
	}
	// Built-in types travel as protobuf: cheaper to encode and decode than JSON.
	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := newKubeClients(kubeCfg)
	if err != nil {
		return nil, err
	}

	sampleClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the samplecrd client: %w", err)
	}

	gatewayClient, err := gatewayv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Gateway API client: %w", err)
	}

	m := &Manager{opts: o, client: client}
	m.informers = controller.NewInformers(controller.InformersConfig{
		Core: client.core, Networking: client.networking,
		Namespace: o.Namespace, ResyncPeriod: o.ResyncPeriod, Transform: CacheTransform(o.FieldManager),
	})
	m.sampleFactory = externalversions.NewSharedInformerFactoryWithOptions(sampleClient, o.ResyncPeriod,
		externalversions.WithNamespace(o.Namespace),
		externalversions.WithTransform(CacheTransform(o.FieldManager)))
	m.broadcaster = record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	if o.LeaderElection.LeaderElect {
		m.stopNow, m.loseLeaders = context.WithCancelCause(context.Background())
	}

	cctx := &controller.Context{
		Core:                  client.core,
		Networking:            client.networking,
		Informers:             m.informers,
		SampleClient:          sampleClient,
		SampleInformerFactory: m.sampleFactory,
		Gateway:               gatewayClient,
		Transform:             CacheTransform(o.FieldManager),
		Discovery:             client.discovery,
		EventRecorder: func(component string) record.EventRecorder {
			return m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Namespace:    o.Namespace,
		ResyncPeriod: o.ResyncPeriod,
		DrainTimeout: o.ShutdownTimeout,
		FieldManager: o.FieldManager,
		StopNow:      m.stopNow,
	}
	for _, d := range Controllers() {
		if !controllerEnabled(d.Name, o.Controllers) {
			klog.FromContext(ctx).Info("Controller disabled", "controller", d.Name)
			continue
		}
		c, err := d.New(ctx, cctx, o)
		if err != nil {
			return nil, fmt.Errorf("creating controller %s: %w", d.Name, err)
		}
		m.controllers = append(m.controllers, c)
	}
	m.health = &health{controllers: m.controllers}
	if o.LeaderElection.LeaderElect {
		// /healthz fails once the last renewal is older than the lease
		// duration plus this tolerance, as kube-controller-manager's.
		m.health.leader = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}

	m.metricsHandler = metricsHandler()
	if !o.MetricsSecure && o.MetricsBindAddress != "0" && !isLoopback(o.MetricsBindAddress) {
		klog.FromContext(ctx).Info("Warning: --metrics-secure=false serves /metrics in plain HTTP to anyone who can connect; use it on 127.0.0.1 only", "address", o.MetricsBindAddress)
	}
	if o.MetricsSecure && o.MetricsBindAddress != "0" {
		if m.metricsHandler, err = withAuthnAuthz(ctx, client.authentication, client.authorization, m.metricsHandler); err != nil {
			return nil, err
		}
		if m.metricsTLS, m.runMetricsTLS, err = servingTLSConfig(ctx, o.TLSCertFile, o.TLSPrivateKeyFile); err != nil {
			return nil, err
		}
	}

	if m.metricsLn, err = listen(ctx, o.MetricsBindAddress); err != nil {
		return nil, fmt.Errorf("--metrics-bind-address: %w", err)
	}
	if m.healthLn, err = listen(ctx, o.HealthProbeBindAddress); err != nil {
		m.closeListeners()
		return nil, fmt.Errorf("--health-probe-bind-address: %w", err)
	}
	return m, nil
}

// isLoopback reports whether the (validated) bind address addr listens on
// loopback only.
func isLoopback(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listen(ctx context.Context, addr string) (net.Listener, error) {
	if addr == "0" {
		return nil, nil
	}
	return (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
}

func (m *Manager) closeListeners() {
	for _, ln := range []net.Listener{m.metricsLn, m.healthLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// MetricsAddress is the bound metrics address ("" when disabled).
func (m *Manager) MetricsAddress() string { return addrOf(m.metricsLn) }

// HealthAddress is the bound health probe address ("" when disabled).
func (m *Manager) HealthAddress() string { return addrOf(m.healthLn) }

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// Run serves metrics and health, starts the informers, and runs the
// controllers (after winning the lease with --leader-elect) until ctx is
// cancelled; then it lets in-flight work finish within --shutdown-timeout,
// stops the informers, releases the lease and returns nil. It returns
// ErrLeaderElectionLost if the lease could not be renewed.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	o := m.opts

	serversCtx, stopServers := context.WithCancel(context.WithoutCancel(ctx))
	var servers sync.WaitGroup
	defer func() {
		stopServers()
		servers.Wait()
	}()
	if m.runMetricsTLS != nil && m.metricsLn != nil {
		servers.Go(func() { m.runMetricsTLS(serversCtx) })
	}
	serveOn(serversCtx, &servers, "metrics", m.metricsLn, m.metricsHandler, m.metricsTLS)
	serveOn(serversCtx, &servers, "health", m.healthLn, m.health.handler(), nil)

	m.broadcaster.StartStructuredLogging(3)
	m.broadcaster.StartRecordingToSink(newEventSink(ctx,
		&corev1client.EventSinkImpl{Interface: m.client.core.Events("")}, o.EventQPS, o.EventBurst))
	defer m.broadcaster.Shutdown()

	// Informers run for as long as the manager, leader or not, so a standby
	// is ready to take over with warm caches.
	informersStop := make(chan struct{})
	m.informers.Start(informersStop)
	m.sampleFactory.Start(informersStop)
	warmCtx, stopWarm := context.WithCancel(klog.NewContext(context.Background(), logger))
	var warming sync.WaitGroup
	for _, c := range m.controllers {
		if w, ok := c.(controller.Warmer); ok {
			warming.Go(func() { w.Warm(warmCtx) })
		}
	}
	defer func() {
		stopWarm()
		warming.Wait()
		close(informersStop)
		m.informers.Shutdown()
		m.sampleFactory.Shutdown()
	}()
	go func() {
		if m.waitForSync(ctx) {
			logger.Info("Caches synced: ready")
		}
	}()

	if !o.LeaderElection.LeaderElect {
		metrics.SetLeader(true)
		defer metrics.SetLeader(false)
		m.runControllers(ctx)
		return nil
	}
	return m.runLeaderElected(ctx)
}

// serveOn serves h on ln until ctx is done: over TLS when tlsConfig is set.
func serveOn(ctx context.Context, wg *sync.WaitGroup, name string, ln net.Listener, h http.Handler, tlsConfig *tls.Config) {
	if ln == nil {
		return
	}
	wg.Go(func() {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		logger := klog.FromContext(ctx)
		scheme := "http"
		if tlsConfig != nil {
			scheme = "https"
			ln = tls.NewListener(ln, tlsConfig)
		}
		logger.Info("Serving", "server", name, "address", ln.Addr().String(), "scheme", scheme)
		stop := context.AfterFunc(ctx, func() {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
		})
		defer stop()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server failed", "server", name)
		}
	})
}

func (m *Manager) waitForSync(ctx context.Context) bool {
	for {
		if len(m.health.unsynced()) == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// runControllers runs every controller until ctx is done and they drained.
func (m *Manager) runControllers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range m.controllers {
		wg.Go(func() { c.Run(ctx, m.opts.Workers[c.Name()]) })
	}
	wg.Wait()
}

// runLeaderElected runs the controllers while this replica holds the lease.
// A signal (ctx) drains them; losing the lease stops them at once, also in
// the middle of that drain, and makes Run return ErrLeaderElectionLost.
func (m *Manager) runLeaderElected(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	id, err := m.identity()
	if err != nil {
		return err
	}
	// The elector gets its own context, cancelled only once the controllers
	// have drained, so that ReleaseOnCancel never hands the lease over while
	// this replica is still writing.
	leCtx, cancelLE := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelLE()
	t := &leadership{started: make(chan struct{}), done: make(chan struct{})}
	le, err := m.newElector(ctx, id, t, cancelLE)
	if err != nil {
		return err
	}
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		le.Run(leCtx)
	}()

	// The elector returns on its own only when renewing failed.
	select {
	case <-ctx.Done():
	case <-electorDone:
	}
	t.wait()
	cancelLE() // releases the lease if held
	<-electorDone
	t.wait() // won the lease in the meantime: its controllers saw ctx done
	if ctx.Err() != nil {
		logger.Info("Stopped")
		return nil
	}
	logger.Error(nil, "Lost the leader lease: stopped every controller; exiting so a new leader takes over alone", "identity", id)
	return ErrLeaderElectionLost
}

// leadership is this replica's time as the leader: started is closed when
// it won the lease, done once its controllers have returned.
type leadership struct{ started, done chan struct{} }

// wait returns once the controllers have returned, at once if they never
// started.
func (t *leadership) wait() {
	select {
	case <-t.started:
		<-t.done
	default:
	}
}

// identity is --leader-elect-identity, or <hostname>_<random>.
func (m *Manager) identity() (string, error) {
	if id := m.opts.LeaderElectIdentity; id != "" {
		return id, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	return host + "_" + uuid.NewString(), nil
}

// newElector returns the elector of the Lease, which runs the controllers
// (for t) once it leads. When the lease is lost, it cancels leCtx once the
// controllers have stopped, so that the elector gives the lease up too.
func (m *Manager) newElector(ctx context.Context, id string, t *leadership, cancelLE context.CancelFunc) (*leaderelection.LeaderElector, error) {
	logger := klog.FromContext(ctx)
	o := m.opts
	le := &o.LeaderElection
	lock, err := resourcelock.New(le.ResourceLock,
		le.ResourceNamespace, le.ResourceName,
		m.client.core, m.client.coordination,
		resourcelock.ResourceLockConfig{
			Identity:      id,
			EventRecorder: m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "controller-manager", Host: id}),
		})
	if err != nil {
		return nil, fmt.Errorf("creating the leader election lock: %w", err)
	}
	var elector *leaderelection.LeaderElector
	elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		WatchDog:        m.health.leader,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				close(t.started)
				defer close(t.done)
				m.watchLease(leadCtx, elector)
				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				defer context.AfterFunc(m.stopNow, cancel)()
				logger.Info("Became leader: starting controllers", "identity", id)
				metrics.SetLeader(true)
				m.runControllers(runCtx)
				if m.stopNow.Err() != nil {
					// Lost: make the elector give up the lease too, now
					// that nothing of this replica writes any more.
					cancelLE()
				}
			},
			OnStoppedLeading: func() {
				metrics.SetLeader(false)
				logger.Info("Stopped leading", "identity", id)
			},
			OnNewLeader: func(current string) {
				if current != id {
					logger.Info("Another replica leads: standing by with warm caches", "leader", current, "identity", id)
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("configuring leader election: %w", err)
	}
	// Only RunOrDie connects the watchdog itself; without this, /healthz
	// would never see the elector.
	m.health.leader.SetLeaderElection(elector)
	return elector, nil
}

// watchLease ends m.stopNow (cause ErrLeaderElectionLost) when leadCtx
// ends, or as soon as le has seen another holder of the lease or has not
// renewed it for --leader-elect-renew-deadline. The elector gives the lease
// up then too, but it ends leadCtx only after its renew deadline and after
// trying to release the lease, which takes up to another renew deadline
// when the API server is unreachable: by then another replica may lead (it
// can once --leader-elect-lease-duration has passed since the last
// renewal), and this one must no longer be writing.
func (m *Manager) watchLease(leadCtx context.Context, le *leaderelection.LeaderElector) {
	o := &m.opts.LeaderElection
	go func() {
		tick := time.NewTicker(min(o.RetryPeriod.Duration, 100*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-leadCtx.Done():
				m.loseLeaders(ErrLeaderElectionLost)
				return
			case <-tick.C:
				// Check fails once the last renewal is older than
				// LeaseDuration plus its argument.
				if !le.IsLeader() || le.Check(o.RenewDeadline.Duration-o.LeaseDuration.Duration) != nil {
					klog.FromContext(leadCtx).Info("Lease taken over or not renewed within the renew deadline: stopping the controllers at once",
						"leader", le.GetLeader(), "renewDeadline", o.RenewDeadline.Duration)
					m.loseLeaders(ErrLeaderElectionLost)
					return
				}
			}
		}
	}()
}

// CacheTransform is the informers' transform: it keeps the cache lean.
//   - managedFields entries of every field manager but fieldManager are
//     dropped: the cache holds what a controller needs to tell which fields
//     it owns, not the bookkeeping of every other writer;
//   - the kubectl.kubernetes.io/last-applied-configuration annotation (a copy
//     of the whole object) is dropped from Services and Pods, which no
//     controller here writes back;
//   - Services keep only what ingress-manager, their only reader, uses:
//     metadata (but labels), annotations and spec.ports. Labels, the rest of
//     the spec (selector, cluster IPs, ...) and the status go, a large part
//     of a cached Service. A controller that comes to read more of a
//     Service must keep it here.
func CacheTransform(fieldManager string) func(any) (any, error) {
	return func(obj any) (any, error) {
		acc, ok := obj.(metav1.ObjectMetaAccessor)
		if !ok {
			return obj, nil
		}
		meta := acc.GetObjectMeta()
		if mf := meta.GetManagedFields(); len(mf) > 0 {
			var kept []metav1.ManagedFieldsEntry
			for _, e := range mf {
				if e.Manager == fieldManager {
					kept = append(kept, e)
				}
			}
			meta.SetManagedFields(kept)
		}
		switch obj.(type) {
		case *corev1.Service, *corev1.Pod:
			if ann := meta.GetAnnotations(); ann != nil {
				if _, ok := ann[corev1.LastAppliedConfigAnnotation]; ok {
					delete(ann, corev1.LastAppliedConfigAnnotation)
				}
			}
		}
		if svc, ok := obj.(*corev1.Service); ok {
			svc.Labels = nil
			svc.Spec = corev1.ServiceSpec{Ports: svc.Spec.Ports}
			svc.Status = corev1.ServiceStatus{}
		}
		return obj, nil
	}
}
