// Package podlogger is the pod-logger controller, in the shape of the
// client-go workqueue example. It watches Pods and logs every add, update and delete,
// saying what changed.
package podlogger

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// Name is the controller's name in --controllers.
const Name = "pod-logger"

// MaxRetries is how often a failing sync is retried before its key is
// dropped (and logged), as the client-go workqueue example does.
const MaxRetries = 5

// Controller logs Pod changes.
type Controller struct {
	controller.Base
	lister corelisters.PodLister

	// seen is the state last logged per Pod, to say what changed. Only the
	// worker syncing a key touches its entry, but workers share the map.
	mu   sync.Mutex
	seen map[cache.ObjectName]podState
}

// podState is what the log lines compare between two syncs of a Pod.
type podState struct {
	uid             types.UID
	resourceVersion string
	phase           corev1.PodPhase
	node            string
	ready           bool
	restarts        int32
	deleting        bool
}

// The shared Pod informer, in every namespace.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// New builds the controller on the shared Pod informer.
func New(ctx context.Context, cctx *controller.Context) (*Controller, error) {
	informer := cctx.Informers.Pods()
	c := &Controller{
		lister: informer.Lister(),
		seen:   map[cache.ObjectName]podState{},
	}
	c.Base = controller.NewBase(ctx, cctx, Name, c.sync)
	c.Loop.MaxRetries = MaxRetries
	if err := c.AddEventHandler(informer.Informer(), c.Handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// sync logs the Pod's current state, or its deletion.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx)
	pod, err := c.lister.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		_, known := c.seen[key]
		delete(c.seen, key)
		c.mu.Unlock()
		logger.Info(fmt.Sprintf("Pod %s does not exist anymore", key.String()), "pod", klog.KRef(key.Namespace, key.Name), "known", known)
		return nil
	}
	if err != nil {
		return fmt.Errorf("fetching pod %s from the cache: %w", key, err)
	}

	now := stateOf(pod)
	c.mu.Lock()
	before, known := c.seen[key]
	c.seen[key] = now
	c.mu.Unlock()

	event, changes := describe(before, known, now)
	if event == "" {
		return nil // same ResourceVersion as last logged: nothing to say
	}
	logger.Info("Sync/Add/Update for Pod "+pod.GetName(),
		"pod", klog.KObj(pod), "event", event, "changes", changes,
		"phase", now.phase, "node", now.node, "ready", now.ready, "restarts", now.restarts)
	return nil
}

func stateOf(pod *corev1.Pod) podState {
	s := podState{
		uid:             pod.UID,
		resourceVersion: pod.ResourceVersion,
		phase:           pod.Status.Phase,
		node:            pod.Spec.NodeName,
		deleting:        pod.DeletionTimestamp != nil,
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			s.ready = cond.Status == corev1.ConditionTrue
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		s.restarts += cs.RestartCount
	}
	return s
}

// describe names the event ("added", "updated", "recreated", or "" when
// nothing changed) and lists what changed between two logged states.
func describe(before podState, known bool, now podState) (event, changes string) {
	switch {
	case !known:
		return "added", "none"
	case before.uid != now.uid:
		return "recreated", fmt.Sprintf("uid: %s -> %s (deleted and created again under the same name)", before.uid, now.uid)
	case before.resourceVersion == now.resourceVersion:
		return "", ""
	}
	var diffs []string
	if before.phase != now.phase {
		diffs = append(diffs, fmt.Sprintf("phase: %q -> %q", before.phase, now.phase))
	}
	if before.node != now.node {
		diffs = append(diffs, fmt.Sprintf("node: %q -> %q", before.node, now.node))
	}
	if before.ready != now.ready {
		diffs = append(diffs, fmt.Sprintf("ready: %t -> %t", before.ready, now.ready))
	}
	if before.restarts != now.restarts {
		diffs = append(diffs, fmt.Sprintf("restarts: %d -> %d", before.restarts, now.restarts))
	}
	if !before.deleting && now.deleting {
		diffs = append(diffs, "deletion requested")
	}
	if len(diffs) == 0 {
		return "updated", "metadata or spec only"
	}
	return "updated", strings.Join(diffs, ", ")
}
