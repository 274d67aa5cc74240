package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/app"
	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// Model-based test of the ingress-manager: random sequences of operations
// on a few Service names, then, once the manager settled, the live
// Ingresses compared to what the model of the Services asks for
// (modelIngress, written from docs/ingress-manager.md, not from the controller).
//
// FAULTS_MODEL_SEED=<n> replays the sequences of seed n (the test logs the
// seed it used).
const (
	modelSequences = 5
	modelSteps     = 25
)

var modelNames = []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}

// portSets are the Service port lists the model picks from.
var portSets = [][]corev1.ServicePort{
	{{Name: "http", Port: 80}},
	{{Name: "web", Port: 8080}},
	{{Name: "http", Port: 8080}, {Name: "admin", Port: 9090}},
	{{Name: "a", Port: 81}, {Name: "b", Port: 82}},
}

// Option values the model picks from (nil: the annotation is absent).
var options = map[string][]*string{
	"ingress/host":        {nil, str(""), str("shop.example.com"), str("*.apps.example.org")},
	"ingress/path":        {nil, str("/"), str("/api"), str("/v2/items")},
	"ingress/path-type":   {nil, str("Prefix"), str("Exact"), str("ImplementationSpecific")},
	"ingress/class":       {nil, str(""), str("nginx"), str("internal")},
	"ingress/tls-secret":  {nil, str("web-tls")},
	"ingress/annotations": {nil, str(`{}`), str(`{"example.com/team":"blue"}`), str(`{"example.com/team":"red","example.com/tier":"1"}`)},
}

type modelOp int

const (
	opCreate modelOp = iota
	opAnnotate
	opReannotate
	opOptions
	opPorts
	opDisable
	opDelete
	opForeign
	opDeleteForeign
	opRestart
	numOps
)

var opNames = []string{"create", "annotate", "re-annotate", "change options", "change ports", "disable", "delete", "foreign Ingress", "delete foreign Ingress", "restart manager"}

// model is what the test knows the cluster holds: the Services it wrote
// and the foreign Ingresses it created.
type model struct {
	t       *testing.T
	rnd     *rand.Rand
	kube    kubernetes.Interface
	ns      string
	svcs    map[string]*corev1.Service
	foreign map[string]string
	opts    *app.Options
	m       *framework.Manager
	counts  map[string]int
}

func TestModelIngressManager(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULTS_MODEL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("FAULTS_MODEL_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (replay with FAULTS_MODEL_SEED=%d)", seed, seed)
	kube := kubernetes.NewForConfigOrDie(framework.Config(cfg))
	md := &model{t: t, rnd: rand.New(rand.NewPCG(seed, 0)), kube: kube, ns: framework.CreateNamespace(t, kube),
		svcs: map[string]*corev1.Service{}, foreign: map[string]string{}, counts: map[string]int{}}
	md.opts = framework.ControllerOptions(md.ns, "ingress-manager")
	md.m = framework.StartManager(t, cfg, md.opts)
	var managers []*framework.Manager
	managers = append(managers, md.m)

	for seq := range modelSequences {
		var steps []string
		for range modelSteps {
			op := modelOp(md.rnd.IntN(int(numOps)))
			switch {
			case op == opRestart && md.rnd.IntN(3) != 0:
				op = opOptions // restarts are slow: a third as likely
			case op == opForeign && len(md.foreign) >= 2:
				op = opDeleteForeign // foreign Ingresses hide the names they take
			}
			if op != opCreate && op < opForeign && len(md.svcs) == 0 {
				op = opCreate // nothing to change yet
			}
			desc := md.step(op)
			steps = append(steps, desc)
			if op == opRestart {
				managers = append(managers, md.m)
			}
		}
		t.Logf("sequence %d: %v", seq, steps)
		md.checkServices()
		var logs []func() string
		for _, m := range managers {
			logs = append(logs, m.Logs)
		}
		nothingLost(t, time.Minute, settled{kube: kube, ns: md.ns, foreign: maps.Clone(md.foreign), logs: logs})
	}
	t.Logf("counts: %d sequences of %d steps; operations %v; manager restarts %d", modelSequences, modelSteps, md.counts, len(managers)-1)
}

// pick returns a random element of list.
func pick[T any](rnd *rand.Rand, list []T) T { return list[rnd.IntN(len(list))] }

// names returns the model's names with (has true) or without a Service.
func (md *model) names(has bool) []string {
	var out []string
	for _, n := range modelNames {
		if _, ok := md.svcs[n]; ok == has {
			out = append(out, n)
		}
	}
	return out
}

// step applies op to a random fitting name and returns what it did; an op
// with no fitting name does nothing.
func (md *model) step(op modelOp) string {
	t := md.t
	t.Helper()
	ctx := context.Background()
	with, without := md.names(true), md.names(false)
	var name string
	switch op {
	case opCreate:
		if len(without) == 0 {
			return "create: no free name"
		}
		name = pick(md.rnd, without)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: md.ns, Name: name, Annotations: map[string]string{}},
			Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: slices.Clone(pick(md.rnd, portSets))},
		}
		if md.rnd.IntN(2) == 0 {
			svc.Annotations["ingress/http"] = pick(md.rnd, []string{"true", "nginx"})
		}
		md.randomOptions(svc)
		md.fixPort(svc)
		if _, err := md.kube.CoreV1().Services(md.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating service %s: %v", name, err)
		}
		md.svcs[name] = svc
	case opDeleteForeign:
		var names []string
		for n := range md.foreign {
			names = append(names, n)
		}
		if len(names) == 0 {
			return "delete foreign Ingress: none"
		}
		slices.Sort(names)
		name = pick(md.rnd, names)
		if err := md.kube.NetworkingV1().Ingresses(md.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting foreign Ingress %s: %v", name, err)
		}
		delete(md.foreign, name)
	case opForeign:
		var free []string
		for _, n := range modelNames {
			if _, ok := md.foreign[n]; !ok {
				free = append(free, n)
			}
		}
		if len(free) == 0 {
			return "foreign Ingress: no free name"
		}
		name = pick(md.rnd, free)
		ing, err := md.kube.NetworkingV1().Ingresses(md.ns).Create(ctx, foreignIngressFor(md.ns, name), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return "foreign Ingress " + name + ": the manager's is there"
		}
		if err != nil {
			t.Fatalf("creating foreign Ingress %s: %v", name, err)
		}
		md.foreign[name] = ing.ResourceVersion
	case opRestart:
		if err := md.m.Stop(); err != nil {
			t.Fatalf("stopping the manager: %v", err)
		}
		md.m = framework.StartManager(t, cfg, md.opts)
		md.counts[opNames[op]]++
		return opNames[op]
	default:
		if len(with) == 0 {
			return opNames[op] + ": no Service"
		}
		name = pick(md.rnd, with)
		svc := md.svcs[name].DeepCopy()
		switch op {
		case opAnnotate:
			svc.Annotations["ingress/http"] = pick(md.rnd, []string{"true", "nginx", "yes"})
		case opReannotate:
			svc.Annotations = map[string]string{"ingress/http": "true"}
			md.randomOptions(svc)
		case opOptions:
			md.randomOptions(svc)
		case opPorts:
			svc.Spec.Ports = slices.Clone(pick(md.rnd, portSets))
		case opDisable:
			if md.rnd.IntN(2) == 0 {
				delete(svc.Annotations, "ingress/http")
			} else {
				svc.Annotations["ingress/http"] = "false"
			}
		case opDelete:
			if err := md.kube.CoreV1().Services(md.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("deleting service %s: %v", name, err)
			}
			delete(md.svcs, name)
			md.counts[opNames[op]]++
			return opNames[op] + " " + name
		}
		md.fixPort(svc)
		md.update(ctx, svc)
		md.svcs[name] = svc
	}
	md.counts[opNames[op]]++
	return opNames[op] + " " + name
}

// randomOptions sets or removes a random half of the option annotations.
func (md *model) randomOptions(svc *corev1.Service) {
	keys := slices.Sorted(maps.Keys(options))
	for _, k := range keys {
		if md.rnd.IntN(2) == 0 {
			continue
		}
		if v := pick(md.rnd, options[k]); v == nil {
			delete(svc.Annotations, k)
		} else {
			svc.Annotations[k] = *v
		}
	}
}

// fixPort keeps ingress/port valid for the ports: absent when they leave
// no doubt, else a number or name of one of them.
func (md *model) fixPort(svc *corev1.Service) {
	delete(svc.Annotations, "ingress/port")
	ports := svc.Spec.Ports
	unambiguous := slices.ContainsFunc(ports, func(p corev1.ServicePort) bool { return p.Port == 80 || p.Name == "http" }) || len(ports) == 1
	if unambiguous && md.rnd.IntN(2) == 0 {
		return
	}
	p := pick(md.rnd, ports)
	if md.rnd.IntN(2) == 0 {
		svc.Annotations["ingress/port"] = strconv.Itoa(int(p.Port))
	} else {
		svc.Annotations["ingress/port"] = p.Name
	}
}

// update writes the annotations and ports of svc.
func (md *model) update(ctx context.Context, svc *corev1.Service) {
	md.t.Helper()
	framework.Eventually(md.t, 30*time.Second, "update service "+svc.Name, func(ctx context.Context) (bool, error) {
		cur, err := md.kube.CoreV1().Services(md.ns).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cur.Annotations = maps.Clone(svc.Annotations)
		cur.Spec.Ports = slices.Clone(svc.Spec.Ports)
		_, err = md.kube.CoreV1().Services(md.ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// checkServices checks that the live Services are the model's.
func (md *model) checkServices() {
	md.t.Helper()
	list, err := md.kube.CoreV1().Services(md.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		md.t.Fatal(err)
	}
	if len(list.Items) != len(md.svcs) {
		md.t.Fatalf("%d live Services, the model has %d", len(list.Items), len(md.svcs))
	}
	for _, live := range list.Items {
		want := md.svcs[live.Name]
		if want == nil || !maps.Equal(live.Annotations, want.Annotations) || len(live.Spec.Ports) != len(want.Spec.Ports) {
			md.t.Fatalf("live Service %s (%v, %+v) is not the model's (%+v)", live.Name, live.Annotations, live.Spec.Ports, want)
		}
	}
}

// foreignIngressFor is an Ingress of name that no Service controls, with a
// spec no Service of the model asks for.
func foreignIngressFor(ns, name string) *networkingv1.Ingress {
	data, _ := json.Marshal(map[string]string{"owner": "someone else"})
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"example.com/owner": string(data)}},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: fmt.Sprintf("%s.foreign.example.net", name),
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "legacy", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}},
		}}},
	}
}
