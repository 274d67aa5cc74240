package neutron_test

import (
	"strings"
	"testing"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

const tenantYAML = `clouds:
  openstack:
    auth:
      auth_url: https://keystone.example:5000/v3
      username: team-a
      password: s3cret-pw
      project_name: team-a
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionTwo
`

// A Network's clouds.yaml is read by gophercloud's parser; its entries
// are keyed by content, never quoted in errors, and the manager's own
// environment does not leak into them.
func TestParseCloud(t *testing.T) {
	t.Setenv("OS_REGION_NAME", "ManagersRegion")
	t.Setenv("OS_INTERFACE", "admin")
	t.Setenv("OS_CLOUD", "managers")
	cfg, err := neutron.ParseCloud([]byte(tenantYAML), "openstack")
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config.(neutron.Cloud)
	if c.AuthOptions.Username != "team-a" || c.AuthOptions.Scope == nil || c.AuthOptions.Scope.ProjectName != "team-a" ||
		c.EndpointOpts.Region != "RegionTwo" || c.EndpointOpts.Availability != "public" || !c.AuthOptions.AllowReauth {
		t.Errorf("parsed %+v / %+v, want the entry's user, project and region, the public interface, re-authentication", c.AuthOptions, c.EndpointOpts)
	}
	// The description names the entry by its key alone: nothing of the
	// Secret (TestNoSecretInAnyMessage proves the messages).
	if cfg.Description != "entry "+cfg.Key[:12] {
		t.Errorf("description %q, want the key's prefix alone", cfg.Description)
	}
	withSecrets := strings.Replace(tenantYAML, "https://keystone.example:5000/v3", "https://ops:s3cret@keystone.example:5000/v3?token=s3cret#s3cret", 1)
	c2, err := neutron.ParseCloud([]byte(withSecrets), "openstack")
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{
		`POST https://ops:s3cret@keystone.example:5000/v3?token=s3cret#s3cret/auth/tokens: 401 as user "team-a" in project "team-a"`,
		`Post "https://ops:***@keystone.example:5000/v3?token=s3cret/auth/tokens": dial tcp: connection refused`,
	} {
		if got := c2.Config.(neutron.Cloud).Redact(msg); strings.Contains(got, "s3cret") || strings.Contains(got, "team-a") || strings.Contains(got, "ops") {
			t.Errorf("Redact(%q) = %q: quotes the entry", msg, got)
		}
	}
	again, _ := neutron.ParseCloud([]byte("# another Secret, the same entry\n"+tenantYAML), "openstack")
	rotated, _ := neutron.ParseCloud([]byte(strings.Replace(tenantYAML, "s3cret-pw", "n3w-pw", 1)), "openstack")
	if again.Key != cfg.Key || rotated.Key == cfg.Key || len(cfg.Key) != 64 || strings.Contains(cfg.Key, "s3cret") {
		t.Errorf("keys: %s, same entry %s, rotated %s: want equal for the same entry, different after a rotation", cfg.Key, again.Key, rotated.Key)
	}

	for _, tc := range []struct {
		name, yaml, cloud, reason, want string
	}{
		{name: "no such cloud", yaml: tenantYAML, cloud: "other", reason: samplecrdv1.ReasonCredentialsNotFound, want: `clouds.yaml has no cloud "other" (it has "openstack")`},
		{name: "not YAML", yaml: "clouds: {openstack: {auth: {password: 's3cret-pw}}", cloud: "openstack", reason: samplecrdv1.ReasonCredentialsInvalid, want: "clouds.yaml does not parse"},
		{name: "a key of null (whose value a YAML error prints)", yaml: "clouds: {~: {auth: {password: s3cret-pw}}, openstack: {}}", cloud: "openstack",
			reason: samplecrdv1.ReasonCredentialsInvalid, want: "clouds.yaml does not parse"},
		{name: "a value of the wrong type", yaml: "clouds: {openstack: {verify: s3cret-pw}}", cloud: "openstack", reason: samplecrdv1.ReasonCredentialsInvalid, want: "clouds.yaml does not parse"},
		{name: "a CA file", yaml: strings.Replace(tenantYAML, "    region_name", "    cacert: /etc/openstack/ca.crt\n    region_name", 1), cloud: "openstack",
			reason: samplecrdv1.ReasonCredentialsInvalid, want: "names files (cacert)"},
		{name: "a client key", yaml: strings.Replace(tenantYAML, "    region_name", "    cert: /a\n    key: /b\n    region_name", 1), cloud: "openstack",
			reason: samplecrdv1.ReasonCredentialsInvalid, want: "names files (cert, key)"},
		{name: "no auth_url", yaml: strings.Replace(tenantYAML, "      auth_url: https://keystone.example:5000/v3\n", "", 1), cloud: "openstack",
			reason: samplecrdv1.ReasonCredentialsInvalid, want: "has no auth.auth_url"},
		{name: "no password", yaml: strings.Replace(tenantYAML, "      password: s3cret-pw\n", "", 1), cloud: "openstack",
			reason: samplecrdv1.ReasonCredentialsInvalid, want: "lacks auth.password"},
		{name: "no project", yaml: strings.Replace(tenantYAML, "      project_name: team-a\n", "", 1), cloud: "openstack",
			reason: samplecrdv1.ReasonCredentialsInvalid, want: "auth.project_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := neutron.ParseCloud([]byte(tc.yaml), tc.cloud)
			if err == nil || network.Reason(err) != tc.reason || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseCloud = %v (%s), want %s saying %q", err, network.Reason(err), tc.reason, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error quotes the content: %v", err)
			}
		})
	}

	// An application credential carries its own project.
	appCred := "clouds: {ac: {auth: {auth_url: 'https://k/v3', application_credential_id: id1, application_credential_secret: s3cret}}}"
	if _, err := neutron.ParseCloud([]byte(appCred), "ac"); err != nil {
		t.Errorf("an application credential: %v", err)
	}
}
