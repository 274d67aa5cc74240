package podlogger

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/controller/handlertest"
)

// FuzzDeleteHandler feeds the Pod delete handler arbitrary arguments
// (objects, nil, nil pointers, wrong types, tombstones with arbitrary keys
// around any of them): it must never panic, must queue the sane key the
// argument names, and only sane keys it names.
// Run it with: go test ./internal/controller/podlogger -run '^$' -fuzz FuzzDeleteHandler
func FuzzDeleteHandler(f *testing.F) {
	client := fake.NewClientset()
	c := New(context.Background(), &controller.Context{KubeClient: client, InformerFactory: informers.NewSharedInformerFactory(client, 0)})
	f.Cleanup(c.loop.Queue.ShutDown)
	handlertest.Fuzz(f, func(t *testing.T, in handlertest.Input) {
		c.enqueue(in.Object()) // the Pod informer's DeleteFunc
		must, may := in.Want(handlertest.KindPod)
		handlertest.Check(t, in, handlertest.Drain(c.loop.Queue), must, may)
	})
}
