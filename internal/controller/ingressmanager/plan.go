package ingressmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"
)

// PlanClients are what migrate-plan reads the cluster with.
type PlanClients struct {
	Core       corev1client.CoreV1Interface
	Networking networkingv1client.NetworkingV1Interface
	// Gateway is nil when the cluster does not serve the Gateway API.
	Gateway gatewayv1client.GatewayV1Interface
}

// PlanOptions are migrate-plan's settings.
type PlanOptions struct {
	// Namespace is the one namespace read; "" for all.
	Namespace string
	// Gateway, <namespace>/<name>, is the Gateway of the plan of an Ingress
	// that names none; "": such an Ingress's route has no parent.
	Gateway string
	// DNSDrain is the manager's --ingress-move-dns-drain, to tell a move
	// that drains from one that is done.
	DNSDrain time.Duration
	// HTTPRedirectCode is the manager's --ingress-nginx-http-redirect-code;
	// 0: DefaultHTTPRedirectCode.
	HTTPRedirectCode int
	// FieldManager is the manager's --field-manager: a route of an
	// Ingress's name is made from it only when that field manager wrote its
	// ingress/migrated-from; "": DefaultFieldManager.
	FieldManager string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// WritePlan writes to w, for every Ingress in scope that no Service
// controls (it asks to move or not), the HTTPRoute the controller would
// make from it, every key that blocks and why, and for an Ingress that
// asks to move where its move stands. It renders as the controller does
// (renderMigration), and writes nothing to the cluster. The output is
// YAML: a comment block per Ingress, then its route.
func WritePlan(ctx context.Context, c PlanClients, o PlanOptions, w io.Writer) error {
	var defaultGateway *GatewayRef
	if o.Gateway != "" {
		ref, why := parseGatewayRef(strings.TrimSpace(o.Gateway), "")
		if why != "" {
			return fmt.Errorf("--gateway %q %s", o.Gateway, why)
		}
		defaultGateway = &ref
	}
	fieldManager := o.FieldManager
	if fieldManager == "" {
		fieldManager = DefaultFieldManager
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	ings, err := c.Networking.Ingresses(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing ingresses: %w", err)
	}
	svcs, err := c.Core.Services(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing services: %w", err)
	}
	services := map[cache.ObjectName]*corev1.Service{}
	for i := range svcs.Items {
		services[cache.MetaObjectToName(&svcs.Items[i])] = &svcs.Items[i]
	}
	ingresses := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, byNGINXHost: indexByNGINXHost})
	for i := range ings.Items {
		if err := ingresses.Add(&ings.Items[i]); err != nil {
			return err
		}
	}
	lookup, routes, err := planGatewayAPI(ctx, c.Gateway, o.Namespace)
	if err != nil {
		return err
	}
	classes, err := planGatewayClasses(ctx, c.Gateway)
	if err != nil {
		return err
	}
	items := slices.Clone(ings.Items)
	slices.SortFunc(items, func(a, b networkingv1.Ingress) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	n := 0
	for i := range items {
		ing := &items[i]
		if serviceControlled(ing) {
			continue // a Service's own: it moves by the Service's annotations
		}
		if n > 0 {
			fmt.Fprintln(w, "---")
		}
		n++
		in := migrationInput{Ingress: ing, Services: map[string]*corev1.Service{}, DefaultGateway: defaultGateway, RedirectCode: o.HTTPRedirectCode}
		in.Canaries = canariesOf(ing, ingresses)
		for _, o := range append([]*networkingv1.Ingress{ing}, in.Canaries...) {
			for _, name := range backendServices(o) {
				if svc := services[cache.ObjectName{Namespace: ing.Namespace, Name: name}]; svc != nil {
					in.Services[name] = svc
				}
			}
		}
		gw, _, _, _ := parseMigrationAnnotations(ing)
		if gw == nil && strings.TrimSpace(ing.Annotations[AnnotationGateway]) == "" {
			gw = defaultGateway
		}
		if gw != nil {
			in.Gateway, in.GatewayVisible = lookup(gw.Namespace, gw.Name)
		}
		if in.Gateway != nil {
			in.Supported = classes[string(in.Gateway.Spec.GatewayClassName)]
		}
		m := renderMigration(in)
		if err := writeIngressPlan(w, ing, m, c.Gateway != nil, in.GatewayVisible, routes[cache.MetaObjectToName(ing)], lookup, o.DNSDrain, now(), fieldManager); err != nil {
			return err
		}
	}
	if n == 0 {
		fmt.Fprintf(w, "# No Ingress %s that a Service does not control.\n", scopeText(o.Namespace))
	}
	return nil
}

func scopeText(ns string) string {
	if ns == "" {
		return "in any namespace"
	}
	return "in namespace " + ns
}

// planGatewayAPI reads the Gateways and HTTPRoutes in scope; with no
// client (the Gateway API not served), none.
func planGatewayAPI(ctx context.Context, gw gatewayv1client.GatewayV1Interface, ns string) (gatewayLookup, map[cache.ObjectName]*gatewayv1.HTTPRoute, error) {
	routes := map[cache.ObjectName]*gatewayv1.HTTPRoute{}
	if gw == nil {
		return noGateways, routes, nil
	}
	list, err := gw.HTTPRoutes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing httproutes: %w", err)
	}
	for i := range list.Items {
		routes[cache.MetaObjectToName(&list.Items[i])] = &list.Items[i]
	}
	gateways := map[cache.ObjectName]*gatewayv1.Gateway{}
	visible := true
	gws, err := gw.Gateways("").List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) && ns != "" {
		gws, err = gw.Gateways(ns).List(ctx, metav1.ListOptions{})
	}
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		visible = false // cannot list them (or not served): taken on the routes' word, as the controller does
	case err != nil:
		return nil, nil, fmt.Errorf("listing gateways: %w", err)
	default:
		for i := range gws.Items {
			gateways[cache.MetaObjectToName(&gws.Items[i])] = &gws.Items[i]
		}
	}
	return func(namespace, name string) (*gatewayv1.Gateway, bool) {
		if !visible {
			return nil, false
		}
		return gateways[cache.ObjectName{Namespace: namespace, Name: name}], true
	}, routes, nil
}

// planGatewayClasses returns what each GatewayClass supports
// (status.supportedFeatures), as the controller's classOf reads it: a
// class that lists none, or classes that cannot be listed, are absent (what
// their Gateways' routes carry is rendered on trust).
func planGatewayClasses(ctx context.Context, gw gatewayv1client.GatewayV1Interface) (map[string]sets.Set[features.FeatureName], error) {
	out := map[string]sets.Set[features.FeatureName]{}
	if gw == nil {
		return out, nil
	}
	list, err := gw.GatewayClasses().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("listing gatewayclasses: %w", err)
	}
	for _, gc := range list.Items {
		if len(gc.Status.SupportedFeatures) == 0 {
			continue
		}
		supported := sets.New[features.FeatureName]()
		for _, f := range gc.Status.SupportedFeatures {
			supported.Insert(features.FeatureName(f.Name))
		}
		out[gc.Name] = supported
	}
	return out, nil
}

// writeIngressPlan writes the plan of one Ingress.
func writeIngressPlan(w io.Writer, ing *networkingv1.Ingress, m *Migration, served, gatewayVisible bool, route *gatewayv1.HTTPRoute, lookup gatewayLookup, drain time.Duration, now time.Time, fieldManager string) error {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, "# "+format+"\n", args...) }
	asks := migrationWanted(ing)
	switch {
	case asks:
		line("Ingress %s/%s asks to move to Gateway %s (%s).", ing.Namespace, ing.Name, strings.TrimSpace(ing.Annotations[AnnotationGateway]), AnnotationGateway)
	case m.Gateway != nil:
		line("Ingress %s/%s does not ask to move (no %s); the plan is for Gateway %s (--gateway).", ing.Namespace, ing.Name, AnnotationGateway, m.Gateway)
	default:
		line("Ingress %s/%s does not ask to move (no %s); with no --gateway the route below has no parent.", ing.Namespace, ing.Name, AnnotationGateway)
	}
	if !served {
		line("  The cluster does not serve the Gateway API (gateway.networking.k8s.io/v1 httproutes): nothing moves until it does.")
	}
	for _, p := range m.Problems {
		line("  Problem: %s", p.Message)
	}
	for _, u := range m.Unsupported {
		line("  Cannot be made: %s", u)
	}
	for _, k := range m.Blocking {
		line("  Blocks the move: %s: %s", k.Key, k.Why)
	}
	if len(m.Blocking) > 0 {
		line("    (list a key in %s, or \"*\", to move without it)", AnnotationGatewayAcknowledged)
	}
	for _, k := range m.Acknowledged {
		line("  Acknowledged, lost on the move: %s: %s", k.Key, k.Why)
	}
	for _, k := range m.Carried.Keys {
		line("  Carried: %s", k)
	}
	for _, n := range m.Notes {
		line("  Note: %s", n)
	}
	if len(ing.Spec.TLS) > 0 && (m.Gateway == nil || !gatewayVisible) {
		line("  Note: spec.tls is the Gateway's to terminate; with no Gateway to look at, its HTTPS listeners were not checked.")
	}
	if asks {
		writeMoveState(line, ing, m, route, lookup, drain, now, fieldManager)
	} else if route != nil {
		line("  HTTPRoute %s/%s exists already: %s", route.Namespace, route.Name, routeWhose(route, ing, fieldManager))
	}
	if m.Route == nil {
		line("  No HTTPRoute can be made from it as it is.")
		_, err := io.WriteString(w, b.String())
		return err
	}
	out := m.Route.DeepCopy()
	out.APIVersion, out.Kind = gatewayv1.GroupVersion.String(), "HTTPRoute"
	data, err := routeYAML(out)
	if err != nil {
		return fmt.Errorf("encoding the route of ingress %s/%s: %w", ing.Namespace, ing.Name, err)
	}
	b.Write(data)
	if m.RedirectRoute != nil {
		out := m.RedirectRoute.DeepCopy()
		out.APIVersion, out.Kind = gatewayv1.GroupVersion.String(), "HTTPRoute"
		if data, err = routeYAML(out); err != nil {
			return fmt.Errorf("encoding the redirect route of ingress %s/%s: %w", ing.Namespace, ing.Name, err)
		}
		line("  The HTTPS redirect: HTTPRoute %s above is on HTTPS listener %s alone; HTTPRoute %s below redirects plain HTTP to it on %s %s.",
			m.Route.Name, m.Redirect.HTTPSListener, out.Name, plural(len(m.Redirect.HTTPListeners), "listener", "listeners"), strings.Join(m.Redirect.HTTPListeners, ", "))
		b.WriteString("---\n")
		b.Write(data)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// routeWhose says whose route is, for the Ingress ing of its name.
func routeWhose(route *gatewayv1.HTTPRoute, ing *networkingv1.Ingress, fieldManager string) string {
	if isMigratedFrom(route, ing, fieldManager) {
		return "made from this Ingress"
	}
	return migrationOwner(ing, fieldManager).notOurs("HTTPRoute", route) + "; the controller leaves it untouched and the Ingress stays"
}

// writeMoveState writes where the move of ing stands: its route, whether
// it serves, whether the Ingress is withdrawn from external-dns and
// drained.
func writeMoveState(line func(string, ...any), ing *networkingv1.Ingress, m *Migration, route *gatewayv1.HTTPRoute, lookup gatewayLookup, drain time.Duration, now time.Time, fieldManager string) {
	switch {
	case route == nil:
		line("  Move: the HTTPRoute is not made yet.")
	case !isMigratedFrom(route, ing, fieldManager):
		line("  Move: blocked: HTTPRoute %s/%s %s.", route.Namespace, route.Name, routeWhose(route, ing, fieldManager))
		return
	default:
		if until := untilServes(route, lookup); until != "" {
			line("  Move: HTTPRoute %s/%s is made from this Ingress and does not serve yet: it waits until %s.", route.Namespace, route.Name, until)
		} else {
			line("  Move: HTTPRoute %s/%s is made from this Ingress and serves.", route.Namespace, route.Name)
		}
	}
	at, withdrawn := withdrawnAt(ing)
	switch {
	case !withdrawn:
		line("  The Ingress is in external-dns.")
	case now.Sub(at) < drain:
		line("  The Ingress was withdrawn from external-dns at %s; its DNS drain ends at %s.", at.UTC().Format(time.RFC3339), at.Add(drain).UTC().Format(time.RFC3339))
	case m.DeleteAfterMove:
		line("  The Ingress was withdrawn from external-dns at %s and drained; %s asks for its deletion.", at.UTC().Format(time.RFC3339), AnnotationDeleteAfterMove)
	default:
		line("  Moved: the Ingress was withdrawn from external-dns at %s and drained; it stays, withdrawn.", at.UTC().Format(time.RFC3339))
	}
}

// routeYAML is route as YAML without its status, which is no one's to
// write but its Gateway's.
func routeYAML(route *gatewayv1.HTTPRoute) ([]byte, error) {
	data, err := json.Marshal(route)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	return yaml.Marshal(obj)
}
