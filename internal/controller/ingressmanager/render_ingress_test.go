package ingressmanager

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const testUID = types.UID("5f0c6c48-2f7e-4a8e-9d39-0d7f1f6a3c11")

// service returns a Service named my-nginx in default, annotated with
// ingress/http: nginx plus ann, with the given ports (name:number pairs).
func service(ann map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "my-nginx",
			Namespace:   "default",
			UID:         testUID,
			Labels:      map[string]string{"app": "my-nginx"},
			Annotations: map[string]string{AnnotationHTTP: "nginx"},
		},
		Spec: corev1.ServiceSpec{
			Ports:    ports,
			Selector: map[string]string{"app": "my-nginx"},
		},
	}
	for k, v := range ann {
		svc.Annotations[k] = v
	}
	return svc
}

func port(name string, number int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: number, Protocol: corev1.ProtocolTCP}
}

// seedConstructIngress is the seed blog post's constructIngress, verbatim but
// for the receiver: the minimum behaviour.
func seedConstructIngress(service *corev1.Service) *networkingv1.Ingress {
	pathType := networkingv1.PathTypePrefix
	ingress := networkingv1.Ingress{}
	ingress.ObjectMeta.OwnerReferences = []metav1.OwnerReference{
		*metav1.NewControllerRef(service, corev1.SchemeGroupVersion.WithKind("Service")),
	}
	ingress.Namespace = service.Namespace
	ingress.Name = service.Name
	ingress.Spec = networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{
			{
				Host: "example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{
					HTTP: &networkingv1.HTTPIngressRuleValue{
						Paths: []networkingv1.HTTPIngressPath{
							{
								Path:     "/",
								PathType: &pathType,
								Backend: networkingv1.IngressBackend{
									Service: &networkingv1.IngressServiceBackend{
										Name: service.Name,
										Port: networkingv1.ServiceBackendPort{
											Number: 80,
										},
									},
								},
							},
						},
					},
				},
			},
		},
	}
	return &ingress
}

func mustBuilder(t testing.TB, cfg Config) *Builder {
	t.Helper()
	b, err := NewBuilder(cfg)
	if err != nil {
		t.Fatalf("NewBuilder(%+v): %v", cfg, err)
	}
	return b
}

func TestDesiredSeedExample(t *testing.T) {
	// The seed's my-nginx Service (port 80 named http, annotated
	// ingress/http: nginx) must yield exactly the seed's Ingress.
	svc := service(nil, port("http", 80))
	got, err := mustBuilder(t, Config{}).Parse(svc).Ingress()
	if err != nil {
		t.Fatalf("Desired: %v", err)
	}
	want := seedConstructIngress(svc)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Desired differs from the seed's constructIngress:\ngot:  %s\nwant: %s", dump.Pretty(got), dump.Pretty(want))
	}
	ref := got.OwnerReferences[0]
	if ref.APIVersion != "v1" || ref.Kind != "Service" || ref.Name != "my-nginx" || ref.UID != testUID ||
		!ptr.Deref(ref.Controller, false) || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("owner reference = %+v", ref)
	}
}

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		ann  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"other": "x"}, false},
		{map[string]string{AnnotationHTTP: "nginx"}, true},
		{map[string]string{AnnotationHTTP: ""}, true},
		{map[string]string{AnnotationHTTP: "true"}, true},
		{map[string]string{AnnotationHTTP: "false"}, false},
		{map[string]string{AnnotationHTTP: "False"}, false},
		{map[string]string{AnnotationHTTP: " FALSE\n"}, false},
		{map[string]string{AnnotationHost: "a.example.com"}, false},
	} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: tc.ann}}
		if got := Enabled(svc); got != tc.want {
			t.Errorf("Enabled(%v) = %v, want %v", tc.ann, got, tc.want)
		}
	}
	if Enabled(nil) {
		t.Error("Enabled(nil) = true")
	}
}

func TestDesiredOptions(t *testing.T) {
	seedPorts := []corev1.ServicePort{port("http", 80)}
	tests := []struct {
		name  string
		cfg   Config
		ann   map[string]string
		ports []corev1.ServicePort
		// edit turns the seed's Ingress into the expected one.
		edit func(ing *networkingv1.Ingress)
	}{
		{
			name: "defaults",
		},
		{
			name: "host",
			ann:  map[string]string{AnnotationHost: "shop.example.org"},
			edit: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "shop.example.org" },
		},
		{
			name: "wildcard host",
			ann:  map[string]string{AnnotationHost: "*.apps.example.org"},
			edit: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "*.apps.example.org" },
		},
		{
			name: "empty host means every host",
			ann:  map[string]string{AnnotationHost: ""},
			edit: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "" },
		},
		{
			name: "values are trimmed",
			ann:  map[string]string{AnnotationHost: " shop.example.org\n", AnnotationPath: " /api ", AnnotationPort: " 80 "},
			edit: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].Host = "shop.example.org"
				ing.Spec.Rules[0].HTTP.Paths[0].Path = "/api"
			},
		},
		{
			name: "host template",
			cfg:  Config{HostTemplate: "{{.Name}}.{{.Namespace}}.apps.example.com"},
			edit: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "my-nginx.default.apps.example.com" },
		},
		{
			name: "host annotation wins over template",
			cfg:  Config{HostTemplate: "{{.Name}}.apps.example.com"},
			ann:  map[string]string{AnnotationHost: "www.example.com"},
			edit: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "www.example.com" },
		},
		{
			name: "path",
			ann:  map[string]string{AnnotationPath: "/shop"},
			edit: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths[0].Path = "/shop" },
		},
		{
			name: "empty path means default",
			ann:  map[string]string{AnnotationPath: "", AnnotationPathType: ""},
		},
		{
			name: "path type Exact",
			ann:  map[string]string{AnnotationPathType: "Exact", AnnotationPath: "/healthz"},
			edit: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[0].Path = "/healthz"
				ing.Spec.Rules[0].HTTP.Paths[0].PathType = ptr.To(networkingv1.PathTypeExact)
			},
		},
		{
			name: "path type ImplementationSpecific allows regex-like paths",
			ann:  map[string]string{AnnotationPathType: "ImplementationSpecific", AnnotationPath: "/api(/|$)(.*)//x"},
			edit: func(ing *networkingv1.Ingress) {
				ing.Spec.Rules[0].HTTP.Paths[0].Path = "/api(/|$)(.*)//x"
				ing.Spec.Rules[0].HTTP.Paths[0].PathType = ptr.To(networkingv1.PathTypeImplementationSpecific)
			},
		},
		{
			name: "path type Prefix explicit",
			ann:  map[string]string{AnnotationPathType: "Prefix"},
		},
		{
			name:  "port by number",
			ann:   map[string]string{AnnotationPort: "8443"},
			ports: []corev1.ServicePort{port("http", 80), port("https", 8443)},
			edit:  func(ing *networkingv1.Ingress) { setPort(ing, 8443) },
		},
		{
			name:  "port by name resolves to its number",
			ann:   map[string]string{AnnotationPort: "https"},
			ports: []corev1.ServicePort{port("http", 80), port("https", 8443)},
			edit:  func(ing *networkingv1.Ingress) { setPort(ing, 8443) },
		},
		{
			name:  "default prefers port 80 over the port named http",
			ports: []corev1.ServicePort{port("http", 8080), port("web", 80)},
		},
		{
			name:  "default port 80 unnamed",
			ports: []corev1.ServicePort{port("", 80)},
		},
		{
			name:  "default falls back to the port named http",
			ports: []corev1.ServicePort{port("metrics", 9090), port("http", 8080)},
			edit:  func(ing *networkingv1.Ingress) { setPort(ing, 8080) },
		},
		{
			name:  "default falls back to the only port",
			ports: []corev1.ServicePort{port("web", 3000)},
			edit:  func(ing *networkingv1.Ingress) { setPort(ing, 3000) },
		},
		{
			name: "the only port number, served over TCP and UDP",
			ports: []corev1.ServicePort{
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
				{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP},
			},
			edit: func(ing *networkingv1.Ingress) { setPort(ing, 53) },
		},
		{
			name: "class from config",
			cfg:  Config{IngressClass: "nginx"},
			edit: func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("nginx") },
		},
		{
			name: "class annotation wins over config",
			cfg:  Config{IngressClass: "nginx"},
			ann:  map[string]string{AnnotationClass: "traefik"},
			edit: func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("traefik") },
		},
		{
			name: "empty class annotation clears the configured class",
			cfg:  Config{IngressClass: "nginx"},
			ann:  map[string]string{AnnotationClass: ""},
		},
		{
			name: "tls",
			ann:  map[string]string{AnnotationHost: "shop.example.org", AnnotationTLSSecret: "shop-tls"},
			edit: hostTLS("shop.example.org", "shop-tls"),
		},
		{
			name: "tls default host",
			ann:  map[string]string{AnnotationTLSSecret: "example-tls"},
			edit: hostTLS("example.com", "example-tls"),
		},
		{
			name: "tls wildcard host",
			ann:  map[string]string{AnnotationHost: "*.example.org", AnnotationTLSSecret: "wildcard"},
			edit: hostTLS("*.example.org", "wildcard"),
		},
		{
			name: "tls without host",
			ann:  map[string]string{AnnotationHost: "", AnnotationTLSSecret: "default-cert"},
			edit: hostTLS("", "default-cert"),
		},
		{
			name: "empty tls secret means none",
			ann:  map[string]string{AnnotationTLSSecret: ""},
		},
		{
			name: "annotations",
			ann: map[string]string{AnnotationAnnotations: `{"cert-manager.io/cluster-issuer": "letsencrypt",
				"nginx.ingress.kubernetes.io/proxy-body-size": "8m", "empty": ""}`},
			edit: func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{
					"cert-manager.io/cluster-issuer":              "letsencrypt",
					"nginx.ingress.kubernetes.io/proxy-body-size": "8m",
					"empty": "",
				}
			},
		},
		{
			name: "empty annotations object",
			ann:  map[string]string{AnnotationAnnotations: `{}`},
		},
		{
			name: "null annotations",
			ann:  map[string]string{AnnotationAnnotations: `null`},
		},
		{
			name: "ingress.class annotation equal to the class",
			cfg:  Config{IngressClass: "nginx"},
			ann:  map[string]string{AnnotationAnnotations: `{"kubernetes.io/ingress.class": "nginx"}`},
			edit: func(ing *networkingv1.Ingress) {
				ing.Spec.IngressClassName = ptr.To("nginx")
				ing.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
			},
		},
		{
			name: "everything",
			cfg:  Config{HostTemplate: "{{.Name}}.example.com", IngressClass: "nginx"},
			ann: map[string]string{
				AnnotationHost:        "shop.example.org",
				AnnotationPath:        "/api",
				AnnotationPathType:    "Exact",
				AnnotationPort:        "web",
				AnnotationClass:       "internal",
				AnnotationTLSSecret:   "shop-tls",
				AnnotationAnnotations: `{"a.example.com/b": "c"}`,
			},
			ports: []corev1.ServicePort{port("http", 80), port("web", 8080)},
			edit: func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{"a.example.com/b": "c"}
				ing.Spec.IngressClassName = ptr.To("internal")
				ing.Spec.Rules[0].Host = "shop.example.org"
				ing.Spec.Rules[0].HTTP.Paths[0].Path = "/api"
				ing.Spec.Rules[0].HTTP.Paths[0].PathType = ptr.To(networkingv1.PathTypeExact)
				setPort(ing, 8080)
				ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"shop.example.org"}, SecretName: "shop-tls"}}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ports := tc.ports
			if ports == nil {
				ports = seedPorts
			}
			svc := service(tc.ann, ports...)
			got, err := mustBuilder(t, tc.cfg).Parse(svc).Ingress()
			if err != nil {
				t.Fatalf("Desired: %v", err)
			}
			want := seedConstructIngress(svc)
			if tc.edit != nil {
				tc.edit(want)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Fatalf("Desired:\ngot:  %s\nwant: %s", dump.Pretty(got), dump.Pretty(want))
			}
		})
	}
}

func setPort(ing *networkingv1.Ingress, n int32) {
	ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = networkingv1.ServiceBackendPort{Number: n}
}

// hostTLS is the edit of an Ingress whose rule has host and whose TLS
// section covers it with secret (a rule without host: the TLS section
// lists no hosts).
func hostTLS(host, secret string) func(*networkingv1.Ingress) {
	return func(ing *networkingv1.Ingress) {
		ing.Spec.Rules[0].Host = host
		tls := networkingv1.IngressTLS{SecretName: secret}
		if host != "" {
			tls.Hosts = []string{host}
		}
		ing.Spec.TLS = []networkingv1.IngressTLS{tls}
	}
}

func TestDesiredDisabled(t *testing.T) {
	b := mustBuilder(t, Config{})
	for _, svc := range []*corev1.Service{
		nil,
		service(map[string]string{AnnotationHTTP: "false"}, port("http", 80)),
		// Disabled wins over bad options: nothing to report.
		service(map[string]string{AnnotationHTTP: "false", AnnotationPort: "nope"}),
		{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"}},
	} {
		ing, err := b.Parse(svc).Ingress()
		if ing != nil || err != nil {
			t.Errorf("Desired(disabled) = %v, %v; want nil, nil", ing, err)
		}
	}
}

func TestDesiredDoesNotMutateService(t *testing.T) {
	svc := service(map[string]string{AnnotationAnnotations: `{"a": "b"}`, AnnotationTLSSecret: "x"}, port("http", 80))
	before := svc.DeepCopy()
	ing, err := mustBuilder(t, Config{IngressClass: "nginx"}).Parse(svc).Ingress()
	if err != nil {
		t.Fatal(err)
	}
	ing.Annotations["a"] = "changed"
	*ing.Spec.IngressClassName = "changed"
	if !equality.Semantic.DeepEqual(svc, before) {
		t.Fatalf("Desired or its result aliases the Service: %s", dump.Pretty(svc))
	}
}

// TestHostTemplatePerService: a template valid for the sample Service can
// render an invalid host for another one (longer than 253 characters here):
// that Service gets the problem, the others their Ingress.
func TestHostTemplatePerService(t *testing.T) {
	domain := strings.Repeat("abcdefghi.", 20) + "com"
	b := mustBuilder(t, Config{HostTemplate: "{{.Name}}-{{.Namespace}}." + domain})
	svc := service(nil, port("http", 80))
	ing, err := b.Parse(svc).Ingress()
	if err != nil || ing.Spec.Rules[0].Host != "my-nginx-default."+domain {
		t.Fatalf("Desired(my-nginx) = %v, %v; want host my-nginx-default.%s", ing, err, domain)
	}
	svc.Name = strings.Repeat("n", 60)
	_, err = b.Parse(svc).Ingress()
	var ie *InvalidError
	if !errors.As(err, &ie) || ie.Reason != ReasonInvalidHostTemplate || len(ie.Problems) != 1 || ie.Problems[0].Annotation != AnnotationHost {
		t.Fatalf("Desired(long name) error = %v, want one %s problem on %s", err, ReasonInvalidHostTemplate, AnnotationHost)
	}
	for _, want := range []string{"--ingress-host-template", "longer than 253", "set annotation ingress/host"} {
		if !strings.Contains(ie.Message, want) {
			t.Errorf("message %q lacks %q", ie.Message, want)
		}
	}
}

func TestDesiredErrors(t *testing.T) {
	type want struct {
		reason     string
		annotation string
		contains   []string
	}
	tests := []struct {
		name  string
		cfg   Config
		ann   map[string]string
		ports []corev1.ServicePort // nil: the seed's port 80 named http
		none  bool                 // no ports at all
		want  want
	}{
		{
			name: "host with underscore",
			ann:  map[string]string{AnnotationHost: "my_app.example.com"},
			want: want{ReasonInvalidHost, AnnotationHost, []string{"annotation ingress/host", `"my_app.example.com"`, "not a valid DNS name", `"app.example.com"`}},
		},
		{
			name: "host upper case suggests lower case",
			ann:  map[string]string{AnnotationHost: "Shop.Example.com"},
			want: want{ReasonInvalidHost, AnnotationHost, []string{`"Shop.Example.com"`, `did you mean "shop.example.com"?`}},
		},
		{
			name: "host with port",
			ann:  map[string]string{AnnotationHost: "example.com:8080"},
			want: want{ReasonInvalidHost, AnnotationHost, []string{`"example.com:8080"`}},
		},
		{
			name: "host is an IP",
			ann:  map[string]string{AnnotationHost: "10.0.0.1"},
			want: want{ReasonInvalidHost, AnnotationHost, []string{`"10.0.0.1"`, "IP address"}},
		},
		{
			name: "bad wildcard",
			ann:  map[string]string{AnnotationHost: "foo.*.example.com"},
			want: want{ReasonInvalidHost, AnnotationHost, []string{`"foo.*.example.com"`, "wildcard", `"*.example.com"`}},
		},
		{
			name: "bare wildcard",
			ann:  map[string]string{AnnotationHost: "*"},
			want: want{ReasonInvalidHost, AnnotationHost, []string{`"*"`, "wildcard"}},
		},
		{
			name: "host too long",
			ann:  map[string]string{AnnotationHost: strings.Repeat("a.", 130) + "com"},
			want: want{ReasonInvalidHost, AnnotationHost, []string{"longer than 253", `"...`}},
		},
		{
			name: "path without slash",
			ann:  map[string]string{AnnotationPath: "shop"},
			want: want{ReasonInvalidPath, AnnotationPath, []string{"annotation ingress/path", `"shop"`, `starting with "/"`, `"/shop"`}},
		},
		{
			name: "path without slash and ImplementationSpecific",
			ann:  map[string]string{AnnotationPath: "shop", AnnotationPathType: "ImplementationSpecific"},
			want: want{ReasonInvalidPath, AnnotationPath, []string{`"shop"`}},
		},
		{
			name: "Prefix path with double slash",
			ann:  map[string]string{AnnotationPath: "/a//b"},
			want: want{ReasonInvalidPath, AnnotationPath, []string{`"/a//b"`, `"//"`, "Prefix", "ImplementationSpecific"}},
		},
		{
			name: "Exact path with dot dot",
			ann:  map[string]string{AnnotationPath: "/a/../b", AnnotationPathType: "Exact"},
			want: want{ReasonInvalidPath, AnnotationPath, []string{`"/../"`, "Exact"}},
		},
		{
			name: "Prefix path with encoded slash",
			ann:  map[string]string{AnnotationPath: "/a%2Fb"},
			want: want{ReasonInvalidPath, AnnotationPath, []string{`"%2F"`}},
		},
		{
			name: "Prefix path ending in dot",
			ann:  map[string]string{AnnotationPath: "/a/."},
			want: want{ReasonInvalidPath, AnnotationPath, []string{`end with "/."`}},
		},
		{
			name: "path with space",
			ann:  map[string]string{AnnotationPath: "/a b"},
			want: want{ReasonInvalidPath, AnnotationPath, []string{"white space", "%20"}},
		},
		{
			name: "bad path type",
			ann:  map[string]string{AnnotationPathType: "Regex"},
			want: want{ReasonInvalidPathType, AnnotationPathType, []string{"annotation ingress/path-type", `"Regex"`, "Prefix, Exact, ImplementationSpecific"}},
		},
		{
			name: "path type wrong case",
			ann:  map[string]string{AnnotationPathType: "prefix"},
			want: want{ReasonInvalidPathType, AnnotationPathType, []string{`"prefix"`, `did you mean "Prefix"?`}},
		},
		{
			name:  "unknown port name",
			ann:   map[string]string{AnnotationPort: "web"},
			ports: []corev1.ServicePort{port("http", 80), port("https", 443)},
			want:  want{ReasonUnknownPort, AnnotationPort, []string{`annotation ingress/port: service has no port "web"; use one of: 80 (http), 443 (https)`}},
		},
		{
			name:  "unknown port number",
			ann:   map[string]string{AnnotationPort: "8080"},
			ports: []corev1.ServicePort{port("http", 80), port("", 9000)},
			want:  want{ReasonUnknownPort, AnnotationPort, []string{`service has no port 8080; use one of: 80 (http), 9000`}},
		},
		{
			name: "port number out of range",
			ann:  map[string]string{AnnotationPort: "99999999999999999999"},
			want: want{ReasonUnknownPort, AnnotationPort, []string{`service has no port "99999999999999999999"`}},
		},
		{
			name: "port name is not matched by target port",
			ann:  map[string]string{AnnotationPort: "8080"},
			ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
			},
			want: want{ReasonUnknownPort, AnnotationPort, []string{"no port 8080", "80 (http)"}},
		},
		{
			name:  "ambiguous port",
			ports: []corev1.ServicePort{port("web", 8080), port("admin", 8443)},
			want:  want{ReasonAmbiguousPort, AnnotationPort, []string{"ingress/port is not set", "no port 80", `no port named "http"`, "8080 (web), 8443 (admin)"}},
		},
		{
			name: "no ports",
			none: true,
			want: want{ReasonNoPorts, "", []string{"no ports", "spec.ports"}},
		},
		{
			name: "no ports with port annotation",
			none: true,
			ann:  map[string]string{AnnotationPort: "http"},
			want: want{ReasonNoPorts, "", []string{"annotation ingress/port", "no ports", `"http"`}},
		},
		{
			name: "bad class",
			ann:  map[string]string{AnnotationClass: "Nginx Public"},
			want: want{ReasonInvalidClass, AnnotationClass, []string{"annotation ingress/class", `"Nginx Public"`, "IngressClass"}},
		},
		{
			name: "bad tls secret",
			ann:  map[string]string{AnnotationTLSSecret: "my_cert"},
			want: want{ReasonInvalidTLSSecret, AnnotationTLSSecret, []string{"annotation ingress/tls-secret", `"my_cert"`, "Secret"}},
		},
		{
			name: "annotations not JSON",
			ann:  map[string]string{AnnotationAnnotations: `cert-manager.io/cluster-issuer: letsencrypt`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{"annotation ingress/annotations", "not a JSON object", `{"cert-manager.io/cluster-issuer": "letsencrypt"}`}},
		},
		{
			name: "annotations is an array",
			ann:  map[string]string{AnnotationAnnotations: `["a"]`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{"not a JSON object", "found a JSON array"}},
		},
		{
			name: "annotations trailing garbage",
			ann:  map[string]string{AnnotationAnnotations: `{"a": "b"} x`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{"not a JSON object"}},
		},
		{
			name: "annotations non-string values",
			ann:  map[string]string{AnnotationAnnotations: `{"b": 1, "a": true, "c": "ok", "d": null, "e": {"x": "y"}}`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{`the values of "a", "b", "d", "e" are not strings`, "quote them"}},
		},
		{
			name: "annotations invalid keys",
			ann:  map[string]string{AnnotationAnnotations: `{"bad key": "x", "ok/fine": "y", "-x": "z"}`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{`invalid annotation keys "-x", "bad key"; a key is`}},
		},
		{
			name: "annotations ingress.class disagrees with class",
			cfg:  Config{IngressClass: "nginx"},
			ann:  map[string]string{AnnotationAnnotations: `{"kubernetes.io/ingress.class": "traefik"}`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{`kubernetes.io/ingress.class is "traefik"`, `is "nginx"`}},
		},
		{
			name: "annotations naming the controller's own withdrawal time",
			ann:  map[string]string{AnnotationAnnotations: `{"ingress/dns-withdrawn": "2030-01-01T00:00:00Z", "team": "a"}`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{`"ingress/dns-withdrawn"`, "the controller's own", "remove"}},
		},
		{
			name: "annotations naming the controller's own saved controller annotations",
			ann:  map[string]string{AnnotationAnnotations: `{"ingress/dns-controller-saved": "{}"}`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{`"ingress/dns-controller-saved"`, "the controller's own"}},
		},
		{
			name: "annotations giving external-dns's controller annotation the controller's withdrawal value",
			ann:  map[string]string{AnnotationAnnotations: `{"external-dns.alpha.kubernetes.io/controller": "ingress-manager-withdrawn"}`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{`"external-dns.alpha.kubernetes.io/controller"`, `"ingress-manager-withdrawn"`, "dns-controller"}},
		},
		{
			name: "annotations too large",
			ann:  map[string]string{AnnotationAnnotations: `{"a": "` + strings.Repeat("x", 256*1024) + `"}`},
			want: want{ReasonInvalidAnnotations, AnnotationAnnotations, []string{"too large"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ports := tc.ports
			if ports == nil && !tc.none {
				ports = []corev1.ServicePort{port("http", 80)}
			}
			ing, err := mustBuilder(t, tc.cfg).Parse(service(tc.ann, ports...)).Ingress()
			if ing != nil {
				t.Errorf("Desired returned an Ingress with an error: %s", dump.Pretty(ing))
			}
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("Desired error = %v (%T), want *InvalidError", err, err)
			}
			if ie.Reason != tc.want.reason {
				t.Errorf("Reason = %q, want %q (message %q)", ie.Reason, tc.want.reason, ie.Message)
			}
			if len(ie.Problems) != 1 || ie.Problems[0].Annotation != tc.want.annotation {
				t.Errorf("Problems = %+v, want one on %q", ie.Problems, tc.want.annotation)
			}
			if ie.Error() != ie.Message {
				t.Errorf("Error() = %q, want Message", ie.Error())
			}
			for _, s := range tc.want.contains {
				if !strings.Contains(ie.Message, s) {
					t.Errorf("Message %q does not contain %q", ie.Message, s)
				}
			}
			if len(ie.Message) > 1024 {
				t.Errorf("Message is %d bytes, longer than an Event note", len(ie.Message))
			}
		})
	}
}

func TestDesiredReportsEveryProblemInFixedOrder(t *testing.T) {
	svc := service(map[string]string{
		AnnotationAnnotations: `[]`,
		AnnotationTLSSecret:   "Bad",
		AnnotationClass:       "_",
		AnnotationPort:        "nope",
		AnnotationPath:        "x",
		AnnotationPathType:    "Regex",
		AnnotationHost:        "a_b",
	}, port("http", 80))
	b := mustBuilder(t, Config{})
	_, err := b.Parse(svc).Ingress()
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("error = %v, want *InvalidError", err)
	}
	var got []string
	for _, p := range ie.Problems {
		got = append(got, p.Reason)
	}
	want := []string{ReasonInvalidHost, ReasonInvalidPathType, ReasonInvalidPath, ReasonUnknownPort, ReasonInvalidClass, ReasonInvalidTLSSecret, ReasonInvalidAnnotations}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problem reasons = %v, want %v", got, want)
	}
	if ie.Reason != ReasonInvalidHost {
		t.Errorf("Reason = %q, want the first problem's", ie.Reason)
	}
	if !strings.HasPrefix(ie.Message, "7 problems: [1] annotation ingress/host:") || !strings.Contains(ie.Message, "; [7] annotation ingress/annotations:") {
		t.Errorf("Message = %q", ie.Message)
	}
	// Deterministic: the same Service gives the same message (map order must not leak).
	for range 20 {
		_, err2 := b.Parse(svc).Ingress()
		if err2.Error() != err.Error() {
			t.Fatalf("message not deterministic:\n%s\n%s", err, err2)
		}
	}
}

func TestNewBuilder(t *testing.T) {
	b := mustBuilder(t, Config{})
	if b.fieldManager != DefaultFieldManager {
		t.Errorf("FieldManager() = %q", b.fieldManager)
	}
	if got := mustBuilder(t, Config{FieldManager: "mine"}).fieldManager; got != "mine" {
		t.Errorf("FieldManager() = %q", got)
	}
	for _, tc := range []struct {
		cfg      Config
		contains string
	}{
		{Config{HostTemplate: "{{.Name"}, "invalid ingress host template"},
		{Config{HostTemplate: "{{.Labels}}.example.com"}, "{{.Labels}}: a host template holds text and the fields {{.Name}} and {{.Namespace}} only"},
		{Config{HostTemplate: "{{.Name.Foo}}.example.com"}, "{{.Name.Foo}}: a host template holds"},
		{Config{HostTemplate: "{{.Name | printf}}.example.com"}, `function "printf" not defined`},
		{Config{HostTemplate: "{{if .Name}}x{{end}}.example.com"}, "no functions, pipelines or control structures"},
		{Config{HostTemplate: "{{$x := .Name}}{{$x}}.example.com"}, "a host template holds"},
		{Config{HostTemplate: `{{define "t"}}a{{end}}b.example.com`}, "{{define}}"},
		{Config{HostTemplate: "{{.Name}}_{{.Namespace}}.example.com"}, `renders "my-service_default.example.com"`},
		{Config{HostTemplate: "{{/* nothing */}}"}, "is empty"},
		{Config{HostTemplate: "10.0.0.1"}, "IP address"},
		{Config{IngressClass: "Nginx"}, `invalid ingress class "Nginx"`},
		{Config{FieldManager: strings.Repeat("m", 129)}, "longer than 128"},
		{Config{FieldManager: "a\nb"}, "printable"},
	} {
		_, err := NewBuilder(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("NewBuilder(%+v) error = %v, want one containing %q", tc.cfg, err, tc.contains)
		}
	}
	for _, tmpl := range []string{
		"example.com",
		"{{.Name}}.{{.Namespace}}.example.com",
		"*.{{.Namespace}}.example.com",
		"  {{.Name}}.example.com\n",
		"{{ .Name }}-{{- .Namespace -}}.example.com",
		"{{/* per namespace */}}{{.Namespace}}.example.com",
	} {
		if _, err := NewBuilder(Config{HostTemplate: tmpl}); err != nil {
			t.Errorf("NewBuilder(HostTemplate %q): %v", tmpl, err)
		}
	}
}

func TestOwnership(t *testing.T) {
	svc := service(nil, port("http", 80))
	ing, err := mustBuilder(t, Config{}).Parse(svc).Ingress()
	if err != nil {
		t.Fatal(err)
	}
	if !isControlledBy(ing, svc) {
		t.Error("isControlledBy(desired, svc) = false")
	}

	recreated := svc.DeepCopy()
	recreated.UID = "another-uid"
	if isControlledBy(ing, recreated) {
		t.Error("IsControlledBy true for a Service with another UID")
	}

	other := ing.DeepCopy()
	other.OwnerReferences[0].Kind = "Deployment"
	other.OwnerReferences[0].APIVersion = "apps/v1"
	if isControlledBy(other, svc) {
		t.Error("IsControlledBy true for a Deployment owner")
	}
	notController := ing.DeepCopy()
	notController.OwnerReferences[0].Controller = ptr.To(false)
	if isControlledBy(notController, svc) {
		t.Error("a non-controller owner reference counts as controller")
	}
	wrongVersion := ing.DeepCopy()
	wrongVersion.OwnerReferences[0].APIVersion = "v2"
	if isControlledBy(wrongVersion, svc) {
		t.Error("IsControlledBy true for apiVersion v2")
	}
	if isControlledBy(nil, svc) || isControlledBy(ing, nil) {
		t.Error("nil handling")
	}
}
