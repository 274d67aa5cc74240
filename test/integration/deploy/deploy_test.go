// Integration tests of the deploy manifests (config/default) against a real
// kube-apiserver + etcd: they apply with server-side dry-run, the Pod
// template passes the namespace's "restricted" Pod Security admission, the
// Deployment's flags are the binary's, the RBAC is least-privilege and
// documented, and a missing verb fails the tests.
package deploy

import (
	"context"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// deployment is config/default, decoded.
type deployment struct {
	objs       []*unstructured.Unstructured
	namespace  *corev1.Namespace
	deployment *appsv1.Deployment
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
	netpol     *networkingv1.NetworkPolicy
	// clusterRoles are the manager's; metricsReader is the role to bind
	// Prometheus's account to.
	clusterRoles  []rbacv1.ClusterRole
	metricsReader *rbacv1.ClusterRole
	roles         []rbacv1.Role
	crbs          []rbacv1.ClusterRoleBinding
	rbs           []rbacv1.RoleBinding
}

func load(t *testing.T) *deployment {
	t.Helper()
	objs, err := framework.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	d := &deployment{objs: objs}
	var namespaces []corev1.Namespace
	var deployments []appsv1.Deployment
	var services []corev1.Service
	var pdbs []policyv1.PodDisruptionBudget
	var netpols []networkingv1.NetworkPolicy
	var readers []rbacv1.ClusterRole
	for _, o := range objs {
		var into any
		switch o.GetKind() {
		case "Namespace":
			into = add(&namespaces)
		case "Deployment":
			into = add(&deployments)
		case "Service":
			into = add(&services)
		case "PodDisruptionBudget":
			into = add(&pdbs)
		case "NetworkPolicy":
			into = add(&netpols)
		case "ClusterRole":
			if strings.HasSuffix(o.GetName(), "metrics-reader") {
				into = add(&readers)
			} else {
				into = add(&d.clusterRoles)
			}
		case "Role":
			into = add(&d.roles)
		case "ClusterRoleBinding":
			into = add(&d.crbs)
		case "RoleBinding":
			into = add(&d.rbs)
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
			t.Fatalf("config/default: %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	if len(namespaces) != 1 || len(deployments) != 1 || len(services) != 1 {
		t.Fatalf("config/default has %d Namespaces, %d Deployments, %d Services; want one each", len(namespaces), len(deployments), len(services))
	}
	if len(pdbs) != 1 || len(netpols) != 1 || len(readers) != 1 {
		t.Fatalf("config/default has %d PodDisruptionBudgets, %d NetworkPolicies, %d ClusterRoles named *metrics-reader; want one each", len(pdbs), len(netpols), len(readers))
	}
	d.namespace, d.deployment, d.service = &namespaces[0], &deployments[0], &services[0]
	d.pdb, d.netpol, d.metricsReader = &pdbs[0], &netpols[0], &readers[0]
	return d
}

// add appends a zero T to list and returns it, to decode into.
func add[T any](list *[]T) *T {
	*list = append(*list, *new(T))
	return &(*list)[len(*list)-1]
}

// warnings collects the API server's warnings.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// TestManifestsApplyWithServerSideDryRun applies every object of
// config/default, in kustomize's order, with server-side apply and
// DryRun=All: the real API server validates and admits each (schema, RBAC
// objects, PodSecurity warnings for the Deployment) without persisting it.
// (framework.Main has applied the Namespace, ServiceAccount and RBAC for
// real, as namespaced objects cannot be dry-run into a namespace that is only
// dry-run created.)
func TestManifestsApplyWithServerSideDryRun(t *testing.T) {
	d := load(t)
	kinds := map[string]bool{}
	for _, o := range d.objs {
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"} {
		if !kinds[k] {
			t.Errorf("config/default has no %s", k)
		}
	}

	w := &warnings{}
	c := framework.AdminConfig()
	c.WarningHandlerWithContext = w
	if err := framework.Apply(context.Background(), c, d.objs, true); err != nil {
		t.Fatalf("server-side dry-run apply of config/default: %v", err)
	}
	if got := w.get(); len(got) > 0 {
		t.Errorf("the API server warned about config/default:\n%s", strings.Join(got, "\n"))
	}

	// A dry run persists nothing.
	client := kubernetes.NewForConfigOrDie(framework.AdminConfig())
	ctx := context.Background()
	if _, err := client.AppsV1().Deployments(d.deployment.Namespace).Get(ctx, d.deployment.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment after a dry run: err = %v, want NotFound", err)
	}
	if _, err := client.CoreV1().Services(d.service.Namespace).Get(ctx, d.service.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("metrics Service after a dry run: err = %v, want NotFound", err)
	}
}

// TestPodTemplateMeetsRestrictedPodSecurity creates (dry run) a Pod from the
// Deployment's template in the manifest's namespace: the namespace's
// pod-security.kubernetes.io/enforce=restricted label makes the API server's
// PodSecurity admission reject any Pod that is not "restricted". A copy
// that allows privilege escalation is rejected, which shows the check bites.
func TestPodTemplateMeetsRestrictedPodSecurity(t *testing.T) {
	d := load(t)
	if got := d.namespace.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Fatalf("Namespace %s: pod-security.kubernetes.io/enforce = %q, want restricted", d.namespace.Name, got)
	}
	client := kubernetes.NewForConfigOrDie(framework.AdminConfig())
	live, err := client.CoreV1().Namespaces().Get(context.Background(), d.namespace.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if live.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("the live Namespace lacks the enforce label: %v", live.Labels)
	}

	pod := func(mutate func(*corev1.PodSpec)) *corev1.Pod {
		tpl := d.deployment.Spec.Template.DeepCopy()
		p := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
		p.Namespace, p.Name = d.deployment.Namespace, "pod-security-check"
		if mutate != nil {
			mutate(&p.Spec)
		}
		return p
	}
	create := func(p *corev1.Pod) error {
		_, err := client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	if err := create(pod(nil)); err != nil {
		t.Fatalf("a Pod of the Deployment's template is rejected in %s: %v", d.namespace.Name, err)
	}
	err = create(pod(func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true) }))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a Pod allowing privilege escalation: err = %v, want Forbidden by PodSecurity", err)
	}
}

// TestDeployment checks the Deployment's production settings (secure
// metrics, probes, spread, drain time) and its flags against the binary's.
func TestDeployment(t *testing.T) {
	d := load(t)
	dep := d.deployment
	spec := dep.Spec.Template.Spec
	if got := ptr.Deref(dep.Spec.Replicas, 1); got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	ctr := spec.Containers[0]

	// Security context: non-root, no privilege escalation, no capabilities,
	// RuntimeDefault seccomp, read-only root filesystem.
	psc, sc := spec.SecurityContext, ctr.SecurityContext
	if psc == nil || sc == nil {
		t.Fatalf("Pod or container securityContext missing")
	}
	if !ptr.Deref(psc.RunAsNonRoot, false) && !ptr.Deref(sc.RunAsNonRoot, false) {
		t.Error("runAsNonRoot is not set")
	}
	if !ptr.Deref(psc.RunAsNonRoot, true) || !ptr.Deref(sc.RunAsNonRoot, true) {
		t.Error("runAsNonRoot is false somewhere")
	}
	if !slices.ContainsFunc([]*corev1.SeccompProfile{psc.SeccompProfile, sc.SeccompProfile}, func(p *corev1.SeccompProfile) bool {
		return p != nil && p.Type == corev1.SeccompProfileTypeRuntimeDefault
	}) {
		t.Error("seccompProfile is not RuntimeDefault")
	}
	if !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if ptr.Deref(sc.AllowPrivilegeEscalation, true) {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if ptr.Deref(sc.Privileged, false) {
		t.Error("the container is privileged")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities = %+v, want drop ALL and add nothing", sc.Capabilities)
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("the Pod uses host namespaces")
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := ctr.Resources.Requests[name]; !ok {
			t.Errorf("no %s request", name)
		}
	}
	if _, ok := ctr.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Error("no memory limit")
	}

	// The args are flags the binary accepts and validates.
	args := expandArgs(t, ctr, dep.Namespace)
	if err := app.NewCommand().Flags().Parse(args); err != nil {
		t.Fatalf("the binary rejects the Deployment's args %q: %v", args, err)
	}
	o := app.NewOptions()
	fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
	for _, f := range o.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("the Deployment's flags %q are invalid: %v", args, err)
	}
	if !o.LeaderElection.LeaderElect {
		t.Error("leader election is off")
	}
	if !o.MetricsSecure {
		t.Error("--metrics-secure is off: /metrics would be served in plain HTTP to anyone reaching the Pod")
	}
	if o.LeaderElection.ResourceNamespace != dep.Namespace {
		t.Errorf("the Lease is in %q, want the manager's namespace %q", o.LeaderElection.ResourceNamespace, dep.Namespace)
	}
	grace := time.Duration(ptr.Deref(spec.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds)) * time.Second
	if grace <= o.ShutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds (%v) must exceed --shutdown-timeout (%v), or the kubelet kills the drain", grace, o.ShutdownTimeout)
	}

	// The servers listen on the Pod's IP, on the declared ports; the probes
	// hit the health server.
	metricsPort := listenPort(t, "--metrics-bind-address", o.MetricsBindAddress)
	healthPort := listenPort(t, "--health-probe-bind-address", o.HealthProbeBindAddress)
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	probePort := func(p *corev1.Probe) int32 {
		if p == nil || p.HTTPGet == nil {
			return -1
		}
		if p.HTTPGet.Port.StrVal != "" {
			return ports[p.HTTPGet.Port.StrVal]
		}
		return p.HTTPGet.Port.IntVal
	}
	for name, probe := range map[string]*corev1.Probe{"/healthz": ctr.LivenessProbe, "/readyz": ctr.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name {
			t.Errorf("no HTTP probe on %s: %+v", name, probe)
			continue
		}
		if got := probePort(probe); got != healthPort {
			t.Errorf("the %s probe targets port %d, the health server listens on %d", name, got, healthPort)
		}
	}
	if !slices.Contains(slices.Collect(maps.Values(ports)), metricsPort) {
		t.Errorf("no container port %d for the metrics server (ports %v)", metricsPort, ports)
	}

	// The metrics Service selects the Pods and reaches the metrics port.
	svc := d.service
	if svc.Namespace != dep.Namespace {
		t.Errorf("metrics Service in %s, Deployment in %s", svc.Namespace, dep.Namespace)
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("metrics Service selector %s=%s does not match the Pod labels %v", k, v, dep.Spec.Template.Labels)
		}
	}
	if len(svc.Spec.Selector) == 0 || len(svc.Spec.Ports) != 1 {
		t.Fatalf("metrics Service: selector %v, ports %v", svc.Spec.Selector, svc.Spec.Ports)
	}
	target := svc.Spec.Ports[0].TargetPort
	if got := target.IntVal; target.StrVal != "" {
		got = ports[target.StrVal]
		if got != metricsPort {
			t.Errorf("metrics Service targets %q = %d, the metrics server listens on %d", target.StrVal, got, metricsPort)
		}
	} else if got != metricsPort {
		t.Errorf("metrics Service targets %d, the metrics server listens on %d", got, metricsPort)
	}
	if got := svc.Spec.Ports[0].Port; got != metricsPort {
		t.Errorf("metrics Service port = %d, want the metrics server's %d", got, metricsPort)
	}

	// The two replicas prefer different nodes.
	spreads := len(spec.TopologySpreadConstraints) > 0
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			sel, err := metav1.LabelSelectorAsSelector(term.PodAffinityTerm.LabelSelector)
			if err == nil && term.PodAffinityTerm.TopologyKey == corev1.LabelHostname && sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
				spreads = true
			}
		}
	}
	if !spreads {
		t.Error("no pod anti-affinity on kubernetes.io/hostname (or topology spread) selecting the manager's Pods: both replicas may land on one node")
	}

	// The disruption budget covers the Pods and keeps one of the two.
	pdb := d.pdb
	if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("PodDisruptionBudget %s selector %v does not select the Pods (labels %v): %v", pdb.Name, pdb.Spec.Selector, dep.Spec.Template.Labels, err)
	}
	if pdb.Namespace != dep.Namespace {
		t.Errorf("PodDisruptionBudget in %s, Deployment in %s", pdb.Namespace, dep.Namespace)
	}
	maxU, minA := pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable
	if !(maxU != nil && minA == nil && maxU.String() == "1") && !(minA != nil && maxU == nil && minA.String() == "1") {
		t.Errorf("PodDisruptionBudget: maxUnavailable %v, minAvailable %v; want one of them 1 for the 2 replicas", maxU, minA)
	}

	// The network policy admits ingress to the metrics and probe ports
	// only, and leaves egress alone.
	np := d.netpol
	if sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("NetworkPolicy %s podSelector %v does not select the Pods: %v", np.Name, np.Spec.PodSelector, err)
	}
	if np.Namespace != dep.Namespace {
		t.Errorf("NetworkPolicy in %s, Deployment in %s", np.Namespace, dep.Namespace)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("NetworkPolicy policyTypes = %v, want [Ingress] (egress open)", np.Spec.PolicyTypes)
	}
	var admitted []int32
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("NetworkPolicy ingress rule %+v admits every port", rule)
		}
		for _, p := range rule.Ports {
			if p.Port == nil || p.EndPort != nil || ptr.Deref(p.Protocol, corev1.ProtocolTCP) != corev1.ProtocolTCP {
				t.Errorf("NetworkPolicy port %+v: want one TCP port", p)
				continue
			}
			n := p.Port.IntVal
			if p.Port.StrVal != "" {
				n = ports[p.Port.StrVal]
			}
			admitted = append(admitted, n)
		}
	}
	slices.Sort(admitted)
	if want := []int32{min(metricsPort, healthPort), max(metricsPort, healthPort)}; !slices.Equal(admitted, want) {
		t.Errorf("NetworkPolicy admits ports %v, want exactly the metrics and probe ports %v", admitted, want)
	}
}

// expandArgs returns the container's args with $(VAR) references expanded
// as the kubelet does, from the container's env (values and the
// metadata.namespace field), failing on a reference it cannot resolve.
func expandArgs(t *testing.T, c corev1.Container, namespace string) []string {
	t.Helper()
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			vars[e.Name] = namespace
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	var out []string
	for _, a := range append(slices.Clone(c.Command), c.Args...) {
		out = append(out, ref.ReplaceAllStringFunc(a, func(m string) string {
			name := ref.FindStringSubmatch(m)[1]
			v, ok := vars[name]
			if !ok {
				t.Errorf("arg %q refers to $(%s), which the container's env does not define", a, name)
			}
			return v
		}))
	}
	return out
}

// listenPort returns the port of a bind address that listens on every
// interface (as a Pod must, to be probed and scraped on its IP).
func listenPort(t *testing.T, flag, addr string) int32 {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s=%q: %v", flag, addr, err)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("%s=%q listens on %s only: probes and Prometheus reach the Pod on its IP", flag, addr, host)
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil || p == 0 {
		t.Fatalf("%s=%q: want a fixed port", flag, addr)
	}
	return int32(p)
}

// TestRBACLeastPrivilege checks the RBAC of config/default: no wildcards, no
// Secrets, no escalation verbs, Leases only through a Role in the manager's
// own namespace, the finalizers permission blockOwnerDeletion needs, every
// binding for the Deployment's ServiceAccount. (docs/reference/rbac.md is
// generated from the same rendering by make docs; make verify keeps it true.)
func TestRBACLeastPrivilege(t *testing.T) {
	d := load(t)
	ns, sa := d.deployment.Namespace, d.deployment.Spec.Template.Spec.ServiceAccountName
	if len(d.clusterRoles) == 0 || len(d.roles) == 0 {
		t.Fatalf("config/default has %d ClusterRoles and %d Roles", len(d.clusterRoles), len(d.roles))
	}
	type scoped struct {
		scope string // "cluster" or "own namespace"
		rule  rbacv1.PolicyRule
		from  string
	}
	var all []scoped
	for _, r := range d.clusterRoles {
		if r.AggregationRule != nil {
			t.Errorf("ClusterRole %s aggregates other roles", r.Name)
		}
		for _, rule := range r.Rules {
			all = append(all, scoped{"cluster", rule, "ClusterRole " + r.Name})
		}
	}
	for _, r := range d.roles {
		if r.Namespace != ns {
			t.Errorf("Role %s/%s is outside the manager's namespace %s", r.Namespace, r.Name, ns)
		}
		for _, rule := range r.Rules {
			all = append(all, scoped{"own namespace", rule, "Role " + r.Name})
		}
	}
	for _, s := range all {
		r := s.rule
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames} {
			for _, v := range list {
				if strings.Contains(v, "*") {
					t.Errorf("%s: wildcard %q in %+v", s.from, v, r)
				}
			}
		}
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("%s: nonResourceURLs %v", s.from, r.NonResourceURLs)
		}
		for _, res := range r.Resources {
			if base, _, _ := strings.Cut(res, "/"); base == "secrets" {
				t.Errorf("%s: access to Secrets (%+v)", s.from, r)
			}
			if base, _, _ := strings.Cut(res, "/"); base == "leases" && s.scope != "own namespace" {
				t.Errorf("%s: Leases outside the manager's namespace (%+v)", s.from, r)
			}
		}
		for _, v := range r.Verbs {
			if v == "escalate" || v == "bind" || v == "impersonate" {
				t.Errorf("%s: verb %q", s.from, v)
			}
		}
	}
	if !slices.ContainsFunc(all, func(s scoped) bool {
		return s.scope == "cluster" && slices.Contains(s.rule.APIGroups, "") &&
			slices.Contains(s.rule.Resources, "services/finalizers") && slices.Contains(s.rule.Verbs, "update")
	}) {
		t.Error("no update on services/finalizers: the Ingresses' blockOwnerDeletion would be refused")
	}
	// The secure metrics server reviews scrapers' tokens and access: create
	// on tokenreviews and subjectaccessreviews, nothing more.
	for _, want := range []struct{ group, resource string }{
		{"authentication.k8s.io", "tokenreviews"},
		{"authorization.k8s.io", "subjectaccessreviews"},
	} {
		var verbs []string
		for _, s := range all {
			if slices.Contains(s.rule.APIGroups, want.group) && slices.Contains(s.rule.Resources, want.resource) {
				verbs = append(verbs, s.rule.Verbs...)
			}
		}
		if !slices.Equal(verbs, []string{"create"}) {
			t.Errorf("%s %s: verbs %v, want exactly [create] (the metrics server's delegated authentication and authorization)", want.group, want.resource, verbs)
		}
	}

	// The metrics-reader role allows exactly GET /metrics, and the manifest
	// binds it to no one (the cluster's Prometheus account is bound by the
	// operator).
	mr := d.metricsReader
	if len(mr.Rules) != 1 || !slices.Equal(mr.Rules[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(mr.Rules[0].Verbs, []string{"get"}) ||
		len(mr.Rules[0].Resources) > 0 || len(mr.Rules[0].APIGroups) > 0 || mr.AggregationRule != nil {
		t.Errorf("ClusterRole %s: rules %+v, want exactly nonResourceURLs [/metrics] verbs [get]", mr.Name, mr.Rules)
	}
	for _, b := range d.crbs {
		if b.RoleRef.Name == mr.Name {
			t.Errorf("ClusterRoleBinding %s binds %s: config/default must not grant metrics access (bind Prometheus's account yourself)", b.Name, mr.Name)
		}
	}
	for _, b := range d.rbs {
		if b.RoleRef.Name == mr.Name {
			t.Errorf("RoleBinding %s binds %s", b.Name, mr.Name)
		}
	}

	// Every binding is for the Deployment's ServiceAccount and one of the
	// roles above.
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}
	check := func(kind, name string, subjects []rbacv1.Subject, ref rbacv1.RoleRef, roleOK bool) {
		if len(subjects) != 1 || subjects[0] != want {
			t.Errorf("%s %s binds %+v, want only %+v", kind, name, subjects, want)
		}
		if !roleOK {
			t.Errorf("%s %s refers to %s %s, which config/default does not define", kind, name, ref.Kind, ref.Name)
		}
	}
	for _, b := range d.crbs {
		check("ClusterRoleBinding", b.Name, b.Subjects, b.RoleRef, b.RoleRef.Kind == "ClusterRole" &&
			slices.ContainsFunc(d.clusterRoles, func(r rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name }))
	}
	for _, b := range d.rbs {
		if b.Namespace != ns {
			t.Errorf("RoleBinding %s/%s is outside the manager's namespace", b.Namespace, b.Name)
		}
		check("RoleBinding", b.Name, b.Subjects, b.RoleRef, b.RoleRef.Kind == "Role" &&
			slices.ContainsFunc(d.roles, func(r rbacv1.Role) bool { return r.Name == b.RoleRef.Name }))
	}
}

// errorRecorder is a testing.TB that records errors instead of failing, and
// whose cleanups the test runs itself: it shows what a test using the
// framework would report.
type errorRecorder struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
	once     sync.Once
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *errorRecorder) Error(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprint(args...))
}

func (r *errorRecorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// runCleanups runs the recorded cleanups, last first, once.
func (r *errorRecorder) runCleanups() {
	r.once.Do(func() {
		r.mu.Lock()
		fs := slices.Clone(r.cleanups)
		r.mu.Unlock()
		for i := len(fs) - 1; i >= 0; i-- {
			fs[i]()
		}
	})
}

func (r *errorRecorder) errors() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

// TestMissingVerbFailsTheTests runs the ingress-manager as a ServiceAccount
// bound to config/default's ClusterRole minus one permission: it does not
// converge, the Forbidden error is in its logs, and the framework fails the
// test, which is what every integration test would do if config/rbac missed
// a verb. The manager with the manifest's full rules then converges on the
// same Service: that one permission was the difference.
func TestMissingVerbFailsTheTests(t *testing.T) {
	for _, tc := range []struct {
		name string
		// remove takes the permission out of a copy of the rules.
		remove func([]rbacv1.PolicyRule) []rbacv1.PolicyRule
		// request is the refused request; log is in the manager's error
		// (Forbidden).
		request, log string
	}{
		{
			name: "ingresses-create",
			remove: func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
				for i, r := range rules {
					if slices.Contains(r.Resources, "ingresses") {
						rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "create" })
					}
				}
				return rules
			},
			request: "POST /apis/networking.k8s.io/v1/namespaces/%s/ingresses",
			log:     "cannot create resource",
		},
		{
			name: "services-finalizers-update",
			remove: func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
				return slices.DeleteFunc(rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "services/finalizers") })
			},
			request: "POST /apis/networking.k8s.io/v1/namespaces/%s/ingresses",
			log:     "cannot set blockOwnerDeletion",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := load(t)
			if len(d.clusterRoles) != 1 {
				t.Fatalf("want one ClusterRole, got %d", len(d.clusterRoles))
			}
			ns := d.deployment.Namespace
			name := "without-" + tc.name
			rules := tc.remove(slices.Clone(d.clusterRoles[0].Rules))
			if equalRules(rules, d.clusterRoles[0].Rules) {
				t.Fatal("nothing removed from the rules")
			}
			objs := toUnstructured(t,
				&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
				&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}, ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
				&rbacv1.ClusterRoleBinding{
					TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
					ObjectMeta: metav1.ObjectMeta{Name: name},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
					Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
				},
			)
			ctx := context.Background()
			if err := framework.Apply(ctx, framework.AdminConfig(), objs, false); err != nil {
				t.Fatal(err)
			}

			client, testNS := framework.Setup(t)
			o := framework.ControllerOptions(testNS, "ingress-manager")
			rec := &errorRecorder{TB: t}
			t.Cleanup(rec.runCleanups)
			m := framework.StartManager(rec, framework.AsServiceAccount(framework.AdminConfig(), ns, name), o)

			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "web", Annotations: map[string]string{"ingress/http": "nginx"}},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
			}
			if _, err := client.CoreV1().Services(testNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			request := fmt.Sprintf(tc.request, testNS)
			framework.Eventually(t, framework.Timeout, "the Ingress write to be refused", func(context.Context) (bool, error) {
				logs := m.Logs()
				return slices.Contains(m.Forbidden(), request) && strings.Contains(logs, "is forbidden") && strings.Contains(logs, tc.log), nil
			})
			if _, err := client.NetworkingV1().Ingresses(testNS).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("Ingress without the permission: err = %v, want NotFound", err)
			}
			rec.runCleanups() // stops the manager, as at the end of a test
			if got := rec.errors(); !strings.Contains(got, "403 Forbidden") || !strings.Contains(got, request) {
				t.Fatalf("the framework did not fail the test on the refused request; it reported:\n%s", got)
			}

			// The manifest's rules: the same Service converges.
			o = framework.ControllerOptions(testNS, "ingress-manager")
			full := framework.StartManager(t, framework.AdminConfig(), o)
			framework.Eventually(t, framework.Timeout, "the Ingress with the manifest's rules", func(ctx context.Context) (bool, error) {
				_, err := client.NetworkingV1().Ingresses(testNS).Get(ctx, "web", metav1.GetOptions{})
				return err == nil, nil
			})
			if got := full.Forbidden(); len(got) > 0 {
				t.Errorf("requests refused with the manifest's rules: %v", got)
			}
		})
	}
}

func equalRules(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) && slices.Equal(x.Verbs, y.Verbs)
	})
}

func toUnstructured(t *testing.T, objs ...runtime.Object) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}
