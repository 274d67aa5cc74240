package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron/neutrontest"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// wantIngress is the Ingress a Service should have, worked out by the test
// from the documented rules (docs/ingress-manager.md), independently of the controller's builder.
type wantIngress struct {
	Host, Path, PathType string
	Port                 int32
	Class, TLSSecret     string
	Annotations          map[string]string
}

// modelIngress returns the Ingress svc should have (nil: none), for the
// annotation values the tests write (all valid); ok is false when the test
// cannot tell (a value outside that set).
func modelIngress(svc *corev1.Service) (want *wantIngress, ok bool) {
	ann := svc.Annotations
	v, set := ann["ingress/http"]
	if !set || strings.EqualFold(strings.TrimSpace(v), "false") {
		return nil, true
	}
	w := &wantIngress{Host: "example.com", Path: "/", PathType: "Prefix"}
	if h, set := ann["ingress/host"]; set {
		w.Host = strings.TrimSpace(h)
	}
	if p := strings.TrimSpace(ann["ingress/path"]); p != "" {
		w.Path = p
	}
	if pt := strings.TrimSpace(ann["ingress/path-type"]); pt != "" {
		w.PathType = pt
	}
	w.Class = strings.TrimSpace(ann["ingress/class"])
	w.TLSSecret = strings.TrimSpace(ann["ingress/tls-secret"])
	if a := strings.TrimSpace(ann["ingress/annotations"]); a != "" {
		if err := json.Unmarshal([]byte(a), &w.Annotations); err != nil {
			return nil, false
		}
		if len(w.Annotations) == 0 {
			w.Annotations = nil
		}
	}
	ports := svc.Spec.Ports
	if p := strings.TrimSpace(ann["ingress/port"]); p != "" {
		for _, sp := range ports {
			if strconv.Itoa(int(sp.Port)) == p || sp.Name == p {
				w.Port = sp.Port
			}
		}
	} else {
		for _, pick := range []func(sp corev1.ServicePort) bool{
			func(sp corev1.ServicePort) bool { return sp.Port == 80 },
			func(sp corev1.ServicePort) bool { return sp.Name == "http" },
			func(corev1.ServicePort) bool { return len(ports) == 1 },
		} {
			if i := slices.IndexFunc(ports, pick); i >= 0 && w.Port == 0 {
				w.Port = ports[i].Port
			}
		}
	}
	return w, w.Port != 0
}

// ingressProblem says how ing differs from want for svc ("" when it does
// not); its ownership is framework.CompareIngresses'.
func ingressProblem(svc *corev1.Service, want *wantIngress, ing *networkingv1.Ingress) string {
	got := wantIngress{Class: ptrString(ing.Spec.IngressClassName), Annotations: ing.Annotations}
	if len(got.Annotations) == 0 {
		got.Annotations = nil
	}
	if rules := ing.Spec.Rules; len(rules) == 1 && rules[0].HTTP != nil && len(rules[0].HTTP.Paths) == 1 {
		p := rules[0].HTTP.Paths[0]
		got.Host, got.Path = rules[0].Host, p.Path
		if p.PathType != nil {
			got.PathType = string(*p.PathType)
		}
		if be := p.Backend.Service; be != nil && be.Name == svc.Name && be.Port.Name == "" {
			got.Port = be.Port.Number
		}
	}
	switch tls := ing.Spec.TLS; {
	case len(tls) == 0 && want.TLSSecret == "":
	case len(tls) == 1 && tls[0].SecretName == want.TLSSecret &&
		(want.Host == "" && len(tls[0].Hosts) == 0 || slices.Equal(tls[0].Hosts, []string{want.Host})):
		got.TLSSecret = want.TLSSecret
	default:
		return fmt.Sprintf("tls %+v, want secret %q for host %q", tls, want.TLSSecret, want.Host)
	}
	if got.Host != want.Host || got.Path != want.Path || got.PathType != want.PathType || got.Port != want.Port ||
		got.Class != want.Class || got.TLSSecret != want.TLSSecret || !maps.Equal(got.Annotations, want.Annotations) {
		return fmt.Sprintf("is %+v (rules %+v), want %+v", got, ing.Spec.Rules, *want)
	}
	return ""
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// ingressProblems lists, from live LISTs of ns, how the Ingresses differ
// from what the Services ask for (framework.CompareIngresses, each
// Ingress checked against the test's own model of the annotations);
// foreign maps the Ingresses the test made without an owner to their
// resourceVersions.
func ingressProblems(ctx context.Context, client kubernetes.Interface, ns string, foreign map[string]string) ([]string, error) {
	svcs, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	ings, err := client.NetworkingV1().Ingresses(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	want := map[string]framework.IngressWant{}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		w, ok := modelIngress(svc)
		if !ok {
			return nil, fmt.Errorf("service %s: the test cannot model annotations %v and ports %+v", svc.Name, svc.Annotations, svc.Spec.Ports)
		}
		if w != nil {
			want[svc.Name] = framework.IngressWant{UID: svc.UID, Check: func(ing *networkingv1.Ingress) error {
				if p := ingressProblem(svc, w, ing); p != "" {
					return errors.New(p)
				}
				return nil
			}}
		}
	}
	return framework.CompareIngresses(ings.Items, want, foreign).Problems, nil
}

// backendNetwork is one network of ours in a backend.
type backendNetwork struct {
	UID           types.UID
	CIDR, Gateway string
	Subnets       int
}

// backendState returns the networks of ours a backend holds, and how often
// a network was created for each UID.
type backendState func() (nets []backendNetwork, creates map[types.UID]int)

// memoryState reads a memory backend; creates returns the creates per UID
// counted by a fault hook of the test (memory.OpCreateSubnet: the step that
// completes a create).
func memoryState(mem *memory.Backend, ns string, creates func() map[types.UID]int) backendState {
	return func() ([]backendNetwork, map[types.UID]int) {
		var out []backendNetwork
		for _, o := range mem.Objects() {
			if o.Owned && o.Namespace == ns {
				n := backendNetwork{UID: o.UID, CIDR: o.CIDR, Gateway: o.Gateway}
				if o.SubnetID != "" {
					n.Subnets = 1
				}
				out = append(out, n)
			}
		}
		return out, creates()
	}
}

// neutronSettle bounds the waits of the tests that run real Neutron: one
// single-process Neutron on SQLite serves every test package at once, and
// answers in seconds when the machine is busy. It is a deadline, not a
// timing: the tests log how long they took.
const neutronSettle = 5 * time.Minute

var uidInDescription = regexp.MustCompile(`\(uid ([^)]+)\)`)

// cloud is the real OpenStack as one test sees it: a fault proxy in front
// of it, and a managed-by value of the test's own, so the state it reads is
// only what its managers made.
type cloud struct {
	*neutrontest.Proxy
	real      *neutrontest.Cloud
	managedBy string
	t         *testing.T
}

func newCloud(t *testing.T) *cloud {
	real := neutrontest.Get(t)
	c := &cloud{Proxy: real.NewProxy(t), real: real, managedBy: neutrontest.UniqueManagedBy(), t: t}
	real.CleanupManagedBy(t, c.managedBy)
	return c
}

// Env is the OS_* configuration of a manager that reaches OpenStack through
// the proxy.
func (c *cloud) Env() map[string]string { return c.Proxy.Env(c.real.Env()) }

// args are the manager flags that keep its Neutron networks apart.
func (c *cloud) args() []string { return []string{"--neutron-managed-by=" + c.managedBy} }

// backend returns an in-process Neutron backend configured as a manager is.
func (c *cloud) backend() *neutron.Backend {
	return c.real.Backend(c.t, neutron.Options{Getenv: neutrontest.Getenv(c.Env()), ManagedBy: c.managedBy})
}

// state reads real Neutron as the admin: the networks of the test's
// managed-by, tagged or not yet (an interrupted create leaves an untagged
// network whose description names it, reported as held for no Network);
// creates counts the networks Neutron confirmed creating per UID named in
// their description.
func (c *cloud) state() backendState {
	return func() ([]backendNetwork, map[types.UID]int) {
		admin := c.real.Admin(c.t)
		suffix := "managed by " + c.managedBy
		subnetsOf := map[string][]subnets.Subnet{}
		pages, err := subnets.List(admin, subnets.ListOpts{ProjectID: c.real.ProjectID}).AllPages(context.Background())
		if err != nil {
			c.t.Fatalf("listing subnets: %v", err)
		}
		subs, _ := subnets.ExtractSubnets(pages)
		for _, s := range subs {
			subnetsOf[s.NetworkID] = append(subnetsOf[s.NetworkID], s)
		}
		var out []backendNetwork
		for _, n := range c.real.Networks(c.t, admin, "") {
			ours := strings.HasSuffix(n.Description, suffix)
			b := backendNetwork{}
			for _, tag := range n.Tags {
				if uid, ok := strings.CutPrefix(tag, neutron.UIDTagPrefix); ok {
					b.UID = types.UID(uid)
				}
				ours = ours || tag == neutron.ManagedByTagPrefix+c.managedBy
			}
			if !ours {
				continue
			}
			for _, s := range subnetsOf[n.ID] {
				b.Subnets++
				b.CIDR, b.Gateway = s.CIDR, s.GatewayIP
			}
			out = append(out, b)
		}
		creates := map[types.UID]int{}
		for _, d := range c.CreatedNetworks() {
			if m := uidInDescription.FindStringSubmatch(d); m != nil {
				creates[types.UID(m[1])]++
			} else {
				creates[""]++
			}
		}
		return out, creates
	}
}

// networkProblems lists, from a live LIST of ns and the backend, how the
// Networks and the backend differ from what they should be: every Network
// Ready for its generation and held by the backend exactly once, as
// specified; the backend holding nothing of ours without a Network; at
// most one backend create per Network UID.
func networkProblems(ctx context.Context, client versioned.Interface, ns string, backend backendState) ([]string, error) {
	list, err := client.SamplecrdV1().Networks(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nets, creates := backend()
	held := map[types.UID][]backendNetwork{}
	for _, n := range nets {
		held[n.UID] = append(held[n.UID], n)
	}
	var problems []string
	live := map[types.UID]bool{}
	for _, n := range list.Items {
		live[n.UID] = true
		c := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
		switch {
		case n.DeletionTimestamp != nil:
			problems = append(problems, fmt.Sprintf("network %s: still being deleted (Ready %+v)", n.Name, c))
		case c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != n.Generation || n.Status.SubnetID == "":
			problems = append(problems, fmt.Sprintf("network %s: not Ready for generation %d: %+v, status %+v", n.Name, n.Generation, c, n.Status))
		}
		switch b := held[n.UID]; {
		case len(b) != 1:
			problems = append(problems, fmt.Sprintf("network %s: the backend holds %d networks for it", n.Name, len(b)))
		case b[0].Subnets != 1 || !sameCIDR(b[0].CIDR, n.Spec.CIDR) || !sameIP(b[0].Gateway, n.Spec.Gateway):
			problems = append(problems, fmt.Sprintf("network %s: the backend holds %+v for spec %+v", n.Name, b[0], n.Spec))
		}
	}
	for uid, b := range held {
		if !live[uid] {
			problems = append(problems, fmt.Sprintf("the backend holds %d networks of uid %q, which no Network has: %+v", len(b), uid, b))
		}
	}
	for uid, n := range creates {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("the backend created %d networks for uid %q", n, uid))
		}
	}
	slices.Sort(problems)
	return problems, nil
}

func sameCIDR(a, b string) bool {
	pa, errA := netip.ParsePrefix(a)
	pb, errB := netip.ParsePrefix(b)
	return errA == nil && errB == nil && pa == pb
}

func sameIP(a, b string) bool {
	ia, errA := netip.ParseAddr(a)
	ib, errB := netip.ParseAddr(b)
	return errA == nil && errB == nil && ia == ib
}

// settled is what nothingLost checks.
type settled struct {
	kube    kubernetes.Interface
	sample  versioned.Interface
	ns      string
	foreign map[string]string // name -> resourceVersion
	backend backendState      // nil: no Networks in the test
	logs    []func() string
}

// nothingLost waits (at most timeout) until the Ingresses and the Networks
// of s.ns are what they should be (see ingressProblems and
// networkProblems), failing the test with the remaining problems if they
// are not; then it checks the logs for panics.
func nothingLost(t testing.TB, timeout time.Duration, s settled) {
	t.Helper()
	var last []string
	var lastErr error
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		problems, err := ingressProblems(ctx, s.kube, s.ns, s.foreign)
		if err == nil && s.backend != nil {
			var more []string
			more, err = networkProblems(ctx, s.sample, s.ns, s.backend)
			problems = append(problems, more...)
		}
		if err != nil {
			if ctx.Err() == nil {
				lastErr = err
			}
			return false, nil
		}
		last, lastErr = problems, nil
		return len(problems) == 0, nil
	})
	if err != nil {
		t.Fatalf("not settled within %v: %d problems (last error: %v):\n%s", timeout, len(last), lastErr, strings.Join(last, "\n"))
	}
	t.Logf("settled %v after the faults", time.Since(start).Round(time.Millisecond))
	for i, logs := range s.logs {
		if n := strings.Count(strings.ToLower(logs()), "panic"); n > 0 {
			t.Errorf("manager %d logged %d panics", i, n)
		}
	}
}

// syncMap counts per UID, safely for concurrent use.
type syncMap struct {
	mu     sync.Mutex
	counts map[types.UID]int
}

func (m *syncMap) inc(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[types.UID]int{}
	}
	m.counts[uid]++
}

func (m *syncMap) copy() map[types.UID]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.counts)
}

// maxCreates returns the highest count of creates per UID, and the total.
func maxCreates(creates map[types.UID]int) (most, total int) {
	for _, n := range creates {
		most = max(most, n)
		total += n
	}
	return most, total
}
