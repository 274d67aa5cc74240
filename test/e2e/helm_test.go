package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/controller/ingressmanager"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

const (
	// helmRelease is the release name whose objects have config/default's
	// names (the chart derives them from it).
	helmRelease = "controller-manager"
	// upgradedHostTemplate is the --ingress-host-template the upgrade sets.
	upgradedHostTemplate = "{{.Name}}.{{.Namespace}}.apps.example.test"
	// upgradeServices is how many annotated Services besides the seed's
	// must keep their Ingress through the upgrade.
	upgradeServices = 20
)

// TestHelmChart installs, upgrades and uninstalls the released chart as a
// user does, in place of config/default (which TestMain deployed, and
// which comes back when the test ends):
//   - `helm install` of the installed release's packaged chart with default
//     values (its image is the release's): both replicas roll out and the
//     seed Service gets its Ingress;
//   - `helm upgrade` to the next release's chart, and of the host template
//     and replicas: three replicas of the new image roll out, every
//     annotated Service's Ingress gets the new host, and no Ingress is
//     deleted meanwhile (a watch sees every deletion);
//   - `helm uninstall`: every object the chart installed is gone, and what
//     stays is the CRD (crds/, kept by Helm), the Namespace (kept by its
//     resource policy) and the objects users own (a Secret in the manager's
//     namespace, the Services and the Ingresses they own).
func TestHelmChart(t *testing.T) {
	ctx := context.Background()
	h := newHelm(t)
	removeKustomizeDeployment(t)
	t.Cleanup(func() { restoreKustomizeDeployment(t, h) })

	h.run(t, "install", helmRelease, installed.chart(), "--namespace", managerNamespace, "--create-namespace",
		"--wait", "--timeout", rolloutTimeout.String())
	if err := waitRollout(ctx); err != nil {
		t.Fatal(err)
	}
	checkReplicas(t, 2, installed.image())
	installed := h.manifest(t)

	// The seed's flow, and more annotated Services, on the installed chart.
	ns := createNamespace(t)
	annotated := map[string]string{ingressmanager.AnnotationHTTP: "nginx"}
	services := []*corev1.Service{createSeedService(t, ns, annotated)}
	framework.WaitIngress(t, client, ns, "my-nginx", "the seed's Ingress from the chart's manager", func(ing *networkingv1.Ingress) error {
		if err := framework.ControlledBy(ing, services[0].UID); err != nil {
			return err
		}
		return hasHost(ing, "example.com")
	})
	for i := range upgradeServices {
		services = append(services, createSeedService(t, ns, annotated, fmt.Sprintf("web-%02d", i)))
	}
	for _, svc := range services[1:] {
		framework.WaitIngress(t, client, ns, svc.Name, "the Ingress of Service "+svc.Name, func(ing *networkingv1.Ingress) error {
			return framework.ControlledBy(ing, svc.UID)
		})
	}

	// Upgrade: the next release, a new host template and three replicas;
	// no Ingress is lost.
	deletions := watchIngressDeletions(t, ns)
	h.run(t, "upgrade", helmRelease, upgrade.chart(), "--namespace", managerNamespace, "--reuse-values",
		"--set", "replicas=3", "--set-json", fmt.Sprintf("ingressManager.hostTemplate=%q", upgradedHostTemplate),
		"--wait", "--timeout", rolloutTimeout.String())
	if err := waitRollout(ctx); err != nil {
		t.Fatal(err)
	}
	checkReplicas(t, 3, upgrade.image())
	// The new leader resyncs every Service with the new template.
	framework.Eventually(t, timeout, "every Service's Ingress on the upgraded host", func(ctx context.Context) (bool, error) {
		for _, svc := range services {
			ing, err := client.NetworkingV1().Ingresses(ns).Get(ctx, svc.Name, metav1.GetOptions{})
			if err == nil {
				err = framework.ControlledBy(ing, svc.UID)
			}
			if err == nil {
				err = hasHost(ing, svc.Name+"."+ns+".apps.example.test")
			}
			if err != nil {
				return false, fmt.Errorf("Ingress %s: %w", svc.Name, err)
			}
		}
		return true, nil
	})
	if lost := deletions(); len(lost) > 0 {
		t.Fatalf("during the upgrade, Ingresses were deleted or the watch failed: %s", strings.Join(lost, "; "))
	}

	// Uninstall: only the CRD, the Namespace and what users own are left.
	userSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-user-clouds"},
		StringData: map[string]string{"clouds.yaml": "clouds: {}\n"},
	}
	if _, err := client.CoreV1().Secrets(managerNamespace).Create(ctx, userSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.run(t, "uninstall", helmRelease, "--namespace", managerNamespace, "--wait", "--timeout", rolloutTimeout.String())
	objects := newObjectClient(t)
	for _, o := range installed {
		if o.GetKind() == "Namespace" {
			continue
		}
		objects.waitGone(t, o, timeout)
	}
	framework.Eventually(t, rolloutTimeout, "the manager's Pods gone", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(managerNamespace).List(ctx, metav1.ListOptions{LabelSelector: managerSelector})
		if err != nil || len(pods.Items) > 0 {
			return false, errors.Join(err, fmt.Errorf("left: %s", describePods(pods.Items)))
		}
		return true, nil
	})
	releases, err := client.CoreV1().Secrets(managerNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + helmRelease})
	if err != nil {
		t.Fatal(err)
	}
	if len(releases.Items) > 0 {
		t.Errorf("helm uninstall left %d release Secrets", len(releases.Items))
	}
	type keptObject struct {
		what string
		get  func(context.Context) (metav1.Object, error)
	}
	kept := []keptObject{
		{"the CRD (Helm never deletes crds/)", func(ctx context.Context) (metav1.Object, error) {
			return objects.get(ctx, crdOf(installedCRDName))
		}},
		{"the Namespace (helm.sh/resource-policy: keep)", func(ctx context.Context) (metav1.Object, error) {
			return client.CoreV1().Namespaces().Get(ctx, managerNamespace, metav1.GetOptions{})
		}},
		{"the user's Secret in the manager's namespace", func(ctx context.Context) (metav1.Object, error) {
			return client.CoreV1().Secrets(managerNamespace).Get(ctx, userSecret.Name, metav1.GetOptions{})
		}},
	}
	for _, svc := range services {
		kept = append(kept,
			keptObject{"Service " + svc.Name, func(ctx context.Context) (metav1.Object, error) {
				return client.CoreV1().Services(ns).Get(ctx, svc.Name, metav1.GetOptions{})
			}},
			keptObject{"the Ingress of Service " + svc.Name, func(ctx context.Context) (metav1.Object, error) {
				return client.NetworkingV1().Ingresses(ns).Get(ctx, svc.Name, metav1.GetOptions{})
			}})
	}
	for _, k := range kept {
		obj, err := k.get(ctx)
		if err != nil {
			t.Errorf("%s, after helm uninstall: %v", k.what, err)
		} else if obj.GetDeletionTimestamp() != nil {
			t.Errorf("%s is being deleted after helm uninstall", k.what)
		}
	}
}

// installedCRDName is the CRD of the chart's crds/ (and config/crd).
const installedCRDName = "networks.samplecrd.k8s.io"

// helm runs bin/helm (`make test-e2e` builds it: hack/build-tools.sh helm)
// against the node, with its own state in a temporary directory.
type helm struct {
	bin string
	env []string
}

func newHelm(t *testing.T) *helm {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	h := &helm{bin: filepath.Join(root, "bin", "helm")}
	if _, err := os.Stat(h.bin); err != nil {
		t.Fatalf("%v: `hack/build-tools.sh helm` builds it (make test-e2e does)", err)
	}
	state := t.TempDir()
	h.env = append(os.Environ(), "KUBECONFIG="+testNode.Kubeconfig(),
		"HELM_CACHE_HOME="+filepath.Join(state, "cache"), "HELM_CONFIG_HOME="+filepath.Join(state, "config"),
		"HELM_DATA_HOME="+filepath.Join(state, "data"))
	return h
}

// exec runs helm with args and returns its standard output; its error
// includes what helm printed on standard error.
func (h *helm) exec(args ...string) (string, error) {
	// Helm's own --timeout bounds its waits; this bounds a hung command.
	ctx, cancel := context.WithTimeout(context.Background(), rolloutTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = h.env, &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	fmt.Fprintf(os.Stderr, "e2e: helm %s: done in %s\n", args[0], time.Since(start).Round(100*time.Millisecond))
	return stdout.String(), nil
}

func (h *helm) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := h.exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// manifest returns the objects the release installed from its templates
// (Helm keeps crds/ out of it).
func (h *helm) manifest(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	out := h.run(t, "get", "manifest", helmRelease, "--namespace", managerNamespace)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("helm get manifest: %v", err)
		}
		if len(o.Object) > 0 {
			objs = append(objs, o)
		}
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
		"Deployment", "PodDisruptionBudget", "NetworkPolicy", "Service"} {
		if !kinds[k] {
			t.Fatalf("the release installed no %s: %d objects", k, len(objs))
		}
	}
	return objs
}

// checkReplicas checks that the Deployment runs want replicas of image,
// Ready, and that one of them leads.
func checkReplicas(t *testing.T, want int, image string) {
	t.Helper()
	pods, err := managerPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != want {
		t.Fatalf("want %d replicas, found %d: %s", want, len(pods), describePods(pods))
	}
	for _, p := range pods {
		if !podReady(&p) || p.Spec.Containers[0].Image != image {
			t.Errorf("pod %s is not Ready, or does not run %s: %s (image %s)", p.Name, image, describePods([]corev1.Pod{p}), p.Spec.Containers[0].Image)
		}
	}
	// After a rollout the Lease may still name a replica that is gone,
	// until a new one takes it over.
	framework.Eventually(t, timeout, "a replica of the release holds Lease "+leaseName, func(ctx context.Context) (bool, error) {
		l, err := client.CoordinationV1().Leases(managerNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
		if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == holder }) {
			return false, fmt.Errorf("held by %q, not by a replica: %s", holder, describePods(pods))
		}
		return true, nil
	})
}

func hasHost(ing *networkingv1.Ingress, host string) error {
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != host {
		return fmt.Errorf("want one rule for host %s, got %+v", host, ing.Spec.Rules)
	}
	return nil
}

// watchIngressDeletions watches the Ingresses of ns from now on. The
// function it returns stops the watch and says which Ingresses were
// deleted meanwhile, and any watch error (after which it cannot tell).
func watchIngressDeletions(t *testing.T, ns string) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ings := client.NetworkingV1().Ingresses(ns)
	list, err := ings.List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return ings.Watch(ctx, o) },
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []string
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			mu.Lock()
			switch ev.Type {
			case watch.Deleted:
				if m, err := meta.Accessor(ev.Object); err == nil {
					seen = append(seen, "Ingress "+m.GetName()+" deleted")
				}
			case watch.Error:
				seen = append(seen, fmt.Sprintf("watch error: %v", apierrors.FromObject(ev.Object)))
			}
			mu.Unlock()
		}
	}()
	stop := func() []string {
		w.Stop()
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	t.Cleanup(func() { stop() })
	return stop
}

// objectClient reads and deletes objects of any kind by their manifest.
type objectClient struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newObjectClient(t *testing.T) *objectClient {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &objectClient{
		dyn:    dynamic.NewForConfigOrDie(cfg),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
	}
}

func (c *objectClient) resource(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(o.GetNamespace()), nil
	}
	return c.dyn.Resource(m.Resource), nil
}

func (c *objectClient) get(ctx context.Context, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := c.resource(o)
	if err != nil {
		return nil, err
	}
	return r.Get(ctx, o.GetName(), metav1.GetOptions{})
}

func (c *objectClient) delete(ctx context.Context, o *unstructured.Unstructured) error {
	r, err := c.resource(o)
	if err != nil {
		return err
	}
	err = r.Delete(ctx, o.GetName(), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitGone waits up to within for o to be gone (NotFound).
func (c *objectClient) waitGone(t *testing.T, o *unstructured.Unstructured, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, fmt.Sprintf("%s %s/%s gone", o.GetKind(), o.GetNamespace(), o.GetName()), func(ctx context.Context) (bool, error) {
		_, err := c.get(ctx, o)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			return false, errors.New("it still exists")
		}
		return false, err
	})
}

// crdOf is the CRD named name, as a manifest for objectClient.
func crdOf(name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("apiextensions.k8s.io/v1")
	o.SetKind("CustomResourceDefinition")
	o.SetName(name)
	return o
}

// removeKustomizeDeployment deletes what `make deploy` applied but the
// CRDs (the Networks of other tests would go with them), the Namespace
// included, so that the chart installs as on a cluster that never had it.
func removeKustomizeDeployment(t *testing.T) {
	t.Helper()
	objs, err := framework.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	c := newObjectClient(t)
	var deleted []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		if err := c.delete(context.Background(), o); err != nil {
			t.Fatalf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		deleted = append(deleted, o)
	}
	// The namespace controller deletes the Pods (after their graceful
	// shutdown) before the Namespace goes.
	for _, o := range deleted {
		c.waitGone(t, o, rolloutTimeout)
	}
}

// restoreKustomizeDeployment puts config/default back as TestMain deployed
// it, for the tests after this one: the release (if a failure left it) is
// uninstalled, `make deploy` applies, and both replicas roll out.
func restoreKustomizeDeployment(t *testing.T, h *helm) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.exec("uninstall", helmRelease, "--namespace", managerNamespace, "--ignore-not-found", "--wait",
		"--timeout", rolloutTimeout.String()); err != nil {
		t.Errorf("restoring config/default: %v", err)
		return
	}
	// A Namespace still being deleted (a failure during removeKustomizeDeployment)
	// takes no new objects.
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		ns, err := client.CoreV1().Namespaces().Get(ctx, managerNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp == nil), nil
	})
	if err != nil {
		t.Errorf("restoring config/default: namespace %s still terminating: %v", managerNamespace, err)
		return
	}
	if err := makeDeploy(""); err != nil {
		t.Errorf("restoring config/default: %v", err)
		return
	}
	if err := waitRollout(ctx); err != nil {
		t.Errorf("restoring config/default: %v", err)
	}
}
