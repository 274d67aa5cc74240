package network

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

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
	tb.Cleanup(c.Loop.Queue.ShutDown)
	// As after a first scan of an empty backend (no scan loop runs here).
	c.def.known.replace(nil, c.def.known.mark())
	c.def.state.up()
	return c
}

// unusedBackend is a Backend for tests that must never reach one.
type unusedBackend struct{ Backend }
