package controller_test

import (
	"context"
	"testing"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/controller/handlertest"
)

// FuzzEnqueue feeds Base.Enqueue, the Add and Delete handler of every
// controller's informers, arbitrary arguments (objects, nil, nil pointers,
// wrong types, tombstones with arbitrary keys around any of them): it must
// never panic, must queue the sane key the argument names, and only sane
// keys it names.
// Run it with: go test ./internal/controller -run '^$' -fuzz FuzzEnqueue
func FuzzEnqueue(f *testing.F) {
	b := controller.NewBase(context.Background(), &controller.Context{}, "fuzz", nil)
	f.Cleanup(b.Loop.Queue.ShutDown)
	handlertest.Fuzz(f, func(t *testing.T, in handlertest.Input) {
		b.Enqueue(in.Object())
		must, may := in.WantAny()
		handlertest.Check(t, in, handlertest.Drain(b.Loop.Queue), must, may)
	})
}
