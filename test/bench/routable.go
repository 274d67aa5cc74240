package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework/dataplane"
)

// routableName names the Services of the routable step. They carry the
// steady-state prefix so that the watcher times them like the steady
// state's (Service seen annotated -> Ingress seen).
func routableName(i int) string { return fmt.Sprintf("%sr%06d", steadyPrefix, i) }

// routableNamespace holds the routable step's Services, apart from the
// other phases' thousands, which neither its manager nor Traefik watch.
const routableNamespace = "bench-routable"

// routableHost is the host template of the routable step's manager: one
// host per Service, so that each Ingress routes on its own.
const routableHost = "{{.Name}}.bench.example.com"

// Routable is the event -> routable latency through a real ingress
// controller (Traefik), next to the event -> Ingress latency of the same
// events.
type Routable struct {
	// Skipped says why the step did not run ("" when it ran).
	Skipped  string  `json:"skipped,omitempty"`
	Services int     `json:"services"`
	Rate     float64 `json:"target_rate"`
	// ThrottleMs is Traefik's providersThrottleDuration.
	ThrottleMs float64 `json:"traefik_throttle_ms"`
	// ProbeMs is the interval of the requests that wait for each route.
	ProbeMs    float64 `json:"probe_interval_ms"`
	IngressP50 float64 `json:"event_to_ingress_p50_ms"`
	IngressP99 float64 `json:"event_to_ingress_p99_ms"`
	RouteP50   float64 `json:"event_to_routable_p50_ms"`
	RouteP99   float64 `json:"event_to_routable_p99_ms"`
	RouteMax   float64 `json:"event_to_routable_max_ms"`
	Missing    int     `json:"missing"`
}

// routable annotates Services one by one at a fixed rate while Traefik
// serves the Ingresses: for each, the time from the watcher seeing the
// annotation to the first request through Traefik reaching the backend,
// and to the watcher seeing the Ingress.
func (r *run) routable(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Skip["routable"] || cfg.Routable <= 0 {
		return nil
	}
	if cfg.RoutableRate <= 0 {
		return fmt.Errorf("routable: the rate must be positive, got %g", cfg.RoutableRate)
	}
	res := &Routable{Services: cfg.Routable, Rate: cfg.RoutableRate, ProbeMs: ms(routableProbe)}
	r.res.Ingress.Routable = res
	if !dataplane.Available() {
		res.Skipped = dataplane.Isolation()
		cfg.logf("routable: skipped: %s", res.Skipped)
		return nil
	}
	if err := createNamespace(ctx, r.client, routableNamespace); err != nil {
		return err
	}
	w, err := newWatcher(r.client, routableNamespace)
	if err != nil {
		return err
	}
	defer w.shutdown()
	{
		ctx, cancel := context.WithTimeout(ctx, cfg.phaseTimeout())
		err := w.start(ctx)
		cancel()
		if err != nil {
			return err
		}
	}
	tr, err := dataplane.StartTraefik(r.admin, dataplane.TraefikOptions{Namespaces: []string{routableNamespace}})
	if err != nil {
		return err
	}
	defer tr.Stop()
	res.ThrottleMs = ms(tr.Throttle)
	backend, err := dataplane.NewBackend("bench")
	if err != nil {
		return err
	}
	defer backend.Close()

	names := make([]string, cfg.Routable)
	for i := range names {
		names[i] = routableName(i)
	}
	cfg.logf("routable: creating %d unannotated Services with endpoints on %s:%d", len(names), dataplane.BackendIP, backend.Port)
	{
		ctx, cancel := context.WithTimeout(ctx, cfg.phaseTimeout())
		_, err := parallel(ctx, len(names), 16, func(ctx context.Context, i int) error {
			svc, err := r.client.CoreV1().Services(routableNamespace).Create(ctx, benchService(routableNamespace, names[i], false), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			return dataplane.Publish(ctx, r.client, svc, map[string]*dataplane.Backend{"http": backend})
		})
		cancel()
		if err != nil {
			return fmt.Errorf("routable: creating services: %w", err)
		}
	}

	return r.withManager(ctx, "routable", func(mgr *managerProcess) error {
		ctx, cancel := context.WithTimeout(ctx, cfg.phaseTimeout())
		defer cancel()
		if err := mgr.readyIdle(ctx); err != nil {
			return err
		}
		return measureRoutable(ctx, r, w, tr, backend, names, res)
	}, "--namespace="+routableNamespace, "--ingress-host-template="+routableHost)
}

// routableProbe is how often a request is sent for a Service not routed yet.
const routableProbe = 5 * time.Millisecond

func measureRoutable(ctx context.Context, r *run, w *watcher, tr *dataplane.Traefik, backend *dataplane.Backend, names []string, res *Routable) error {
	patch := []byte(`{"metadata":{"annotations":{"` + ingressmanager.AnnotationHTTP + `":"nginx"}}}`)
	svcs := r.client.CoreV1().Services(routableNamespace)
	interval := time.Duration(float64(time.Second) / res.Rate)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = err
		}
	}
	start := time.Now()
	for i, name := range names {
		if err := sleep(ctx, time.Until(start.Add(time.Duration(i)*interval))); err != nil {
			break
		}
		host := name + ".bench.example.com"
		wg.Go(func() {
			if _, err := svcs.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				fail(fmt.Errorf("annotating %s: %w", name, err))
				return
			}
			// Probe until the backend answers for this host.
			t := time.NewTicker(routableProbe)
			defer t.Stop()
			for {
				resp, err := tr.Get(ctx, host, "/")
				if err == nil && resp.Status == 200 && resp.Backend == backend.Name {
					return
				}
				select {
				case <-ctx.Done():
					fail(fmt.Errorf("%s never became routable: last %v (err %v)", host, resp, err))
					return
				case <-t.C:
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("routable: %w", first)
	}
	if _, err := w.waitFor(ctx, "routable Ingresses", func(w *watcher) bool {
		for _, n := range names {
			if _, ok := w.ingressAt[n]; !ok {
				return false
			}
			if _, ok := w.annotatedAt[n]; !ok {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}

	ingressLat, _ := w.latencies(names)
	var routeLat []time.Duration
	missing := 0
	w.mu.Lock()
	for _, n := range names {
		a, ok1 := w.annotatedAt[n]
		f, ok2 := backend.FirstRequest(n + ".bench.example.com")
		if !ok1 || !ok2 {
			missing++
			continue
		}
		routeLat = append(routeLat, max(0, f.Sub(a)))
	}
	w.mu.Unlock()
	slices.Sort(ingressLat)
	slices.Sort(routeLat)
	res.Missing = missing
	res.IngressP50, res.IngressP99 = ms(percentile(ingressLat, 50)), ms(percentile(ingressLat, 99))
	res.RouteP50, res.RouteP99 = ms(percentile(routeLat, 50)), ms(percentile(routeLat, 99))
	if len(routeLat) > 0 {
		res.RouteMax = ms(routeLat[len(routeLat)-1])
	}
	r.cfg.logf("routable at %.0f/s over %d Services (traefik throttle %.0f ms): event -> Ingress p50 %.1f ms p99 %.1f ms; event -> routable p50 %.1f ms p99 %.1f ms max %.1f ms; missing %d",
		res.Rate, res.Services, res.ThrottleMs, res.IngressP50, res.IngressP99, res.RouteP50, res.RouteP99, res.RouteMax, res.Missing)
	return nil
}
