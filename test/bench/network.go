package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// network measures Networks/s to Ready for each backend latency and worker
// count. The manager runs in-process (the memory backend lives in the
// process), with its logs discarded.
func (r *run) network(ctx context.Context) error {
	jsonCfg := rest.CopyConfig(r.admin)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "", "" // custom resources: JSON
	client, err := versioned.NewForConfig(jsonCfg)
	if err != nil {
		return err
	}
	for _, lat := range r.cfg.NetworkLatencies {
		for _, workers := range r.cfg.NetworkWorkers {
			c, err := r.networkCase(ctx, jsonCfg, client, lat, workers)
			if err != nil {
				return fmt.Errorf("backend latency %v, %d workers: %w", lat, workers, err)
			}
			r.res.Network = append(r.res.Network, c)
			r.cfg.logf("network: latency %v, %d workers: %d Networks Ready in %.2fs: %.1f/s, %.2f writes/Network",
				lat, workers, c.Networks, c.Seconds, c.PerSecond, c.WritesPerNetwork)
		}
	}
	return nil
}

func (r *run) networkCase(ctx context.Context, cfg *rest.Config, client versioned.Interface, latency time.Duration, workers int) (NetCase, error) {
	m := r.cfg.Networks
	res := NetCase{LatencyMs: float64(latency.Milliseconds()), Workers: workers, Networks: m}
	backend := memory.New()
	backend.SetLatency(latency)
	var before requestCounts
	took, err := r.networksToReady(ctx, cfg, client, fmt.Sprintf("bench-net-%d-%d", latency.Milliseconds(), workers), m, workers, backend, time.Second,
		func(ctx context.Context) (err error) { before, err = r.counts(ctx); return err }, nil)
	if err != nil {
		return res, err
	}
	res.Seconds = took.Seconds()
	res.PerSecond = float64(m) / res.Seconds
	after, err := r.counts(ctx)
	if err != nil {
		return res, err
	}
	res.WritesPerNetwork = float64(after.diff(before).writes("networks", "networks/status")) / float64(m)
	return res, nil
}

// networksToReady creates m Networks in the new namespace ns, runs the
// network controller in-process on backend with workers workers (its logs
// discarded) until an independent watch sees them all Ready, and returns
// how long that took from the manager's start. atStart runs just before the
// manager starts; whileRunning, if set, once they are Ready, before the
// manager stops.
func (r *run) networksToReady(ctx context.Context, cfg *rest.Config, client versioned.Interface, ns string, m, workers int,
	backend network.Backend, perNetwork time.Duration, atStart, whileRunning func(context.Context) error) (took time.Duration, err error) {
	return r.networksToReadyWith(ctx, cfg, client, ns, m, workers, backend, perNetwork, cidrSpec, atStart, whileRunning)
}

// cidrSpec is the spec of the i-th Network of a case: a /24 of its own.
func cidrSpec(i int) samplecrdv1.NetworkSpec {
	return samplecrdv1.NetworkSpec{CIDR: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), Gateway: fmt.Sprintf("10.%d.%d.1", i/256, i%256)}
}

// networksToReadyWith is networksToReady with the spec of the i-th Network.
func (r *run) networksToReadyWith(ctx context.Context, cfg *rest.Config, client versioned.Interface, ns string, m, workers int,
	backend network.Backend, perNetwork time.Duration, spec func(i int) samplecrdv1.NetworkSpec, atStart, whileRunning func(context.Context) error) (took time.Duration, err error) {
	if err := createNamespace(ctx, r.client, ns); err != nil {
		return 0, err
	}
	// A real backend takes its time: perNetwork a Network at the most.
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout()+time.Duration(m)*perNetwork)
	defer cancel()

	if _, err := parallel(ctx, m, 16, func(ctx context.Context, i int) error {
		_, err := client.SamplecrdV1().Networks(ns).Create(ctx, &samplecrdv1.Network{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("net-%06d", i)},
			Spec:       spec(i),
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return 0, fmt.Errorf("creating networks: %w", err)
	}

	// The independent watch: counts Ready Networks.
	ready := newReadyCounter(m)
	factory := externalversions.NewSharedInformerFactoryWithOptions(client, 0, externalversions.WithNamespace(ns))
	inf := factory.Samplecrd().V1().Networks().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ready.observe,
		UpdateFunc: func(_, obj any) { ready.observe(obj) },
	}); err != nil {
		return 0, err
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return 0, fmt.Errorf("network watcher did not sync: %w", context.Cause(ctx))
	}

	if err := atStart(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	done, stopMgr, err := startNetworkManager(ctx, cfg, ns, workers, backend)
	if err != nil {
		return 0, err
	}
	defer func() {
		if stopErr := stopMgr(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	select {
	case <-ready.done:
	case <-done:
		return 0, fmt.Errorf("the manager stopped: %v", stopMgr())
	case <-ctx.Done():
		return 0, fmt.Errorf("%d of %d Networks Ready: %w", ready.count(), m, context.Cause(ctx))
	}
	took = ready.at.Sub(start)
	if whileRunning != nil {
		if err := whileRunning(ctx); err != nil {
			return took, err
		}
	}
	return took, nil
}

// startNetworkManager runs the network controller in-process on backend
// for the Networks of ns with workers workers, its logs discarded. done is
// closed when the manager stops; stop stops it and returns its error.
func startNetworkManager(ctx context.Context, cfg *rest.Config, ns string, workers int, backend network.Backend) (done <-chan struct{}, stop func() error, err error) {
	o := app.NewOptions()
	if _, ok := backend.(*neutron.Backend); ok {
		o.NetworkBackendName = "neutron" // the label of its metrics
	}
	o.Controllers = []string{network.Name}
	o.Namespace = ns
	o.Workers[network.Name] = workers
	o.NetworkBackend = backend
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.ShutdownTimeout = 10 * time.Second
	config, err := o.Complete()
	if err != nil {
		return nil, nil, err
	}
	mgrCtx, cancel := context.WithCancel(klog.NewContext(ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(io.Discard)))))
	mgr, err := app.NewManager(mgrCtx, config, cfg)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	stopped := make(chan struct{})
	var runErr error
	go func() {
		defer close(stopped)
		runErr = mgr.Run(mgrCtx)
	}()
	return stopped, func() error {
		cancel()
		<-stopped
		return runErr
	}, nil
}

// readyCounter counts Networks whose Ready condition is True for their
// generation, and closes done when all are.
type readyCounter struct {
	mu    sync.Mutex
	want  int
	ready map[string]bool
	at    time.Time
	done  chan struct{}
}

func newReadyCounter(want int) *readyCounter {
	return &readyCounter{want: want, ready: map[string]bool{}, done: make(chan struct{})}
}

func (c *readyCounter) observe(obj any) {
	n, ok := obj.(*samplecrdv1.Network)
	if !ok {
		return
	}
	cond := apimeta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != n.Generation {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready[n.Name] {
		return
	}
	c.ready[n.Name] = true
	if len(c.ready) == c.want {
		c.at = time.Now()
		close(c.done)
	}
}

func (c *readyCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ready)
}
