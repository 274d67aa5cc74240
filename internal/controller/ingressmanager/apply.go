package ingressmanager

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
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
	ac.WithOwnerReferences(ownerReferences(desired.OwnerReferences)...)

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

// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;create;patch;delete

// ingressWriter is the write path of Ingresses (client may be nil for
// needsUpdate alone).
func ingressWriter(client kubernetes.Interface, fieldManager string, recorder record.EventRecorder) *writer[*networkingv1.Ingress] {
	return &writer[*networkingv1.Ingress]{
		kind:         "Ingress",
		fieldManager: fieldManager,
		recorder:     recorder,
		client: func(namespace string) typedClient[*networkingv1.Ingress] {
			return client.NetworkingV1().Ingresses(namespace)
		},
		applyConfiguration: func(desired *networkingv1.Ingress) (any, error) { return ApplyConfiguration(desired), nil },
		withUID: func(ac any, uid types.UID) any {
			return ac.(*networkingv1ac.IngressApplyConfiguration).WithUID(uid)
		},
		extract: func(live *networkingv1.Ingress, entry metav1.ManagedFieldsEntry) (any, error) {
			cp := *live
			cp.ManagedFields = []metav1.ManagedFieldsEntry{entry}
			ac, err := networkingv1ac.ExtractIngress(&cp, entry.Manager)
			if ac != nil {
				// Status is never ours. The API server does not record it for
				// writes to the main resource, but an Update entry made
				// elsewhere may list the empty status a create sends.
				ac.Status = nil
			}
			return ac, err
		},
		controlledBy: IsControlledBy,
	}
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
