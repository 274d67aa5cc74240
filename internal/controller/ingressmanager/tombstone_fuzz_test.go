package ingressmanager

import (
	"testing"

	"github.com/kube-sample/controller-manager/internal/controller/handlertest"
)

// FuzzDeleteHandlers feeds the Service and Ingress delete handlers arbitrary
// arguments (objects, nil, nil pointers, wrong types, tombstones with
// arbitrary keys around any of them): they must never panic, must queue
// every sane key the argument names, and only sane keys it names.
// Run it with: go test ./internal/controller/ingressmanager -run '^$' -fuzz FuzzDeleteHandlers
func FuzzDeleteHandlers(f *testing.F) {
	c := newTestController(f)
	handlertest.Fuzz(f, func(t *testing.T, in handlertest.Input) {
		c.enqueue(in.Object()) // the Service informer's DeleteFunc
		must, may := in.Want(handlertest.KindService)
		handlertest.Check(t, in, handlertest.Drain(c.loop.Queue), must, may)

		c.enqueueOwned(in.Object()) // the Ingress informer's DeleteFunc
		must, may = in.WantIngress()
		handlertest.Check(t, in, handlertest.Drain(c.loop.Queue), must, may)
	})
}
