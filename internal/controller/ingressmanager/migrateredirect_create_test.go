package ingressmanager

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The event of a redirect route the controller just made.

// queuedMigrations drains the migrations' queue and returns its keys.
func queuedMigrations(c *Controller) map[string]bool {
	out := map[string]bool{}
	for c.migrations.loop.Queue.Len() > 0 {
		k, _ := c.migrations.loop.Queue.Get()
		out[k.String()] = true
		c.migrations.loop.Queue.Done(k)
	}
	return out
}

// TestRedirectRouteCreateBringsItsIngressBack: the informer's event of the
// redirect route the sync of an Ingress just created brings that Ingress
// back, whether it comes before the create's answer or after: the sync
// that created it decided nothing more on it, and the next tells the user
// what the move waits for (WaitingForHTTPRoute, the listener named). An
// event taken for a create's own, as for a Service's object with nothing to
// move, would leave the Ingress unsynced until the Gateway writes the
// route's status, if ever.
func TestRedirectRouteCreateBringsItsIngressBack(t *testing.T) {
	for _, before := range []bool{true, false} {
		name := "the event after the create's answer"
		if before {
			name = "the event before the create's answer"
		}
		t.Run(name, func(t *testing.T) {
			f := newCutoverFixture(t, testDrain)
			if err := f.gateways.Update(redirectGateway()); err != nil {
				t.Fatal(err)
			}
			ing := f.addUserIngress(tlsIngress(), withAddress)
			var created *gatewayv1.HTTPRoute
			f.gateway.PrependReactor("create", "httproutes", func(a k8stesting.Action) (bool, runtime.Object, error) {
				r := a.(k8stesting.CreateAction).GetObject().(*gatewayv1.HTTPRoute)
				r.UID, r.ResourceVersion = "redirect-uid", "7"
				created = r.DeepCopy()
				if before {
					f.c.addOwned(created)
				}
				return false, nil, nil
			})
			f.clearActions()
			if err := f.syncMigration(ing); err != nil {
				t.Fatal(err)
			}
			if created == nil || created.Name != "web-https-redirect" {
				t.Fatalf("created %v, want the redirect route", created)
			}
			if !before {
				f.c.addOwned(created)
			}
			if got := queuedMigrations(f.c); !got["default/web"] {
				t.Errorf("the redirect route's event queued %v, want default/web", got)
			}
		})
	}
}
