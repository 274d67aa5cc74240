package ingressmanager

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// hostnamePattern and sectionNamePattern are the HTTPRoute CRD's patterns.
var (
	hostnamePattern    = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	sectionNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// FuzzDesiredRoute: whatever the annotations, DesiredRoute either refuses
// them with a known reason or returns a route the HTTPRoute CRD admits,
// attached to the Gateway asked for, whose backend is a port of the
// Service.
func FuzzDesiredRoute(f *testing.F) {
	f.Add(false, uint8(0xff), "gw", "", "", "", "", "", "", "80/http")
	f.Add(true, uint8(0), "", "", "", "", "", "", "", "80/http")
	f.Add(false, uint8(0xff), "infra/shared", "http", "api.example.com", "/v1", "Exact", "web", `{"a":"b"}`, "8080/web")
	f.Add(false, uint8(0xff), "Infra/gw", "my listener", "*.example.com", "/a#b", "ImplementationSpecific", "9999", `[]`, "80/http,80/web")
	f.Add(true, uint8(1), " ", "", "", "/a\"b", "", "", "", "")
	f.Add(false, uint8(0xff), "gw", "", "", "/api", "", "", `{"nginx.ingress.kubernetes.io/app-root": "/app", "nginx.ingress.kubernetes.io/permanent-redirect": "https://x.example.com"}`, "80/http")

	builders := []*Builder{mustBuilder(f, Config{}), mustBuilder(f, Config{Gateway: "infra/default"})}
	keys := []string{AnnotationGateway, AnnotationGatewayListener, AnnotationHost, AnnotationPath, AnnotationPathType, AnnotationPort, AnnotationAnnotations}
	known := []string{
		ReasonInvalidGateway, ReasonInvalidGatewayListener, ReasonUnsupportedPathType, ReasonInvalidHost,
		ReasonInvalidHostTemplate, ReasonInvalidPath, ReasonInvalidPathType, ReasonUnknownPort,
		ReasonAmbiguousPort, ReasonNoPorts, ReasonInvalidAnnotations,
	}

	f.Fuzz(func(t *testing.T, withDefault bool, present uint8, gateway, listener, host, path, pathType, portAnn, annotations, ports string) {
		b := builders[0]
		if withDefault {
			b = builders[1]
		}
		values := []string{gateway, listener, host, path, pathType, portAnn, annotations}
		ann := map[string]string{}
		for i, k := range keys {
			if present&(1<<i) != 0 {
				ann[k] = values[i]
			}
		}
		svc := service(ann, fuzzPorts(ports)...)
		route, err := b.Parse(svc).HTTPRoute()
		if wants := (b.Parse(svc).Target == TargetHTTPRoute); wants != (route != nil || err != nil) {
			t.Fatalf("WantsRoute = %v, but DesiredRoute = %v, %v", wants, route, err)
		}
		if err != nil {
			var invalid *InvalidError
			if !errors.As(err, &invalid) || route != nil {
				t.Fatalf("error %v (route %v), want an *InvalidError and no route", err, route)
			}
			for _, p := range invalid.Problems {
				if !slices.Contains(known, p.Reason) || p.Message == "" {
					t.Fatalf("problem %+v: unknown reason or no message", p)
				}
			}
			return
		}
		if route == nil {
			return
		}
		// The Service's rule is the last: a rule redirecting "/" (app-root)
		// may come before it, and a rule that redirects has no backend.
		main := route.Spec.Rules[len(route.Spec.Rules)-1]
		redirects := slices.ContainsFunc(main.Filters, func(f gatewayv1.HTTPRouteFilter) bool { return f.RequestRedirect != nil })
		if len(route.Spec.ParentRefs) != 1 || len(route.Spec.Rules) > 2 ||
			len(main.Matches) != 1 || len(main.BackendRefs) != map[bool]int{true: 0, false: 1}[redirects] {
			t.Fatalf("route spec %+v, want one parent and one rule with one match and one backend", route.Spec)
		}
		checkCarriedRoute(t, route)
		p := route.Spec.ParentRefs[0]
		if len(validation.IsDNS1123Subdomain(string(p.Name))) > 0 {
			t.Fatalf("parent name %q is not a DNS subdomain", p.Name)
		}
		if p.Namespace != nil && len(validation.IsDNS1123Label(string(*p.Namespace))) > 0 {
			t.Fatalf("parent namespace %q is not a DNS label", *p.Namespace)
		}
		if p.SectionName != nil && (len(*p.SectionName) > 253 || !sectionNamePattern.MatchString(string(*p.SectionName))) {
			t.Fatalf("sectionName %q does not match the CRD's pattern", *p.SectionName)
		}
		gw := b.Parse(svc).Gateway
		if gw == nil || string(p.Name) != gw.Name || string(ptr.Deref(p.Namespace, "default")) != gw.Namespace {
			t.Fatalf("parent %+v, want Gateway %v", p, gw)
		}
		for _, h := range route.Spec.Hostnames {
			if len(h) > 253 || !hostnamePattern.MatchString(string(h)) {
				t.Fatalf("hostname %q does not match the CRD's pattern", h)
			}
		}
		m := main.Matches[0].Path
		v := ptr.Deref(m.Value, "")
		if !strings.HasPrefix(v, "/") || len(v) > 1024 || !routePathChars.MatchString(v) ||
			strings.ContainsAny(v, "#") || strings.Contains(v, "//") || strings.Contains(v, "/./") ||
			strings.Contains(v, "/../") || strings.Contains(v, "%2f") || strings.Contains(v, "%2F") ||
			strings.HasSuffix(v, "/..") || strings.HasSuffix(v, "/.") {
			t.Fatalf("path %q breaks a rule of the CRD", v)
		}
		for _, be := range main.BackendRefs {
			port := ptr.Deref(be.Port, 0)
			if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Port == port }) {
				t.Fatalf("backend port %d is not a port of the Service %v", port, svc.Spec.Ports)
			}
		}
		if _, err := routeWriter(nil, "").applyConfiguration(route, ""); err != nil {
			t.Fatalf("RouteApplyConfiguration: %v", err)
		}
	})
}
