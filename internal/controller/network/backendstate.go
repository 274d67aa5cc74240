package network

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// known is the backend's networks as the controller last saw them: from
// the last List, and from its own writes since. A sync compares a Network
// with it instead of reading the backend, so a restart (or a resync) with N
// converged Networks costs one List, not N lookups.
type known struct {
	mu    sync.Mutex
	seq   uint64
	byUID map[types.UID]knownEntry
}

// knownEntry is one backend network; net is nil when it is known to be gone.
type knownEntry struct {
	net *Network
	seq uint64 // when it was recorded
}

func newKnown() *known { return &known{byUID: map[types.UID]knownEntry{}} }

// get returns the backend network of uid, or nil when there is none or it
// is not known.
func (k *known) get(uid types.UID) *Network {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.byUID[uid]; ok && e.net != nil {
		n := *e.net
		return &n
	}
	return nil
}

// set records what the backend holds for uid after a write or a read (nil:
// nothing, or not known any more).
func (k *known) set(uid types.UID, n *Network) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seq++
	if n != nil {
		c := *n
		n = &c
	}
	k.byUID[uid] = knownEntry{net: n, seq: k.seq}
}

// mark returns the point a List starts at: what is set after it wins over
// what the List returns.
func (k *known) mark() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seq
}

// replace makes listed (a List started at mark) the known state, keeping
// what was set since mark, and returns the result by UID.
func (k *known) replace(listed []Network, mark uint64) map[types.UID]Network {
	k.mu.Lock()
	defer k.mu.Unlock()
	next := make(map[types.UID]knownEntry, len(listed))
	for i := range listed {
		next[listed[i].UID] = knownEntry{net: &listed[i]}
	}
	for uid, e := range k.byUID {
		if e.seq > mark {
			next[uid] = e
		}
	}
	k.byUID = next
	out := make(map[types.UID]Network, len(next))
	for uid, e := range next {
		if e.net != nil {
			out[uid] = *e.net
		}
	}
	return out
}

// uidSet is a set of Network UIDs, safe for concurrent use.
type uidSet struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

func newUIDSet() *uidSet { return &uidSet{uids: map[types.UID]struct{}{}} }

func (s *uidSet) add(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids[uid] = struct{}{}
}

// take removes uid and reports whether it was there.
func (s *uidSet) take(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.uids[uid]
	delete(s.uids, uid)
	return ok
}

// backendState is whether the backend as a whole answers: unknown until
// the first List, then up or down. While it is not up, syncs make no
// backend call; they wait in a set that is queued again when it comes up.
type backendState struct {
	mu      sync.Mutex
	state   int
	message string
	// reason is the Ready reason of the Networks that wait:
	// BackendUnavailable, or CredentialsRefused.
	reason string
	// trippedBy is the Network whose failure found the backend down (nil
	// when a List did): the Events of the state's changes go on it.
	trippedBy *samplecrdv1.Network
	waiting   map[cache.ObjectName]struct{}
}

const (
	stateUnknown = iota
	stateUp
	stateDown
)

func newBackendState() *backendState {
	return &backendState{waiting: map[cache.ObjectName]struct{}{}}
}

// waitUnlessUp returns true when the backend is up; otherwise it adds key to
// the waiting set and returns false with the waiting Networks' reason and
// the state's message ("" while the first List is pending).
func (s *backendState) waitUnlessUp(key cache.ObjectName) (up bool, reason, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateUp {
		return true, "", ""
	}
	s.waiting[key] = struct{}{}
	return false, s.reason, s.message
}

// waitingKeys returns the keys that wait for the backend.
func (s *backendState) waitingKeys() []cache.ObjectName {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]cache.ObjectName, 0, len(s.waiting))
	for k := range s.waiting {
		out = append(out, k)
	}
	return out
}

// down records the backend as down with message, key waiting for it, and
// reason the Ready reason of the Networks that wait (BackendUnavailable, or
// CredentialsRefused). It returns whether the state changed (the caller
// reports a change once) and the state's message, the first failure's until
// it comes back up.
func (s *backendState) down(key cache.ObjectName, obj *samplecrdv1.Network, reason, message string) (changed bool, current string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key != (cache.ObjectName{}) {
		s.waiting[key] = struct{}{}
	}
	if s.state == stateDown {
		return false, s.message
	}
	s.state, s.message, s.reason, s.trippedBy = stateDown, message, reason, obj
	return true, message
}

// up records the backend as up and hands back the keys that waited for it,
// whether it was down before, and the Network the failure was found on.
func (s *backendState) up() (waiting []cache.ObjectName, wasDown bool, trippedBy *samplecrdv1.Network) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wasDown, trippedBy = s.state == stateDown, s.trippedBy
	s.state, s.message, s.trippedBy = stateUp, "", nil
	for k := range s.waiting {
		waiting = append(waiting, k)
	}
	clear(s.waiting)
	return waiting, wasDown, trippedBy
}

// unknown reports whether the backend has not answered its first List
// (nor been found down) yet.
func (s *backendState) unknown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateUnknown
}

// isUp reports whether the backend is up.
func (s *backendState) isUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateUp
}
