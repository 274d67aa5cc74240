package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/metrics"
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
	config    *CompletedConfig
	client    *clients
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

// The event broadcaster records the Events of every controller and of
// leader election (patch when client-go aggregates repeats).
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// NewManager builds, from a completed configuration, the clients, the
// shared informer factories and every enabled controller, and binds the
// metrics and health listeners (so a bad address fails here). It starts
// nothing: call Run.
func NewManager(ctx context.Context, c *CompletedConfig, cfg *rest.Config) (*Manager, error) {
	client, err := newClients(c.Clients, cfg)
	if err != nil {
		return nil, err
	}
	mc := &c.Manager
	m := &Manager{config: c, client: client}
	m.informers = controller.NewInformers(controller.InformersConfig{
		Core: client.core, Networking: client.networking,
		Namespace: mc.Namespace, ResyncPeriod: mc.ResyncPeriod, Transform: CacheTransform(mc.FieldManager),
	})
	m.sampleFactory = externalversions.NewSharedInformerFactoryWithOptions(client.sample, mc.ResyncPeriod,
		externalversions.WithNamespace(mc.Namespace),
		externalversions.WithTransform(CacheTransform(mc.FieldManager)))
	m.broadcaster = record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	if c.LeaderElection.LeaderElect {
		m.stopNow, m.loseLeaders = context.WithCancelCause(context.Background())
	}
	if err := m.newControllers(ctx); err != nil {
		return nil, err
	}
	m.health = &health{controllers: m.controllers}
	if c.LeaderElection.LeaderElect {
		// /healthz fails once the last renewal is older than the lease
		// duration plus this tolerance, as kube-controller-manager's.
		m.health.leader = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	if err := m.newServers(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// newControllers builds every enabled controller on the shared informers.
func (m *Manager) newControllers(ctx context.Context) error {
	mc := &m.config.Manager
	cctx := &controller.Context{
		Core:                  m.client.core,
		Networking:            m.client.networking,
		Informers:             m.informers,
		SampleClient:          m.client.sample,
		SampleInformerFactory: m.sampleFactory,
		Gateway:               m.client.gateway,
		Transform:             CacheTransform(mc.FieldManager),
		Discovery:             m.client.discovery,
		EventRecorder: func(component string) record.EventRecorder {
			return m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
		Namespace:    mc.Namespace,
		ResyncPeriod: mc.ResyncPeriod,
		DrainTimeout: mc.ShutdownTimeout,
		FieldManager: mc.FieldManager,
		StopNow:      m.stopNow,
	}
	for _, d := range Controllers() {
		if !mc.Enabled[d.Name] {
			klog.FromContext(ctx).Info("Controller disabled", "controller", d.Name)
			continue
		}
		c, err := d.New(ctx, cctx, mc)
		if err != nil {
			return fmt.Errorf("creating controller %s: %w", d.Name, err)
		}
		m.controllers = append(m.controllers, c)
	}
	return nil
}

// Run serves metrics and health, starts the informers, and runs the
// controllers (after winning the lease with --leader-elect) until ctx is
// cancelled; then it lets in-flight work finish within --shutdown-timeout,
// stops the informers, releases the lease and returns nil. It returns
// ErrLeaderElectionLost if the lease could not be renewed.
func (m *Manager) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	c := m.config

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

	// Events are logged at -v=3; below it, no watcher is started at all:
	// the broadcaster hands each Event to every watcher, and a cold start
	// records one per object.
	if logger.V(3).Enabled() {
		m.broadcaster.StartStructuredLogging(3)
	}
	m.broadcaster.StartRecordingToSink(newEventSink(ctx,
		&corev1client.EventSinkImpl{Interface: m.client.core.Events("")}, c.Clients.EventQPS, c.Clients.EventBurst))
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

	if !c.LeaderElection.LeaderElect {
		metrics.SetLeader(true)
		defer metrics.SetLeader(false)
		m.runControllers(ctx)
		return nil
	}
	return m.runLeaderElected(ctx)
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
		wg.Go(func() { c.Run(ctx, m.config.Manager.Workers[c.Name()]) })
	}
	wg.Wait()
}
