// Package fakeopenstack is an in-process OpenStack for tests: Keystone v3
// password authentication with a service catalog, and the Neutron v2.0
// networks, subnets and tags API, as the OpenStack API reference describes
// them (paths, JSON bodies, status codes, NeutronError bodies), with
// injectable faults (5xx, latency, a server that is down, token expiry) and
// request counters.
//
// The server listens on 127.0.0.1 only, lays its services out like DevStack
// (Keystone under /identity, Neutron under /networking) and keeps everything
// in memory:
//
//	s := fakeopenstack.New()
//	defer s.Close()
//	for k, v := range s.Env() { t.Setenv(k, v) }   // OS_AUTH_URL, OS_USERNAME, ...
//
// Behaviour that matters to clients:
//   - POST /identity/v3/auth/tokens checks the user, password, domains and
//     project scope, and answers 201 with X-Subject-Token and a token body
//     whose catalog lists the network service (public, internal and admin
//     interfaces, region RegionOne) at <URL>/networking/. Bad credentials: 401.
//   - Neutron requests need a valid, unexpired X-Auth-Token, else 401, so
//     clients re-authenticate (ExpireTokens, SetTokenTTL).
//   - Neutron: 404 NetworkNotFound/SubnetNotFound for missing objects; 409
//     NetworkInUse when deleting a network that still has subnets (stricter
//     than Neutron, which deletes unused subnets with their network; it makes
//     clients delete in the right order); 400 InvalidInput for invalid or
//     overlapping CIDRs (as Neutron: overlapping subnets of one network, and,
//     with SetAllowOverlappingIPs(false), of any networks), host bits set,
//     bad gateways, unknown attributes and unknown filters.
//   - Lists filter by any attribute (repeated parameters OR-ed), by tags,
//     tags-any, not-tags and not-tags-any, and page with limit and marker.
//   - Tags: PUT/GET/DELETE /v2.0/{networks,subnets}/{id}/tags[/{tag}], and
//     "tags" in a POST body (the tag-creation extension).
package fakeopenstack

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Default credentials and catalog settings of a new Server.
const (
	DefaultUsername      = "admin"
	DefaultPassword      = "secret"
	DefaultUserDomain    = "Default"
	DefaultProjectName   = "demo"
	DefaultProjectDomain = "Default"
	DefaultRegion        = "RegionOne"
	DefaultTokenTTL      = time.Hour

	identityPrefix = "/identity"
	networkPrefix  = "/networking"
	// MaxTagLength is Neutron's limit on a tag's length.
	MaxTagLength = 255
)

// Network is a Neutron network as the API returns it.
type Network struct {
	ID                    string   `json:"id"`
	Name                  string   `json:"name"`
	Description           string   `json:"description"`
	AdminStateUp          bool     `json:"admin_state_up"`
	Status                string   `json:"status"`
	Subnets               []string `json:"subnets"`
	TenantID              string   `json:"tenant_id"`
	ProjectID             string   `json:"project_id"`
	Shared                bool     `json:"shared"`
	RouterExternal        bool     `json:"router:external"`
	MTU                   int      `json:"mtu"`
	PortSecurityEnabled   bool     `json:"port_security_enabled"`
	AvailabilityZoneHints []string `json:"availability_zone_hints"`
	AvailabilityZones     []string `json:"availability_zones"`
	IPv4AddressScope      *string  `json:"ipv4_address_scope"`
	IPv6AddressScope      *string  `json:"ipv6_address_scope"`
	Tags                  []string `json:"tags"`
	CreatedAt             string   `json:"created_at"`
	UpdatedAt             string   `json:"updated_at"`
	RevisionNumber        int      `json:"revision_number"`
}

// Subnet is a Neutron subnet as the API returns it.
type Subnet struct {
	ID              string           `json:"id"`
	Name            string           `json:"name"`
	Description     string           `json:"description"`
	NetworkID       string           `json:"network_id"`
	TenantID        string           `json:"tenant_id"`
	ProjectID       string           `json:"project_id"`
	IPVersion       int              `json:"ip_version"`
	CIDR            string           `json:"cidr"`
	GatewayIP       *string          `json:"gateway_ip"`
	AllocationPools []AllocationPool `json:"allocation_pools"`
	EnableDHCP      bool             `json:"enable_dhcp"`
	DNSNameservers  []string         `json:"dns_nameservers"`
	HostRoutes      []HostRoute      `json:"host_routes"`
	ServiceTypes    []string         `json:"service_types"`
	SubnetPoolID    *string          `json:"subnetpool_id"`
	IPv6AddressMode *string          `json:"ipv6_address_mode"`
	IPv6RAMode      *string          `json:"ipv6_ra_mode"`
	Tags            []string         `json:"tags"`
	CreatedAt       string           `json:"created_at"`
	UpdatedAt       string           `json:"updated_at"`
	RevisionNumber  int              `json:"revision_number"`
}

// AllocationPool is a range of addresses of a subnet.
type AllocationPool struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// HostRoute is a static route of a subnet.
type HostRoute struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

// Server is a fake Keystone + Neutron. Create it with New; it is safe for
// concurrent use.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string
	// AuthURL is the Keystone v3 endpoint (URL + "/identity/v3").
	AuthURL string
	// NetworkURL is the network endpoint of the catalog (URL + "/networking/").
	NetworkURL string

	// Username, Password, UserDomain, ProjectName, ProjectID, ProjectDomain
	// and Region are the accepted credentials and the catalog region. Change
	// them only before the first request.
	Username, Password, UserDomain        string
	ProjectName, ProjectID, ProjectDomain string
	Region                                string

	srv *httptest.Server

	mu           sync.Mutex
	tokens       map[string]time.Time // token -> expiry
	tokenTTL     time.Duration
	networks     map[string]*Network
	subnets      map[string]*Subnet
	order        map[string]int // creation sequence of networks and subnets, for listing
	seq          int
	allowOverlap bool
	now          func() time.Time

	latency  time.Duration
	down     bool
	failNext []int // statuses of the next Neutron API requests
	routes   map[string]*routeFault
	counts   map[string]int
	created  []Network // every network created through the API
}

type routeFault struct {
	status, remaining int // remaining < 0: forever
}

// New starts a server on 127.0.0.1 with the default credentials. Close it
// when done (or use NewForTest).
func New() *Server {
	s := &Server{
		Username: DefaultUsername, Password: DefaultPassword, UserDomain: DefaultUserDomain,
		ProjectName: DefaultProjectName, ProjectID: strings.ReplaceAll(uuid.NewString(), "-", ""), ProjectDomain: DefaultProjectDomain,
		Region:       DefaultRegion,
		tokens:       map[string]time.Time{},
		tokenTTL:     DefaultTokenTTL,
		networks:     map[string]*Network{},
		subnets:      map[string]*Subnet{},
		order:        map[string]int{},
		allowOverlap: true,
		now:          time.Now,
		routes:       map[string]*routeFault{},
		counts:       map[string]int{},
	}
	s.srv = httptest.NewUnstartedServer(s.handler())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakeopenstack: listening on 127.0.0.1: %v", err))
	}
	s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	s.AuthURL = s.URL + identityPrefix + "/v3"
	s.NetworkURL = s.URL + networkPrefix + "/"
	return s
}

// NewForTest starts a server that is closed when the test ends.
func NewForTest(t testing.TB) *Server {
	s := New()
	t.Cleanup(s.Close)
	return s
}

// Close shuts the server down; later requests are refused.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Client returns an HTTP client for the server (a plain client; the server
// speaks HTTP).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Env returns the OS_* environment variables that authenticate to this
// server with the standard OpenStack variables.
func (s *Server) Env() map[string]string {
	return map[string]string{
		"OS_AUTH_URL":             s.AuthURL,
		"OS_USERNAME":             s.Username,
		"OS_PASSWORD":             s.Password,
		"OS_PROJECT_NAME":         s.ProjectName,
		"OS_USER_DOMAIN_NAME":     s.UserDomain,
		"OS_PROJECT_DOMAIN_NAME":  s.ProjectDomain,
		"OS_REGION_NAME":          s.Region,
		"OS_IDENTITY_API_VERSION": "3",
		"OS_INTERFACE":            "public",
	}
}

// CloudsYAML returns a clouds.yaml defining the cloud name for this server.
func (s *Server) CloudsYAML(name string) string {
	return fmt.Sprintf(`clouds:
  %s:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: %s
      project_domain_name: %s
    region_name: %s
    interface: public
    identity_api_version: 3
`, name, s.AuthURL, s.Username, s.Password, s.ProjectName, s.UserDomain, s.ProjectDomain, s.Region)
}

// --- faults and counters ---

// SetLatency delays every request by d before it is handled (0 removes it).
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// SetDown makes the server drop every request (Keystone and Neutron): the
// connection is closed without a response, as when a server or load
// balancer dies. Close the server to refuse connections instead.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// FailNext makes the next n Neutron API requests (not Keystone, not version
// discovery) fail with status and a NeutronError body.
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failNext = append(s.failNext, status)
	}
}

// FailRoute makes the next n requests to route fail with status (n < 0:
// until ClearFaults). route is a method and a path pattern as Counts names
// them, e.g. "POST /v2.0/subnets", "DELETE /v2.0/networks/{id}" or
// "POST /v3/auth/tokens".
func (s *Server) FailRoute(route string, status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[route] = &routeFault{status: status, remaining: n}
}

// ClearFaults removes every fault: latency, down, FailNext and FailRoute.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency, s.down, s.failNext = 0, false, nil
	s.routes = map[string]*routeFault{}
}

// ExpireTokens makes every token issued so far expired: the next Neutron
// request with one gets 401 and the client has to re-authenticate.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	past := s.now().Add(-time.Second)
	for tok := range s.tokens {
		s.tokens[tok] = past
	}
}

// SetTokenTTL sets the lifetime of the tokens issued from now on.
func (s *Server) SetTokenTTL(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenTTL = d
}

// SetAllowOverlappingIPs(false) makes subnets of different networks unable
// to overlap, like Neutron with allow_overlapping_ips = False (the default,
// true, only forbids overlaps within one network).
func (s *Server) SetAllowOverlappingIPs(allow bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allowOverlap = allow
}

// Count returns how many requests route received, e.g.
// Count("POST /v2.0/networks") or Count("POST /v3/auth/tokens"); faulted
// and dropped requests count too.
func (s *Server) Count(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[route]
}

// Counts returns a copy of every route's request count.
func (s *Server) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// Writes returns the number of Neutron write requests (POST, PUT, DELETE).
func (s *Server) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.counts {
		if strings.Contains(k, " /v2.0/") && !strings.HasPrefix(k, "GET ") {
			n += v
		}
	}
	return n
}

// ResetCounts zeroes the request counters.
func (s *Server) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = map[string]int{}
}

// CreatedNetworks returns every network created through the API, as it was
// created, in order, including the ones deleted since: a client that
// created two networks for one object shows here even after it deleted one.
func (s *Server) CreatedNetworks() []Network {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.created)
}

// --- direct state access, as an operator (or another tool) would see it ---

// Networks returns every network, in creation order.
func (s *Server) Networks() []Network {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Network, 0, len(s.networks))
	for _, id := range s.sortedIDs(s.networks) {
		out = append(out, s.networkView(s.networks[id]))
	}
	return out
}

// Subnets returns every subnet, in creation order.
func (s *Server) Subnets() []Subnet {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Subnet, 0, len(s.subnets))
	for _, id := range s.sortedIDs(s.subnets) {
		out = append(out, cloneSubnet(s.subnets[id]))
	}
	return out
}

// AddNetwork creates a network directly (not through the API), with the
// given name, description and tags, and returns its ID.
func (s *Server) AddNetwork(name, description string, tags ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createNetwork(name, description, true, tags).ID
}

// AddSubnet creates a subnet directly (not through the API) and returns its
// ID. It panics when the network does not exist or cidr or gateway is invalid.
func (s *Server) AddSubnet(networkID, name, cidr, gateway string, tags ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.networks[networkID]
	if n == nil {
		panic("fakeopenstack: AddSubnet: no network " + networkID)
	}
	p := netip.MustParsePrefix(cidr)
	version := 4
	if p.Addr().Is6() {
		version = 6
	}
	var gw *string
	if gateway != "" {
		gw = &gateway
	}
	return s.createSubnet(n, name, "", p, version, gw, tags).ID
}

// --- HTTP plumbing ---

type neutronError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Detail  string `json:"detail"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// neutronErr writes Neutron's error body.
func neutronErr(w http.ResponseWriter, status int, typ, format string, args ...any) {
	writeJSON(w, status, map[string]neutronError{"NeutronError": {Type: typ, Message: fmt.Sprintf(format, args...)}})
}

// keystoneErr writes Keystone's error body.
func keystoneErr(w http.ResponseWriter, status int, title, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "title": title, "message": message}})
}

func statusType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "HTTPBadRequest"
	case http.StatusNotFound:
		return "HTTPNotFound"
	case http.StatusConflict:
		return "HTTPConflict"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	default:
		return "HTTPInternalServerError"
	}
}

type service int

const (
	svcIdentity service = iota
	svcNetworkVersions
	svcNetwork
)

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	handle := func(svc service, pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, s.wrap(svc, h))
	}
	// Keystone.
	handle(svcIdentity, "GET "+identityPrefix+"/{$}", s.identityVersions)
	handle(svcIdentity, "GET "+identityPrefix, s.identityVersions)
	handle(svcIdentity, "GET "+identityPrefix+"/v3/{$}", s.identityV3)
	handle(svcIdentity, "GET "+identityPrefix+"/v3", s.identityV3)
	handle(svcIdentity, "POST "+identityPrefix+"/v3/auth/tokens", s.createToken)
	// Neutron version discovery.
	handle(svcNetworkVersions, "GET "+networkPrefix+"/{$}", s.networkVersions)
	handle(svcNetworkVersions, "GET "+networkPrefix, s.networkVersions)
	// Neutron v2.0.
	p := networkPrefix + "/v2.0"
	handle(svcNetwork, "GET "+p+"/networks", s.listNetworks)
	handle(svcNetwork, "POST "+p+"/networks", s.postNetwork)
	handle(svcNetwork, "GET "+p+"/networks/{id}", s.getNetwork)
	handle(svcNetwork, "PUT "+p+"/networks/{id}", s.putNetwork)
	handle(svcNetwork, "DELETE "+p+"/networks/{id}", s.deleteNetwork)
	handle(svcNetwork, "GET "+p+"/subnets", s.listSubnets)
	handle(svcNetwork, "POST "+p+"/subnets", s.postSubnet)
	handle(svcNetwork, "GET "+p+"/subnets/{id}", s.getSubnet)
	handle(svcNetwork, "PUT "+p+"/subnets/{id}", s.putSubnet)
	handle(svcNetwork, "DELETE "+p+"/subnets/{id}", s.deleteSubnet)
	for _, res := range []string{"networks", "subnets"} {
		handle(svcNetwork, "GET "+p+"/"+res+"/{id}/tags", s.tagsHandler(res, "list"))
		handle(svcNetwork, "PUT "+p+"/"+res+"/{id}/tags", s.tagsHandler(res, "replace"))
		handle(svcNetwork, "DELETE "+p+"/"+res+"/{id}/tags", s.tagsHandler(res, "deleteAll"))
		handle(svcNetwork, "GET "+p+"/"+res+"/{id}/tags/{tag}", s.tagsHandler(res, "check"))
		handle(svcNetwork, "PUT "+p+"/"+res+"/{id}/tags/{tag}", s.tagsHandler(res, "add"))
		handle(svcNetwork, "DELETE "+p+"/"+res+"/{id}/tags/{tag}", s.tagsHandler(res, "delete"))
	}
	mux.Handle("/", s.wrap(svcNetworkVersions, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, networkPrefix+"/") {
			neutronErr(w, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
			return
		}
		keystoneErr(w, http.StatusNotFound, "Not Found", "The resource could not be found.")
	}))
	return mux
}

// routeName turns a mux pattern into the route name of Count.
func routeName(r *http.Request) string {
	pattern := r.Pattern
	if pattern == "" || pattern == "/" {
		return r.Method + " " + r.URL.Path
	}
	method, path, _ := strings.Cut(pattern, " ")
	path = strings.TrimSuffix(path, "{$}")
	path = strings.TrimPrefix(path, identityPrefix)
	path = strings.TrimPrefix(path, networkPrefix)
	if path == "" {
		path = "/"
	}
	return method + " " + path
}

// wrap counts the request and applies the faults and, for Neutron, the
// token check.
func (s *Server) wrap(svc service, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := routeName(r)
		s.mu.Lock()
		s.counts[route]++
		latency, down := s.latency, s.down
		s.mu.Unlock()

		if latency > 0 {
			t := time.NewTimer(latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if down {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}

		s.mu.Lock()
		status := 0
		if f := s.routes[route]; f != nil && f.remaining != 0 {
			status = f.status
			if f.remaining > 0 {
				f.remaining--
			}
		} else if svc == svcNetwork && len(s.failNext) > 0 {
			status = s.failNext[0]
			s.failNext = s.failNext[1:]
		}
		s.mu.Unlock()
		if status != 0 {
			if svc == svcIdentity {
				keystoneErr(w, status, http.StatusText(status), "injected fault")
			} else {
				neutronErr(w, status, statusType(status), "Injected fault: %s", http.StatusText(status))
			}
			return
		}

		if svc == svcNetwork && !s.validToken(r.Header.Get("X-Auth-Token")) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Keystone uri=%q", s.URL+identityPrefix))
			keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
			return
		}
		h(w, r)
	})
}

func (s *Server) validToken(tok string) bool {
	if tok == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[tok]
	return ok && s.now().Before(exp)
}

func (s *Server) timestamp() string { return s.now().UTC().Format("2006-01-02T15:04:05Z") }

// --- Keystone ---

func (s *Server) identityVersion() map[string]any {
	return map[string]any{
		"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
		"links":       []map[string]string{{"rel": "self", "href": s.AuthURL + "/"}},
		"media-types": []map[string]string{{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}},
	}
}

func (s *Server) identityVersions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{s.identityVersion()}}})
}

func (s *Server) identityV3(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": s.identityVersion()})
}

type nameOrID struct {
	ID     string    `json:"id"`
	Name   string    `json:"name"`
	Domain *nameOrID `json:"domain"`
}

type tokenRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User struct {
					nameOrID
					Password string `json:"password"`
				} `json:"user"`
			} `json:"password"`
		} `json:"identity"`
		Scope *struct {
			Project *nameOrID `json:"project"`
		} `json:"scope"`
	} `json:"auth"`
}

func matchDomain(d *nameOrID, name string) bool {
	// The default domain's ID is "default" and its name "Default".
	return d != nil && (d.Name == name || (name == DefaultUserDomain && d.ID == "default"))
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		keystoneErr(w, http.StatusBadRequest, "Bad Request", "Expecting to find auth in request body: "+err.Error())
		return
	}
	id := req.Auth.Identity
	if !slices.Contains(id.Methods, "password") || id.Password == nil {
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	u := id.Password.User
	userOK := (u.Name == s.Username && matchDomain(u.Domain, s.UserDomain)) || (u.ID != "" && u.ID == s.userID())
	if !userOK || u.Password != s.Password {
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	scoped := false
	if sc := req.Auth.Scope; sc != nil && sc.Project != nil {
		p := sc.Project
		if !(p.ID == s.ProjectID || (p.Name == s.ProjectName && matchDomain(p.Domain, s.ProjectDomain))) {
			keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
			return
		}
		scoped = true
	}

	tok := "gAAAAA" + strings.ReplaceAll(uuid.NewString(), "-", "")
	s.mu.Lock()
	now := s.now()
	exp := now.Add(s.tokenTTL)
	s.tokens[tok] = exp
	s.mu.Unlock()

	domain := map[string]string{"id": "default", "name": DefaultUserDomain}
	body := map[string]any{
		"methods":    []string{"password"},
		"user":       map[string]any{"id": s.userID(), "name": s.Username, "domain": domain, "password_expires_at": nil},
		"audit_ids":  []string{strings.ReplaceAll(uuid.NewString(), "-", "")[:22]},
		"issued_at":  now.UTC().Format("2006-01-02T15:04:05.000000Z"),
		"expires_at": exp.UTC().Format("2006-01-02T15:04:05.000000Z"),
	}
	if scoped {
		body["project"] = map[string]any{"id": s.ProjectID, "name": s.ProjectName, "domain": domain}
		body["is_domain"] = false
		body["roles"] = []map[string]string{{"id": "member-role", "name": "member"}, {"id": "reader-role", "name": "reader"}}
		body["catalog"] = s.catalog()
	}
	w.Header().Set("X-Subject-Token", tok)
	writeJSON(w, http.StatusCreated, map[string]any{"token": body})
}

func (s *Server) userID() string { return "u-" + s.Username }

func (s *Server) catalog() []any {
	endpoints := func(url, svc string) []any {
		var eps []any
		for _, iface := range []string{"public", "internal", "admin"} {
			eps = append(eps, map[string]string{
				"id": svc + "-" + iface, "interface": iface, "region": s.Region, "region_id": s.Region, "url": url,
			})
		}
		return eps
	}
	return []any{
		map[string]any{"id": "identity", "type": "identity", "name": "keystone", "endpoints": endpoints(s.URL+identityPrefix, "identity")},
		map[string]any{"id": "network", "type": "network", "name": "neutron", "endpoints": endpoints(s.URL+networkPrefix, "network")},
	}
}

// --- Neutron ---

func (s *Server) networkVersions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{
		"id": "v2.0", "status": "CURRENT",
		"links": []map[string]string{{"rel": "self", "href": s.URL + networkPrefix + "/v2.0/"}},
	}}})
}

func (s *Server) newID() string { return uuid.NewString() }

func (s *Server) sortedIDs(m any) []string {
	var ids []string
	switch m := m.(type) {
	case map[string]*Network:
		for id := range m {
			ids = append(ids, id)
		}
	case map[string]*Subnet:
		for id := range m {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return s.order[ids[i]] < s.order[ids[j]] })
	return ids
}

func (s *Server) networkView(n *Network) Network {
	c := *n
	c.Tags = slices.Clone(n.Tags)
	c.AvailabilityZoneHints = slices.Clone(n.AvailabilityZoneHints)
	c.AvailabilityZones = slices.Clone(n.AvailabilityZones)
	c.Subnets = []string{}
	for _, id := range s.sortedIDs(s.subnets) {
		if s.subnets[id].NetworkID == n.ID {
			c.Subnets = append(c.Subnets, id)
		}
	}
	return c
}

func cloneSubnet(sn *Subnet) Subnet {
	c := *sn
	c.Tags = slices.Clone(sn.Tags)
	c.AllocationPools = slices.Clone(sn.AllocationPools)
	c.DNSNameservers = slices.Clone(sn.DNSNameservers)
	c.HostRoutes = slices.Clone(sn.HostRoutes)
	c.ServiceTypes = slices.Clone(sn.ServiceTypes)
	if sn.GatewayIP != nil {
		gw := *sn.GatewayIP
		c.GatewayIP = &gw
	}
	return c
}

func (s *Server) createNetwork(name, description string, adminUp bool, tags []string) *Network {
	ts := s.timestamp()
	n := &Network{
		ID: s.newID(), Name: name, Description: description, AdminStateUp: adminUp, Status: "ACTIVE",
		TenantID: s.ProjectID, ProjectID: s.ProjectID, MTU: 1450, PortSecurityEnabled: true,
		AvailabilityZoneHints: []string{}, AvailabilityZones: []string{"nova"},
		Tags: dedupTags(tags), CreatedAt: ts, UpdatedAt: ts, RevisionNumber: 1,
	}
	s.seq++
	s.order[n.ID] = s.seq
	s.networks[n.ID] = n
	return n
}

func (s *Server) createSubnet(n *Network, name, description string, p netip.Prefix, version int, gw *string, tags []string) *Subnet {
	ts := s.timestamp()
	sn := &Subnet{
		ID: s.newID(), Name: name, Description: description, NetworkID: n.ID, TenantID: s.ProjectID, ProjectID: s.ProjectID,
		IPVersion: version, CIDR: p.String(), GatewayIP: gw, AllocationPools: allocationPools(p, gw),
		EnableDHCP: true, DNSNameservers: []string{}, HostRoutes: []HostRoute{}, ServiceTypes: []string{},
		Tags: dedupTags(tags), CreatedAt: ts, UpdatedAt: ts, RevisionNumber: 0,
	}
	s.seq++
	s.order[sn.ID] = s.seq
	s.subnets[sn.ID] = sn
	n.RevisionNumber++
	n.UpdatedAt = ts
	return sn
}

// allocationPools returns Neutron's default pool: every host address but
// the gateway (and, for IPv4, the network and broadcast addresses).
func allocationPools(p netip.Prefix, gw *string) []AllocationPool {
	first, last := p.Masked().Addr(), lastAddr(p)
	if p.Addr().Is4() && p.Bits() < 31 {
		first, last = first.Next(), last.Prev()
	} else if p.Addr().Is6() && p.Bits() < 127 {
		first = first.Next() // the subnet-router anycast address
	}
	if !first.IsValid() || !last.IsValid() || last.Less(first) {
		return []AllocationPool{}
	}
	if gw != nil {
		if g, err := netip.ParseAddr(*gw); err == nil {
			switch {
			case g == first && g == last:
				return []AllocationPool{}
			case g == first:
				first = first.Next()
			case g == last:
				last = last.Prev()
			case first.Less(g) && g.Less(last):
				return []AllocationPool{{first.String(), g.Prev().String()}, {g.Next().String(), last.String()}}
			}
		}
	}
	return []AllocationPool{{first.String(), last.String()}}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - uint(i%8))
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func dedupTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// validateTags returns Neutron's message for the first invalid tag, or "".
func validateTags(tags []string) string {
	for _, t := range tags {
		if t == "" || len(t) > MaxTagLength {
			return fmt.Sprintf("Invalid input for tags. Reason: '%s' is not a valid tag (1 to %d characters).", t, MaxTagLength)
		}
		if strings.Contains(t, ",") {
			return fmt.Sprintf("Invalid input for tags. Reason: '%s' contains a comma.", t)
		}
	}
	return ""
}

// decodeBody decodes {"<key>": {...}} into a map, rejecting other shapes.
func decodeBody(w http.ResponseWriter, r *http.Request, key string) (map[string]any, bool) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Malformed request body")
		return nil, false
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(data, &body); err != nil {
		neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Malformed request body: %v", err)
		return nil, false
	}
	raw, ok := body[key]
	if !ok || len(body) != 1 {
		neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Resource body required: expected a single %q object", key)
		return nil, false
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Malformed request body: %q must be an object", key)
		return nil, false
	}
	return obj, true
}

// checkAttrs answers 400 when obj has an attribute outside allowed.
func checkAttrs(w http.ResponseWriter, obj map[string]any, allowed ...string) bool {
	var unknown []string
	for k := range obj {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Unrecognized attribute(s) '%s'", strings.Join(unknown, ", "))
		return false
	}
	return true
}

func stringAttr(w http.ResponseWriter, obj map[string]any, key string, max int) (string, bool) {
	v, ok := obj[key]
	if !ok || v == nil {
		return "", true
	}
	str, ok := v.(string)
	if !ok || len(str) > max {
		neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for %s. Reason: '%v' is not a valid string (at most %d characters).", key, v, max)
		return "", false
	}
	return str, true
}

func tagsAttr(w http.ResponseWriter, obj map[string]any) ([]string, bool) {
	v, ok := obj["tags"]
	if !ok || v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for tags. Reason: '%v' is not a list.", v)
		return nil, false
	}
	tags := make([]string, 0, len(list))
	for _, t := range list {
		str, ok := t.(string)
		if !ok {
			neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for tags. Reason: '%v' is not a string.", t)
			return nil, false
		}
		tags = append(tags, str)
	}
	if msg := validateTags(tags); msg != "" {
		neutronErr(w, http.StatusBadRequest, "InvalidInput", "%s", msg)
		return nil, false
	}
	return tags, true
}

// filterable attributes of each resource; other filters are rejected, as
// Neutron does with the filter-validation extension.
var (
	networkFilters = []string{"id", "name", "description", "status", "admin_state_up", "tenant_id", "project_id", "shared", "mtu", "router:external", "revision_number"}
	subnetFilters  = []string{"id", "name", "description", "network_id", "ip_version", "cidr", "gateway_ip", "tenant_id", "project_id", "enable_dhcp", "revision_number", "subnetpool_id"}
	pagingParams   = []string{"limit", "marker", "sort_key", "sort_dir", "page_reverse", "fields"}
	tagFilters     = []string{"tags", "tags-any", "not-tags", "not-tags-any"}
)

// match reports whether an object (as JSON) passes the query's filters.
func match(obj map[string]any, tags []string, q url.Values) bool {
	for key, values := range q {
		switch {
		case slices.Contains(pagingParams, key):
		case key == "tags" || key == "tags-any" || key == "not-tags" || key == "not-tags-any":
			var want []string
			for _, v := range values {
				want = append(want, strings.Split(v, ",")...)
			}
			all := func() bool {
				for _, t := range want {
					if !slices.Contains(tags, t) {
						return false
					}
				}
				return true
			}
			anyOf := func() bool {
				for _, t := range want {
					if slices.Contains(tags, t) {
						return true
					}
				}
				return false
			}
			if (key == "tags" && !all()) || (key == "tags-any" && !anyOf()) ||
				(key == "not-tags" && all()) || (key == "not-tags-any" && anyOf()) {
				return false
			}
		default:
			got := obj[key]
			ok := false
			for _, v := range values {
				if fmt.Sprint(valueOrEmpty(got)) == v {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

func valueOrEmpty(v any) any {
	if v == nil {
		return ""
	}
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return v
}

func toMap(v any) map[string]any {
	data, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

func checkFilters(w http.ResponseWriter, q url.Values, allowed []string) bool {
	for key := range q {
		if !slices.Contains(allowed, key) && !slices.Contains(pagingParams, key) && !slices.Contains(tagFilters, key) {
			neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "[%s] is invalid attribute for filtering", key)
			return false
		}
	}
	return true
}

// page applies limit and marker and returns the items and the links.
func (s *Server) page(r *http.Request, ids []string) ([]string, []map[string]string, bool) {
	q := r.URL.Query()
	if marker := q.Get("marker"); marker != "" {
		i := slices.Index(ids, marker)
		if i < 0 {
			return nil, nil, false
		}
		ids = ids[i+1:]
	}
	var links []map[string]string
	if l := q.Get("limit"); l != "" {
		limit, err := strconv.Atoi(l)
		if err == nil && limit > 0 && len(ids) > limit {
			ids = ids[:limit]
			next := url.Values{}
			for k, v := range q {
				next[k] = v
			}
			next.Set("marker", ids[len(ids)-1])
			links = append(links, map[string]string{"rel": "next", "href": s.URL + r.URL.Path + "?" + next.Encode()})
		}
	}
	return ids, links, true
}

// writeListPage writes the page of a list response the request asks for:
// ids are the matching objects in list order, views their bodies, key the
// collection ("networks", "subnets"), with "<key>_links" to the next page.
func writeListPage[V any](s *Server, w http.ResponseWriter, r *http.Request, key string, ids []string, views map[string]V) {
	ids, links, ok := s.page(r, ids)
	if !ok {
		neutronErr(w, http.StatusNotFound, "MarkerNotFound", "Marker %s could not be found.", r.URL.Query().Get("marker"))
		return
	}
	out := make([]V, 0, len(ids))
	for _, id := range ids {
		out = append(out, views[id])
	}
	body := map[string]any{key: out}
	if links != nil {
		body[key+"_links"] = links
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) listNetworks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !checkFilters(w, q, networkFilters) {
		return
	}
	s.mu.Lock()
	var ids []string
	views := map[string]Network{}
	for _, id := range s.sortedIDs(s.networks) {
		v := s.networkView(s.networks[id])
		if match(toMap(v), v.Tags, q) {
			ids = append(ids, id)
			views[id] = v
		}
	}
	s.mu.Unlock()
	writeListPage(s, w, r, "networks", ids, views)
}

func (s *Server) getNetwork(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.networks[r.PathValue("id")]
	if n == nil {
		neutronErr(w, http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"network": s.networkView(n)})
}

func (s *Server) postNetwork(w http.ResponseWriter, r *http.Request) {
	obj, ok := decodeBody(w, r, "network")
	if !ok || !checkAttrs(w, obj, "name", "description", "admin_state_up", "shared", "tenant_id", "project_id",
		"availability_zone_hints", "mtu", "port_security_enabled", "tags") {
		return
	}
	name, ok1 := stringAttr(w, obj, "name", 255)
	if !ok1 {
		return
	}
	desc, ok2 := stringAttr(w, obj, "description", 255)
	if !ok2 {
		return
	}
	tags, ok3 := tagsAttr(w, obj)
	if !ok3 {
		return
	}
	adminUp := true
	if v, ok := obj["admin_state_up"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for admin_state_up. Reason: '%v' is not a valid boolean value.", v)
			return
		}
		adminUp = b
	}
	s.mu.Lock()
	n := s.createNetwork(name, desc, adminUp, tags)
	view := s.networkView(n)
	s.created = append(s.created, s.networkView(n))
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"network": view})
}

func (s *Server) putNetwork(w http.ResponseWriter, r *http.Request) {
	obj, ok := decodeBody(w, r, "network")
	if !ok {
		return
	}
	for _, ro := range []string{"id", "tenant_id", "project_id", "status", "subnets", "tags"} {
		if _, has := obj[ro]; has {
			neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Cannot update read-only attribute %s", ro)
			return
		}
	}
	if !checkAttrs(w, obj, "name", "description", "admin_state_up", "shared", "mtu", "port_security_enabled") {
		return
	}
	name, ok1 := stringAttr(w, obj, "name", 255)
	desc, ok2 := stringAttr(w, obj, "description", 255)
	if !ok1 || !ok2 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.networks[r.PathValue("id")]
	if n == nil {
		neutronErr(w, http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", r.PathValue("id"))
		return
	}
	if _, has := obj["name"]; has {
		n.Name = name
	}
	if _, has := obj["description"]; has {
		n.Description = desc
	}
	if v, has := obj["admin_state_up"].(bool); has {
		n.AdminStateUp = v
	}
	n.RevisionNumber++
	n.UpdatedAt = s.timestamp()
	writeJSON(w, http.StatusOK, map[string]any{"network": s.networkView(n)})
}

func (s *Server) deleteNetwork(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	if s.networks[id] == nil {
		neutronErr(w, http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", id)
		return
	}
	for _, sn := range s.subnets {
		if sn.NetworkID == id {
			neutronErr(w, http.StatusConflict, "NetworkInUse",
				"Unable to complete operation on network %s. There are one or more ports still in use on the network.", id)
			return
		}
	}
	delete(s.networks, id)
	delete(s.order, id)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listSubnets(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !checkFilters(w, q, subnetFilters) {
		return
	}
	s.mu.Lock()
	var ids []string
	views := map[string]Subnet{}
	for _, id := range s.sortedIDs(s.subnets) {
		v := cloneSubnet(s.subnets[id])
		if match(toMap(v), v.Tags, q) {
			ids = append(ids, id)
			views[id] = v
		}
	}
	s.mu.Unlock()
	writeListPage(s, w, r, "subnets", ids, views)
}

func (s *Server) getSubnet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.subnets[r.PathValue("id")]
	if sn == nil {
		neutronErr(w, http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"subnet": cloneSubnet(sn)})
}

// gatewayAttr validates a gateway_ip attribute for a subnet with prefix p.
// It returns the gateway (nil for none) and whether the attribute was given.
func gatewayAttr(w http.ResponseWriter, obj map[string]any, p netip.Prefix) (gw *string, given, ok bool) {
	v, given := obj["gateway_ip"]
	if !given {
		return nil, false, true
	}
	if v == nil {
		return nil, true, true
	}
	str, isStr := v.(string)
	addr, err := netip.ParseAddr(str)
	if !isStr || err != nil || addr.Zone() != "" {
		neutronErr(w, http.StatusBadRequest, "InvalidInput", "Invalid input for gateway_ip. Reason: '%v' is not a valid IP address.", v)
		return nil, true, false
	}
	if addr.Is4() != p.Addr().Is4() {
		neutronErr(w, http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Gateway IP version inconsistent with allocation pool version.")
		return nil, true, false
	}
	// Neutron accepts a gateway outside the subnet, but never the network
	// or (IPv4) broadcast address of the subnet.
	if p.Contains(addr) && p.Addr().Is4() && (addr == p.Masked().Addr() || addr == lastAddr(p)) && p.Bits() < 31 {
		neutronErr(w, http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Gateway is not valid on subnet.")
		return nil, true, false
	}
	canon := addr.String()
	return &canon, true, true
}

func (s *Server) postSubnet(w http.ResponseWriter, r *http.Request) {
	obj, ok := decodeBody(w, r, "subnet")
	if !ok || !checkAttrs(w, obj, "network_id", "name", "description", "cidr", "ip_version", "gateway_ip", "enable_dhcp",
		"dns_nameservers", "allocation_pools", "host_routes", "tenant_id", "project_id", "tags", "ipv6_address_mode", "ipv6_ra_mode", "service_types") {
		return
	}
	for _, req := range []string{"network_id", "ip_version"} {
		if _, has := obj[req]; !has {
			neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Failed to parse request. Required attribute '%s' not specified", req)
			return
		}
	}
	name, ok1 := stringAttr(w, obj, "name", 255)
	if !ok1 {
		return
	}
	desc, ok2 := stringAttr(w, obj, "description", 255)
	if !ok2 {
		return
	}
	tags, ok3 := tagsAttr(w, obj)
	if !ok3 {
		return
	}
	version, isNum := obj["ip_version"].(float64)
	if !isNum || (version != 4 && version != 6) {
		neutronErr(w, http.StatusBadRequest, "InvalidInput", "Invalid input for ip_version. Reason: %v is not in [4, 6].", obj["ip_version"])
		return
	}
	cidrStr, isStr := obj["cidr"].(string)
	if !isStr {
		neutronErr(w, http.StatusBadRequest, "BadRequest", "Bad subnets request: a subnetpool must be specified in the absence of a cidr.")
		return
	}
	p, err := netip.ParsePrefix(cidrStr)
	if err != nil {
		neutronErr(w, http.StatusBadRequest, "InvalidInput", "Invalid input for cidr. Reason: '%s' is not a valid IP subnet.", cidrStr)
		return
	}
	if p.Masked() != p {
		neutronErr(w, http.StatusBadRequest, "InvalidInput", "Invalid input for cidr. Reason: '%s' isn't a recognized IP subnet cidr, '%s' is recommended.", cidrStr, p.Masked())
		return
	}
	if (version == 4) != p.Addr().Is4() {
		neutronErr(w, http.StatusBadRequest, "InvalidInput", "Invalid input for operation: Cidr %s does not match ip_version %v.", cidrStr, version)
		return
	}
	gw, given, ok4 := gatewayAttr(w, obj, p)
	if !ok4 {
		return
	}
	if !given { // Neutron's default: the first host address
		first := p.Masked().Addr().Next().String()
		gw = &first
	}
	networkID, _ := obj["network_id"].(string)

	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.networks[networkID]
	if n == nil {
		neutronErr(w, http.StatusNotFound, "NetworkNotFound", "Network %s could not be found.", networkID)
		return
	}
	for _, other := range s.subnets {
		if other.NetworkID != networkID && s.allowOverlap {
			continue
		}
		if op, err := netip.ParsePrefix(other.CIDR); err == nil && op.Overlaps(p) {
			neutronErr(w, http.StatusBadRequest, "InvalidInput",
				"Invalid input for operation: Requested subnet with cidr: %s for network: %s overlaps with another subnet.", p, networkID)
			return
		}
	}
	sn := s.createSubnet(n, name, desc, p, int(version), gw, tags)
	writeJSON(w, http.StatusCreated, map[string]any{"subnet": cloneSubnet(sn)})
}

func (s *Server) putSubnet(w http.ResponseWriter, r *http.Request) {
	obj, ok := decodeBody(w, r, "subnet")
	if !ok {
		return
	}
	for _, ro := range []string{"id", "network_id", "cidr", "ip_version", "tenant_id", "project_id", "subnetpool_id", "tags"} {
		if _, has := obj[ro]; has {
			neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Cannot update read-only attribute %s", ro)
			return
		}
	}
	if !checkAttrs(w, obj, "name", "description", "gateway_ip", "enable_dhcp", "dns_nameservers", "allocation_pools", "host_routes", "service_types") {
		return
	}
	name, ok1 := stringAttr(w, obj, "name", 255)
	desc, ok2 := stringAttr(w, obj, "description", 255)
	if !ok1 || !ok2 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.subnets[r.PathValue("id")]
	if sn == nil {
		neutronErr(w, http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", r.PathValue("id"))
		return
	}
	p := netip.MustParsePrefix(sn.CIDR)
	gw, given, ok3 := gatewayAttr(w, obj, p)
	if !ok3 {
		return
	}
	if given {
		sn.GatewayIP = gw
		sn.AllocationPools = allocationPools(p, gw)
	}
	if _, has := obj["name"]; has {
		sn.Name = name
	}
	if _, has := obj["description"]; has {
		sn.Description = desc
	}
	if v, has := obj["enable_dhcp"].(bool); has {
		sn.EnableDHCP = v
	}
	sn.RevisionNumber++
	sn.UpdatedAt = s.timestamp()
	writeJSON(w, http.StatusOK, map[string]any{"subnet": cloneSubnet(sn)})
}

func (s *Server) deleteSubnet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	sn := s.subnets[id]
	if sn == nil {
		neutronErr(w, http.StatusNotFound, "SubnetNotFound", "Subnet %s could not be found.", id)
		return
	}
	delete(s.subnets, id)
	delete(s.order, id)
	if n := s.networks[sn.NetworkID]; n != nil {
		n.RevisionNumber++
		n.UpdatedAt = s.timestamp()
	}
	w.WriteHeader(http.StatusNoContent)
}

// tagsHandler serves the tag extension's sub-resource of networks and subnets.
func (s *Server) tagsHandler(resource, action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var replace []string
		if action == "replace" {
			data, _ := io.ReadAll(r.Body)
			var body map[string]any
			if err := json.Unmarshal(data, &body); err != nil {
				neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Malformed request body: %v", err)
				return
			}
			tags, ok := tagsAttr(w, body)
			if !ok {
				return
			}
			if _, has := body["tags"]; !has {
				neutronErr(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for tags. Reason: tags is required.")
				return
			}
			replace = tags
		}
		tag := r.PathValue("tag")
		if action == "add" {
			if msg := validateTags([]string{tag}); msg != "" {
				neutronErr(w, http.StatusBadRequest, "InvalidInput", "%s", msg)
				return
			}
		}

		s.mu.Lock()
		defer s.mu.Unlock()
		id := r.PathValue("id")
		var tags *[]string
		var touch func()
		switch resource {
		case "networks":
			if n := s.networks[id]; n != nil {
				tags = &n.Tags
				touch = func() { n.RevisionNumber++; n.UpdatedAt = s.timestamp() }
			}
		case "subnets":
			if sn := s.subnets[id]; sn != nil {
				tags = &sn.Tags
				touch = func() { sn.RevisionNumber++; sn.UpdatedAt = s.timestamp() }
			}
		}
		if tags == nil {
			typ := "NetworkNotFound"
			what := "Network"
			if resource == "subnets" {
				typ, what = "SubnetNotFound", "Subnet"
			}
			neutronErr(w, http.StatusNotFound, typ, "%s %s could not be found.", what, id)
			return
		}
		switch action {
		case "list":
			writeJSON(w, http.StatusOK, map[string]any{"tags": slices.Clone(*tags)})
		case "replace":
			*tags = dedupTags(replace)
			touch()
			writeJSON(w, http.StatusOK, map[string]any{"tags": slices.Clone(*tags)})
		case "deleteAll":
			*tags = []string{}
			touch()
			w.WriteHeader(http.StatusNoContent)
		case "check":
			if !slices.Contains(*tags, tag) {
				neutronErr(w, http.StatusNotFound, "TagNotFound", "Tag %s could not be found for %s %s.", tag, resource, id)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		case "add":
			*tags = dedupTags(append(*tags, tag))
			touch()
			w.WriteHeader(http.StatusCreated)
		case "delete":
			i := slices.Index(*tags, tag)
			if i < 0 {
				neutronErr(w, http.StatusNotFound, "TagNotFound", "Tag %s could not be found for %s %s.", tag, resource, id)
				return
			}
			*tags = slices.Delete(*tags, i, i+1)
			touch()
			w.WriteHeader(http.StatusNoContent)
		}
	}
}
