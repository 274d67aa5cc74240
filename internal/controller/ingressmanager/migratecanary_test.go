package ingressmanager

import (
	"context"
	"fmt"
	runtime "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// canaryIngress is an ingress-nginx canary name of userIngress's host and
// path to Service name, port 80, with canary-weight weight ("": none),
// asking to move to gw when asks.
func canaryIngress(name, weight string, asks bool, changes ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	return userIngress(append([]func(*networkingv1.Ingress){func(i *networkingv1.Ingress) {
		i.Name, i.UID = name, types.UID(name+"-uid")
		i.Spec.IngressClassName = ptr.To("nginx")
		i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = name
		i.Annotations = map[string]string{nginxCanary: "true"}
		if weight != "" {
			i.Annotations["nginx.ingress.kubernetes.io/canary-weight"] = weight
		}
		if asks {
			i.Annotations[AnnotationGateway] = "gw"
		}
	}}, changes...)...)
}

// nginxMain is userIngress of the class nginx: a main Ingress.
func nginxMain(changes ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	return userIngress(append([]func(*networkingv1.Ingress){func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("nginx") }}, changes...)...)
}

// weights lists a rule's backends as "<name>=<weight>" ("nil": none).
func weights(rule gatewayv1.HTTPRouteRule) []string {
	var out []string
	for _, b := range rule.BackendRefs {
		w := "nil"
		if b.Weight != nil {
			w = strconv.Itoa(int(*b.Weight))
		}
		out = append(out, string(b.Name)+"="+w)
	}
	return out
}

// TestMergeCanaries: an ingress-nginx canary that asks to move to the
// same Gateway joins its main Ingress's route, its backend weighted in
// the rules of its paths as ingress-nginx splits them; whatever keeps a
// share from being carried keeps the main Ingress from moving, naming
// the canary and why.
func TestMergeCanaries(t *testing.T) {
	twoPaths := withPaths(ingressPath("/", networkingv1.PathTypePrefix, "web", 80, ""), ingressPath("/api", networkingv1.PathTypePrefix, "web", 80, ""))
	for _, tc := range []struct {
		name      string
		main      *networkingv1.Ingress
		canaries  []*networkingv1.Ingress
		rules     [][]string // each rule's backends, "<name>=<weight>"; nil: not checked
		unsupport string     // a word of the one unsupported, "" for none
	}{
		{name: "canary-weight 20: 80 and 20 of 100",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "20", true)},
			rules: [][]string{{"web=80", "web-canary=20"}}},
		{name: "canary-weight-total 1000: 750 and 250",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "250", true, withAnnotations("nginx.ingress.kubernetes.io/canary-weight-total", "1000"))},
			rules: [][]string{{"web=750", "web-canary=250"}}},
		{name: "no canary-weight: 0, the canary carried with no share, as ingress-nginx",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "", true)},
			rules: [][]string{{"web=100", "web-canary=0"}}},
		{name: "a weight over the total: every request to the canary",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "150", true)},
			rules: [][]string{{"web=0", "web-canary=100"}}},
		{name: "the canary of one of two paths: that rule alone",
			main: nginxMain(twoPaths), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "30", true,
				withPaths(ingressPath("/api", networkingv1.PathTypePrefix, "web-canary", 80, "")))},
			rules: [][]string{{"web=1"}, {"web=70", "web-canary=30"}}},
		{name: "a canary that does not ask to move",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "20", false)}, unsupport: "does not ask to move"},
		{name: "a canary asking for another Gateway",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "20", true, withAnnotations(AnnotationGateway, "other"))},
			unsupport: "another Gateway"},
		{name: "a canary chosen by a header",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "20", true, withAnnotations("nginx.ingress.kubernetes.io/canary-by-header", "x-canary"))},
			unsupport: "canary-by-header"},
		{name: "a canary with a key ingress-nginx reads on canaries",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "20", true, withAnnotations("nginx.ingress.kubernetes.io/affinity", "cookie"))},
			unsupport: "affinity"},
		{name: "a canary of a path the main Ingress does not route",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "20", true, withPaths(ingressPath("/other", networkingv1.PathTypePrefix, "web-canary", 80, "")))},
			unsupport: "does not"},
		{name: "a canary of other hosts",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("web-canary", "20", true, withRule("b.example.com", ingressPath("/", networkingv1.PathTypePrefix, "web-canary", 80, "")))},
			unsupport: "one route's rules apply to all its hosts"},
		{name: "two canaries of one path",
			main: nginxMain(), canaries: []*networkingv1.Ingress{canaryIngress("a-canary", "20", true), canaryIngress("b-canary", "10", true)},
			unsupport: "which canary a-canary splits already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			services := map[string]*corev1.Service{}
			for _, n := range []string{"web", "web-canary", "a-canary", "b-canary"} {
				services[n] = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: n}}
			}
			m := renderMigration(migrationInput{Ingress: tc.main, Services: services, Canaries: tc.canaries, GatewayVisible: true})
			if tc.unsupport != "" {
				if len(m.Unsupported) != 1 || !strings.Contains(m.Unsupported[0], tc.unsupport) {
					t.Fatalf("unsupported %q, want one saying %q", m.Unsupported, tc.unsupport)
				}
				if m.Route != nil {
					t.Error("a route rendered that would drop the canary's share")
				}
				return
			}
			if len(m.Unsupported) > 0 || m.Route == nil {
				t.Fatalf("no route: %q %v", m.Unsupported, m.Problems)
			}
			var got [][]string
			for _, r := range m.Route.Spec.Rules {
				got = append(got, weights(r))
			}
			if !slices.EqualFunc(got, tc.rules, slices.Equal) {
				t.Errorf("backends %q, want %q", got, tc.rules)
			}
			if !slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, "canary Ingress") }) {
				t.Errorf("notes %q do not say what the canary takes", m.Notes)
			}
		})
	}
}

// addMainRoute creates, in the fake API server and the cache, the route
// the controller renders for the main Ingress main with canaries, as
// mutate changes it.
func (f *syncFixture) addMainRoute(main *networkingv1.Ingress, canaries []*networkingv1.Ingress, mutate ...func(*gatewayv1.HTTPRoute)) {
	f.t.Helper()
	services := map[string]*corev1.Service{}
	m := renderMigration(migrationInput{Ingress: main, Services: services, Canaries: canaries, GatewayVisible: true})
	if m.Route == nil {
		f.t.Fatalf("no route: %q", m.Unsupported)
	}
	m.Route.UID, m.Route.Generation = "route-uid", 1
	m.Route.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("test")}
	addOwned(f, f.gateway.GatewayV1().HTTPRoutes("default").Create, f.routes, m.Route, both(mutate...))
}

// TestCanarySync: a canary follows its main Ingress in external-dns:
// withdrawn once the main one is and its route, serving, carries the
// canary's share; returned when the main one is back; never deleted, and
// left alone when it neither asks nor was withdrawn, or when its main
// Ingress is gone.
func TestCanarySync(t *testing.T) {
	withdrawnMain := withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))
	for _, tc := range []struct {
		name    string
		main    *networkingv1.Ingress // nil: none
		mainMut []func(*networkingv1.Ingress)
		canary  *networkingv1.Ingress
		canMut  []func(*networkingv1.Ingress)
		route   bool   // the main Ingress's route, made with the canary, serving
		noShare bool   // ... made without it
		routeOf string // the route's marker names this UID instead of the main Ingress's
		want    []string
		events  []string
		state   string
	}{
		{name: "the main Ingress in DNS: the canary too, nothing written",
			main: nginxMain(), canary: canaryIngress("web-canary", "20", true), route: true, state: stateMoving},
		{name: "the main Ingress withdrawn, its route carrying the share: the canary withdrawn, kept",
			main: nginxMain(), mainMut: []func(*networkingv1.Ingress){withdrawnMain}, canary: canaryIngress("web-canary", "20", true), route: true,
			want: []string{"patch ingresses"}, events: []string{ReasonWithdrawnFromDNS}, state: stateMoved},
		{name: "withdrawn already: nothing written",
			main: nginxMain(), mainMut: []func(*networkingv1.Ingress){withdrawnMain}, canary: canaryIngress("web-canary", "20", true),
			canMut: []func(*networkingv1.Ingress){withdrawn[*networkingv1.Ingress](testNow)}, route: true, state: stateMoved},
		{name: "the main Ingress back in DNS: the canary returned",
			main: nginxMain(), canary: canaryIngress("web-canary", "20", true), canMut: []func(*networkingv1.Ingress){withdrawn[*networkingv1.Ingress](testNow)},
			route: true, want: []string{"patch ingresses"}, events: []string{ReasonReturnedToDNS}, state: stateMoving},
		{name: "the main Ingress withdrawn, its route without the share: the canary stays in DNS",
			main: nginxMain(), mainMut: []func(*networkingv1.Ingress){withdrawnMain}, canary: canaryIngress("web-canary", "20", true), route: true, noShare: true, state: stateMoving},
		{name: "no main Ingress asks to move: a Warning, nothing written",
			main: nginxMain(func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }), canary: canaryIngress("web-canary", "20", true),
			events: []string{ReasonCanaryWithoutMain}, state: stateBlocked},
		{name: "the main Ingress gone, the canary withdrawn with it: it stays so",
			canary: canaryIngress("web-canary", "20", true), canMut: []func(*networkingv1.Ingress){withdrawn[*networkingv1.Ingress](testNow)}},
		{name: "the main Ingress moved back (it asks no more, in external-dns): the withdrawn canary returned",
			main: nginxMain(func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }), canary: canaryIngress("web-canary", "20", true),
			canMut: []func(*networkingv1.Ingress){withdrawn[*networkingv1.Ingress](testNow)},
			want:   []string{"patch ingresses"}, events: []string{ReasonReturnedToDNS, ReasonCanaryWithoutMain}, state: stateBlocked},
		{name: "a canary that asks no more, its withdrawal half undone by hand: returned, never withdrawn again",
			main: nginxMain(), mainMut: []func(*networkingv1.Ingress){withdrawnMain}, canary: canaryIngress("web-canary", "20", false), route: true,
			canMut: []func(*networkingv1.Ingress){withdrawn[*networkingv1.Ingress](testNow), withAnnotations(AnnotationExternalDNSController, "dns-controller")},
			want:   []string{"patch ingresses"}, events: []string{ReasonReturnedToDNS}},
		{name: "a canary that asks no more, withdrawn with its main Ingress: it stays so, no state",
			main: nginxMain(), mainMut: []func(*networkingv1.Ingress){withdrawnMain}, canary: canaryIngress("web-canary", "20", false), route: true,
			canMut: []func(*networkingv1.Ingress){withdrawn[*networkingv1.Ingress](testNow)}},
		{name: "the main Ingress re-created, the route made from the one before: the canary stays in DNS",
			main: nginxMain(), mainMut: []func(*networkingv1.Ingress){withdrawnMain}, canary: canaryIngress("web-canary", "20", true), route: true, routeOf: "earlier-uid",
			state: stateMoving},
		{name: "a canary that neither asks nor was withdrawn: nothing",
			main: nginxMain(), mainMut: []func(*networkingv1.Ingress){withdrawnMain}, canary: canaryIngress("web-canary", "20", false), route: true, noShare: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			canary := f.addUserIngress(tc.canary, append([]func(*networkingv1.Ingress){withAddress}, tc.canMut...)...)
			if tc.main != nil {
				main := f.addUserIngress(tc.main, append([]func(*networkingv1.Ingress){withAddress}, tc.mainMut...)...)
				if tc.route {
					// As made while the canary asked to move.
					asked := canary.DeepCopy()
					asked.Annotations[AnnotationGateway] = "gw"
					canaries := []*networkingv1.Ingress{asked}
					if tc.noShare {
						canaries = nil
					}
					f.addMainRoute(main, canaries, servedAt(1), func(r *gatewayv1.HTTPRoute) {
						if tc.routeOf != "" {
							r.Annotations[AnnotationMigratedFrom] = tc.routeOf
						}
					})
				}
			}
			f.clearActions()
			if err := f.syncMigration(canary); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); !slices.Equal(got, tc.want) {
				t.Errorf("writes = %q, want %q", got, tc.want)
			}
			if got := f.reasons(); !slices.Equal(got, tc.events) {
				t.Errorf("Events %q, want %q", got, tc.events)
			}
			state, _ := f.c.migrations.states.Load(cache.MetaObjectToName(canary))
			if s, _ := state.(string); s != tc.state {
				t.Errorf("state %q, want %q", s, tc.state)
			}
		})
	}
}

// TestCanaryHandlers: an event of a canary brings back its main Ingress,
// and one of a main Ingress that asks to move its canaries.
func TestCanaryHandlers(t *testing.T) {
	c := newTestController(t)
	main, canary, other := nginxMain(), canaryIngress("web-canary", "20", true), nginxMain(func(i *networkingv1.Ingress) {
		i.Name, i.UID, i.Spec.Rules[0].Host = "other", "other-uid", "other.example.com"
	})
	for _, ing := range []*networkingv1.Ingress{main, canary, other} {
		if err := c.ingresses.Add(ing); err != nil {
			t.Fatal(err)
		}
	}
	queued := func() map[string]bool {
		out := map[string]bool{}
		for c.migrations.loop.Queue.Len() > 0 {
			k, _ := c.migrations.loop.Queue.Get()
			out[k.String()] = true
			c.migrations.loop.Queue.Done(k)
		}
		return out
	}
	c.enqueueOwned(canary)
	if got := queued(); len(got) != 2 || !got["default/web"] || !got["default/web-canary"] {
		t.Errorf("a canary's event queued %v, want it and its main Ingress", got)
	}
	c.enqueueOwned(main)
	if got := queued(); len(got) != 2 || !got["default/web"] || !got["default/web-canary"] {
		t.Errorf("a main Ingress's event queued %v, want it and its canary", got)
	}
	// Deleted (its final state unknown): its main Ingress's route drops
	// its share.
	if err := c.ingresses.Delete(canary); err != nil {
		t.Fatal(err)
	}
	c.enqueueOwned(cache.DeletedFinalStateUnknown{Key: "default/web-canary", Obj: canary})
	if got := queued(); !got["default/web"] {
		t.Errorf("a canary's deletion queued %v, want its main Ingress", got)
	}
	// A canary in another namespace, or of another class, is no canary of
	// the main Ingress; a Service's Ingress of the host is no main one.
	elsewhere := canaryIngress("elsewhere", "20", true, func(i *networkingv1.Ingress) { i.Namespace = "other" })
	traefik := canaryIngress("traefik", "20", true, func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("traefik") })
	svcs := nginxMain(func(i *networkingv1.Ingress) {
		i.Name, i.UID = "svc", "svc-uid"
		i.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "svc", UID: "s", Controller: ptr.To(true)}}
	})
	for _, ing := range []*networkingv1.Ingress{elsewhere, traefik, svcs} {
		if err := c.ingresses.Add(ing); err != nil {
			t.Fatal(err)
		}
	}
	if got := canariesOf(main, c.ingresses); len(got) != 0 {
		t.Errorf("canaries of the main Ingress: %v, want none", got)
	}
	if got := mainsOf(canary, c.ingresses); len(got) != 1 || got[0].Name != "web" {
		t.Errorf("mains of the canary: %v", got)
	}
}

// TestCanaryOfOnePathOfItsHost: two main Ingresses of one host, of other
// paths, each move alone: the canary of the path of one is that one's
// alone (ingress-nginx merges a canary by host and path), so it neither
// keeps the other from moving nor is kept from following its own.
func TestCanaryOfOnePathOfItsHost(t *testing.T) {
	f := newCutoverFixture(t, testDrain)
	withdrawnMain := withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain))
	canary := f.addUserIngress(canaryIngress("web-canary", "20", true), withAddress)
	main := f.addUserIngress(nginxMain(), withAddress, withdrawnMain)
	api := f.addUserIngress(nginxMain(func(i *networkingv1.Ingress) {
		i.Name, i.UID = "web-api", "web-api-uid"
	}, withPaths(ingressPath("/api", networkingv1.PathTypePrefix, "api", 80, ""))), withAddress, withdrawnMain)
	f.addMainRoute(main, []*networkingv1.Ingress{canary}, servedAt(1))

	if got := canariesOf(api, f.c.ingresses); len(got) != 0 {
		t.Errorf("canaries of the Ingress of /api: %v, want none", got)
	}
	if m := renderMigration(f.c.migrationInput(api)); len(m.Unsupported) > 0 || m.Route == nil {
		t.Errorf("the Ingress of /api does not move: %q", m.Unsupported)
	}
	f.clearActions()
	if err := f.syncMigration(canary); err != nil {
		t.Fatal(err)
	}
	if got, want := f.reasons(), []string{ReasonWithdrawnFromDNS}; !slices.Equal(got, want) {
		t.Errorf("Events %q, want %q: the canary follows its main Ingress", got, want)
	}
}

// TestCanaryLookupCost: what an event of a canary, or a main Ingress's
// sync, costs to find its counterparts does not grow with the Ingresses
// of its namespace of other hosts (none of which asks to move): at a
// namespace's every event, a scan of it made the namespace's canaries
// cost its size squared.
func TestCanaryLookupCost(t *testing.T) {
	c := newTestController(t)
	canary, main := canaryIngress("web-canary", "20", false), nginxMain(func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) })
	add := func(from, to int) {
		for i := from; i < to; i++ {
			ing := canaryIngress(fmt.Sprintf("other-%d", i), "10", false, func(o *networkingv1.Ingress) {
				o.Spec.Rules[0].Host = fmt.Sprintf("shop-%d.example.com", i)
				if i%2 == 0 {
					delete(o.Annotations, nginxCanary)
				}
			})
			if err := c.ingresses.Add(ing); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ing := range []*networkingv1.Ingress{canary, main} {
		if err := c.ingresses.Add(ing); err != nil {
			t.Fatal(err)
		}
	}
	cost := func() float64 {
		return testing.AllocsPerRun(10, func() {
			c.enqueueMigration(canary)
			c.enqueueMigration(main)
			_ = c.migrationInput(main)
		})
	}
	add(0, 50)
	few := cost()
	add(50, 2000)
	if many := cost(); many > few+5 {
		t.Errorf("%v allocations with 2000 Ingresses of other hosts, %v with 50: the lookup scans the namespace", many, few)
	}
	if got := mainsOf(canary, c.ingresses); len(got) != 1 || got[0].Name != "web" {
		t.Errorf("mains of the canary: %v", got)
	}
}

// TestCanaryBadInput: a canary without rules, of a default backend alone,
// with a weight or a total that is not one never panics: the main
// Ingress's route carries it (a default backend of a main Ingress's
// default backend) or the main Ingress says why not, naming it; its own
// sync writes nothing.
func TestCanaryBadInput(t *testing.T) {
	defaultOnly := func(i *networkingv1.Ingress) {
		i.Spec.Rules = nil
		i.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: i.Name, Port: networkingv1.ServiceBackendPort{Number: 80}}}
	}
	for _, tc := range []struct {
		name      string
		main      *networkingv1.Ingress
		canary    *networkingv1.Ingress
		unsupport string // "": carried; "-": not its canary
	}{
		{name: "no rules", main: nginxMain(), canary: canaryIngress("web-canary", "20", true, func(i *networkingv1.Ingress) { i.Spec.Rules = nil }), unsupport: "-"},
		{name: "a rule without paths", main: nginxMain(), canary: canaryIngress("web-canary", "20", true, func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP = nil }), unsupport: "-"},
		{name: "a default backend alone, the main Ingress with rules", main: nginxMain(), canary: canaryIngress("web-canary", "20", true, defaultOnly), unsupport: "-"},
		{name: "default backends alone, both", main: nginxMain(func(i *networkingv1.Ingress) { defaultOnly(i); i.Spec.DefaultBackend.Service.Name = "web" }),
			canary: canaryIngress("web-canary", "20", true, defaultOnly)},
		{name: "a weight that is no number", main: nginxMain(), canary: canaryIngress("web-canary", "twenty", true), unsupport: "cannot be carried"},
		{name: "a negative weight", main: nginxMain(), canary: canaryIngress("web-canary", "-5", true)},
		{name: "a total of 0", main: nginxMain(), canary: canaryIngress("web-canary", "20", true, withAnnotations("nginx.ingress.kubernetes.io/canary-weight-total", "0")), unsupport: "cannot be carried"},
		{name: "a huge total", main: nginxMain(), canary: canaryIngress("web-canary", "20", true, withAnnotations("nginx.ingress.kubernetes.io/canary-weight-total", "99999999999999999999")), unsupport: "cannot be carried"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			canary := f.addUserIngress(tc.canary, withAddress)
			main := f.addUserIngress(tc.main, withAddress)
			m := renderMigration(f.c.migrationInput(main))
			switch tc.unsupport {
			case "-":
				if len(canariesOf(main, f.c.ingresses)) != 0 || len(m.Unsupported) != 0 {
					t.Errorf("taken for a canary of the main Ingress: %q", m.Unsupported)
				}
			case "":
				if len(m.Unsupported) != 0 || m.Route == nil || len(m.Route.Spec.Rules[0].BackendRefs) != 2 {
					t.Errorf("the canary not carried: %q", m.Unsupported)
				}
			default:
				if len(m.Unsupported) != 1 || !strings.Contains(m.Unsupported[0], "web-canary") || !strings.Contains(m.Unsupported[0], tc.unsupport) {
					t.Errorf("unsupported %q, want one naming the canary, saying %q", m.Unsupported, tc.unsupport)
				}
			}
			f.clearActions()
			if err := f.syncMigration(canary); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); len(got) != 0 {
				t.Errorf("writes %q", got)
			}
		})
	}
}

// TestCanaryNotCarriedReturnsItsMain: a main Ingress moved, withdrawn,
// whose route serves, and a canary its route cannot carry (made since,
// not asking to move; or one that stops asking): the main Ingress is
// returned to external-dns, the route left as it was, and the canary
// never written. Left withdrawn, the main Ingress's host was published by
// the route alone, without the canary's share, and by the canary at
// ingress-nginx.
func TestCanaryNotCarriedReturnsItsMain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		canary *networkingv1.Ingress
		share  bool // the route carries the canary's share, made while it asked
	}{
		{name: "a canary made since, not asking", canary: canaryIngress("web-canary", "20", false)},
		{name: "a canary that stopped asking", canary: canaryIngress("web-canary", "20", false,
			withdrawn[*networkingv1.Ingress](testNow)), share: true},
		{name: "a canary asking for another Gateway", canary: canaryIngress("web-canary", "20", true, withAnnotations(AnnotationGateway, "other"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			canary := f.addUserIngress(tc.canary, withAddress)
			main := f.addUserIngress(nginxMain(), withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-testDrain)))
			var carried []*networkingv1.Ingress
			if tc.share {
				asked := canary.DeepCopy()
				asked.Annotations[AnnotationGateway] = "gw"
				carried = append(carried, asked)
			}
			f.addMainRoute(main, carried, servedAt(1))
			f.clearActions()
			if err := f.syncMigration(main); err != nil {
				t.Fatal(err)
			}
			if got, want := f.writes(), []string{"patch ingresses"}; !slices.Equal(got, want) {
				t.Errorf("writes %q, want %q", got, want)
			}
			for _, a := range f.kube.Actions() {
				if p, ok := a.(k8stesting.PatchActionImpl); ok && p.Name != "web" {
					t.Errorf("patched Ingress %s", p.Name)
				}
			}
			if got := f.reasons(); !slices.Contains(got, ReasonReturnedToDNS) || !slices.Contains(got, ReasonMigrationUnsupported) {
				t.Errorf("Events %q, want the main Ingress returned, unsupported", got)
			}
		})
	}
}

// TestCanaryJoinsARouteJustCreated: a canary that arrives while its main
// Ingress's route is being created (they are applied together) joins the
// route at the sync the route's event brings: the route is compared with
// what the main Ingress and its canaries render, not taken for converged
// because the main Ingress did not change since the create.
func TestCanaryJoinsARouteJustCreated(t *testing.T) {
	f := newCutoverFixture(t, testDrain)
	main := f.addUserIngress(nginxMain(), withAddress)
	f.gateway.PrependReactor("create", "httproutes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*gatewayv1.HTTPRoute).DeepCopy()
		r.UID, r.ResourceVersion = "route-uid", "10"
		r.ManagedFields = []metav1.ManagedFieldsEntry{madeBy("test")}
		if err := f.gateway.Tracker().Add(r); err != nil {
			return true, nil, err
		}
		return true, r, nil
	})
	if err := f.syncMigration(main); err != nil {
		t.Fatal(err)
	}
	created, err := f.gateway.GatewayV1().HTTPRoutes("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.addUserIngress(canaryIngress("web-canary", "20", true), withAddress)
	if err := f.routes.Add(created); err != nil { // its event
		t.Fatal(err)
	}
	f.clearActions()
	if err := f.syncMigration(main); err != nil {
		t.Fatal(err)
	}
	if got := f.writes(); len(got) == 0 || slices.ContainsFunc(got, func(w string) bool { return w != "patch httproutes" }) {
		t.Errorf("writes %q, want the route's update carrying the canary", got)
	}
}
