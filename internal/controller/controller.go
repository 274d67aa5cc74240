// Package controller holds what every controller of the manager shares: the
// Context a controller is built from, the Interface the manager runs, Loop,
// the workqueue -> worker -> sync machinery, and Base, which a controller
// embeds to be an Interface around a Loop.
package controller

import (
	"context"
	"time"

	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// Interface is a controller the manager can run.
type Interface interface {
	// Name is the controller's name in --controllers, logs and metrics.
	Name() string
	// HasSynced reports whether the informer caches this controller reads have
	// synced and its event handlers have seen the initial list. Readiness
	// (/readyz) waits for it.
	HasSynced() bool
	// Run starts workers and blocks until ctx is cancelled and the in-flight
	// work has drained (see Loop.Run).
	Run(ctx context.Context, workers int)
}

// Warmer is implemented by a controller that keeps caches of its own,
// besides the shared factories' informers (say, of an API it first has to
// find served). The manager calls Warm once, as it starts the shared
// factories and before Run, leader or not: a standby's caches are warm and
// its HasSynced can turn true. Warm returns once ctx has ended and what it
// started has stopped.
type Warmer interface {
	Warm(ctx context.Context)
}

// Context is what a controller is built from. Informers obtained from the
// factories are shared: each resource is watched once, however many
// controllers read it. The manager starts the factories after every enabled
// controller has been constructed.
type Context struct {
	// Core and Networking talk to the API server's core/v1 and
	// networking.k8s.io/v1 with the manager's QPS/burst.
	Core       corev1client.CoreV1Interface
	Networking networkingv1client.NetworkingV1Interface
	// Informers is the shared informers of built-in kinds, scoped to
	// --namespace and transformed (see Transform).
	Informers *Informers
	// SampleClient talks to the samplecrd.k8s.io API (JSON: custom resources
	// have no protobuf encoding).
	SampleClient versioned.Interface
	// SampleInformerFactory is the shared factory for samplecrd.k8s.io types,
	// scoped and transformed like Informers.
	SampleInformerFactory externalversions.SharedInformerFactory
	// Gateway talks to the gateway.networking.k8s.io/v1 API (JSON).
	Gateway gatewayv1client.GatewayV1Interface
	// Transform is the shared factories' informer transform, for informers
	// a controller starts itself.
	Transform cache.TransformFunc
	// Discovery tells which APIs the cluster serves.
	Discovery discovery.DiscoveryInterface
	// EventRecorder returns a recorder whose events name component as their source.
	EventRecorder func(component string) record.EventRecorder
	// Namespace is the watch scope ("" means all namespaces).
	Namespace string
	// ResyncPeriod is the informers' resync period (0 disables resync).
	ResyncPeriod time.Duration
	// DrainTimeout bounds how long Run waits for in-flight work on shutdown.
	DrainTimeout time.Duration
	// StopNow, when it ends, stops every controller at once (see
	// Loop.StopNow); nil when nothing can.
	StopNow context.Context
	// FieldManager is the field manager of every write.
	FieldManager string
}
