// Package handlertest feeds informer event handlers what fuzz targets make
// of their inputs: objects of every kind the controllers watch, nil, nil
// pointers, wrong types, and delete tombstones
// (cache.DeletedFinalStateUnknown) with arbitrary keys around any of them;
// and it checks what the handlers queued. The fuzz targets of the shared
// handler (controller.Base.Enqueue) and of the controllers' own handlers use
// it:
//
//	handlertest.Fuzz(f, func(t *testing.T, in handlertest.Input) {
//		b.Enqueue(in.Object())
//		must, may := in.WantAny()
//		handlertest.Check(t, in, handlertest.Drain(b.Loop.Queue), must, may)
//	})
package handlertest

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/controller"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Kinds of objects Input.Object builds (Input.Kind modulo NumKinds).
const (
	KindNil     uint8 = iota // untyped nil
	KindService              // *corev1.Service
	KindIngress              // *networkingv1.Ingress, with the owner reference of the Input
	KindPod                  // *corev1.Pod
	KindNetwork              // *samplecrdv1.Network
	KindNilService
	KindNilIngress
	KindNilPod
	KindNilNetwork
	KindString          // a string: no object at all
	KindServiceValue    // corev1.Service, not a pointer: no object metadata accessor
	KindTombstonePtr    // *cache.DeletedFinalStateUnknown around a Service
	KindNestedTombstone // a tombstone (with Key) around a tombstone around a Service
	KindEndpoints       // *corev1.Endpoints: an object of a kind no handler here expects
	NumKinds
)

// Input is one handler argument, described by fuzz arguments.
type Input struct {
	// Kind selects the object (modulo NumKinds).
	Kind uint8
	// Tombstone wraps the object in a cache.DeletedFinalStateUnknown with Key.
	Tombstone bool
	Key       string
	// Namespace and Name of the object.
	Namespace, Name string
	// The controller owner reference of an Ingress (none when all are empty).
	OwnerAPIVersion, OwnerKind, OwnerName string
	OwnerController                       bool
}

// Fuzz runs body on the Input of every fuzz input. The committed corpus
// of each target (testdata/fuzz/<FuzzName>) holds well-formed objects and
// tombstones and the bad arguments the handlers must survive.
func Fuzz(f *testing.F, body func(t *testing.T, in Input)) {
	Quiet(f)
	f.Fuzz(func(t *testing.T, kind uint8, tombstone bool, key, namespace, name, ownerAPIVersion, ownerKind, ownerName string, ownerController bool) {
		body(t, Input{Kind: kind, Tombstone: tombstone, Key: key, Namespace: namespace, Name: name,
			OwnerAPIVersion: ownerAPIVersion, OwnerKind: ownerKind, OwnerName: ownerName, OwnerController: ownerController})
	})
}

func (in Input) meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name, UID: types.UID("uid-" + in.Name), ResourceVersion: "1"}
}

// Object builds the handler argument.
func (in Input) Object() any {
	obj := in.bare()
	if in.Tombstone {
		return cache.DeletedFinalStateUnknown{Key: in.Key, Obj: obj}
	}
	return obj
}

// bare is the object without the tombstone.
func (in Input) bare() any {
	m := in.meta()
	switch in.Kind % NumKinds {
	case KindService:
		return &corev1.Service{ObjectMeta: m}
	case KindIngress:
		ing := &networkingv1.Ingress{ObjectMeta: m}
		if in.OwnerAPIVersion != "" || in.OwnerKind != "" || in.OwnerName != "" {
			ing.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: in.OwnerAPIVersion, Kind: in.OwnerKind, Name: in.OwnerName,
				UID: "owner-uid", Controller: ptr.To(in.OwnerController),
			}}
		}
		return ing
	case KindPod:
		return &corev1.Pod{ObjectMeta: m}
	case KindNetwork:
		return &samplecrdv1.Network{ObjectMeta: m}
	case KindNilService:
		return (*corev1.Service)(nil)
	case KindNilIngress:
		return (*networkingv1.Ingress)(nil)
	case KindNilPod:
		return (*corev1.Pod)(nil)
	case KindNilNetwork:
		return (*samplecrdv1.Network)(nil)
	case KindString:
		return in.Namespace + "/" + in.Name
	case KindServiceValue:
		return corev1.Service{ObjectMeta: m}
	case KindTombstonePtr:
		return &cache.DeletedFinalStateUnknown{Key: in.Key, Obj: &corev1.Service{ObjectMeta: m}}
	case KindNestedTombstone:
		return cache.DeletedFinalStateUnknown{Key: in.Key, Obj: cache.DeletedFinalStateUnknown{Key: in.Key, Obj: &corev1.Service{ObjectMeta: m}}}
	case KindEndpoints:
		return &corev1.Endpoints{ObjectMeta: m} //nolint:staticcheck // any object of another kind
	}
	return nil
}

// sane returns key and whether it can name a namespaced object.
func sane(key cache.ObjectName) (cache.ObjectName, bool) {
	return key, controller.CheckKey(key) == nil
}

// objectKey is the key of the (unwrapped) object when it is a non-nil
// object of kind and its namespace and name are sane.
func (in Input) objectKey(kind uint8) (cache.ObjectName, bool) {
	if in.Kind%NumKinds != kind {
		return cache.ObjectName{}, false
	}
	return sane(cache.ObjectName{Namespace: in.Namespace, Name: in.Name})
}

// tombstoneKey is the parsed tombstone key when there is a tombstone and its
// key is sane.
func (in Input) tombstoneKey() (cache.ObjectName, bool) {
	if !in.Tombstone && in.Kind%NumKinds != KindNestedTombstone {
		return cache.ObjectName{}, false
	}
	key, err := cache.ParseObjectName(in.Key)
	if err != nil {
		return cache.ObjectName{}, false
	}
	return sane(key)
}

// Want returns the keys a handler of objects of kind (KindService, KindPod,
// KindNetwork) must queue for the input, and the only keys it may queue:
// the tombstone's key when it is sane, else the object's key when the
// object is of kind and its key sane.
func (in Input) Want(kind uint8) (must, may []cache.ObjectName) {
	if key, ok := in.tombstoneKey(); ok {
		return []cache.ObjectName{key}, []cache.ObjectName{key}
	}
	if key, ok := in.objectKey(kind); ok {
		return []cache.ObjectName{key}, []cache.ObjectName{key}
	}
	// Whatever else: the object may still carry a sane key the handler
	// can use (an object of another kind, a tombstone around an object
	// whose key is sane), but need not.
	if key, ok := sane(cache.ObjectName{Namespace: in.Namespace, Name: in.Name}); ok {
		switch in.Kind % NumKinds {
		case KindService, KindIngress, KindPod, KindNetwork, KindEndpoints:
			return nil, []cache.ObjectName{key}
		}
	}
	return nil, nil
}

// WantAny is Want for a handler that takes objects of any kind and queues
// their own key (controller.Base.Enqueue).
func (in Input) WantAny() (must, may []cache.ObjectName) {
	switch kind := in.Kind % NumKinds; kind {
	case KindService, KindIngress, KindPod, KindNetwork, KindEndpoints:
		return in.Want(kind)
	}
	return in.Want(NumKinds) // no object: only a tombstone's key
}

// WantIngress returns what the Ingress handler (which queues the Service of
// an Ingress's name and its controlling Service) must and may queue.
func (in Input) WantIngress() (must, may []cache.ObjectName) {
	key, ok := in.objectKey(KindIngress)
	if !ok {
		return nil, nil
	}
	must = []cache.ObjectName{key}
	if in.OwnerController && in.OwnerAPIVersion == "v1" && in.OwnerKind == "Service" {
		if owner, ok := sane(cache.ObjectName{Namespace: in.Namespace, Name: in.OwnerName}); ok {
			must = append(must, owner)
		}
	}
	return must, must
}

// Drain returns the keys queued in q, in order, and leaves q empty.
func Drain(q workqueue.TypedInterface[cache.ObjectName]) []cache.ObjectName {
	var out []cache.ObjectName
	for q.Len() > 0 {
		k, _ := q.Get()
		out = append(out, k)
		q.Done(k)
	}
	return out
}

// Check fails t when a queued key is not sane, is not one of may, or when a
// key of must was not queued.
func Check(t testing.TB, in Input, queued, must, may []cache.ObjectName) {
	t.Helper()
	for _, k := range queued {
		if err := controller.CheckKey(k); err != nil {
			t.Fatalf("%s: queued an invalid key: %v", in, err)
		}
		if !slices.Contains(may, k) {
			t.Fatalf("%s: queued %q, which the input does not name (may queue %v)", in, k, may)
		}
	}
	for _, k := range must {
		if !slices.Contains(queued, k) {
			t.Fatalf("%s: did not queue %q (queued %v)", in, k, queued)
		}
	}
}

// String describes the input for failure messages.
func (in Input) String() string {
	return fmt.Sprintf("handler argument %#v", in.Object())
}

// Quiet discards klog's output (the handlers report every bad argument
// through utilruntime.HandleError) until tb ends, when fuzzing (-fuzz):
// then no other test of the package runs, and nothing logs concurrently
// with the switch of klog's logger (which would race).
func Quiet(tb testing.TB) {
	if f := flag.Lookup("test.fuzz"); f == nil || f.Value.String() == "" {
		return
	}
	klog.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(io.Discard))))
	tb.Cleanup(klog.ClearLogger)
}
