package ingressmanager

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/kube-sample/controller-manager/internal/controller"
)

func newTestController(t testing.TB) *Controller {
	t.Helper()
	c, _ := newTestControllerClient(t)
	return c
}

// newTestControllerClient is newTestController with its fake clientset.
// Nothing runs: the informers' caches are filled by hand, and the Gateway
// API's first answer is not in.
func newTestControllerClient(t testing.TB) (*Controller, *fake.Clientset) {
	t.Helper()
	c, clients := newTestControllerClients(t)
	return c, clients.kube
}

// testClients are the fakes a test controller talks to.
type testClients struct {
	kube     *fake.Clientset
	gateway  *gatewayfake.Clientset
	recorder *record.FakeRecorder
}

// newTestControllerClients is newTestControllerClient with the Gateway API's
// fake clientset and the Event recorder too.
func newTestControllerClients(t testing.TB) (*Controller, testClients) {
	t.Helper()
	clients := testClients{kube: fake.NewClientset(), gateway: gatewayfake.NewClientset(), recorder: record.NewFakeRecorder(100)}
	client := clients.kube
	c, err := New(context.Background(), &controller.Context{
		Core:          client.CoreV1(),
		Networking:    client.NetworkingV1(),
		Gateway:       clients.gateway.GatewayV1(),
		Informers:     controller.NewInformers(controller.InformersConfig{Core: client.CoreV1(), Networking: client.NetworkingV1(), Client: client}),
		EventRecorder: func(string) record.EventRecorder { return clients.recorder },
		FieldManager:  "test",
	}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Loop.Queue.ShutDown)
	t.Cleanup(c.migrations.loop.Queue.ShutDown)
	return c, clients
}

func queued(c *Controller) map[string]bool {
	out := map[string]bool{}
	for c.Loop.Queue.Len() > 0 {
		k, _ := c.Loop.Queue.Get()
		out[k.String()] = true
		c.Loop.Queue.Done(k)
	}
	return out
}

// The seed's delete handler type-asserted *Ingress and panicked on a
// tombstone; these handlers must take anything the informer can deliver.
func TestDeleteHandlersTakeTombstones(t *testing.T) {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "owner", UID: "u", Controller: ptr.To(true)}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}}
	tests := []struct {
		name    string
		handler func(c *Controller, obj any)
		obj     any
		want    []string
	}{
		{"ingress", (*Controller).enqueueOwned, ing, []string{"ns/web", "ns/owner"}},
		{"ingress tombstone", (*Controller).enqueueOwned, cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: ing}, []string{"ns/web", "ns/owner"}},
		{"ingress tombstone of a wrong type", (*Controller).enqueueOwned, cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: svc}, nil},
		{"ingress tombstone without object", (*Controller).enqueueOwned, cache.DeletedFinalStateUnknown{Key: "ns/x"}, nil},
		{"nil", (*Controller).enqueueOwned, nil, nil},
		{"service", (*Controller).Enqueue, svc, []string{"ns/svc"}},
		{"service tombstone", (*Controller).Enqueue, cache.DeletedFinalStateUnknown{Key: "ns/svc", Obj: svc}, []string{"ns/svc"}},
		{"service tombstone without object", (*Controller).Enqueue, cache.DeletedFinalStateUnknown{Key: "ns/gone"}, []string{"ns/gone"}},
		{"service garbage", (*Controller).Enqueue, 42, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestController(t)
			tc.handler(c, tc.obj)
			got := queued(c)
			if len(got) != len(tc.want) {
				t.Fatalf("queued %v, want %v", got, tc.want)
			}
			for _, k := range tc.want {
				if !got[k] {
					t.Errorf("queued %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestUpdateServiceFilter(t *testing.T) {
	base := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", UID: "u1", ResourceVersion: "1",
		Annotations: map[string]string{"ingress/http": "x", "other": "a"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	mod := func(f func(s *corev1.Service)) *corev1.Service {
		s := base.DeepCopy()
		s.ResourceVersion = "2"
		f(s)
		return s
	}
	tests := []struct {
		name string
		new  *corev1.Service
		want bool
	}{
		{"resync of an annotated Service", base.DeepCopy(), true},
		{"unrelated annotation", mod(func(s *corev1.Service) { s.Annotations["other"] = "b" }), false},
		{"label", mod(func(s *corev1.Service) { s.Labels = map[string]string{"a": "b"} }), false},
		{"status", mod(func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}} }), false},
		{"ingress annotation", mod(func(s *corev1.Service) { s.Annotations["ingress/host"] = "a.example.com" }), true},
		{"annotation removed", mod(func(s *corev1.Service) { delete(s.Annotations, "ingress/http") }), true},
		{"ports", mod(func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }), true},
		{"recreated", mod(func(s *corev1.Service) { s.UID = "u2" }), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestController(t)
			c.updateService(base, tc.new)
			if got := c.Loop.Queue.Len() == 1; got != tc.want {
				t.Errorf("queued = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCached: a cache lookup returns the object, nil without an error when
// there is none, and an error when the cache holds another kind.
func TestCached(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	svc := service(nil, port("http", 80))
	if err := indexer.Add(svc); err != nil {
		t.Fatal(err)
	}
	key := cache.MetaObjectToName(svc)
	if got, err := cached[*corev1.Service](indexer, key); got != svc || err != nil {
		t.Errorf("cached(present) = %v, %v, want the Service", got, err)
	}
	if got, err := cached[*corev1.Service](indexer, cache.ObjectName{Namespace: key.Namespace, Name: "absent"}); got != nil || err != nil {
		t.Errorf("cached(absent) = %v, %v, want nil, nil", got, err)
	}
	if got, err := cached[*networkingv1.Ingress](indexer, key); got != nil || err == nil {
		t.Errorf("cached(another kind) = %v, %v, want nil and an error", got, err)
	}
}

// TestOwnCreateBringsNoSync: the informer's event for an object this
// process created, unchanged, from the Service as cached, with nothing of
// the other kind to move from, queues nothing (that sync would find nothing
// to do), whether it comes after the create's answer or before it; any
// difference queues the Service as before.
func TestOwnCreateBringsNoSync(t *testing.T) {
	// answering makes the fake API server answer a create with a UID and a
	// version, as a real one does, after calling during(obj) while the
	// create is in flight (during may be nil).
	answering := func(f *syncFixture, during func(*networkingv1.Ingress) error) {
		f.kube.PrependReactor("create", "ingresses", func(a k8stesting.Action) (bool, runtime.Object, error) {
			ing := a.(k8stesting.CreateAction).GetObject().(*networkingv1.Ingress)
			ing.UID, ing.ResourceVersion = "ingress-uid", "7"
			if during != nil {
				if err := during(ing.DeepCopy()); err != nil {
					return true, nil, err
				}
			}
			return false, nil, nil
		})
	}
	newService := func() *corev1.Service {
		svc := service(nil, port("http", 80))
		svc.UID, svc.ResourceVersion = "svc-uid", "1"
		return svc
	}
	queued := func(f *syncFixture) bool { return f.c.Loop.Queue.Len() > 0 }

	t.Run("after the answer", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			change func(f *syncFixture, svc *corev1.Service, ing *networkingv1.Ingress)
			queued bool
		}{
			{name: "the object as created", change: func(*syncFixture, *corev1.Service, *networkingv1.Ingress) {}},
			{name: "a later version of it", queued: true,
				change: func(_ *syncFixture, _ *corev1.Service, ing *networkingv1.Ingress) { ing.ResourceVersion = "8" }},
			{name: "another object of that name", queued: true,
				change: func(_ *syncFixture, _ *corev1.Service, ing *networkingv1.Ingress) { ing.UID = "other" }},
			{name: "the Service changed since", queued: true,
				change: func(f *syncFixture, svc *corev1.Service, _ *networkingv1.Ingress) {
					changed := svc.DeepCopy()
					changed.ResourceVersion = "2"
					if err := f.c.services.Update(changed); err != nil {
						t.Fatal(err)
					}
				}},
			{name: "an HTTPRoute of the Service is cached: a move", queued: true,
				change: func(f *syncFixture, svc *corev1.Service, _ *networkingv1.Ingress) { f.addRoute(svc, acceptedAt(1)) }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := newSyncFixture(t)
				answering(f, nil)
				svc := newService()
				f.syncExpecting(svc, []string{"create ingresses"})
				ing, err := f.kube.NetworkingV1().Ingresses(svc.Namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				tc.change(f, svc, ing)
				f.c.addOwned(ing)
				if got := queued(f); got != tc.queued {
					t.Errorf("queued = %v, want %v", got, tc.queued)
				}
			})
		}
	})

	t.Run("before the answer, of the object created", func(t *testing.T) {
		f := newSyncFixture(t)
		answering(f, func(ing *networkingv1.Ingress) error { f.c.addOwned(ing); return nil })
		f.syncExpecting(newService(), []string{"create ingresses"})
		if queued(f) {
			t.Error("the create's own event, come before its answer, queued the Service")
		}
		n := 0
		f.c.ingress.created.Range(func(any, any) bool { n++; return true })
		if n != 0 {
			t.Errorf("%d creates remembered after their event came", n)
		}
	})

	t.Run("before the answer, of another object: the create fails, the Service is queued", func(t *testing.T) {
		f := newSyncFixture(t)
		answering(f, func(ing *networkingv1.Ingress) error {
			ing.UID = "someone-else"
			f.c.addOwned(ing)
			return apierrors.NewAlreadyExists(networkingv1.Resource("ingresses"), ing.Name)
		})
		f.syncExpecting(newService(), []string{"create ingresses"})
		if !queued(f) {
			t.Error("the event of someone else's object, held during the create, was lost")
		}
	})
}
