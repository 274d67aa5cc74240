package network

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/controller/handlertest"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// FuzzDeleteHandler feeds the Network delete handler arbitrary arguments
// (objects, nil, nil pointers, wrong types, tombstones with arbitrary keys
// around any of them): it must never panic, must queue the sane key the
// argument names, and only sane keys it names.
// Run it with: go test ./internal/controller/network -run '^$' -fuzz FuzzDeleteHandler
func FuzzDeleteHandler(f *testing.F) {
	c := newFuzzController(f, nil)
	handlertest.Fuzz(f, func(t *testing.T, in handlertest.Input) {
		c.enqueue(in.Object()) // the Network informer's DeleteFunc
		must, may := in.Want(handlertest.KindNetwork)
		handlertest.Check(t, in, handlertest.Drain(c.loop.Queue), must, may)
	})
}

// newFuzzController returns a controller on a fake clientset whose
// informers are not started (tests put objects in the indexer), with
// backend b (nil: a memory-less placeholder never called).
func newFuzzController(tb testing.TB, b Backend) *Controller {
	tb.Helper()
	if b == nil {
		b = unusedBackend{}
	}
	client := fake.NewClientset()
	c, err := New(context.Background(), &controller.Context{
		SampleClient:          client,
		SampleInformerFactory: externalversions.NewSharedInformerFactory(client, 0),
		EventRecorder:         func(string) record.EventRecorder { return &record.FakeRecorder{} }, // drops events
		FieldManager:          "fuzz",
	}, Options{Backend: b})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.loop.Queue.ShutDown)
	return c
}

// unusedBackend is a Backend for tests that must never reach one.
type unusedBackend struct{ Backend }
