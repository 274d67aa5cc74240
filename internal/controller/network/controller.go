package network

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/metrics"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned"
	samplelisters "github.com/kube-sample/controller-manager/pkg/generated/listers/samplecrd/v1"
)

// Name is the controller's name in --controllers.
const Name = "network"

// Finalizer holds a Network until its backend network is deleted, so that
// nothing leaks even when the Network is deleted while the controller is down.
const Finalizer = "samplecrd.k8s.io/backend-cleanup"

// Event reasons (besides the Ready condition reasons of samplecrdv1, which
// are also Warning Events when permanent).
const (
	// ReasonCreated (Normal): the backend network and subnet were created.
	ReasonCreated = "BackendCreated"
	// ReasonUpdated (Normal): the backend network or subnet was updated to
	// the spec (its gateway, or a setting).
	ReasonUpdated = "BackendUpdated"
	// ReasonDeleted (Normal): the backend network and subnet were deleted.
	ReasonDeleted = "BackendDeleted"
	// ReasonAdopted (Normal): a Managed Network imported an existing
	// backend network and subnet and tagged them as its own.
	ReasonAdopted = "BackendAdopted"
	// ReasonDetached (Normal): a Network with onDelete: Detach was deleted;
	// its backend network and subnet were left, without our marks.
	ReasonDetached = "BackendDetached"
	// ReasonReleased (Normal): an Unmanaged Network was deleted, its
	// backend network left as it is; or a Network for which nothing was
	// ever created (its credentials never reached a project) was deleted.
	ReasonReleased = "Released"
	// ReasonBackendDown (Warning): the whole backend failed (unreachable,
	// credentials refused, no usable endpoint); every Network waits for it
	// with Ready=False BackendUnavailable while one probe retries with
	// backoff. Recorded once per outage, on the Network that found it.
	ReasonBackendDown = "BackendDown"
	// ReasonLeftBehind (Warning): a Network was released while its backend
	// network could not be deleted or detached (its Secret gone or invalid,
	// or acting in another project, and no cloud of its project held): the
	// Event names the network, its project and what to do, the metric
	// controller_network_left_behind_total counts it.
	ReasonLeftBehind = "BackendLeftBehind"
	// ReasonBackendUp (Normal): the backend answers again after being down;
	// the Networks that waited are synced again. On the same Network as
	// BackendDown.
	ReasonBackendUp = "BackendUp"
)

// uidIndex indexes Networks by UID, for garbage collection.
const uidIndex = "uid"

// Options tune the controller.
type Options struct {
	// Backend is where Networks are reconciled into.
	Backend Backend
	// GCInterval is how often backend networks without a Network are
	// deleted (also once when the controller starts). 0 means 10 minutes.
	GCInterval time.Duration
	// PermanentRetry is how long to wait before looking again at a Network
	// that failed permanently (bad spec, backend rejected it): someone may
	// have fixed the other side. 0 means 5 minutes.
	PermanentRetry time.Duration
	// BackendName names the backend in the network_backend_up metric.
	BackendName string
	// DownRetry is the first delay between probes of a backend that is
	// down, doubled after each failed probe up to DownRetryMax. 0 means 1
	// second and 1 minute.
	DownRetry, DownRetryMax time.Duration
	// Credentials, when set, lets Networks name credentials of their own
	// (spec.cloudCredentialsRef); without it such a Network is refused
	// (ReasonCredentialsNotEnabled), never reconciled with Backend.
	Credentials *Credentials
}

// Controller reconciles Networks into a Backend.
type Controller struct {
	controller.Base
	client    versioned.Interface
	lister    samplelisters.NetworkLister
	indexer   cache.Indexer
	recorder  record.EventRecorder
	namespace string
	opts      Options
	fieldMgr  string

	// def is the manager's own cloud (Options.Backend): what it last saw
	// of it, whether it answers. clouds are the Networks' own
	// (Options.Credentials, nil without), each with the same.
	def     *cloud
	creds   *Credentials
	secrets *secretCache
	clouds  *cloudSet
	// slots is how many syncs of one cloud of the Networks' own
	// credentials run at once (half the workers, at least one): a slow or
	// hanging cloud never holds every worker.
	slots int
	// neverCreated holds the UIDs of the Networks whose finalizer this
	// process added and that it has not tried to create yet: no create can
	// have been attempted for them, by anyone (see sync), so their first
	// create needs no lookup of an earlier attempt's leftovers. A UID
	// leaves the set when its create is tried, whatever the outcome: a
	// retry looks. The set lives and dies with the process, which exits
	// when it loses the lease.
	neverCreated *uidSet
}

// The shared Network informer, in every namespace.
// +kubebuilder:rbac:groups=samplecrd.k8s.io,resources=networks,verbs=list;watch

// New builds the controller on the shared Network informer. It fails with an
// actionable error when the cluster does not serve the Network API.
func New(ctx context.Context, cctx *controller.Context, opts Options) (*Controller, error) {
	if opts.Backend == nil {
		return nil, errors.New("network: no backend")
	}
	if opts.GCInterval <= 0 {
		opts.GCInterval = 10 * time.Minute
	}
	if opts.PermanentRetry <= 0 {
		opts.PermanentRetry = 5 * time.Minute
	}
	if opts.DownRetry <= 0 {
		opts.DownRetry = time.Second
	}
	if opts.DownRetryMax <= 0 {
		opts.DownRetryMax = time.Minute
	}
	if opts.BackendName == "" {
		opts.BackendName = "default"
	}
	if cctx.Discovery != nil {
		if _, err := cctx.Discovery.ServerResourcesForGroupVersion(samplecrdv1.SchemeGroupVersion.String()); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("the cluster does not serve %s networks: install the CRD (kubectl apply -k config/crd) or disable this controller (--controllers=*,-network)", samplecrdv1.SchemeGroupVersion)
			}
			return nil, fmt.Errorf("checking that the cluster serves %s: %w", samplecrdv1.SchemeGroupVersion, err)
		}
	}
	informer := cctx.SampleInformerFactory.Samplecrd().V1().Networks()
	if err := informer.Informer().AddIndexers(cache.Indexers{uidIndex: func(obj any) ([]string, error) {
		o, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return []string{string(o.GetUID())}, nil
	}}); err != nil {
		return nil, fmt.Errorf("adding the Network UID index: %w", err)
	}
	c := &Controller{
		client:       cctx.SampleClient,
		lister:       informer.Lister(),
		indexer:      informer.Informer().GetIndexer(),
		recorder:     cctx.EventRecorder(Name),
		namespace:    cctx.Namespace,
		opts:         opts,
		fieldMgr:     cctx.FieldManager,
		def:          newCloud("", opts.Backend),
		neverCreated: newUIDSet(),
	}
	c.clouds = &cloudSet{max: 1, byKey: map[string]*cloud{}, byUID: map[types.UID]string{}, bound: map[types.UID]string{}, now: time.Now,
		start: func(ctx context.Context, cl *cloud) {
			c.scanLoop(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("cloud", cl.description)), cl)
		}}
	if creds := opts.Credentials; creds != nil {
		cc := *creds
		if cc.TTL <= 0 {
			cc.TTL = 30 * time.Second
		}
		if cc.MaxClouds <= 0 {
			cc.MaxClouds = 256
		}
		if cc.MaxCloudsPerNamespace <= 0 {
			cc.MaxCloudsPerNamespace = 16
		}
		c.creds = &cc
		c.clouds.max, c.clouds.perNamespace = cc.MaxClouds, cc.MaxCloudsPerNamespace
		c.secrets = &secretCache{ttl: cc.TTL, get: cc.GetSecret, m: map[types.NamespacedName]secretRead{}, now: time.Now}
	}
	c.Base = controller.NewBase(ctx, cctx, Name, c.sync)
	// Resyncs are not queued: nothing changed in Kubernetes. Backend drift
	// is found by the periodic backend scan (CollectGarbage), with one List
	// instead of a Get per Network.
	handler := c.Handler()
	handler.UpdateFunc = func(oldObj, newObj any) {
		if edited(oldObj, newObj) {
			c.forgetObserved(newObj)
			c.Enqueue(newObj)
		}
	}
	if err := c.AddEventHandler(informer.Informer(), handler); err != nil {
		return nil, err
	}
	c.Background = func(ctx context.Context) {
		defer c.report()()
		c.clouds.run(ctx)
		c.scanLoop(ctx, c.def)
	}
	return c, nil
}

// Run runs the controller with workers workers, at most half of them (at
// least one) on one cloud of the Networks' own credentials at a time.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.slots = max(1, workers/2)
	c.Base.Run(ctx, workers)
}

// slot takes one of cl's sync slots for the caller (release gives it
// back); a sync that gets none is looked at again shortly, leaving its
// worker to another cloud's Networks. The manager's own cloud has no
// bound.
func (c *Controller) slot(cl *cloud) (release func(), ok bool) {
	if cl == nil || cl == c.def || c.slots == 0 {
		return func() {}, true
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.busy >= c.slots {
		return nil, false
	}
	cl.busy++
	return func() {
		cl.mu.Lock()
		cl.busy--
		cl.mu.Unlock()
	}, true
}

// busyRetry is when a sync that found its cloud's slots taken looks again.
const busyRetry = time.Second

// forgetObserved drops what the last scan read of an Unmanaged Network's
// network, so that its sync reads it again: an edit asks for a fresh look
// (an operator's annotation, say, after a change in the backend), which
// an Unmanaged Network otherwise gets only at the next scan.
func (c *Controller) forgetObserved(obj any) {
	if n, ok := obj.(*samplecrdv1.Network); ok && n.Spec.Import != nil && n.Spec.Policy() == samplecrdv1.ManagementPolicyUnmanaged {
		if cl := c.clouds.of(n.UID); cl != nil {
			cl.known.set(n.UID, nil)
		}
		c.def.known.set(n.UID, nil)
	}
}

// edited reports whether an update is an edit of the
// Network: its spec (the generation), finalizers, deletion, labels or
// annotations (an edit asks for a look at once, also at a Network that
// failed permanently). Our own status writes (and resyncs) change none of
// them; queueing on them would retry a failing Network at once after every
// attempt that wrote its status, past the rate limiter's backoff.
func edited(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*samplecrdv1.Network)
	n, ok2 := newObj.(*samplecrdv1.Network)
	if !ok1 || !ok2 {
		return true
	}
	return o.UID != n.UID || o.Generation != n.Generation ||
		!slices.Equal(o.Finalizers, n.Finalizers) ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
		!maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations)
}

// scanLoop runs CollectGarbage at once, then every GCInterval while the
// backend answers. While it does not (or before its first List), that scan
// is the only call to the backend: it is retried with backoff, from
// DownRetry to DownRetryMax, and its success brings every waiting Network
// back. A List that failed otherwise is retried with the same backoff.
//
// Each cloud (the manager's own, and each of the Networks' own entries)
// has its scan loop; the own cloud's also forgets the entries no Network
// uses any more.
func (c *Controller) scanLoop(ctx context.Context, cl *cloud) {
	logger := klog.FromContext(ctx)
	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: c.opts.DownRetry, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: c.opts.DownRetryMax}
	}
	backoff := newBackoff()
	// probe is true while the scan is a probe of a backend found down: a
	// List that succeeds says the backend answers Lists, not that the
	// request that failed would now succeed. The backoff is reset only by
	// a scan that comes after a whole GCInterval without a failure, so a
	// request that keeps failing is probed ever less often.
	probe := false
	for first := true; ; first = false {
		if cl != c.def && !first && c.clouds.dropUnused(cl, c.networkCached) {
			// No Network uses this entry any more (its Secret rotated,
			// its Networks gone): no more requests with its credentials,
			// which a Keystone with lockout would count against the user.
			logger.V(2).Info("Cloud entry no longer used: stopped")
			return
		}
		err := c.collect(ctx, cl)
		if ctx.Err() != nil {
			return
		}
		if cl == c.def {
			// Entries unused for a whole interval are forgotten, and
			// Secret references no Network makes any more.
			c.clouds.evict(c.networkCached, c.opts.GCInterval)
			c.clouds.pruneRefs(c.refsInUse())
		}
		delay := c.opts.GCInterval
		var listErr *listError
		switch {
		case !cl.state.isUp():
			delay = backoff.Step()
			probe = true
			logger.V(2).Info("The network backend is still down; probing again later", "after", delay, "err", err)
		case errors.As(err, &listErr):
			delay = backoff.Step()
			logger.Error(err, "Listing the backend networks failed; Networks are looked up one by one until a List succeeds", "after", delay)
		default:
			if !probe {
				backoff = newBackoff()
			}
			probe = false
			if err != nil {
				logger.Error(err, "Garbage collection of backend networks failed; will retry", "interval", delay)
			}
		}
		for waiting := true; waiting; {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				waiting = false
			case <-cl.wake:
				// A sync found the backend down: probe it, alone, with
				// backoff.
				t.Stop()
				delay = backoff.Step()
				probe = true
			}
		}
	}
}

// backendDown records that err, a failure of the whole backend, happened
// (while syncing obj, nil for the scan): on the change of state, one log
// line, one Warning Event, the metric, and the scan loop told to probe.
// It returns the state's message, the same for every Network.
//
// For a cloud of the Networks' own credentials, the state, the message and
// the Event are that cloud's alone: its Networks wait, no other does.
func (c *Controller) backendDown(ctx context.Context, cl *cloud, obj *samplecrdv1.Network, err error) (reason, message string) {
	var key cache.ObjectName
	if obj != nil {
		key = cache.MetaObjectToName(obj)
	} else if objs, lerr := c.lister.List(labels.Everything()); lerr == nil {
		for _, o := range objs {
			if c.member(o, cl) {
				obj = o
				break
			}
		}
	}
	reason = Reason(err)
	if cl == c.def || reason != samplecrdv1.ReasonCredentialsRefused {
		reason = samplecrdv1.ReasonBackendUnavailable
	}
	message = fmt.Sprintf("The network backend is down, every Network waits for it (probed with backoff): %v", err)
	if cl != c.def {
		hint := ""
		if reason == samplecrdv1.ReasonCredentialsRefused {
			hint = "Keystone refused its credentials: check the password or application credential in the Secret, that the user exists and is enabled, and that it has a role (member) on the project; "
		}
		message = fmt.Sprintf("The network backend of %s is down, every Network using it waits for it (%sprobed with backoff, the Secret read again at each probe): %v", cl.name(), hint, err)
	}
	changed, message := cl.state.down(key, obj, reason, message)
	if !changed {
		return reason, message
	}
	klog.FromContext(ctx).Error(err, "The network backend is down: no backend call for any Network until a probe succeeds",
		"backend", c.opts.BackendName, "cloud", cl.name(), "firstRetry", c.opts.DownRetry, "maxRetry", c.opts.DownRetryMax)
	if cl == c.def {
		metrics.SetNetworkBackendUp(c.opts.BackendName, false)
	} else {
		// The Networks that wait for the first scan of this cloud learn
		// why now, once each (no backend call).
		for _, k := range cl.state.waitingKeys() {
			c.EnqueueKey(k)
		}
	}
	if obj != nil {
		c.recorder.Event(obj, corev1.EventTypeWarning, ReasonBackendDown, message)
	}
	select {
	case cl.wake <- struct{}{}:
	default:
	}
	return reason, message
}

// backendUp records a successful List: the Networks that waited are queued
// again, and a recovery is reported once.
func (c *Controller) backendUp(ctx context.Context, cl *cloud) {
	waiting, wasDown, obj := cl.state.up()
	for _, key := range waiting {
		c.EnqueueKey(key)
	}
	// After the waiting keys are queued: a 1 then an empty queue mean
	// everything that waited was synced.
	if cl == c.def {
		metrics.SetNetworkBackendUp(c.opts.BackendName, true)
	}
	if !wasDown {
		return
	}
	klog.FromContext(ctx).Info("The network backend answers again: syncing the Networks that waited", "backend", c.opts.BackendName, "cloud", cl.name(), "waiting", len(waiting))
	if obj != nil {
		c.recorder.Eventf(obj, corev1.EventTypeNormal, ReasonBackendUp, "The network backend answers again; %d Networks that waited for it are synced again", len(waiting))
	}
}

// waitForBackend parks the Network of cached until the backend is up, with
// the state's message (none before the first scan) in its Ready condition.
func (c *Controller) waitForBackend(ctx context.Context, cached *samplecrdv1.Network, reason, message string) error {
	if message == "" {
		return nil
	}
	return c.setReady(ctx, cached, metav1.ConditionFalse, reason, message, nil, reason == samplecrdv1.ReasonCredentialsRefused)
}

// The finalizer is added and removed by an update (finalize).
// +kubebuilder:rbac:groups=samplecrd.k8s.io,resources=networks,verbs=update

// sync converges one Network: backend network present and equal to the
// spec, or deleted (then the finalizer released) when the Network is being
// deleted.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("network", klog.KRef(key.Namespace, key.Name))
	ctx = klog.NewContext(ctx, logger)

	cached, err := c.lister.Networks(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Gone: its finalizer (if it ever had one) was released after the
		// backend delete; anything left is collected by CollectGarbage.
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading network %s from the cache: %w", key, err)
	}

	if cached.DeletionTimestamp != nil {
		return c.finalize(ctx, cached)
	}
	// The finalizer goes on before anything is created in the backend.
	if !slices.Contains(cached.Finalizers, Finalizer) {
		net := cached.DeepCopy()
		net.Finalizers = append(net.Finalizers, Finalizer)
		updated, err := c.client.SamplecrdV1().Networks(net.Namespace).Update(ctx, net, metav1.UpdateOptions{FieldManager: c.fieldMgr})
		if err != nil {
			return fmt.Errorf("adding finalizer to network %s: %w", key, err)
		}
		// This update, of a version without the finalizer (the API server
		// refuses a stale one), added it: no create was attempted for this
		// Network before, since every create waits for the finalizer, and
		// every other process that may later see it sees the finalizer, and
		// looks before it creates. Status IDs would say a create succeeded
		// once (the finalizer removed by hand): then it looks too.
		if updated.Status.NetworkID == "" && updated.Status.SubnetID == "" {
			c.neverCreated.add(updated.UID)
		}
		// The update event brings the Network back with the finalizer.
		return nil
	}

	if err := samplecrdv1.ValidateSpec(cached.Spec); err != nil {
		// The API server validates too; this guards against objects stored
		// before that validation existed. Not retried: an edit requeues it.
		c.setReady(ctx, cached, metav1.ConditionFalse, samplecrdv1.ReasonInvalidSpec,
			fmt.Sprintf("Invalid spec: %v", err), nil, true)
		return nil
	}

	cl, err := c.cloudFor(ctx, cached, false)
	if err != nil {
		return c.credentialsFailed(ctx, cached, err)
	}
	release, ok := c.slot(cl)
	if !ok {
		return &controller.RequeueAfter{Delay: busyRetry}
	}
	defer release()
	if up, reason, message := cl.state.waitUnlessUp(key); !up {
		return c.waitForBackend(ctx, cached, reason, message)
	}
	if msg := c.projectChanged(cached, cl); msg != "" {
		c.setReady(ctx, cached, metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged, msg, nil, true)
		return &controller.RequeueAfter{Delay: c.opts.PermanentRetry, Err: errors.New("the credentials act in another project than the Network's")}
	}
	if cl != c.def {
		c.clouds.bind(cached.UID, cl)
	}
	desired := Desired(cached)
	cur := cl.known.get(cached.UID)
	neverCreated := c.neverCreated.take(cached.UID) && cur == nil
	if cached.Spec.Import != nil {
		return c.syncImport(ctx, cl, cached, desired, cur)
	}
	got, action, err := Ensure(ctx, cl.getBackend(), desired, cur, neverCreated)
	if err != nil {
		return c.failed(ctx, cl, cached, got, err)
	}
	cl.known.set(cached.UID, got)
	switch action {
	case ActionCreated:
		logger.Info("Created backend network", "networkID", got.NetworkID, "subnetID", got.SubnetID, "cidr", got.CIDR, "gateway", got.Gateway)
		c.recorder.Eventf(cached, corev1.EventTypeNormal, ReasonCreated, "Created backend network %s and subnet %s (%s, gateway %s)", got.NetworkID, got.SubnetID, got.CIDR, got.Gateway)
	case ActionUpdated:
		c.updated(ctx, cached, cur, got)
	}
	return c.setReady(ctx, cached, metav1.ConditionTrue, samplecrdv1.ReasonProvisioned,
		fmt.Sprintf("Network %s and subnet %s provisioned", got.NetworkID, got.SubnetID), got, false)
}

// failed reports err, a backend failure while syncing cached, and returns
// what the queue does about it.
func (c *Controller) failed(ctx context.Context, cl *cloud, cached *samplecrdv1.Network, got *Network, err error) error {
	if IsDown(err) {
		reason, message := c.backendDown(ctx, cl, cached, err)
		return c.waitForBackend(ctx, cached, reason, message)
	}
	if IsNotFound(err) {
		// What we knew is gone: look it up at the retry.
		cl.known.set(cached.UID, nil)
	}
	reason := Reason(err)
	if IsPermanent(err) {
		c.setReady(ctx, cached, metav1.ConditionFalse, reason, fmt.Sprintf("The backend rejected the network: %v", err), got, true)
		return &controller.RequeueAfter{Delay: c.opts.PermanentRetry, Err: err}
	}
	err = fmt.Errorf("reconciling network %s into the backend: %w", cache.MetaObjectToName(cached), err)
	if cached.Spec.Import != nil && IsNotFound(err) {
		reason = samplecrdv1.ReasonImportNotFound
		c.setReady(ctx, cached, metav1.ConditionFalse, reason, fmt.Sprintf("Waiting for the network to import, looking again with backoff (it is never created): %v", err), got, false)
		return &controller.Waiting{Err: err}
	}
	if reason == samplecrdv1.ReasonBackendUnavailable {
		c.setReady(ctx, cached, metav1.ConditionFalse, reason, fmt.Sprintf("Backend not reachable, retrying: %v", err), got, false)
		return err
	}
	// Reachable, but what the request needs is not there yet (quota, a
	// pool's room, ports gone): retried with backoff, waiting for others.
	c.setReady(ctx, cached, metav1.ConditionFalse, reason, fmt.Sprintf("Retrying with backoff: %v", err), got, false)
	return &controller.Waiting{Err: err}
}

// syncImport converges a Network that imports an existing backend network:
// Managed, it adopts it (once) and then keeps its gateway as the spec says;
// Unmanaged, it reads it and reports how it compares with the spec, and
// never writes. cur is what the backend held when last seen (the scans
// read Unmanaged networks too, in batches), nil if not known: only then is
// the network read here.
func (c *Controller) syncImport(ctx context.Context, cl *cloud, cached *samplecrdv1.Network, desired Network, cur *Network) error {
	logger := klog.FromContext(ctx)
	managed := cached.Spec.Policy() == samplecrdv1.ManagementPolicyManaged
	got := cur
	if got == nil || got.SubnetID == "" {
		var err error
		if got, err = cl.getBackend().Import(ctx, desired, RefOf(cached.Spec.Import), managed); err != nil {
			return c.failed(ctx, cl, cached, nil, err)
		}
		if managed && !got.Existed {
			logger.Info("Adopted backend network", "networkID", got.NetworkID, "subnetID", got.SubnetID)
			c.recorder.Eventf(cached, corev1.EventTypeNormal, ReasonAdopted, "Adopted backend network %s and subnet %s (%s, gateway %s)", got.NetworkID, got.SubnetID, got.CIDR, got.Gateway)
		}
	}
	cl.known.set(cached.UID, got)
	if !managed {
		if msg := mismatch(*got, cached.Spec); msg != "" {
			c.setReady(ctx, cached, metav1.ConditionFalse, samplecrdv1.ReasonSpecMismatch, msg+"; an Unmanaged Network is never repaired: fix the spec or the backend", got, true)
			return nil
		}
		return c.setReady(ctx, cached, metav1.ConditionTrue, samplecrdv1.ReasonObserved,
			fmt.Sprintf("Network %s and subnet %s observed (Unmanaged: never changed)", got.NetworkID, got.SubnetID), got, false)
	}
	// What the spec leaves out is the imported network's own.
	if desired.CIDR == "" {
		desired.CIDR = got.CIDR
	}
	if desired.Gateway == "" {
		desired.Gateway = got.Gateway
	}
	before := got
	got, action, err := Ensure(ctx, cl.getBackend(), desired, got, false)
	if err != nil {
		return c.failed(ctx, cl, cached, got, err)
	}
	cl.known.set(cached.UID, got)
	if action == ActionUpdated {
		c.updated(ctx, cached, before, got)
	}
	return c.setReady(ctx, cached, metav1.ConditionTrue, samplecrdv1.ReasonProvisioned,
		fmt.Sprintf("Network %s and subnet %s imported and provisioned", got.NetworkID, got.SubnetID), got, false)
}

// mismatch says how b differs from what spec sets of cidr, gateway and
// the optional settings, or returns "".
func mismatch(b Network, spec samplecrdv1.NetworkSpec) string {
	diffs := changes(b, spec)
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("Subnet %s differs from the spec: %s", b.SubnetID, strings.Join(diffs, "; "))
}

// changes lists how b differs from what spec sets.
func changes(b Network, spec samplecrdv1.NetworkSpec) []string {
	var diffs []string
	if spec.CIDR != "" && !SameCIDR(b.CIDR, spec.CIDR) {
		diffs = append(diffs, fmt.Sprintf("cidr is %s in the backend, %s in the spec", b.CIDR, spec.CIDR))
	}
	if spec.Gateway != "" && !SameIP(b.Gateway, spec.Gateway) {
		diffs = append(diffs, fmt.Sprintf("gateway is %s in the backend, %s in the spec", orNull(b.Gateway), spec.Gateway))
	}
	diffs = append(diffs, SettingsOf(&spec).Diff(b.Settings)...)
	if spec.Import == nil || spec.Policy() == samplecrdv1.ManagementPolicyManaged {
		if d := RouterDiffers(Network{Router: RouterOf(spec.Router)}, b); d != "" {
			diffs = append(diffs, d)
		}
	}
	return diffs
}

// updated records an update of the backend network of cached: what
// differed before it (cur, nil when not known) and what it holds now.
func (c *Controller) updated(ctx context.Context, cached *samplecrdv1.Network, cur, got *Network) {
	what := "the gateway and settings the spec sets"
	if cur != nil {
		if diffs := changes(*cur, cached.Spec); len(diffs) > 0 {
			what = strings.Join(diffs, "; ")
		}
	}
	klog.FromContext(ctx).Info("Updated backend network", "networkID", got.NetworkID, "subnetID", got.SubnetID, "gateway", got.Gateway, "was", what)
	c.recorder.Eventf(cached, corev1.EventTypeNormal, ReasonUpdated, "Updated network %s and subnet %s (gateway %s) to the spec; before: %s", got.NetworkID, got.SubnetID, got.Gateway, what)
}

func orNull(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// finalize deletes (or detaches) the backend network of a Network being
// deleted, in the project it is bound to, then releases the finalizer. When
// no cloud can act there (see deletingIn), it releases the Network at once
// if nothing was ever created for it, and otherwise with the backend
// network left behind and reported: a deletion never waits on credentials
// that nobody may fix (a namespace being deleted takes its Secrets along).
func (c *Controller) finalize(ctx context.Context, cached *samplecrdv1.Network) error {
	c.neverCreated.take(cached.UID)
	if !slices.Contains(cached.Finalizers, Finalizer) {
		return nil
	}
	if cached.Spec.Policy() == samplecrdv1.ManagementPolicyUnmanaged {
		return c.release(ctx, cached, ReasonReleased, "Unmanaged: the backend network was left as it is")
	}
	cl, why, wait := c.deletingIn(ctx, cached)
	switch {
	case cl == nil && why == nil && wait == nil:
		return nil // the cloud's first scan queues it again
	case cl == nil && neverProvisioned(cached):
		if why == nil {
			why = wait
		}
		return c.release(ctx, cached, ReasonReleased, "Nothing was created in the backend for it: its credentials never reached a project ("+why.reason+")")
	case wait != nil && wait.retry > 0:
		// The credentials could not be read for now (the API server,
		// the cloud cap): looked at again.
		return c.credentialsFailed(ctx, cached, wait)
	case wait != nil:
		return c.waitForBackend(ctx, cached, wait.reason, wait.message)
	case cl == nil:
		return c.leaveBehind(ctx, cached, why)
	}
	release, ok := c.slot(cl)
	if !ok {
		return &controller.RequeueAfter{Delay: busyRetry}
	}
	defer release()
	remove, what := cl.getBackend().Delete, "Deleting"
	if cached.Spec.Detach() {
		remove, what = cl.getBackend().Detach, "Detaching"
	}
	if err := remove(ctx, Desired(cached)); err != nil {
		if IsDown(err) {
			reason, message := c.backendDown(ctx, cl, cached, err)
			return c.waitForBackend(ctx, cached, reason, message)
		}
		reason := Reason(err)
		c.setReady(ctx, cached, metav1.ConditionFalse, samplecrdv1.ReasonDeleting,
			fmt.Sprintf("%s the backend network failed (%s), retrying; the Network stays until it succeeds: %v", what, reason, err), nil, IsPermanent(err))
		if IsPermanent(err) {
			return &controller.RequeueAfter{Delay: c.opts.PermanentRetry, Err: err}
		}
		err = fmt.Errorf("%s the backend network of %s: %w", strings.ToLower(what), cache.MetaObjectToName(cached), err)
		if reason == samplecrdv1.ReasonBackendInUse {
			// Ports of others still on it: waiting for them to go.
			return &controller.Waiting{Err: err}
		}
		return err
	}
	if cached.Spec.Detach() {
		return c.release(ctx, cached, ReasonDetached, fmt.Sprintf("Detached in project %s: our tags removed, the backend network and subnet left as they are", orNull(cl.project())))
	}
	if cached.Spec.Import != nil {
		return c.release(ctx, cached, ReasonDeleted, fmt.Sprintf("Deleted the adopted subnet, and the network unless it holds subnets the Network did not adopt (then left, without our tags), in project %s", orNull(cl.project())))
	}
	return c.release(ctx, cached, ReasonDeleted, fmt.Sprintf("Deleted the backend network and subnet in project %s", orNull(cl.project())))
}

// deletingIn returns the cloud a Network being deleted is deleted (or
// detached) in: the one its credentials resolve to, when it acts in the
// Network's project; else a cloud held for that project (the one that last
// acted for it, or, after a restart, another Network's of the same
// project), when up. Otherwise it returns why no cloud can (why), or what
// the Network waits for (wait): a cloud of its project only down for now
// (unreachable, or refusing credentials a Secret still holds, which its
// owner may fix), or credentials that could not be read for now (wait
// with a retry). All nil while its cloud has not answered its first scan.
func (c *Controller) deletingIn(ctx context.Context, cached *samplecrdv1.Network) (cl *cloud, why, wait *resolveError) {
	key := cache.MetaObjectToName(cached)
	cl, err := c.cloudFor(ctx, cached, false)
	if err == nil {
		up, reason, message := cl.state.waitUnlessUp(key)
		switch msg := c.projectChanged(cached, cl); {
		case !up && message == "":
			return nil, nil, nil
		case !up:
			why = &resolveError{reason: reason, message: message}
		case msg != "":
			why = &resolveError{reason: samplecrdv1.ReasonCredentialsProjectChanged, message: msg}
		default:
			return cl, nil, nil
		}
	} else if !errors.As(err, &why) {
		why = &resolveError{reason: samplecrdv1.ReasonBackendUnavailable, message: err.Error(), retry: c.opts.PermanentRetry}
	}
	alt, pending := c.heldFor(cached, cl)
	if alt != nil {
		if up, reason, message := alt.state.waitUnlessUp(key); !up {
			if alt.hasRefs() {
				return nil, nil, &resolveError{reason: reason, message: message}
			}
			// No Secret holds that entry any more: nobody can fix it.
			return nil, &resolveError{reason: reason, message: message}, nil
		}
		return alt, nil, nil
	}
	switch {
	case pending:
		// A cloud held for another Network has not answered its first
		// scan: it may be of this Network's project. Looked at again.
		return nil, nil, &resolveError{reason: why.reason, message: why.message, retry: busyRetry}
	case err != nil && !finalResolve(why.reason):
		return nil, nil, why // the Secret could not be read for now
	case err == nil && why.reason != samplecrdv1.ReasonCredentialsProjectChanged:
		// Its own project's cloud, down: it waits, as for any outage;
		// its probes read its Secrets again, so a Secret deleted (with
		// its namespace) brings it back here at once.
		return nil, nil, why
	}
	return nil, why, nil
}

// finalResolve reports whether a credentials failure of reason stays
// until someone edits something (the Secret, the flag, the Network), as
// opposed to a read that failed for now.
func finalResolve(reason string) bool {
	switch reason {
	case samplecrdv1.ReasonCredentialsNotFound, samplecrdv1.ReasonCredentialsInvalid,
		samplecrdv1.ReasonCredentialsNotEnabled, samplecrdv1.ReasonCredentialsProjectChanged:
		return true
	}
	return false
}

// heldFor returns a cloud other than cl that acts in obj's project, for
// its deletion: the one that last acted for it, else (after a restart)
// one another Network of the same project uses; nil when none is held.
// pending reports that none is, but a held cloud has not answered its
// first scan yet (its project not known).
func (c *Controller) heldFor(obj *samplecrdv1.Network, cl *cloud) (alt *cloud, pending bool) {
	project := c.projectOf(obj)
	if alt := c.clouds.boundTo(obj.UID); alt != nil && alt != cl && (project == "" || alt.project() == project) {
		return alt, false
	}
	if project == "" || obj.Spec.CloudCredentialsRef == nil {
		return nil, false
	}
	for _, alt := range c.clouds.all() {
		switch {
		case alt == cl:
		case alt.project() == project:
			return alt, false
		case alt.state.unknown():
			pending = true
		}
	}
	return nil, pending
}

// projectOf returns the project obj is bound to: its status.projectID;
// for a Managed Network of before the binding, the project of the
// network its status recorded (the one it acted in); else, in this
// process, the project of the cloud that last acted for it. "" when none.
func (c *Controller) projectOf(obj *samplecrdv1.Network) string {
	if p := obj.Status.ProjectID; p != "" {
		return p
	}
	if n := obj.Status.Network; n != nil && n.ProjectID != "" && obj.Spec.Policy() == samplecrdv1.ManagementPolicyManaged {
		return n.ProjectID
	}
	if obj.Spec.CloudCredentialsRef != nil {
		if cl := c.clouds.boundTo(obj.UID); cl != nil {
			return cl.project()
		}
	}
	return ""
}

// projectChanged says, when cl acts in another project than the one
// obj is bound to (projectOf), that nothing is done there and what to do;
// "" when it acts there, or either is not known.
func (c *Controller) projectChanged(obj *samplecrdv1.Network, cl *cloud) string {
	bound, now := c.projectOf(obj), cl.project()
	if bound == "" || now == "" || bound == now {
		return ""
	}
	return fmt.Sprintf("Its credentials now act in another project than project %s, the one the Network is bound to (status.projectID) and its backend network is in: "+
		"nothing is created or changed there. Point the Secret back at project %s, or delete the Network (deleted in project %s while the manager holds credentials for it) and create it again",
		bound, bound, bound)
}

// leaveBehind releases cached, whose backend network no cloud can delete
// or detach (why), and reports what is left where: a Warning Event, a log
// line and the metric. Its tags stay: a manager that holds credentials for
// its project collects it as an orphan.
func (c *Controller) leaveBehind(ctx context.Context, cached *samplecrdv1.Network, why *resolveError) error {
	what := fmt.Sprintf("network %s, subnet %s in project %s", orNull(cached.Status.NetworkID), orNull(cached.Status.SubnetID), orNull(cached.Status.ProjectID))
	todo := "delete it in OpenStack, or let a manager holding credentials for that project collect it (garbage collection)"
	if cached.Spec.Detach() {
		todo = fmt.Sprintf("it still carries the controller's tags (k8s-network-uid=%s): remove them to keep it, or a manager holding credentials for that project deletes it (garbage collection)", cached.UID)
	}
	message := fmt.Sprintf("Released without deleting or detaching its backend network (%s): %s. Left behind: %s", why.reason, todo, what)
	klog.FromContext(ctx).Error(nil, "Network released with its backend network left behind", "reason", why.reason, "networkID", cached.Status.NetworkID,
		"subnetID", cached.Status.SubnetID, "projectID", cached.Status.ProjectID, "detach", cached.Spec.Detach(), "why", why.message)
	if err := c.release(ctx, cached, "", ""); err != nil {
		return err
	}
	metrics.NetworkLeftBehind(why.reason)
	c.recorder.Event(cached, corev1.EventTypeWarning, ReasonLeftBehind, message)
	return nil
}

// release removes the finalizer of cached, whose backend network is dealt
// with, and records why with an Event of reason.
func (c *Controller) release(ctx context.Context, cached *samplecrdv1.Network, reason, message string) error {
	if cl := c.clouds.of(cached.UID); cl != nil {
		cl.known.set(cached.UID, nil)
	}
	c.def.known.set(cached.UID, nil)
	net := cached.DeepCopy()
	net.Finalizers = slices.DeleteFunc(net.Finalizers, func(f string) bool { return f == Finalizer })
	if _, err := c.client.SamplecrdV1().Networks(net.Namespace).Update(ctx, net, metav1.UpdateOptions{FieldManager: c.fieldMgr}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("removing the finalizer of %s: %w", cache.MetaObjectToName(cached), err)
	}
	c.clouds.forget(cached.UID)
	if reason == "" {
		return nil // the caller reports it
	}
	klog.FromContext(ctx).Info("Finalizer released", "reason", reason, "detail", message)
	c.recorder.Event(cached, corev1.EventTypeNormal, reason, message)
	return nil
}

// Status (the Ready condition, backend IDs and observations,
// observedGeneration) is written through the status subresource.
// +kubebuilder:rbac:groups=samplecrd.k8s.io,resources=networks/status,verbs=update

// setReady writes the Ready condition (and the backend IDs and what the
// backend reported of the network and subnet, when known) to the Network's
// status when they differ from what it has (observations compared in
// normalized form: a reordering is no change). warn also records
// a Warning Event, once per change of the condition.
func (c *Controller) setReady(ctx context.Context, cached *samplecrdv1.Network, status metav1.ConditionStatus, reason, message string, got *Network, warn bool) error {
	net := cached.DeepCopy()
	changed := meta.SetStatusCondition(&net.Status.Conditions, metav1.Condition{
		Type:               samplecrdv1.ConditionReady,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: net.Generation,
	})
	observed := inStatus(&cached.Status, got)
	setInStatus(&net.Status, got)
	if net.Status.ProjectID == "" {
		// Bound once, to the project it was first reconciled in (or,
		// of before the binding, the one its network is in): the one of
		// the cloud that acted for it, the manager's own for a Network
		// without credentials of its own.
		if net.Status.ProjectID = c.projectOf(cached); net.Status.ProjectID == "" && cached.Spec.CloudCredentialsRef == nil {
			net.Status.ProjectID = c.def.project()
		}
	}
	observed = observed && net.Status.ProjectID == cached.Status.ProjectID
	if status == metav1.ConditionTrue {
		net.Status.ObservedGeneration = net.Generation
	}
	if !changed && observed && net.Status.ObservedGeneration == cached.Status.ObservedGeneration {
		return nil
	}
	if warn && changed {
		c.recorder.Event(cached, corev1.EventTypeWarning, reason, message)
	}
	if _, err := c.client.SamplecrdV1().Networks(net.Namespace).UpdateStatus(ctx, net, metav1.UpdateOptions{FieldManager: c.fieldMgr}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		err = fmt.Errorf("writing the status of network %s: %w", cache.MetaObjectToName(cached), err)
		klog.FromContext(ctx).V(2).Info("Status write failed", "err", err)
		return err
	}
	return nil
}

// CollectGarbage scans the backend once (one List, and one Observe of the
// networks bound Unmanaged Networks observe): it makes them what syncs
// compare Networks with, queues every Network whose backend network
// is missing or differs from its spec or its status (someone changed the
// backend behind our back) and, the backend being up, the Networks that waited for it,
// and then deletes backend networks marked as ours whose Network no longer
// exists (within this controller's --namespace scope). A List failing because
// the whole backend is down marks it down; failing otherwise, it still
// marks the backend up (it answered), and syncs look Networks up one by one
// until a List succeeds. A failing Observe fails the scan as a List does.
func (c *Controller) CollectGarbage(ctx context.Context) error { return c.collect(ctx, c.def) }

// collect is CollectGarbage of cl: its List, its Networks, the orphans in
// what its credentials see. A cloud of the Networks' own credentials
// connects first (Neutron: authenticates), and while it is down reads its
// Secrets again, so that a fixed Secret takes effect without waiting for
// the old credentials to work again.
func (c *Controller) collect(ctx context.Context, cl *cloud) error {
	logger := klog.FromContext(ctx)
	if cl != c.def && !cl.state.isUp() {
		c.recheckSecrets(ctx, cl)
	}
	backend := cl.getBackend()
	if backend == nil {
		b, err := c.creds.NewBackend(ctx, cl.config)
		if err != nil {
			if ctx.Err() == nil {
				c.backendDown(ctx, cl, nil, err)
			}
			return &listError{err: fmt.Errorf("connecting to %s: %w", cl.name(), err)}
		}
		cl.mu.Lock()
		cl.backend = b
		cl.mu.Unlock()
		backend = b
	}
	mark := cl.known.mark()
	nets, err := backend.List(ctx)
	if err != nil {
		switch {
		case ctx.Err() != nil:
		case IsDown(err):
			c.backendDown(ctx, cl, nil, err)
		default:
			// The backend answers, this List failed: syncs go on without
			// it (looking each Network up) until a List succeeds.
			c.backendUp(ctx, cl)
		}
		return &listError{err: fmt.Errorf("listing backend networks: %w", err)}
	}
	// Which Network a backend network belongs to comes from its tags
	// alone (Backend.List). One tagged before the tags named the
	// Network's namespace and name (untagged) is tagged by this scan
	// when its Network is ours; else it is collected only once the API
	// server confirms its UID gone.
	var mine, untagged []Network
	for _, n := range nets {
		switch {
		case n.Namespace == "":
			untagged = append(untagged, n)
		case c.namespace == "" || n.Namespace == c.namespace:
			mine = append(mine, n) // else another manager's scope
		}
	}
	// The networks Unmanaged Networks bound are not marked as ours, so
	// not in the List: they are read here, in batches, never one by one.
	observed, err := backend.Observe(ctx, c.boundUnmanaged(cl))
	if err != nil {
		if IsDown(err) && ctx.Err() == nil {
			c.backendDown(ctx, cl, nil, err)
		} else if ctx.Err() == nil {
			c.backendUp(ctx, cl)
		}
		return &listError{err: fmt.Errorf("reading the networks of Unmanaged Networks: %w", err)}
	}
	inBackend := cl.known.replace(slices.Concat(mine, untagged, observed), mark)
	var errs []error
	cached, err := c.lister.List(labels.Everything())
	if err != nil {
		errs = append(errs, fmt.Errorf("listing cached networks: %w", err))
	}
	for _, obj := range cached {
		if obj.DeletionTimestamp != nil || !slices.Contains(obj.Finalizers, Finalizer) || !c.member(obj, cl) {
			continue // being deleted, or not provisioned yet: queued already; or another cloud's
		}
		b, ok := inBackend[obj.UID]
		if ok && b.SubnetID != "" && mismatch(b, obj.Spec) == "" && inStatus(&obj.Status, &b) {
			continue
		}
		if !ok && rejected(obj) {
			continue // nothing to compare: its PermanentRetry, or an edit, looks again
		}
		logger.Info("Backend network missing, different from the spec or from the status: re-syncing", "network", klog.KObj(obj))
		c.EnqueueKey(cache.MetaObjectToName(obj))
	}
	// The backend answers: Networks are served from here on, while the
	// orphans (any number, each delete as slow as it is) go one by one.
	c.backendUp(ctx, cl)
	errs = append(errs, c.tagUntagged(ctx, backend, untagged))
	if c.namespace == "" {
		// Every Network is in the cache: an untagged network whose UID
		// the API server does not hold either is an orphan.
		orphans, err := c.gone(ctx, untagged)
		errs = append(errs, err)
		mine = append(mine, orphans...)
	}
	for _, n := range mine {
		if objs, err := c.indexer.ByIndex(uidIndex, string(n.UID)); err == nil && len(objs) > 0 {
			continue
		}
		if n.Namespace == "" {
			// Confirmed gone by gone's live list.
			if err := backend.Delete(ctx, n); err != nil {
				errs = append(errs, fmt.Errorf("deleting orphaned backend network %s: %w", n, err))
				continue
			}
			cl.known.set(n.UID, nil)
			logger.Info("Deleted orphaned backend network: its Network no longer exists", "backendNetwork", n.String())
			continue
		}
		// Not in the cache; make sure with a live read before deleting.
		if exists, err := c.networkExists(ctx, n); err != nil || exists {
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := backend.Delete(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("deleting orphaned backend network %s: %w", n, err))
			continue
		}
		cl.known.set(n.UID, nil)
		logger.Info("Deleted orphaned backend network: its Network no longer exists", "backendNetwork", n.String())
	}
	return errors.Join(errs...)
}

// tagUntagged tags the backend networks of untagged whose Network is in
// the cache (a Managed one: an Unmanaged Network's network is never ours)
// with its namespace and name, as Import marks an adopted network.
func (c *Controller) tagUntagged(ctx context.Context, backend Backend, untagged []Network) error {
	var errs []error
	for _, n := range untagged {
		objs, err := c.indexer.ByIndex(uidIndex, string(n.UID))
		if err != nil || len(objs) == 0 || n.SubnetID == "" {
			continue // another's, or a create to complete first
		}
		obj, ok := objs[0].(*samplecrdv1.Network)
		if !ok || obj.Spec.Policy() != samplecrdv1.ManagementPolicyManaged {
			continue
		}
		desired := Desired(obj)
		desired.CIDR = n.CIDR
		if _, err := backend.Import(ctx, desired, Ref{NetworkID: n.NetworkID}, true); err != nil {
			errs = append(errs, fmt.Errorf("tagging backend network %s with its Network's namespace and name: %w", n, err))
			continue
		}
		klog.FromContext(ctx).Info("Tagged backend network with its Network's namespace and name", "network", klog.KObj(obj), "networkID", n.NetworkID)
	}
	return errors.Join(errs...)
}

// Garbage collection confirms a network tagged before the tags named its
// Network gone with a live list of every Network (a manager of every
// namespace only).
// +kubebuilder:rbac:groups=samplecrd.k8s.io,resources=networks,verbs=list

// gone returns the networks of untagged whose Network's UID the API
// server does not hold (one live list of every Network, only when there
// are such networks and none is in the cache).
func (c *Controller) gone(ctx context.Context, untagged []Network) ([]Network, error) {
	var candidates []Network
	for _, n := range untagged {
		if objs, err := c.indexer.ByIndex(uidIndex, string(n.UID)); err == nil && len(objs) == 0 {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	list, err := c.client.SamplecrdV1().Networks("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Networks to confirm orphans: %w", err)
	}
	live := map[types.UID]bool{}
	for i := range list.Items {
		live[list.Items[i].UID] = true
	}
	return slices.DeleteFunc(candidates, func(n Network) bool { return live[n.UID] }), nil
}

// rejected reports whether obj's Ready condition, for its current
// generation, is a refusal that stays until something is edited (its
// spec, the backend, its credentials): looked at again after
// PermanentRetry, not at every scan.
func rejected(obj *samplecrdv1.Network) bool {
	cond := meta.FindStatusCondition(obj.Status.Conditions, samplecrdv1.ConditionReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.ObservedGeneration != obj.Generation {
		return false
	}
	switch cond.Reason {
	case samplecrdv1.ReasonInvalidSpec, samplecrdv1.ReasonBackendRejected, samplecrdv1.ReasonCIDROverlap, samplecrdv1.ReasonCIDRMismatch,
		samplecrdv1.ReasonRouterNotFound, samplecrdv1.ReasonSubnetPoolNotFound, samplecrdv1.ReasonCredentialsProjectChanged:
		return true
	}
	return false
}

// boundUnmanaged returns, for Observe, the Unmanaged Networks that bound
// a backend network (their status records it) and are not being deleted.
func (c *Controller) boundUnmanaged(cl *cloud) []Network {
	objs, err := c.lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []Network
	for _, obj := range objs {
		if obj.Spec.Import == nil || obj.Spec.Policy() != samplecrdv1.ManagementPolicyUnmanaged ||
			obj.Status.NetworkID == "" || obj.DeletionTimestamp != nil || !c.member(obj, cl) {
			continue
		}
		out = append(out, Desired(obj))
	}
	return out
}

// listError is the error of a scan whose List failed.
type listError struct{ err error }

func (e *listError) Error() string { return e.err.Error() }
func (e *listError) Unwrap() error { return e.err }

// Garbage collection re-reads a Network from the API server, not the cache,
// before it deletes the backend network of one it believes gone.
// +kubebuilder:rbac:groups=samplecrd.k8s.io,resources=networks,verbs=get

// networkExists reads the Network n belonged to from the API server and
// reports whether it (the same UID) still exists.
func (c *Controller) networkExists(ctx context.Context, n Network) (bool, error) {
	if n.Namespace == "" || n.Name == "" {
		return false, nil
	}
	got, err := c.client.SamplecrdV1().Networks(n.Namespace).Get(ctx, n.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking network %s/%s: %w", n.Namespace, n.Name, err)
	}
	return got.UID == types.UID(n.UID), nil
}
