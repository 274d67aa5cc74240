package ingressmanager

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/record"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// RouteApplyConfiguration returns the server-side-apply configuration of
// desired: exactly the fields this controller manages (name, namespace,
// labels, annotations, owner references and spec; never status), as
// ExtractHTTPRoute returns them after an apply. The spec travels through
// JSON: the apply configuration types mirror the API types field for field
// and the desired spec leaves out every empty optional field.
func RouteApplyConfiguration(desired *gatewayv1.HTTPRoute) (*gatewayv1ac.HTTPRouteApplyConfiguration, error) {
	ac := gatewayv1ac.HTTPRoute(desired.Name, desired.Namespace)
	if len(desired.Labels) > 0 {
		ac.WithLabels(desired.Labels)
	}
	if len(desired.Annotations) > 0 {
		ac.WithAnnotations(desired.Annotations)
	}
	ac.WithOwnerReferences(ownerReferences(desired.OwnerReferences)...)
	data, err := json.Marshal(desired.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the spec of httproute %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	spec := gatewayv1ac.HTTPRouteSpec()
	if err := json.Unmarshal(data, spec); err != nil {
		return nil, fmt.Errorf("decoding the spec of httproute %s/%s as an apply configuration: %w", desired.Namespace, desired.Name, err)
	}
	return ac.WithSpec(spec), nil
}

// ownerReferences returns the apply configurations of refs.
func ownerReferences(refs []metav1.OwnerReference) []*metav1ac.OwnerReferenceApplyConfiguration {
	var out []*metav1ac.OwnerReferenceApplyConfiguration
	for _, ref := range refs {
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
		out = append(out, r)
	}
	return out
}

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;create;patch;delete

// routeWriter is the write path of HTTPRoutes (client may be nil for
// needsUpdate alone).
func routeWriter(client gatewayclient.Interface, fieldManager string, recorder record.EventRecorder) *writer[*gatewayv1.HTTPRoute] {
	return &writer[*gatewayv1.HTTPRoute]{
		kind:         "HTTPRoute",
		fieldManager: fieldManager,
		recorder:     recorder,
		client: func(namespace string) typedClient[*gatewayv1.HTTPRoute] {
			return client.GatewayV1().HTTPRoutes(namespace)
		},
		applyConfiguration: func(desired *gatewayv1.HTTPRoute) (any, error) { return RouteApplyConfiguration(desired) },
		withUID: func(ac any, uid types.UID) any {
			return ac.(*gatewayv1ac.HTTPRouteApplyConfiguration).WithUID(uid)
		},
		extract: func(live *gatewayv1.HTTPRoute, entry metav1.ManagedFieldsEntry) (any, error) {
			cp := *live
			cp.ManagedFields = []metav1.ManagedFieldsEntry{entry}
			ac, err := gatewayv1ac.ExtractHTTPRoute(&cp, entry.Manager)
			if ac != nil {
				ac.Status = nil // never ours (see ingressWriter)
			}
			return ac, err
		},
		controlledBy: func(route *gatewayv1.HTTPRoute, svc *corev1.Service) bool { return isControlledBy(route, svc) },
	}
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
