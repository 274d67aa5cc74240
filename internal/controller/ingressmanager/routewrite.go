package ingressmanager

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"
	gatewayv1client "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
)

// RouteApplyConfiguration returns the server-side-apply configuration of
// desired: exactly the fields this controller manages (name, namespace,
// labels, annotations, owner references and spec; never status), as
// ExtractHTTPRoute returns them after an apply.
func RouteApplyConfiguration(desired *gatewayv1.HTTPRoute) (*gatewayv1ac.HTTPRouteApplyConfiguration, error) {
	return routeWriter(nil, "", nil).applyConfiguration(desired, "")
}

// HTTPRoutes are written as Ingresses are (see ingressWriter).
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;create;patch;delete

// routeWriter is the write path of HTTPRoutes (client may be nil for
// needsUpdate alone).
func routeWriter(client gatewayv1client.GatewayV1Interface, fieldManager string, recorder record.EventRecorder) *writer[*gatewayv1.HTTPRoute, gatewayv1ac.HTTPRouteApplyConfiguration] {
	routes := func(namespace string) typedClient[*gatewayv1.HTTPRoute] {
		return client.HTTPRoutes(namespace)
	}
	return newWriter("HTTPRoute", writeReasons{ReasonHTTPRouteCreated, ReasonHTTPRouteUpdated, ReasonHTTPRouteDeleted, ReasonHTTPRouteExists}, routes, fieldManager, recorder, gatewayv1ac.HTTPRoute, extractHTTPRoute,
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

// isBeingDeleted reports whether obj has a deletionTimestamp: a finalizer
// holds it while what serves it is torn down, and its status (an address,
// Accepted=True) still shows what it was. It is never the new home of a
// Service that moves, and never deleted again.
func isBeingDeleted(obj metav1.Object) bool { return obj.GetDeletionTimestamp() != nil }
