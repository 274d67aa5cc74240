package network

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-sample/controller-manager/internal/controller"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// Credentials turns on the Networks' own credentials
// (spec.cloudCredentialsRef): each distinct cloud entry gets a backend of
// its own, with its own scan (List, garbage collection, down state and
// backoff), so that one project's broken credentials hold back only the
// Networks that use them.
type Credentials struct {
	// GetSecret reads a Secret (a GET: the manager has no list or watch
	// of Secrets). Its errors are the API server's.
	GetSecret func(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// Parse reads the entry cloudName of a clouds.yaml. It fails with an
	// *Error of reason ReasonCredentialsNotFound (no such entry) or
	// ReasonCredentialsInvalid, whose message never quotes the content.
	Parse func(cloudsYAML []byte, cloudName string) (CloudConfig, error)
	// NewBackend connects to a parsed cloud entry (Neutron: authenticates
	// to Keystone). It fails with a Down *Error, of reason
	// ReasonCredentialsRefused when Keystone refused the credentials.
	NewBackend func(ctx context.Context, cfg CloudConfig) (Backend, error)
	// TTL is how long a Secret read is used before it is read again, and
	// how often a Network whose credentials are missing or invalid is
	// looked at again. 0 means 30 seconds.
	TTL time.Duration
	// MaxClouds bounds the cloud entries (backends) held at once; entries
	// no Network uses are forgotten first. 0 means 256.
	MaxClouds int
	// MaxCloudsPerNamespace bounds the entries the Secrets of one
	// namespace bring, so that no namespace takes the others' share of
	// MaxClouds. 0 means 16.
	MaxCloudsPerNamespace int
}

// CloudConfig is a parsed cloud entry.
type CloudConfig struct {
	// Key identifies the entry's content (a keyed hash of every field that
	// reaches the backend): equal entries share one backend, whatever
	// Secret they come from, and an edited entry gets a new one. It says
	// nothing of the content outside the process.
	Key string
	// Description names the entry without its secrets, for messages and
	// logs (e.g. user "x" in project "y" at <Keystone URL>).
	Description string
	// Config is what Credentials.NewBackend takes.
	Config any
}

// cloud is one backend and what the controller keeps per backend: what it
// last saw, whether it answers, and the loop that scans it.
type cloud struct {
	// key is "" for the manager's own cloud.
	key         string
	description string
	config      CloudConfig

	known *known
	state *backendState
	// wake tells the scan loop that a sync found the backend down.
	wake chan struct{}

	mu      sync.Mutex
	backend Backend // nil until the scan loop connected
	// refs are the Secret references that resolved to this entry, read
	// again by its probes while it is down: a Secret fixed since makes its
	// Networks resolve again (to another entry).
	refs   map[secretRef]struct{}
	cancel context.CancelFunc
	used   time.Time
	// busy counts the syncs of the cloud under way (Controller.slot).
	busy int
}

func newCloud(key string, b Backend) *cloud {
	return &cloud{key: key, backend: b, known: newKnown(), state: newBackendState(), wake: make(chan struct{}, 1), refs: map[secretRef]struct{}{}}
}

// hasRefs reports whether some Secret still resolves to the cloud.
func (cl *cloud) hasRefs() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.refs) > 0
}

// project returns the project the cloud's backend acts in, "" before it
// connected or when the backend does not know.
func (cl *cloud) project() string {
	if b := cl.getBackend(); b != nil {
		return b.Project()
	}
	return ""
}

// getBackend returns the cloud's backend, nil before it connected.
func (cl *cloud) getBackend() Backend {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.backend
}

// name names the cloud in logs and messages.
func (cl *cloud) name() string {
	if cl.key == "" {
		return "the manager's own cloud"
	}
	return "cloud " + cl.description
}

// secretRef is a Network's spec.cloudCredentialsRef in its namespace.
type secretRef struct {
	namespace, secret, cloud string
}

func (r secretRef) String() string {
	return fmt.Sprintf("cloud %q of Secret %s/%s", r.cloud, r.namespace, r.secret)
}

// secretCache holds Secret reads for a TTL: Networks sharing a Secret
// cost one GET per TTL, and a change reaches them within a TTL. Only the
// clouds.yaml key is kept.
type secretCache struct {
	mu  sync.Mutex
	ttl time.Duration
	get func(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	m   map[types.NamespacedName]secretRead
	now func() time.Time
}

type secretRead struct {
	data    []byte
	present bool // the key is in the Secret
	err     error
	at      time.Time
}

// read returns the clouds.yaml of Secret namespace/name, from the cache
// unless fresh or older than the TTL.
func (s *secretCache) read(ctx context.Context, namespace, name string, fresh bool) secretRead {
	k := types.NamespacedName{Namespace: namespace, Name: name}
	s.mu.Lock()
	r, ok := s.m[k]
	s.mu.Unlock()
	if ok && !fresh && s.now().Sub(r.at) < s.ttl {
		return r
	}
	sec, err := s.get(ctx, namespace, name)
	r = secretRead{at: s.now(), err: err}
	if err == nil {
		r.data, r.present = sec.Data[samplecrdv1.CloudCredentialsKey]
	}
	if ctx.Err() != nil {
		return r // not cached: the caller gave up
	}
	s.mu.Lock()
	s.m[k] = r
	// Bounded by the Secrets Networks name: drop what expired.
	for key, old := range s.m {
		if s.now().Sub(old.at) >= s.ttl {
			delete(s.m, key)
		}
	}
	s.mu.Unlock()
	return r
}

// cloudSet is the clouds of the Networks' credentials, by key, and which
// cloud each Network last resolved to.
type cloudSet struct {
	mu  sync.Mutex
	max int
	// perNamespace bounds the entries of one namespace's Secrets.
	perNamespace int
	byKey        map[string]*cloud
	// byUID is the cloud each Network's credentials last resolved to,
	// bound the one that last acted for it, in its project (see bind).
	byUID   map[types.UID]string
	bound   map[types.UID]string
	runCtx  context.Context // nil until the controller runs
	start   func(ctx context.Context, cl *cloud)
	pending []*cloud // created before the controller ran
	now     func() time.Time
}

// errTooManyClouds is returned when MaxClouds entries are in use.
var errTooManyClouds = errors.New("too many distinct cloud entries in use")

// use returns the cloud of cfg, creating (and starting) it when needed, and
// records that uid uses it. inUse reports whether a Network UID still exists.
func (s *cloudSet) use(uid types.UID, ref secretRef, cfg CloudConfig, inUse func(types.UID) bool) (*cloud, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cl, ok := s.byKey[cfg.Key]
	if !ok {
		if len(s.byKey) >= s.max || s.perNamespace > 0 && s.inNamespaceLocked(ref.namespace) >= s.perNamespace {
			s.evictLocked(inUse, 0)
		}
		if len(s.byKey) >= s.max {
			return nil, fmt.Errorf("%w (%d): the manager holds a backend for each; Networks using the same cloud entry share one", errTooManyClouds, s.max)
		}
		if n := s.inNamespaceLocked(ref.namespace); s.perNamespace > 0 && n >= s.perNamespace {
			return nil, fmt.Errorf("%w in namespace %s (%d, the most one namespace may hold): Networks using the same cloud entry share one; use fewer distinct entries", errTooManyClouds, ref.namespace, n)
		}
		cl = newCloud(cfg.Key, nil)
		cl.description, cl.config = cfg.Description, cfg
		s.byKey[cfg.Key] = cl
		if s.runCtx != nil {
			s.startLocked(cl)
		} else {
			s.pending = append(s.pending, cl)
		}
	}
	cl.mu.Lock()
	cl.refs[ref] = struct{}{}
	cl.used = s.now()
	cl.mu.Unlock()
	s.byUID[uid] = cfg.Key
	return cl, nil
}

// inNamespaceLocked counts the clouds a Secret of namespace resolved to.
func (s *cloudSet) inNamespaceLocked(namespace string) int {
	n := 0
	for _, cl := range s.byKey {
		cl.mu.Lock()
		for r := range cl.refs {
			if r.namespace == namespace {
				n++
				break
			}
		}
		cl.mu.Unlock()
	}
	return n
}

func (s *cloudSet) startLocked(cl *cloud) {
	ctx, cancel := context.WithCancel(s.runCtx)
	cl.mu.Lock()
	cl.cancel = cancel
	cl.mu.Unlock()
	go s.start(ctx, cl)
}

// run starts the clouds' scan loops, now and as they come, until ctx ends.
func (s *cloudSet) run(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runCtx = ctx
	for _, cl := range s.pending {
		// Only the clouds still held: one evicted before run has no
		// Network to scan for.
		if s.byKey[cl.key] == cl {
			s.startLocked(cl)
		}
	}
	s.pending = nil
}

// of returns the cloud uid last resolved to, if it is still held.
func (s *cloudSet) of(uid types.UID) *cloud {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.byUID[uid]; ok {
		return s.byKey[k]
	}
	return nil
}

// bind records that cl acts for uid: its project is the Network's.
func (s *cloudSet) bind(uid types.UID, cl *cloud) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bound[uid] = cl.key
}

// boundTo returns the cloud that last acted for uid, if it is still held:
// when the Network's credentials resolve elsewhere (a Secret pointed at
// another project, or gone), it may still delete or detach there.
func (s *cloudSet) boundTo(uid types.UID) *cloud {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.bound[uid]; ok {
		return s.byKey[k]
	}
	return nil
}

// uses reports whether uid is scanned in cl: the cloud that acts for it,
// else (not bound yet) the one its credentials resolved to; known is false
// when it did neither since the process started.
func (s *cloudSet) uses(uid types.UID, cl *cloud) (known, uses bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.bound[uid]
	if !ok {
		k, ok = s.byUID[uid]
	}
	return ok, ok && k == cl.key
}

// forget drops uid (its Network is gone).
func (s *cloudSet) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byUID, uid)
	delete(s.bound, uid)
}

// usersIn returns, by cloud key, the namespaces of the Networks that last
// resolved to it or are bound to it; namespaceOf gives a Network's
// namespace by UID ("" when it is gone).
func (s *cloudSet) usersIn(namespaceOf map[types.UID]string) map[string]map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]map[string]bool{}
	for _, m := range []map[types.UID]string{s.byUID, s.bound} {
		for uid, k := range m {
			ns, ok := namespaceOf[uid]
			if !ok {
				continue
			}
			if out[k] == nil {
				out[k] = map[string]bool{}
			}
			out[k][ns] = true
		}
	}
	return out
}

// all returns every cloud held.
func (s *cloudSet) all() []*cloud {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*cloud, 0, len(s.byKey))
	for _, cl := range s.byKey {
		out = append(out, cl)
	}
	return out
}

// dropUnused forgets cl, and stops its scan loop, when no Network whose
// UID is in use (inUse) resolved to it or is bound to it, and reports
// whether it did.
func (s *cloudSet) dropUnused(cl *cloud, inUse func(types.UID) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []map[types.UID]string{s.byUID, s.bound} {
		for uid, k := range m {
			if k == cl.key && inUse(uid) {
				return false
			}
		}
	}
	if s.byKey[cl.key] == cl {
		delete(s.byKey, cl.key)
	}
	cl.mu.Lock()
	cancel := cl.cancel
	cl.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return true
}

// pruneRefs drops from every cloud the Secret references not in inUse:
// its probes read only Secrets that Networks name.
func (s *cloudSet) pruneRefs(inUse map[secretRef]bool) {
	if inUse == nil {
		return // not known
	}
	for _, cl := range s.all() {
		cl.mu.Lock()
		for r := range cl.refs {
			if !inUse[r] {
				delete(cl.refs, r)
			}
		}
		cl.mu.Unlock()
	}
}

// refsInUse returns the Secret references of the cached Networks.
func (c *Controller) refsInUse() map[secretRef]bool {
	objs, err := c.lister.List(everything)
	out := map[secretRef]bool{}
	if err != nil {
		return nil
	}
	for _, obj := range objs {
		if ref := obj.Spec.CloudCredentialsRef; ref != nil {
			out[secretRef{namespace: obj.Namespace, secret: ref.SecretName, cloud: ref.CloudName}] = true
		}
	}
	return out
}

// evict forgets the UIDs whose Network is gone and stops the clouds no
// Network uses that were not used for grace.
func (s *cloudSet) evict(inUse func(types.UID) bool, grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked(inUse, grace)
}

func (s *cloudSet) evictLocked(inUse func(types.UID) bool, grace time.Duration) {
	used := map[string]bool{}
	for _, m := range []map[types.UID]string{s.byUID, s.bound} {
		for uid, k := range m {
			if !inUse(uid) {
				delete(m, uid)
				continue
			}
			used[k] = true
		}
	}
	for k, cl := range s.byKey {
		cl.mu.Lock()
		idle := s.now().Sub(cl.used) >= grace
		cancel := cl.cancel
		cl.mu.Unlock()
		if used[k] || !idle {
			continue
		}
		delete(s.byKey, k)
		if cancel != nil {
			cancel()
		}
	}
}

// resolveError is the error of a Network's credentials: which reason and
// message its Ready condition gets, and when it is looked at again.
type resolveError struct {
	reason, message string
	retry           time.Duration
}

func (e *resolveError) Error() string { return e.message }

// cloudFor returns the cloud obj is reconciled in: the manager's own
// without spec.cloudCredentialsRef, else the one of the entry its Secret
// holds now (read at most every TTL, or fresh).
func (c *Controller) cloudFor(ctx context.Context, obj *samplecrdv1.Network, fresh bool) (*cloud, error) {
	ref := obj.Spec.CloudCredentialsRef
	if ref == nil {
		return c.def, nil
	}
	if c.creds == nil {
		return nil, &resolveError{reason: samplecrdv1.ReasonCredentialsNotEnabled, retry: c.opts.PermanentRetry, message: fmt.Sprintf(
			"spec.cloudCredentialsRef names Secret %s, but this manager does not read Secrets (it runs without --network-credentials-from-secrets) and never uses its own cloud in their place: "+
				"ask its operator to enable the flag (the config/network-credentials Component, or the chart's network.credentialsFromSecrets=true), or delete the Network and create it without cloudCredentialsRef",
			ref.SecretName)}
	}
	sref := secretRef{namespace: obj.Namespace, secret: ref.SecretName, cloud: ref.CloudName}
	cfg, err := c.parseSecret(ctx, sref, fresh)
	if err != nil {
		return nil, err
	}
	cl, err := c.clouds.use(obj.UID, sref, cfg, c.networkCached)
	if err != nil {
		return nil, &resolveError{reason: samplecrdv1.ReasonBackendUnavailable, retry: c.creds.TTL, message: err.Error()}
	}
	return cl, nil
}

// parseSecret reads and parses the cloud entry ref names.
func (c *Controller) parseSecret(ctx context.Context, ref secretRef, fresh bool) (CloudConfig, error) {
	retry := c.creds.TTL
	r := c.secrets.read(ctx, ref.namespace, ref.secret, fresh)
	switch {
	case apierrors.IsNotFound(r.err):
		return CloudConfig{}, &resolveError{reason: samplecrdv1.ReasonCredentialsNotFound, retry: retry, message: fmt.Sprintf(
			"Secret %s not found in namespace %s (a Network uses only Secrets of its own namespace): create it with the key %s holding a clouds.yaml with the cloud %q, "+
				"e.g. kubectl -n %s create secret generic %s --from-file=%s=./clouds.yaml",
			ref.secret, ref.namespace, samplecrdv1.CloudCredentialsKey, ref.cloud, ref.namespace, ref.secret, samplecrdv1.CloudCredentialsKey)}
	case apierrors.IsForbidden(r.err):
		return CloudConfig{}, &resolveError{reason: samplecrdv1.ReasonCredentialsNotFound, retry: retry, message: fmt.Sprintf(
			"the manager may not read Secret %s in namespace %s: grant its ServiceAccount get on Secrets there (the config/network-credentials Component, or the chart's network.credentialsFromSecrets): %v",
			ref.secret, ref.namespace, r.err)}
	case r.err != nil:
		return CloudConfig{}, &resolveError{reason: samplecrdv1.ReasonBackendUnavailable, retry: retry, message: fmt.Sprintf(
			"reading Secret %s/%s: %v", ref.namespace, ref.secret, r.err)}
	case !r.present:
		return CloudConfig{}, &resolveError{reason: samplecrdv1.ReasonCredentialsNotFound, retry: retry, message: fmt.Sprintf(
			"Secret %s/%s has no key %s: put the clouds.yaml with the cloud %q under that key (kubectl create secret generic %s --from-file=%s=./clouds.yaml)",
			ref.namespace, ref.secret, samplecrdv1.CloudCredentialsKey, ref.cloud, ref.secret, samplecrdv1.CloudCredentialsKey)}
	}
	cfg, err := c.creds.Parse(r.data, ref.cloud)
	if err != nil {
		return CloudConfig{}, &resolveError{reason: Reason(err), retry: retry, message: fmt.Sprintf("%s: %v", ref, err)}
	}
	return cfg, nil
}

// networkCached reports whether a Network of this UID is in the cache.
func (c *Controller) networkCached(uid types.UID) bool {
	objs, err := c.indexer.ByIndex(uidIndex, string(uid))
	return err == nil && len(objs) > 0
}

// member reports whether obj is reconciled in cl, as far as known: the
// cloud it is bound to or last resolved to, else (not synced since the
// process started) the one its Secret reference resolved to for another
// Network, so that a cloud's first scan covers every Network of its
// Secrets, not only those that synced before it.
func (c *Controller) member(obj *samplecrdv1.Network, cl *cloud) bool {
	ref := obj.Spec.CloudCredentialsRef
	if ref == nil {
		return cl == c.def
	}
	if cl == c.def {
		return false
	}
	if bound, now := c.projectOf(obj), cl.project(); bound != "" && now != "" && bound != now {
		return false // bound to another project: never this cloud's
	}
	if known, uses := c.clouds.uses(obj.UID, cl); known {
		return uses
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	_, ok := cl.refs[secretRef{namespace: obj.Namespace, secret: ref.SecretName, cloud: ref.CloudName}]
	return ok
}

// recheckSecrets reads again (fresh) the Secrets that resolved to cl, a
// cloud found down: when one no longer resolves to it (fixed, rotated,
// removed), its Networks are queued to resolve again. A Secret that still
// resolves to cl leaves them waiting for cl's probes.
func (c *Controller) recheckSecrets(ctx context.Context, cl *cloud) {
	cl.mu.Lock()
	refs := make([]secretRef, 0, len(cl.refs))
	for r := range cl.refs {
		refs = append(refs, r)
	}
	cl.mu.Unlock()
	changed := map[secretRef]bool{}
	for _, r := range refs {
		cfg, err := c.parseSecret(ctx, r, true)
		if ctx.Err() != nil {
			return
		}
		if err != nil || cfg.Key != cl.key {
			changed[r] = true
			cl.mu.Lock()
			delete(cl.refs, r)
			cl.mu.Unlock()
		}
	}
	if len(changed) == 0 {
		return
	}
	objs, err := c.lister.List(everything)
	if err != nil {
		return
	}
	for _, obj := range objs {
		ref := obj.Spec.CloudCredentialsRef
		if ref != nil && changed[secretRef{namespace: obj.Namespace, secret: ref.SecretName, cloud: ref.CloudName}] {
			c.EnqueueKey(cache.MetaObjectToName(obj))
		}
	}
}

// everything selects every Network of the cache.
var everything = labels.Everything()

// credentialsFailed reports err, a failure to resolve cached's
// credentials, in its Ready condition (a Warning Event on a change), and
// looks at it again after the error's delay: no backend call, no hot loop.
func (c *Controller) credentialsFailed(ctx context.Context, cached *samplecrdv1.Network, err error) error {
	var re *resolveError
	if !errors.As(err, &re) {
		return err
	}
	if werr := c.setReady(ctx, cached, metav1.ConditionFalse, re.reason, re.message, nil, true); werr != nil {
		return werr
	}
	return &controller.RequeueAfter{Delay: re.retry, Err: err}
}

// neverProvisioned reports whether obj's status says that nothing was
// ever created for it: no project it is bound to, no backend network
// recorded. A Network's status records its project at the first status
// write of a sync that reached a cloud, whatever its outcome, so its
// deletion then needs no backend (and no credentials, which may be gone
// with its namespace). Only a process stopped between a create request
// and that write leaves something unrecorded: tagged with the Network's
// UID, it is an orphan to the garbage collection of that cloud.
func neverProvisioned(obj *samplecrdv1.Network) bool {
	return obj.Status.ProjectID == "" && obj.Status.NetworkID == "" && obj.Status.SubnetID == ""
}
