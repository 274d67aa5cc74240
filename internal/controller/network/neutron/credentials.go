package neutron

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"sigs.k8s.io/yaml"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Cloud is a cloud entry of a Network's own clouds.yaml, as ParseCloud
// read it: what NewCloudBackend connects with.
type Cloud struct {
	AuthOptions  gophercloud.AuthOptions
	EndpointOpts gophercloud.EndpointOpts
	// Insecure is the entry's verify: false.
	Insecure bool
	// secrets are the entry's values, longest first: Redact takes them
	// out of every message.
	secrets []string
}

// minRedacted is the length under which a value of the entry is not
// taken out of messages (it would take words out of every message, and
// says too little to be a secret on its own).
const minRedacted = 4

// Redact returns s without any value of c's entry: a Secret's content
// never reaches a condition, an Event or a log line, whoever quotes it
// (gophercloud quotes Keystone's URL, user information and query
// included, in its errors).
func (c Cloud) Redact(s string) string {
	for _, v := range c.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return withoutUserInfo(s)
}

// secretsOf returns every value of the entry cloudName of cloudsYAML
// (and, of a URL, its user information, path, query and fragment, each
// alone) at least minRedacted long, longest first.
func secretsOf(cloudsYAML []byte, cloudName string) []string {
	var doc struct {
		Clouds map[string]any `json:"clouds"`
	}
	if yaml.Unmarshal(cloudsYAML, &doc) != nil {
		return nil
	}
	seen := map[string]bool{}
	add := func(v string) {
		if len(v) >= minRedacted {
			seen[v] = true
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			add(v)
			if u, err := url.Parse(v); err == nil && u.Scheme != "" {
				add(u.User.Username())
				p, _ := u.User.Password()
				add(p)
				add(u.User.String())
				add(u.Path)
				add(u.RawQuery)
				for _, vs := range u.Query() {
					for _, q := range vs {
						add(q)
					}
				}
				add(u.Fragment)
			}
		}
	}
	walk(doc.Clouds[cloudName])
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	// Longest first: a value holding another is taken out whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// keyKey keys the hash of cloud entries: a key of this process only, so
// that the hash (in logs, say) tells nothing of the content to anyone.
var keyKey = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("reading random bytes: %v", err)) // crypto/rand never fails on Linux
	}
	return b
}()

// publicClouds stands for clouds-public.yaml: a Network's entry naming a
// profile gets none, rather than one read from the manager's disk.
const publicClouds = "public-clouds: {}\n"

// yamlLine finds the line a YAML error names.
var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// where says where in the clouds.yaml a parse error is, and nothing else of
// it: a YAML error may quote the input, and some quote it whole (a map key
// of null has its value printed, password included), so only the line
// number it names is kept.
func where(err error) string {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return "at line " + m[1]
	}
	return "the parser's message is left out: it may quote the Secret"
}

// ParseCloud reads the entry cloudName of cloudsYAML, a clouds.yaml of a
// Network's Secret, with gophercloud's own parser, and returns it as a
// network.CloudConfig whose Config is a Cloud. Unlike the manager's own
// clouds.yaml, it may not name files (cacert, cert, key): they would be
// read from the manager's disk, on behalf of whoever wrote the Secret. Its
// errors never quote the content: ReasonCredentialsNotFound for a missing
// entry, ReasonCredentialsInvalid otherwise, each saying what to fix.
func ParseCloud(cloudsYAML []byte, cloudName string) (network.CloudConfig, error) {
	invalid := func(format string, args ...any) error {
		return network.Permanent("", samplecrdv1.ReasonCredentialsInvalid, fmt.Errorf(format, args...))
	}
	// A first look, with gophercloud's own types, at what its parser
	// would read from disk, and at whether the entry is there.
	var all clouds.Clouds
	if err := yaml.Unmarshal(cloudsYAML, &all); err != nil {
		return network.CloudConfig{}, invalid("clouds.yaml does not parse (%s): write it as the OpenStack client expects, clouds: {<name>: {auth: {auth_url: ..., username: ..., password: ..., project_name: ..., user_domain_name: ..., project_domain_name: ...}, region_name: ...}}",
			where(err))
	}
	entry, ok := all.Clouds[cloudName]
	if !ok {
		names := make([]string, 0, len(all.Clouds))
		for n := range all.Clouds {
			names = append(names, fmt.Sprintf("%q", n))
		}
		return network.CloudConfig{}, network.Permanent("", samplecrdv1.ReasonCredentialsNotFound, fmt.Errorf(
			"clouds.yaml has no cloud %q (it has %s): fix spec.cloudCredentialsRef.cloudName or the Secret", cloudName, orNone(names)))
	}
	var files []string
	for _, f := range []struct{ key, v string }{{"cacert", entry.CACertFile}, {"cert", entry.ClientCertFile}, {"key", entry.ClientKeyFile}} {
		if f.v != "" {
			files = append(files, f.key)
		}
	}
	if len(files) > 0 {
		return network.CloudConfig{}, invalid("cloud %q names files (%s): a Network's credentials cannot point at the manager's disk; remove them (Keystone's certificate must then be trusted by the manager's CA bundle, or set verify: false)",
			cloudName, strings.Join(files, ", "))
	}
	if entry.AuthInfo == nil || entry.AuthInfo.AuthURL == "" {
		return network.CloudConfig{}, invalid("cloud %q has no auth.auth_url: set it to Keystone's URL, e.g. https://keystone.example.com:5000/v3", cloudName)
	}
	ao, eo, tlsConfig, err := clouds.Parse(
		clouds.WithCloudsYAML(strings.NewReader(string(cloudsYAML))),
		clouds.WithCloudsPublicYAML(strings.NewReader(publicClouds)),
		clouds.WithCloudName(cloudName),
		// Not the manager's OS_REGION_NAME and OS_INTERFACE: the entry's.
		clouds.WithRegion(""),
		clouds.WithEndpointType(""),
	)
	if err != nil {
		return network.CloudConfig{}, invalid("cloud %q does not parse (%s): fix the entry in the Secret", cloudName, where(err))
	}
	ao.AllowReauth = true
	appCred := ao.ApplicationCredentialID != "" || ao.ApplicationCredentialName != ""
	var missing []string
	switch {
	case appCred && ao.ApplicationCredentialSecret == "":
		missing = append(missing, "auth.application_credential_secret")
	case !appCred && ao.TokenID == "" && ao.Password == "":
		missing = append(missing, "auth.password (or an application credential)")
	}
	if !appCred && ao.Username == "" && ao.UserID == "" && ao.TokenID == "" {
		missing = append(missing, "auth.username")
	}
	if !appCred && (ao.Scope == nil || (ao.Scope.ProjectID == "" && ao.Scope.ProjectName == "")) {
		missing = append(missing, "auth.project_name (with auth.project_domain_name) or auth.project_id: the controller works in one project")
	}
	if len(missing) > 0 {
		return network.CloudConfig{}, invalid("cloud %q lacks %s", cloudName, strings.Join(missing, ", "))
	}
	cl := Cloud{AuthOptions: ao, EndpointOpts: eo, Insecure: tlsConfig != nil && tlsConfig.InsecureSkipVerify, secrets: secretsOf(cloudsYAML, cloudName)}
	key := cl.key()
	// Nothing of the content: the description reaches messages that the
	// readers of Networks and Events see, who may not read the Secret.
	return network.CloudConfig{Key: key, Description: "entry " + key[:12], Config: cl}, nil
}

// key is a keyed hash of every field of c that reaches Keystone or Neutron.
func (c Cloud) key() string {
	ao := c.AuthOptions
	fields := []any{ao.IdentityEndpoint, ao.Username, ao.UserID, ao.Password, ao.Passcode, ao.DomainID, ao.DomainName,
		ao.TenantID, ao.TenantName, ao.TokenID, ao.ApplicationCredentialID, ao.ApplicationCredentialName,
		ao.ApplicationCredentialSecret, ao.Scope, c.EndpointOpts.Region, c.EndpointOpts.Availability, c.Insecure}
	b, err := json.Marshal(fields)
	if err != nil {
		panic(fmt.Sprintf("encoding a cloud entry: %v", err)) // strings, bools and a plain struct always encode
	}
	m := hmac.New(sha256.New, keyKey)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// NewCloudBackend returns what network.Credentials.NewBackend calls: a
// Neutron backend per cloud entry, with base's settings (ManagedBy,
// timeouts, the in-flight cap, which is per backend: per cloud) and the
// entry's credentials. Keystone refusing them is a Down error of reason
// ReasonCredentialsRefused.
func NewCloudBackend(base Options) func(ctx context.Context, cfg network.CloudConfig) (network.Backend, error) {
	return func(ctx context.Context, cfg network.CloudConfig) (network.Backend, error) {
		c, ok := cfg.Config.(Cloud)
		if !ok {
			return nil, fmt.Errorf("cloud entry of type %T, not a neutron.Cloud", cfg.Config)
		}
		opts := base
		opts.ServiceClient, opts.ProviderClient = nil, nil
		opts.AuthOptions = &c.AuthOptions
		opts.EndpointOpts = c.EndpointOpts
		if c.Insecure {
			opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // the entry's verify: false
		}
		b, err := New(ctx, opts)
		if err == nil {
			return network.Redacting(b, c.Redact), nil
		}
		if code, ok := statusCode(err); ok && code == http.StatusUnauthorized {
			// The controller's message says what to check.
			err = &network.Error{Reason: samplecrdv1.ReasonCredentialsRefused, Down: true, Err: err}
		} else if netErr := (*network.Error)(nil); !errors.As(err, &netErr) {
			err = network.Down("connecting", err)
		}
		return nil, network.RedactError(err, c.Redact)
	}
}
