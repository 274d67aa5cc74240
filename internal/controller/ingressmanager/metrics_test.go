package ingressmanager

import (
	"fmt"
	"slices"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// What the stuck-move alert reads: each cached Ingress and HTTPRoute
// withdrawn from external-dns, with how long past the drain it is; objects
// not (completely) withdrawn are not moves.
func TestMovesReportWithdrawnObjectsPastTheirDrain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ingress []func(*networkingv1.Ingress)
		route   []func(*gatewayv1.HTTPRoute)
		users   bool // and a user's Ingress that asked to be deleted, 2 minutes past its drain
		want    []string
	}{
		{name: "nothing withdrawn: no move",
			ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)}},
		{name: "an Ingress mid-drain: negative, what is left of the drain",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-20 * time.Second))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want:    []string{"Ingress -40s"}},
		{name: "an Ingress still there 3 minutes after its withdrawal, a 1-minute drain: 2 minutes past it",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-3 * time.Minute))},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1)},
			want:    []string{"Ingress 2m0s"}},
		{name: "an HTTPRoute past its drain",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route:   []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-2 * testDrain))},
			want:    []string{"HTTPRoute 1m0s"}},
		{name: "a withdrawal time that does not parse is no withdrawal",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-time.Hour)), func(i *networkingv1.Ingress) {
				i.Annotations[AnnotationDNSWithdrawn] = "yesterday"
			}},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1)}},
		{name: "an Ingress withdrawn long ago that no Service controls (its Service deleted with --cascade=orphan) is no move: the controller never deletes it",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-time.Hour)), func(i *networkingv1.Ingress) {
				i.OwnerReferences = nil
			}},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1)}},
		{name: "nor an HTTPRoute withdrawn long ago that something else than a Service controls",
			ingress: []func(*networkingv1.Ingress){withAddress},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1), withdrawn[*gatewayv1.HTTPRoute](testNow.Add(-time.Hour)), func(r *gatewayv1.HTTPRoute) {
				for i := range r.OwnerReferences {
					r.OwnerReferences[i].Kind = "ConfigMap"
				}
			}}},
		{name: "one controller annotation given back to the user is no withdrawal",
			ingress: []func(*networkingv1.Ingress){withAddress, withdrawn[*networkingv1.Ingress](testNow.Add(-time.Hour)), func(i *networkingv1.Ingress) {
				i.Annotations[AnnotationExternalDNSController] = "dns-controller"
			}},
			route: []func(*gatewayv1.HTTPRoute){servedAt(1)}},
		{name: "a user's Ingress that asked to be deleted, past its drain",
			ingress: []func(*networkingv1.Ingress){withAddress}, route: []func(*gatewayv1.HTTPRoute){servedAt(1)}, users: true,
			want: []string{"Ingress 2m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			// Users' Ingresses moved to a route: kept ones are no drain;
			// one that asked to be deleted is.
			f.addUserIngress(userIngress(func(i *networkingv1.Ingress) { i.Name, i.UID = "kept", "kept-uid" },
				withdrawn[*networkingv1.Ingress](testNow.Add(-time.Hour))))
			if tc.users {
				f.addUserIngress(userIngress(func(i *networkingv1.Ingress) { i.Name, i.UID = "deleted", "deleted-uid" },
					withAnnotations(AnnotationDeleteAfterMove, "true"), withdrawn[*networkingv1.Ingress](testNow.Add(-3*time.Minute))))
			}
			svc := service(map[string]string{AnnotationGateway: "gw"}, port("http", 80))
			f.addIngress(svc, both(tc.ingress...))
			f.addRoute(svc, both(tc.route...))
			var got []string
			f.c.moves(func(kind string, overdue time.Duration) { got = append(got, fmt.Sprintf("%s %v", kind, overdue)) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("moves = %q, want %q", got, tc.want)
			}
		})
	}
}
