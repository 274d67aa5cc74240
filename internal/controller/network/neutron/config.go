package neutron

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
)

// ErrNotConfigured is returned by ConfigFromEnv when neither OS_CLOUD nor
// OS_AUTH_URL is set.
var ErrNotConfigured = errors.New("the Neutron backend is not configured: set OS_CLOUD (a cloud of clouds.yaml) " +
	"or the OS_* variables (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME, OS_USER_DOMAIN_NAME, OS_PROJECT_DOMAIN_NAME, OS_REGION_NAME)")

// ConfigFromEnv reads the OpenStack credentials the standard way:
//
//   - OS_CLOUD names a cloud of clouds.yaml (found as the OpenStack client
//     finds it: OS_CLIENT_CONFIG_FILE, ./clouds.yaml,
//     ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml);
//     OS_REGION_NAME and OS_INTERFACE override its region and interface.
//   - Otherwise the OS_* variables: OS_AUTH_URL, OS_USERNAME (or
//     OS_USER_ID), OS_PASSWORD, OS_PROJECT_NAME (or OS_PROJECT_ID),
//     OS_USER_DOMAIN_NAME / OS_USER_DOMAIN_ID, OS_PROJECT_DOMAIN_NAME /
//     OS_PROJECT_DOMAIN_ID (OS_DOMAIN_NAME / OS_DOMAIN_ID as a fallback for
//     both), OS_REGION_NAME, OS_INTERFACE, OS_CACERT, OS_INSECURE; or an
//     application credential (OS_APPLICATION_CREDENTIAL_ID or _NAME, and
//     OS_APPLICATION_CREDENTIAL_SECRET).
//
// Re-authentication on token expiry is always enabled. getenv is os.Getenv
// when nil.
func ConfigFromEnv(getenv func(string) string) (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if cloud := getenv("OS_CLOUD"); cloud != "" {
		opts := []clouds.ParseOption{clouds.WithCloudName(cloud)}
		if f := getenv("OS_CLIENT_CONFIG_FILE"); f != "" {
			opts = append(opts, clouds.WithLocations(f))
		}
		if r := getenv("OS_REGION_NAME"); r != "" {
			opts = append(opts, clouds.WithRegion(r))
		}
		if i := getenv("OS_INTERFACE"); i != "" {
			opts = append(opts, clouds.WithEndpointType(i))
		}
		ao, eo, tlsConfig, err := clouds.Parse(opts...)
		if err != nil {
			return ao, eo, nil, fmt.Errorf("reading cloud %q of clouds.yaml (OS_CLOUD): %w", cloud, err)
		}
		ao.AllowReauth = true
		return ao, eo, tlsConfig, nil
	}

	// The OS_* variables stay ours: gophercloud's clouds package reads only
	// clouds.yaml (and OS_CLOUD, OS_REGION_NAME, OS_INTERFACE, OS_CACERT),
	// and openstack.AuthOptionsFromEnv lacks OS_USER_DOMAIN_NAME,
	// OS_PROJECT_DOMAIN_NAME, OS_REGION_NAME and OS_INTERFACE, which an
	// openrc sets.
	authURL := getenv("OS_AUTH_URL")
	if authURL == "" {
		return gophercloud.AuthOptions{}, gophercloud.EndpointOpts{}, nil, ErrNotConfigured
	}
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := getenv(k); v != "" {
				return v
			}
		}
		return ""
	}
	ao := gophercloud.AuthOptions{
		IdentityEndpoint:            authURL,
		Username:                    getenv("OS_USERNAME"),
		UserID:                      first("OS_USER_ID", "OS_USERID"),
		Password:                    getenv("OS_PASSWORD"),
		ApplicationCredentialID:     getenv("OS_APPLICATION_CREDENTIAL_ID"),
		ApplicationCredentialName:   getenv("OS_APPLICATION_CREDENTIAL_NAME"),
		ApplicationCredentialSecret: getenv("OS_APPLICATION_CREDENTIAL_SECRET"),
		AllowReauth:                 true,
	}
	appCred := ao.ApplicationCredentialID != "" || ao.ApplicationCredentialName != ""
	var missing []string
	if ao.Username == "" && ao.UserID == "" && ao.ApplicationCredentialID == "" {
		missing = append(missing, "OS_USERNAME")
	}
	if appCred {
		if ao.ApplicationCredentialSecret == "" {
			missing = append(missing, "OS_APPLICATION_CREDENTIAL_SECRET")
		}
	} else if ao.Password == "" {
		missing = append(missing, "OS_PASSWORD")
	}
	// The user's domain (a user ID needs none).
	if ao.UserID == "" && ao.Username != "" {
		ao.DomainName = first("OS_USER_DOMAIN_NAME", "OS_DOMAIN_NAME")
		ao.DomainID = first("OS_USER_DOMAIN_ID", "OS_DOMAIN_ID")
		if ao.DomainName == "" && ao.DomainID == "" {
			missing = append(missing, "OS_USER_DOMAIN_NAME")
		}
		if ao.DomainID != "" {
			ao.DomainName = ""
		}
	}
	// The project scope (application credentials carry their own).
	if !appCred {
		switch {
		case getenv("OS_PROJECT_ID") != "" || getenv("OS_TENANT_ID") != "":
			ao.Scope = &gophercloud.AuthScope{ProjectID: first("OS_PROJECT_ID", "OS_TENANT_ID")}
		case getenv("OS_PROJECT_NAME") != "" || getenv("OS_TENANT_NAME") != "":
			scope := &gophercloud.AuthScope{
				ProjectName: first("OS_PROJECT_NAME", "OS_TENANT_NAME"),
				DomainID:    first("OS_PROJECT_DOMAIN_ID", "OS_DOMAIN_ID"),
				DomainName:  first("OS_PROJECT_DOMAIN_NAME", "OS_DOMAIN_NAME"),
			}
			if scope.DomainID != "" {
				scope.DomainName = ""
			}
			if scope.DomainID == "" && scope.DomainName == "" {
				missing = append(missing, "OS_PROJECT_DOMAIN_NAME")
			}
			ao.Scope = scope
		default:
			missing = append(missing, "OS_PROJECT_NAME")
		}
	}
	if len(missing) > 0 {
		return ao, gophercloud.EndpointOpts{}, nil, fmt.Errorf("OS_AUTH_URL is set but %s %s not: set them, or use OS_CLOUD with clouds.yaml",
			strings.Join(missing, ", "), map[bool]string{true: "is", false: "are"}[len(missing) == 1])
	}

	eo := gophercloud.EndpointOpts{Region: getenv("OS_REGION_NAME"), Availability: gophercloud.AvailabilityPublic}
	switch strings.TrimSuffix(strings.ToLower(getenv("OS_INTERFACE")), "url") {
	case "", "public":
	case "internal":
		eo.Availability = gophercloud.AvailabilityInternal
	case "admin":
		eo.Availability = gophercloud.AvailabilityAdmin
	default:
		return ao, eo, nil, fmt.Errorf("OS_INTERFACE=%q: want public, internal or admin", getenv("OS_INTERFACE"))
	}

	var tlsConfig *tls.Config
	if ca := getenv("OS_CACERT"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return ao, eo, nil, fmt.Errorf("reading OS_CACERT: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return ao, eo, nil, fmt.Errorf("OS_CACERT %s holds no PEM certificate", ca)
		}
		tlsConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if v := getenv("OS_INSECURE"); v != "" {
		insecure, err := strconv.ParseBool(v)
		if err != nil {
			return ao, eo, nil, fmt.Errorf("OS_INSECURE=%q: want true or false", v)
		}
		if insecure {
			if tlsConfig == nil {
				tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			}
			tlsConfig.InsecureSkipVerify = true //nolint:gosec // explicitly requested by the operator
		}
	}
	return ao, eo, tlsConfig, nil
}
