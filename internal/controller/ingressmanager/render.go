package ingressmanager

import (
	"maps"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ownedMeta is the metadata of the object a Service makes: the Service's
// name and namespace, annotations when there are any, and the Service as
// controller (blockOwnerDeletion: the object goes with the Service).
func (in *Intent) ownedMeta(annotations map[string]string) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{
		Name:            in.Name,
		Namespace:       in.Namespace,
		OwnerReferences: []metav1.OwnerReference{in.Owner},
	}
	if len(annotations) > 0 {
		meta.Annotations = maps.Clone(annotations)
	}
	return meta
}

// routeAnnotations are the annotations of ingress/annotations a route
// gets: none of a family the translation table reads, which it carries
// (or leaves off, acknowledged).
func (in *Intent) routeAnnotations() map[string]string {
	out := maps.Clone(in.Annotations)
	maps.DeleteFunc(out, func(k, _ string) bool { return translated(k) })
	return out
}

// Ingress renders the Ingress of the intent, or nil and no error for
// TargetNone. For TargetHTTPRoute it is the Ingress the Service keeps while
// the cluster does not serve the Gateway API. When the intent has problems
// of an Ingress, the error is an *InvalidError listing them.
//
// The Ingress has the Service's name and namespace, a controller
// OwnerReference to it, the annotations of ingress/annotations, and one
// rule with one path whose backend is the Service at the chosen port.
func (in *Intent) Ingress() (*networkingv1.Ingress, error) {
	if in.Target == TargetNone {
		return nil, nil
	}
	if err := in.invalid(TargetIngress); err != nil {
		return nil, err
	}
	ing := &networkingv1.Ingress{ObjectMeta: in.ownedMeta(in.Annotations)}
	if in.Class != "" {
		ing.Spec.IngressClassName = ptr.To(in.Class)
	}
	ing.Spec.Rules = []networkingv1.IngressRule{{
		Host: in.Host,
		IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{
					Path:     in.Path,
					PathType: ptr.To(in.PathType),
					Backend: networkingv1.IngressBackend{
						Service: &networkingv1.IngressServiceBackend{
							Name: in.Name,
							Port: networkingv1.ServiceBackendPort{Number: in.Port},
						},
					},
				}},
			},
		},
	}}
	if in.TLSSecret != "" {
		tls := networkingv1.IngressTLS{SecretName: in.TLSSecret}
		if in.Host != "" {
			tls.Hosts = []string{in.Host}
		}
		ing.Spec.TLS = []networkingv1.IngressTLS{tls}
	}
	return ing, nil
}

// HTTPRoute renders the HTTPRoute of the intent, or nil and no error unless
// its Target is TargetHTTPRoute. When the intent has problems of a route,
// the error is an *InvalidError listing them.
//
// The route has the Service's name and namespace, a controller
// OwnerReference to it, the annotations of ingress/annotations but those
// the translation table reads, the Gateway as its one parentRef, the host
// as its one hostname (none when the host is ""), and one rule matching the
// path with the Service at the chosen port as its backend, with what
// Carried renders (filters, timeouts, a rule redirecting "/"). Every field
// the CRD would default is set, so that the route reads back as it was
// written.
func (in *Intent) HTTPRoute() (*gatewayv1.HTTPRoute, error) {
	if in.Target != TargetHTTPRoute {
		return nil, nil
	}
	if err := in.invalid(TargetHTTPRoute); err != nil {
		return nil, err
	}
	matchType, _ := routeMatchType(in.PathType)
	route := &gatewayv1.HTTPRoute{ObjectMeta: in.ownedMeta(in.routeAnnotations())}
	route.Spec.ParentRefs = []gatewayv1.ParentReference{gatewayParent(*in.Gateway, in.Namespace, in.Listener)}
	if in.Host != "" {
		route.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(in.Host)}
	}
	route.Spec.Rules = []gatewayv1.HTTPRouteRule{serviceRule(matchType, in.Path, in.Name, in.Port)}
	in.Carried.applyTo(route)
	return route, nil
}

// gatewayParent is the parentRef of a route of routeNamespace to Gateway
// gw, at its listener ("": every listener that allows the route), its
// group and kind set as the CRD would default them.
func gatewayParent(gw GatewayRef, routeNamespace, listener string) gatewayv1.ParentReference {
	parent := gatewayv1.ParentReference{
		Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)),
		Kind:  ptr.To(gatewayv1.Kind("Gateway")),
		Name:  gatewayv1.ObjectName(gw.Name),
	}
	if gw.Namespace != routeNamespace {
		parent.Namespace = ptr.To(gatewayv1.Namespace(gw.Namespace))
	}
	if listener != "" {
		parent.SectionName = ptr.To(gatewayv1.SectionName(listener))
	}
	return parent
}

// serviceRule is a route rule that sends the requests path matches (by
// match) to port of Service name, every field the CRD would default set.
func serviceRule(match gatewayv1.PathMatchType, path, name string, port int32) gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{
		Matches: []gatewayv1.HTTPRouteMatch{{
			Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(match), Value: ptr.To(path)},
		}},
		BackendRefs: []gatewayv1.HTTPBackendRef{{
			BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{
					Group: ptr.To(gatewayv1.Group("")),
					Kind:  ptr.To(gatewayv1.Kind("Service")),
					Name:  gatewayv1.ObjectName(name),
					Port:  ptr.To(port),
				},
				Weight: ptr.To[int32](1),
			},
		}},
	}
}
