// Package neutron is the OpenStack Neutron network backend: one Neutron
// network and one subnet (cidr, gateway_ip, ip_version) per Network.
//
// Both are named k8s-<namespace>-<name> so an operator recognises them, and
// marked as ours with Neutron tags: k8s-network-uid=<the Network's UID> and
// managed-by=<Options.ManagedBy>. Their description names the Network, its
// UID and the managed-by value; when a long namespace and name leave it no
// room to name the Network, k8s-ref-<i>= tags do. Every lookup filters by
// the tags (List, by the managed-by tag) or by that description (Create),
// and only what carries both tags, or carries no tags and that description
// (a create interrupted between creating an object and tagging it, found
// and completed instead of duplicated), is used: the backend never reads,
// changes or deletes what it did not create. Neutron takes no tags in a
// network's or a subnet's POST, hence the tagging after each. CreateNew,
// for a Network no create was ever attempted for, makes no lookup: a
// network, its tags, a subnet, its tags.
//
// The backend authenticates with Keystone v3 (password or application
// credential; see ConfigFromEnv for the OS_CLOUD / OS_* configuration), takes
// the network endpoint from the service catalog, and re-authenticates when
// its token expires.
package neutron

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/mtu"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// The tags that mark a Neutron network or subnet as ours.
const (
	// UIDTagPrefix + the Network's UID identifies the Network an object
	// belongs to.
	UIDTagPrefix = "k8s-network-uid="
	// ManagedByTagPrefix + Options.ManagedBy says which controller manages
	// the object.
	ManagedByTagPrefix = "managed-by="
	// RefTagPrefix + <i> + "=" + the i-th part of "<namespace>/<name>"
	// names the Network when the description has no room for it (a long
	// namespace and name): tags are read back whole, and the controller
	// needs the namespace and name of what List returns.
	RefTagPrefix = "k8s-ref-"
	// DetachedTag replaces our tags on a network and subnet a Network left
	// behind (onDelete: Detach): their description still names the
	// Network, and a network with our description and no UID tag would
	// otherwise be taken for one whose create was interrupted.
	DetachedTag = "k8s-network-detached"

	// DefaultRequestTimeout bounds each request to Neutron (each page of a
	// paginated list).
	DefaultRequestTimeout = 30 * time.Second
	// DefaultMaxConcurrentRequests is how many requests the backend has in
	// flight to Neutron at most.
	DefaultMaxConcurrentRequests = 16
	// DefaultPageSize is how many networks (or subnets) one request of List
	// asks for.
	DefaultPageSize = 500

	maxNameLength = 255 // Neutron's limit on names and descriptions

	// idsPerRequest is how many IDs one request of Observe filters by
	// (repeated id= or network_id= parameters, which Neutron takes as
	// one IN filter): a UUID takes 40 characters of the query as id=,
	// 48 as network_id=, so a request line stays under 5 KB, well inside
	// the 8 KiB that servers and proxies commonly allow (Neutron's own
	// eventlet server included).
	idsPerRequest = 100
)

// Options configure New.
type Options struct {
	// ServiceClient is a ready network v2 client to use as is; the options
	// below that authenticate or locate the endpoint are then ignored.
	ServiceClient *gophercloud.ServiceClient
	// ProviderClient is an authenticated provider client (with its
	// re-authentication set up) to take the network endpoint from.
	ProviderClient *gophercloud.ProviderClient
	// AuthOptions authenticate to Keystone v3 when ProviderClient is nil.
	// When nil too, ConfigFromEnv(Getenv) supplies them (OS_CLOUD with
	// clouds.yaml, or the OS_* variables). AllowReauth is always turned on.
	AuthOptions *gophercloud.AuthOptions
	// EndpointOpts select the network endpoint in the catalog (region,
	// interface); zero means the environment's (OS_REGION_NAME, OS_INTERFACE).
	EndpointOpts gophercloud.EndpointOpts
	// Endpoint, when set, is the Neutron endpoint to use instead of the
	// catalog's (e.g. http://neutron:9696/).
	Endpoint string
	// HTTPClient is the HTTP client of every request (default: a client
	// with no timeout of its own; RequestTimeout bounds the requests).
	HTTPClient *http.Client
	// TLSConfig, when set, replaces the TLS configuration of HTTPClient's
	// transport (ConfigFromEnv's, from OS_CACERT or clouds.yaml, is used
	// otherwise).
	TLSConfig *tls.Config
	// ManagedBy is the value of the managed-by tag (default
	// network.ManagedBy, "controller-manager"). Give each cluster that shares
	// a Neutron project its own value, or their garbage collections would
	// delete each other's networks.
	ManagedBy string
	// RequestTimeout bounds each request to Neutron, each page of a
	// paginated list (default DefaultRequestTimeout). It bounds requests,
	// not whole calls: under load a call's requests each wait their turn
	// in Neutron, and aborting a call whose requests all progress would
	// only make its retry do them again.
	RequestTimeout time.Duration
	// PageSize is the page size of List's paginated requests (default
	// DefaultPageSize).
	PageSize int
	// MaxConcurrentRequests bounds the requests in flight to Neutron
	// (default DefaultMaxConcurrentRequests); more wait their turn here,
	// before their RequestTimeout starts. Past what its API workers serve
	// at once, Neutron answers every request later without answering more
	// of them: many more in flight only make requests time out (our
	// RequestTimeout, or a proxy's) after Neutron did their work, and
	// their retries do it again.
	MaxConcurrentRequests int
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// Backend is the Neutron backend. Create it with New.
type Backend struct {
	client    *gophercloud.ServiceClient
	managedBy string
	timeout   time.Duration
	pageSize  int
	// idsPerRequest is how many IDs one request of Observe filters by.
	idsPerRequest int
	// inflight holds a token per request in flight (MaxConcurrentRequests).
	inflight chan struct{}
	// projectID is the project the token is scoped to. Every lookup is
	// limited to it: an admin's token sees every project's networks, and
	// another project's network is never ours, whatever its tags say.
	projectID string

	// unanswered holds, by Network UID and resource ("networks",
	// "subnets"), when a POST of ours got no answer (our timeout, a
	// dropped connection): Neutron may still be creating it, where a
	// retry's lookup does not see it yet.
	mu         sync.Mutex
	unanswered map[unansweredKey]time.Time
}

var _ network.Backend = (*Backend)(nil)

// Project implements network.Backend: the project the token is scoped to.
func (b *Backend) Project() string { return b.projectID }

// New returns a Neutron backend. Unless opts carries a client, it
// authenticates to Keystone v3 (failing fast on bad credentials or an
// unreachable Keystone) and finds the network endpoint in the catalog.
func New(ctx context.Context, opts Options) (*Backend, error) {
	b := &Backend{client: opts.ServiceClient, managedBy: opts.ManagedBy, timeout: opts.RequestTimeout, pageSize: opts.PageSize,
		idsPerRequest: idsPerRequest, unanswered: map[unansweredKey]time.Time{}}
	if b.pageSize <= 0 {
		b.pageSize = DefaultPageSize
	}
	maxInFlight := opts.MaxConcurrentRequests
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxConcurrentRequests
	}
	b.inflight = make(chan struct{}, maxInFlight)
	if b.managedBy == "" {
		b.managedBy = network.ManagedBy
	}
	if b.timeout <= 0 {
		b.timeout = DefaultRequestTimeout
	}
	if err := ValidateManagedBy(b.managedBy); err != nil {
		return nil, fmt.Errorf("invalid ManagedBy %q: %w", b.managedBy, err)
	}
	if b.client != nil {
		b.projectID = projectOf(b.client.ProviderClient)
		return b, nil
	}

	pc, eo := opts.ProviderClient, opts.EndpointOpts
	if pc == nil {
		var ao gophercloud.AuthOptions
		var envEO gophercloud.EndpointOpts
		tlsConfig := opts.TLSConfig
		if opts.AuthOptions != nil {
			ao = *opts.AuthOptions
		} else {
			var envTLS *tls.Config
			var err error
			if ao, envEO, envTLS, err = ConfigFromEnv(opts.Getenv); err != nil {
				return nil, err
			}
			if tlsConfig == nil {
				tlsConfig = envTLS
			}
		}
		if eo.Region == "" {
			eo.Region = envEO.Region
		}
		if eo.Availability == "" {
			eo.Availability = envEO.Availability
		}
		ao.AllowReauth = true
		var err error
		if pc, err = openstack.NewClient(ao.IdentityEndpoint); err != nil {
			// The parser's error quotes the URL, user information included.
			return nil, errors.New(withoutUserInfo(fmt.Sprintf("invalid Keystone URL %q: %v", ao.IdentityEndpoint, err)))
		}
		if opts.HTTPClient != nil {
			pc.HTTPClient = *opts.HTTPClient
		}
		if tlsConfig != nil {
			transport := http.DefaultTransport.(*http.Transport).Clone()
			if t, ok := pc.HTTPClient.Transport.(*http.Transport); ok {
				transport = t.Clone()
			}
			transport.TLSClientConfig = tlsConfig
			pc.HTTPClient.Transport = transport
		}
		pc.UserAgent.Prepend("kube-sample-controller-manager")
		authCtx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		if err := authenticate(authCtx, pc, &ao); err != nil {
			return nil, fmt.Errorf("authenticating to Keystone v3 at %s as %s: %w", withoutUserInfo(ao.IdentityEndpoint), who(ao), describe(err))
		}
	}

	b.projectID = projectOf(pc)
	if opts.Endpoint != "" {
		ep := gophercloud.NormalizeURL(opts.Endpoint)
		b.client = &gophercloud.ServiceClient{ProviderClient: pc, Endpoint: ep, ResourceBase: ep + "v2.0/", Type: "network"}
		return b, nil
	}
	if eo.Availability == "" {
		eo.Availability = gophercloud.AvailabilityPublic
	}
	sc, err := openstack.NewNetworkV2(pc, eo)
	if err != nil {
		return nil, fmt.Errorf("finding the network (Neutron) endpoint in the service catalog (region %q, interface %s): %w",
			eo.Region, eo.Availability, describe(err))
	}
	b.client = sc
	return b, nil
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// displayName is the Neutron name of a Network's network and subnet.
func displayName(namespace, name string) string {
	return truncate(network.DisplayName(namespace, name), maxNameLength)
}

const descriptionPrefix = "Kubernetes Network "

// description is the Neutron description of a Network's network and
// subnet: it names the Network and its UID, so it is unique, and it can be
// computed from the Network alone.
func (b *Backend) description(n network.Network) string {
	d := fmt.Sprintf("%s%s/%s (uid %s), managed by %s", descriptionPrefix, n.Namespace, n.Name, n.UID, b.managedBy)
	if len(d) > maxNameLength {
		d = fmt.Sprintf("%suid %s, managed by %s", descriptionPrefix, n.UID, b.managedBy)
	}
	return truncate(d, maxNameLength)
}

// neutronNetwork is a Neutron network with the attributes of the
// extensions a Network's status reports (mtu, router:external).
type neutronNetwork struct {
	networks.Network
	external.NetworkExternalExt
	mtu.NetworkMTUExt
}

func extractNetworks(p pagination.Page) ([]neutronNetwork, error) {
	var out []neutronNetwork
	err := networks.ExtractNetworksInto(p, &out)
	return out, err
}

func (b *Backend) toNetwork(n *neutronNetwork, s *subnets.Subnet) *network.Network {
	out := &network.Network{UID: uidFromTags(n.Tags), NetworkID: n.ID, Observed: observeNetwork(n), Settings: b.settings(n, s)}
	// From the tags alone, never the description: empty on a network
	// tagged before the namespace and name were (the scan tags it).
	out.Namespace, out.Name = refFromTags(n.Tags)
	if s != nil {
		out.SubnetID = s.ID
		out.CIDR, out.Gateway = canonicalCIDR(s.CIDR), canonicalIP(s.GatewayIP)
		out.ObservedSubnet = observeSubnet(s)
	}
	return out
}

// observeNetwork returns what a Network's status shows of n.
func observeNetwork(n *neutronNetwork) *samplecrdv1.NetworkObservation {
	up := n.AdminStateUp
	return network.NormalizeNetwork(&samplecrdv1.NetworkObservation{
		ID: n.ID, Name: n.Name, Status: n.Status, AdminStateUp: &up, MTU: int32(n.MTU), Shared: n.Shared,
		External: n.External, ProjectID: n.ProjectID, Description: n.Description, Tags: n.Tags, RevisionNumber: int64(n.RevisionNumber),
	})
}

// observeSubnet returns what a Network's status shows of s.
func observeSubnet(s *subnets.Subnet) *samplecrdv1.SubnetObservation {
	o := &samplecrdv1.SubnetObservation{
		ID: s.ID, Name: s.Name, CIDR: canonicalCIDR(s.CIDR), GatewayIP: canonicalIP(s.GatewayIP), IPVersion: int32(s.IPVersion),
		EnableDHCP: s.EnableDHCP, DNSNameservers: s.DNSNameservers, RevisionNumber: int64(s.RevisionNumber),
		Description: s.Description, Tags: slices.Clone(s.Tags), SubnetPoolID: s.SubnetPoolID,
	}
	for _, p := range s.AllocationPools {
		o.AllocationPools = append(o.AllocationPools, samplecrdv1.AllocationPool{Start: p.Start, End: p.End})
	}
	for _, r := range s.HostRoutes {
		o.HostRoutes = append(o.HostRoutes, samplecrdv1.HostRouteObservation{Destination: r.DestinationCIDR, Nexthop: r.NextHop})
	}
	return network.NormalizeSubnet(o)
}

// Neutron bumps the revision_number of an object at each write to it
// (its tags included), and of a network at each create or update of one
// of its subnets. What the backend returns after its own writes carries
// the revisions they made, as a later read would show them, without that
// read: the tags' PUT answers with the tags alone. A guess that missed
// would cost one status write at the next scan, which shows the real one.

// tagged records on n a write of its tags.
func (n *neutronNetwork) tagged(tags []string) {
	n.Tags = tags
	n.RevisionNumber++
}

// taggedSubnet records on s a write of its tags.
func taggedSubnet(s *subnets.Subnet, tags []string) {
	s.Tags = tags
	s.RevisionNumber++
}

func canonicalCIDR(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.String()
	}
	return s
}

func canonicalIP(s string) string {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String()
	}
	return s
}

// --- Neutron calls ---

// request waits for a turn among MaxConcurrentRequests, then bounds one
// request to Neutron (RequestTimeout); the returned func ends the turn. When
// ctx ends first, it returns ctx, and the request fails at once with its
// error.
func (b *Backend) request(ctx context.Context) (context.Context, context.CancelFunc) {
	select {
	case b.inflight <- struct{}{}:
	case <-ctx.Done():
		return ctx, func() {}
	}
	rctx, cancel := context.WithTimeout(ctx, b.timeout)
	return rctx, func() {
		cancel()
		<-b.inflight
	}
}

// turn waits for a turn among MaxConcurrentRequests, with no timeout of
// its own; the returned func ends it. When ctx ends first, it returns ctx.
func (b *Backend) turn(ctx context.Context) (context.Context, func()) {
	select {
	case b.inflight <- struct{}{}:
		return ctx, func() { <-b.inflight }
	case <-ctx.Done():
		return ctx, func() {}
	}
}

func (b *Backend) listNetworks(ctx context.Context, opts networks.ListOpts) ([]neutronNetwork, error) {
	ctx, done := b.turn(ctx)
	defer done()
	opts.ProjectID = b.projectID
	return listAll(ctx, b.timeout, "list networks", networks.List(b.client, opts), extractNetworks)
}

func (b *Backend) listSubnets(ctx context.Context, opts subnets.ListOpts) ([]subnets.Subnet, error) {
	ctx, done := b.turn(ctx)
	defer done()
	opts.ProjectID = b.projectID
	return listAll(ctx, b.timeout, "list subnets", subnets.List(b.client, opts), subnets.ExtractSubnets)
}

// listAll fetches every page of pager, each within timeout, and extracts
// their items, classifying the errors as operation op. The timeout is per
// page: a long list whose every page answers in time must not fail.
func listAll[T any](ctx context.Context, timeout time.Duration, op string, pager pagination.Pager, extract func(pagination.Page) ([]T, error)) ([]T, error) {
	pageCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	slow := fmt.Errorf("a page took longer than %v: %w", timeout, context.DeadlineExceeded)
	timer := time.AfterFunc(timeout, func() { cancel(slow) })
	defer timer.Stop()
	var items []T
	var extractErr error
	err := pager.EachPage(pageCtx, func(_ context.Context, page pagination.Page) (bool, error) {
		got, err := extract(page)
		if err != nil {
			extractErr = err
			return false, err
		}
		items = append(items, got...)
		timer.Reset(timeout) // the next page's own
		return true, nil
	})
	switch {
	case extractErr != nil:
		return nil, classify(op, extractErr)
	case err != nil:
		if cause := context.Cause(pageCtx); errors.Is(cause, slow) && ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return nil, classifyList(op, err)
	}
	return items, nil
}

// findNetworks returns the networks tagged with uid, oldest first.
func (b *Backend) findNetworks(ctx context.Context, uid types.UID) ([]neutronNetwork, error) {
	nets, err := b.listNetworks(ctx, networks.ListOpts{Tags: b.ownerTags(uid)})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(nets, func(x, y neutronNetwork) int { return x.CreatedAt.Compare(y.CreatedAt) })
	return nets, nil
}

// pickSubnet returns the subnet of uid among subs: tagged with uid, or (when
// adopt) untagged with the description of n.
func (b *Backend) pickSubnet(subs []subnets.Subnet, n network.Network, adopt bool) (*subnets.Subnet, bool) {
	for i := range subs {
		if b.owns(subs[i].Tags, n.UID) {
			return &subs[i], false
		}
	}
	if adopt && n.Namespace != "" {
		for i := range subs {
			if uidFromTags(subs[i].Tags) == "" && b.describes(subs[i].Description, n) {
				return &subs[i], true
			}
		}
	}
	return nil, false
}

// get returns the network of uid and its subnet (nil when missing).
func (b *Backend) get(ctx context.Context, uid types.UID) (*neutronNetwork, *subnets.Subnet, error) {
	nets, err := b.findNetworks(ctx, uid)
	if err != nil {
		return nil, nil, err
	}
	if len(nets) == 0 {
		return nil, nil, fmt.Errorf("neutron network tagged %s: %w", b.uidTag(uid), network.ErrNotFound)
	}
	if len(nets) > 1 {
		klog.FromContext(ctx).Info("Several Neutron networks are tagged with the same Network UID; using the oldest",
			"uid", uid, "networkIDs", networkIDs(nets))
	}
	n := &nets[0]
	subs, err := b.listSubnets(ctx, subnets.ListOpts{NetworkID: n.ID, Tags: b.ownerTags(uid)})
	if err != nil {
		return nil, nil, err
	}
	sub, _ := b.pickSubnet(subs, network.Network{UID: uid}, false)
	return n, sub, nil
}

func networkIDs(nets []neutronNetwork) []string {
	ids := make([]string, 0, len(nets))
	for _, n := range nets {
		ids = append(ids, n.ID)
	}
	return ids
}

// Get implements network.Backend.
func (b *Backend) Get(ctx context.Context, uid types.UID) (*network.Network, error) {
	n, s, err := b.get(ctx, uid)
	if err != nil {
		return nil, err
	}
	out := b.toNetwork(n, s)
	if err := b.readInterface(ctx, out, s); err != nil {
		return nil, err
	}
	return out, nil
}

// tag replaces the tags of a network or subnet of n with its tags plus ours.
// The user tags n's settings set, if any, replace the others'.
func (b *Backend) tag(ctx context.Context, resource, id string, existing []string, n network.Network) ([]string, error) {
	return b.replaceTags(ctx, resource, id, withTags(existing, b.tags(n), n.Settings.Tags))
}

// addTags replaces the tags of a network or subnet with existing plus add.
func (b *Backend) addTags(ctx context.Context, resource, id string, existing, add []string) ([]string, error) {
	return b.replaceTags(ctx, resource, id, withTags(existing, add, nil))
}

// replaceTags replaces the tags of a network or subnet with tags.
func (b *Backend) replaceTags(ctx context.Context, resource, id string, tags []string) ([]string, error) {
	ctx, cancel := b.request(ctx)
	defer cancel()
	res, err := attributestags.ReplaceAll(ctx, b.client, resource, id, attributestags.ReplaceAllOpts{Tags: tags}).Extract()
	if err != nil {
		return nil, classify("tag "+strings.TrimSuffix(resource, "s")+" "+id, err)
	}
	return res, nil
}

// Create implements network.Backend.
func (b *Backend) Create(ctx context.Context, desired network.Network) (*network.Network, error) {
	return b.create(ctx, desired, true)
}

// CreateNew implements network.Backend: Create without the lookup, four
// requests.
func (b *Backend) CreateNew(ctx context.Context, desired network.Network) (*network.Network, error) {
	return b.create(ctx, desired, false)
}

// create creates the network and subnet of desired; lookup looks first for
// what an earlier attempt left.
func (b *Backend) create(ctx context.Context, desired network.Network, lookup bool) (*network.Network, error) {
	logger := klog.FromContext(ctx).WithValues("network", klog.KRef(desired.Namespace, desired.Name), "uid", desired.UID)

	if desired.UID == "" {
		return nil, network.Permanent("create network", samplecrdv1.ReasonBackendRejected, errors.New("the Network has no UID"))
	}
	if err := validateTag(b.uidTag(desired.UID)); err != nil {
		return nil, network.Permanent("create network", samplecrdv1.ReasonBackendRejected, err)
	}
	var prefix netip.Prefix
	var err error
	if desired.SubnetPool == nil {
		if prefix, err = netip.ParsePrefix(desired.CIDR); err != nil {
			return nil, network.Permanent("create subnet", samplecrdv1.ReasonInvalidSpec, fmt.Errorf("invalid cidr %q: %w", desired.CIDR, err))
		}
	}
	name := displayName(desired.Namespace, desired.Name)

	// One lookup finds what an earlier attempt left, if anything: our
	// network (its description names the UID), or one whose create was
	// interrupted before it was tagged (Neutron takes no tags in a network's
	// POST). Networks that existed before the controller started are known
	// from its List, whatever happened to their descriptions since. By
	// name, then by the start of the description: the Network's own text
	// after it may have been edited since.
	var found []neutronNetwork
	if lookup {
		if found, err = b.listNetworks(ctx, networks.ListOpts{Name: name}); err != nil {
			return nil, err
		}
		found = slices.DeleteFunc(found, func(n neutronNetwork) bool {
			return !b.owns(n.Tags, desired.UID) && !b.describes(n.Description, desired)
		})
	}
	slices.SortStableFunc(found, func(x, y neutronNetwork) int { return x.CreatedAt.Compare(y.CreatedAt) })
	if len(found) > 0 {
		b.setUnanswered(desired.UID, "networks", false)
	}
	var net *neutronNetwork
	var refs resolved
	made := false // whether this call created or marked anything
	for i := range found {
		if b.owns(found[i].Tags, desired.UID) {
			net = &found[i]
			break
		}
	}
	if net == nil {
		for i := range found {
			if uidFromTags(found[i].Tags) == "" {
				net = &found[i]
				logger.Info("Adopting a Neutron network whose create was interrupted before it was tagged", "networkID", net.ID)
				break
			}
		}
		if net == nil && lookup {
			if err := b.awaitUnanswered(desired.UID, "networks"); err != nil {
				return nil, err
			}
			if err := b.checkRecorded(ctx, desired); err != nil {
				return nil, err
			}
		}
		if net == nil {
			// Every reference resolved before anything is made: a pool
			// or router that is not there leaves nothing behind.
			if err := b.resolveRefs(ctx, desired, &refs); err != nil {
				return nil, err
			}
			rctx, cancel := b.request(ctx)
			sent := rctx.Err() == nil // else the request fails before it is sent
			net = &neutronNetwork{}
			err = networks.Create(rctx, b.client, b.networkCreateOpts(desired)).ExtractInto(net)
			cancel()
			if err != nil {
				if sent && unanswered(err) {
					b.setUnanswered(desired.UID, "networks", true)
				}
				return nil, classify("create network", err)
			}
			logger.Info("Created Neutron network", "name", name, "networkID", net.ID)
		}
		tags, err := b.tag(ctx, "networks", net.ID, net.Tags, desired)
		if err != nil {
			return nil, err
		}
		net.tagged(tags)
		made = true
	}

	// The subnet. A network lists its subnets' IDs: one with none (always
	// so for a network just created) needs no lookup.
	var sub *subnets.Subnet
	adopted := false
	if len(net.Subnets) > 0 {
		subs, err := b.listSubnets(ctx, subnets.ListOpts{NetworkID: net.ID})
		if err != nil {
			return nil, err
		}
		sub, adopted = b.pickSubnet(subs, desired, true)
	}
	if sub == nil {
		sopts := subnets.CreateOpts{NetworkID: net.ID, Name: name, Description: b.describeWith(desired, desired.Settings.Description, true)}
		if desired.SubnetPool != nil {
			// Neutron picks the range and the gateway.
			if err := b.resolveRefs(ctx, desired, &refs); err != nil {
				return nil, err
			}
			sopts.SubnetPoolID, sopts.IPVersion = refs.poolID, refs.ipVersion
			sopts.Prefixlen = desired.PrefixLength
		} else {
			gw := desired.Gateway
			sopts.CIDR, sopts.IPVersion, sopts.GatewayIP = desired.CIDR, gophercloud.IPv4, &gw
			if prefix.Addr().Is6() {
				sopts.IPVersion = gophercloud.IPv6
			}
		}
		subnetSettings(&sopts, desired.Settings)
		if err := b.awaitUnanswered(desired.UID, "subnets"); err != nil {
			return nil, err
		}
		rctx, cancel := b.request(ctx)
		sent := rctx.Err() == nil
		sub, err = subnets.Create(rctx, b.client, sopts).Extract()
		cancel()
		if err != nil {
			if sent && unanswered(err) {
				b.setUnanswered(desired.UID, "subnets", true)
			}
			err = classify("create subnet", err)
			if network.Reason(err) != samplecrdv1.ReasonCIDROverlap {
				return nil, err
			}
			// Neutron refuses a second overlapping subnet in one network:
			// the one it holds may be ours, made by an earlier attempt
			// whose request was still running when this one looked.
			subs, lerr := b.listSubnets(ctx, subnets.ListOpts{NetworkID: net.ID})
			if lerr != nil {
				return nil, lerr
			}
			if sub, adopted = b.pickSubnet(subs, desired, true); sub == nil {
				return nil, err
			}
			logger.Info("Adopting the Neutron subnet an earlier attempt created meanwhile", "networkID", net.ID, "subnetID", sub.ID)
		} else {
			logger.Info("Created Neutron subnet", "networkID", net.ID, "subnetID", sub.ID, "cidr", sub.CIDR, "gateway", sub.GatewayIP)
			adopted = true
			net.Subnets = append(net.Subnets, sub.ID)
			net.RevisionNumber++ // a new subnet revises its network
		}
	}
	router := ""
	if adopted {
		// The router's mark goes on with ours, before the interface: a
		// crash in between leaves a mark without an interface, which the
		// next List sees and the next sync completes.
		if desired.Router != nil {
			if err := b.resolveRefs(ctx, desired, &refs); err != nil {
				return nil, err
			}
			router = refs.router
		}
		tags, err := b.replaceTags(ctx, "subnets", sub.ID, withMark(withTags(sub.Tags, b.tags(desired), desired.Settings.Tags), router))
		if err != nil {
			return nil, err
		}
		taggedSubnet(sub, tags)
		made = true
	}
	out := b.toNetwork(net, sub)
	out.Existed = !made
	if router != "" {
		port, err := b.addInterface(ctx, router, sub.ID)
		if err != nil {
			return nil, err
		}
		out.RouterID, out.RouterPortID = router, port
	} else if !adopted {
		if err := b.readInterface(ctx, out, sub); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resolved is what a create resolved of desired's references.
type resolved struct {
	done      bool
	poolID    string
	ipVersion gophercloud.IPVersion
	router    string
}

// resolveRefs resolves desired's subnet pool and router into r, once per
// create: each costs the request it would cost at its use (the pool's
// lookup, a router's by name; a router by ID is not looked up).
func (b *Backend) resolveRefs(ctx context.Context, desired network.Network, r *resolved) error {
	if r.done {
		return nil
	}
	var err error
	if desired.SubnetPool != nil {
		if r.poolID, r.ipVersion, err = b.resolvePool(ctx, *desired.SubnetPool); err != nil {
			return err
		}
	}
	if desired.Router != nil {
		if r.router, err = b.resolveRouter(ctx, *desired.Router); err != nil {
			return err
		}
	}
	r.done = true
	return nil
}

// checkRecorded refuses to create a network for desired when the network
// its Network's status records (desired.NetworkID) is still in Neutron,
// marked with its UID but with another managed-by value: the controller
// runs with a changed --neutron-managed-by, which would otherwise give
// every Network a second network. A recorded network that is gone (deleted
// behind our back) is created again.
func (b *Backend) checkRecorded(ctx context.Context, desired network.Network) error {
	if desired.NetworkID == "" {
		return nil
	}
	rctx, cancel := b.request(ctx)
	n, err := networks.Get(rctx, b.client, desired.NetworkID).Extract()
	cancel()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return classify("get network "+desired.NetworkID, err)
	}
	if (b.projectID != "" && n.ProjectID != b.projectID) || !slices.Contains(n.Tags, b.uidTag(desired.UID)) {
		return nil // not the Network's any more
	}
	var other []string
	for _, t := range n.Tags {
		if v, ok := strings.CutPrefix(t, ManagedByTagPrefix); ok && v != b.managedBy {
			other = append(other, v)
		}
	}
	if len(other) == 0 {
		return nil
	}
	return network.Permanent("create network", samplecrdv1.ReasonBackendRejected, fmt.Errorf(
		"the Network's network %s is managed by %q, but this controller runs with --neutron-managed-by=%q: "+
			"not creating a second one; run with --neutron-managed-by=%s (or retag its networks and subnets managed-by=%s)",
		n.ID, strings.Join(other, ","), b.managedBy, other[0], b.managedBy))
}

// unansweredKey is a POST of a Network's network or subnet.
type unansweredKey struct {
	uid      types.UID
	resource string // "networks" or "subnets"
}

// awaitUnanswered fails with a transient error while an earlier POST of
// resource for uid got no answer less than a RequestTimeout ago: Neutron
// may still be creating it, and a second POST would leave one of the two
// untagged (or, for a subnet from a pool, take a second range). The
// retry's lookup finds it once it is made; after that time, it is taken
// as never made.
func (b *Backend) awaitUnanswered(uid types.UID, resource string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := unansweredKey{uid, resource}
	at, ok := b.unanswered[k]
	if !ok {
		return nil
	}
	what := strings.TrimSuffix(resource, "s")
	if wait := b.timeout - time.Since(at); wait > 0 {
		return network.Transient("create "+what, samplecrdv1.ReasonBackendUnavailable, fmt.Errorf(
			"an earlier request creating this %s got no answer and may still be running in Neutron: waiting for it (at most %v) before creating another", what, b.timeout))
	}
	delete(b.unanswered, k)
	return nil
}

// setUnanswered records (or forgets) that a POST of resource for uid got
// no answer; resource "" forgets both.
func (b *Backend) setUnanswered(uid types.UID, resource string, pending bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pending {
		b.unanswered[unansweredKey{uid, resource}] = time.Now()
		return
	}
	for _, r := range []string{"networks", "subnets"} {
		if resource == "" || resource == r {
			delete(b.unanswered, unansweredKey{uid, r})
		}
	}
}

// unanswered reports whether a request failed without an answer after it
// may have reached Neutron: not refused at the dial, nor answered 401 (the
// token revoked or expired) with Keystone then refusing or failing the new
// login: Neutron refused that request, it runs nowhere.
func unanswered(err error) bool {
	var reauth gophercloud.ErrUnableToReauthenticate
	var reauthPtr *gophercloud.ErrUnableToReauthenticate
	if errors.As(err, &reauthPtr) || errors.As(err, &reauth) {
		return false
	}
	if _, ok := statusCode(err); ok {
		return false
	}
	var opErr *net.OpError
	return !errors.As(err, &opErr) || opErr.Op != "dial"
}

// UpdateGateway implements network.Backend: Update of the gateway alone,
// one request when cur is what Create, Get or List returned.
func (b *Backend) UpdateGateway(ctx context.Context, cur network.Network, gateway string) (*network.Network, error) {
	return b.Update(ctx, cur, network.Network{Gateway: gateway})
}

// Delete implements network.Backend.
func (b *Backend) Delete(ctx context.Context, target network.Network) error {
	logger := klog.FromContext(ctx).WithValues("uid", target.UID)
	if target.UID == "" {
		return nil
	}
	b.setUnanswered(target.UID, "", false)
	nets, err := b.findNetworks(ctx, target.UID)
	if err != nil {
		return err
	}
	if target.Namespace != "" {
		untagged, err := b.listNetworks(ctx, networks.ListOpts{Name: displayName(target.Namespace, target.Name)})
		if err != nil {
			return err
		}
		for _, n := range untagged {
			if uidFromTags(n.Tags) == "" && !slices.Contains(n.Tags, DetachedTag) && b.describes(n.Description, target) {
				nets = append(nets, n)
			}
		}
	}
	for _, n := range nets {
		subs, err := b.listSubnets(ctx, subnets.ListOpts{NetworkID: n.ID})
		if err != nil {
			return err
		}
		// Subnets of other projects (an admin may add them to our
		// network) are not in our project's list; the network names every
		// subnet it holds.
		var foreign []string
		for _, id := range n.Subnets {
			if !slices.ContainsFunc(subs, func(s subnets.Subnet) bool { return s.ID == id }) {
				foreign = append(foreign, id)
			}
		}
		for _, s := range subs {
			ours := slices.Contains(s.Tags, b.uidTag(target.UID)) ||
				(uidFromTags(s.Tags) == "" && target.Namespace != "" && b.describes(s.Description, target))
			if !ours {
				foreign = append(foreign, s.ID)
				continue
			}
			// Neutron refuses to delete a subnet a router port uses.
			if router := routerMark(s.Tags); router != "" {
				if err := b.removeInterface(ctx, router, s.ID); err != nil {
					return err
				}
			}
			if err := b.deleteSubnet(ctx, s.ID); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				return classify("delete subnet "+s.ID, err)
			}
			logger.Info("Deleted Neutron subnet", "networkID", n.ID, "subnetID", s.ID)
		}
		if len(foreign) > 0 && target.Imported && slices.Contains(n.Tags, b.uidTag(target.UID)) {
			// An adopted network that holds subnets the Network did not
			// adopt (they were there before it): it was never ours to
			// delete; what was ours (the subnet) is gone, the network is
			// left as a Detach leaves it.
			if err := b.untag(ctx, "networks", n.ID, n.Tags); err != nil {
				return err
			}
			logger.Info("Left the adopted Neutron network: it holds subnets that are not the Network's; our tags removed", "networkID", n.ID, "subnets", foreign)
			continue
		}
		if len(foreign) > 0 {
			// Neutron deletes a network's unused subnets with it, whoever
			// made them: leave the network to whoever added subnets to it.
			return network.Transient("delete network "+n.ID, samplecrdv1.ReasonBackendInUse, fmt.Errorf(
				"the network also holds subnets this controller did not create (%s; one of another project is seen only by an admin): delete them and the delete goes on",
				strings.Join(foreign, ", ")))
		}
		if err := b.deleteNetwork(ctx, n.ID); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return classify("delete network "+n.ID, err)
		}
		logger.Info("Deleted Neutron network", "networkID", n.ID, "name", n.Name)
	}
	return nil
}

func (b *Backend) deleteSubnet(ctx context.Context, id string) error {
	ctx, cancel := b.request(ctx)
	defer cancel()
	return subnets.Delete(ctx, b.client, id).ExtractErr()
}

func (b *Backend) deleteNetwork(ctx context.Context, id string) error {
	ctx, cancel := b.request(ctx)
	defer cancel()
	return networks.Delete(ctx, b.client, id).ExtractErr()
}

// List implements network.Backend: two paginated lists filtered by the
// managed-by tag, networks and subnets, whatever the number of Networks.
func (b *Backend) List(ctx context.Context) ([]network.Network, error) {
	nets, err := b.listNetworks(ctx, networks.ListOpts{Tags: b.managedTag(), Limit: b.pageSize})
	if err != nil {
		return nil, err
	}
	subs, err := b.listSubnets(ctx, subnets.ListOpts{Tags: b.managedTag(), Limit: b.pageSize})
	if err != nil {
		return nil, err
	}
	byNetwork := make(map[string][]*subnets.Subnet, len(subs))
	for j := range subs {
		byNetwork[subs[j].NetworkID] = append(byNetwork[subs[j].NetworkID], &subs[j])
	}
	out := make([]network.Network, 0, len(nets))
	var picked []*subnets.Subnet
	routed := false
	for i := range nets {
		uid := uidFromTags(nets[i].Tags)
		if uid == "" {
			continue
		}
		var sub *subnets.Subnet
		for _, s := range byNetwork[nets[i].ID] {
			if slices.Contains(s.Tags, b.uidTag(uid)) {
				sub = s
				break
			}
		}
		out = append(out, *b.toNetwork(&nets[i], sub))
		picked = append(picked, sub)
		routed = routed || (sub != nil && routerMark(sub.Tags) != "")
	}
	if routed {
		// Some subnets are (to be) attached to routers: one list of the
		// project's router interfaces says which are.
		ps, err := b.routerPorts(ctx, "")
		if err != nil {
			return nil, err
		}
		for i := range out {
			attached(&out[i], picked[i], ps)
		}
	}
	return out, nil
}

func (o byIDs) ToNetworkListQuery() (string, error) {
	q, err := gophercloud.BuildQueryString(o)
	return q.String(), err
}

func (o byNetworkIDs) ToSubnetListQuery() (string, error) {
	q, err := gophercloud.BuildQueryString(o)
	return q.String(), err
}
