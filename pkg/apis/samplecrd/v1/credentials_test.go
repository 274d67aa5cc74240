package v1

import (
	"strings"
	"testing"
)

// spec.cloudCredentialsRef: the same rules in the CRD and in ValidateSpec,
// and immutable.
func TestCloudCredentialsRefValidation(t *testing.T) {
	v := loadCRDValidator(t)
	withRef := func(ref *CloudCredentialsRef) NetworkSpec {
		return NetworkSpec{CIDR: "10.0.0.0/8", Gateway: "10.0.0.1", CloudCredentialsRef: ref}
	}
	for _, tc := range []struct {
		name    string
		spec    NetworkSpec
		wantErr string
	}{
		{name: "a Secret and a cloud", spec: withRef(&CloudCredentialsRef{SecretName: "team-a.openstack", CloudName: "openstack"})},
		{name: "no Secret name", spec: withRef(&CloudCredentialsRef{CloudName: "openstack"}), wantErr: "spec.cloudCredentialsRef.secretName"},
		{name: "a Secret name that is no DNS subdomain", spec: withRef(&CloudCredentialsRef{SecretName: "Team_A", CloudName: "openstack"}), wantErr: "spec.cloudCredentialsRef.secretName"},
		{name: "no cloud name", spec: withRef(&CloudCredentialsRef{SecretName: "s"}), wantErr: "spec.cloudCredentialsRef.cloudName"},
		{name: "a cloud name too long", spec: withRef(&CloudCredentialsRef{SecretName: "s", CloudName: strings.Repeat("c", 256)}), wantErr: "spec.cloudCredentialsRef.cloudName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crdErr := v.validate(t, tc.spec, nil).ToAggregate()
			goErr := ValidateSpec(tc.spec)
			for what, err := range map[string]error{"the CRD": crdErr, "ValidateSpec": goErr} {
				switch {
				case tc.wantErr == "" && err != nil:
					t.Errorf("%s rejects %+v: %v", what, tc.spec.CloudCredentialsRef, err)
				case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
					t.Errorf("%s: %v, want an error naming %s", what, err, tc.wantErr)
				}
			}
		})
	}

	a := &CloudCredentialsRef{SecretName: "a", CloudName: "openstack"}
	for _, tc := range []struct {
		name     string
		old, new *CloudCredentialsRef
		wantErr  bool
	}{
		{name: "unchanged", old: a, new: &CloudCredentialsRef{SecretName: "a", CloudName: "openstack"}},
		{name: "added", new: a, wantErr: true},
		{name: "removed", old: a, wantErr: true},
		{name: "another Secret", old: a, new: &CloudCredentialsRef{SecretName: "b", CloudName: "openstack"}, wantErr: true},
		{name: "another cloud", old: a, new: &CloudCredentialsRef{SecretName: "a", CloudName: "other"}, wantErr: true},
	} {
		t.Run("update: "+tc.name, func(t *testing.T) {
			old := withRef(tc.old)
			err := v.validate(t, withRef(tc.new), &old).ToAggregate()
			if tc.wantErr != (err != nil) || (err != nil && !strings.Contains(err.Error(), "cloudCredentialsRef is immutable: a Network stays in the project it was created in")) {
				t.Errorf("update %+v -> %+v: %v", tc.old, tc.new, err)
			}
		})
	}
}
