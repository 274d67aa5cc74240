package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/procfs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// Contender is one controller of the peer phase: its cold starts, each on
// a fresh control plane of its own. With several starts (Config.ColdRuns)
// every figure is the median of the starts' (Ratio the median ratio, not
// the ratio of the medians), and the writes are those of the start that
// wrote the most; Runs has each start.
type Contender struct {
	Name string `json:"name"`
	// L is that control plane's direct create rate (Ingresses/s at
	// concurrency 64), measured just before the start, with the N Services
	// in place.
	L float64 `json:"l"`
	// FirstSeconds is the time from the process's start to the first
	// Ingress seen by the watcher; ColdSeconds to the N-th.
	FirstSeconds float64 `json:"first_seconds"`
	ColdSeconds  float64 `json:"cold_seconds"`
	// Ratio is ColdSeconds / (N/L).
	Ratio float64 `json:"ratio"`
	// PeakRSS is the process's VmHWM once the API server's write counters
	// settled after convergence; CPUSeconds its user+system CPU until then.
	PeakRSS    int64   `json:"peak_rss_bytes"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// FileRSS is the part of the resident set then that maps files
	// (RssFile): the pages of the executable the process has touched. It
	// is in PeakRSS, grows with the binary rather than with the objects,
	// and is page cache the kernel can take back; the rest (RssAnon) is
	// the heap, stacks and the runtime's own memory.
	FileRSS int64 `json:"file_rss_bytes,omitempty"`
	// IngressWrites by verb, and their total per Service.
	IngressWrites   map[string]int64 `json:"ingress_writes"`
	WritesPerObject float64          `json:"writes_per_object"`
	Runs            []Contender      `json:"runs,omitempty"`
}

// medianContender sums the starts of one contender up (see Contender).
func medianContender(runs []Contender) Contender {
	median := func(f func(Contender) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	c := slices.MaxFunc(runs, func(a, b Contender) int { return cmpF(a.WritesPerObject, b.WritesPerObject) })
	c.Runs = runs
	c.L = median(func(r Contender) float64 { return r.L })
	c.FirstSeconds = median(func(r Contender) float64 { return r.FirstSeconds })
	c.ColdSeconds = median(func(r Contender) float64 { return r.ColdSeconds })
	c.Ratio = median(func(r Contender) float64 { return r.Ratio })
	c.PeakRSS = int64(median(func(r Contender) float64 { return float64(r.PeakRSS) }))
	c.CPUSeconds = median(func(r Contender) float64 { return r.CPUSeconds })
	c.FileRSS = int64(median(func(r Contender) float64 { return float64(r.FileRSS) }))
	return c
}

// peerSource is the controller-runtime peer's package, floorSource the
// informer floor's.
const (
	peerSource  = "./test/bench/crpeer"
	floorSource = "./test/bench/floor"
)

// Contender names.
const (
	ContenderOurs  = "controller-manager"
	ContenderPeer  = "controller-runtime peer"
	ContenderFloor = "informer floor"
)

// peerPhase runs the cold start of ingress-manager (the real binary, as in
// the ingress-manager phase), of its controller-runtime peer
// (test/bench/crpeer) and of the informer floor (test/bench/floor: shared
// informers and 64 goroutines creating, none of a controller's own work),
// each alone on a fresh control plane of its own: N annotated Services, N/L
// of that control plane, then the process starts; cold is until the
// independent watcher sees the N owned Ingresses.
func (r *run) peerPhase(ctx context.Context) error {
	// The scale curve compares the manager with the floor only.
	names := []string{ContenderOurs, ContenderPeer, ContenderFloor}
	sources := map[string]string{ContenderPeer: peerSource, ContenderFloor: floorSource}
	if r.cfg.Scale {
		names = []string{ContenderOurs, ContenderFloor}
		delete(sources, ContenderPeer)
	}
	bins := map[string]string{}
	for name, src := range sources {
		bins[name] = filepath.Join(r.tmp, filepath.Base(src))
		if err := r.goBuild(ctx, bins[name], src); err != nil {
			return err
		}
	}
	// The contenders take turns, so that a slow spell of the machine
	// falls on each.
	runs := map[string][]Contender{}
	for i := range r.cfg.coldRuns() {
		for j, name := range names {
			c, err := r.contend(ctx, name, bins[name], fmt.Sprintf("kubeconfig-contender-%d-%d", j, i))
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			runs[name] = append(runs[name], *c)
			r.cfg.logf("%s, start %d: cold %.2fs (%.2f x N/L, L %.0f/s; first Ingress %.2fs), peak RSS %s (%s of files), CPU %.2fs, %.2f Ingress writes/object",
				c.Name, i+1, c.ColdSeconds, c.Ratio, c.L, c.FirstSeconds, mib(c.PeakRSS), mib(c.FileRSS), c.CPUSeconds, c.WritesPerObject)
		}
	}
	for _, name := range names {
		r.res.Peer = append(r.res.Peer, medianContender(runs[name]))
	}
	return nil
}

// contend is one cold start of the contender name (bin: its binary, but
// for ours) on a fresh control plane whose admin kubeconfig goes to the
// run's kubeconfig file.
func (r *run) contend(ctx context.Context, name, bin, kubeconfig string) (c *Contender, err error) {
	n := r.cfg.N
	ctx, cancel := context.WithTimeout(ctx, 4*r.cfg.phaseTimeout())
	defer cancel()
	c = &Contender{Name: name}
	cp, err := r.freshControlPlane(ctx, kubeconfig)
	if cp != nil {
		defer func() {
			if stopErr := cp.env.Stop(); stopErr != nil && err == nil {
				err = fmt.Errorf("stopping the control plane: %w", stopErr)
			}
		}()
	}
	if err != nil {
		return nil, err
	}
	if err := r.createServicesWith(ctx, cp.client, n, mainName, true); err != nil {
		return nil, err
	}
	// L after the Services, on the control plane as the controller finds
	// it, as the ingress-manager phase measures it: a new API server that
	// holds nothing yet creates faster than it does a moment later (at
	// N=1000, L measured before the Services came out about a tenth above L
	// measured after them), which made the controller's cold/(N/L) look
	// worse on a fresh control plane than on the main one.
	if c.L, err = r.createRate(ctx, cp.client, n); err != nil {
		return nil, err
	}
	w, err := newWatcher(cp.client, benchNamespace)
	if err != nil {
		return nil, err
	}
	defer w.shutdown()
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	counts := func() (requestCounts, error) {
		etcd := ""
		if u := cp.env.ControlPlane.Etcd.URL; u != nil {
			etcd = u.String() + "/metrics"
		}
		return apiRequests(ctx, cp.client.CoreV1().RESTClient(), etcd)
	}
	before, err := counts()
	if err != nil {
		return nil, err
	}

	var p *managerProcess
	if name == ContenderOurs {
		p, err = r.startManagerOn(cp.kubeconfig, "cold-"+name)
	} else {
		args := []string{"--kubeconfig=" + cp.kubeconfig, "--namespace=" + benchNamespace}
		if name == ContenderPeer {
			var port int
			if port, err = freePort(); err != nil {
				return nil, err
			}
			args = append(args, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port))
		}
		p, err = r.startProcess("cold-"+filepath.Base(bin), bin, args, "", "")
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := p.stop(stopTimeout); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	first, err := w.waitFor(ctx, "an owned Ingress", func(w *watcher) bool { return len(w.owned) > 0 })
	if err != nil {
		return nil, errors.Join(err, p.errIfExited())
	}
	done, err := w.waitFor(ctx, fmt.Sprintf("%d owned Ingresses", n), func(w *watcher) bool { return len(w.owned) == n })
	if err != nil {
		return nil, errors.Join(err, p.errIfExited())
	}
	c.FirstSeconds = first.Sub(p.Started).Seconds()
	c.ColdSeconds = done.Sub(p.Started).Seconds()
	c.Ratio = c.ColdSeconds / (float64(n) / c.L)

	// The writes settle (nothing more to do), then the process's figures.
	after, err := before, nil
	for {
		if err := sleep(ctx, r.cfg.Settle); err != nil {
			return nil, fmt.Errorf("API writes did not settle: %w", err)
		}
		prev := after
		if after, err = counts(); err != nil {
			return nil, err
		}
		if writesButLeases(after.diff(prev)) == 0 {
			break
		}
	}
	if err := p.errIfExited(); err != nil {
		return nil, err
	}
	var mem processMem
	if mem, err = processMemory(p.Pid()); err != nil {
		return nil, err
	}
	c.PeakRSS, c.FileRSS = mem.peak, mem.file
	if c.CPUSeconds, err = processCPU(p.Pid()); err != nil {
		return nil, err
	}
	c.IngressWrites = after.diff(before).byVerb("ingresses")
	var total int64
	for _, v := range c.IngressWrites {
		total += v
	}
	c.WritesPerObject = float64(total) / float64(n)
	return c, nil
}

// createRate is the direct create rate of n Ingresses like the controller's
// at concurrency 64, the limit phase's highest (a fresh control plane gets
// one measurement, not the limit phase's sweep), with them watched
// meanwhile as in the limit phase; they are deleted after.
func (r *run) createRate(ctx context.Context, client kubernetes.Interface, n int) (float64, error) {
	b, err := ingressmanager.NewBuilder(ingressmanager.Config{FieldManager: "bench"})
	if err != nil {
		return 0, err
	}
	lw, err := newWatcher(client, limitNamespace)
	if err != nil {
		return 0, err
	}
	defer lw.shutdown()
	if err := lw.start(ctx); err != nil {
		return 0, err
	}
	ings := client.NetworkingV1().Ingresses(limitNamespace)
	took, err := parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		ing, err := desiredIngress(b, limitNamespace, fmt.Sprintf("lim-%06d", i))
		if err != nil {
			return err
		}
		_, err = ings.Create(ctx, ing, metav1.CreateOptions{FieldManager: "bench"})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("creating ingresses: %w", err)
	}
	if err := ings.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return 0, fmt.Errorf("deleting ingresses: %w", err)
	}
	return float64(n) / took.Seconds(), nil
}

// processCPU is pid's user+system CPU time in seconds.
func processCPU(pid int) (float64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.CPUTime(), nil
}

// goBuild builds the package pkg of the repository into out.
func (r *run) goBuild(ctx context.Context, out, pkg string) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := append([]string{"build"}, r.cfg.BuildFlags...)
	args = append(args, "-o", out, pkg)
	r.cfg.logf("building %s: go %v", pkg, args)
	buildCtx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(buildCtx, goBin, args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, out)
	}
	return nil
}
