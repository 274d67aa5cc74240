package ingressmanager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// An ingress-nginx canary Ingress (class nginx, canary: "true") has no
// route of its own: ingress-nginx merges it into the main Ingress of its
// host and path, sending canary-weight of canary-weight-total of the
// requests to the canary's backend. So on the move the canary's backend
// joins the main Ingress's route, in the rules of its paths, weighted
// (canaryBackends). Both must ask to move, to the same Gateway: the
// canary's external-dns annotations are then the controller's to write,
// and it follows its main Ingress in external-dns (withdrawn while the
// main one is, once the route carries its share; returned with it), so
// that no host is published at both the Ingress controller and the
// Gateway by them. It is never deleted by the controller.

// ingressNGINXCanary reports whether ing is an ingress-nginx canary: of
// the class nginx, with canary "true".
func ingressNGINXCanary(ing *networkingv1.Ingress) bool {
	return ingressClass(ing) == "nginx" && strings.EqualFold(strings.TrimSpace(ing.Annotations[nginxCanary]), "true")
}

// canaryKeysHonoured are the keys other than the canary's own that
// ingress-nginx reads on a canary Ingress (it takes everything else from
// the main Ingress): none of them can be carried.
var canaryKeysHonoured = []string{"nginx.ingress.kubernetes.io/load-balance", "nginx.ingress.kubernetes.io/upstream-hash-by", "nginx.ingress.kubernetes.io/affinity"}

// canaryShare is what a canary adds to the rule of one path of the main
// Ingress's route.
type canaryShare struct {
	canary  string // the canary Ingress's name
	backend gatewayv1.HTTPBackendRef
	weight  CanaryWeight
}

// mergeCanaries decides, for the main Ingress of in and its route's
// entries (path matches) and hosts, the share of each of its canaries
// (in.Canaries), by the key of the entry's match; what keeps one from
// being carried is added to m.Unsupported: the route would drop its
// share.
func (m *Migration) mergeCanaries(in migrationInput, hosts []string, entries []pathEntry) map[string]canaryShare {
	if len(in.Canaries) == 0 {
		return nil
	}
	shares := map[string]canaryShare{}
	fail := func(c *networkingv1.Ingress, why string) {
		m.droppedCanaries = append(m.droppedCanaries, c.Name)
		m.Unsupported = append(m.Unsupported, fmt.Sprintf("Ingress %s, an ingress-nginx canary of its hosts, %s; the route would drop its share of the traffic", c.Name, why))
	}
	for _, c := range in.Canaries {
		gw, _, _, _ := parseMigrationAnnotations(c)
		switch {
		case !migrationWanted(c):
			fail(c, fmt.Sprintf("does not ask to move: annotate it with %s too, naming the same Gateway (it then moves with this Ingress, withdrawn from external-dns with it)", AnnotationGateway))
			continue
		case gw == nil || m.Gateway == nil || *gw != *m.Gateway:
			fail(c, fmt.Sprintf("asks to move to another Gateway (%s) than this Ingress", quote(strings.TrimSpace(c.Annotations[AnnotationGateway]))))
			continue
		}
		if honoured := slices.DeleteFunc(slices.Clone(canaryKeysHonoured), func(k string) bool { _, ok := c.Annotations[k]; return !ok }); len(honoured) > 0 {
			fail(c, fmt.Sprintf("sets %s, which ingress-nginx reads on a canary and a route cannot carry", strings.Join(honoured, ", ")))
			continue
		}
		carried := translate(canaryAnnotations(c.Annotations), in.Supported)
		if len(carried.Blocking) > 0 || carried.Canary == nil {
			fail(c, "has canary keys that cannot be carried: "+describeBlocking(carried.Blocking))
			continue
		}
		cHosts, cEntries, unsupported, _ := ingressPaths(c, in.Services)
		if len(unsupported) > 0 {
			fail(c, "has rules no route can carry: "+strings.Join(unsupported, "; "))
			continue
		}
		if !sameSet(cHosts, hosts) {
			fail(c, fmt.Sprintf("has hosts %s where this Ingress has %s: one route's rules apply to all its hosts", listSome(cHosts), listSome(hosts)))
			continue
		}
		ok := true
		for _, e := range cEntries {
			i := slices.IndexFunc(entries, func(o pathEntry) bool { return o.matchKey() == e.matchKey() })
			switch {
			case i < 0:
				fail(c, fmt.Sprintf("routes path %s (%s), which this Ingress does not", quote(e.value), e.match))
				ok = false
			case shares[e.matchKey()].canary != "":
				fail(c, fmt.Sprintf("splits path %s, which canary %s splits already", quote(e.value), shares[e.matchKey()].canary))
				ok = false
			}
			if !ok {
				break
			}
		}
		if !ok {
			continue
		}
		for _, e := range cEntries {
			shares[e.matchKey()] = canaryShare{canary: c.Name, backend: serviceRule(e.match, e.value, e.backend, e.port).BackendRefs[0], weight: *carried.Canary}
		}
		m.Notes = append(m.Notes, fmt.Sprintf("canary Ingress %s takes %d of %d of the requests of %s", c.Name, carried.Canary.Weight, carried.Canary.Total,
			plural(len(cEntries), "its path", "its paths")))
	}
	return shares
}

// applyCanaries weights the backends of the route's rules as shares say,
// by the key of each rule's entry (the route's rules are entries' in
// order).
func applyCanaries(route *gatewayv1.HTTPRoute, entries []pathEntry, shares map[string]canaryShare) {
	for i, e := range entries {
		s, ok := shares[e.matchKey()]
		if !ok || i >= len(route.Spec.Rules) || len(route.Spec.Rules[i].BackendRefs) != 1 {
			continue
		}
		route.Spec.Rules[i].BackendRefs = canaryBackends(route.Spec.Rules[i].BackendRefs[0], s.backend, s.weight)
	}
}

// canaryAnnotations are the canary keys of ann, the only ones of a canary
// Ingress the translation judges.
func canaryAnnotations(ann map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range canaryKeys {
		if v, ok := ann[k]; ok {
			out[k] = v
		}
	}
	for _, k := range nginx("canary-by-header", "canary-by-header-value", "canary-by-header-pattern", "canary-by-cookie") {
		if v, ok := ann[k]; ok {
			out[k] = v
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	return maps.Equal(setOf(a), setOf(b))
}

func setOf(s []string) map[string]bool {
	out := make(map[string]bool, len(s))
	for _, v := range s {
		out[v] = true
	}
	return out
}

// canariesOf lists the ingress-nginx canaries of ing, a main Ingress of
// the class nginx: the canary Ingresses of its namespace that share one of
// its hosts and one of its paths there (ingress-nginx merges a canary into
// the main Ingress of its host and path), sorted by name.
func canariesOf(ing *networkingv1.Ingress, ingresses cache.Indexer) []*networkingv1.Ingress {
	if ingressClass(ing) != "nginx" || ingressNGINXCanary(ing) {
		return nil
	}
	return sharingHostPath(ing, ingresses, ingressNGINXCanary)
}

// mainsOf lists the main Ingresses of the canary ing: the Ingresses of
// the class nginx of its namespace, not canaries, that share one of its
// hosts and one of its paths there, sorted by name.
func mainsOf(ing *networkingv1.Ingress, ingresses cache.Indexer) []*networkingv1.Ingress {
	return sharingHostPath(ing, ingresses, func(o *networkingv1.Ingress) bool {
		return ingressClass(o) == "nginx" && !ingressNGINXCanary(o)
	})
}

// sharingHostPath lists the other Ingresses of ing's namespace, no
// Service's, that route one of its paths of one of its hosts and match,
// sorted by name.
func sharingHostPath(ing *networkingv1.Ingress, ingresses cache.Indexer, match func(*networkingv1.Ingress) bool) []*networkingv1.Ingress {
	paths := hostPaths(ing)
	var list []any
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p.host] {
			continue
		}
		seen[p.host] = true
		l, err := ingresses.ByIndex(byNGINXHost, ing.Namespace+"/"+p.host)
		if err != nil {
			return nil
		}
		list = append(list, l...)
	}
	var out []*networkingv1.Ingress
	for _, obj := range list {
		o, ok := obj.(*networkingv1.Ingress)
		if !ok || o.UID == ing.UID || serviceControlled(o) || !match(o) || slices.Contains(out, o) {
			continue
		}
		if slices.ContainsFunc(hostPaths(o), func(p hostPath) bool { return slices.Contains(paths, p) }) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *networkingv1.Ingress) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// byNGINXHost indexes the Ingresses of the class nginx that no Service
// controls (the main Ingresses and canaries of ingress-nginx) by
// <namespace>/<host> of each of their hosts ("" for rules without one, or
// a spec.defaultBackend alone): an Ingress's counterparts are found among
// those of its hosts, not by a scan of its namespace at every event.
const byNGINXHost = "migration-nginx-host"

func indexByNGINXHost(obj any) ([]string, error) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok || ingressClass(ing) != "nginx" || serviceControlled(ing) {
		return nil, nil
	}
	var out []string
	for _, p := range hostPaths(ing) {
		if k := ing.Namespace + "/" + p.host; !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// hostPath is a path of a host an Ingress routes, as ingress-nginx merges
// a canary: by the host and the path alone (mergeCanaries judges the
// path's type).
type hostPath struct{ host, path string }

// hostPaths lists the paths ing routes, by host: each path of its rules,
// and "/" of each of its hosts ("" with no rules) for spec.defaultBackend.
func hostPaths(ing *networkingv1.Ingress) []hostPath {
	var out []hostPath
	add := func(host, path string) {
		if path == "" {
			path = "/"
		}
		if p := (hostPath{host, path}); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	var hosts []string
	for _, r := range ing.Spec.Rules {
		if !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
		if r.HTTP != nil {
			for _, p := range r.HTTP.Paths {
				add(r.Host, p.Path)
			}
		}
	}
	if ing.Spec.DefaultBackend != nil {
		if len(hosts) == 0 {
			hosts = []string{""}
		}
		for _, h := range hosts {
			add(h, "/")
		}
	}
	return out
}

// routeCarriesShareOf reports whether route sends requests to a backend of
// the canary c: the main Ingress's route carries its share.
func routeCarriesShareOf(route *gatewayv1.HTTPRoute, c *networkingv1.Ingress) bool {
	names := backendServices(c)
	for _, rule := range route.Spec.Rules {
		if len(rule.BackendRefs) < 2 {
			continue
		}
		for _, b := range rule.BackendRefs {
			if slices.Contains(names, string(b.Name)) && isServiceBackend(b) {
				return true
			}
		}
	}
	return false
}

func isServiceBackend(b gatewayv1.HTTPBackendRef) bool {
	return ptr.Deref(b.Group, "") == "" && ptr.Deref(b.Kind, "Service") == "Service" && b.Namespace == nil
}

// Event reasons on an ingress-nginx canary Ingress that asks to move.
const (
	// ReasonCanaryWithoutMain (Warning): the canary asks to move, and no
	// main Ingress of its hosts and paths does (or several do); it stays
	// in external-dns (returned if it was withdrawn with one).
	ReasonCanaryWithoutMain = "CanaryWithoutMain"
)

// syncCanary converges the ingress-nginx canary ing, which has no route of
// its own: it follows its main Ingress in external-dns. Withdrawn while
// the main one is withdrawn and the main one's route (made from it,
// serving) carries the canary's share; otherwise returned. It is written
// only when it asks to move, or to return it (a withdrawal is the
// controller's to undo); never deleted. With main Ingresses of its hosts
// and paths none of which asks to move or is withdrawn (its main Ingress
// moved back), it is returned. With none at all (or several that ask),
// nothing changes: a canary withdrawn with a main Ingress since deleted
// stays withdrawn, its share on that Ingress's route.
func (c *Controller) syncCanary(ctx context.Context, key cache.ObjectName, ing *networkingv1.Ingress) error {
	r := &report{}
	defer func() { c.migrations.notes.publish(ing, r, true) }()
	asks := migrationWanted(ing)
	if !asks {
		c.migrations.states.Delete(key)
		if !withdrawalMarked(ing) {
			return nil
		}
	}
	var mains []*networkingv1.Ingress
	all := mainsOf(ing, c.ingresses)
	for _, m := range all {
		if migrationWanted(m) || withdrawalMarked(m) {
			mains = append(mains, m)
		}
	}
	if len(mains) == 0 && len(all) > 0 {
		// Its main Ingress moved back (or never moved), and is in
		// external-dns: so is the canary, whatever route still carries
		// its share while it drains.
		if _, err := c.ingress.restore(ctx, ing, fmt.Sprintf("its main Ingress %s is in external-dns", all[0].Name), r); err != nil {
			return err
		}
	}
	if len(mains) != 1 {
		if asks && (!withdrawalMarked(ing) || len(all) > 0) {
			c.setState(key, stateBlocked)
			names := make([]string, len(mains))
			for i, m := range mains {
				names[i] = m.Name
			}
			why := "none of the main Ingresses of its hosts and paths asks to move"
			if len(mains) > 1 {
				why = fmt.Sprintf("several main Ingresses of its hosts and paths ask to move (%s)", strings.Join(names, ", "))
			}
			r.warn(ReasonCanaryWithoutMain, "", fmt.Sprintf("the canary moves with the main Ingress of its hosts, and %s; it stays as it is", why))
		}
		return nil
	}
	main := mains[0]
	follow, why := c.canaryFollows(ing, main)
	if !follow {
		if asks {
			c.setState(key, stateMoving)
		}
		_, err := c.ingress.restore(ctx, ing, why, r)
		return err
	}
	_, withdrawn := withdrawnAt(ing)
	if !asks {
		// No longer the controller's to withdraw: left withdrawn with its
		// main Ingress (its share still on the route), or, a trace of
		// the withdrawal left (its user took it back in part), returned.
		if withdrawn {
			return nil
		}
		_, err := c.ingress.restore(ctx, ing, fmt.Sprintf("it no longer carries %s", AnnotationGateway), r)
		return err
	}
	c.setState(key, stateMoved)
	if withdrawn {
		return nil
	}
	return c.ingress.withdraw(ctx, ing, c.cutover.now(), c.cutover.drain, true,
		fmt.Sprintf("it moves with Ingress %s, withdrawn from external-dns, whose HTTPRoute carries its share", main.Name), r)
}

// canaryFollows reports whether the canary ing is to be withdrawn from
// external-dns with its main Ingress main, or why not.
func (c *Controller) canaryFollows(ing, main *networkingv1.Ingress) (bool, string) {
	if _, withdrawn := withdrawnAt(main); !withdrawn {
		return false, fmt.Sprintf("its main Ingress %s is in external-dns", main.Name)
	}
	routes, _ := c.gateway.routeCache()
	if routes == nil {
		return false, "the Gateway API is not served"
	}
	route, err := cached[*gatewayv1.HTTPRoute](routes, cache.MetaObjectToName(main))
	switch {
	case err != nil || route == nil || !isMigratedFrom(route, main, c.route.fieldManager) || isBeingDeleted(route):
		return false, fmt.Sprintf("Ingress %s, its main Ingress, has no HTTPRoute made from it", main.Name)
	case !routeCarriesShareOf(route, ing):
		return false, fmt.Sprintf("HTTPRoute %s does not carry its share", route.Name)
	}
	if until := untilServes(route, c.gateway.lookup); until != "" {
		return false, "it is kept until " + until
	}
	return true, ""
}

// queueCanaryMoves queues the keys of the canaries of ing and of its main
// Ingresses, for an event of ing: what either decides depends on the
// other.
func (c *Controller) queueCanaryMoves(ing *networkingv1.Ingress) {
	var others []*networkingv1.Ingress
	if ingressNGINXCanary(ing) {
		others = mainsOf(ing, c.ingresses)
	} else {
		others = canariesOf(ing, c.ingresses)
	}
	for _, o := range others {
		c.migrations.loop.Queue.Add(cache.MetaObjectToName(o))
	}
}
