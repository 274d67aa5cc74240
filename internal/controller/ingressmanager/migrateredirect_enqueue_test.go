package ingressmanager

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The events that bring back an Ingress whose redirect route's place is
// taken.

// TestForeignRedirectRouteBringsTheIngressBack: someone else's route of
// the redirect route's name keeps the Ingress from moving; its deletion
// (or any change of it) must bring that Ingress back, as a foreign route
// of the Ingress's own name does, instead of leaving the move stuck until
// a resync.
func TestForeignRedirectRouteBringsTheIngressBack(t *testing.T) {
	foreign := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-https-redirect",
		Annotations: map[string]string{"team": "other"}}}
	for _, tc := range []struct {
		name  string
		ing   *networkingv1.Ingress
		event func(c *Controller)
		want  []string
	}{
		{name: "deleted", ing: tlsIngress(), want: []string{"default/web"},
			event: func(c *Controller) { c.enqueueOwned(foreign) }},
		{name: "deleted, a tombstone", ing: tlsIngress(), want: []string{"default/web"},
			event: func(c *Controller) {
				c.enqueueOwned(cache.DeletedFinalStateUnknown{Key: "default/web-https-redirect", Obj: foreign})
			}},
		{name: "the Ingress of the name without the suffix does not ask to move: nothing",
			ing:   tlsIngress(func(i *networkingv1.Ingress) { delete(i.Annotations, AnnotationGateway) }),
			event: func(c *Controller) { c.enqueueOwned(foreign) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestController(t)
			if err := c.ingresses.Add(tc.ing); err != nil {
				t.Fatal(err)
			}
			tc.event(c)
			got := queuedMigrations(c)
			if len(got) != len(tc.want) {
				t.Fatalf("migrations queued %v, want %v", got, tc.want)
			}
			for _, k := range tc.want {
				if !got[k] {
					t.Errorf("migrations queued %v, want %v", got, tc.want)
				}
			}
		})
	}
}
