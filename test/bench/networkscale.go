package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// scaleNetworkNamespace holds the Networks of the network-scale phase.
const scaleNetworkNamespace = "bench-network-scale"

// NetworkScale is the network-scale phase: the real manager with only the
// network controller on its in-memory backend, started on Config.ScaleNetworks
// Networks, then a restart on their converged state.
type NetworkScale struct {
	Networks int `json:"networks"`
	// CreateSeconds is how long the harness took to create them
	// (concurrency 64; custom resources travel as JSON).
	CreateSeconds float64 `json:"create_seconds"`
	// CacheSyncSeconds is from the process's start until /readyz,
	// ReadySeconds until the independent watch saw every Network Ready.
	CacheSyncSeconds float64 `json:"cache_sync_seconds"`
	ReadySeconds     float64 `json:"ready_seconds"`
	// Writes are the API writes until they settled, by verb and resource
	// (the API server's leases apart); WritesPerNetwork those of Networks
	// and their status per Network.
	Writes           map[string]int64 `json:"writes_by_verb_resource"`
	WritesPerNetwork float64          `json:"writes_per_network"`
	// CPUSeconds is the process's CPU until the writes settled, PeakRSS
	// its VmHWM then and RSS its VmRSS.
	CPUSeconds float64 `json:"cpu_seconds"`
	PeakRSS    int64   `json:"peak_rss_bytes"`
	RSS        int64   `json:"rss_bytes"`
	// Restart is the manager restarted on the converged Networks.
	Restart *NetworkRestart `json:"restart,omitempty"`
}

// NetworkRestart is a network controller restarted with every Network
// converged, the API server and the backend agreeing. The memory backend
// lives in its process, so this runs in the harness's process: a manager
// converges the Networks into a backend, stops, and a new one starts on
// the same backend.
type NetworkRestart struct {
	// ConvergeSeconds is how long the first manager took (a reading: it
	// found the Networks Ready with another backend's IDs).
	ConvergeSeconds float64 `json:"converge_seconds"`
	// Seconds is from the restarted manager's start until it had synced
	// every Network and its queue was empty.
	Seconds float64 `json:"seconds"`
	// Writes are the API writes from its start until they settled (the API
	// server's leases apart), by verb and resource.
	Writes int64            `json:"writes"`
	ByVerb map[string]int64 `json:"writes_by_verb_resource,omitempty"`
	// BackendWrites and BackendReads are the backend's operations
	// (creates, updates, deletes; gets and lists) during the restart.
	BackendWrites int64 `json:"backend_writes"`
	BackendReads  int64 `json:"backend_reads"`
}

// networkScale measures the network controller at Config.ScaleNetworks
// Networks.
func (r *run) networkScale(ctx context.Context) (err error) {
	cfg := r.cfg
	m := cfg.ScaleNetworks
	if m <= 0 {
		return fmt.Errorf("%w: -scale-networks 0", errSkipped)
	}
	if m > 1<<16 {
		return fmt.Errorf("at most %d Networks (one 10.x.y.0/24 each), got %d", 1<<16, m)
	}
	res := &NetworkScale{Networks: m}
	r.res.NetworkScale = res
	jsonCfg := rest.CopyConfig(r.admin)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "", "" // custom resources: JSON
	client, err := versioned.NewForConfig(jsonCfg)
	if err != nil {
		return err
	}
	// Creating them, two managers converging them and a restart: every
	// wait grows with the Networks.
	ctx, cancel := context.WithTimeout(ctx, cfg.phaseTimeout()+time.Duration(m)*60*time.Millisecond)
	defer cancel()
	ns := scaleNetworkNamespace
	if err := createNamespace(ctx, r.client, ns); err != nil {
		return err
	}
	cfg.logf("network-scale: creating %d Networks", m)
	took, err := parallel(ctx, m, 64, func(ctx context.Context, i int) error {
		_, err := client.SamplecrdV1().Networks(ns).Create(ctx, &samplecrdv1.Network{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("net-%06d", i)},
			Spec: samplecrdv1.NetworkSpec{
				CIDR:    fmt.Sprintf("10.%d.%d.0/24", i/256%256, i%256),
				Gateway: fmt.Sprintf("10.%d.%d.1", i/256%256, i%256),
			},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating networks: %w", err)
	}
	res.CreateSeconds = took.Seconds()

	// The independent watch: counts Ready Networks.
	ready := newReadyCounter(m)
	factory := externalversions.NewSharedInformerFactoryWithOptions(client, 0, externalversions.WithNamespace(ns))
	inf := factory.Samplecrd().V1().Networks().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ready.observe,
		UpdateFunc: func(_, obj any) { ready.observe(obj) },
	}); err != nil {
		return err
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("network watcher did not sync: %w", context.Cause(ctx))
	}

	before, err := r.counts(ctx)
	if err != nil {
		return err
	}
	mgr, err := r.startController(r.kubeconfig, "networks", network.Name, ns, "--network-backend=memory")
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := mgr.stop(stopTimeout); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	synced, err := mgr.waitReady(ctx)
	if err != nil {
		return err
	}
	res.CacheSyncSeconds = synced.Sub(mgr.Started).Seconds()
	select {
	case <-ready.done:
	case <-mgr.Done():
		return mgr.errIfExited()
	case <-ctx.Done():
		return fmt.Errorf("%d of %d Networks Ready: %w", ready.count(), m, context.Cause(ctx))
	}
	res.ReadySeconds = ready.at.Sub(mgr.Started).Seconds()
	after, err := r.settle(ctx, mgr)
	if err != nil {
		return err
	}
	d := after.diff(before)
	res.Writes = writesByKey(d)
	res.WritesPerNetwork = float64(d.writes("networks", "networks/status")) / float64(m)
	mem, err := processMemory(mgr.Pid())
	if err != nil {
		return err
	}
	res.PeakRSS, res.RSS = mem.peak, mem.current
	if res.CPUSeconds, err = processCPU(mgr.Pid()); err != nil {
		return err
	}
	cfg.logf("network-scale: %d Networks Ready after %.2fs (caches synced %.2fs), %.2f writes/Network, %.2f CPU-s, peak RSS %s",
		m, res.ReadySeconds, res.CacheSyncSeconds, res.WritesPerNetwork, res.CPUSeconds, mib(res.PeakRSS))
	if err := mgr.stop(stopTimeout); err != nil {
		return err
	}

	restart, err := r.networkRestart(ctx, jsonCfg, ns, m)
	res.Restart = restart
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	cfg.logf("network-scale: converged in-process in %.2fs; restarted on %d converged Networks: synced in %.2fs, %d API writes, %d backend writes, %d backend reads",
		restart.ConvergeSeconds, m, restart.Seconds, restart.Writes, restart.BackendWrites, restart.BackendReads)
	return nil
}

// networkRestart converges the m Networks of ns into a memory backend with
// an in-process manager, stops it, and restarts one on the same backend.
func (r *run) networkRestart(ctx context.Context, cfg *rest.Config, ns string, m int) (*NetworkRestart, error) {
	res := &NetworkRestart{}
	backend := memory.New()
	workers := app.NewOptions().Workers[network.Name] // the manager's default
	converge := func() (time.Duration, func() error, error) {
		mark := framework.MarkQueue(network.Name)
		syncs0, _ := framework.InProcessMetric("controller_reconcile_total", map[string]string{"controller": network.Name})
		start := time.Now()
		done, stop, err := startNetworkManager(ctx, cfg, ns, workers, backend)
		if err != nil {
			return 0, nil, err
		}
		err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
			select {
			case <-done:
				return false, fmt.Errorf("the manager stopped: %v", stop())
			default:
			}
			syncs, _ := framework.InProcessMetric("controller_reconcile_total", map[string]string{"controller": network.Name})
			return syncs-syncs0 >= float64(m) && mark.Idle(), nil
		})
		if err != nil {
			return 0, nil, errors.Join(fmt.Errorf("waiting for the manager to sync every Network: %w", err), stop())
		}
		return time.Since(start), stop, nil
	}
	took, stop, err := converge()
	if err != nil {
		return res, err
	}
	res.ConvergeSeconds = took.Seconds()
	if err := stop(); err != nil {
		return res, err
	}
	// Its status writes settle before the restart's writes are counted.
	prev, err := r.counts(ctx)
	if err != nil {
		return res, err
	}
	for {
		if err := sleep(ctx, r.cfg.Settle); err != nil {
			return res, err
		}
		cur, err := r.counts(ctx)
		if err != nil {
			return res, err
		}
		if writesButLeases(cur.diff(prev)) == 0 {
			prev = cur
			break
		}
		prev = cur
	}
	stats := backend.Stats()
	took, stop, err = converge()
	if err != nil {
		return res, err
	}
	defer func() { _ = stop() }()
	res.Seconds = took.Seconds()
	after := backend.Stats()
	res.BackendWrites = after.Writes() - stats.Writes()
	res.BackendReads = after.Gets + after.Lists - stats.Gets - stats.Lists
	for {
		if err := sleep(ctx, r.cfg.Settle); err != nil {
			return res, err
		}
		cur, err := r.counts(ctx)
		if err != nil {
			return res, err
		}
		d := cur.diff(prev)
		w := writesButLeases(d)
		if w == 0 {
			break
		}
		res.Writes += w
		if res.ByVerb == nil {
			res.ByVerb = map[string]int64{}
		}
		for k, v := range writesByKey(d) {
			res.ByVerb[k] += v
		}
		prev = cur
	}
	return res, stop()
}
