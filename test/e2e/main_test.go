// End-to-end tests of the product as users install it: a release built by
// `make release` (the linux/amd64+arm64 image index, install.yaml, the
// packaged chart), installed from its install.yaml onto a real one-node
// Kubernetes (hack/node-up.sh: kubelet, containerd, kube-proxy,
// kube-controller-manager with its garbage collector, kube-scheduler), and
// checked through the API as a user would; then upgraded to a second
// release, by install.yaml and by the chart.
//
// `make test-e2e` runs them. TestMain, run as root on this machine's
// network, starts a node in .run/e2e-node (or reuses the one whose state
// directory E2E_NODE names), builds the two releases (or takes the dist/
// directories E2E_RELEASES names, installed one first), loads their image
// archives, and runs the test binary again inside the node's network
// namespace, where the API server is; that process installs and tests.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-sample/controller-manager/test/e2e/node"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

const (
	// envInside marks the test process running in the node's network
	// namespace, with E2E_NODE naming the node.
	envInside = "CONTROLLER_MANAGER_E2E_INSIDE"
	// managerNamespace, deploymentName, leaseName: what config/default
	// deploys.
	managerNamespace = "controller-manager-system"
	deploymentName   = "controller-manager"
	leaseName        = "controller-manager"
	// managerSelector selects the manager's Pods.
	managerSelector = "app.kubernetes.io/name=controller-manager,app.kubernetes.io/component=manager"
	// rolloutTimeout bounds a rollout: scheduling, the sandbox, the
	// container, the readiness probe.
	rolloutTimeout = 3 * time.Minute
	// timeout bounds a wait on the manager and the cluster's own
	// controllers (the garbage collector among them).
	timeout = time.Minute
)

var (
	// the node, and an admin client and config for it (inside only).
	testNode *node.Node
	cfg      *rest.Config
	client   kubernetes.Interface
	// installed is the release TestMain installs, upgrade the one the
	// upgrade tests move to; img is installed's image.
	installed, upgrade release
	img                string
)

// The releases `make test-e2e` builds: same commit, two versions.
var e2eVersions = [2]string{"v0.0.0-e2e.1", "v0.0.0-e2e.2"}

// release is what `make release` wrote into dist.
type release struct {
	version, dist string
}

func (r release) image() string { return "controller-manager:" + r.version }
func (r release) archive() string {
	return filepath.Join(r.dist, "controller-manager-"+r.version+".oci.tar")
}
func (r release) installYAML() string { return filepath.Join(r.dist, "install.yaml") }
func (r release) chart() string {
	return filepath.Join(r.dist, "controller-manager-"+strings.TrimPrefix(r.version, "v")+".tgz")
}

// releases are the two releases of E2E_RELEASES (dist directories,
// space-separated, the installed one first); without it, bin/e2e-release/
// after `make release` of each of e2eVersions.
func releases(ctx context.Context, root string) ([2]release, error) {
	var r [2]release
	if dirs := strings.Fields(os.Getenv("E2E_RELEASES")); len(dirs) > 0 {
		if len(dirs) != 2 {
			return r, fmt.Errorf("E2E_RELEASES=%q: give the dist directories of two releases, the installed one first", os.Getenv("E2E_RELEASES"))
		}
		for i, d := range dirs {
			// dist/ holds controller-manager-<version>.oci.tar.
			m, err := filepath.Glob(filepath.Join(d, "controller-manager-v*.oci.tar"))
			if err != nil || len(m) != 1 {
				return r, fmt.Errorf("E2E_RELEASES: %s holds no release (make release DIST=%s)", d, d)
			}
			v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m[0]), "controller-manager-"), ".oci.tar")
			r[i] = release{version: v, dist: d}
		}
		return r, nil
	}
	for i, v := range e2eVersions {
		r[i] = release{version: v, dist: filepath.Join(root, "bin", "e2e-release", v)}
		cmd := exec.CommandContext(ctx, "make", "release", "VERSION="+v, "DIST="+r[i].dist)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return r, fmt.Errorf("make release VERSION=%s: %w", v, err)
		}
	}
	return r, nil
}

func TestMain(m *testing.M) {
	if os.Getenv(envInside) != "" {
		os.Exit(inside(m))
	}
	os.Exit(outside())
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// outside prepares the node and the image on this machine's network, then
// runs the tests inside the node's network namespace. A node it started it
// stops, also when interrupted (SIGINT, SIGTERM, SIGHUP, or the SIGQUIT of
// `go test -timeout`), and the next run removes one a crash left behind.
func outside() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer stop()
	flag.Parse()
	timeout := testTimeout()
	deadline := time.Now().Add(timeout)
	if os.Geteuid() != 0 {
		return fail("needs root: the node (hack/node-up.sh) makes a network namespace and cgroups and runs containerd")
	}
	root, err := framework.RepoRoot()
	if err != nil {
		return fail("%v", err)
	}
	var n *node.Node
	if state := os.Getenv("E2E_NODE"); state != "" {
		if n, err = node.Open(state); err != nil {
			return fail("E2E_NODE: %v", err)
		}
	} else {
		state = filepath.Join(root, ".run", "e2e-node")
		if err := node.Down(state); err != nil { // what a crashed run left
			return fail("%v", err)
		}
		defer func() {
			if os.Getenv("E2E_KEEP") != "" {
				fmt.Fprintf(os.Stderr, "e2e: E2E_KEEP is set: node left running; hack/node-down.sh %s stops it\n", state)
				return
			}
			if err := node.Down(state); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: stopping the node: %v\n", err)
			}
		}()
		start := time.Now()
		if n, err = node.Start(ctx, state); err != nil {
			return fail("starting the node: %v", err)
		}
		fmt.Fprintf(os.Stderr, "e2e: node %s Ready in %s\n", n.Name, time.Since(start).Round(time.Second))
	}

	// The real Keystone and Neutron, for the Neutron backend run in a Pod,
	// start in the node's network namespace meanwhile.
	// A failure below waits for it to end (SIGTERM) before the node stops.
	osCtx, cancelOS := context.WithCancel(ctx)
	var osErr error
	osDone := make(chan struct{})
	go func() {
		defer close(osDone)
		osErr = n.StartOpenStack(osCtx)
	}()
	defer func() {
		cancelOS()
		<-osDone
	}()

	rels, err := releases(ctx, root)
	if err != nil {
		return fail("%v", err)
	}
	for _, r := range rels {
		// The image index of both architectures: the node's containerd
		// keeps its own.
		if err := n.LoadImage(ctx, r.archive()); err != nil {
			return fail("loading the image of %s: %v", r.version, err)
		}
	}
	scraper, err := buildScraperImage(ctx, root)
	if err != nil {
		return fail("building the scraper image: %v", err)
	}
	if err := n.LoadImage(ctx, scraper); err != nil {
		return fail("loading the scraper image: %v", err)
	}
	<-osDone
	if osErr != nil {
		return fail("%v", osErr)
	}
	// The tests inside end within what is left of -test.timeout, before
	// `go test` would kill this process and leave the node running.
	args := slices.Clone(os.Args[1:])
	if timeout > 0 {
		inner := max(time.Until(deadline)-time.Minute, time.Minute)
		args = append(slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "-test.timeout=") }),
			"-test.timeout="+inner.String())
	}
	code, err := n.Reexec(ctx, args, envInside+"=1", "E2E_NODE="+n.State, "E2E_RELEASES="+rels[0].dist+" "+rels[1].dist)
	if err != nil {
		return fail("%v", err)
	}
	return code
}

// buildScraperImage builds the image of the tests' client Pod
// (test/e2e/scraper) as `make image` builds the product's: a static binary
// and hack/build-image.sh. It returns the OCI archive.
func buildScraperImage(ctx context.Context, root string) (string, error) {
	dir := filepath.Join(root, "bin", "e2e-scraper")
	archive := filepath.Join(root, "bin", "e2e-scraper-image.tar")
	build := exec.CommandContext(ctx, envOr("GO", "go"), "build", "-trimpath", "-o", filepath.Join(dir, "scraper"), "./test/e2e/scraper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	image := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-image.sh"),
		"-f", filepath.Join(root, "test", "e2e", "scraper", "Dockerfile"), "-t", scraperImage, "-o", archive, dir)
	for _, cmd := range []*exec.Cmd{build, image} {
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
		}
	}
	return archive, nil
}

// testTimeout is the -test.timeout the test binary got (0: none).
func testTimeout() time.Duration {
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil {
			return d
		}
	}
	return 0
}

// inside deploys the manager and runs the tests, in the node's network
// namespace; on failure it prints what explains it.
func inside(m *testing.M) int {
	var err error
	if testNode, err = node.Open(os.Getenv("E2E_NODE")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if cfg, err = testNode.Config(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	cfg = framework.Config(cfg) // waits poll often: no client-side throttling
	client = kubernetes.NewForConfigOrDie(cfg)
	rels, err := releases(context.Background(), "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	installed, upgrade, img = rels[0], rels[1], rels[0].image()
	if err := deploy(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: deploying:", err)
		dumpState()
		return 1
	}
	code := m.Run()
	if code != 0 {
		dumpState()
	}
	return code
}

// deploy installs the Gateway API CRDs (so that the HTTPRoute flow can
// run), applies the installed release's install.yaml and waits for the
// rollout. On a reused node whose Deployment exists already, the rollout is
// restarted, so that the Pods run the image just loaded.
func deploy() error {
	if err := framework.InstallGatewayAPI(cfg); err != nil {
		return fmt.Errorf("installing the Gateway API CRDs: %w", err)
	}
	ctx := context.Background()
	_, err := client.AppsV1().Deployments(managerNamespace).Get(ctx, deploymentName, metav1.GetOptions{})
	existed := err == nil
	if err := applyInstallYAML(installed); err != nil {
		return err
	}
	if existed {
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339))
		if _, err := client.AppsV1().Deployments(managerNamespace).Patch(ctx, deploymentName, "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("restarting the rollout: %w", err)
		}
	}
	if err := waitRollout(ctx); err != nil {
		return err
	}
	// HTTPRoutes are owned by Services too: the tests of what the garbage
	// collector deletes need it to watch them.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return testNode.GarbageCollectorWatches("httproutes")
	})
	if err != nil {
		return fmt.Errorf("the garbage collector does not watch HTTPRoutes (kube-controller-manager's log): %w", err)
	}
	return nil
}

// applyInstallYAML applies r's install.yaml as its users do
// (docs/install.md), with the kubectl `make test-e2e` builds.
func applyInstallYAML(r release) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), "apply", "-f", r.installYAML())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+testNode.Kubeconfig())
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w", r.installYAML(), err)
	}
	return nil
}

// makeDeploy runs `make deploy` of the installed release's image with the
// kustomize Components given (space separated; "" for config/default
// alone).
func makeDeploy(components string) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("make", "deploy", "IMG="+img, "COMPONENTS="+components)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+testNode.Kubeconfig())
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make deploy COMPONENTS=%q: %w", components, err)
	}
	return nil
}

// waitRollout waits until the Deployment's current generation is rolled
// out: every replica updated, Ready and available, and no old Pod left.
// Its error says what the Pods are waiting for.
func waitRollout(ctx context.Context) error {
	start := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(managerNamespace).Get(ctx, deploymentName, metav1.GetOptions{})
		var pods []corev1.Pod
		if err == nil {
			pods, err = managerPods(ctx)
		}
		if err != nil {
			if ctx.Err() == nil { // the deadline's own error would hide the last status
				last = err.Error()
			}
			return false, nil
		}
		if done, why := rolledOut(d, pods); !done {
			last = why
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("deployment %s/%s not rolled out within %v: %s", managerNamespace, deploymentName, rolloutTimeout, last)
	}
	fmt.Fprintf(os.Stderr, "e2e: deployment rolled out in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// rolledOut tells whether d is rolled out, and if not, why.
func rolledOut(d *appsv1.Deployment, pods []corev1.Pod) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.ReadyReplicas != want ||
		s.AvailableReplicas != want || s.Replicas != want || len(pods) != int(want) {
		return false, fmt.Sprintf("want %d replicas; status: observed generation %d of %d, %d updated, %d ready, %d available, %d in all; Pods: %s",
			want, s.ObservedGeneration, d.Generation, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.Replicas, describePods(pods))
	}
	return true, ""
}

// managerPods lists the manager's Pods that are not being deleted.
func managerPods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(managerNamespace).List(ctx, metav1.ListOptions{LabelSelector: managerSelector})
	if err != nil {
		return nil, err
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// describePods says, for each Pod, its phase and what each container waits
// for or why it last ended: the kubelet's own reasons (ErrImageNeverPull,
// CreateContainerConfigError for a root image under runAsNonRoot, ...).
func describePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "none"
	}
	var parts []string
	for _, p := range pods {
		s := fmt.Sprintf("%s %s", p.Name, p.Status.Phase)
		if p.Status.Reason != "" || p.Status.Message != "" {
			s += fmt.Sprintf(" (%s: %s)", p.Status.Reason, p.Status.Message)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				s += fmt.Sprintf(", unscheduled: %s: %s", c.Reason, c.Message)
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			s += fmt.Sprintf(", container %s ready=%t restarts=%d", c.Name, c.Ready, c.RestartCount)
			if w := c.State.Waiting; w != nil {
				s += fmt.Sprintf(" waiting: %s: %s", w.Reason, w.Message)
			}
			if t := c.LastTerminationState.Terminated; t != nil {
				s += fmt.Sprintf(" last ended: %s (exit %d): %s", t.Reason, t.ExitCode, strings.TrimSpace(t.Message))
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// dumpState prints what explains a failure: the node, every Pod, the
// manager's recent Events and logs, and the node components' log tails.
func dumpState() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := os.Stderr
	fmt.Fprintln(w, "===== e2e: state of the node after the failure =====")
	if nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintln(w, "nodes:", err)
	} else {
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				fmt.Fprintf(w, "node %s: %s=%s %s %s\n", n.Name, c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	if pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintln(w, "pods:", err)
	} else {
		for _, p := range pods.Items {
			fmt.Fprintf(w, "pod %s/%s on %q: %s\n", p.Namespace, p.Name, p.Spec.NodeName, describePods([]corev1.Pod{p}))
		}
	}
	if evs, err := client.CoreV1().Events(managerNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(w, "event %s %s/%s: %s %s: %s\n", e.LastTimestamp.Format(time.RFC3339), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
	}
	if pods, err := managerPods(ctx); err == nil {
		for _, p := range pods {
			for _, previous := range []bool{false, true} {
				logs, err := podLogs(ctx, p.Name, previous, 40)
				if err != nil {
					if !previous {
						fmt.Fprintf(w, "logs of %s: %v\n", p.Name, err)
					}
					continue
				}
				fmt.Fprintf(w, "----- %s (previous=%t), last lines -----\n%s\n", p.Name, previous, logs)
			}
		}
	}
	for _, c := range node.Components {
		fmt.Fprintf(w, "----- %s (%s/logs/%s.log), last lines -----\n%s\n", c, testNode.State, c, testNode.LogTail(c, 15))
	}
}

// podLogs returns the manager container's log of Pod name (of its previous
// run with previous), its last lines only when tail > 0.
func podLogs(ctx context.Context, name string, previous bool, tail int64) (string, error) {
	opts := &corev1.PodLogOptions{Container: "manager", Previous: previous}
	if tail > 0 {
		opts.TailLines = &tail
	}
	b, err := client.CoreV1().Pods(managerNamespace).GetLogs(name, opts).DoRaw(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			return "", fmt.Errorf("no log: %w", err)
		}
		return "", err
	}
	return string(b), nil
}
