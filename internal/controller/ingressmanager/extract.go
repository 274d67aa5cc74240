package ingressmanager

import (
	"fmt"
	"sync"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

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
