package ingressmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/sets"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// object is an Ingress or an HTTPRoute: what a Service's annotations make.
type object interface {
	metav1.Object
	runtime.Object
	comparable
}

// typedClient is the part of a generated typed client the write path uses.
type typedClient[T object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Both kinds carry an owner reference to their Service with
// blockOwnerDeletion, which the OwnerReferencesPermissionEnforcement
// admission plugin allows only to who may update the Service's finalizers.
// +kubebuilder:rbac:groups="",resources=services/finalizers,verbs=update

// writer is the write path of one kind a Service controls. It is the one
// place that says how an object is written:
//
//   - create: a plain create, the cheapest write the API server has (a
//     server-side apply that creates costs it clearly more CPU, see `make
//     bench`). It never merges into an object someone else made meanwhile:
//     AlreadyExists means the cache is behind, and that object's own event
//     brings the Service back. The fields are then owned by our field
//     manager through an Update entry of metadata.managedFields.
//   - update: the first time the object has to change, one JSON patch (with
//     the ResourceVersion as precondition) moves our Update entry into our
//     Apply entry, as kubectl does when it upgrades client-side-applied
//     objects (client-go csaupgrade); then a forced server-side apply takes
//     back fields someone else changed and removes fields we own that the
//     desired state no longer has, leaving every other field alone. The
//     live UID is a precondition, so a replacement is never touched.
//   - needsUpdate compares the desired apply configuration with the fields
//     our entry owns, so a converged object costs no write.
//   - delete has the UID as precondition.
type writer[T object, AC any] struct {
	// kind is "Ingress" or "HTTPRoute", for errors and logs.
	kind         string
	reasons      writeReasons
	client       func(namespace string) typedClient[T]
	fieldManager string
	// newApplyConfiguration and extract are the kind's generated apply
	// configuration constructor and Extract function.
	newApplyConfiguration func(name, namespace string) *AC
	extract               func(obj T, fieldManager string) (*AC, error)
	// clearStatus empties the status of an apply configuration: status is
	// never ours. The API server does not record it for writes to the main
	// resource, but an Update entry made elsewhere may list the empty status
	// a create sends.
	clearStatus func(ac *AC)
	// created holds, per object this process created and whose informer
	// event has not brought its Service back yet, what the create answered
	// and which version of the Service it was made from: the object at
	// that ResourceVersion and UID is, unchanged, the one created from the
	// desired state of that Service version (desired is a function of the
	// Service alone), so the sync it brings needs no comparison of fields
	// (see createdAs). One entry per create in flight, a few dozen bytes: a
	// cold start holds one per Service until the informer events come back.
	created sync.Map // types.NamespacedName -> createdObject
	// mu guards pending: per object name, the create in flight, and the
	// informer's first event of that name if it came before the create's
	// answer (then the answer tells whether the event was its own object).
	mu      sync.Mutex
	pending map[types.NamespacedName]*pendingCreate
	// requeue queues the Service of a name whose held event the create's
	// answer does not explain (nil: none, in tests of the writer alone).
	requeue func(types.NamespacedName)
}

// pendingCreate is a create in flight, and the event of its name the
// informer delivered meanwhile (nil: none yet).
type pendingCreate struct{ seen *objectVersion }

// objectVersion identifies one version of one object.
type objectVersion struct{ uid, resourceVersion string }

// createdObject is what a create answered, and the version of its owner
// (the Service, or a user's Ingress for the route made from it) the
// created object was made from.
type createdObject struct {
	uid, resourceVersion       string
	serviceUID, serviceVersion string
}

// writeReasons are the Event reasons of one kind's writes, of a same-named
// object of someone else in the way, and of a move to the kind waiting for
// its object to serve.
type writeReasons struct{ created, updated, deleted, exists, waiting string }

// newWriter returns the write path of one kind; client may be nil for
// needsUpdate alone.
func newWriter[T object, AC any](kind string, reasons writeReasons, client func(namespace string) typedClient[T], fieldManager string,
	newApplyConfiguration func(name, namespace string) *AC, extract func(T, string) (*AC, error), clearStatus func(*AC)) *writer[T, AC] {
	return &writer[T, AC]{kind: kind, reasons: reasons, client: client, fieldManager: fieldManager,
		newApplyConfiguration: newApplyConfiguration, extract: extract, clearStatus: clearStatus,
		pending: map[types.NamespacedName]*pendingCreate{}}
}

// applyConfiguration returns the server-side-apply configuration of
// desired: exactly the fields this controller manages (name, namespace,
// labels, annotations, owner references and spec; never status), as
// extract returns them after an apply. It travels through JSON: the apply
// configuration types mirror the API types field for field, and desired
// leaves out every empty optional field, as the API server does. A non-empty
// uid is set as a precondition of the apply.
func (w *writer[T, AC]) applyConfiguration(desired T, uid types.UID) (*AC, error) {
	if uid != "" {
		cp := desired.DeepCopyObject().(T)
		cp.SetUID(uid)
		desired = cp
	}
	data, err := json.Marshal(desired)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s/%s: %w", w.kind, desired.GetNamespace(), desired.GetName(), err)
	}
	ac := w.newApplyConfiguration(desired.GetName(), desired.GetNamespace())
	if err := json.Unmarshal(data, ac); err != nil {
		return nil, fmt.Errorf("decoding %s %s/%s as an apply configuration: %w", w.kind, desired.GetNamespace(), desired.GetName(), err)
	}
	w.clearStatus(ac)
	return ac, nil
}

// converge makes live (zero when there is none) match desired, for the
// Service svc. ok reports whether live is the Service's own object, on
// which the caller may go on: false when it was just created (its informer
// event brings the Service back), and when someone else controls it, which
// r reports as a Warning <kind>Exists ending with fix, what the user can
// do. wrote reports that live was updated: its status is then of the
// version the update replaced, and the caller decides nothing more on it
// (the update's event brings the Service back). The Service's own object
// being deleted is not written (its deletion brings the Service back, and
// a new one is made); the caller goes on, and must not take it for ready
// (see untilServes).
func (w *writer[T, AC]) converge(ctx context.Context, own owner, live, desired T, r *report, fix string) (ok, wrote bool, err error) {
	var zero T
	if live == zero {
		return false, false, w.create(ctx, own.object(), desired, r)
	}
	if !own.owns(live) {
		r.warn(w.reasons.exists, "", fmt.Sprintf("%s; it is left untouched. %s", own.notOurs(w.kind, live), fix))
		return false, false, nil
	}
	// A route made from a user's Ingress is rendered from its canaries
	// and Services too, which the Ingress's version does not cover: it
	// is compared, its create forgotten all the same.
	if created := w.createdAs(live, own.object()); created && own.svc != nil || isBeingDeleted(live) {
		return true, false, nil
	}
	needs, err := w.needsUpdate(live, desired)
	if err != nil {
		klog.FromContext(ctx).Info("Cannot tell which fields of the "+w.kind+" are ours; re-applying", "err", err)
	}
	if !needs {
		return true, false, nil
	}
	if err := w.update(ctx, own, desired, live, r); err != nil {
		return false, false, err
	}
	return true, true, nil
}

// needsUpdate reports whether live differs from desired in a field we
// manage. It is true when live has no entry of our field manager, and when
// it has both an Update and an Apply entry (fields only the Update entry
// owns can neither be compared nor removed by an apply: update merges the
// two entries first, once). On error it returns true with the error, so a
// caller that only logs still converges.
func (w *writer[T, AC]) needsUpdate(live, desired T) (bool, error) {
	var zero T
	if desired == zero {
		return false, fmt.Errorf("desired %s is nil", w.kind)
	}
	if live == zero {
		return true, nil
	}
	entry, hasApply := ownEntry(live, w.fieldManager, metav1.ManagedFieldsOperationApply)
	updated, hasUpdate := ownEntry(live, w.fieldManager, metav1.ManagedFieldsOperationUpdate)
	if hasApply == hasUpdate {
		return true, nil
	}
	if hasUpdate {
		entry = updated
	}
	owned, err := w.safeExtract(live, entry)
	if err != nil {
		return true, fmt.Errorf("extract fields of %s %s/%s owned by %q: %w", w.kind, live.GetNamespace(), live.GetName(), w.fieldManager, err)
	}
	want, err := w.applyConfiguration(desired, "")
	if err != nil {
		return true, err
	}
	return !equality.Semantic.DeepEqual(owned, want), nil
}

// safeExtract turns a panic of a generated Extract function on a malformed
// FieldsV1 (the API server never returns one, but a hand-made object may)
// into an error.
func (w *writer[T, AC]) safeExtract(live T, entry metav1.ManagedFieldsEntry) (ac *AC, err error) {
	defer func() {
		if r := recover(); r != nil {
			ac, err = nil, fmt.Errorf("malformed managedFields: %v", r)
		}
	}()
	entry.Operation = metav1.ManagedFieldsOperationApply
	cp := live.DeepCopyObject().(T)
	cp.SetManagedFields([]metav1.ManagedFieldsEntry{entry})
	ac, err = w.extract(cp, entry.Manager)
	if ac != nil {
		w.clearStatus(ac)
	}
	return ac, err
}

// logKey is the key of the object in log lines: "ingress", "httproute".
func (w *writer[T, AC]) logKey() string { return strings.ToLower(w.kind) }

// ownEntry returns obj's managedFields entry of operation op on the main
// resource for fieldManager. Entries are kept one per API version, the
// most recent first.
func ownEntry(obj metav1.Object, fieldManager string, op metav1.ManagedFieldsOperationType) (metav1.ManagedFieldsEntry, bool) {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == fieldManager && e.Operation == op && e.Subresource == "" {
			return e, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// ownedAnnotations returns the annotation keys of obj that fieldManager
// owns on the main resource (its Apply or Update entry of
// metadata.managedFields): those it wrote.
func ownedAnnotations(obj metav1.Object, fieldManager string) map[string]bool {
	out := map[string]bool{}
	for _, e := range obj.GetManagedFields() {
		if e.Manager != fieldManager || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		for k := range fields.Metadata.Annotations {
			if key, ok := strings.CutPrefix(k, "f:"); ok {
				out[key] = true
			}
		}
	}
	return out
}

// createdAs reports whether live is, unchanged, the object this process
// created from svc (its owner: a Service, or a user's Ingress) as it is now
// (it then needs no update), and forgets the create.
func (w *writer[T, AC]) createdAs(live T, svc metav1.Object) bool {
	v, ok := w.created.LoadAndDelete(types.NamespacedName{Namespace: live.GetNamespace(), Name: live.GetName()})
	if !ok {
		return false
	}
	c := v.(createdObject)
	return c.uid == string(live.GetUID()) && c.resourceVersion == live.GetResourceVersion() &&
		c.serviceUID == string(svc.GetUID()) && c.serviceVersion == svc.GetResourceVersion()
}

// forget drops what create remembered of the object key (its Service is
// gone).
func (w *writer[T, AC]) forget(key types.NamespacedName) { w.created.Delete(key) }

// ownAdd reports whether the informer's Add of key at version v is an
// event of this process's own create from svc's current version, which
// brings no sync: it is held while the create is in flight (the create's
// answer then judges it, see create), or it matches the create's answer
// (which is then forgotten). svc is the Service of key as cached (nil:
// none).
func (w *writer[T, AC]) ownAdd(key types.NamespacedName, v objectVersion, svc *corev1.Service) bool {
	w.mu.Lock()
	if p, ok := w.pending[key]; ok && p.seen == nil {
		p.seen = &v
		w.mu.Unlock()
		return true
	}
	w.mu.Unlock()
	made, ok := w.created.Load(key)
	if !ok {
		return false
	}
	c := made.(createdObject)
	if c.uid != v.uid || c.resourceVersion != v.resourceVersion || svc == nil ||
		string(svc.UID) != c.serviceUID || svc.ResourceVersion != c.serviceVersion {
		return false
	}
	return w.created.CompareAndDelete(key, made)
}

// send sends the create of desired, as pending for ownAdd, and returns its
// answer and whether an event of its name held meanwhile was its own.
// When it was not (or the create failed), the Service is queued again: the
// event it held is handled by that sync.
func (w *writer[T, AC]) send(ctx context.Context, desired T) (T, bool, error) {
	key := types.NamespacedName{Namespace: desired.GetNamespace(), Name: desired.GetName()}
	p := &pendingCreate{}
	w.mu.Lock()
	w.pending[key] = p
	w.mu.Unlock()
	obj, err := w.client(desired.GetNamespace()).Create(ctx, desired, metav1.CreateOptions{FieldManager: w.fieldManager})
	w.mu.Lock()
	delete(w.pending, key)
	seen := p.seen
	w.mu.Unlock()
	if seen == nil {
		return obj, false, err
	}
	var zero T
	if err == nil && obj != zero && string(obj.GetUID()) == seen.uid && obj.GetResourceVersion() == seen.resourceVersion {
		return obj, true, nil
	}
	if w.requeue != nil {
		w.requeue(key)
	}
	return obj, false, err
}

func (w *writer[T, AC]) create(ctx context.Context, svc metav1.Object, desired T, r *report) error {
	obj, seen, err := w.send(ctx, desired)
	if apierrors.IsAlreadyExists(err) {
		klog.FromContext(ctx).V(2).Info(w.kind+" exists already; waiting for it to reach the cache", w.logKey(), klog.KObj(desired))
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", w.kind, desired.GetNamespace(), desired.GetName(), err)
	}
	var zero T
	if !seen && obj != zero && obj.GetUID() != "" && obj.GetResourceVersion() != "" && svc.GetResourceVersion() != "" {
		w.created.Store(types.NamespacedName{Namespace: desired.GetNamespace(), Name: desired.GetName()}, createdObject{
			uid: string(obj.GetUID()), resourceVersion: obj.GetResourceVersion(),
			serviceUID: string(svc.GetUID()), serviceVersion: svc.GetResourceVersion(),
		})
	}
	// At -v=2: a cold start makes one per Service, and the Created Event
	// tells the user at any verbosity.
	klog.FromContext(ctx).V(2).Info("Created "+w.kind, w.logKey(), klog.KObj(desired))
	r.wrote(w.reasons.created, fmt.Sprintf("Created %s %s", w.kind, desired.GetName()))
	return nil
}

func (w *writer[T, AC]) update(ctx context.Context, own owner, desired, live T, r *report) error {
	if _, ok := ownEntry(live, w.fieldManager, metav1.ManagedFieldsOperationUpdate); ok {
		done, err := w.upgradeOwnership(ctx, own, live)
		if err != nil || !done {
			return err
		}
	}
	ac, err := w.applyConfiguration(desired, live.GetUID())
	if err == nil {
		err = w.apply(ctx, desired.GetNamespace(), desired.GetName(), ac)
	}
	if err != nil {
		return fmt.Errorf("updating %s %s/%s: %w", w.kind, desired.GetNamespace(), desired.GetName(), err)
	}
	klog.FromContext(ctx).Info("Updated "+w.kind, w.logKey(), klog.KObj(desired))
	r.wrote(w.reasons.updated, fmt.Sprintf("Updated %s %s", w.kind, desired.GetName()))
	return nil
}

// apply sends ac by server-side apply, as the typed clients' Apply does,
// but without server-side field validation: ac is built from typed Go
// structs, so it cannot carry unknown or duplicate fields, and validating
// it costs the API server a second parse of every apply.
func (w *writer[T, AC]) apply(ctx context.Context, namespace, name string, ac *AC) error {
	data, err := json.Marshal(ac)
	if err != nil {
		return fmt.Errorf("encoding the apply configuration: %w", err)
	}
	opts := metav1.PatchOptions{FieldManager: w.fieldManager, Force: ptr.To(true), FieldValidation: metav1.FieldValidationIgnore}
	_, err = w.client(namespace).Patch(ctx, name, types.ApplyPatchType, data, opts)
	return err
}

// upgradeOwnership merges our Update entry of cached's managedFields into
// our Apply entry. The patch replaces the whole list, so it is computed from
// the object as the API server has it (the cache keeps our entries only),
// and carries that object's ResourceVersion: a concurrent write makes it
// fail with a conflict, and the sync is retried. It returns false (and
// writes nothing) when the fresh object is gone or no longer own's: its
// informer event brings the key back.
func (w *writer[T, AC]) upgradeOwnership(ctx context.Context, own owner, cached T) (bool, error) {
	client := w.client(cached.GetNamespace())
	live, err := client.Get(ctx, cached.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	what := fmt.Sprintf("%s %s/%s", w.kind, cached.GetNamespace(), cached.GetName())
	if err != nil {
		return false, fmt.Errorf("reading %s to move its fields to server-side apply: %w", what, err)
	}
	if live.GetUID() != cached.GetUID() || !own.owns(live) {
		klog.FromContext(ctx).V(2).Info(w.kind+" replaced or no longer its owner's since the cache was read; waiting for the cache", w.logKey(), klog.KObj(live))
		return false, nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(w.fieldManager), w.fieldManager)
	if err != nil {
		return false, fmt.Errorf("moving the fields of %s to server-side apply: %w", what, err)
	}
	if patch == nil {
		return true, nil // done already (the cache is behind)
	}
	if _, err := client.Patch(ctx, live.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: w.fieldManager}); err != nil {
		return false, fmt.Errorf("moving the fields of %s to server-side apply: %w", what, err)
	}
	klog.FromContext(ctx).V(2).Info("Moved the fields of the "+w.kind+" from our Update entry to our Apply entry", w.logKey(), klog.KObj(live))
	return true, nil
}

// delete deletes obj with its UID as a precondition, so that a replacement
// created meanwhile is never deleted, and reports it in r. An object being
// deleted already is left to its finalizers: deleting it again would change
// nothing but repeat the Event on every sync.
func (w *writer[T, AC]) delete(ctx context.Context, obj T, why string, r *report) error {
	return w.deleteAs(ctx, obj, metav1.Preconditions{UID: ptr.To(obj.GetUID())}, why, r)
}

// deleteExact is delete with obj's resourceVersion as a precondition too:
// a user's object is deleted only as it was when the deletion was decided
// (a change since, say of the annotation that asked for it, brings its key
// back instead).
func (w *writer[T, AC]) deleteExact(ctx context.Context, obj T, why string, r *report) error {
	return w.deleteAs(ctx, obj, metav1.Preconditions{UID: ptr.To(obj.GetUID()), ResourceVersion: ptr.To(obj.GetResourceVersion())}, why, r)
}

func (w *writer[T, AC]) deleteAs(ctx context.Context, obj T, pre metav1.Preconditions, why string, r *report) error {
	if isBeingDeleted(obj) {
		return nil
	}
	err := w.client(obj.GetNamespace()).Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &pre})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if apierrors.IsConflict(err) && pre.ResourceVersion != nil {
		klog.FromContext(ctx).V(2).Info("The "+w.kind+" changed since the cache was read; its deletion waits for the cache", w.logKey(), klog.KObj(obj))
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s %s/%s: %w", w.kind, obj.GetNamespace(), obj.GetName(), err)
	}
	klog.FromContext(ctx).Info("Deleted "+w.kind, w.logKey(), klog.KObj(obj), "reason", why)
	r.wrote(w.reasons.deleted, fmt.Sprintf("Deleted %s %s: %s", w.kind, obj.GetName(), why))
	return nil
}

// ApplyConfiguration returns the server-side-apply configuration of desired:
// exactly the fields this controller manages (name, namespace, labels,
// annotations, owner references and spec; never status), as ExtractIngress
// returns them after it was applied.
func ApplyConfiguration(desired *networkingv1.Ingress) (*networkingv1ac.IngressApplyConfiguration, error) {
	return ingressWriter(nil, "").applyConfiguration(desired, "")
}

// A new Ingress is a create; changes are server-side applies (patch); the
// first change after a create reads the Ingress afresh (get) and moves the
// create's field ownership to the apply (a JSON patch); delete when the
// annotation or the Service goes. On a move to an HTTPRoute a JSON patch
// of its annotations withdraws it from external-dns for the DNS drain.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;create;patch;delete

// ingressWriter is the write path of Ingresses (client may be nil for
// needsUpdate alone).
func ingressWriter(client networkingv1client.NetworkingV1Interface, fieldManager string) *writer[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration] {
	ingresses := func(namespace string) typedClient[*networkingv1.Ingress] {
		return client.Ingresses(namespace)
	}
	return newWriter("Ingress", writeReasons{ReasonIngressCreated, ReasonIngressUpdated, ReasonIngressDeleted, ReasonIngressExists, ReasonWaitingForIngress}, ingresses, fieldManager, networkingv1ac.Ingress, extractIngress,
		func(ac *networkingv1ac.IngressApplyConfiguration) { ac.Status = nil })
}

// HTTPRoutes are written as Ingresses are (see ingressWriter), withdrawn
// from external-dns alike on a move back to an Ingress.
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;create;patch;delete

// routeWriter is the write path of HTTPRoutes (client may be nil for
// needsUpdate alone).
func routeWriter(client gatewayv1client.GatewayV1Interface, fieldManager string) *writer[*gatewayv1.HTTPRoute, gatewayv1ac.HTTPRouteApplyConfiguration] {
	routes := func(namespace string) typedClient[*gatewayv1.HTTPRoute] {
		return client.HTTPRoutes(namespace)
	}
	return newWriter("HTTPRoute", writeReasons{ReasonHTTPRouteCreated, ReasonHTTPRouteUpdated, ReasonHTTPRouteDeleted, ReasonHTTPRouteExists, ReasonWaitingForHTTPRoute}, routes, fieldManager, gatewayv1ac.HTTPRoute, extractHTTPRoute,
		func(ac *gatewayv1ac.HTTPRouteApplyConfiguration) { ac.Status = nil })
}

// isControlledBy reports whether obj's controller OwnerReference is svc:
// apiVersion v1, kind Service, and svc's UID (a Service deleted and
// recreated under the same name does not control the old one's objects).
func isControlledBy(obj metav1.Object, svc *corev1.Service) bool {
	if obj == nil || svc == nil {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && isServiceRef(ref) && ref.UID == svc.UID
}

func isServiceRef(ref *metav1.OwnerReference) bool {
	return ref.Kind == "Service" && ref.APIVersion == corev1.SchemeGroupVersion.String()
}

// isBeingDeleted reports whether obj has a deletionTimestamp: a finalizer
// holds it while what serves it is torn down, and its status (an address,
// Accepted=True) still shows what it was. It is never the new home of a
// Service that moves, and never deleted again.
func isBeingDeleted(obj metav1.Object) bool { return obj.GetDeletionTimestamp() != nil }

// extractIngress is networkingv1ac.ExtractIngress, on the schema of the
// types an Ingress reaches (zz_generated.schema.go) instead of every
// built-in type's: the generated function parses the whole embedded schema
// on first use, megabytes of heap for one type.
func extractIngress(ing *networkingv1.Ingress, fieldManager string) (*networkingv1ac.IngressApplyConfiguration, error) {
	t, err := ingressType()
	if err != nil {
		return nil, err
	}
	ac := &networkingv1ac.IngressApplyConfiguration{}
	if err := managedfields.ExtractInto(ing, t, fieldManager, ac, ""); err != nil {
		return nil, err
	}
	ac.WithName(ing.Name).WithNamespace(ing.Namespace).WithKind("Ingress").WithAPIVersion("networking.k8s.io/v1")
	return ac, nil
}

// extractHTTPRoute is gatewayv1ac.ExtractHTTPRoute, as extractIngress is
// ExtractIngress.
func extractHTTPRoute(route *gatewayv1.HTTPRoute, fieldManager string) (*gatewayv1ac.HTTPRouteApplyConfiguration, error) {
	t, err := httpRouteType()
	if err != nil {
		return nil, err
	}
	ac := &gatewayv1ac.HTTPRouteApplyConfiguration{}
	if err := managedfields.ExtractInto(route, t, fieldManager, ac, ""); err != nil {
		return nil, err
	}
	ac.WithName(route.Name).WithNamespace(route.Namespace).WithKind("HTTPRoute").WithAPIVersion("gateway.networking.k8s.io/v1")
	return ac, nil
}

var (
	ingressType   = parseableType(ingressSchemaYAML, "io.k8s.api.networking.v1.Ingress")
	httpRouteType = parseableType(httpRouteSchemaYAML, "io.k8s.sigs.gateway-api.apis.v1.HTTPRoute")
)

// parseableType returns a function that parses schema once, on first use,
// and returns its type name.
func parseableType(schema, name string) func() (typed.ParseableType, error) {
	return sync.OnceValues(func() (typed.ParseableType, error) {
		p, err := typed.NewParser(typed.YAMLObject(schema))
		if err != nil {
			return typed.ParseableType{}, fmt.Errorf("parsing the schema of %s: %w", name, err)
		}
		t := p.Type(name)
		if !t.IsValid() {
			return typed.ParseableType{}, fmt.Errorf("the schema has no type %s", name)
		}
		return t, nil
	})
}

// urlFieldManager is the field manager of the URL annotation alone, apart
// from the objects' so that it is plain in managedFields who wrote it.
const urlFieldManager = "ingress-manager-url"

// The URL is written into one annotation of the Service by a JSON patch that
// names that annotation alone, with the Service's UID as a test.
// +kubebuilder:rbac:groups="",resources=services,verbs=patch

// publishURL makes the Service's URL annotation say url ("": none), when
// the annotation is written at all and says otherwise. The patch touches
// that one annotation, and only the Service the intent was parsed from; r's
// events are then of the version it makes.
func (c *Controller) publishURL(ctx context.Context, svc *corev1.Service, in *Intent, url string, r *report) error {
	key := c.builder.urlAnnotation
	if key == "" || url == in.PublishedURL {
		return nil
	}
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": string(svc.UID)}}
	switch {
	case url == "":
		ops = append(ops, map[string]any{"op": "test", "path": path, "value": in.PublishedURL}, map[string]any{"op": "remove", "path": path})
	case len(svc.Annotations) == 0:
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{key: url}})
	default:
		ops = append(ops, map[string]any{"op": "add", "path": path, "value": url})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encoding the URL patch: %w", err)
	}
	written, err := c.serviceClient.Services(svc.Namespace).Patch(ctx, svc.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: urlFieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return nil // gone: nothing to say the URL of
	case apierrors.IsInvalid(err):
		// A test failed: the Service is not as cached (a replacement, or
		// the cache behind our last write); its own update brings it back.
		klog.FromContext(ctx).V(2).Info("The Service changed since the cache was read; its URL waits for the cache", "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("writing annotation %s of service %s/%s: %w", key, svc.Namespace, svc.Name, err)
	}
	klog.FromContext(ctx).Info("Wrote the Service's URL", "annotation", key, "url", url)
	if written != nil {
		r.version = written.ResourceVersion
	}
	return nil
}
