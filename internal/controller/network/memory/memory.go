// Package memory is an in-process network backend: the default for local
// runs and demos, and a fast, controllable backend for tests and benchmarks.
// It keeps networks in memory and logs every operation, so a local run
// shows what a real backend would be asked to do. Like Neutron with a shared address scope, it rejects a
// subnet whose CIDR overlaps another one (a permanent error).
package memory

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Op names a backend operation, for fault hooks.
type Op string

// The operations of the backend.
const (
	OpGet           Op = "Get"
	OpCreate        Op = "Create"
	OpCreateSubnet  Op = "CreateSubnet" // fault hook only: between a Create's network and its subnet
	OpUpdateGateway Op = "UpdateGateway"
	OpUpdate        Op = "Update"
	OpDelete        Op = "Delete"
	OpList          Op = "List"
	OpImport        Op = "Import"
	OpDetach        Op = "Detach"
	OpObserve       Op = "Observe"
)

// FaultFunc is called before every operation (after the latency); a non-nil
// error fails the operation with it, before it changes anything. uid is empty
// for List.
type FaultFunc func(ctx context.Context, op Op, uid types.UID) error

// Stats counts the operations the backend performed successfully. An
// Observe, one read of many networks, counts as a List.
type Stats struct {
	Gets, Lists               int64
	Creates, Updates, Deletes int64
}

// Writes is the number of successful writes (creates, updates and deletes).
func (s Stats) Writes() int64 { return s.Creates + s.Updates + s.Deletes }

// Object is a backend network as the backend stores it, including the ones
// that are not ours.
type Object struct {
	network.Network
	// Owned is false for foreign objects (AddForeign): the controller never
	// sees or touches them.
	Owned bool
	// Tags are a foreign object's, for import filters.
	Tags []string
	// BackendName is the name the backend gives the network and its
	// subnet: k8s-<namespace>-<name> for one it created, a foreign
	// network's own (kept when adopted).
	BackendName string
	// Revision and SubnetRevision count the writes to the network and to
	// its subnet, as Neutron's revision_number does.
	Revision, SubnetRevision int64
	// SubnetPoolID is the pool the subnet's range was taken from.
	SubnetPoolID string
	// Project is the project that holds the network: the backend's
	// (ProjectID unless WithProject).
	Project string
}

// The values the memory backend reports for what it does not model.
const (
	// MTU is the MTU of every network.
	MTU = 1500
	// ProjectID is the project a backend acts in, and holds its networks
	// in, unless WithProject.
	ProjectID = "memory"
)

// view returns the network as the Backend methods return it, with what a
// Network's status shows of it.
func (o *Object) view() network.Network {
	n := o.Network
	name, tags := o.BackendName, o.Tags
	if o.Owned {
		tags = append(slices.Clone(o.Tags), "k8s-network-uid="+string(o.UID), "managed-by="+network.ManagedBy)
	}
	set := o.settings()
	n.Settings = set
	up := *set.AdminStateUp
	n.Observed = network.NormalizeNetwork(&samplecrdv1.NetworkObservation{
		ID: o.NetworkID, Name: name, Status: "ACTIVE", AdminStateUp: &up, MTU: *set.MTU, ProjectID: o.Project,
		Description: *set.Description, Tags: tags, RevisionNumber: o.Revision,
	})
	if o.SubnetID != "" {
		v := int32(4)
		if strings.Contains(o.CIDR, ":") {
			v = 6
		}
		sub := &samplecrdv1.SubnetObservation{
			ID: o.SubnetID, Name: name, CIDR: o.CIDR, GatewayIP: o.Gateway, IPVersion: v, EnableDHCP: *set.EnableDHCP,
			DNSNameservers: set.DNSNameservers, Description: *set.Description, Tags: tags, SubnetPoolID: o.SubnetPoolID,
			RevisionNumber: o.SubnetRevision,
		}
		for _, p := range set.AllocationPools {
			sub.AllocationPools = append(sub.AllocationPools, samplecrdv1.AllocationPool(p))
		}
		for _, r := range set.HostRoutes {
			sub.HostRoutes = append(sub.HostRoutes, samplecrdv1.HostRouteObservation(r))
		}
		n.ObservedSubnet = network.NormalizeSubnet(sub)
	}
	return n
}

// settings returns what o holds of every setting: what was written, else
// the backend's defaults (allocation pools: every address but the
// gateway's, following the gateway).
func (o *Object) settings() network.Settings {
	s := o.Network.Settings
	empty, up, mtu := "", true, int32(MTU)
	if s.Description == nil {
		s.Description = &empty
	}
	if s.MTU == nil {
		s.MTU = &mtu
	}
	if s.AdminStateUp == nil {
		s.AdminStateUp = &up
	}
	if s.EnableDHCP == nil {
		s.EnableDHCP = &up
	}
	if s.DNSNameservers == nil {
		s.DNSNameservers = []string{}
	}
	if s.AllocationPools == nil {
		for _, p := range pools(o.CIDR, o.Gateway) {
			s.AllocationPools = append(s.AllocationPools, samplecrdv1.AllocationPoolSpec(p))
		}
	}
	if s.HostRoutes == nil {
		s.HostRoutes = []samplecrdv1.HostRoute{}
	}
	s.Tags = []string{}
	for _, t := range o.Tags {
		if !reserved(t) {
			s.Tags = append(s.Tags, t)
		}
	}
	slices.Sort(s.Tags)
	return s
}

// reserved reports whether tag is one of the controller's own marks,
// never a user tag.
func reserved(tag string) bool {
	return strings.HasPrefix(tag, "k8s-") || strings.HasPrefix(tag, "managed-by=")
}

// apply makes o hold what set sets (validated by check first); it reports
// whether anything changed on the network and on the subnet.
func (o *Object) apply(set network.Settings) (netChanged, subChanged bool) {
	held := o.settings()
	if len(set.Diff(held)) == 0 {
		return false, false
	}
	cur := &o.Network.Settings
	if set.Description != nil && *set.Description != *held.Description {
		cur.Description = set.Description
		netChanged, subChanged = true, true
	}
	if set.Tags != nil && !slices.Equal(set.Tags, held.Tags) {
		o.Tags = append(slices.DeleteFunc(slices.Clone(o.Tags), func(t string) bool { return !reserved(t) }), set.Tags...)
		netChanged, subChanged = true, true
	}
	if set.MTU != nil && *set.MTU != *held.MTU {
		cur.MTU, netChanged = set.MTU, true
	}
	if set.AdminStateUp != nil && *set.AdminStateUp != *held.AdminStateUp {
		cur.AdminStateUp, netChanged = set.AdminStateUp, true
	}
	if set.EnableDHCP != nil && *set.EnableDHCP != *held.EnableDHCP {
		cur.EnableDHCP, subChanged = set.EnableDHCP, true
	}
	if set.DNSNameservers != nil && len((network.Settings{DNSNameservers: set.DNSNameservers}).Diff(held)) > 0 {
		cur.DNSNameservers, subChanged = set.DNSNameservers, true
	}
	if set.AllocationPools != nil && len((network.Settings{AllocationPools: set.AllocationPools}).Diff(held)) > 0 {
		cur.AllocationPools, subChanged = set.AllocationPools, true
	}
	if set.HostRoutes != nil && len((network.Settings{HostRoutes: set.HostRoutes}).Diff(held)) > 0 {
		cur.HostRoutes, subChanged = set.HostRoutes, true
	}
	return netChanged, subChanged
}

// check refuses, as Neutron does, settings it cannot hold for a subnet
// of cidr with gateway: an MTU above the network's, pools outside the
// cidr, reversed, overlapping or holding the gateway.
func check(op, cidr, gateway string, set network.Settings) error {
	reject := func(format string, args ...any) error {
		return network.Permanent(op, samplecrdv1.ReasonBackendRejected, fmt.Errorf(format, args...))
	}
	if set.MTU != nil && *set.MTU > MTU {
		return reject("requested MTU is too big, maximum is %d", MTU)
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil
	}
	gw, gwErr := netip.ParseAddr(gateway)
	var ranges [][2]netip.Addr
	for _, p := range set.AllocationPools {
		start, err1 := netip.ParseAddr(p.Start)
		end, err2 := netip.ParseAddr(p.End)
		switch {
		case err1 != nil || err2 != nil || !prefix.Contains(start) || !prefix.Contains(end):
			return reject("the allocation pool %s-%s spans beyond the subnet cidr %s", p.Start, p.End, cidr)
		case start.Compare(end) > 0:
			return reject("the allocation pool %s-%s starts after it ends", p.Start, p.End)
		case gwErr == nil && gw.Compare(start) >= 0 && gw.Compare(end) <= 0:
			return reject("the gateway %s is inside the allocation pool %s-%s", gateway, p.Start, p.End)
		}
		for _, r := range ranges {
			if start.Compare(r[1]) <= 0 && r[0].Compare(end) <= 0 {
				return reject("the allocation pools %s-%s and %s-%s overlap", r[0], r[1], start, end)
			}
		}
		ranges = append(ranges, [2]netip.Addr{start, end})
	}
	return nil
}

// pools returns the addresses of cidr after the network address (and
// before an IPv4 broadcast address), less the gateway: a plausible
// allocation.
func pools(cidr, gateway string) []samplecrdv1.AllocationPool {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil
	}
	p = p.Masked()
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	first, last := p.Addr().Next(), netip.AddrFrom16([16]byte(append(make([]byte, 16-len(b)), b...)))
	if p.Addr().Is4() {
		last = netip.AddrFrom4([4]byte(b))
		if p.Bits() <= 30 {
			last = last.Prev()
		}
	}
	if !first.IsValid() || first.Compare(last) > 0 {
		return nil
	}
	gw, err := netip.ParseAddr(gateway)
	if err != nil || gw.Compare(first) < 0 || gw.Compare(last) > 0 {
		return []samplecrdv1.AllocationPool{{Start: first.String(), End: last.String()}}
	}
	var out []samplecrdv1.AllocationPool
	if gw != first {
		out = append(out, samplecrdv1.AllocationPool{Start: first.String(), End: gw.Prev().String()})
	}
	if gw != last {
		out = append(out, samplecrdv1.AllocationPool{Start: gw.Next().String(), End: last.String()})
	}
	return out
}

// Backend is the in-memory backend. The zero value is not usable; use New.
type Backend struct {
	mu       sync.Mutex
	objects  map[string]*Object // by NetworkID
	byUID    map[types.UID]string
	nextID   int
	overlap  bool
	latency  time.Duration
	fault    FaultFunc
	failNext []error
	stats    Stats
	// routers are the routers subnets can be attached to, names by ID.
	routers map[string]string
	// subnetPools are the pools subnets can take their range from, by ID.
	subnetPools map[string]subnetPool
	// project is what Project returns (ProjectID by default).
	project string
}

// subnetPool is a range subnets are allocated from.
type subnetPool struct {
	name          string
	prefix        netip.Prefix
	defaultLength int
}

var _ network.Backend = (*Backend)(nil)

// Option configures a Backend.
type Option func(*Backend)

// WithOverlappingCIDRs lets subnets overlap, as Neutron does by default
// (allow_overlapping_ips); without it, an overlapping CIDR is a permanent
// samplecrdv1.ReasonCIDROverlap error.
func WithOverlappingCIDRs() Option { return func(b *Backend) { b.overlap = true } }

// WithProject makes the backend act in project id (Project), as if its
// credentials were scoped to it: tests of a Network's binding to its
// project use backends of several. Its networks are in that project.
func WithProject(id string) Option { return func(b *Backend) { b.project = id } }

// Project implements network.Backend.
func (b *Backend) Project() string { return b.project }

// New returns an empty in-memory backend.
func New(opts ...Option) *Backend {
	b := &Backend{project: ProjectID, objects: map[string]*Object{}, byUID: map[types.UID]string{}, routers: map[string]string{}, subnetPools: map[string]subnetPool{}}
	for _, o := range opts {
		o(b)
	}
	return b
}

// SetLatency makes every operation take at least d (0 removes the latency);
// an operation whose context ends first fails with the context's error.
func (b *Backend) SetLatency(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.latency = d
}

// SetFault installs f as the fault hook (nil removes it).
func (b *Backend) SetFault(f FaultFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fault = f
}

// FailNext makes the next len(errs) operations fail, one error each, in
// order, before they change anything. Use network.Transient or
// network.Permanent to build classified errors.
func (b *Backend) FailNext(errs ...error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failNext = append(b.failNext, errs...)
}

// Stats returns the counters of successful operations.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// AddForeign adds a network (and subnet) that this controller did not
// create, as an operator or another tool would, and returns its ID. The
// backend never returns, changes or deletes it through the Backend methods.
func (b *Backend) AddForeign(name, cidr, gateway string, tags ...string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.newID("net")
	b.objects[id] = &Object{Tags: tags, BackendName: name, Revision: 2, Project: b.project, Network: network.Network{Name: name, CIDR: cidr, Gateway: gateway, NetworkID: id, SubnetID: b.newID("subnet")}}
	return id
}

// AddRouter adds a router named name, as an operator would, and returns
// its ID.
func (b *Backend) AddRouter(name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.newID("router")
	b.routers[id] = name
	return id
}

// AddSubnetPool adds a subnet pool named name over prefix, whose subnets
// are /defaultLength unless asked otherwise, and returns its ID.
func (b *Backend) AddSubnetPool(name, prefix string, defaultLength int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.newID("subnetpool")
	b.subnetPools[id] = subnetPool{name: name, prefix: netip.MustParsePrefix(prefix), defaultLength: defaultLength}
	return id
}

// allocate returns a free range of ref's pool, of length (0: the pool's
// default), and the pool's ID: the first one no subnet of the backend
// overlaps.
func (b *Backend) allocate(ref network.SubnetPoolRef, length int) (string, string, error) {
	op := "create subnet from " + ref.String()
	id, pool, err := b.findPool(ref)
	if err != nil {
		return "", "", err
	}
	if length == 0 {
		length = pool.defaultLength
	}
	if length < pool.prefix.Bits() || length > pool.prefix.Addr().BitLen() {
		return "", "", network.Permanent(op, samplecrdv1.ReasonBackendRejected, fmt.Errorf("prefix length %d is outside the pool's bounds", length))
	}
	for candidate := netip.PrefixFrom(pool.prefix.Addr(), length); pool.prefix.Contains(candidate.Addr()); {
		free := true
		for _, o := range b.objects {
			if p, err := netip.ParsePrefix(o.CIDR); err == nil && p.Overlaps(candidate) {
				free = false
				break
			}
		}
		if free {
			return candidate.String(), id, nil
		}
		next, ok := nextPrefix(candidate)
		if !ok {
			break
		}
		candidate = next
	}
	return "", "", network.Transient(op, samplecrdv1.ReasonSubnetPoolExhausted, fmt.Errorf(
		"insufficient prefix space to allocate subnet size /%d: free a subnet of the pool, or ask its owner to add prefixes", length))
}

// findPool returns the pool ref names and its ID.
func (b *Backend) findPool(ref network.SubnetPoolRef) (string, subnetPool, error) {
	id := ref.ID
	if id == "" {
		for pid, p := range b.subnetPools {
			if p.name == ref.Name {
				id = pid
			}
		}
	}
	pool, ok := b.subnetPools[id]
	if !ok {
		return "", pool, network.Permanent("create subnet from "+ref.String(), samplecrdv1.ReasonSubnetPoolNotFound, fmt.Errorf("no such subnet pool the project can use: create or share it, or fix spec.subnetPool"))
	}
	return id, pool, nil
}

// nextPrefix returns the prefix of p's length after p.
func nextPrefix(p netip.Prefix) (netip.Prefix, bool) {
	b := p.Addr().AsSlice()
	// Add 1 at the prefix's last bit.
	for i := p.Bits() - 1; i >= 0; i-- {
		mask := byte(1 << (7 - i%8))
		if b[i/8]&mask == 0 {
			b[i/8] |= mask
			a, _ := netip.AddrFromSlice(b)
			return netip.PrefixFrom(a, p.Bits()), true
		}
		b[i/8] &^= mask
	}
	return netip.Prefix{}, false
}

// RemoveInterface removes the router interface of network id's subnet,
// as an operator would behind the controller's back.
func (b *Backend) RemoveInterface(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o := b.objects[id]; o != nil {
		o.RouterID, o.RouterPortID = "", ""
	}
}

// resolveRouter returns the ID of the router ref names.
func (b *Backend) resolveRouter(ref network.RouterRef) (string, error) {
	if ref.ID != "" {
		if _, ok := b.routers[ref.ID]; ok {
			return ref.ID, nil
		}
	} else {
		var ids []string
		for id, name := range b.routers {
			if name == ref.Name {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		switch len(ids) {
		case 1:
			return ids[0], nil
		case 0:
		default:
			return "", network.ErrSameName("attach to "+ref.String(), "routers", ids)
		}
	}
	return "", network.Permanent("attach to "+ref.String(), samplecrdv1.ReasonRouterNotFound, fmt.Errorf(
		"no such router the project can use: create it, or fix spec.router"))
}

// attach makes o's subnet attached to ref's router, or to none (ref nil);
// it reports whether it changed anything.
func (b *Backend) attach(o *Object, ref *network.RouterRef) (bool, error) {
	switch {
	case ref == nil && o.RouterID != "":
		o.RouterID, o.RouterPortID = "", ""
		return true, nil
	case ref == nil, ref.ID != "" && ref.ID == o.RouterID, ref.ID == "" && o.RouterID != "":
		return false, nil
	}
	id, err := b.resolveRouter(*ref)
	if err != nil {
		return false, err
	}
	o.RouterID, o.RouterPortID = id, b.newID("port")
	return true, nil
}

// RenameForeign renames the foreign network id, as an operator would
// behind the controller's back.
func (b *Backend) RenameForeign(id, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o := b.objects[id]; o != nil && !o.Owned {
		o.Name, o.BackendName = name, name
		o.Revision++
	}
}

// Objects returns everything the backend holds, ours and foreign, sorted by
// network ID.
func (b *Backend) Objects() []Object {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Object, 0, len(b.objects))
	for _, o := range b.objects {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(x, y Object) int { return strings.Compare(x.NetworkID, y.NetworkID) })
	return out
}

func (b *Backend) newID(kind string) string {
	b.nextID++
	return fmt.Sprintf("mem-%s-%06d", kind, b.nextID)
}

// begin waits for the latency and runs the fault hooks.
func (b *Backend) begin(ctx context.Context, op Op, uid types.UID) error {
	b.mu.Lock()
	latency, fault := b.latency, b.fault
	var injected error
	if len(b.failNext) > 0 {
		injected = b.failNext[0]
		b.failNext = b.failNext[1:]
	}
	b.mu.Unlock()

	if latency > 0 {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return network.Transient(strings.ToLower(string(op)), samplecrdv1.ReasonBackendUnavailable, ctx.Err())
		}
	}
	if err := ctx.Err(); err != nil {
		return network.Transient(strings.ToLower(string(op)), samplecrdv1.ReasonBackendUnavailable, err)
	}
	if injected != nil {
		return injected
	}
	if fault != nil {
		return fault(ctx, op, uid)
	}
	return nil
}

func (b *Backend) lookup(uid types.UID) *Object {
	if id, ok := b.byUID[uid]; ok {
		return b.objects[id]
	}
	return nil
}

// Get implements network.Backend.
func (b *Backend) Get(ctx context.Context, uid types.UID) (*network.Network, error) {
	if err := b.begin(ctx, OpGet, uid); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.lookup(uid)
	if o == nil {
		return nil, fmt.Errorf("network for uid %s: %w", uid, network.ErrNotFound)
	}
	b.stats.Gets++
	n := o.view()
	return &n, nil
}

// Create implements network.Backend. Like Neutron, it creates the network
// first and then its subnet; the fault hook is consulted in between
// (OpCreateSubnet), so tests can leave a network without a subnet behind.
func (b *Backend) Create(ctx context.Context, desired network.Network) (*network.Network, error) {
	logger := klog.FromContext(ctx)
	if err := b.begin(ctx, OpCreate, desired.UID); err != nil {
		return nil, err
	}
	if desired.UID == "" {
		return nil, network.Permanent("create network", samplecrdv1.ReasonBackendRejected, fmt.Errorf("the Network has no UID"))
	}
	if desired.SubnetPool == nil {
		if err := samplecrdv1.ValidateSpec(samplecrdv1.NetworkSpec{CIDR: desired.CIDR, Gateway: desired.Gateway}); err != nil {
			return nil, network.Permanent("create network", samplecrdv1.ReasonInvalidSpec, err)
		}
		if err := check("create network", desired.CIDR, desired.Gateway, desired.Settings); err != nil {
			return nil, err
		}
	}

	b.mu.Lock()
	o := b.lookup(desired.UID)
	if o != nil && o.SubnetID != "" {
		n := o.view()
		n.Existed = true
		b.mu.Unlock()
		logger.V(2).Info("[Neutron mock] Network already exists", "network", klog.KRef(desired.Namespace, desired.Name), "uid", desired.UID, "networkID", n.NetworkID)
		return &n, nil
	}
	if o == nil {
		// As Neutron's: every reference resolved before anything is
		// made.
		var err error
		if desired.SubnetPool != nil {
			_, _, err = b.findPool(*desired.SubnetPool)
		}
		if err == nil && desired.Router != nil {
			_, err = b.resolveRouter(*desired.Router)
		}
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		o = &Object{Owned: true, BackendName: network.DisplayName(desired.Namespace, desired.Name), Revision: 1, Project: b.project, Network: network.Network{
			UID: desired.UID, Namespace: desired.Namespace, Name: desired.Name, NetworkID: b.newID("net"),
			Settings: network.Settings{Description: desired.Settings.Description, MTU: desired.Settings.MTU, AdminStateUp: desired.Settings.AdminStateUp},
		}}
		o.Tags = slices.Clone(desired.Settings.Tags)
		b.objects[o.NetworkID] = o
		b.byUID[desired.UID] = o.NetworkID
		logger.Info("[Neutron mock] Created network", "network", klog.KRef(desired.Namespace, desired.Name), "uid", desired.UID,
			"name", network.DisplayName(desired.Namespace, desired.Name), "networkID", o.NetworkID)
	}
	fault := b.fault
	b.mu.Unlock()

	if fault != nil {
		if err := fault(ctx, OpCreateSubnet, desired.UID); err != nil {
			return nil, err
		}
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	o = b.lookup(desired.UID)
	if o == nil {
		return nil, network.Transient("create subnet", samplecrdv1.ReasonBackendUnavailable, fmt.Errorf("network for uid %s was deleted concurrently", desired.UID))
	}
	if o.SubnetID != "" { // a concurrent Create won
		n := o.view()
		return &n, nil
	}
	cidr, gateway := desired.CIDR, desired.Gateway
	if desired.SubnetPool != nil {
		var err error
		if cidr, o.SubnetPoolID, err = b.allocate(*desired.SubnetPool, desired.PrefixLength); err != nil {
			return nil, err
		}
		gateway = netip.MustParsePrefix(cidr).Addr().Next().String()
		if err := check("create subnet", cidr, gateway, desired.Settings); err != nil {
			return nil, err
		}
	} else if err := b.checkOverlap(desired.CIDR); err != nil {
		return nil, err
	}
	o.CIDR, o.Gateway, o.SubnetID = cidr, gateway, b.newID("subnet")
	set := &o.Network.Settings
	set.EnableDHCP, set.DNSNameservers = desired.Settings.EnableDHCP, desired.Settings.DNSNameservers
	set.AllocationPools, set.HostRoutes = desired.Settings.AllocationPools, desired.Settings.HostRoutes
	o.Revision++
	o.SubnetRevision = 1
	b.stats.Creates++
	if _, err := b.attach(o, desired.Router); err != nil {
		return nil, err // the network and subnet stay, as with Neutron: Ensure attaches them later
	}
	logger.Info("[Neutron mock] Created subnet", "network", klog.KRef(desired.Namespace, desired.Name), "uid", desired.UID,
		"cidr", o.CIDR, "gateway", o.Gateway, "networkID", o.NetworkID, "subnetID", o.SubnetID)
	n := o.view()
	return &n, nil
}

// CreateNew implements network.Backend: Create, refusing with a permanent
// error a UID the backend already holds a network for (the caller's
// promise broken, which Neutron would answer with a duplicate network).
func (b *Backend) CreateNew(ctx context.Context, desired network.Network) (*network.Network, error) {
	b.mu.Lock()
	o := b.lookup(desired.UID)
	b.mu.Unlock()
	if o != nil {
		return nil, network.Permanent("create new network", samplecrdv1.ReasonBackendRejected, fmt.Errorf(
			"the backend already holds network %s for uid %s, created by an earlier attempt: the caller should have called Create", o.NetworkID, desired.UID))
	}
	return b.Create(ctx, desired)
}

// checkOverlap fails with a permanent error when cidr overlaps a subnet the
// backend holds (unless overlapping CIDRs are allowed).
func (b *Backend) checkOverlap(cidr string) error {
	if b.overlap {
		return nil
	}
	want, err := netip.ParsePrefix(cidr)
	if err != nil {
		return network.Permanent("create subnet", samplecrdv1.ReasonInvalidSpec, err)
	}
	for _, o := range b.objects {
		if o.SubnetID == "" {
			continue
		}
		if p, err := netip.ParsePrefix(o.CIDR); err == nil && p.Overlaps(want) {
			return network.Permanent("create subnet", samplecrdv1.ReasonCIDROverlap, fmt.Errorf(
				"cidr %s overlaps cidr %s of backend network %s (%s): pick a cidr that does not overlap", cidr, o.CIDR, o.NetworkID, o.Name))
		}
	}
	return nil
}

// UpdateGateway implements network.Backend.
// Like Neutron acting on cur's IDs, it fails with network.ErrNotFound when
// cur's subnet is gone, even if the UID has another one by now.
func (b *Backend) UpdateGateway(ctx context.Context, cur network.Network, gateway string) (*network.Network, error) {
	return b.update(ctx, OpUpdateGateway, cur, network.Network{Gateway: gateway})
}

// Update implements network.Backend: one write (counted as an update)
// when anything differs.
func (b *Backend) Update(ctx context.Context, cur, desired network.Network) (*network.Network, error) {
	return b.update(ctx, OpUpdate, cur, desired)
}

func (b *Backend) update(ctx context.Context, op Op, cur, desired network.Network) (*network.Network, error) {
	uid, gateway := cur.UID, desired.Gateway
	if err := b.begin(ctx, op, uid); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.lookup(uid)
	if o == nil || o.SubnetID == "" || (cur.SubnetID != "" && cur.SubnetID != o.SubnetID) {
		return nil, fmt.Errorf("update gateway: subnet for uid %s: %w", uid, network.ErrNotFound)
	}
	if gateway == "" {
		gateway = o.Gateway
	}
	if err := samplecrdv1.ValidateSpec(samplecrdv1.NetworkSpec{CIDR: o.CIDR, Gateway: gateway}); err != nil {
		return nil, network.Permanent("update gateway", samplecrdv1.ReasonInvalidSpec, err)
	}
	// The pools a gateway change moves: the ones set, or the defaults.
	set := desired.Settings
	if set.AllocationPools == nil && o.Gateway == gateway {
		set.AllocationPools = o.Network.Settings.AllocationPools
	}
	if err := check("update subnet", o.CIDR, gateway, set); err != nil {
		return nil, err
	}
	// An interface that stays holds the gateway address (one removed goes
	// first: attach below).
	if gateway != o.Gateway && o.RouterID != "" && (op != OpUpdate || desired.Router != nil) {
		return nil, network.Permanent("update subnet", samplecrdv1.ReasonBackendRejected, fmt.Errorf(
			"gateway ip %s is in use by the interface of router %s (port %s)", o.Gateway, o.RouterID, o.RouterPortID))
	}
	old := o.Gateway
	o.Gateway = gateway
	if old != gateway && desired.Settings.AllocationPools == nil {
		o.Network.Settings.AllocationPools = nil // the defaults, moved with the gateway
	}
	netChanged, subChanged := o.apply(desired.Settings)
	if old != gateway {
		subChanged = true
	}
	if op == OpUpdate {
		attached, err := b.attach(o, desired.Router)
		if err != nil {
			return nil, err
		}
		if attached {
			b.stats.Updates++
		}
	}
	if subChanged {
		o.SubnetRevision++
		o.Revision++ // an updated subnet revises its network
	}
	if netChanged {
		o.Revision++
	}
	if netChanged || subChanged {
		b.stats.Updates++
		klog.FromContext(ctx).Info("[Neutron mock] Updated network gateway and settings", "network", klog.KRef(o.Namespace, o.Name), "uid", uid,
			"networkID", o.NetworkID, "subnetID", o.SubnetID, "oldGateway", old, "gateway", gateway)
	}
	n := o.view()
	return &n, nil
}

// Delete implements network.Backend: the router interface goes with the
// subnet.
func (b *Backend) Delete(ctx context.Context, n network.Network) error {
	uid := n.UID
	if err := b.begin(ctx, OpDelete, uid); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.lookup(uid)
	if o == nil {
		klog.FromContext(ctx).V(2).Info("[Neutron mock] Network already deleted", "uid", uid)
		return nil
	}
	delete(b.objects, o.NetworkID)
	delete(b.byUID, uid)
	b.stats.Deletes++
	klog.FromContext(ctx).Info("[Neutron mock] Deleted network", "network", klog.KRef(o.Namespace, o.Name), "uid", uid,
		"networkID", o.NetworkID, "subnetID", o.SubnetID)
	return nil
}

// List implements network.Backend.
func (b *Backend) List(ctx context.Context) ([]network.Network, error) {
	if err := b.begin(ctx, OpList, ""); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]network.Network, 0, len(b.byUID))
	for _, id := range b.byUID {
		out = append(out, b.objects[id].view())
	}
	slices.SortFunc(out, func(x, y network.Network) int { return strings.Compare(x.NetworkID, y.NetworkID) })
	b.stats.Lists++
	return out, nil
}

// Import implements network.Backend. Its network has one subnet, so
// desired.CIDR only has to match it. Adopting counts as an update (the
// marks Neutron writes as tags).
func (b *Backend) Import(ctx context.Context, desired network.Network, ref network.Ref, adopt bool) (*network.Network, error) {
	if err := b.begin(ctx, OpImport, desired.UID); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.objects[ref.NetworkID]
	if ref.NetworkID == "" {
		var ids []string
		for _, c := range b.objects {
			if ref.Matches(c.BackendName, c.Tags) {
				o = c
				ids = append(ids, c.NetworkID)
			}
		}
		if len(ids) > 1 {
			slices.Sort(ids)
			return nil, network.ErrAmbiguous(ref, ids)
		}
	}
	if o == nil {
		return nil, fmt.Errorf("import %s: %w", ref, network.ErrNotFound)
	}
	b.stats.Gets++
	if desired.CIDR != "" && !network.SameCIDR(o.CIDR, desired.CIDR) {
		return nil, network.Permanent("import "+ref.String(), samplecrdv1.ReasonBackendRejected, fmt.Errorf(
			"it has no subnet with cidr %s (its subnet %s has %s): fix spec.cidr or remove it", desired.CIDR, o.SubnetID, o.CIDR))
	}
	n := o.view()
	if !adopt {
		n.UID, n.Namespace, n.Name, n.Existed = desired.UID, desired.Namespace, desired.Name, false
		return &n, nil
	}
	if o.Owned {
		if o.UID != desired.UID {
			return nil, network.Permanent("import "+ref.String(), samplecrdv1.ReasonBackendRejected, fmt.Errorf(
				"it belongs to the Network %s/%s (uid %s): a network is never taken from its owner", o.Namespace, o.Name, o.UID))
		}
		n.Existed = true
		return &n, nil
	}
	o.Tags = append(o.Tags, "k8s-ref-0="+desired.Namespace+"/"+desired.Name)
	o.Owned, o.UID, o.Namespace, o.Name = true, desired.UID, desired.Namespace, desired.Name
	o.Revision++
	o.SubnetRevision++
	b.byUID[desired.UID] = o.NetworkID
	b.stats.Updates++
	klog.FromContext(ctx).Info("[Neutron mock] Adopted network", "network", klog.KRef(desired.Namespace, desired.Name), "uid", desired.UID,
		"networkID", o.NetworkID, "subnetID", o.SubnetID)
	n = o.view()
	return &n, nil
}

// Detach implements network.Backend: the network becomes foreign.
func (b *Backend) Detach(ctx context.Context, n network.Network) error {
	if err := b.begin(ctx, OpDetach, n.UID); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.lookup(n.UID)
	if o == nil {
		return nil
	}
	delete(b.byUID, n.UID)
	o.Tags = append(slices.DeleteFunc(o.Tags, func(t string) bool { return strings.HasPrefix(t, "k8s-ref-") }), "k8s-network-detached")
	o.Owned, o.UID = false, ""
	o.Revision++
	o.SubnetRevision++
	b.stats.Updates++
	klog.FromContext(ctx).Info("[Neutron mock] Detached network", "network", klog.KRef(n.Namespace, n.Name), "uid", n.UID,
		"networkID", o.NetworkID, "subnetID", o.SubnetID)
	return nil
}

// Observe implements network.Backend: one read of every network of want,
// counted as a List.
func (b *Backend) Observe(ctx context.Context, want []network.Network) ([]network.Network, error) {
	if len(want) == 0 {
		return nil, nil
	}
	if err := b.begin(ctx, OpObserve, ""); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Lists++
	var out []network.Network
	for _, w := range want {
		o := b.objects[w.NetworkID]
		if o == nil || o.SubnetID == "" || (w.CIDR != "" && !network.SameCIDR(o.CIDR, w.CIDR)) {
			continue // Import would fail: the controller imports it again
		}
		n := o.view()
		n.UID, n.Namespace, n.Name, n.Existed = w.UID, w.Namespace, w.Name, false
		out = append(out, n)
	}
	return out, nil
}
