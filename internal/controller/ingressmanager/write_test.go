package ingressmanager

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/applyconfigurations"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/utils/ptr"
)

const manager = DefaultFieldManager

// fakeServer keeps one Ingress the way the API server does for
// server-side apply: it runs apimachinery's structured-merge field manager
// (the code the API server runs, minus conversion and defaulting; Ingress v1
// has no defaults) with the networking/v1 schema client-go ships, and
// exchanges objects as JSON, as over the wire. The integration test against
// a real kube-apiserver covers the rest.
type fakeServer struct {
	t  testing.TB
	fm managedfieldstest.TestFieldManager
}

func newFakeServer(t testing.TB) *fakeServer {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := networkingv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tc := applyconfigurations.NewTypeConverter(scheme)
	return &fakeServer{t: t, fm: managedfieldstest.NewTestFieldManager(tc, networkingv1.SchemeGroupVersion.WithKind("Ingress"))}
}

// apply is a server-side apply with force, as the controller does it.
func (s *fakeServer) apply(ac *networkingv1ac.IngressApplyConfiguration, manager string) {
	s.t.Helper()
	if err := s.fm.Apply(toUnstructured(s.t, ac), manager, true); err != nil {
		s.t.Fatalf("apply by %s: %v", manager, err)
	}
}

// update is a create or update (PUT) by a client that does not use apply,
// e.g. kubectl edit, kubectl annotate, or an older controller's Create.
func (s *fakeServer) update(manager string, mutate func(ing *networkingv1.Ingress)) {
	s.t.Helper()
	ing := s.get()
	mutate(ing)
	ing.APIVersion, ing.Kind = "networking.k8s.io/v1", "Ingress"
	if err := s.fm.Update(toUnstructured(s.t, ing), manager); err != nil {
		s.t.Fatalf("update by %s: %v", manager, err)
	}
}

// get returns the object as a GET returns it: every managedFields entry.
func (s *fakeServer) get() *networkingv1.Ingress {
	s.t.Helper()
	data, err := json.Marshal(s.fm.Live())
	if err != nil {
		s.t.Fatal(err)
	}
	ing := &networkingv1.Ingress{}
	if err := json.Unmarshal(data, ing); err != nil {
		s.t.Fatal(err)
	}
	return ing
}

// cached returns the object as the controller's informer cache holds it:
// no TypeMeta, and only our managedFields entry.
func (s *fakeServer) cached() *networkingv1.Ingress {
	ing := s.get()
	ing.TypeMeta = metav1.TypeMeta{}
	var kept []metav1.ManagedFieldsEntry
	for _, e := range ing.ManagedFields {
		if e.Manager == manager {
			kept = append(kept, e)
		}
	}
	ing.ManagedFields = kept
	return ing
}

func toUnstructured(t testing.TB, obj any) *unstructured.Unstructured {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	return u
}

func needsUpdate(t testing.TB, live, desired *networkingv1.Ingress) bool {
	t.Helper()
	got, err := ingressWriter(nil, manager).needsUpdate(live, desired)
	if err != nil {
		t.Fatalf("NeedsUpdate: %v", err)
	}
	return got
}

// mustApplyConfiguration is ApplyConfiguration, failing t on error.
func mustApplyConfiguration(t testing.TB, desired *networkingv1.Ingress) *networkingv1ac.IngressApplyConfiguration {
	t.Helper()
	ac, err := ApplyConfiguration(desired)
	if err != nil {
		t.Fatal(err)
	}
	return ac
}

func desiredFor(t testing.TB, cfg Config, ann map[string]string, ports ...corev1.ServicePort) *networkingv1.Ingress {
	t.Helper()
	if len(ports) == 0 {
		ports = []corev1.ServicePort{port("http", 80)}
	}
	ing, err := mustBuilder(t, cfg).Parse(service(ann, ports...)).Ingress()
	if err != nil {
		t.Fatalf("Desired: %v", err)
	}
	return ing
}

func TestApplyConfigurationSeed(t *testing.T) {
	ac := mustApplyConfiguration(t, seedConstructIngress(service(nil, port("http", 80))))
	got, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"my-nginx","namespace":"default",` +
		`"ownerReferences":[{"apiVersion":"v1","kind":"Service","name":"my-nginx","uid":"` + string(testUID) + `","controller":true,"blockOwnerDeletion":true}]},` +
		`"spec":{"rules":[{"host":"example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"my-nginx","port":{"number":80}}}}]}}]}}`
	if string(got) != want {
		t.Errorf("ApplyConfiguration JSON:\ngot:  %s\nwant: %s", got, want)
	}
}

// TestExtractRoundTrip checks that what the API server records for our apply
// extracts back to exactly what we applied, for every shape Desired makes.
func TestExtractRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ann  map[string]string
	}{
		{"seed", Config{}, nil},
		{"everything", Config{IngressClass: "nginx"}, map[string]string{
			AnnotationHost: "shop.example.org", AnnotationPath: "/api", AnnotationPathType: "Exact",
			AnnotationTLSSecret: "shop-tls", AnnotationAnnotations: `{"a.example.com/b": "c", "empty": ""}`,
		}},
		{"no host with tls", Config{}, map[string]string{AnnotationHost: "", AnnotationTLSSecret: "default-cert"}},
		{"wildcard", Config{}, map[string]string{AnnotationHost: "*.example.org", AnnotationTLSSecret: "w"}},
		{"implementation specific", Config{}, map[string]string{AnnotationPathType: "ImplementationSpecific", AnnotationPath: "/x(/|$)(.*)"}},
		{"template", Config{HostTemplate: "{{.Name}}.{{.Namespace}}.example.com"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desired := desiredFor(t, tc.cfg, tc.ann)
			s := newFakeServer(t)
			s.apply(mustApplyConfiguration(t, desired), manager)

			for _, live := range []*networkingv1.Ingress{s.get(), s.cached()} {
				extracted, err := networkingv1ac.ExtractIngress(live, manager)
				if err != nil {
					t.Fatal(err)
				}
				ej, _ := json.Marshal(extracted)
				aj, _ := json.Marshal(mustApplyConfiguration(t, desired))
				if string(ej) != string(aj) {
					t.Errorf("extracted != applied\nextracted: %s\napplied:   %s", ej, aj)
				}
				if needsUpdate(t, live, desired) {
					t.Errorf("NeedsUpdate right after apply = true; live: %s", dump.Pretty(live))
				}
			}
			// The live object carries what Desired computed.
			live := s.get()
			if live.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number != desired.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number ||
				!isControlledBy(live, service(nil)) {
				t.Errorf("live object: %s", dump.Pretty(live))
			}
		})
	}
}

func TestNeedsUpdate(t *testing.T) {
	annotations := `{"cert-manager.io/cluster-issuer": "letsencrypt", "team": "shop"}`
	base := desiredFor(t, Config{}, map[string]string{AnnotationAnnotations: annotations})

	tests := []struct {
		name string
		// On a server where base was applied by us, by edits the object
		// (a non-apply write), or setup runs.
		by      string
		edit    func(ing *networkingv1.Ingress)
		setup   func(s *fakeServer)
		desired *networkingv1.Ingress
		want    bool
	}{
		{name: "converged"},
		{name: "foreign annotation added", by: "kubectl-annotate", edit: func(ing *networkingv1.Ingress) { ing.Annotations["other"] = "x" }},
		{name: "foreign label added", by: "kubectl-label", edit: func(ing *networkingv1.Ingress) { ing.Labels = map[string]string{"env": "prod"} }},
		{name: "status written by the ingress controller", by: "nginx-ingress-controller", edit: func(ing *networkingv1.Ingress) {
			ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7"}}
		}},
		{name: "foreign owner reference added", by: "someone", edit: func(ing *networkingv1.Ingress) {
			ing.OwnerReferences = append(ing.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"})
		}},
		{name: "same value applied by another manager too", setup: func(s *fakeServer) {
			s.apply(networkingv1ac.Ingress("my-nginx", "default").WithAnnotations(map[string]string{"team": "shop"}), "other-applier")
		}},
		{name: "our host edited", by: "kubectl-edit", want: true, edit: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "evil.example.com" }},
		{name: "our backend port edited", by: "kubectl-edit", want: true, edit: func(ing *networkingv1.Ingress) {
			ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number = 8080
		}},
		// Not a field we manage while desired has no class.
		{name: "class set by someone else", by: "kubectl-edit", edit: func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("other") }},
		{name: "our annotation value edited", by: "kubectl-annotate", want: true, edit: func(ing *networkingv1.Ingress) { ing.Annotations["team"] = "billing" }},
		{name: "our annotation removed", by: "kubectl-annotate", want: true, edit: func(ing *networkingv1.Ingress) { delete(ing.Annotations, "team") }},
		{name: "our owner reference removed", by: "kubectl-edit", want: true, edit: func(ing *networkingv1.Ingress) { ing.OwnerReferences = nil }},
		{name: "desired port changed", want: true,
			desired: desiredFor(t, Config{}, map[string]string{AnnotationAnnotations: annotations, AnnotationPort: "https"}, port("http", 80), port("https", 443))},
		{name: "desired class added", want: true, desired: desiredFor(t, Config{IngressClass: "nginx"}, map[string]string{AnnotationAnnotations: annotations})},
		{name: "annotation dropped from ingress/annotations", want: true,
			desired: desiredFor(t, Config{}, map[string]string{AnnotationAnnotations: `{"cert-manager.io/cluster-issuer": "letsencrypt"}`})},
		{name: "ingress/annotations removed", want: true, desired: desiredFor(t, Config{}, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeServer(t)
			s.apply(mustApplyConfiguration(t, base), manager)
			if tc.edit != nil {
				s.update(tc.by, tc.edit)
			}
			if tc.setup != nil {
				tc.setup(s)
			}
			desired := tc.desired
			if desired == nil {
				desired = base
			}
			// The informer cache view and the full GET view agree.
			if got := needsUpdate(t, s.cached(), desired); got != tc.want {
				t.Errorf("NeedsUpdate(cached) = %v, want %v; live: %s", got, tc.want, dump.Pretty(s.get()))
			}
			if got := needsUpdate(t, s.get(), desired); got != tc.want {
				t.Errorf("NeedsUpdate(get) = %v, want %v", got, tc.want)
			}
			// Applying (with force) always converges, keeps what others own
			// and removes what we no longer want.
			s.apply(mustApplyConfiguration(t, desired), manager)
			if needsUpdate(t, s.cached(), desired) {
				t.Errorf("NeedsUpdate after re-apply = true; live: %s", dump.Pretty(s.get()))
			}
			live := s.get()
			for k, v := range desired.Annotations {
				if live.Annotations[k] != v {
					t.Errorf("after re-apply annotation %s = %q, want %q", k, live.Annotations[k], v)
				}
			}
			for k := range base.Annotations {
				if _, want := desired.Annotations[k]; !want && tc.name != "same value applied by another manager too" {
					if _, ok := live.Annotations[k]; ok {
						t.Errorf("after re-apply annotation %s is still there", k)
					}
				}
			}
			if got, want := live.Spec.Rules, desired.Spec.Rules; !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("after re-apply rules = %s, want %s", dump.Pretty(got), dump.Pretty(want))
			}
			if !isControlledBy(live, service(nil)) {
				t.Errorf("after re-apply not controlled by the service: %v", live.OwnerReferences)
			}
		})
	}
}

func TestNeedsUpdateKeepsForeignFieldsAcrossReapply(t *testing.T) {
	desired := desiredFor(t, Config{}, nil)
	s := newFakeServer(t)
	s.apply(mustApplyConfiguration(t, desired), manager)
	s.update("kubectl-annotate", func(ing *networkingv1.Ingress) {
		ing.Annotations = map[string]string{"other": "x"}
		ing.Spec.Rules[0].Host = "changed.example.com"
	})
	if !needsUpdate(t, s.cached(), desired) {
		t.Fatal("NeedsUpdate = false after our host was changed")
	}
	s.apply(mustApplyConfiguration(t, desired), manager)
	live := s.get()
	if live.Annotations["other"] != "x" || live.Spec.Rules[0].Host != "example.com" {
		t.Errorf("re-apply lost a foreign annotation or did not restore the host: %s", dump.Pretty(live))
	}
}

func TestNeedsUpdateWithoutOurEntry(t *testing.T) {
	desired := desiredFor(t, Config{}, nil)

	if !needsUpdate(t, nil, desired) {
		t.Error("NeedsUpdate(nil live) = false")
	}
	if _, err := ingressWriter(nil, manager).needsUpdate(desired, nil); err == nil {
		t.Error("NeedsUpdate(nil desired) gave no error")
	}

	// Another field manager's entries are not ours.
	s := newFakeServer(t)
	s.apply(mustApplyConfiguration(t, desired), "someone-else")
	if !needsUpdate(t, s.get(), desired) {
		t.Error("NeedsUpdate = false when only another manager applied")
	}
	s2 := newFakeServer(t)
	s2.update("someone-else", func(ing *networkingv1.Ingress) { *ing = *desired.DeepCopy() })
	if !needsUpdate(t, s2.get(), desired) {
		t.Error("NeedsUpdate = false when only another manager created the Ingress")
	}

	// The Builder method uses the configured field manager.
	b := mustBuilder(t, Config{FieldManager: "someone-else"})
	if got, err := ingressWriter(nil, b.fieldManager).needsUpdate(s.get(), desired); got || err != nil {
		t.Errorf("needsUpdate with the Builder's field manager = %v, %v; want false, nil", got, err)
	}
}

// TestCreatedIngressLifecycle follows an Ingress the controller creates
// (our fields owned by an Update entry) through an edit by someone else and
// a change of the desired state, as the controller's update handles it.
func TestCreatedIngressLifecycle(t *testing.T) {
	with := desiredFor(t, Config{}, map[string]string{"ingress/annotations": `{"ours": "1"}`})
	without := desiredFor(t, Config{}, nil)
	created := func() *fakeServer {
		s := newFakeServer(t)
		s.update(manager, func(ing *networkingv1.Ingress) { *ing = *with.DeepCopy() }) // our create
		if needsUpdate(t, s.cached(), with) {
			t.Fatalf("NeedsUpdate = true right after our create: %s", dump.Pretty(s.get()))
		}
		s.update("kubectl-edit", func(ing *networkingv1.Ingress) { ing.Annotations["theirs"] = "x" })
		if needsUpdate(t, s.cached(), with) {
			t.Fatal("NeedsUpdate = true after someone else added an annotation of theirs")
		}
		if !needsUpdate(t, s.cached(), without) {
			t.Fatal("NeedsUpdate = false when desired dropped an annotation we own")
		}
		return s
	}

	// Why the upgrade is needed: an apply alone cannot remove what our
	// Update entry owns.
	s := created()
	s.apply(mustApplyConfiguration(t, without).WithUID(s.get().UID), manager)
	if _, ok := s.get().Annotations["ours"]; !ok {
		t.Fatal("an apply alone removed a field our Update entry owns; the ownership upgrade is not needed any more")
	}
	// Left with both entries (e.g. by an older version of the controller
	// that applied without the upgrade), the object must still count as
	// needing an update, so that the update merges them and the field goes.
	if !needsUpdate(t, s.cached(), without) {
		t.Fatal("NeedsUpdate = false with our Apply and Update entries both present and a field only the Update entry owns")
	}

	// The controller's way: move our Update entry into our Apply entry
	// (csaupgrade, as upgradeOwnership sends it), then apply.
	s = created()
	live := s.get()
	if err := csaupgrade.UpgradeManagedFields(live, sets.New(manager), manager); err != nil {
		t.Fatal(err)
	}
	s.update(manager, func(ing *networkingv1.Ingress) { ing.ManagedFields = live.ManagedFields })
	if _, ok := ownEntry(s.get(), manager, metav1.ManagedFieldsOperationUpdate); ok {
		t.Fatalf("our Update entry survived the upgrade: %s", dump.Pretty(s.get().ManagedFields))
	}
	if needsUpdate(t, s.cached(), with) {
		t.Fatal("NeedsUpdate = true after the ownership upgrade alone")
	}
	s.apply(mustApplyConfiguration(t, without), manager)
	got := s.get()
	if _, ok := got.Annotations["ours"]; ok {
		t.Errorf("dropped annotation still there after upgrade + apply: %v", got.Annotations)
	}
	if got.Annotations["theirs"] != "x" {
		t.Errorf("foreign annotation lost: %v", got.Annotations)
	}
	if needsUpdate(t, s.cached(), without) {
		t.Errorf("NeedsUpdate = true after upgrade + apply: %s", dump.Pretty(got))
	}
}

func TestNeedsUpdateCorruptManagedFields(t *testing.T) {
	desired := desiredFor(t, Config{}, nil)
	s := newFakeServer(t)
	s.apply(mustApplyConfiguration(t, desired), manager)
	live := s.cached()
	live.ManagedFields[0].FieldsV1 = &metav1.FieldsV1{Raw: []byte(`{"f:spec":`)}
	got, err := ingressWriter(nil, manager).needsUpdate(live, desired)
	if !got || err == nil || !strings.Contains(err.Error(), manager) {
		t.Errorf("NeedsUpdate(corrupt) = %v, %v; want true and an error", got, err)
	}
}
