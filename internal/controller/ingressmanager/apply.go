package ingressmanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/kubernetes"
)

// ApplyConfiguration returns the server-side-apply configuration of desired:
// exactly the fields this controller manages (name, namespace, labels,
// annotations, owner references and spec; never status). Empty optional
// fields are left out, as the API server omits them, so that the
// configuration equals what ExtractIngress returns after it was applied.
func ApplyConfiguration(desired *networkingv1.Ingress) *networkingv1ac.IngressApplyConfiguration {
	ac := networkingv1ac.Ingress(desired.Name, desired.Namespace)
	if len(desired.Labels) > 0 {
		ac.WithLabels(desired.Labels)
	}
	if len(desired.Annotations) > 0 {
		ac.WithAnnotations(desired.Annotations)
	}
	for _, ref := range desired.OwnerReferences {
		r := metav1ac.OwnerReference().
			WithAPIVersion(ref.APIVersion).
			WithKind(ref.Kind).
			WithName(ref.Name).
			WithUID(ref.UID)
		if ref.Controller != nil {
			r.WithController(*ref.Controller)
		}
		if ref.BlockOwnerDeletion != nil {
			r.WithBlockOwnerDeletion(*ref.BlockOwnerDeletion)
		}
		ac.WithOwnerReferences(r)
	}

	in := &desired.Spec
	spec := networkingv1ac.IngressSpec()
	if in.IngressClassName != nil {
		spec.WithIngressClassName(*in.IngressClassName)
	}
	if in.DefaultBackend != nil {
		spec.WithDefaultBackend(backendApplyConfiguration(in.DefaultBackend))
	}
	for _, t := range in.TLS {
		tls := networkingv1ac.IngressTLS()
		if len(t.Hosts) > 0 {
			tls.WithHosts(t.Hosts...)
		}
		if t.SecretName != "" {
			tls.WithSecretName(t.SecretName)
		}
		spec.WithTLS(tls)
	}
	for _, r := range in.Rules {
		rule := networkingv1ac.IngressRule()
		if r.Host != "" {
			rule.WithHost(r.Host)
		}
		if r.HTTP != nil {
			http := networkingv1ac.HTTPIngressRuleValue()
			for _, p := range r.HTTP.Paths {
				path := networkingv1ac.HTTPIngressPath().WithBackend(backendApplyConfiguration(&p.Backend))
				if p.Path != "" {
					path.WithPath(p.Path)
				}
				if p.PathType != nil {
					path.WithPathType(*p.PathType)
				}
				http.WithPaths(path)
			}
			rule.WithHTTP(http)
		}
		spec.WithRules(rule)
	}
	return ac.WithSpec(spec)
}

func backendApplyConfiguration(in *networkingv1.IngressBackend) *networkingv1ac.IngressBackendApplyConfiguration {
	b := networkingv1ac.IngressBackend()
	if s := in.Service; s != nil {
		port := networkingv1ac.ServiceBackendPort()
		if s.Port.Name != "" {
			port.WithName(s.Port.Name)
		}
		if s.Port.Number != 0 {
			port.WithNumber(s.Port.Number)
		}
		b.WithService(networkingv1ac.IngressServiceBackend().WithName(s.Name).WithPort(port))
	}
	if r := in.Resource; r != nil {
		ref := corev1ac.TypedLocalObjectReference().WithKind(r.Kind).WithName(r.Name)
		if r.APIGroup != nil {
			ref.WithAPIGroup(*r.APIGroup)
		}
		b.WithResource(ref)
	}
	return b
}

// NeedsUpdate reports whether live differs from desired in a field this
// controller manages, ignoring fields (and annotations) others own.
//
// It compares ApplyConfiguration(desired) with the fields fieldManager owns
// in live, as networkingv1ac.ExtractIngress reads them from our entry of
// metadata.managedFields: the Apply entry, or for an Ingress our create made
// and no apply changed since, the Update entry. They differ when someone
// else changed a field we owned (ownership moved to them), when the desired
// state changed, or when desired no longer has a field we own (e.g. an
// annotation dropped from ingress/annotations); a forced apply fixes each
// case. It is true when live has no entry of fieldManager at all, and when
// it has both (the update merges them, see Controller.update).
//
// live must come from the API server (or an informer cache that keeps our
// managedFields entries). A nil live needs an update (a create). On error it
// returns true with the error, so a caller that only logs still converges.
// It does not check who controls live: check IsControlledBy first.
func NeedsUpdate(live, desired *networkingv1.Ingress, fieldManager string) (bool, error) {
	if desired == nil {
		return false, errors.New("desired ingress is nil")
	}
	if live == nil {
		return true, nil
	}
	entry, hasApply := ownEntry(live, fieldManager, metav1.ManagedFieldsOperationApply)
	updated, hasUpdate := ownEntry(live, fieldManager, metav1.ManagedFieldsOperationUpdate)
	if hasApply == hasUpdate {
		// None: nothing is ours yet. Both: fields only the Update entry owns
		// can neither be compared with the Apply entry nor removed by an
		// apply, so the update merges the two entries first, once.
		return true, nil
	}
	if hasUpdate {
		entry = updated
	}
	owned, err := extract(live, entry)
	if err != nil {
		return true, fmt.Errorf("extract fields of ingress %s/%s owned by %q: %w", live.Namespace, live.Name, fieldManager, err)
	}
	// Status is never ours. The API server does not record it for writes to
	// the main resource (a reset field), but an Update entry made elsewhere
	// (or by the test field manager) may list the empty status a create sends.
	owned.Status = nil
	return !equality.Semantic.DeepEqual(owned, ApplyConfiguration(desired)), nil
}

// extract runs ExtractIngress on a shallow copy of live that keeps only
// entry in managedFields (the conversion walks the whole object, so other
// entries are work and risk for nothing), marked as an Apply entry, the
// only operation ExtractIngress reads. ExtractIngress panics on a malformed
// FieldsV1 (the API server never returns one, but a hand-made object may);
// that panic becomes an error.
func extract(live *networkingv1.Ingress, entry metav1.ManagedFieldsEntry) (ac *networkingv1ac.IngressApplyConfiguration, err error) {
	defer func() {
		if r := recover(); r != nil {
			ac, err = nil, fmt.Errorf("malformed managedFields: %v", r)
		}
	}()
	cp := *live
	entry.Operation = metav1.ManagedFieldsOperationApply
	cp.ManagedFields = []metav1.ManagedFieldsEntry{entry}
	return networkingv1ac.ExtractIngress(&cp, entry.Manager)
}

// NeedsUpdate is NeedsUpdate with the Builder's field manager.
func (b *Builder) NeedsUpdate(live, desired *networkingv1.Ingress) (bool, error) {
	return NeedsUpdate(live, desired, b.fieldManager)
}

// ownEntry returns live's managedFields entry of operation op on the main
// resource for fieldManager. The Apply entry is the one ExtractIngress
// reads; the Update entry is the one a create (or any other write but an
// apply) by fieldManager makes; entries are kept one per API version, the
// most recent first.
func ownEntry(live *networkingv1.Ingress, fieldManager string, op metav1.ManagedFieldsOperationType) (metav1.ManagedFieldsEntry, bool) {
	for _, e := range live.ManagedFields {
		if e.Manager == fieldManager && e.Operation == op && e.Subresource == "" {
			return e, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// ControllerOwner returns a copy of ing's controller OwnerReference, or nil.
func ControllerOwner(ing *networkingv1.Ingress) *metav1.OwnerReference {
	if ing == nil {
		return nil
	}
	return metav1.GetControllerOf(ing)
}

// IsControlledBy reports whether ing's controller OwnerReference is svc:
// apiVersion v1, kind Service, and svc's UID (a Service deleted and recreated
// under the same name does not control the old one's Ingress).
func IsControlledBy(ing *networkingv1.Ingress, svc *corev1.Service) bool {
	if ing == nil || svc == nil {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(ing)
	return ref != nil &&
		ref.APIVersion == corev1.SchemeGroupVersion.String() &&
		ref.Kind == "Service" &&
		ref.UID == svc.UID
}

// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=patch

// applyIngress sends ac by server-side apply, as the typed client's Apply
// does, but without server-side field validation: ac is built from typed Go
// structs, so it cannot carry unknown or duplicate fields, and validating it
// costs the API server a second YAML parse of every apply (about 6% of the
// API server's CPU per apply, in a profile taken under `make bench`).
func applyIngress(ctx context.Context, client kubernetes.Interface, ac *networkingv1ac.IngressApplyConfiguration, opts metav1.ApplyOptions) (*networkingv1.Ingress, error) {
	if ac == nil || ac.ObjectMetaApplyConfiguration == nil || ac.Name == nil || ac.Namespace == nil {
		return nil, errors.New("ingress apply configuration without name or namespace")
	}
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("encoding the apply configuration of ingress %s/%s: %w", *ac.Namespace, *ac.Name, err)
	}
	patchOpts := opts.ToPatchOptions()
	patchOpts.FieldValidation = metav1.FieldValidationIgnore
	return client.NetworkingV1().Ingresses(*ac.Namespace).Patch(ctx, *ac.Name, types.ApplyPatchType, data, patchOpts)
}
