package network_test

// Tests of a Network's binding to its project and of bounded deletion,
// written against defects found by trying to break them: each comment
// says what the defect did; each test passes since its fix.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// failingSecrets is the fake Secrets with an error injected: while fail
// is set, every read fails with it.
type failingSecrets struct {
	*secrets
	mu     sync.Mutex
	fail   error
	failed int
}

func (s *failingSecrets) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func (s *failingSecrets) failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *failingSecrets) get(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	s.mu.Lock()
	err := s.fail
	if err != nil {
		s.failed++
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.secrets.get(ctx, ns, name)
}

func credsRef(secret string) *samplecrdv1.CloudCredentialsRef {
	return &samplecrdv1.CloudCredentialsRef{SecretName: secret, CloudName: "openstack"}
}

// markDeleted sets the Network's deletion timestamp, as the API server
// does on a delete of an object with finalizers.
func markDeleted(ctx context.Context, t *testing.T, client *fake.Clientset, ns, name string) {
	t.Helper()
	got, err := client.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	got.DeletionTimestamp = &now
	if _, err := client.SamplecrdV1().Networks(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitReleased(ctx context.Context, t *testing.T, client *fake.Clientset, ns, name string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(got.Finalizers) == 0, err
	}); err != nil {
		t.Fatalf("the finalizer of %s/%s was not released: %v", ns, name, err)
	}
}

func drainEvents(recorder *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// eventsUntil drains recorder until an Event of one of reasons came (a
// release's Event follows its finalizer's removal), or a deadline passed,
// and returns every Event it drained.
func eventsUntil(ctx context.Context, recorder *record.FakeRecorder, reasons ...string) []string {
	var out []string
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		out = append(out, drainEvents(recorder)...)
		return slices.ContainsFunc(reasons, func(r string) bool { return hasEvent(out, r) }), nil
	})
	return out
}

func hasEvent(events []string, reason string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, " "+reason+" ") })
}

// A Network whose Secret was pointed at another project while the manager
// was down is deleted after the restart: the manager holds the very entry
// that last acted for it (another Network of the namespace uses the same
// content), so its deletion (or detachment) acts in its project. Instead
// deletingIn only looks at the cloud bound in this process (none after a
// restart), leaves the network behind, and the held entry's garbage
// collection then deletes it, even the one onDelete: Detach asked to keep.
func TestRestartedThenSecretRepointedThenDeleted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		detach bool
		event  string
	}{
		{name: "onDelete Detach keeps its network in its project, whatever restarts or credential changes follow", detach: true, event: network.ReasonDetached},
		{name: "onDelete Delete deletes it in its project with the entry the manager holds, nothing left behind", event: network.ReasonDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sec := newSecrets()
			sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
			sec.set("a", "same", cloudsYAML("openstack", "p1-a"))
			fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
			obj := credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds"))
			if tc.detach {
				obj.Spec.OnDelete = samplecrdv1.OnDeleteDetach
			}
			client := fake.NewClientset(obj, credNetwork("a", "other", "u2", "10.2.0.0/24", credsRef("same")))
			opts := network.Options{Backend: memory.New(), GCInterval: 20 * time.Millisecond,
				DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
				Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)}

			// First process: both provisioned in project-p1.
			ctx1, stop1 := context.WithCancel(ctx)
			done1 := runControllerWith(ctx1, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			waitCondition(ctx, t, client, "a", "other", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			stop1()
			<-done1

			// While it is down, n's Secret is pointed at another project.
			sec.set("a", "creds", cloudsYAML("openstack", "p2-a"))

			recorder := record.NewFakeRecorder(100)
			done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), recorder, opts)
			defer func() { cancel(); <-done }()
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)

			markDeleted(ctx, t, client, "a", "n")
			waitReleased(ctx, t, client, "a", "n")
			if err := client.SamplecrdV1().Networks("a").Delete(ctx, "n", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// project-p1's entry (other's) keeps scanning every 20ms.
			p1 := fakeClouds.backend("p1-a")
			lists := p1.Stats().Lists
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return p1.Stats().Lists >= lists+3, nil
			}); err != nil {
				t.Fatal(err)
			}
			var left []memory.Object
			for _, o := range p1.Objects() {
				if o.CIDR == "10.1.0.0/24" {
					left = append(left, o)
				}
			}
			events := eventsUntil(ctx, recorder, tc.event, network.ReasonLeftBehind)
			if tc.detach && (len(left) != 1 || left[0].Owned) {
				t.Errorf("project-p1 holds %+v of n's network (%+v), want it kept, detached (Events %q)", left, p1.Stats(), events)
			}
			if !tc.detach && len(left) != 0 {
				t.Errorf("project-p1 still holds n's network %+v (Events %q)", left, events)
			}
			if !hasEvent(events, tc.event) || hasEvent(events, network.ReasonLeftBehind) {
				t.Errorf("Events %q, want %s and no %s: the manager holds credentials for project-p1", events, tc.event, network.ReasonLeftBehind)
			}
		})
	}
}

// A Network deleted while the manager was down (a rollout, a namespace
// deleted meanwhile) whose Secret cannot be read for a moment when the
// manager starts (the API server answers 500 or 429, a timeout) is
// released at once with its backend network left behind, as if its
// Secret were gone for good: deletingIn treats every error of cloudFor as
// final, and no cloud is bound after a restart. A read that fails for a
// moment should be retried, and the network deleted.
func TestTransientSecretReadDuringDeletionWaits(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{name: "the API server answers 500 while the Secret is read", err: apierrors.NewInternalError(errors.New("etcdserver: request timed out"))},
		{name: "the API server throttles the read (429)", err: apierrors.NewTooManyRequests("slow down", 1)},
		{name: "the read times out", err: apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "get", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sec := &failingSecrets{secrets: &secrets{m: map[types.NamespacedName]map[string][]byte{}}}
			sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
			fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
			client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
			opts := network.Options{Backend: memory.New(),
				DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
				Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)}
			ctx1, stop1 := context.WithCancel(ctx)
			done1 := runControllerWith(ctx1, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			stop1()
			<-done1

			// Deleted while the manager is down; when it starts, the API
			// server fails the Secret's reads for a moment.
			markDeleted(ctx, t, client, "a", "n")
			sec.setFail(tc.err)
			recorder := record.NewFakeRecorder(100)
			done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), recorder, opts)
			defer func() { cancel(); <-done }()
			released := func(ctx context.Context) (bool, error) {
				got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
				return err == nil && len(got.Finalizers) == 0, err
			}
			// A few failed reads, or the release: then the API server
			// answers again.
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				if sec.failures() >= 3 {
					return true, nil
				}
				return released(ctx)
			}); err != nil {
				t.Fatal(err)
			}
			sec.setFail(nil)
			waitReleased(ctx, t, client, "a", "n")
			// The Network is still in the cache (its object is not deleted
			// yet): no garbage collection can have deleted its network.
			events := eventsUntil(ctx, recorder, network.ReasonDeleted, network.ReasonLeftBehind)
			if objs := fakeClouds.backend("p1-a").Objects(); len(objs) != 0 {
				t.Errorf("project-p1 still holds %+v after the release; Events %q", objs, events)
			}
			if hasEvent(events, network.ReasonLeftBehind) || !hasEvent(events, network.ReasonDeleted) {
				t.Errorf("Events %q, want BackendDeleted and no BackendLeftBehind for a Secret read that failed for a moment", events)
			}
		})
	}
}

// A Network of before the project binding (status.networkID, no
// status.projectID) whose Secret now points at another project: the
// controller binds it there, creates a second network in that project,
// overwrites status.networkID and records the wrong project; the first
// network is orphaned, unreported.
func TestLegacyNetworkRepointedSecretCreatesNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
	opts := network.Options{Backend: memory.New(), GCInterval: 20 * time.Millisecond,
		DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
		Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)}
	ctx1, stop1 := context.WithCancel(ctx)
	done1 := runControllerWith(ctx1, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
	waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	stop1()
	<-done1
	// As a manager of before the binding left it: no status.projectID.
	got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	netID := got.Status.NetworkID
	got.Status.ProjectID = ""
	if _, err := client.SamplecrdV1().Networks("a").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec.set("a", "creds", cloudsYAML("openstack", "p2-a"))

	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
	defer func() { cancel(); <-done }()
	// Its first sync after the restart: it binds a project, or says why not.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err = client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady)
		return got.Status.ProjectID != "" || (cond != nil && cond.Reason != samplecrdv1.ReasonProvisioned), nil
	}); err != nil {
		t.Fatal(err)
	}
	if b := fakeClouds.backend("p2-a"); b != nil && b.Stats().Writes() != 0 {
		t.Errorf("project-p2 got %+v (%d writes): a second network for a Network whose network %s is in project-p1", b.Objects(), b.Stats().Writes(), netID)
	}
	if got.Status.NetworkID != netID || (got.Status.ProjectID != "" && got.Status.ProjectID != "project-p1") {
		t.Errorf("status networkID %q projectID %q, want %q in project-p1 (or no project recorded)", got.Status.NetworkID, got.Status.ProjectID, netID)
	}
}

// projectClouds is a fake Keystone whose entries of one project share
// that project's networks, as Neutron's do: one memory backend per
// project (what precedes the password's first dash), shared by every
// password of it; "refused" passwords are refused.
type projectClouds struct {
	mu       sync.Mutex
	projects map[string]*memory.Backend
	tries    map[string]int
}

func (f *projectClouds) newBackend(_ context.Context, cfg network.CloudConfig) (network.Backend, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pw := cfg.Config.(neutron.Cloud).AuthOptions.Password
	if f.tries == nil {
		f.tries = map[string]int{}
	}
	f.tries[pw]++
	if strings.HasPrefix(pw, "refused") {
		return nil, &network.Error{Op: "authenticating", Reason: samplecrdv1.ReasonCredentialsRefused, Down: true,
			Err: errors.New("Keystone refused " + cfg.Description)}
	}
	project, _, _ := strings.Cut(pw, "-")
	b, ok := f.projects[project]
	if !ok {
		b = memory.New(memory.WithProject("project-" + project))
		f.projects[project] = b
	}
	return b, nil
}

func (f *projectClouds) project(p string) *memory.Backend {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.projects[p]
}

// A Secret whose password is rotated (a new password, same user and
// project) keeps its Networks working in their project: no
// CredentialsProjectChanged, no second network, nothing deleted; in both
// orders of rotation (the Secret first, or Keystone first).
func TestRotationWithinTheProject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		between string // the Secret's password between the two
	}{
		{name: "the Secret is rotated while the old password still works"},
		{name: "Keystone refuses the old password before the Secret is rotated", between: "refused-old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sec := newSecrets()
			sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
			fc := &projectClouds{projects: map[string]*memory.Backend{}}
			client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
			recorder := record.NewFakeRecorder(100)
			done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), recorder, network.Options{Backend: memory.New(),
				GCInterval: 20 * time.Millisecond, DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
				Credentials: &network.Credentials{GetSecret: sec.get, Parse: neutron.ParseCloud, NewBackend: fc.newBackend, TTL: 10 * time.Millisecond}})
			defer func() { cancel(); <-done }()
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			if tc.between != "" {
				// Not modelled by the fake: the old entry refused from now on
				// is a new entry whose backend refuses.
				sec.set("a", "creds", cloudsYAML("openstack", tc.between))
				touchAfterTTL(ctx, t, sec, client, "a", "n")
				waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
			}
			sec.set("a", "creds", cloudsYAML("openstack", "p1-b"))
			touchAfterTTL(ctx, t, sec, client, "a", "n")
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return tryCount(fc, "p1-b") > 0, nil
			}); err != nil {
				t.Fatal(err)
			}
			cond := waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			p1 := fc.project("p1")
			if objs := p1.Objects(); len(objs) != 1 || p1.Stats().Deletes != 0 || p1.Stats().Creates != 1 {
				t.Errorf("project-p1 holds %+v (%+v), want n's one network; Ready %+v", objs, p1.Stats(), cond)
			}
			if hasEvent(drainEvents(recorder), samplecrdv1.ReasonCredentialsProjectChanged) {
				t.Errorf("a rotation within the project reported CredentialsProjectChanged")
			}
		})
	}
}

func tryCount(f *projectClouds, pw string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries[pw]
}

// touchAfterTTL edits a Network's labels (an edit syncs it) once the
// cached Secret reads are a TTL (10ms) old.
func touchAfterTTL(ctx context.Context, t *testing.T, sec *secrets, client *fake.Clientset, ns, name string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return sec.idleFor(20 * time.Millisecond), nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := client.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	got.Labels["touched"] = time.Now().Format("150405.000000000")
	if _, err := client.SamplecrdV1().Networks(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A Network whose bound cloud (the entry that last acted for it) has its
// password revoked in Keystone, while no Secret holds that entry any more
// (pointed at another project, or deleted with its namespace), waits for
// that entry's probes forever when deleted: deletingIn parks it on the
// bound cloud's down state, which nobody can fix. Deletion is promised to
// be bounded whatever state the credentials are in (a namespace being
// deleted would hang in Terminating).
func TestDeletionOnARevokedEntryNobodyHoldsEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		repointed bool // a/creds points at project-p2, else it is deleted
	}{
		{name: "the Secret now points at another project", repointed: true},
		{name: "the Secret is deleted with its namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sec := newSecrets()
			sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
			fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
			client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
			recorder := record.NewFakeRecorder(100)
			done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), recorder, network.Options{Backend: memory.New(),
				GCInterval: 20 * time.Millisecond, DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
				Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)})
			defer func() { cancel(); <-done }()
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)

			if tc.repointed {
				sec.set("a", "creds", cloudsYAML("openstack", "p2-a"))
				touchAfterTTL(ctx, t, sec, client, "a", "n")
				waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)
			} else {
				sec.mu.Lock()
				delete(sec.m, types.NamespacedName{Namespace: "a", Name: "creds"})
				sec.mu.Unlock()
			}
			// project-p1's password is revoked in Keystone: every request of
			// that entry is refused from now on.
			p1 := fakeClouds.backend("p1-a")
			p1.SetFault(func(context.Context, memory.Op, types.UID) error {
				return &network.Error{Op: "authenticating", Reason: samplecrdv1.ReasonCredentialsRefused, Down: true, Err: errors.New("Keystone refused the entry")}
			})
			markDeleted(ctx, t, client, "a", "n")
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
				return err == nil && len(got.Finalizers) == 0, err
			}); err != nil {
				got, _ := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
				t.Fatalf("not released after 5s of 10-20ms probes (Ready %+v, Events %q): the only entry of its project is refused and no Secret holds it any more",
					meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady), drainEvents(recorder))
			}
			if events := eventsUntil(ctx, recorder, network.ReasonLeftBehind); !hasEvent(events, network.ReasonLeftBehind) {
				t.Errorf("Events %q, want BackendLeftBehind naming the network left in project-p1", events)
			}
		})
	}
}

// A Network being deleted whose entry finds the manager holding
// MaxClouds entries, all in use (BackendUnavailable, "too many distinct
// cloud entries", retried every TTL for any other sync), is released at
// once with its network left behind: deletingIn takes that passing
// condition for credentials gone for good.
func TestTooManyCloudsDuringDeletionWaits(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	sec.set("b", "creds", cloudsYAML("openstack", "p3-b"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	client := fake.NewClientset(credNetwork("b", "other", "u2", "10.2.0.0/24", credsRef("creds")))
	recorder := record.NewFakeRecorder(100)
	opts := network.Options{Backend: memory.New(), GCInterval: 20 * time.Millisecond, DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
		Credentials: &network.Credentials{GetSecret: sec.get, Parse: neutron.ParseCloud, NewBackend: fakeClouds.newBackend, TTL: 10 * time.Millisecond, MaxClouds: 1}}
	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), recorder, opts)
	defer func() { cancel(); <-done }()
	waitCondition(ctx, t, client, "b", "other", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)

	// a/n, provisioned in project-p1 (by an earlier process), is deleted;
	// its network is there.
	p1 := memory.New(memory.WithProject("project-p1"))
	fakeClouds.mu.Lock()
	fakeClouds.backends["p1-a"] = p1
	fakeClouds.mu.Unlock()
	obj := credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds"))
	got, _, err := network.Ensure(ctx, p1, network.Desired(obj), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	obj.Finalizers, obj.DeletionTimestamp = []string{network.Finalizer}, &now
	obj.Status.NetworkID, obj.Status.SubnetID, obj.Status.ProjectID = got.NetworkID, got.SubnetID, "project-p1"
	if err := client.Tracker().Add(obj); err != nil {
		t.Fatal(err)
	}
	// While other holds the one entry, a/n waits (or is released).
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(n.Finalizers) == 0 || meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady) != nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	// other goes: its entry is freed, a/n can be deleted in project-p1.
	if err := client.SamplecrdV1().Networks("b").Delete(ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReleased(ctx, t, client, "a", "n")
	events := eventsUntil(ctx, recorder, network.ReasonDeleted, network.ReasonLeftBehind)
	if objs := p1.Objects(); len(objs) != 0 || hasEvent(events, network.ReasonLeftBehind) {
		t.Errorf("project-p1 holds %+v after a/n's release, Events %q: want it deleted once an entry is free, not left behind", objs, events)
	}
}

// A Secret edited back and forth between projects: while it points
// elsewhere nothing is made there; pointed back, the Network converges
// again in its project, with its one network, its binding unchanged;
// with or without a restart while it pointed elsewhere.
func TestSecretBackAndForth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
	}{
		{name: "edited to another project and back"},
		{name: "edited to another project, the manager restarted, edited back", restart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sec := newSecrets()
			sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
			fc := &projectClouds{projects: map[string]*memory.Backend{}}
			client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
			opts := network.Options{Backend: memory.New(), GCInterval: 20 * time.Millisecond, DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
				Credentials: &network.Credentials{GetSecret: sec.get, Parse: neutron.ParseCloud, NewBackend: fc.newBackend, TTL: 10 * time.Millisecond}}
			ctx1, stop1 := context.WithCancel(ctx)
			defer stop1()
			done1 := runControllerWith(ctx1, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			sec.set("a", "creds", cloudsYAML("openstack", "p2-a"))
			touchAfterTTL(ctx, t, sec, client, "a", "n")
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)
			done := done1
			if tc.restart {
				stop1()
				<-done1
				done = runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
				touchAfterTTL(ctx, t, sec, client, "a", "n")
				waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)
			}
			defer func() { cancel(); <-done }()
			sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
			touchAfterTTL(ctx, t, sec, client, "a", "n")
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p1, p2 := fc.project("p1"), fc.project("p2")
			if len(p1.Objects()) != 1 || p1.Stats().Creates != 1 || (p2 != nil && p2.Stats().Writes() != 0) || got.Status.ProjectID != "project-p1" {
				t.Errorf("project-p1 %+v, project-p2 %v, status.projectID %q: want n's one network in project-p1, nothing in project-p2", p1.Objects(), p2, got.Status.ProjectID)
			}
		})
	}
}

// The sync that created a Network's network in project-p1 could not write
// its status (the API server failed the write: a conflict, a timeout);
// its Secret is pointed at project-p2 before the retry. The process knows
// it acted in project-p1 (the cloud is bound), but projectChanged reads
// the binding from status.projectID alone: the retry creates a second
// network in project-p2 and records project-p2, the first one orphaned.
func TestStatusWriteFailedThenSecretRepointed(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
	var mu sync.Mutex
	failStatus := true
	client.PrependReactor("update", "networks", func(action clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if action.GetSubresource() == "status" && failStatus {
			return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Group: "samplecrd.k8s.io", Resource: "networks"}, "update", 1)
		}
		return false, nil, nil
	})
	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), network.Options{Backend: memory.New(),
		GCInterval: 20 * time.Millisecond, DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
		Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)})
	defer func() { cancel(); <-done }()
	// The create in project-p1 succeeds; its status write does not.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		b := fakeClouds.backend("p1-a")
		return b != nil && len(b.Objects()) == 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	sec.set("a", "creds", cloudsYAML("openstack", "p2-a"))
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return sec.idleFor(20 * time.Millisecond), nil
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	failStatus = false
	mu.Unlock()
	// The retries go on (the failed write is an error): the next one
	// writes the status.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
		return err == nil && meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady) != nil, err
	}); err != nil {
		t.Fatal(err)
	}
	got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b := fakeClouds.backend("p2-a"); b != nil && b.Stats().Writes() != 0 {
		t.Errorf("project-p2 got %+v: a second network, though this process created n's in project-p1 (status.projectID %q, Ready %+v)",
			b.Objects(), got.Status.ProjectID, meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady))
	}
	if got.Status.ProjectID != "project-p1" {
		t.Errorf("status.projectID %q, want project-p1, where this process created its network", got.Status.ProjectID)
	}
}

// Once settled, a Network writes its status at most once more over 30
// scans and probes, whatever state its credentials are in (working,
// refused, pointed at another project after a restart, invalid, missing).
func TestNoWriteStorm(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("ns", "p1", cloudsYAML("openstack", "p1-a"))
	sec.set("ns", "refused", cloudsYAML("openstack", "refused-x"))
	sec.set("ns", "moved", cloudsYAML("openstack", "p1-a"))
	sec.set("ns", "invalid", map[string][]byte{samplecrdv1.CloudCredentialsKey: []byte("clouds: [")})
	fc := &projectClouds{projects: map[string]*memory.Backend{}}
	mk := func(name, uid, cidr, secret string) *samplecrdv1.Network {
		return credNetwork("ns", name, uid, cidr, credsRef(secret))
	}
	client, writes := versionedClient(mk("ok", "u1", "10.1.0.0/24", "p1"), mk("refused", "u2", "10.2.0.0/24", "refused"),
		mk("moved", "u3", "10.3.0.0/24", "moved"), mk("invalid", "u4", "10.4.0.0/24", "invalid"), mk("missing", "u5", "10.5.0.0/24", "nope"))
	opts := network.Options{Backend: memory.New(), GCInterval: 10 * time.Millisecond, DownRetry: 5 * time.Millisecond, DownRetryMax: 10 * time.Millisecond, PermanentRetry: time.Hour,
		Credentials: &network.Credentials{GetSecret: sec.get, Parse: neutron.ParseCloud, NewBackend: fc.newBackend, TTL: 5 * time.Millisecond}}
	ctx1, stop1 := context.WithCancel(ctx)
	done1 := runControllerWith(ctx1, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(1000), opts)
	waitCondition(ctx, t, client, "ns", "moved", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	stop1()
	<-done1
	sec.set("ns", "moved", cloudsYAML("openstack", "p2-a"))
	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(1000), opts)
	defer func() { cancel(); <-done }()
	waitCondition(ctx, t, client, "ns", "ok", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	waitCondition(ctx, t, client, "ns", "refused", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
	waitCondition(ctx, t, client, "ns", "moved", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)
	waitCondition(ctx, t, client, "ns", "invalid", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsInvalid)
	waitCondition(ctx, t, client, "ns", "missing", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsNotFound)
	before := map[string]int{}
	names := []string{"ok", "refused", "moved", "invalid", "missing"}
	for _, n := range names {
		before[n] = writes(n)
	}
	p2lists := func() int64 {
		if b := fc.project("p2"); b != nil {
			return b.Stats().Lists
		}
		return 0
	}
	start := p2lists()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return p2lists() >= start+30 && fc.project("p1").Stats().Lists >= 30, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if d := writes(n) - before[n]; d > 1 {
			t.Errorf("%s: %d status writes over 30 scans once settled", n, d)
		}
	}
}

// Two namespaces whose Secrets hold the same entry share one cloud: the
// other namespace's Network cannot take, change or delete the first's
// network (a Managed import of it is refused, BackendRejected), and its
// own deletion leaves it; the first namespace's Secret gone, its Network
// is still deleted through the shared entry.
func TestSharedEntryAcrossNamespaces(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	sec.set("b", "creds", cloudsYAML("openstack", "p1-a"))
	fc := &projectClouds{projects: map[string]*memory.Backend{}}
	client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
	recorder := record.NewFakeRecorder(1000)
	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), recorder, network.Options{Backend: memory.New(),
		GCInterval: 20 * time.Millisecond, DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
		Credentials: &network.Credentials{GetSecret: sec.get, Parse: neutron.ParseCloud, NewBackend: fc.newBackend, TTL: 10 * time.Millisecond}})
	defer func() { cancel(); <-done }()
	waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	a, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	thief := credNetwork("b", "thief", "u2", "10.1.0.0/24", credsRef("creds"))
	thief.Spec.Gateway = "10.1.0.254"
	thief.Spec.Import = &samplecrdv1.NetworkImport{NetworkID: a.Status.NetworkID}
	if err := client.Tracker().Add(thief); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, client, "b", "thief", metav1.ConditionFalse, samplecrdv1.ReasonBackendRejected)
	markDeleted(ctx, t, client, "b", "thief")
	waitReleased(ctx, t, client, "b", "thief")
	p1 := fc.project("p1")
	if objs := p1.Objects(); len(objs) != 1 || objs[0].UID != "u1" || objs[0].Gateway != "10.1.0.1" {
		t.Fatalf("project-p1 holds %+v, want a/n's network untouched", objs)
	}
	sec.mu.Lock()
	delete(sec.m, types.NamespacedName{Namespace: "a", Name: "creds"})
	sec.mu.Unlock()
	markDeleted(ctx, t, client, "a", "n")
	waitReleased(ctx, t, client, "a", "n")
	if objs := p1.Objects(); len(objs) != 0 {
		t.Errorf("project-p1 holds %+v, want a/n's network deleted through the shared entry", objs)
	}
}

// countingSecrets counts the reads of each Secret.
type countingSecrets struct {
	*secrets
	mu    sync.Mutex
	count map[string]int
}

func (s *countingSecrets) get(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	s.mu.Lock()
	s.count[ns+"/"+name]++
	s.mu.Unlock()
	return s.secrets.get(ctx, ns, name)
}

func (s *countingSecrets) reads(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[key]
}

// A Network refused with CredentialsProjectChanged is looked at again
// after PermanentRetry (or an edit). After a restart, though, the scans
// of the other project's cloud count it as theirs (it resolved there, it
// is bound nowhere) and find its network "missing": every scan re-syncs
// it (and logs "Backend network missing ... re-syncing"), past its retry
// delay.
func TestProjectChangedNotResyncedByScans(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := &countingSecrets{secrets: &secrets{m: map[types.NamespacedName]map[string][]byte{}}, count: map[string]int{}}
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	fc := &projectClouds{projects: map[string]*memory.Backend{}}
	client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
	opts := network.Options{Backend: memory.New(), GCInterval: 10 * time.Millisecond, DownRetry: 5 * time.Millisecond, DownRetryMax: 10 * time.Millisecond,
		PermanentRetry: time.Hour,
		Credentials:    &network.Credentials{GetSecret: sec.get, Parse: neutron.ParseCloud, NewBackend: fc.newBackend, TTL: time.Millisecond}}
	ctx1, stop1 := context.WithCancel(ctx)
	defer stop1()
	done1 := runControllerWith(ctx1, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
	waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	stop1()
	<-done1
	sec.set("a", "creds", cloudsYAML("openstack", "p2-a"))
	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
	defer func() { cancel(); <-done }()
	waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)
	// Each sync reads the Secret (its TTL is 1ms): the reads count them.
	reads, lists := sec.reads("a/creds"), fc.project("p2").Stats().Lists
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return fc.project("p2").Stats().Lists >= lists+30, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := sec.reads("a/creds") - reads; got > 2 {
		t.Errorf("n synced %d times over 30 scans of project-p2's entry, want none before PermanentRetry (1h)", got)
	}
}

// The same Network of before the binding, deleted after the restart: its
// deletion runs in project-p2, finds nothing there, and reports
// BackendDeleted "in project project-p2"; its network in project-p1 is
// left behind silently (no BackendLeftBehind, no metric), where deletion
// is promised never to leave anything unreported.
func TestLegacyNetworkDeletedInItsProject(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", credsRef("creds")))
	opts := network.Options{Backend: memory.New(), GCInterval: 20 * time.Millisecond,
		DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
		Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)}
	ctx1, stop1 := context.WithCancel(ctx)
	defer stop1()
	done1 := runControllerWith(ctx1, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
	waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	stop1()
	<-done1
	got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.ProjectID = "" // as a manager of before the binding left it
	if _, err := client.SamplecrdV1().Networks("a").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec.set("a", "creds", cloudsYAML("openstack", "p2-a"))
	markDeleted(ctx, t, client, "a", "n")

	recorder := record.NewFakeRecorder(100)
	before := metricValue(t, "controller_network_left_behind_total", "", "")
	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), recorder, opts)
	defer func() { cancel(); <-done }()
	// Released, or held with a condition saying why.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(n.Status.Conditions, samplecrdv1.ConditionReady)
		return len(n.Finalizers) == 0 || (cond != nil && cond.Reason != samplecrdv1.ReasonProvisioned), nil
	}); err != nil {
		t.Fatal(err)
	}
	events := eventsUntil(ctx, recorder, network.ReasonDeleted, network.ReasonLeftBehind, samplecrdv1.ReasonCredentialsProjectChanged)
	p1 := fakeClouds.backend("p1-a")
	if len(p1.Objects()) == 1 && !hasEvent(events, network.ReasonLeftBehind) &&
		metricValue(t, "controller_network_left_behind_total", "", "")-before == 0 {
		t.Errorf("n's network %+v is still in project-p1, unreported: Events %q", p1.Objects(), events)
	}
}
