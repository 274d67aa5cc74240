package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
)

const stopTimeout = time.Minute

func mainName(i int) string   { return fmt.Sprintf("%s%06d", mainPrefix, i) }
func steadyName(i int) string { return fmt.Sprintf("%s%06d", steadyPrefix, i) }

// startEmpty starts the N=0 manager before the limit phase: its memory is
// read after it (once a garbage collection ran), so the wait for that GC
// overlaps the limit phase. The limit phase's Ingresses are in another
// namespace, which this manager does not watch.
func (r *run) startEmpty(ctx context.Context) error {
	p, err := r.startManager("n0")
	if err != nil {
		return err
	}
	r.empty = p
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
	defer cancel()
	if _, err := p.waitReady(ctx); err != nil {
		return err
	}
	if r.emptyCycles, err = p.gcCycles(ctx); err != nil {
		return err
	}
	if m, err := p.metrics(ctx); err == nil {
		r.res.Versions.ManagerGo = m.label("go_info", "version")
	}
	return nil
}

// ingressManager runs the ingress-manager scenarios against the real
// binary. Four manager processes run one after the other:
//   - cold: started on N annotated Services; then remove;
//   - services: started on N Services without Ingresses (its memory is that
//     of N cached Services); then re-add and recreate;
//   - restart: started on the converged state with a short resync: write
//     counts of the restart and idle windows, and memory at N;
//   - steady: default flags; the steady-state latency;
//   - routable: one host per Service; the event -> routable latency through
//     Traefik (see routable.go).
func (r *run) ingressManager(ctx context.Context) (err error) {
	cfg := r.cfg
	n := cfg.N
	timeout := cfg.phaseTimeout()
	mem := &r.res.Memory

	// N=0 memory, then stop that manager.
	{
		ctx, cancel := context.WithTimeout(ctx, cfg.GCWait+timeout)
		mem.Empty, err = r.empty.heap(ctx, cfg.GCWait, r.emptyCycles, 0, 0)
		cancel()
		if err != nil {
			return fmt.Errorf("manager memory at N=0: %w", err)
		}
		if err := r.empty.stop(stopTimeout); err != nil {
			return err
		}
		r.empty = nil
		cfg.logf("N=0: peak RSS %s, heap live %s", mib(mem.Empty.PeakRSS), mib(mem.Empty.HeapLive))
	}

	w, err := newWatcher(r.client, benchNamespace)
	if err != nil {
		return err
	}
	r.w = w
	defer w.shutdown()
	{
		ctx, cancel := context.WithTimeout(ctx, timeout)
		err := w.start(ctx)
		cancel()
		if err != nil {
			return err
		}
	}

	// The N annotated Services exist before the manager starts.
	cfg.logf("creating %d annotated Services", n)
	if err := r.createServices(ctx, n, mainName, true); err != nil {
		return err
	}

	steps := []func(context.Context) error{r.coldAndRemove, r.readdAndRecreate, r.restartAndIdle, r.steady, r.routable}
	if cfg.Scale {
		steps = steps[:2] // readdAndRecreate stops after its memory reading
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// createServices creates count benchmark Services (the harness's writes, at
// concurrency 64).
func (r *run) createServices(ctx context.Context, count int, name func(int) string, annotated bool) error {
	return r.createServicesWith(ctx, r.client, count, name, annotated)
}

// createServicesWith is createServices with client.
func (r *run) createServicesWith(ctx context.Context, client kubernetes.Interface, count int, name func(int) string, annotated bool) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
	defer cancel()
	svcs := client.CoreV1().Services(benchNamespace)
	if _, err := parallel(ctx, count, 64, func(ctx context.Context, i int) error {
		_, err := svcs.Create(ctx, benchService(benchNamespace, name(i), annotated), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating services: %w", err)
	}
	return nil
}

// withManager starts a manager, runs f with it and stops it.
func (r *run) withManager(ctx context.Context, name string, f func(*managerProcess) error, extra ...string) (err error) {
	mgr, err := r.startManager(name, extra...)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := mgr.stop(stopTimeout); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	return f(mgr)
}

// coldAndRemove: the manager starts on N annotated Services (cold), then
// the annotation is removed from all of them. The cold start is measured
// Config.ColdRuns times, each against the direct create rate measured just
// before it; every start but the last is stopped and its Ingresses deleted.
func (r *run) coldAndRemove(ctx context.Context) error {
	n := r.cfg.N
	var runs []ColdRun
	starts := r.cfg.coldRuns()
	if r.cfg.Scale {
		// The curve takes the cold starts of the peer phase, on fresh
		// control planes; here one start leads to the removal.
		starts = 1
	}
	for i := 1; i < starts; i++ {
		run, err := r.coldRun(ctx, i)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	l, err := r.createRate(ctx, r.client, n)
	if err != nil {
		return err
	}
	before, err := r.counts(ctx)
	if err != nil {
		return err
	}
	cpu0 := sampleCPU()
	return r.withManager(ctx, "cold", func(mgr *managerProcess) error {
		phase := Phase{Name: "cold"}
		ctx2, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
		defer cancel()
		synced, err := mgr.waitReady(ctx2)
		if err != nil {
			return err
		}
		phase.CacheSyncSeconds = synced.Sub(mgr.Started).Seconds()
		last, err := r.coldStart(ctx2, mgr, l, len(runs)+1)
		if err != nil {
			return err
		}
		phase.Runs = append(runs, last)
		if err := r.finishPhase(ctx, mgr, before, counters{machine: cpu0}, &phase); err != nil {
			return err
		}

		remove := []byte(`{"metadata":{"annotations":{"` + ingressmanager.AnnotationHTTP + `":null}}}`)
		return r.patchAll(ctx, mgr, &Phase{Name: "remove"}, remove, func(w *watcher) bool { return len(w.mainAny) == 0 }, "no Ingresses")
	})
}

// coldStart waits (bounded by ctx) until the watcher sees the N owned
// Ingresses of mgr's cold start, the i-th, and returns it against l.
func (r *run) coldStart(ctx context.Context, mgr *managerProcess, l float64, i int) (ColdRun, error) {
	n := r.cfg.N
	done, err := r.w.waitFor(ctx, fmt.Sprintf("%d owned Ingresses", n), func(w *watcher) bool { return len(w.owned) == n })
	if err != nil {
		return ColdRun{}, fmt.Errorf("cold start %d: %w", i, errors.Join(err, mgr.errIfExited()))
	}
	took := done.Sub(mgr.Started).Seconds()
	run := ColdRun{L: l, Seconds: took, Ratio: took / (float64(n) / l)}
	r.cfg.logf("cold, start %d: %.2fs, %.2f x N/L (L %.0f/s)", i, run.Seconds, run.Ratio, l)
	return run, nil
}

// coldRun is one cold start but the last: L measured, a manager started on
// the N annotated Services and stopped once the watcher saw their N
// Ingresses, which are then deleted.
func (r *run) coldRun(ctx context.Context, i int) (ColdRun, error) {
	n := r.cfg.N
	l, err := r.createRate(ctx, r.client, n)
	if err != nil {
		return ColdRun{}, err
	}
	var run ColdRun
	var extra []string
	if r.cfg.CPUProfileDir != "" {
		extra = []string{"--profiling"}
	}
	err = r.withManager(ctx, fmt.Sprintf("cold-%d", i), func(mgr *managerProcess) (err error) {
		ctx2, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
		defer cancel()
		profile := r.profiled(ctx2, mgr, fmt.Sprintf("cold-%d", i), l)
		run, err = r.coldStart(ctx2, mgr, l, i)
		return errors.Join(err, profile())
	}, extra...)
	if err != nil {
		return ColdRun{}, err
	}
	ctx2, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
	defer cancel()
	if err := r.client.NetworkingV1().Ingresses(benchNamespace).DeleteCollection(ctx2, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return ColdRun{}, fmt.Errorf("deleting the ingresses of cold start %d: %w", i, err)
	}
	if _, err := r.w.waitFor(ctx2, "no Ingresses", func(w *watcher) bool { return len(w.mainAny) == 0 }); err != nil {
		return ColdRun{}, err
	}
	return run, nil
}

// readdAndRecreate: a fresh manager on N Services without Ingresses (its
// memory is that of N cached Services), then the annotation is put back,
// then every Ingress is deleted at once.
func (r *run) readdAndRecreate(ctx context.Context) error {
	n := r.cfg.N
	return r.withManager(ctx, "services", func(mgr *managerProcess) error {
		ctx2, cancel := context.WithTimeout(ctx, r.cfg.GCWait+r.cfg.phaseTimeout())
		defer cancel()
		if err := mgr.readyIdle(ctx2); err != nil {
			return err
		}
		since, err := mgr.gcCycles(ctx2)
		if err != nil {
			return err
		}
		mem := &r.res.Memory
		if mem.Services, err = mgr.heap(ctx2, r.cfg.GCWait, since, n, 0); err != nil {
			return fmt.Errorf("manager memory with %d Services: %w", n, err)
		}
		mem.BytesPerService = float64(mem.Services.HeapLive-mem.Empty.HeapLive) / float64(n)
		r.cfg.logf("N=%d Services: heap live %s: %.0f B/Service", n, mib(mem.Services.HeapLive), mem.BytesPerService)
		if r.cfg.Scale {
			return nil
		}

		add := []byte(`{"metadata":{"annotations":{"` + ingressmanager.AnnotationHTTP + `":"nginx"}}}`)
		if err := r.patchAll(ctx, mgr, &Phase{Name: "re-add"}, add, func(w *watcher) bool { return len(w.owned) == n }, fmt.Sprintf("%d owned Ingresses", n)); err != nil {
			return err
		}

		phase := Phase{Name: "recreate"}
		r.w.snapshot()
		before, mgrBefore, err := r.phaseStart(ctx, mgr)
		if err != nil {
			return err
		}
		ctx3, cancel3 := context.WithTimeout(ctx, r.cfg.phaseTimeout())
		defer cancel3()
		start := time.Now()
		if err := r.client.NetworkingV1().Ingresses(benchNamespace).DeleteCollection(ctx3, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("deleting the ingresses: %w", err)
		}
		phase.HarnessSeconds = time.Since(start).Seconds()
		done, err := r.w.waitFor(ctx3, fmt.Sprintf("%d recreated Ingresses", n), func(w *watcher) bool { return w.fresh == n })
		if err != nil {
			return err
		}
		phase.Seconds = done.Sub(start).Seconds()
		return r.finishPhase(ctx, mgr, before, mgrBefore, &phase)
	})
}

// patchAll patches the N Services (the harness's writes, at concurrency 64)
// and waits until the watcher sees done.
func (r *run) patchAll(ctx context.Context, mgr *managerProcess, phase *Phase, patch []byte, done func(*watcher) bool, what string) error {
	before, mgrBefore, err := r.phaseStart(ctx, mgr)
	if err != nil {
		return err
	}
	ctx2, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
	defer cancel()
	svcs := r.client.CoreV1().Services(benchNamespace)
	start := time.Now()
	took, err := parallel(ctx2, r.cfg.N, 64, func(ctx context.Context, i int) error {
		_, err := svcs.Patch(ctx, mainName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: patching services: %w", phase.Name, err)
	}
	phase.HarnessSeconds = took.Seconds()
	at, err := r.w.waitFor(ctx2, what, done)
	if err != nil {
		return fmt.Errorf("%s: %w", phase.Name, err)
	}
	phase.Seconds = at.Sub(start).Seconds()
	return r.finishPhase(ctx, mgr, before, mgrBefore, phase)
}

// phaseStart reads the counters a phase's figures are taken against.
func (r *run) phaseStart(ctx context.Context, mgr *managerProcess) (requestCounts, counters, error) {
	before, err := r.counts(ctx)
	if err != nil {
		return nil, counters{}, err
	}
	mgrBefore, err := mgr.counters(ctx)
	return before, mgrBefore, err
}

// finishPhase waits for the manager and the API server's write counters
// to settle, then records the phase's writes.
func (r *run) finishPhase(ctx context.Context, mgr *managerProcess, before requestCounts, mgrBefore counters, phase *Phase) error {
	phase.OtherCPU = mgrBefore.machine.otherShare(sampleCPU())
	after, err := r.settle(ctx, mgr)
	if err != nil {
		return fmt.Errorf("%s: %w", phase.Name, err)
	}
	mgrAfter, err := mgr.counters(ctx)
	if err != nil {
		return err
	}
	phase.ManagerCPUSeconds = mgrAfter.cpu - mgrBefore.cpu
	phase.RateLimitedSeconds = mgrAfter.rateLimited - mgrBefore.rateLimited
	d := after.diff(before)
	phase.IngressWrites = d.byVerb("ingresses")
	// The harness's own deletecollection (recreate) is not the manager's.
	delete(phase.IngressWrites, "DELETECOLLECTION")
	var total int64
	for _, v := range phase.IngressWrites {
		total += v
	}
	phase.WritesPerObject = float64(total) / float64(r.cfg.N)
	phase.EventWrites = d.writes("events")
	phase.OtherWrites = map[string]int64{}
	for k, v := range d {
		verb, res, _ := strings.Cut(k, " ")
		if writeVerbs[verb] && res != "events" && (res != "ingresses" || verb == "DELETECOLLECTION") {
			phase.OtherWrites[k] = int64(v)
		}
	}
	if len(phase.Runs) > 0 {
		m := medianRun(phase.Runs)
		phase.Seconds, phase.Ratio = m.Seconds, m.Ratio
	} else if r.l > 0 {
		phase.Ratio = phase.Seconds / (float64(r.cfg.N) / r.l)
	}
	if la := r.res.Limit.LApply; la > 0 {
		phase.RatioApply = phase.Seconds / (float64(r.cfg.N) / la)
	}
	phase.CPUms = 1000 * d.controlPlaneCPU() / float64(r.cfg.N)
	if r.createCPUms > 0 {
		phase.CPURatio = phase.CPUms / r.createCPUms
	}
	r.res.Ingress.Phases = append(r.res.Ingress.Phases, *phase)
	r.cfg.logf("%s: %.2fs (%.2f x N/L), %.2f Ingress writes/object %v, %d Event writes; control plane CPU %.2f ms/object (%.2f x a create); manager CPU %.2fs, rate-limited %.2fs; other processes %.0f%% of the CPU",
		phase.Name, phase.Seconds, phase.Ratio, phase.WritesPerObject, phase.IngressWrites, phase.EventWrites,
		phase.CPUms, phase.CPURatio, phase.ManagerCPUSeconds, phase.RateLimitedSeconds, 100*phase.OtherCPU)
	return nil
}

// settle waits until the manager's queue is empty and the API server's
// write counters (but the API server's own lease renewals) stop moving,
// and returns the last counts.
func (r *run) settle(ctx context.Context, mgr *managerProcess) (requestCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
	defer cancel()
	if err := mgr.idle(ctx); err != nil {
		return nil, err
	}
	prev, err := r.counts(ctx)
	if err != nil {
		return nil, err
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("API writes did not settle: %w", context.Cause(ctx))
		case <-time.After(r.cfg.Settle):
		}
		cur, err := r.counts(ctx)
		if err != nil {
			return nil, err
		}
		if writesButLeases(cur.diff(prev)) == 0 {
			return cur, nil
		}
		prev = cur
	}
}

// writesButLeases counts every write but those on leases (the API server
// renews its own identity lease every few seconds; the manager runs
// without leader election).
func writesButLeases(d requestCounts) int64 {
	var n float64
	for k, v := range d {
		verb, res, _ := strings.Cut(k, " ")
		if writeVerbs[verb] && res != "leases" {
			n += v
		}
	}
	return int64(n)
}

func writesByKey(d requestCounts) map[string]int64 {
	out := map[string]int64{}
	for k, v := range d {
		verb, res, _ := strings.Cut(k, " ")
		if writeVerbs[verb] && res != "leases" {
			out[k] = int64(v)
		}
	}
	return out
}

// restartAndIdle starts a manager on the converged state, with a short
// resync, and counts writes over the restart window, then over the idle
// window; then it reads the manager's memory with N Services and Ingresses.
func (r *run) restartAndIdle(ctx context.Context) error {
	cfg := r.cfg
	n := cfg.N
	before, err := r.counts(ctx)
	if err != nil {
		return err
	}
	return r.withManager(ctx, "restart", func(mgr *managerProcess) error {
		rs := &r.res.Ingress.Restart
		rs.Resync = cfg.IdleResync.Seconds()
		ctx2, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
		synced, err := mgr.waitReady(ctx2)
		cancel()
		if err != nil {
			return err
		}
		rs.CacheSyn = synced.Sub(mgr.Started).Seconds()
		if err := sleep(ctx, time.Until(mgr.Started.Add(cfg.RestartWindow))); err != nil {
			return err
		}
		after, err := r.counts(ctx)
		if err != nil {
			return err
		}
		rs.Seconds = time.Since(mgr.Started).Seconds()
		d := after.diff(before)
		rs.Writes, rs.ByVerb = writesButLeases(d), writesByKey(d)
		if rs.Syncs, err = mgr.syncs(ctx); err != nil {
			return err
		}
		cfg.logf("restart: %d writes in %.1fs (caches synced in %.2fs), %d syncs", rs.Writes, rs.Seconds, rs.CacheSyn, rs.Syncs)

		idle := &r.res.Ingress.Idle
		idle.Resync = cfg.IdleResync.Seconds()
		cycles, err := mgr.gcCycles(ctx)
		if err != nil {
			return err
		}
		start := time.Now()
		before = after
		if err := sleep(ctx, cfg.IdleWindow); err != nil {
			return err
		}
		if after, err = r.counts(ctx); err != nil {
			return err
		}
		idle.Seconds = time.Since(start).Seconds()
		d = after.diff(before)
		idle.Writes, idle.ByVerb = writesButLeases(d), writesByKey(d)
		s, err := mgr.syncs(ctx)
		if err != nil {
			return err
		}
		idle.Syncs = s - rs.Syncs
		cfg.logf("idle: %d writes in %.1fs with resync every %v, %d syncs", idle.Writes, idle.Seconds, cfg.IdleResync, idle.Syncs)

		// Memory at N, converged: a process that never wrote (no
		// Events in flight), its caches full, resyncing.
		mem := &r.res.Memory
		ctx3, cancel3 := context.WithTimeout(ctx, cfg.GCWait+r.cfg.phaseTimeout())
		defer cancel3()
		if mem.Full, err = mgr.heap(ctx3, cfg.GCWait, cycles, n, n); err != nil {
			return fmt.Errorf("manager memory at N=%d: %w", n, err)
		}
		mem.BytesPerPair = float64(mem.Full.HeapLive-mem.Empty.HeapLive) / float64(n)
		cfg.logf("N=%d Services + Ingresses: peak RSS %s, heap live %s; %.0f B/(Service+Ingress)", n,
			mib(mem.Full.PeakRSS), mib(mem.Full.HeapLive), mem.BytesPerPair)
		return nil
	}, fmt.Sprintf("--resync-period=%s", cfg.IdleResync))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// steady runs the open-loop generator at each rate against a manager with
// default flags: it annotates pool Services on a fixed schedule (not
// waiting for answers), and the watcher times Service-annotated ->
// Ingress-visible.
func (r *run) steady(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Skip["steady"] || (len(cfg.SteadyRates) == 0 && cfg.SteadyLFraction <= 0) {
		return nil
	}
	rates := slices.Clone(cfg.SteadyRates)
	if cfg.SteadyLFraction > 0 && r.l > 0 {
		rates = append(rates, cfg.SteadyLFraction*r.l)
	}
	counts := make([]int, len(rates))
	total := 0
	for i, rt := range rates {
		counts[i] = max(1, int(rt*cfg.SteadyWindow.Seconds()))
		total += counts[i]
	}
	cfg.logf("steady: creating a pool of %d unannotated Services", total)
	if err := r.createServices(ctx, total, steadyName, false); err != nil {
		return err
	}
	return r.withManager(ctx, "steady", func(mgr *managerProcess) error {
		ctx2, cancel := context.WithTimeout(ctx, cfg.phaseTimeout())
		defer cancel()
		if err := mgr.readyIdle(ctx2); err != nil {
			return err
		}
		return r.runRates(ctx, mgr, rates, counts)
	})
}

func (r *run) runRates(ctx context.Context, mgr *managerProcess, rates []float64, counts []int) error {
	cfg := r.cfg
	add := []byte(`{"metadata":{"annotations":{"` + ingressmanager.AnnotationHTTP + `":"nginx"}}}`)
	next := 0
	for i, rt := range rates {
		names := make([]string, counts[i])
		for j := range names {
			names[j] = steadyName(next + j)
		}
		next += counts[i]
		before, err := r.counts(ctx)
		if err != nil {
			return err
		}
		cpu0 := sampleCPU()
		res, err := r.generate(ctx, r.w, rt, names, add)
		if err != nil {
			return err
		}
		res.OtherCPU = cpu0.otherShare(sampleCPU())
		after, err := r.settle(ctx, mgr)
		if err != nil {
			return err
		}
		d := after.diff(before)
		res.WritesPerEvent = float64(d.writes("ingresses")) / float64(len(names))
		r.res.Ingress.Steady = append(r.res.Ingress.Steady, res)
		cfg.logf("steady at %.0f/s (achieved %.1f/s): %d events, p50 %.1f ms, p99 %.1f ms, max %.1f ms, missing %d, generator lag %.1f ms",
			rt, res.AchievedRate, res.Events, res.P50ms, res.P99ms, res.Maxms, res.Missing, res.GeneratorLagMs)
	}
	return nil
}

// generate sends one annotation per name at rate/s on a fixed schedule
// and waits for every Ingress.
func (r *run) generate(ctx context.Context, w *watcher, rate float64, names []string, patch []byte) (Steady, error) {
	res := Steady{TargetRate: rate, Events: len(names)}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.phaseTimeout())
	defer cancel()
	svcs := r.client.CoreV1().Services(benchNamespace)
	wantIngresses, wantAnnotated := w.steadyCounts()
	wantIngresses += len(names)
	wantAnnotated += len(names)
	interval := time.Duration(float64(time.Second) / rate)
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		sendErr error
		lag     time.Duration
		last    time.Time
	)
	start := time.Now()
	for i, name := range names {
		at := start.Add(time.Duration(i) * interval)
		if err := sleep(ctx, time.Until(at)); err != nil {
			wg.Wait()
			return res, err
		}
		now := time.Now()
		lag = max(lag, now.Sub(at))
		last = now
		wg.Go(func() {
			if _, err := svcs.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				errMu.Lock()
				sendErr = err
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	if sendErr != nil {
		return res, fmt.Errorf("steady state at %.0f/s: annotating: %w", rate, sendErr)
	}
	if len(names) > 1 {
		res.AchievedRate = float64(len(names)-1) / last.Sub(start).Seconds()
	} else {
		res.AchievedRate = rate
	}
	res.GeneratorLagMs = ms(lag)
	// Both watch streams must have delivered every event: the Ingress may
	// be seen before its Service's update.
	if _, err := w.waitFor(ctx, fmt.Sprintf("%d steady-state Ingresses", wantIngresses), func(w *watcher) bool {
		return len(w.ingressAt) >= wantIngresses && len(w.annotatedAt) >= wantAnnotated
	}); err != nil {
		return res, err
	}
	lat, missing := w.latencies(names)
	slices.Sort(lat)
	res.Missing = missing
	res.P50ms = ms(percentile(lat, 50))
	res.P99ms = ms(percentile(lat, 99))
	if len(lat) > 0 {
		res.Maxms = ms(lat[len(lat)-1])
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
