package ingressmanager

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/tools/record"
)

// ApplyConfiguration returns the server-side-apply configuration of desired:
// exactly the fields this controller manages (name, namespace, labels,
// annotations, owner references and spec; never status), as ExtractIngress
// returns them after it was applied.
func ApplyConfiguration(desired *networkingv1.Ingress) (*networkingv1ac.IngressApplyConfiguration, error) {
	return ingressWriter(nil, "", nil).applyConfiguration(desired, "")
}

// NeedsUpdate reports whether live differs from desired in a field this
// controller manages, ignoring fields (and annotations) others own (see
// writer.needsUpdate). It compares ApplyConfiguration(desired) with the
// fields fieldManager owns in live, as networkingv1ac.ExtractIngress reads
// them from our entry of metadata.managedFields.
//
// live must come from the API server (or an informer cache that keeps our
// managedFields entries). A nil live needs an update (a create). It does not
// check who controls live: check IsControlledBy first.
func NeedsUpdate(live, desired *networkingv1.Ingress, fieldManager string) (bool, error) {
	return ingressWriter(nil, fieldManager, nil).needsUpdate(live, desired)
}

// NeedsUpdate is NeedsUpdate with the Builder's field manager.
func (b *Builder) NeedsUpdate(live, desired *networkingv1.Ingress) (bool, error) {
	return NeedsUpdate(live, desired, b.fieldManager)
}

// A new Ingress is a create; changes are server-side applies (patch); the
// first change after a create reads the Ingress afresh (get) and moves the
// create's field ownership to the apply (a JSON patch); delete when the
// annotation or the Service goes.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;create;patch;delete

// ingressWriter is the write path of Ingresses (client may be nil for
// needsUpdate alone).
func ingressWriter(client networkingv1client.NetworkingV1Interface, fieldManager string, recorder record.EventRecorder) *writer[*networkingv1.Ingress, networkingv1ac.IngressApplyConfiguration] {
	ingresses := func(namespace string) typedClient[*networkingv1.Ingress] {
		return client.Ingresses(namespace)
	}
	return newWriter("Ingress", writeReasons{ReasonIngressCreated, ReasonIngressUpdated, ReasonIngressDeleted, ReasonIngressExists}, ingresses, fieldManager, recorder, networkingv1ac.Ingress, extractIngress,
		func(ac *networkingv1ac.IngressApplyConfiguration) { ac.Status = nil })
}

// ControllerOwner returns a copy of ing's controller OwnerReference, or nil.
func ControllerOwner(ing *networkingv1.Ingress) *metav1.OwnerReference {
	if ing == nil {
		return nil
	}
	return metav1.GetControllerOf(ing)
}

// IsControlledBy reports whether ing's controller OwnerReference is svc.
func IsControlledBy(ing *networkingv1.Ingress, svc *corev1.Service) bool {
	return ing != nil && isControlledBy(ing, svc)
}
