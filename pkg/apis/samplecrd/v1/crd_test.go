package v1

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// These tests run the generated CRD's validation (OpenAPI schema and CEL
// rules) with the API server's own code, without starting an API server.

const crdFile = "../../../../config/crd/samplecrd.k8s.io_networks.yaml"

type crdValidator struct {
	schema     apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
}

func loadCRD(t testing.TB) *apiextensions.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(crdFile))
	if err != nil {
		t.Fatalf("reading the CRD (run hack/update-codegen.sh): %v", err)
	}
	var v1crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &v1crd); err != nil {
		t.Fatalf("decoding %s: %v", crdFile, err)
	}
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1crd, &crd, nil); err != nil {
		t.Fatalf("converting the CRD: %v", err)
	}
	return &crd
}

func loadCRDValidator(t testing.TB) *crdValidator {
	t.Helper()
	crd := loadCRD(t)
	// The conversion moves a schema shared by every version to spec.validation.
	var openAPI *apiextensions.JSONSchemaProps
	switch {
	case crd.Spec.Validation != nil:
		openAPI = crd.Spec.Validation.OpenAPIV3Schema
	case len(crd.Spec.Versions) == 1 && crd.Spec.Versions[0].Schema != nil:
		openAPI = crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	default:
		t.Fatalf("want one schema, got %d versions and no spec.validation", len(crd.Spec.Versions))
	}
	structural, err := structuralschema.NewStructural(openAPI)
	if err != nil {
		t.Fatalf("structural schema: %v", err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(openAPI)
	if err != nil {
		t.Fatalf("schema validator: %v", err)
	}
	return &crdValidator{
		schema:     sv,
		structural: structural,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}
}

// networkObject is a Network with spec as JSON sends it (omitted fields
// absent); cidr and gateway are always sent, as clients of the version
// before they were optional did.
func networkObject(t testing.TB, spec NetworkSpec) map[string]any {
	return networkWithStatus(t, spec, nil)
}

// networkWithStatus is networkObject with status (nil: none).
func networkWithStatus(t testing.TB, spec NetworkSpec, status *NetworkStatus) map[string]any {
	t.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	// As the API server decodes it: whole numbers as int64.
	if err := utiljson.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if spec.Import == nil {
		s["cidr"], s["gateway"] = spec.CIDR, spec.Gateway
	}
	obj := map[string]any{
		"apiVersion": SchemeGroupVersion.String(),
		"kind":       "Network",
		"metadata":   map[string]any{"name": "n", "namespace": "default"},
		"spec":       s,
	}
	if status != nil {
		data, err := json.Marshal(status)
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		if err := utiljson.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		obj["status"] = st
	}
	return obj
}

// validate returns the errors the API server reports for creating a Network
// with spec (old == nil) or updating one from old to spec.
func (v *crdValidator) validate(t testing.TB, spec NetworkSpec, old *NetworkSpec) field.ErrorList {
	t.Helper()
	return v.validateWithStatus(t, spec, old, nil)
}

// validateWithStatus is validate of an update of a Network whose stored
// status is status (the API server keeps it on a spec update).
func (v *crdValidator) validateWithStatus(t testing.TB, spec NetworkSpec, old *NetworkSpec, status *NetworkStatus) field.ErrorList {
	t.Helper()
	obj := networkWithStatus(t, spec, status)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, v.schema)
	// x-kubernetes-list-type: set (the API server checks it apart from the schema).
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	var oldObj any
	if old != nil {
		oldObj = networkWithStatus(t, *old, status)
	}
	celErrs, remaining := v.cel.Validate(context.Background(), nil, v.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
	if remaining < 0 {
		t.Fatalf("CEL cost budget exceeded for %+v: %v", spec, celErrs)
	}
	return append(errs, celErrs...)
}

// TestCRDIsValid runs the API server's CRD validation (structural schema,
// CEL compilation and cost estimates, the api-approved annotation).
func TestCRDIsValid(t *testing.T) {
	crd := loadCRD(t)
	crd.Status.StoredVersions = []string{"v1"} // set by the API server on create
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd); len(errs) > 0 {
		t.Fatalf("the API server would reject the CRD: %v", errs.ToAggregate())
	}
	if got := crd.Annotations["api-approved.kubernetes.io"]; !strings.HasPrefix(got, "unapproved") {
		t.Errorf("api-approved.kubernetes.io = %q", got)
	}
	if crd.Name != "networks."+GroupName || crd.Spec.Scope != apiextensions.NamespaceScoped ||
		len(crd.Spec.Names.ShortNames) != 1 || crd.Spec.Names.ShortNames[0] != "net" {
		t.Errorf("unexpected names/scope: %s %s %v", crd.Name, crd.Spec.Scope, crd.Spec.Names.ShortNames)
	}
	var cols []string
	columns := crd.Spec.AdditionalPrinterColumns
	if len(columns) == 0 && len(crd.Spec.Versions) == 1 {
		columns = crd.Spec.Versions[0].AdditionalPrinterColumns
	}
	for _, c := range columns {
		cols = append(cols, c.Name+"="+c.JSONPath)
	}
	want := `CIDR=.spec.cidr Gateway=.spec.gateway Policy=.spec.managementPolicy Network=.status.networkID Ready=.status.conditions[?(@.type=="Ready")].status Age=.metadata.creationTimestamp`
	if got := strings.Join(cols, " "); got != want {
		t.Errorf("printer columns:\n got %s\nwant %s", got, want)
	}
	subresources := crd.Spec.Subresources
	if subresources == nil && len(crd.Spec.Versions) == 1 {
		subresources = crd.Spec.Versions[0].Subresources
	}
	if subresources == nil || subresources.Status == nil {
		t.Errorf("the status subresource is not enabled")
	}
}

// TestCRDValidation holds the CRD to the same cases as ValidateSpec.
func TestCRDValidation(t *testing.T) {
	v := loadCRDValidator(t)
	for _, tc := range specCases {
		t.Run(tc.name, func(t *testing.T) {
			errs := v.validate(t, tc.spec, nil)
			if tc.wantErr == nil {
				if len(errs) > 0 {
					t.Fatalf("the API server would reject %+v: %v", tc.spec, errs.ToAggregate())
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("the API server would accept %+v, want an error containing %q", tc.spec, tc.wantErr)
			}
			msg := errs.ToAggregate().Error()
			for _, want := range tc.wantErr {
				if !strings.Contains(msg, want) {
					t.Errorf("API server errors for %+v:\n%s\nwant them to contain %q", tc.spec, msg, want)
				}
			}
		})
	}
}

func TestCRDValidationSeedSample(t *testing.T) {
	data, err := os.ReadFile(filepath.FromSlash("../../../../config/samples/network.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var n Network
	if err := yaml.UnmarshalStrict(data, &n); err != nil {
		t.Fatalf("decoding the sample: %v", err)
	}
	if n.APIVersion != SchemeGroupVersion.String() || n.Kind != "Network" || n.Name != "example-network" {
		t.Fatalf("unexpected sample: %+v", n)
	}
	if errs := loadCRDValidator(t).validate(t, n.Spec, nil); len(errs) > 0 {
		t.Fatalf("the API server would reject the seed's Network: %v", errs.ToAggregate())
	}
}

func TestCRDValidationUpdate(t *testing.T) {
	v := loadCRDValidator(t)
	seed := NetworkSpec{CIDR: "192.168.0.0/16", Gateway: "192.168.0.1"}
	byID := NetworkSpec{Import: &NetworkImport{NetworkID: "n1"}}
	unmanaged := NetworkSpec{ManagementPolicy: ManagementPolicyUnmanaged, Import: &NetworkImport{NetworkID: "n1"}}
	with := func(s NetworkSpec, change func(*NetworkSpec)) NetworkSpec {
		change(&s)
		return s
	}
	pooled := NetworkSpec{SubnetPool: &SubnetPoolRef{Name: "shared"}, PrefixLength: ptr(int32(26))}
	routed := with(seed, func(s *NetworkSpec) { s.Router = &RouterRef{Name: "edge"} })
	attached := &NetworkStatus{Router: &RouterObservation{ID: "r1", PortID: "p1"}}
	for _, tc := range []struct {
		name    string
		old     *NetworkSpec // nil: the seed's
		status  *NetworkStatus
		spec    NetworkSpec
		wantErr string
	}{
		{name: "policy set to its default", spec: with(seed, func(s *NetworkSpec) { s.ManagementPolicy = ManagementPolicyManaged })},
		{name: "ondelete changed", spec: with(seed, func(s *NetworkSpec) { s.OnDelete = OnDeleteDetach })},
		{name: "policy changed to unmanaged", old: &byID, spec: unmanaged,
			wantErr: "managementPolicy is immutable: delete the Network and create it again with the new policy"},
		{name: "policy changed to managed", old: &unmanaged, spec: byID, wantErr: "managementPolicy is immutable"},
		{name: "import added", spec: with(seed, func(s *NetworkSpec) { s.Import = &NetworkImport{NetworkID: "n1"} }),
			wantErr: "import is immutable: delete the Network and create it again with the import it should have"},
		{name: "import removed", old: &byID, spec: seed, wantErr: "import is immutable"},
		{name: "import id changed", old: &byID, spec: NetworkSpec{Import: &NetworkImport{NetworkID: "n2"}}, wantErr: "import is immutable"},
		{name: "import filter changed", old: &NetworkSpec{Import: &NetworkImport{Filter: &NetworkFilter{Name: "a"}}},
			spec: NetworkSpec{Import: &NetworkImport{Filter: &NetworkFilter{Name: "a", Tags: []string{"t"}}}}, wantErr: "import is immutable"},
		{name: "import gateway changed", old: &byID, spec: with(byID, func(s *NetworkSpec) { s.Gateway = "10.0.0.1" })},
		{name: "import cidr added", old: &byID, spec: with(byID, func(s *NetworkSpec) { s.CIDR = "10.0.0.0/8" }), wantErr: "cidr is immutable"},
		{name: "unchanged", spec: seed},
		{name: "subnet pool added", spec: pooled, wantErr: "subnetPool and prefixLength are immutable"},
		{name: "subnet pool changed", old: &pooled, spec: with(pooled, func(s *NetworkSpec) { s.SubnetPool = &SubnetPoolRef{Name: "other"} }),
			wantErr: "subnetPool is immutable: Neutron cannot move a subnet to another pool"},
		{name: "prefix length changed", old: &pooled, spec: with(pooled, func(s *NetworkSpec) { s.PrefixLength = ptr(int32(27)) }), wantErr: "prefixLength is immutable"},
		{name: "pooled settings changed", old: &pooled, spec: with(pooled, func(s *NetworkSpec) { s.EnableDHCP = ptr(false) })},
		{name: "router added", spec: with(seed, func(s *NetworkSpec) { s.Router = &RouterRef{Name: "edge"} })},
		{name: "router removed", old: &routed, spec: seed},
		{name: "router switched while attached", old: &routed, status: attached, spec: with(seed, func(s *NetworkSpec) { s.Router = &RouterRef{Name: "other"} }),
			wantErr: "router cannot be switched to another router in one edit while the subnet is attached (status.router): Neutron cannot move a router interface; remove spec.router"},
		{name: "router switched before it was ever attached (a typo fixed in one edit)", old: &routed, spec: with(seed, func(s *NetworkSpec) { s.Router = &RouterRef{Name: "other"} })},
		{name: "gateway changed with a router attached", old: &routed, status: attached, spec: with(routed, func(s *NetworkSpec) { s.Gateway = "192.168.255.254" }),
			wantErr: "the gateway cannot change while the subnet is attached to a router"},
		{name: "gateway changed with a router not attached", old: &routed, spec: with(routed, func(s *NetworkSpec) { s.Gateway = "192.168.255.254" })},
		{name: "settings changed with a router", old: &routed, spec: with(routed, func(s *NetworkSpec) { s.DNSNameservers = []string{"192.168.0.53"} })},
		{name: "gateway change", spec: NetworkSpec{CIDR: "192.168.0.0/16", Gateway: "192.168.255.254"}},
		{name: "cidr change", spec: NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "10.0.0.1"},
			wantErr: "cidr is immutable: Neutron cannot change a subnet's CIDR; delete the Network and create it again with the new cidr"},
		{name: "cidr widened", spec: NetworkSpec{CIDR: "192.168.0.0/15", Gateway: "192.168.0.1"}, wantErr: "cidr is immutable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := &seed
			if tc.old != nil {
				old = tc.old
			}
			errs := v.validateWithStatus(t, tc.spec, old, tc.status)
			if tc.wantErr == "" {
				if len(errs) > 0 {
					t.Fatalf("the API server would reject the update to %+v: %v", tc.spec, errs.ToAggregate())
				}
				return
			}
			if msg := errs.ToAggregate(); msg == nil || !strings.Contains(msg.Error(), tc.wantErr) {
				t.Fatalf("update to %+v: got %v, want an error containing %q", tc.spec, msg, tc.wantErr)
			}
		})
	}
}
