package ingressmanager

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// fuzzConfigs are the controller configurations the fuzzer picks from.
var fuzzConfigs = []Config{
	{},
	{HostTemplate: "{{.Name}}.{{.Namespace}}.example.com", IngressClass: "nginx"},
	{HostTemplate: "*.{{.Namespace}}.apps.example.com"},
}

// fuzzKeys are the option annotations, in the order of FuzzDesired's
// value arguments; bit i of present says whether key i is set.
var fuzzKeys = []string{
	AnnotationHTTP, AnnotationHost, AnnotationPath, AnnotationPathType, AnnotationPort,
	AnnotationClass, AnnotationTLSSecret, AnnotationAnnotations,
}

var knownReasons = []string{
	ReasonInvalidHost, ReasonInvalidHostTemplate, ReasonInvalidPath, ReasonInvalidPathType,
	ReasonUnknownPort, ReasonAmbiguousPort, ReasonNoPorts, ReasonInvalidClass,
	ReasonInvalidTLSSecret, ReasonInvalidAnnotations,
}

// fuzzPorts parses "80/http,443/https,9000" into Service ports. Numbers
// outside 1..65535 are folded into it (the API server admits no others);
// items that are not numbers are skipped.
func fuzzPorts(spec string) []corev1.ServicePort {
	var ports []corev1.ServicePort
	for item := range strings.SplitSeq(spec, ",") {
		num, name, _ := strings.Cut(item, "/")
		n, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		if n < 1 || n > 65535 {
			n = (n%65535+65535)%65535 + 1
		}
		ports = append(ports, corev1.ServicePort{Name: name, Port: int32(n), Protocol: corev1.ProtocolTCP})
		if len(ports) == 16 {
			break
		}
	}
	return ports
}

func FuzzDesired(f *testing.F) {
	all := uint16(1<<len(fuzzKeys) - 1)
	f.Add(uint8(0), uint16(1), "nginx", "", "", "", "", "", "", "", "80/http")
	f.Add(uint8(0), all, "nginx", "shop.example.org", "/api", "Exact", "https", "internal", "shop-tls",
		`{"cert-manager.io/cluster-issuer":"letsencrypt"}`, "80/http,443/https")
	f.Add(uint8(1), all, "", "*.example.org", "/a//b", "Prefix", "8080", "Nginx", "x_y", `{"a":1}`, "8080/web,8443/admin")
	f.Add(uint8(2), uint16(1|1<<4), "true", "", "", "", "web", "", "", "", "8080/web,8443/admin")
	f.Add(uint8(0), uint16(1), "nginx", "", "", "", "", "", "", "", "")

	// One field manager per fuzz process, reset for every input: building
	// one costs more than the rest of an iteration.
	fm := newFakeServer(f).fm
	builders := make([]*Builder, len(fuzzConfigs))
	for i, cfg := range fuzzConfigs {
		builders[i] = mustBuilder(f, cfg)
	}

	f.Fuzz(func(t *testing.T, cfg uint8, present uint16,
		http, host, path, pathType, portAnn, class, tls, annotations, ports string) {
		values := []string{http, host, path, pathType, portAnn, class, tls, annotations}
		ann := map[string]string{}
		for i, k := range fuzzKeys {
			if present&(1<<i) != 0 {
				ann[k] = values[i]
			}
		}
		svc := service(nil, fuzzPorts(ports)...)
		svc.Annotations = ann
		b := builders[int(cfg)%len(builders)]

		ing, err := b.Parse(svc).Ingress()

		// Deterministic.
		ing2, err2 := b.Parse(svc).Ingress()
		if !reflect.DeepEqual(ing, ing2) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("Desired not deterministic: %v / %v", err, err2)
		}

		if !Enabled(svc) {
			if ing != nil || err != nil {
				t.Fatalf("disabled service: Desired = %v, %v", ing, err)
			}
			return
		}
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is %T, not *InvalidError", err, err)
			}
			if !slices.Contains(knownReasons, ie.Reason) || ie.Message == "" || len(ie.Problems) == 0 || ie.Reason != ie.Problems[0].Reason {
				t.Fatalf("bad InvalidError %+v", ie)
			}
			for _, p := range ie.Problems {
				if !slices.Contains(knownReasons, p.Reason) || !strings.Contains(ie.Message, p.Message) {
					t.Fatalf("bad problem %+v in %q", p, ie.Message)
				}
			}
			if ing != nil {
				t.Fatal("Ingress returned with an error")
			}
			return
		}
		checkIngress(t, svc, ing)

		// Server-side apply of it converges.
		fm.Reset()
		s := &fakeServer{t: t, fm: fm}
		s.apply(mustApplyConfiguration(t, ing), manager)
		if needsUpdate(t, s.cached(), ing) {
			t.Fatalf("NeedsUpdate right after apply = true for %+v", ing)
		}
	})
}

// checkIngress checks invariants the API server's Ingress validation
// enforces, computed independently of the builder's own checks.
func checkIngress(t *testing.T, svc *corev1.Service, ing *networkingv1.Ingress) {
	t.Helper()
	if ing == nil {
		t.Fatal("no Ingress and no error for an enabled service")
	}
	if ing.Name != svc.Name || ing.Namespace != svc.Namespace || !isControlledBy(ing, svc) || len(ing.OwnerReferences) != 1 {
		t.Fatalf("metadata: %+v", ing.ObjectMeta)
	}
	if errs := apivalidation.ValidateAnnotations(ing.Annotations, field.NewPath("metadata", "annotations")); len(errs) > 0 {
		t.Fatalf("annotations invalid: %v", errs)
	}
	if c := ing.Spec.IngressClassName; c != nil && len(validation.IsDNS1123Subdomain(*c)) > 0 {
		t.Fatalf("class %q invalid", *c)
	}
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
		t.Fatalf("rules: %+v", ing.Spec.Rules)
	}
	rule := ing.Spec.Rules[0]
	if h := rule.Host; h != "" {
		var msgs []string
		if strings.Contains(h, "*") {
			msgs = validation.IsWildcardDNS1123Subdomain(h)
		} else {
			msgs = validation.IsDNS1123Subdomain(h)
		}
		if len(msgs) > 0 || netutils.ParseIPSloppy(h) != nil {
			t.Fatalf("host %q invalid: %v", h, msgs)
		}
	}
	p := rule.HTTP.Paths[0]
	if p.PathType == nil {
		t.Fatal("no path type")
	}
	if !strings.HasPrefix(p.Path, "/") {
		t.Fatalf("path %q does not start with /", p.Path)
	}
	switch *p.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		for _, seq := range []string{"//", "/./", "/../", "%2f", "%2F"} {
			if strings.Contains(p.Path, seq) {
				t.Fatalf("path %q contains %q", p.Path, seq)
			}
		}
		if strings.HasSuffix(p.Path, "/..") || strings.HasSuffix(p.Path, "/.") {
			t.Fatalf("path %q has a bad suffix", p.Path)
		}
	case networkingv1.PathTypeImplementationSpecific:
	default:
		t.Fatalf("path type %q", *p.PathType)
	}
	be := p.Backend.Service
	if be == nil || be.Name != svc.Name || be.Port.Name != "" || be.Port.Number < 1 || be.Port.Number > 65535 {
		t.Fatalf("backend: %+v", p.Backend)
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Port == be.Port.Number }) {
		t.Fatalf("backend port %d is not a port of the service", be.Port.Number)
	}
	for _, tls := range ing.Spec.TLS {
		if len(validation.IsDNS1123Subdomain(tls.SecretName)) > 0 {
			t.Fatalf("tls secret %q invalid", tls.SecretName)
		}
		if rule.Host == "" && len(tls.Hosts) != 0 || rule.Host != "" && !slices.Equal(tls.Hosts, []string{rule.Host}) {
			t.Fatalf("tls hosts %v for rule host %q", tls.Hosts, rule.Host)
		}
	}
}
