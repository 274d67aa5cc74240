package ingressmanager

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestParseURL: the URL is the scheme (https with a TLS Secret), the host
// and the path, when there is one host to name.
func TestParseURL(t *testing.T) {
	b := mustBuilder(t, Config{URLAnnotation: AnnotationURL})
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want string
	}{
		{"the seed Service", nil, "http://example.com/"},
		{"TLS, a host and a path", map[string]string{AnnotationTLSSecret: "cert", AnnotationHost: "app.example.com", AnnotationPath: "/api"}, "https://app.example.com/api"},
		{"no host: no URL", map[string]string{AnnotationHost: ""}, ""},
		{"a wildcard host: no URL", map[string]string{AnnotationHost: "*.example.com"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := b.Parse(service(tc.ann, port("http", 80))).URL; got != tc.want {
				t.Errorf("URL = %q, want %q", got, tc.want)
			}
		})
	}
	svc := service(map[string]string{AnnotationURL: "http://old.example.com/"}, port("http", 80))
	delete(svc.Annotations, AnnotationHTTP)
	if in := b.Parse(svc); in.Target != TargetNone || in.PublishedURL != "http://old.example.com/" {
		t.Errorf("a Service no longer exposed: %+v, want its published URL read", in)
	}
	if in := mustBuilder(t, Config{}).Parse(svc); in.PublishedURL != "" {
		t.Errorf("without a URL annotation configured the published URL is %q", in.PublishedURL)
	}
	if _, err := NewBuilder(Config{URLAnnotation: "not a key"}); err == nil {
		t.Error("NewBuilder took a URL annotation that is not a valid key")
	}
	for _, key := range slices.Concat(settingAnnotations, bookkeepingAnnotations) {
		if _, err := NewBuilder(Config{URLAnnotation: key}); err == nil {
			t.Errorf("NewBuilder took URL annotation %s, which the controller reads or keeps", key)
		}
	}
}

// TestSyncURL: the URL is written, by a patch of that one annotation, once
// what exposes the Service serves it; kept while one of its objects does;
// removed when the Service is no longer exposed.
func TestSyncURL(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ann       map[string]string // besides the seed's
		disabled  bool
		ingress   func(*networkingv1.Ingress)
		route     func(*gatewayv1.HTTPRoute)
		published string // the URL annotation the Service carries
		want      string // the URL annotation after the sync, "" for none
		patched   bool
	}{
		{name: "an Ingress without an address: no URL yet", ingress: func(*networkingv1.Ingress) {}},
		{name: "an Ingress with an address: the URL", ingress: withAddress, want: "http://example.com/", patched: true},
		{name: "with TLS: https", ann: map[string]string{AnnotationTLSSecret: "cert"}, ingress: withAddress,
			want: "https://example.com/", patched: true},
		{name: "the URL already written: no write", ingress: withAddress, published: "http://example.com/", want: "http://example.com/"},
		{name: "the host changed: the URL follows", ingress: withAddress, published: "http://old.example.com/", want: "http://example.com/", patched: true},
		{name: "an Ingress being deleted does not serve", ingress: both(withAddress, markDeleting[*networkingv1.Ingress])},
		{name: "a route Accepted with resolved references: the URL", ann: map[string]string{AnnotationGateway: "gw"},
			route: servedAt(1), want: "http://example.com/", patched: true},
		{name: "a route Accepted for an older generation: no URL yet", ann: map[string]string{AnnotationGateway: "gw"},
			route: both(servedAt(1), func(r *gatewayv1.HTTPRoute) { r.Generation = 2 })},
		{name: "a route Accepted but with references unresolved: no URL yet", ann: map[string]string{AnnotationGateway: "gw"},
			route: acceptedAt(1)},
		{name: "moving to a route not accepted yet: the URL stays while the Ingress serves", ann: map[string]string{AnnotationGateway: "gw"},
			ingress: withAddress, route: func(*gatewayv1.HTTPRoute) {}, published: "http://example.com/", want: "http://example.com/"},
		{name: "bad annotations: the URL is left as it is", ann: map[string]string{AnnotationPath: "api"}, ingress: withAddress,
			published: "http://example.com/", want: "http://example.com/"},
		{name: "no longer exposed: the URL goes", disabled: true, ingress: withAddress, published: "http://example.com/", patched: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t)
			f.c.builder.urlAnnotation = AnnotationURL
			svc := service(tc.ann, port("http", 80))
			svc.ResourceVersion = "1"
			if tc.ingress != nil {
				// An Ingress as the seed Service has it, or with TLS: an
				// Ingress the sync rewrites is judged on its next event.
				made := service(nil, port("http", 80))
				if _, ok := tc.ann[AnnotationTLSSecret]; ok {
					made = svc
				}
				f.addIngress(made, tc.ingress)
			}
			if tc.route != nil {
				f.addRoute(svc, tc.route)
			}
			if tc.published != "" {
				svc.Annotations[AnnotationURL] = tc.published
			}
			if tc.disabled {
				delete(svc.Annotations, AnnotationHTTP)
			}
			f.addService(svc, true)
			f.clearActions()
			if err := f.sync(svc); err != nil {
				t.Fatalf("sync: %v", err)
			}
			var patches []k8stesting.PatchAction
			for _, a := range f.kube.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "services" {
					patches = append(patches, p)
				}
			}
			if got := len(patches) > 0; got != tc.patched {
				t.Fatalf("Service patched = %v, want %v", got, tc.patched)
			}
			for _, p := range patches {
				if p.GetPatchType() != "application/json-patch+json" || p.GetName() != svc.Name {
					t.Errorf("patch %s of %s, want a JSON patch of %s", p.GetPatchType(), p.GetName(), svc.Name)
				}
			}
			live, err := f.kube.CoreV1().Services(svc.Namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := live.Annotations[AnnotationURL]
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("URL annotation = %q (present %v), want %q", got, ok, tc.want)
			}
			want := svc.DeepCopy()
			delete(want.Annotations, AnnotationURL)
			delete(live.Annotations, AnnotationURL)
			if len(live.Annotations) != len(want.Annotations) {
				t.Errorf("annotations %v, want the Service's own %v and the URL alone", live.Annotations, want.Annotations)
			}
		})
	}
}

// TestSyncURLOfAReplacedService: the patch carries the UID of the Service
// it was computed for: a Service replaced meanwhile under the same name is
// not written.
func TestSyncURLOfAReplacedService(t *testing.T) {
	f := newSyncFixture(t)
	f.c.builder.urlAnnotation = AnnotationURL
	svc := service(nil, port("http", 80))
	svc.ResourceVersion = "1"
	f.addIngress(svc, withAddress)
	replacement := svc.DeepCopy()
	replacement.UID = "another-uid"
	if _, err := f.kube.CoreV1().Services(svc.Namespace).Create(context.Background(), replacement, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.services.Add(svc); err != nil {
		t.Fatal(err)
	}
	// The fake answers a failed test with a plain error where the API
	// server answers 422, which the sync takes for a stale cache
	// (test/integration/ingressmanager shows that): only the write counts.
	_ = f.sync(svc)
	live, _ := f.kube.CoreV1().Services(svc.Namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
	if _, ok := live.Annotations[AnnotationURL]; ok {
		t.Errorf("the replacement got the URL: %v", live.Annotations)
	}
}

// TestSyncURLWriteRepeatsNoWarning: the Service version the URL write makes
// does not tell again the Warnings of the version it was made from.
func TestSyncURLWriteRepeatsNoWarning(t *testing.T) {
	f := newSyncFixture(t)
	f.c.builder.urlAnnotation = AnnotationURL
	svc := service(map[string]string{AnnotationGateway: "gw", AnnotationTLSSecret: "cert"}, port("http", 80))
	svc.ResourceVersion = "1"
	f.addRoute(svc, servedAt(1))
	f.addService(svc, true)
	// The fake keeps resource versions as they are: make the write's new.
	f.kube.PrependReactor("patch", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := f.kube.Tracker().Get(a.GetResource(), a.GetNamespace(), svc.Name)
		if err != nil {
			return true, nil, err
		}
		bumped := obj.(*corev1.Service).DeepCopy()
		bumped.ResourceVersion = "2"
		return false, nil, f.kube.Tracker().Update(a.GetResource(), bumped, a.GetNamespace())
	})
	if err := f.sync(svc); err != nil {
		t.Fatal(err)
	}
	written, err := f.kube.CoreV1().Services(svc.Namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if written.Annotations[AnnotationURL] != "https://example.com/" || written.ResourceVersion == svc.ResourceVersion {
		t.Fatalf("the write made version %q with URL %q", written.ResourceVersion, written.Annotations[AnnotationURL])
	}
	if err := f.c.services.Update(written); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(written); err != nil {
		t.Fatal(err)
	}
	if got, want := f.reasons(), []string{ReasonIgnoredForRoute}; !slices.Equal(got, want) {
		t.Errorf("Events = %q, want %q once", got, want)
	}
}
