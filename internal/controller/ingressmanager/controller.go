package ingressmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// Name is the controller's name in --controllers.
const Name = "ingress-manager"

// Event reasons (besides the InvalidError reasons of bad annotations).
const (
	ReasonIngressCreated = "IngressCreated"
	ReasonIngressUpdated = "IngressUpdated"
	ReasonIngressDeleted = "IngressDeleted"
	// ReasonIngressExists: a same-named Ingress not controlled by the Service
	// is in the way; it is left untouched.
	ReasonIngressExists = "IngressExists"
)

// annotationPrefix is the family of the Service annotations this controller reads.
const annotationPrefix = "ingress/"

// Controller keeps an Ingress for every Service annotated ingress/http.
type Controller struct {
	client       kubernetes.Interface
	services     corelisters.ServiceLister
	ingresses    networkinglisters.IngressLister
	recorder     record.EventRecorder
	builder      *Builder
	fieldManager string
	synced       []cache.InformerSynced
	loop         controller.Loop[cache.ObjectName]
	warnedMu     sync.Mutex
	warned       map[cache.ObjectName]string // last Warning sent per Service, to send each once
}

// The shared Service and Ingress informers, in every namespace.
// +kubebuilder:rbac:groups="",resources=services,verbs=list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=list;watch

// New builds the controller on the shared Service and Ingress informers.
func New(ctx context.Context, cctx *controller.Context, cfg Config) (*Controller, error) {
	cfg.FieldManager = cctx.FieldManager
	builder, err := NewBuilder(cfg)
	if err != nil {
		return nil, err
	}
	svcInformer := cctx.InformerFactory.Core().V1().Services()
	ingInformer := cctx.InformerFactory.Networking().V1().Ingresses()
	c := &Controller{
		client:       cctx.KubeClient,
		services:     svcInformer.Lister(),
		ingresses:    ingInformer.Lister(),
		recorder:     cctx.EventRecorder(Name),
		builder:      builder,
		fieldManager: builder.FieldManager(),
		warned:       map[cache.ObjectName]string{},
	}
	c.loop = controller.Loop[cache.ObjectName]{
		Name:         Name,
		Queue:        controller.NewQueue[cache.ObjectName](Name),
		Sync:         c.sync,
		DrainTimeout: cctx.DrainTimeout,
	}
	logger := klog.FromContext(ctx).WithValues("controller", Name)
	opts := cache.HandlerOptions{Logger: ptr.To(logger)}
	svcReg, err := svcInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.updateService,
		DeleteFunc: c.enqueue,
	}, opts)
	if err != nil {
		return nil, fmt.Errorf("adding the Service event handler: %w", err)
	}
	ingReg, err := ingInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueIngress,
		UpdateFunc: c.updateIngress,
		DeleteFunc: c.enqueueIngress,
	}, opts)
	if err != nil {
		return nil, fmt.Errorf("adding the Ingress event handler: %w", err)
	}
	c.synced = []cache.InformerSynced{svcReg.HasSynced, ingReg.HasSynced}
	return c, nil
}

// Name implements controller.Interface.
func (c *Controller) Name() string { return Name }

// HasSynced implements controller.Interface.
func (c *Controller) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Run implements controller.Interface.
func (c *Controller) Run(ctx context.Context, workers int) {
	logger := klog.FromContext(ctx).WithValues("controller", Name)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting ingress-manager")
	defer logger.Info("Stopped ingress-manager")
	c.loop.RunAfterSync(ctx, workers, c.synced...)
}

// enqueue queues a Service's key; it copes with delete tombstones.
func (c *Controller) enqueue(obj any) { controller.EnqueueObject(&c.loop, obj) }

// updateService queues a Service when something the sync reads changed:
// its UID, its ingress/* annotations or its ports. A resync (same
// ResourceVersion) of an annotated Service is queued too, as a cheap
// periodic re-check that writes nothing when converged.
func (c *Controller) updateService(oldObj, newObj any) {
	oldSvc, ok1 := oldObj.(*corev1.Service)
	newSvc, ok2 := newObj.(*corev1.Service)
	if !ok1 || !ok2 {
		c.enqueue(newObj)
		return
	}
	if oldSvc.ResourceVersion == newSvc.ResourceVersion {
		if Enabled(newSvc) {
			c.enqueue(newObj)
		}
		return
	}
	if oldSvc.UID != newSvc.UID ||
		!maps.Equal(ingressAnnotations(oldSvc), ingressAnnotations(newSvc)) ||
		!equality.Semantic.DeepEqual(oldSvc.Spec.Ports, newSvc.Spec.Ports) {
		c.enqueue(newObj)
	}
}

// ingressAnnotations returns the ingress/* annotations of svc.
func ingressAnnotations(svc *corev1.Service) map[string]string {
	var out map[string]string
	for k, v := range svc.Annotations {
		if strings.HasPrefix(k, annotationPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// enqueueIngress queues the Service an Ingress belongs to: the Service of
// the same name (ours, or one a foreign Ingress is in the way of), and the
// controlling Service if it has another name.
func (c *Controller) enqueueIngress(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok || ing == nil {
		utilruntime.HandleError(fmt.Errorf("ingress-manager: unexpected object %T in the Ingress informer", obj))
		return
	}
	key, err := controller.ObjectKey(ing)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("ingress-manager: cannot get the key of an Ingress: %w", err))
		return
	}
	c.loop.Queue.Add(key)
	if ref := metav1.GetControllerOfNoCopy(ing); ref != nil && isServiceRef(ref) && ref.Name != ing.Name {
		// An owner reference's name is not validated by the API server.
		owner := cache.ObjectName{Namespace: ing.Namespace, Name: ref.Name}
		if err := controller.CheckKey(owner); err != nil {
			utilruntime.HandleError(fmt.Errorf("ingress-manager: Ingress %s has a controller reference to an impossible Service: %w", key, err))
			return
		}
		c.loop.Queue.Add(owner)
	}
}

func (c *Controller) updateIngress(oldObj, newObj any) {
	oldIng, ok1 := oldObj.(*networkingv1.Ingress)
	newIng, ok2 := newObj.(*networkingv1.Ingress)
	if ok1 && ok2 && oldIng.ResourceVersion == newIng.ResourceVersion {
		return // resync: the Service's own resync re-checks it
	}
	c.enqueueIngress(newObj)
}

func isServiceRef(ref *metav1.OwnerReference) bool {
	return ref.Kind == "Service" && ref.APIVersion == corev1.SchemeGroupVersion.String()
}

// sync converges the Ingress of one Service key.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("service", klog.KRef(key.Namespace, key.Name))
	ctx = klog.NewContext(ctx, logger)

	svc, err := c.services.Services(key.Namespace).Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading service %s from the cache: %w", key, err)
	}
	if apierrors.IsNotFound(err) {
		svc = nil
		c.forgetWarning(key)
	}
	ing, err := c.ingresses.Ingresses(key.Namespace).Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ingress %s from the cache: %w", key, err)
	}
	if apierrors.IsNotFound(err) {
		ing = nil
	}

	// An Ingress controlled by a Service of this name that is not the
	// current one (deleted, or deleted and recreated) is stale: remove it,
	// so that the current Service (if any) gets a fresh one.
	if ing != nil && isStale(ing, key.Name, svc) {
		return c.deleteIngress(ctx, svc, ing, "its Service no longer exists")
	}
	if svc == nil {
		return nil
	}

	desired, err := c.builder.Desired(svc)
	var invalid *InvalidError
	if errors.As(err, &invalid) {
		// Bad input: tell the user on the Service, write nothing, do not
		// retry (the fix is an edit of the Service, which requeues it).
		c.warnOnce(svc, invalid.Reason, invalid.Message+"; the Ingress is left as it is until the annotations are fixed")
		logger.V(2).Info("Invalid ingress annotations", "reason", invalid.Reason, "message", invalid.Message)
		return nil
	}
	if err != nil {
		return fmt.Errorf("computing the desired ingress of service %s: %w", key, err)
	}

	if ing != nil && !IsControlledBy(ing, svc) {
		// Someone else's Ingress of the same name: never touch it.
		if desired != nil {
			owner := "no controller"
			if ref := metav1.GetControllerOfNoCopy(ing); ref != nil {
				owner = fmt.Sprintf("controller %s %s", ref.Kind, ref.Name)
			}
			c.warnOnce(svc, ReasonIngressExists, fmt.Sprintf(
				"Ingress %s/%s exists and is not controlled by this Service (%s); it is left untouched. Delete or rename it, or remove the %s annotation",
				ing.Namespace, ing.Name, owner, AnnotationHTTP))
		}
		return nil
	}

	switch {
	case desired == nil && ing == nil:
		c.forgetWarning(key)
		return nil
	case desired == nil:
		c.forgetWarning(key)
		return c.deleteIngress(ctx, svc, ing, fmt.Sprintf("the Service no longer has the %s annotation", AnnotationHTTP))
	case ing == nil:
		c.forgetWarning(key)
		return c.create(ctx, svc, desired)
	}
	c.forgetWarning(key)
	needs, err := c.builder.NeedsUpdate(ing, desired)
	if err != nil {
		logger.Info("Cannot tell which fields of the Ingress are ours; re-applying", "err", err)
	}
	if !needs {
		return nil
	}
	return c.update(ctx, svc, desired, ing)
}

// isStale reports whether ing is controlled by a Service named name that is
// not svc (svc nil: no such Service).
func isStale(ing *networkingv1.Ingress, name string, svc *corev1.Service) bool {
	ref := metav1.GetControllerOfNoCopy(ing)
	if ref == nil || !isServiceRef(ref) || ref.Name != name {
		return false
	}
	return svc == nil || ref.UID != svc.UID
}

// An Ingress's owner reference to its Service sets blockOwnerDeletion, which
// the OwnerReferencesPermissionEnforcement admission plugin allows only to
// who may update the Service's finalizers.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=create
// +kubebuilder:rbac:groups="",resources=services/finalizers,verbs=update

// create creates desired with a plain create, the cheapest write the API
// server has (a server-side apply that creates costs it 1.4 to 1.9 times the
// CPU, see `make bench`). A create never merges into an Ingress someone
// else made meanwhile: AlreadyExists means the cache is behind, and the
// Ingress's own event brings the Service back to be looked at again.
//
// The Ingress's fields are then owned by our field manager through an
// Update entry of metadata.managedFields; update moves them to our Apply
// entry the first time the Ingress has to be changed.
func (c *Controller) create(ctx context.Context, svc *corev1.Service, desired *networkingv1.Ingress) error {
	_, err := c.client.NetworkingV1().Ingresses(desired.Namespace).Create(ctx, desired, metav1.CreateOptions{FieldManager: c.fieldManager})
	if apierrors.IsAlreadyExists(err) {
		klog.FromContext(ctx).V(2).Info("Ingress exists already; waiting for it to reach the cache", "ingress", klog.KObj(desired))
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating ingress %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	klog.FromContext(ctx).Info("Created Ingress", "ingress", klog.KObj(desired))
	c.recorder.Eventf(svc, corev1.EventTypeNormal, ReasonIngressCreated, "Created Ingress %s", desired.Name)
	return nil
}

// update restores desired on live, an Ingress svc controls, with a forced
// server-side apply: it takes back fields someone else changed, removes
// fields we own that desired no longer has, and leaves every other field
// alone. live's UID is a precondition, so a replacement is never touched.
//
// An Ingress made by create has its fields owned by our Update entry, which
// an apply cannot remove; first, one JSON patch (with the ResourceVersion
// as a precondition) moves that entry into our Apply entry, as kubectl does
// when it upgrades client-side-applied objects (client-go csaupgrade). This
// happens once per Ingress.
func (c *Controller) update(ctx context.Context, svc *corev1.Service, desired, live *networkingv1.Ingress) error {
	if _, ok := ownEntry(live, c.fieldManager, metav1.ManagedFieldsOperationUpdate); ok {
		done, err := c.upgradeOwnership(ctx, svc, live)
		if err != nil || !done {
			return err
		}
	}
	ac := ApplyConfiguration(desired).WithUID(live.UID)
	if _, err := applyIngress(ctx, c.client, ac, metav1.ApplyOptions{FieldManager: c.fieldManager, Force: true}); err != nil {
		return fmt.Errorf("updating ingress %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	klog.FromContext(ctx).Info("Updated Ingress", "ingress", klog.KObj(desired))
	c.recorder.Eventf(svc, corev1.EventTypeNormal, ReasonIngressUpdated, "Updated Ingress %s", desired.Name)
	return nil
}

// A fresh read, then a JSON patch of managedFields.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;patch

// upgradeOwnership merges our field manager's Update entry of cached's
// managedFields into its Apply entry. The patch replaces the whole list, so
// it is computed from the object as the API server has it (the cache keeps
// our entries only), and carries that object's ResourceVersion: a
// concurrent write makes it fail with a conflict, and the sync is retried.
// It returns false (and writes nothing) when the fresh object is gone or no
// longer controlled by svc: its informer event brings the key back.
func (c *Controller) upgradeOwnership(ctx context.Context, svc *corev1.Service, cached *networkingv1.Ingress) (bool, error) {
	ingresses := c.client.NetworkingV1().Ingresses(cached.Namespace)
	live, err := ingresses.Get(ctx, cached.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading ingress %s/%s to move its fields to server-side apply: %w", cached.Namespace, cached.Name, err)
	}
	if live.UID != cached.UID || !IsControlledBy(live, svc) {
		klog.FromContext(ctx).V(2).Info("Ingress replaced or no longer controlled by the Service since the cache was read; waiting for the cache", "ingress", klog.KObj(live))
		return false, nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(c.fieldManager), c.fieldManager)
	if err != nil {
		return false, fmt.Errorf("moving the fields of ingress %s/%s to server-side apply: %w", cached.Namespace, cached.Name, err)
	}
	if patch == nil {
		return true, nil // done already (the cache is behind)
	}
	if _, err := ingresses.Patch(ctx, live.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: c.fieldManager}); err != nil {
		return false, fmt.Errorf("moving the fields of ingress %s/%s to server-side apply: %w", cached.Namespace, cached.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Moved the Ingress's fields from our Update entry to our Apply entry", "ingress", klog.KObj(live))
	return true, nil
}

// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=delete

// deleteIngress deletes ing, with its UID as a precondition so that a
// replacement created meanwhile is never deleted.
func (c *Controller) deleteIngress(ctx context.Context, svc *corev1.Service, ing *networkingv1.Ingress, why string) error {
	err := c.client.NetworkingV1().Ingresses(ing.Namespace).Delete(ctx, ing.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: ptr.To(ing.UID)},
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting ingress %s/%s: %w", ing.Namespace, ing.Name, err)
	}
	klog.FromContext(ctx).Info("Deleted Ingress", "ingress", klog.KObj(ing), "reason", why)
	if svc != nil {
		c.recorder.Eventf(svc, corev1.EventTypeNormal, ReasonIngressDeleted, "Deleted Ingress %s: %s", ing.Name, why)
	}
	return nil
}

// warnOnce records a Warning Event on svc unless the same warning was
// already recorded for this version of the Service: a resync re-checks the
// Service but does not repeat the Event.
func (c *Controller) warnOnce(svc *corev1.Service, reason, message string) {
	key := cache.MetaObjectToName(svc)
	id := string(svc.UID) + "/" + svc.ResourceVersion + "/" + reason + "/" + message
	c.warnedMu.Lock()
	same := c.warned[key] == id
	c.warned[key] = id
	c.warnedMu.Unlock()
	if !same {
		c.recorder.Event(svc, corev1.EventTypeWarning, reason, message)
	}
}

func (c *Controller) forgetWarning(key cache.ObjectName) {
	c.warnedMu.Lock()
	delete(c.warned, key)
	c.warnedMu.Unlock()
}
