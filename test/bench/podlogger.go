package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-sample/controller-manager/internal/controller/podlogger"
)

// Namespaces of the podlogger phase: the Pods', and an empty one watched
// by the manager whose memory is the phase's N=0.
const (
	podNamespace      = "bench-pods"
	podEmptyNamespace = "bench-pods-empty"
)

// PodLogger is the podlogger phase: the real manager with only the
// pod-logger controller, started on Pods created directly through the API
// (no kubelet, no scheduler: they stay Pending), then under a steady rate
// of Pod updates.
type PodLogger struct {
	Pods int `json:"pods"`
	// CreateSeconds is how long the harness took to create them
	// (protobuf, concurrency 64).
	CreateSeconds float64 `json:"create_seconds"`
	// CacheSyncSeconds is from the process's start until /readyz (its
	// informers synced); StartupSeconds until its queue was first empty,
	// every Pod synced and logged once ("added"), and StartupCPUSeconds
	// the process's CPU until then.
	CacheSyncSeconds  float64 `json:"cache_sync_seconds"`
	StartupSeconds    float64 `json:"startup_seconds"`
	StartupCPUSeconds float64 `json:"startup_cpu_seconds"`
	// Empty is the pod-logger manager watching an empty namespace, Full
	// the one with the Pods cached (Objects counts Pods).
	Empty Heap `json:"n0"`
	Full  Heap `json:"n_pods"`
	// HeapBytesPerPod is (Full.HeapLive - Empty.HeapLive) / Pods,
	// RSSBytesPerPod (Full.PeakRSS - Empty.PeakRSS) / Pods.
	HeapBytesPerPod float64 `json:"heap_bytes_per_pod"`
	RSSBytesPerPod  float64 `json:"peak_rss_bytes_per_pod"`
	// Updates is the steady update load: one label patch per Pod.
	Updates PodUpdates `json:"updates"`
}

// PodUpdates is the podlogger phase's steady update load: each update is
// a label patch of its own Pod, sent on a fixed schedule; its lag runs
// from the moment the harness sent it (its own clock) to the timestamp of
// the manager's log line for it.
type PodUpdates struct {
	TargetRate   float64 `json:"target_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	Events       int     `json:"events"`
	Missing      int     `json:"missing"`
	P50ms        float64 `json:"lag_p50_ms"`
	P99ms        float64 `json:"lag_p99_ms"`
	Maxms        float64 `json:"lag_max_ms"`
	// CPUSeconds is the manager's CPU over Seconds, from the first update
	// until every one was logged and its queue was empty; IdleCPUSeconds
	// its CPU over as long a time at its rate over a window of no update
	// just before (as long as the updates' schedule).
	Seconds        float64 `json:"seconds"`
	CPUSeconds     float64 `json:"cpu_seconds"`
	IdleCPUSeconds float64 `json:"idle_cpu_seconds"`
	// CPUPerEventMs is (CPUSeconds - IdleCPUSeconds) / Events, in ms: what
	// syncing and logging one update costs at this many cached Pods.
	CPUPerEventMs float64 `json:"cpu_ms_per_event"`
	// LogBytesPerEvent is what the manager's log grew per update.
	LogBytesPerEvent float64 `json:"log_bytes_per_event"`
	OtherCPU         float64 `json:"other_processes_cpu_share"`
}

func podName(i int) string { return fmt.Sprintf("pod-%06d", i) }

// benchPod is a minimal valid Pod: one container, nothing else; the API
// server's defaults and admission fill in the rest as they do for any Pod.
func benchPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}

// podLoggerPhase measures the pod-logger controller at Config.Pods Pods.
func (r *run) podLoggerPhase(ctx context.Context) (err error) {
	cfg := r.cfg
	n := cfg.Pods
	if n <= 0 {
		return fmt.Errorf("%w: -pods 0", errSkipped)
	}
	if cfg.PodUpdateRate <= 0 || cfg.PodUpdateWindow <= 0 {
		return fmt.Errorf("the pod update rate and window must be positive, got %v/s for %v", cfg.PodUpdateRate, cfg.PodUpdateWindow)
	}
	res := &PodLogger{Pods: n}
	r.res.PodLogger = res
	// Every wait grows with the Pods, as the phase timeout does with N.
	timeout := max(cfg.phaseTimeout(), 2*time.Minute+time.Duration(n)*30*time.Millisecond)
	for _, ns := range []string{podNamespace, podEmptyNamespace} {
		if err := createNamespace(ctx, r.client, ns); err != nil {
			return err
		}
		// No kube-controller-manager creates it; the ServiceAccount
		// admission plugin refuses Pods without it.
		_, err := r.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the default ServiceAccount of %s: %w", ns, err)
		}
	}

	// N=0: the same controller on an empty namespace. Its memory is read
	// after the Pods are created, so that the wait for its GC overlaps.
	empty, err := r.startController(r.kubeconfig, "pods-n0", podlogger.Name, podEmptyNamespace)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := empty.stop(stopTimeout); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	ctx2, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := empty.waitReady(ctx2); err != nil {
		return err
	}
	emptyCycles, err := empty.gcCycles(ctx2)
	if err != nil {
		return err
	}

	cfg.logf("podlogger: creating %d Pods", n)
	pods := r.client.CoreV1().Pods(podNamespace)
	took, err := parallel(ctx2, n, 64, func(ctx context.Context, i int) error {
		_, err := pods.Create(ctx, benchPod(podNamespace, podName(i)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating pods: %w", err)
	}
	res.CreateSeconds = took.Seconds()
	cfg.logf("podlogger: %d Pods created in %.1fs", n, res.CreateSeconds)

	ctx3, cancel3 := context.WithTimeout(ctx, cfg.GCWait+timeout)
	defer cancel3()
	if res.Empty, err = empty.heap(ctx3, cfg.GCWait, emptyCycles, 0, 0); err != nil {
		return fmt.Errorf("pod-logger memory at N=0: %w", err)
	}
	if err := empty.stop(stopTimeout); err != nil {
		return err
	}

	mgr, err := r.startController(r.kubeconfig, "pods", podlogger.Name, podNamespace)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := mgr.stop(stopTimeout); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	synced, err := mgr.waitReady(ctx3)
	if err != nil {
		return err
	}
	res.CacheSyncSeconds = synced.Sub(mgr.Started).Seconds()
	if err := mgr.idle(ctx3); err != nil {
		return err
	}
	res.StartupSeconds = time.Since(mgr.Started).Seconds()
	c, err := mgr.counters(ctx3)
	if err != nil {
		return err
	}
	res.StartupCPUSeconds = c.cpu
	cfg.logf("podlogger: caches synced in %.2fs, every Pod logged after %.2fs, %.2f CPU-s", res.CacheSyncSeconds, res.StartupSeconds, res.StartupCPUSeconds)
	cycles, err := mgr.gcCycles(ctx3)
	if err != nil {
		return err
	}
	if res.Full, err = mgr.heap(ctx3, cfg.GCWait, cycles, n, 0); err != nil {
		return fmt.Errorf("pod-logger memory at %d Pods: %w", n, err)
	}
	res.HeapBytesPerPod = float64(res.Full.HeapLive-res.Empty.HeapLive) / float64(n)
	res.RSSBytesPerPod = float64(res.Full.PeakRSS-res.Empty.PeakRSS) / float64(n)
	cfg.logf("podlogger: N=0 peak RSS %s, heap %s; %d Pods: peak RSS %s, heap %s: %.0f B heap, %.0f B peak RSS per Pod",
		mib(res.Empty.PeakRSS), mib(res.Empty.HeapLive), n, mib(res.Full.PeakRSS), mib(res.Full.HeapLive), res.HeapBytesPerPod, res.RSSBytesPerPod)

	if res.Updates, err = r.podUpdates(ctx, mgr); err != nil {
		return err
	}
	u := res.Updates
	cfg.logf("podlogger: %d updates at %.0f/s (achieved %.1f/s): lag p50 %.1f ms, p99 %.1f ms, max %.1f ms, missing %d; %.3f ms CPU and %.0f log bytes per event",
		u.Events, u.TargetRate, u.AchievedRate, u.P50ms, u.P99ms, u.Maxms, u.Missing, u.CPUPerEventMs, u.LogBytesPerEvent)
	return nil
}

// podUpdates runs the steady update load against mgr: the manager's CPU
// over an idle window, then one label patch per Pod at PodUpdateRate for
// PodUpdateWindow (at most one per Pod), each timed from its send to its
// log line.
func (r *run) podUpdates(ctx context.Context, mgr *managerProcess) (PodUpdates, error) {
	cfg := r.cfg
	u := PodUpdates{TargetRate: cfg.PodUpdateRate}
	count := min(cfg.Pods, max(1, int(cfg.PodUpdateRate*cfg.PodUpdateWindow.Seconds())))
	u.Events = count
	interval := time.Duration(float64(time.Second) / cfg.PodUpdateRate)
	window := time.Duration(count) * interval

	idle0, err := mgr.counters(ctx)
	if err != nil {
		return u, err
	}
	start := time.Now()
	if err := sleep(ctx, window); err != nil {
		return u, err
	}
	idle1, err := mgr.counters(ctx)
	if err != nil {
		return u, err
	}
	idleRate := (idle1.cpu - idle0.cpu) / time.Since(start).Seconds()

	log, err := newLogFollower(mgr.LogPath())
	if err != nil {
		return u, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.phaseTimeout())
	defer cancel()
	pods := r.client.CoreV1().Pods(podNamespace)
	patch := []byte(`{"metadata":{"labels":{"bench-update":"1"}}}`)
	sent := make([]time.Time, count)
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		sendErr error
	)
	before, err := mgr.counters(ctx)
	if err != nil {
		return u, err
	}
	start = time.Now()
	for i := range count {
		if err := sleep(ctx, time.Until(start.Add(time.Duration(i)*interval))); err != nil {
			wg.Wait()
			return u, err
		}
		sent[i] = time.Now()
		wg.Go(func() {
			if _, err := pods.Patch(ctx, podName(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				errMu.Lock()
				sendErr = err
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	if sendErr != nil {
		return u, fmt.Errorf("updating pods: %w", sendErr)
	}
	if count > 1 {
		u.AchievedRate = float64(count-1) / sent[count-1].Sub(start).Seconds()
	} else {
		u.AchievedRate = cfg.PodUpdateRate
	}
	names := map[string]int{}
	for i := range count {
		names[podName(i)] = i
	}
	logged := map[int]time.Time{}
	for len(logged) < count {
		lines, err := log.next(start)
		if err != nil {
			return u, err
		}
		for _, l := range lines {
			if i, ok := names[l.pod]; ok && l.event == "updated" {
				if _, seen := logged[i]; !seen {
					logged[i] = l.at
				}
			}
		}
		if len(logged) == count {
			break
		}
		if err := mgr.errIfExited(); err != nil {
			return u, err
		}
		select {
		case <-ctx.Done():
			u.Missing = count - len(logged)
			return u, fmt.Errorf("%d of %d Pod updates logged: %w", len(logged), count, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := mgr.idle(ctx); err != nil {
		return u, err
	}
	after, err := mgr.counters(ctx)
	if err != nil {
		return u, err
	}
	u.Seconds = time.Since(start).Seconds()
	u.OtherCPU = before.machine.otherShare(after.machine)
	u.CPUSeconds = after.cpu - before.cpu
	u.IdleCPUSeconds = idleRate * u.Seconds
	u.CPUPerEventMs = 1000 * max(0, u.CPUSeconds-u.IdleCPUSeconds) / float64(count)
	u.LogBytesPerEvent = float64(log.offset-log.start) / float64(count)
	var lags []time.Duration
	for i, at := range logged {
		lags = append(lags, at.Sub(sent[i]))
	}
	slices.Sort(lags)
	u.P50ms, u.P99ms = ms(percentile(lags, 50)), ms(percentile(lags, 99))
	if len(lags) > 0 {
		u.Maxms = ms(lags[len(lags)-1])
	}
	return u, nil
}

// logFollower reads a manager's log as it grows, from where it was when
// the follower was made.
type logFollower struct {
	path          string
	start, offset int64
	partial       []byte
}

func newLogFollower(path string) (*logFollower, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return &logFollower{path: path, start: st.Size(), offset: st.Size()}, nil
}

// podLogLine is one pod-logger line of the manager's log.
type podLogLine struct {
	at         time.Time
	pod, event string
}

// next returns the pod-logger lines written since the last call; near
// dates the lines' year (klog's header has none).
func (f *logFollower) next(near time.Time) ([]podLogLine, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(bufio.NewReader(file))
	if err != nil {
		return nil, err
	}
	f.offset += int64(len(b))
	b = append(f.partial, b...)
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		f.partial = b
		return nil, nil
	}
	f.partial = slices.Clone(b[end+1:])
	var out []podLogLine
	for _, line := range strings.Split(string(b[:end]), "\n") {
		if l, ok := parsePodLogLine(line, near); ok {
			out = append(out, l)
		}
	}
	return out, nil
}

// parsePodLogLine parses a pod-logger line of klog's text format:
//
//	I1127 11:40:00.123456   12345 podlogger.go:97] "Sync/Add/Update for Pod pod-000001" pod="bench-pods/pod-000001" event="updated" ...
//
// Its time is local, and near gives its year.
func parsePodLogLine(line string, near time.Time) (podLogLine, bool) {
	const msg = `"Sync/Add/Update for Pod `
	i := strings.Index(line, msg)
	if i < 0 || len(line) < 21 {
		return podLogLine{}, false
	}
	at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
	if err != nil {
		return podLogLine{}, false
	}
	at = at.AddDate(near.Year(), 0, 0)
	// A line of the first hours of a year, read late on the 31st of
	// December, or the other way round.
	if d := at.Sub(near); d > 180*24*time.Hour {
		at = at.AddDate(-1, 0, 0)
	} else if d < -180*24*time.Hour {
		at = at.AddDate(1, 0, 0)
	}
	rest := line[i+len(msg):]
	name, rest, ok := strings.Cut(rest, `"`)
	if !ok {
		return podLogLine{}, false
	}
	l := podLogLine{at: at, pod: name}
	if _, ev, ok := strings.Cut(rest, ` event="`); ok {
		l.event, _, _ = strings.Cut(ev, `"`)
	}
	return l, true
}

var errNoPods = errors.New("no pods")
