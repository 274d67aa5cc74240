package ingressmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// DefaultDNSDrain is Config.DNSDrain's default: external-dns's default
// --interval (1m), for it to move the record, plus the 300s TTL most DNS
// providers give a record that external-dns sets no TTL on, for resolvers
// to forget the old address.
const DefaultDNSDrain = 6 * time.Minute

// Annotation keys written on the Ingress or HTTPRoute a Service moves away
// from, while it drains (never on a Service, never read as a setting).
const (
	// AnnotationExternalDNSController is external-dns's controller
	// annotation from its v0.22.0 on: its ingress and gateway-httproute
	// sources skip an object whose value is not "dns-controller". The
	// controller writes "ingress-manager-withdrawn" into it, so that the
	// record follows the new object while the old one still serves.
	AnnotationExternalDNSController = "external-dns.kubernetes.io/controller"
	// AnnotationExternalDNSControllerLegacy is the same annotation as read
	// by every external-dns before v0.22.0 (the ingress source since v0.1.0,
	// the gateway-httproute source since it appeared in v0.12.0), and by
	// v0.23.0 on with --enable-legacy-annotation-prefix. The controller
	// writes both.
	AnnotationExternalDNSControllerLegacy = "external-dns.alpha.kubernetes.io/controller"
	// AnnotationDNSWithdrawn holds when (RFC 3339, the withdrawing
	// leader's clock) the object was withdrawn from external-dns; the
	// object is deleted --ingress-move-dns-drain after that, on the API
	// server's clock (see withdrawnFor). Kept on the object, the drain
	// survives a restart.
	AnnotationDNSWithdrawn = "ingress/dns-withdrawn"
	// AnnotationDNSControllerSaved holds, as a JSON object, the values
	// external-dns's controller annotations had on the object before it was
	// withdrawn (set by its user, to pick an external-dns or keep the host
	// out of DNS): returned to external-dns, the object gets them back
	// instead of losing them. Absent when it had none.
	AnnotationDNSControllerSaved = "ingress/dns-controller-saved"
	// AnnotationDNSControllerOwn lists, separated by commas, the keys of
	// ingress/dns-controller-saved whose values the controller had written
	// itself (from the Service's ingress/annotations, owned by its field
	// manager): returned to external-dns, the object gets those back under
	// the controller's field manager, so that ingress/annotations stays in
	// charge of them (removing one there removes it from the object); the
	// others, set on the object by someone else, under the DNS one. Absent
	// when there are none.
	AnnotationDNSControllerOwn = "ingress/dns-controller-own"
)

// bookkeepingAnnotations are the annotations the controller keeps on an
// Ingress or HTTPRoute for itself: never taken from ingress/annotations,
// whose value would fight the controller's own.
var bookkeepingAnnotations = []string{AnnotationDNSWithdrawn, AnnotationDNSControllerSaved, AnnotationDNSControllerOwn}

// withdrawnValue is what the controller writes into external-dns's
// controller annotations: anything but "dns-controller" makes its sources
// skip the object; this one says who did it.
const withdrawnValue = "ingress-manager-withdrawn"

// externalDNSControllerKeys are the controller annotations of the external-dns
// releases in use: the current prefix and the one before v0.22.0.
var externalDNSControllerKeys = []string{AnnotationExternalDNSController, AnnotationExternalDNSControllerLegacy}

// Event reasons of the DNS cut-over of a move between Ingress and HTTPRoute.
const (
	// ReasonWithdrawnFromDNS (Normal): the Ingress or HTTPRoute the Service
	// moves away from was withdrawn from external-dns once its replacement
	// was ready; it keeps serving until --ingress-move-dns-drain passed.
	ReasonWithdrawnFromDNS = "WithdrawnFromDNS"
	// ReasonReturnedToDNS (Normal): a withdrawn Ingress or HTTPRoute was
	// given back to external-dns: the Service moved back to it, or its
	// replacement is no longer ready.
	ReasonReturnedToDNS = "ReturnedToDNS"
)

// dnsFieldManager is the field manager of the withdrawal annotations alone,
// apart from the objects' own so that it is plain in managedFields who wrote
// them, and so that the server-side apply of the object's fields never
// takes them away.
const dnsFieldManager = "ingress-manager-dns"

// cutover is the DNS side of a move between Ingress and HTTPRoute. Once the
// new object is ready (and --ingress-move-settle passed), the old one is
// withdrawn from external-dns (its controller annotations, and the time, on
// the object itself), kept serving for drain while DNS caches let go of its
// address, then deleted. Everything it waits on is on the API server, so a
// restart resumes the drain where it was.
type cutover struct {
	drain time.Duration
	now   func() time.Time
}

// withdrawnAt returns when obj was withdrawn from external-dns, and false
// when it is not withdrawn (completely: a controller annotation missing or
// changed, or a time that does not parse, is not withdrawn).
func withdrawnAt(obj metav1.Object) (time.Time, bool) {
	ann := obj.GetAnnotations()
	for _, k := range externalDNSControllerKeys {
		if ann[k] != withdrawnValue {
			return time.Time{}, false
		}
	}
	v, ok := ann[AnnotationDNSWithdrawn]
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false
	}
	return at, true
}

// withdrawalMarked reports whether obj carries any trace of a withdrawal:
// it must be returned to external-dns before it is taken for ready.
func withdrawalMarked(obj metav1.Object) bool {
	ann := obj.GetAnnotations()
	for _, k := range bookkeepingAnnotations {
		if _, ok := ann[k]; ok {
			return true
		}
	}
	for _, k := range externalDNSControllerKeys {
		if ann[k] == withdrawnValue {
			return true
		}
	}
	return false
}

// retire takes from's object, the old object of a move whose replacement
// is ready, out of service: with no drain it is deleted at once; otherwise
// it is withdrawn from external-dns, and deleted once the drain passed
// since. A user's Ingress (from.user) is withdrawn even with no drain, and
// once drained is deleted only when from.deleteDrained, as it was then;
// otherwise it stays, withdrawn. The wait is a requeue, never a sleep.
func retire[T object, AC any](ctx context.Context, from end[T, AC], d cutover, why string, r *report) error {
	w, obj := from.w, from.obj
	if isBeingDeleted(obj) {
		return nil
	}
	if d.drain <= 0 && !from.user {
		return from.delete(ctx, why, r)
	}
	at, ok := withdrawnAt(obj)
	if !ok {
		if err := w.withdraw(ctx, obj, d.now(), d.drain, from.user && !from.deleteDrained, why, r); err != nil || d.drain <= 0 {
			return err // with no drain, the withdrawal's event brings the owner back
		}
		return &controller.RequeueAfter{Delay: d.drain}
	}
	if d.drain <= 0 {
		return drained(ctx, from, why, at, d, r)
	}
	// This clock only says when to look: the withdrawal's time on the
	// object is the writer's clock, maybe another leader's. A time ahead
	// of this clock waits one drain at most.
	now := d.now()
	left := min(d.drain-now.Sub(at), d.drain)
	if left > 0 && !at.After(now) {
		klog.FromContext(ctx).V(4).Info("Draining the "+w.kind+" withdrawn from external-dns", w.logKey(), klog.KObj(obj), "withdrawn", at, "left", left)
		return &controller.RequeueAfter{Delay: left}
	}
	if from.user && !from.deleteDrained && left <= 0 {
		// Nothing is deleted: this clock's word is enough, and a moved
		// Ingress costs no request to the API server at each resync.
		return drained(ctx, from, why, at, d, r)
	}
	// Whether the drain passed is the API server's clock's to say, from
	// the time it recorded for the withdrawal to its now: two leaders'
	// clocks that disagree neither cut the drain short nor lengthen it.
	elapsed, current, err := w.withdrawnFor(ctx, obj, at)
	switch {
	case err != nil:
		klog.FromContext(ctx).Info("Cannot read the API server's clock; the drain is measured by this one", w.logKey(), klog.KObj(obj), "err", err)
	case !current:
		return nil // gone or changed: its event brings the Service back
	default:
		left = min(d.drain-elapsed, d.drain)
	}
	if left > 0 {
		klog.FromContext(ctx).V(4).Info("Draining the "+w.kind+" withdrawn from external-dns", w.logKey(), klog.KObj(obj), "withdrawn", at, "left", left)
		return &controller.RequeueAfter{Delay: left}
	}
	return drained(ctx, from, why, at, d, r)
}

// delete deletes e's object, one the controller made: with its UID as a
// precondition, and, for a route made from a user's Ingress (which no
// controller reference holds: its marker does, see isMigratedFrom), its
// resourceVersion too, so that a route its user took since the cache was
// read (the marker removed, say) is never deleted.
func (e end[T, AC]) delete(ctx context.Context, why string, r *report) error {
	if metav1.GetControllerOfNoCopy(e.obj) == nil {
		return e.w.deleteExact(ctx, e.obj, why, r)
	}
	return e.w.delete(ctx, e.obj, why, r)
}

// drained is retire's last step, once from's object was withdrawn at and
// the drain passed: it is deleted, unless it is a user's Ingress that did
// not ask for that (it stays, withdrawn: the move is done).
func drained[T object, AC any](ctx context.Context, from end[T, AC], why string, at time.Time, d cutover, r *report) error {
	why = fmt.Sprintf("%s; withdrawn from external-dns at %s, the DNS drain (%v) passed", why, at.UTC().Format(time.RFC3339), d.drain)
	switch {
	case !from.user:
		return from.delete(ctx, why, r)
	case from.deleteDrained:
		return from.w.deleteExact(ctx, from.obj, why+", and its "+AnnotationDeleteAfterMove+" asks for its deletion", r)
	}
	r.normal(ReasonMovedToHTTPRoute, string(from.obj.GetUID()), fmt.Sprintf("Moved %s %s to its HTTPRoute: %s. It stays, withdrawn from external-dns; set %s: \"true\" to have it deleted, or remove %s to move back",
		from.w.kind, from.obj.GetName(), why, AnnotationDeleteAfterMove, AnnotationGateway))
	return nil
}

// dnsClockFieldManager is the field manager of the dry-run write that reads
// the API server's clock (withdrawnFor); nothing is ever stored under it.
const dnsClockFieldManager = "ingress-manager-dns-clock"

// annotationDNSClock is the annotation that dry-run write adds; never
// stored.
const annotationDNSClock = "ingress/dns-clock"

// withdrawnFor returns how long ago obj, withdrawn from external-dns, was
// withdrawn, on the API server's clock: from the time the API server
// recorded for the DNS field manager's write (its metadata.managedFields
// entry; at, the withdrawal annotation's time, for an object withdrawn
// before that entry was looked at) to the time it records for a dry-run
// write, which it answers as if stored and stores nothing. current is false
// (with no error) when obj is gone or no longer the cached one.
func (w *writer[T, AC]) withdrawnFor(ctx context.Context, obj T, at time.Time) (elapsed time.Duration, current bool, err error) {
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": string(obj.GetUID())},
		{"op": "add", "path": annotationPath(annotationDNSClock), "value": ""},
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return 0, false, fmt.Errorf("encoding the clock read of %s %s/%s: %w", w.kind, obj.GetNamespace(), obj.GetName(), err)
	}
	live, err := w.client(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: dnsClockFieldManager, DryRun: []string{metav1.DryRunAll}})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("reading the API server's clock by a dry-run patch of %s %s/%s: %w", w.kind, obj.GetNamespace(), obj.GetName(), err)
	}
	now, ok := ownEntry(live, dnsClockFieldManager, metav1.ManagedFieldsOperationUpdate)
	if !ok || now.Time == nil {
		return 0, false, fmt.Errorf("the dry-run patch of %s %s/%s was answered without its time in metadata.managedFields", w.kind, obj.GetNamespace(), obj.GetName())
	}
	start := at
	if e, ok := ownEntry(live, dnsFieldManager, metav1.ManagedFieldsOperationUpdate); ok && e.Time != nil {
		start = e.Time.Time
	}
	if start.Truncate(time.Second).Equal(start) {
		// The API server records managedFields times to the second: the
		// withdrawal may have been up to a second later. Counting from
		// the next second never cuts the drain short (now, truncated
		// too, only lengthens it).
		start = start.Add(time.Second)
	}
	return now.Time.Sub(start), true, nil
}

// savedControllers returns the user's values of external-dns's controller
// annotations that a withdrawal of obj saved (none when there are none, or
// the record does not parse: then the keys are removed on return, as when
// the user had none).
func savedControllers(ann map[string]string) map[string]string {
	saved := map[string]string{}
	if v, ok := ann[AnnotationDNSControllerSaved]; ok {
		if err := json.Unmarshal([]byte(v), &saved); err != nil {
			return map[string]string{}
		}
	}
	return saved
}

// ownSaved returns the keys of the saved controller annotations whose
// values the controller had written itself (AnnotationDNSControllerOwn).
func ownSaved(ann map[string]string) []string {
	v := ann[AnnotationDNSControllerOwn]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// ownsAnnotation reports whether obj's managedFields give annotation key to
// fieldManager (either of its entries: an apply, or the create's update).
func ownsAnnotation(obj metav1.Object, fieldManager, key string) bool {
	for _, op := range []metav1.ManagedFieldsOperationType{metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate} {
		e, ok := ownEntry(obj, fieldManager, op)
		if !ok || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(e.FieldsV1.Raw, &fields) != nil {
			continue
		}
		if _, ok := fields.Metadata.Annotations["f:"+key]; ok {
			return true
		}
	}
	return false
}

// withdraw writes external-dns's controller annotations and the time into
// obj, by a JSON patch that names those annotations alone and tests obj's
// UID, so a replacement is never touched. Values of the controller
// annotations that are not the controller's own are saved on obj, for
// restore to put back, and so is which of them the controller had written
// itself (its field manager owns them: they come from ingress/annotations).
func (w *writer[T, AC]) withdraw(ctx context.Context, obj T, now time.Time, drain time.Duration, kept bool, why string, r *report) error {
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": string(obj.GetUID())}}
	set := map[string]string{AnnotationDNSWithdrawn: now.UTC().Format(time.RFC3339Nano)}
	keys := append(slices.Clone(externalDNSControllerKeys), AnnotationDNSWithdrawn)
	saved := savedControllers(obj.GetAnnotations())
	own := sets.New(ownSaved(obj.GetAnnotations())...)
	for _, k := range externalDNSControllerKeys {
		if v, ok := obj.GetAnnotations()[k]; ok && v != withdrawnValue {
			saved[k] = v
			if ownsAnnotation(obj, w.fieldManager, k) {
				own.Insert(k)
			} else {
				own.Delete(k)
			}
		}
		set[k] = withdrawnValue
	}
	if len(saved) > 0 {
		data, err := json.Marshal(saved)
		if err != nil {
			return fmt.Errorf("encoding the controller annotations of %s %s/%s: %w", w.kind, obj.GetNamespace(), obj.GetName(), err)
		}
		set[AnnotationDNSControllerSaved] = string(data)
		keys = append(keys, AnnotationDNSControllerSaved)
	}
	if own.Len() > 0 {
		set[AnnotationDNSControllerOwn] = strings.Join(sets.List(own), ",")
		keys = append(keys, AnnotationDNSControllerOwn)
	}
	if len(obj.GetAnnotations()) == 0 {
		// The test (null: absent) keeps a cache behind the API server from
		// replacing annotations it has not seen.
		ops = append(ops, map[string]any{"op": "test", "path": "/metadata/annotations", "value": nil},
			map[string]any{"op": "add", "path": "/metadata/annotations", "value": set})
	} else {
		for _, k := range keys {
			ops = append(ops, map[string]any{"op": "add", "path": annotationPath(k), "value": set[k]})
		}
	}
	done, err := w.patchAnnotations(ctx, obj, dnsFieldManager, ops)
	if err != nil || !done {
		return err
	}
	klog.FromContext(ctx).Info("Withdrew the "+w.kind+" from external-dns", w.logKey(), klog.KObj(obj), "drain", drain)
	then := fmt.Sprintf("it keeps serving until %s, when it is deleted", now.Add(drain).UTC().Format(time.RFC3339))
	if kept {
		then = "it stays, withdrawn, and is not deleted"
	}
	r.wrote(ReasonWithdrawnFromDNS, fmt.Sprintf("Withdrew %s %s from external-dns (%s): %s", w.kind, obj.GetName(), why, then))
	return nil
}

// restore removes the withdrawal annotations from obj, each with a test of
// the value it had in the cache: a controller annotation someone else set
// is not ours to remove. A controller annotation the withdrawal saved the
// user's value of gets that value back: under the controller's own field
// manager when the controller had written it (AnnotationDNSControllerOwn),
// first and by a patch of its own, else with the rest under the DNS one.
// (The API server gives a field to the manager that last changed it: a
// value of ingress/annotations written back by the DNS field manager would
// be its, and stay on the object once removed from ingress/annotations,
// keeping the object out of DNS for good. The controller's field manager's
// update is merged into its apply by its next update, see update.) It does
// nothing to an object without them, or one being deleted. It reports
// whether it wrote.
func (w *writer[T, AC]) restore(ctx context.Context, obj T, why string, r *report) (bool, error) {
	if isBeingDeleted(obj) || !withdrawalMarked(obj) {
		return false, nil
	}
	ann := obj.GetAnnotations()
	saved := savedControllers(ann)
	own := sets.New(ownSaved(ann)...)
	uid := map[string]any{"op": "test", "path": "/metadata/uid", "value": string(obj.GetUID())}
	ops, ownOps := []map[string]any{uid}, []map[string]any{uid}
	for _, k := range bookkeepingAnnotations {
		if v, ok := ann[k]; ok {
			p := annotationPath(k)
			ops = append(ops, map[string]any{"op": "test", "path": p, "value": v}, map[string]any{"op": "remove", "path": p})
		}
	}
	for _, k := range externalDNSControllerKeys {
		if ann[k] != withdrawnValue {
			continue
		}
		p := annotationPath(k)
		test := map[string]any{"op": "test", "path": p, "value": withdrawnValue}
		switch v, ok := saved[k]; {
		case ok && own.Has(k):
			ownOps = append(ownOps, test, map[string]any{"op": "replace", "path": p, "value": v})
		case ok:
			ops = append(ops, test, map[string]any{"op": "replace", "path": p, "value": v})
		default:
			ops = append(ops, test, map[string]any{"op": "remove", "path": p})
		}
	}
	if len(ownOps) > 1 {
		// First: until the DNS patch below, the bookkeeping annotations
		// still say the object is withdrawn, and the next sync finishes
		// the return if that patch fails.
		done, err := w.patchAnnotations(ctx, obj, w.fieldManager, ownOps)
		if err != nil || !done {
			return false, err
		}
	}
	done, err := w.patchAnnotations(ctx, obj, dnsFieldManager, ops)
	if err != nil || !done {
		return false, err
	}
	klog.FromContext(ctx).Info("Returned the "+w.kind+" to external-dns", w.logKey(), klog.KObj(obj), "reason", why)
	r.wrote(ReasonReturnedToDNS, fmt.Sprintf("Returned %s %s to external-dns: %s", w.kind, obj.GetName(), why))
	return true, nil
}

// patchAnnotations sends the JSON patch ops to obj with fieldManager. It
// reports false, with no error, when obj is gone or is not the object the
// ops test for (replaced, or the cache behind): its own event brings the
// Service back.
func (w *writer[T, AC]) patchAnnotations(ctx context.Context, obj T, fieldManager string, ops []map[string]any) (bool, error) {
	patch, err := json.Marshal(ops)
	if err != nil {
		return false, fmt.Errorf("encoding the DNS patch of %s %s/%s: %w", w.kind, obj.GetNamespace(), obj.GetName(), err)
	}
	_, err = w.client(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsInvalid(err):
		// A test failed: the API server's object is not the cached one.
		klog.FromContext(ctx).V(2).Info("The "+w.kind+" changed since the cache was read; its DNS annotations wait for the cache", w.logKey(), klog.KObj(obj), "err", err)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("writing the DNS annotations of %s %s/%s: %w", w.kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return true, nil
}

// annotationPath is the JSON pointer of annotation key.
func annotationPath(key string) string {
	return "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
