package app

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CacheTransform is the informers' transform: it keeps the cache lean.
//   - managedFields entries of every field manager but fieldManager are
//     dropped: the cache holds what a controller needs to tell which fields
//     it owns, not the bookkeeping of every other writer;
//   - the kubectl.kubernetes.io/last-applied-configuration annotation (a copy
//     of the whole object) is dropped from Services and Pods, which no
//     controller here writes back;
//   - Services keep only what ingress-manager, their only reader, uses:
//     metadata (but labels), annotations and spec.ports. Labels, the rest of
//     the spec (selector, cluster IPs, ...) and the status go, a large part
//     of a cached Service. A controller that comes to read more of a
//     Service must keep it here.
func CacheTransform(fieldManager string) func(any) (any, error) {
	return func(obj any) (any, error) {
		acc, ok := obj.(metav1.ObjectMetaAccessor)
		if !ok {
			return obj, nil
		}
		meta := acc.GetObjectMeta()
		if mf := meta.GetManagedFields(); len(mf) > 0 {
			var kept []metav1.ManagedFieldsEntry
			for _, e := range mf {
				if e.Manager == fieldManager {
					kept = append(kept, e)
				}
			}
			meta.SetManagedFields(kept)
		}
		switch obj.(type) {
		case *corev1.Service, *corev1.Pod:
			if ann := meta.GetAnnotations(); ann != nil {
				if _, ok := ann[corev1.LastAppliedConfigAnnotation]; ok {
					delete(ann, corev1.LastAppliedConfigAnnotation)
				}
			}
		}
		if svc, ok := obj.(*corev1.Service); ok {
			svc.Labels = nil
			svc.Spec = corev1.ServiceSpec{Ports: svc.Spec.Ports}
			svc.Status = corev1.ServiceStatus{}
		}
		return obj, nil
	}
}
