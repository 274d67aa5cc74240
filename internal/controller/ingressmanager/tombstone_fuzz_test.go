package ingressmanager

import (
	"testing"

	"github.com/kube-sample/controller-manager/internal/controller/handlertest"
)

// FuzzDeleteHandlers feeds the Ingress delete handler arbitrary arguments
// (objects, nil, nil pointers, wrong types, tombstones with arbitrary keys
// around any of them): it must never panic, must queue every sane key the
// argument names, and only sane keys it names. The Service handler is the
// shared one (controller.FuzzEnqueue covers it).
// Run it with: go test ./internal/controller/ingressmanager -run '^$' -fuzz FuzzDeleteHandlers
func FuzzDeleteHandlers(f *testing.F) {
	c := newTestController(f)
	handlertest.Fuzz(f, func(t *testing.T, in handlertest.Input) {
		c.enqueueOwned(in.Object()) // the Ingress informer's DeleteFunc
		must, may := in.WantIngress()
		handlertest.Check(t, in, handlertest.Drain(c.Loop.Queue), must, may)
	})
}
