package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Backend is the network backend the controller reconciles Networks into
// (OpenStack Neutron, or the in-memory one). It holds one backend network per
// Network, identified by the Network's UID: a backend marks what it creates
// with that UID and never reads, changes or deletes anything it did not mark.
//
// Every method is safe for concurrent use, honours ctx (cancellation and
// deadline), and returns errors that either wrap ErrNotFound or are
// classified with *Error (see IsPermanent and Reason); an unclassified error
// is transient.
type Backend interface {
	// Get returns the backend network of the Network with this UID, or an
	// error wrapping ErrNotFound when there is none. A network whose subnet
	// is missing (a create interrupted half-way) is returned with an empty
	// SubnetID, CIDR and Gateway; Create completes it.
	Get(ctx context.Context, uid types.UID) (*Network, error)

	// Create creates the backend network and subnet of desired (UID,
	// Namespace, Name, CIDR and Gateway set, or SubnetPool: the subnet's
	// range then taken from the pool, a missing pool a permanent
	// ReasonSubnetPoolNotFound error, a full one a transient
	// ReasonSubnetPoolExhausted one; desired is valid per
	// samplecrdv1.ValidateSpec), with the settings desired.Settings sets,
	// and attaches the subnet to desired.Router (Update's errors when it
	// cannot: the network and subnet stay, unattached). It is idempotent by desired.UID: when the
	// backend already holds a network for that UID (a previous attempt that
	// crashed or timed out before its result was recorded) it creates only
	// what is missing and returns what it holds, without changing what exists
	// (compare CIDR and Gateway; see Ensure). It looks for such a network
	// itself: callers need no Get first. desired.NetworkID, when set, is
	// the network the Network's status recorded: when it finds nothing of
	// desired.UID, a backend may look at that one and refuse, with a
	// permanent error, to create a second network while the recorded one
	// is still there under another owner marker (Neutron: a changed
	// managed-by value).
	Create(ctx context.Context, desired Network) (*Network, error)

	// CreateNew is Create for a Network the caller knows no create was ever
	// attempted for, by anyone: the backend holds nothing of desired.UID, so
	// it may skip looking for what an earlier attempt left (Neutron: one
	// request fewer). A caller that cannot prove it calls Create. Calling
	// it twice for a UID, or after a Create, breaks that promise: a backend
	// that notices refuses it with a permanent error.
	CreateNew(ctx context.Context, desired Network) (*Network, error)

	// UpdateGateway sets the gateway of the subnet of cur, the backend
	// network as Get, Create or List returned it, and returns the updated
	// network. cur.UID identifies it; a backend may act on cur's NetworkID,
	// SubnetID and CIDR instead of searching again (Neutron does). It fails
	// with an error wrapping ErrNotFound when there is no such network or
	// subnet (any more).
	UpdateGateway(ctx context.Context, cur Network, gateway string) (*Network, error)

	// Update makes the backend network of cur (as for UpdateGateway) hold
	// desired: its subnet's gateway desired.Gateway, the network and
	// subnet every setting desired.Settings sets (see Settings), leaving
	// the ones it does not set as they are, and the subnet attached to
	// desired.Router (an interface added), or to none (the interface it
	// added removed). A router that is not there, or that the backend's
	// project cannot use, is a permanent ReasonRouterNotFound error. It writes only what differs
	// from what the backend holds, and fails as UpdateGateway does. A
	// setting the backend refuses is a permanent ReasonBackendRejected
	// error.
	Update(ctx context.Context, cur, desired Network) (*Network, error)

	// Delete deletes the backend network and subnet of n.UID. Deleting what
	// does not exist succeeds. Only n.UID identifies what to delete;
	// n.Namespace and n.Name (from the Network, or from List) let a backend
	// also find a network whose create was interrupted before it was marked
	// with the UID (Neutron: between creating the network and tagging it).
	Delete(ctx context.Context, n Network) error

	// List returns every backend network marked as created by this
	// controller (complete or not), for garbage collection of the ones whose
	// Network no longer exists.
	List(ctx context.Context) ([]Network, error)

	// Import returns the existing backend network ref names, with its
	// subnet: the one whose CIDR is desired.CIDR when that is set, else its
	// only one (several, or none with that CIDR, is a permanent
	// ReasonBackendRejected error naming them). A network that is not there
	// wraps ErrNotFound. The result carries desired's UID, Namespace and
	// Name.
	//
	// With adopt (a Managed Network) it then marks the network and subnet
	// as desired.UID's, as Create marks what it creates, so every other
	// method treats them as created for it; it writes only those marks,
	// none when they are there already (Existed is then set). It refuses,
	// with a permanent ReasonBackendRejected error, a network or subnet
	// another Network or another controller marked: never steal. Without
	// adopt (Unmanaged) it only reads, whoever marked the network.
	Import(ctx context.Context, desired Network, ref Ref, adopt bool) (*Network, error)

	// Detach removes the marks of n.UID from its backend network and
	// subnet and leaves them otherwise as they are: from then on no method
	// returns, changes or deletes them for n.UID, and List leaves them out
	// (so garbage collection never deletes them, whatever restarts). Detaching
	// what is not marked succeeds without a write.
	Detach(ctx context.Context, n Network) error

	// Observe reads what Import without adopt would return for each of
	// want, bound Unmanaged Networks (UID, Namespace, Name, and the
	// spec's CIDR as for Import; NetworkID the network Import bound),
	// in requests whose number does not grow with each Network (Neutron:
	// batches of IDs), never one read per Network. It only reads. A network
	// that is not there, or whose subnet Import would not pick (it would
	// fail), is left out of the result: the controller imports that one
	// again, and Import says why.
	Observe(ctx context.Context, want []Network) ([]Network, error)

	// Project returns the ID of the project the backend acts in (Neutron:
	// the Keystone project its token is scoped to), "" when it is not
	// known. A Network is bound to the project it was first provisioned
	// in (its status.projectID): a backend of another project never acts
	// for it.
	Project() string
}

// Ref names an existing backend network to import: by ID, or (NetworkID
// empty) by an exact filter: the same name, byte for byte, when Name is
// set, and every one of Tags. A filter matching several networks is a
// permanent ReasonBackendRejected error listing them, never a pick; one
// matching none wraps ErrNotFound.
type Ref struct {
	NetworkID string
	Name      string
	Tags      []string
}

// String identifies r in messages.
func (r Ref) String() string {
	if r.NetworkID != "" {
		return "network " + r.NetworkID
	}
	return fmt.Sprintf("network named %q with tags %q", r.Name, r.Tags)
}

// Matches reports whether a network of this name and tags matches r's
// filter.
func (r Ref) Matches(name string, tags []string) bool {
	if r.Name != "" && name != r.Name {
		return false
	}
	for _, t := range r.Tags {
		if !slices.Contains(tags, t) {
			return false
		}
	}
	return true
}

// RefOf returns the Ref of an import spec.
func RefOf(imp *samplecrdv1.NetworkImport) Ref {
	r := Ref{NetworkID: imp.NetworkID}
	if f := imp.Filter; f != nil {
		r.Name, r.Tags = f.Name, slices.Clone(f.Tags)
	}
	return r
}

// ErrAmbiguous returns the error of a filter that matched several
// networks.
func ErrAmbiguous(ref Ref, ids []string) error {
	return Permanent("import "+ref.String(), samplecrdv1.ReasonBackendRejected, fmt.Errorf(
		"%d networks match (%s): the controller never picks one; import by networkID, or make the filter match one", len(ids), strings.Join(ids, ", ")))
}

// ErrSameName returns the error of an object named by its exact name that
// several objects have (what: "routers", "subnet pools"), ids their IDs:
// as for ErrAmbiguous, a permanent ReasonBackendRejected error listing
// them, never a pick.
func ErrSameName(op, what string, ids []string) error {
	ids = slices.Sorted(slices.Values(ids))
	return Permanent(op, samplecrdv1.ReasonBackendRejected, fmt.Errorf(
		"%d %s have that name (%s): the controller never picks one; name it by id", len(ids), what, strings.Join(ids, ", ")))
}

// Network is a backend network as the controller sees it.
type Network struct {
	// UID is the UID of the Network the backend network belongs to.
	UID types.UID
	// Namespace and Name are those of the Network when the backend network
	// was created (informational: the UID is the identity).
	Namespace, Name string
	// CIDR and Gateway are the subnet's, in canonical form; empty when the
	// subnet is missing.
	CIDR, Gateway string
	// NetworkID and SubnetID are the backend's IDs; SubnetID is empty when
	// the subnet is missing.
	NetworkID, SubnetID string
	// SubnetPool is, in what a caller passes, the pool to take the
	// subnet's range from (CIDR and Gateway are then empty: the backend
	// picks them), and PrefixLength its prefix length (0: the pool's
	// default).
	SubnetPool   *SubnetPoolRef
	PrefixLength int
	// Router is, in what a caller passes, the router the spec attaches
	// the subnet to (a router interface), nil for none.
	Router *RouterRef
	// RouterID and RouterPortID are, in what a backend returns, the
	// router whose interface the backend added to the subnet for the
	// Network, and that interface's port; empty when there is none (not
	// asked for, not added yet, or removed behind the controller's back).
	RouterID, RouterPortID string
	// Settings are, in what a caller passes, the settings the Network's
	// spec sets (the create writes them; Update makes the backend hold
	// them), and, in what a backend returns, what it holds of every one.
	Settings Settings
	// Imported is set, in what a caller passes, for a Network that imports
	// (adopts) an existing network: its description is the Network's own
	// text alone, not the controller's text naming the Network. Decided
	// by the Network's spec, never by what the description holds (anyone
	// may edit it).
	Imported bool
	// Existed is set in what Create and CreateNew return when they
	// created (and marked) nothing: the network and its subnet were there,
	// complete, before the call.
	Existed bool
	// Observed and ObservedSubnet are what the backend holds of the
	// network and its subnet, for the Network's status (nil when not
	// known), in the form Normalize gives. Every method that returns a
	// Network returns them as a List (or Observe) right after it would,
	// so that a Network's status written from one is not written again
	// after the next scan. Never modified once returned: copies of a
	// Network share them.
	Observed       *samplecrdv1.NetworkObservation
	ObservedSubnet *samplecrdv1.SubnetObservation
}

// String identifies n in logs and messages.
func (n Network) String() string {
	return fmt.Sprintf("%s/%s (uid %s, network %q, subnet %q)", n.Namespace, n.Name, n.UID, n.NetworkID, n.SubnetID)
}

// Desired returns the backend network a Network asks for. NetworkID is the
// one its status records, if any: Create may check it (see Backend.Create).
func Desired(obj *samplecrdv1.Network) Network {
	n := Network{
		UID:       obj.UID,
		Namespace: obj.Namespace,
		Name:      obj.Name,
		CIDR:      obj.Spec.CIDR,
		Gateway:   obj.Spec.Gateway,
		NetworkID: obj.Status.NetworkID,
		Settings:  SettingsOf(&obj.Spec),
		Router:    RouterOf(obj.Spec.Router),
		Imported:  obj.Spec.Import != nil,
	}
	if p := obj.Spec.SubnetPool; p != nil {
		n.SubnetPool = &SubnetPoolRef{ID: p.ID, Name: p.Name}
	}
	if obj.Spec.PrefixLength != nil {
		n.PrefixLength = int(*obj.Spec.PrefixLength)
	}
	return n
}

// SubnetPoolRef names an existing backend subnet pool: by ID, or (ID
// empty) by its exact name.
type SubnetPoolRef struct {
	ID, Name string
}

// String identifies r in messages.
func (r SubnetPoolRef) String() string {
	if r.ID != "" {
		return "subnet pool " + r.ID
	}
	return fmt.Sprintf("subnet pool named %q", r.Name)
}

// RouterRef names an existing backend router: by ID, or (ID empty) by
// its exact name.
type RouterRef struct {
	ID, Name string
}

// String identifies r in messages.
func (r RouterRef) String() string {
	if r.ID != "" {
		return "router " + r.ID
	}
	return fmt.Sprintf("router named %q", r.Name)
}

// RouterOf returns the RouterRef of a spec's router, nil for none.
func RouterOf(r *samplecrdv1.RouterRef) *RouterRef {
	if r == nil {
		return nil
	}
	return &RouterRef{ID: r.ID, Name: r.Name}
}

// RouterDiffers says how cur's router interface differs from what desired
// asks for, or returns "".
func RouterDiffers(desired Network, cur Network) string {
	want := "none"
	if desired.Router != nil {
		want = desired.Router.String()
	}
	switch {
	case desired.Router == nil && cur.RouterID != "",
		desired.Router != nil && cur.RouterID == "",
		desired.Router != nil && desired.Router.ID != "" && desired.Router.ID != cur.RouterID:
		return fmt.Sprintf("router is %s in the backend, %s in the spec", orNull(cur.RouterID), want)
	}
	return ""
}

// ManagedBy is the value of the marker that says a backend object was
// created by this controller (the Neutron tag managed-by=controller-manager).
const ManagedBy = "controller-manager"

// DisplayName is the name a backend gives the network and subnet of a
// Network, so an operator recognises them: k8s-<namespace>-<name>. It is
// not unique (the UID is the identity) and never used for lookups.
func DisplayName(namespace, name string) string {
	return "k8s-" + namespace + "-" + name
}

// ErrNotFound is wrapped by the errors of Get and UpdateGateway when the
// backend holds no network (or subnet) for the UID.
var ErrNotFound = errors.New("not found in the backend")

// IsNotFound reports whether err says the backend holds no network for the UID.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// Error is a classified backend error.
type Error struct {
	// Op is what failed, e.g. "create subnet".
	Op string
	// Reason is the Ready condition reason for the failure (one of the
	// samplecrdv1.Reason* constants).
	Reason string
	// Permanent is true when retrying the same request cannot succeed until
	// the spec (or the backend) changes: 4xx such as a bad request or an
	// overlapping CIDR. Transient errors (timeouts, refused connections, 5xx)
	// are retried with backoff.
	Permanent bool
	// Down is true when the failure is the whole backend's, not this
	// request's: unreachable, authentication refused, no usable endpoint.
	// The controller then stops calling the backend for every Network and
	// probes it alone, with backoff, until it answers again.
	Down bool
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string {
	if e.Op == "" {
		return e.Err.Error()
	}
	return e.Op + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Transient returns a transient *Error with the given reason.
func Transient(op, reason string, err error) error {
	return &Error{Op: op, Reason: reason, Err: err}
}

// Permanent returns a permanent *Error with the given reason.
func Permanent(op, reason string, err error) error {
	return &Error{Op: op, Reason: reason, Permanent: true, Err: err}
}

// Down returns an *Error saying the whole backend is down (see Error.Down):
// transient, with reason samplecrdv1.ReasonBackendUnavailable.
func Down(op string, err error) error {
	return &Error{Op: op, Reason: samplecrdv1.ReasonBackendUnavailable, Down: true, Err: err}
}

// IsDown reports whether err says the whole backend is down.
func IsDown(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Down
}

// IsPermanent reports whether err is a permanent backend error: retrying
// the same request is pointless until the Network's spec changes.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// Reason returns the Ready condition reason for a backend error:
// the *Error's reason, or samplecrdv1.ReasonBackendUnavailable for an
// unclassified error.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason
	}
	return samplecrdv1.ReasonBackendUnavailable
}

// Action is what Ensure changed in the backend.
type Action string

// The actions of Ensure.
const (
	ActionNone    Action = ""
	ActionCreated Action = "Created"
	ActionUpdated Action = "Updated"
)

// Ensure makes the backend hold desired, given cur, what the backend held
// when last seen (a List or an earlier write), or nil when that is not
// known: it creates the backend network when it is missing (or completes it
// when its subnet is missing) and updates the gateway when it differs. It
// reports ActionCreated only when the create made something. With
// neverCreated (cur is then nil), the caller knows that no create was ever
// attempted for desired.UID: Ensure creates with CreateNew instead. It
// fails with a permanent ReasonCIDRMismatch error when the backend subnet
// has another CIDR (a subnet's CIDR cannot change: the Network has to be
// recreated). It makes no backend call when cur already matches desired,
// and never reads what it already knows.
func Ensure(ctx context.Context, b Backend, desired Network, cur *Network, neverCreated bool) (*Network, Action, error) {
	action := ActionNone
	if cur == nil || cur.SubnetID == "" {
		create := b.Create
		if neverCreated && cur == nil {
			create = b.CreateNew
		}
		var err error
		if cur, err = create(ctx, desired); err != nil {
			return nil, action, err
		}
		if !cur.Existed {
			action = ActionCreated
		}
	}
	if desired.SubnetPool != nil {
		// The backend picked the range and the gateway.
		desired.CIDR, desired.Gateway = cur.CIDR, cur.Gateway
	}
	if !SameCIDR(cur.CIDR, desired.CIDR) {
		return cur, action, Permanent("compare cidr", samplecrdv1.ReasonCIDRMismatch, fmt.Errorf(
			"backend subnet %s has cidr %s but the Network asks for %s: a subnet's CIDR cannot be changed; delete the Network and create it again",
			cur.SubnetID, cur.CIDR, desired.CIDR))
	}
	if !SameIP(cur.Gateway, desired.Gateway) || len(desired.Settings.Diff(cur.Settings)) > 0 || RouterDiffers(desired, *cur) != "" {
		var err error
		if cur, err = b.Update(ctx, *cur, desired); err != nil {
			return nil, action, err
		}
		if action == ActionNone {
			action = ActionUpdated
		}
	}
	return cur, action, nil
}

// SameCIDR reports whether a and b are the same CIDR, comparing parsed
// values when both parse (so a backend's spelling does not matter).
func SameCIDR(a, b string) bool { return sameParsed(a, b, netip.ParsePrefix) }

// SameIP reports whether a and b are the same IP address, comparing parsed
// values when both parse.
func SameIP(a, b string) bool { return sameParsed(a, b, netip.ParseAddr) }

// sameParsed reports whether a and b are equal as text or both parse, with
// parse, to equal values.
func sameParsed[T comparable](a, b string, parse func(string) (T, error)) bool {
	if a == b {
		return true
	}
	pa, errA := parse(a)
	pb, errB := parse(b)
	return errA == nil && errB == nil && pa == pb
}
