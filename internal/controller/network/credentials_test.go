package network_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller"
	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// secrets is a fake of the API server's Secrets: what GetSecret reads.
type secrets struct {
	mu    sync.Mutex
	m     map[types.NamespacedName]map[string][]byte
	reads int
	last  time.Time
}

// idleFor reports whether no Secret was read for d.
func (s *secrets) idleFor(d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.last) > d
}

func newSecrets() *secrets { return &secrets{m: map[types.NamespacedName]map[string][]byte{}} }

func (s *secrets) set(ns, name string, data map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[types.NamespacedName{Namespace: ns, Name: name}] = data
}

func (s *secrets) get(_ context.Context, ns, name string) (*corev1.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	s.last = time.Now()
	d, ok := s.m[types.NamespacedName{Namespace: ns, Name: name}]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: d}, nil
}

// clouds is a fake of Keystone for Credentials.NewBackend: a memory
// backend per cloud entry, by the entry's password; "refused" is refused.
type clouds struct {
	mu       sync.Mutex
	backends map[string]*memory.Backend // by password
	connects int
	// tries counts the connects by password.
	tries map[string]int
}

func (f *clouds) newBackend(_ context.Context, cfg network.CloudConfig) (network.Backend, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connects++
	pw := cfg.Config.(neutron.Cloud).AuthOptions.Password
	if f.tries == nil {
		f.tries = map[string]int{}
	}
	f.tries[pw]++
	if strings.HasPrefix(pw, "refused") {
		return nil, &network.Error{Op: "authenticating", Reason: samplecrdv1.ReasonCredentialsRefused, Down: true,
			Err: fmt.Errorf("Keystone refused %s", cfg.Description)}
	}
	b, ok := f.backends[pw]
	if !ok {
		// Each password's project is named by what precedes its first
		// dash: "p1-a" and "p1-b" act in one project, "p2-a" in another.
		project, _, _ := strings.Cut(pw, "-")
		b = memory.New(memory.WithProject("project-" + project))
		f.backends[pw] = b
	}
	return b, nil
}

// credentials turns on the Networks' own credentials, read with get and
// parsed as the manager does, connected through f.
func (f *clouds) credentials(get func(context.Context, string, string) (*corev1.Secret, error), ttl time.Duration) *network.Credentials {
	return &network.Credentials{GetSecret: get, Parse: neutron.ParseCloud, NewBackend: f.newBackend, TTL: ttl}
}

func (f *clouds) triesOf(pw string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries[pw]
}

func (f *clouds) backend(pw string) *memory.Backend {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.backends[pw]
}

func cloudsYAML(cloud, password string) map[string][]byte {
	return map[string][]byte{samplecrdv1.CloudCredentialsKey: fmt.Appendf(nil, `clouds:
  %s:
    auth:
      auth_url: http://keystone.example:5000/v3
      username: team
      password: %s
      project_name: team
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
`, cloud, password)}
}

func credNetwork(ns, name, uid, cidr string, ref *samplecrdv1.CloudCredentialsRef) *samplecrdv1.Network {
	n := &samplecrdv1.Network{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       samplecrdv1.NetworkSpec{CIDR: cidr, Gateway: strings.TrimSuffix(cidr, "0/24") + "1", CloudCredentialsRef: ref},
	}
	n.ResourceVersion = "1"
	return n
}

func waitCondition(ctx context.Context, t *testing.T, client *fake.Clientset, ns, name string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.SamplecrdV1().Networks(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond = meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady)
		return cond != nil && cond.Status == status && cond.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("%s/%s Ready = %+v, want %s %s", ns, name, cond, status, reason)
	}
	return cond
}

// Bad credentials reach only the Networks that use them, as a condition
// saying what to fix; the Networks of other Secrets, and of the manager's
// own cloud, converge beside them, each in its own backend.
func TestBadCredentialsReachOnlyTheirNetworks(t *testing.T) {
	ref := func(secret, cloud string) *samplecrdv1.CloudCredentialsRef {
		return &samplecrdv1.CloudCredentialsRef{SecretName: secret, CloudName: cloud}
	}
	for _, tc := range []struct {
		name    string
		secret  map[string][]byte // of Secret "bad" in namespace "bad"
		ref     *samplecrdv1.CloudCredentialsRef
		off     bool
		reason  string
		message string
	}{
		{name: "a missing Secret", ref: ref("bad", "openstack"), reason: samplecrdv1.ReasonCredentialsNotFound, message: "Secret bad not found in namespace bad"},
		{name: "another namespace's Secret is not looked up", ref: ref("good", "openstack"), reason: samplecrdv1.ReasonCredentialsNotFound, message: "Secret good not found in namespace bad"},
		{name: "a Secret without clouds.yaml", secret: map[string][]byte{"other": []byte("x")}, ref: ref("bad", "openstack"),
			reason: samplecrdv1.ReasonCredentialsNotFound, message: "has no key clouds.yaml"},
		{name: "no such cloud entry", secret: cloudsYAML("openstack", "pw-bad"), ref: ref("bad", "nope"),
			reason: samplecrdv1.ReasonCredentialsNotFound, message: `clouds.yaml has no cloud "nope" (it has "openstack")`},
		{name: "unparsable YAML, whose content is never quoted", secret: map[string][]byte{samplecrdv1.CloudCredentialsKey: []byte("clouds:\n  openstack: {auth: {password: hunter2-secret\n")},
			ref: ref("bad", "openstack"), reason: samplecrdv1.ReasonCredentialsInvalid, message: "clouds.yaml does not parse"},
		{name: "an entry naming files of the manager's disk", secret: map[string][]byte{samplecrdv1.CloudCredentialsKey: []byte("clouds: {openstack: {cacert: /etc/openstack/ca.crt, auth: {auth_url: http://k/v3}}}")},
			ref: ref("bad", "openstack"), reason: samplecrdv1.ReasonCredentialsInvalid, message: "names files (cacert)"},
		{name: "an entry without a password", secret: map[string][]byte{samplecrdv1.CloudCredentialsKey: []byte("clouds: {openstack: {auth: {auth_url: http://k/v3, username: u, project_name: p, user_domain_name: Default, project_domain_name: Default}}}")},
			ref: ref("bad", "openstack"), reason: samplecrdv1.ReasonCredentialsInvalid, message: "lacks auth.password"},
		{name: "credentials Keystone refuses", secret: cloudsYAML("openstack", "refused"), ref: ref("bad", "openstack"),
			reason: samplecrdv1.ReasonCredentialsRefused, message: "Keystone refused its credentials"},
		{name: "credentials without the flag", off: true, secret: cloudsYAML("openstack", "pw-bad"), ref: ref("bad", "openstack"),
			reason: samplecrdv1.ReasonCredentialsNotEnabled, message: "--network-credentials-from-secrets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sec := newSecrets()
			sec.set("good", "good", cloudsYAML("openstack", "pw-good"))
			if tc.secret != nil {
				sec.set("bad", "bad", tc.secret)
			}
			fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
			bad := credNetwork("bad", "bad", "u-bad", "10.1.0.0/24", tc.ref)
			good := credNetwork("good", "good", "u-good", "10.2.0.0/24", ref("good", "openstack"))
			own := credNetwork("own", "own", "u-own", "10.3.0.0/24", nil)
			client := fake.NewClientset(bad, good, own)
			factory := externalversions.NewSharedInformerFactory(client, 0)
			recorder := record.NewFakeRecorder(100)
			def := memory.New()
			opts := network.Options{Backend: def, DownRetry: 10 * time.Millisecond, DownRetryMax: 50 * time.Millisecond}
			if !tc.off {
				opts.Credentials = fakeClouds.credentials(sec.get, time.Minute)
			}
			done := runControllerWith(ctx, t, client, factory, recorder, opts)

			cond := waitCondition(ctx, t, client, "bad", "bad", metav1.ConditionFalse, tc.reason)
			if !strings.Contains(cond.Message, tc.message) {
				t.Errorf("message %q does not say %q", cond.Message, tc.message)
			}
			if strings.Contains(cond.Message, "hunter2") || strings.Contains(cond.Message, "pw-") || strings.Contains(cond.Message, "refused\"") {
				t.Errorf("message %q quotes the Secret's content", cond.Message)
			}
			if tc.off {
				waitCondition(ctx, t, client, "own", "own", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
				waitCondition(ctx, t, client, "good", "good", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsNotEnabled)
			} else {
				waitCondition(ctx, t, client, "good", "good", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
				waitCondition(ctx, t, client, "own", "own", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			}
			cancel()
			<-done
			if got := def.Objects(); len(got) != 1 || got[0].UID != "u-own" {
				t.Errorf("the manager's own backend holds %+v, want the Network without credentials only", got)
			}
			if b := fakeClouds.backend("pw-good"); !tc.off && (b == nil || len(b.Objects()) != 1 || b.Objects()[0].UID != "u-good") {
				t.Errorf("the good Secret's backend is %v, want it to hold the good Network", b)
			}
			if b := fakeClouds.backend("pw-bad"); b != nil && b.Stats().Writes() != 0 {
				t.Errorf("the bad Secret's backend saw %+v, want no write", b.Stats())
			}
		})
	}
}

// One backend per distinct cloud entry, whatever Secret holds it; an edited
// Secret takes effect without a restart; an entry no Network uses any more
// is forgotten.
func TestOneBackendPerEntrySecretChangesAndEviction(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "pw-1"))
	sec.set("b", "same", cloudsYAML("openstack", "pw-1"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	ref := func(s string) *samplecrdv1.CloudCredentialsRef {
		return &samplecrdv1.CloudCredentialsRef{SecretName: s, CloudName: "openstack"}
	}
	client := fake.NewClientset(
		credNetwork("a", "n1", "u1", "10.1.0.0/24", ref("creds")),
		credNetwork("a", "n2", "u2", "10.2.0.0/24", ref("creds")),
		credNetwork("b", "n3", "u3", "10.3.0.0/24", ref("same")))
	factory := externalversions.NewSharedInformerFactory(client, 0)
	c, err := network.New(ctx, &controller.Context{
		SampleClient: client, SampleInformerFactory: factory, FieldManager: "test",
		EventRecorder: func(string) record.EventRecorder { return record.NewFakeRecorder(100) },
	}, network.Options{Backend: memory.New(), GCInterval: 20 * time.Millisecond,
		Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 2) }()
	defer func() { cancel(); <-done }()
	for _, n := range []struct{ ns, name string }{{"a", "n1"}, {"a", "n2"}, {"b", "n3"}} {
		waitCondition(ctx, t, client, n.ns, n.name, metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	}
	fakeClouds.mu.Lock()
	connects := fakeClouds.connects
	fakeClouds.mu.Unlock()
	if connects != 1 || len(c.CloudKeys()) != 1 || len(fakeClouds.backend("pw-1").Objects()) != 3 {
		t.Fatalf("%d connects, %d clouds held, want 1 for 3 Networks of two Secrets with the same entry", connects, len(c.CloudKeys()))
	}

	// Another entry in Secret a/creds: a new Network there uses it, once
	// the last read is a TTL old, without a restart.
	sec.set("a", "creds", cloudsYAML("openstack", "pw-2"))
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return sec.idleFor(20 * time.Millisecond), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := client.Tracker().Add(credNetwork("a", "n4", "u4", "10.4.0.0/24", ref("creds"))); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, client, "a", "n4", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	if b := fakeClouds.backend("pw-2"); b == nil || len(b.Objects()) != 1 || b.Objects()[0].UID != "u4" {
		t.Fatalf("the edited entry's backend is %v, want it to hold n4", b)
	}

	// Every Network of the second entry gone: it is forgotten.
	if err := client.Tracker().Delete(samplecrdv1.SchemeGroupVersion.WithResource("networks"), "a", "n4"); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(c.CloudKeys()) == 1, nil
	}); err != nil {
		t.Fatalf("clouds held: %d, want the one the other Networks use", len(c.CloudKeys()))
	}
}

// Deleting a Network is bounded, whatever state its credentials are in:
// one whose credentials never reached a project (refused from the start,
// a Secret gone with its namespace) is released at once; one whose
// backend network no cloud can reach any more is released with it left
// behind, named in a Warning Event and counted; one whose own project's
// cloud refuses it waits (a password its owner may fix), until its Secret
// goes with its namespace.
func TestDeletingWithoutCredentials(t *testing.T) {
	for _, tc := range []struct {
		name       string
		secret     map[string][]byte // of a/creds, nil for none
		recorded   bool              // the status records a network in project-p1
		waits      string            // the Ready reason it waits with, until the Secret is deleted
		event      string            // the Event of its release
		leftBehind bool
	}{
		{name: "credentials Keystone refused from the start, the Secret still there", secret: cloudsYAML("openstack", "refused"), event: network.ReasonReleased},
		{name: "credentials that never worked, the Secret gone", event: network.ReasonReleased},
		{name: "a recorded backend network, the Secret gone: left behind, reported", recorded: true, event: network.ReasonLeftBehind, leftBehind: true},
		{name: "a recorded backend network, credentials refused: waits, then the Secret goes", recorded: true, secret: cloudsYAML("openstack", "refused"),
			waits: samplecrdv1.ReasonCredentialsRefused, event: network.ReasonLeftBehind, leftBehind: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			now := metav1.Now()
			obj := credNetwork("a", "n", "u1", "10.1.0.0/24", &samplecrdv1.CloudCredentialsRef{SecretName: "creds", CloudName: "openstack"})
			obj.Finalizers, obj.DeletionTimestamp = []string{network.Finalizer}, &now
			if tc.recorded {
				obj.Status.NetworkID, obj.Status.SubnetID, obj.Status.ProjectID = "net-1", "subnet-1", "project-p1"
			}
			client := fake.NewClientset(obj)
			factory := externalversions.NewSharedInformerFactory(client, 0)
			sec := newSecrets()
			if tc.secret != nil {
				sec.set("a", "creds", tc.secret)
			}
			fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
			recorder := record.NewFakeRecorder(100)
			before := metricValue(t, "controller_network_left_behind_total", "", "")
			done := runControllerWith(ctx, t, client, factory, recorder, network.Options{Backend: memory.New(),
				DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
				Credentials: fakeClouds.credentials(sec.get, time.Minute)})
			defer func() { cancel(); <-done }()
			if tc.waits != "" {
				waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, tc.waits)
				if got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{}); err != nil || len(got.Finalizers) != 1 {
					t.Fatalf("Network = %v, %v: want it held while its credentials may be fixed", got, err)
				}
				// The namespace goes: its Secret first.
				sec.mu.Lock()
				delete(sec.m, types.NamespacedName{Namespace: "a", Name: "creds"})
				sec.mu.Unlock()
			}
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
				return err == nil && len(got.Finalizers) == 0, err
			}); err != nil {
				t.Fatalf("the finalizer was not released: %v", err)
			}
			// The Event and the metric follow the release.
			var events []string
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				for len(recorder.Events) > 0 {
					events = append(events, <-recorder.Events)
				}
				return slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, " "+tc.event+" ") }), nil
			}); err != nil {
				t.Fatalf("Events %q, want one %s", events, tc.event)
			}
			for _, e := range events {
				if strings.Contains(e, " "+tc.event+" ") && tc.leftBehind && (!strings.HasPrefix(e, "Warning") || !strings.Contains(e, "network net-1, subnet subnet-1 in project project-p1")) {
					t.Errorf("Event %q does not name what was left where", e)
				}
			}
			if got := metricValue(t, "controller_network_left_behind_total", "", "") - before; tc.leftBehind != (got == 1) {
				t.Errorf("controller_network_left_behind_total grew by %v, want 1 only when left behind", got)
			}
		})
	}
}

// A Network is bound to the project it was provisioned in: its Secret
// pointed at another project creates nothing there (no second network,
// CredentialsProjectChanged), and deleting it with onDelete: Detach
// detaches the network in its own project, through the cloud that still
// holds it, so that no garbage collection deletes what the user kept.
func TestSecretPointedAtAnotherProject(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	// Another Network keeps the first project's cloud (and its garbage
	// collection) going.
	sec.set("a", "same", cloudsYAML("openstack", "p1-a"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	obj := credNetwork("a", "n", "u1", "10.1.0.0/24", &samplecrdv1.CloudCredentialsRef{SecretName: "creds", CloudName: "openstack"})
	obj.Spec.OnDelete = samplecrdv1.OnDeleteDetach
	client := fake.NewClientset(obj, credNetwork("a", "other", "u2", "10.2.0.0/24", &samplecrdv1.CloudCredentialsRef{SecretName: "same", CloudName: "openstack"}))
	factory := externalversions.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	done := runControllerWith(ctx, t, client, factory, recorder, network.Options{Backend: memory.New(), GCInterval: 20 * time.Millisecond,
		Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)})
	defer func() { cancel(); <-done }()
	waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
	if err != nil || got.Status.ProjectID != "project-p1" {
		t.Fatalf("status.projectID = %q (%v), want project-p1", got.Status.ProjectID, err)
	}

	sec.set("a", "creds", cloudsYAML("openstack", "p2-a"))
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return sec.idleFor(20 * time.Millisecond), nil
	}); err != nil {
		t.Fatal(err)
	}
	got.Labels = map[string]string{"edited": "yes"} // an edit syncs it
	if _, err := client.SamplecrdV1().Networks("a").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)
	if !strings.Contains(cond.Message, "project project-p1") {
		t.Errorf("message %q does not name the project it is bound to", cond.Message)
	}
	if b := fakeClouds.backend("p2-a"); b != nil && b.Stats().Writes() != 0 {
		t.Errorf("the other project's backend saw %+v, want no write", b.Stats())
	}

	got, err = client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	got.DeletionTimestamp = &now
	if _, err := client.SamplecrdV1().Networks("a").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.SamplecrdV1().Networks("a").Get(ctx, "n", metav1.GetOptions{})
		return err == nil && len(got.Finalizers) == 0, err
	}); err != nil {
		t.Fatalf("the finalizer was not released: %v", err)
	}
	if err := client.SamplecrdV1().Networks("a").Delete(ctx, "n", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Scans of the first project's cloud run every 20ms: it is kept.
	p1 := fakeClouds.backend("p1-a")
	lists := p1.Stats().Lists
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return p1.Stats().Lists >= lists+3, nil
	}); err != nil {
		t.Fatal(err)
	}
	var kept []memory.Object
	for _, o := range p1.Objects() {
		if o.CIDR == "10.1.0.0/24" {
			kept = append(kept, o)
		}
	}
	if p1.Stats().Deletes != 0 || len(kept) != 1 || kept[0].Owned {
		t.Errorf("project-p1 holds %+v (%+v), want n's network kept, detached", kept, p1.Stats())
	}
	var detached bool
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.Contains(e, network.ReasonDetached) {
			detached = strings.Contains(e, "in project project-p1")
		}
	}
	if !detached {
		t.Errorf("no BackendDetached Event naming project-p1")
	}
}

// A Secret fixed (or rotated) while Keystone refuses its old entry: its
// Networks go on with the new entry, and the old one makes no more
// requests (a Keystone with account lockout would count each against the
// user just rotated).
func TestRotatedEntryStopsProbing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "refused"))
	// Another Network's entry, refused all along: its probes are the
	// clock the old entry's are compared with.
	sec.set("b", "creds", cloudsYAML("openstack", "refused-b"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	client := fake.NewClientset(credNetwork("a", "n", "u1", "10.1.0.0/24", &samplecrdv1.CloudCredentialsRef{SecretName: "creds", CloudName: "openstack"}),
		credNetwork("b", "n", "u2", "10.2.0.0/24", &samplecrdv1.CloudCredentialsRef{SecretName: "creds", CloudName: "openstack"}))
	factory := externalversions.NewSharedInformerFactory(client, 0)
	done := runControllerWith(ctx, t, client, factory, record.NewFakeRecorder(100), network.Options{Backend: memory.New(),
		GCInterval: time.Hour, DownRetry: 5 * time.Millisecond, DownRetryMax: 10 * time.Millisecond,
		Credentials: fakeClouds.credentials(sec.get, time.Minute)})
	defer func() { cancel(); <-done }()
	waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	waitCondition(ctx, t, client, "a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	// While the other entry is probed 10 times, the old one's probes
	// have stopped (one may have been under way).
	refused, clock := fakeClouds.triesOf("refused"), fakeClouds.triesOf("refused-b")
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return fakeClouds.triesOf("refused-b") >= clock+10, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := fakeClouds.triesOf("refused") - refused; got > 1 {
		t.Errorf("the old entry was tried %d more times after its Network moved on, want none", got)
	}
}

// After a restart, a cloud entry's bound Unmanaged Networks are read by
// its scans' Observe, in one call, not imported one by one as each first
// syncs: every Network of the Secret is the entry's from its first scan.
func TestRestartObservesTenantUnmanagedInBatches(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sec := newSecrets()
	sec.set("a", "creds", cloudsYAML("openstack", "p1-a"))
	mem := memory.New(memory.WithProject("project-p1"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{"p1-a": mem}}
	const n = 50
	var objs []runtime.Object
	for i := range n {
		id := mem.AddForeign(fmt.Sprintf("provider-%d", i), fmt.Sprintf("172.23.%d.0/24", i), fmt.Sprintf("172.23.%d.1", i))
		obj := credNetwork("a", fmt.Sprintf("obs-%d", i), fmt.Sprintf("u%d", i), "", &samplecrdv1.CloudCredentialsRef{SecretName: "creds", CloudName: "openstack"})
		obj.Spec = samplecrdv1.NetworkSpec{ManagementPolicy: samplecrdv1.ManagementPolicyUnmanaged, Import: &samplecrdv1.NetworkImport{NetworkID: id},
			CloudCredentialsRef: obj.Spec.CloudCredentialsRef}
		obj.Finalizers = []string{network.Finalizer}
		obj.Status.NetworkID, obj.Status.ProjectID = id, "project-p1" // bound before the restart
		objs = append(objs, obj)
	}
	client := fake.NewClientset(objs...)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	done := runControllerWith(ctx, t, client, factory, record.NewFakeRecorder(1000), network.Options{Backend: memory.New(),
		Credentials: fakeClouds.credentials(sec.get, time.Minute)})
	defer func() { cancel(); <-done }()
	for i := range n {
		waitCondition(ctx, t, client, "a", fmt.Sprintf("obs-%d", i), metav1.ConditionTrue, samplecrdv1.ReasonObserved)
	}
	// The first sync may come before the entry's first scan: it imports
	// its own network; a second may be under way. No more.
	if got := mem.Stats().Gets; got > 2 {
		t.Errorf("%d Unmanaged Networks of one entry took %d one-by-one reads (and %d Lists), want their scan's one Observe", n, got, mem.Stats().Lists)
	}
}

// A cloud of the Networks' own credentials that hangs (every request
// slower than anything waits for) holds at most half the workers: the
// Networks of the manager's own cloud are still reconciled beside it.
func TestHangingCloudLeavesWorkersToOthers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	sec := newSecrets()
	sec.set("slow", "creds", cloudsYAML("openstack", "p1-slow"))
	hanging := memory.New(memory.WithProject("project-p1"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{"p1-slow": hanging}}
	var objs []runtime.Object
	for i := range 8 {
		objs = append(objs, credNetwork("slow", fmt.Sprintf("n%d", i), fmt.Sprintf("u%d", i), fmt.Sprintf("10.1.%d.0/24", i), &samplecrdv1.CloudCredentialsRef{SecretName: "creds", CloudName: "openstack"}))
	}
	client := fake.NewClientset(objs...)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	c, err := network.New(ctx, &controller.Context{
		SampleClient: client, SampleInformerFactory: factory, FieldManager: "test",
		EventRecorder: func(string) record.EventRecorder { return record.NewFakeRecorder(100) },
	}, network.Options{Backend: memory.New(),
		Credentials: fakeClouds.credentials(sec.get, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 4) }()
	unblock := make(chan struct{})
	defer func() { close(unblock); cancel(); <-done }()
	for i := range 8 {
		waitCondition(ctx, t, client, "slow", fmt.Sprintf("n%d", i), metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	}
	// Then every request of the tenant's cloud hangs: each slow Network
	// edited (its gateway moved) waits for it.
	var hung atomic.Int32
	hanging.SetFault(func(ctx context.Context, _ memory.Op, _ types.UID) error {
		hung.Add(1)
		select {
		case <-unblock:
		case <-ctx.Done():
		}
		return errors.New("hung up")
	})
	for i := range 8 {
		got, err := client.SamplecrdV1().Networks("slow").Get(ctx, fmt.Sprintf("n%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Spec.Gateway = fmt.Sprintf("10.1.%d.254", i)
		got.Generation++
		if _, err := client.SamplecrdV1().Networks("slow").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return hung.Load() >= 2, nil
	}); err != nil {
		t.Fatal("the edits never reached the hanging cloud")
	}
	// A Network of the manager's own cloud, after them: reconciled.
	if err := client.Tracker().Add(credNetwork("own", "own", "u-own", "10.9.0.0/24", nil)); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, client, "own", "own", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
}

// What the alerts on tenant clouds read: controller_network_cloud_up is 0
// for a cloud entry whose credentials Keystone refuses, in the namespace of
// its Secret, and 1 for one that answers; controller_networks counts the
// Networks of each namespace by Ready reason. Both go once the controller
// stops (a standby reports neither). The namespaces are this test's own.
func TestTenantCloudAndReadyMetrics(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ref := &samplecrdv1.CloudCredentialsRef{SecretName: "creds", CloudName: "openstack"}
	sec := newSecrets()
	sec.set("metrics-refused", "creds", cloudsYAML("openstack", "refused-metrics"))
	sec.set("metrics-good", "creds", cloudsYAML("openstack", "pm-good"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	client := fake.NewClientset(
		credNetwork("metrics-refused", "a", "u-mr-a", "10.4.0.0/24", ref),
		credNetwork("metrics-refused", "b", "u-mr-b", "10.4.1.0/24", ref),
		credNetwork("metrics-good", "c", "u-mg-c", "10.5.0.0/24", ref),
	)
	const backend = "tenant-metrics-test"
	opts := network.Options{Backend: memory.New(), BackendName: backend, DownRetry: 10 * time.Millisecond, DownRetryMax: 50 * time.Millisecond,
		Credentials: fakeClouds.credentials(sec.get, time.Minute)}
	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), opts)
	waitCondition(ctx, t, client, "metrics-good", "c", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	waitCondition(ctx, t, client, "metrics-refused", "a", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)
	waitCondition(ctx, t, client, "metrics-refused", "b", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsRefused)

	for _, want := range []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"controller_network_cloud_up", map[string]string{"backend": backend, "network_namespace": "metrics-refused"}, 0},
		{"controller_network_cloud_up", map[string]string{"backend": backend, "network_namespace": "metrics-good"}, 1},
		{"controller_networks", map[string]string{"network_namespace": "metrics-refused", "ready": "False", "reason": samplecrdv1.ReasonCredentialsRefused}, 2},
		{"controller_networks", map[string]string{"network_namespace": "metrics-good", "ready": "True", "reason": samplecrdv1.ReasonProvisioned}, 1},
	} {
		var got float64
		var present bool
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got, present = metricWith(t, want.name, want.labels)
			return present && got == want.value, nil
		}); err != nil {
			t.Errorf("%s%v = %v (present: %v), want %v", want.name, want.labels, got, present, want.value)
		}
	}
	if _, present := metricWith(t, "controller_network_cloud_up", map[string]string{"backend": backend, "cloud": ""}); present {
		t.Errorf("controller_network_cloud_up reports a cloud without its name")
	}
	cancel()
	<-done
	for _, name := range []string{"controller_network_cloud_up", "controller_networks"} {
		if v, present := metricWith(t, name, map[string]string{"network_namespace": "metrics-refused"}); present {
			t.Errorf("%s{network_namespace=metrics-refused} = %v after the controller stopped, want absent", name, v)
		}
	}
}

// metricWith sums the samples of gauge or counter name whose labels include
// match, and reports whether there was one.
func metricWith(t *testing.T, name string, match map[string]string) (sum float64, found bool) {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			ok := true
			for k, v := range match {
				ok = ok && labels[k] == v
			}
			if ok {
				found = true
				sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return sum, found
}

// A cloud that no Secret resolves to any more (pointed at another
// project, or deleted) but that its Networks are still bound to is
// reported in their namespace: when it goes down, the tenant-cloud alert
// names the namespace whose Networks wait for it (their deletion, their
// return), not an empty one nobody can be told about.
func TestCloudUpNamesTheNamespaceOfItsBoundNetworks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		repointed bool // the Secret points at project-p2, else it is deleted
	}{
		{name: "the Secret now points at another project", repointed: true},
		{name: "the Secret is deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ns := "bound-metrics"
			if tc.repointed {
				ns += "-repointed"
			}
			backend := "bound-metrics-test-" + ns
			sec := newSecrets()
			sec.set(ns, "creds", cloudsYAML("openstack", "p1-a"))
			fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
			client := fake.NewClientset(credNetwork(ns, "n", "u1", "10.1.0.0/24", credsRef("creds")))
			done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), network.Options{
				Backend: memory.New(), BackendName: backend, GCInterval: 20 * time.Millisecond, DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
				Credentials: fakeClouds.credentials(sec.get, 10*time.Millisecond)})
			defer func() { cancel(); <-done }()
			waitCondition(ctx, t, client, ns, "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
			if tc.repointed {
				sec.set(ns, "creds", cloudsYAML("openstack", "p2-a"))
				touchAfterTTL(ctx, t, sec, client, ns, "n")
				waitCondition(ctx, t, client, ns, "n", metav1.ConditionFalse, samplecrdv1.ReasonCredentialsProjectChanged)
			} else {
				sec.mu.Lock()
				delete(sec.m, types.NamespacedName{Namespace: ns, Name: "creds"})
				sec.mu.Unlock()
			}
			// project-p1's password is revoked: its entry, which n is bound
			// to, is down from now on.
			fakeClouds.backend("p1-a").SetFault(func(context.Context, memory.Op, types.UID) error {
				return &network.Error{Op: "authenticating", Reason: samplecrdv1.ReasonCredentialsRefused, Down: true, Err: errors.New("Keystone refused the entry")}
			})
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				_, down := metricWith(t, "controller_network_cloud_up", map[string]string{"backend": backend, "cloud": downCloud(t, backend)})
				return down, nil
			}); err != nil {
				t.Fatal("the bound cloud was never reported down")
			}
			// Its probes run every 10-20ms: several have read the Secrets.
			time.Sleep(100 * time.Millisecond)
			cloud := downCloud(t, backend)
			if _, present := metricWith(t, "controller_network_cloud_up", map[string]string{"backend": backend, "cloud": cloud, "network_namespace": ""}); present {
				t.Errorf("controller_network_cloud_up{cloud=%q} is reported in no namespace, want %s, the namespace of the Network bound to it", cloud, ns)
			}
			if v, present := metricWith(t, "controller_network_cloud_up", map[string]string{"backend": backend, "cloud": cloud, "network_namespace": ns}); !present || v != 0 {
				t.Errorf("controller_network_cloud_up{cloud=%q,network_namespace=%q} = %v (present: %v), want 0", cloud, ns, v, present)
			}
		})
	}
}

// downCloud returns the cloud label of a cloud of backend reported down,
// "" when there is none.
func downCloud(t *testing.T, backend string) string {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_network_cloud_up" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["backend"] == backend && m.GetGauge().GetValue() == 0 {
				return labels["cloud"]
			}
		}
	}
	return ""
}

// A namespace whose Networks are all gone is no longer reported for the
// cloud entry it shared with another namespace (the same clouds.yaml in
// both): no tenant-cloud alert for a namespace with no Network left (or
// deleted), until the next garbage collection forgets its Secret.
func TestCloudUpForgetsANamespaceWithoutNetworks(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const backend = "shared-entry-metrics-test"
	sec := newSecrets()
	sec.set("shared-a", "creds", cloudsYAML("openstack", "p1-a"))
	sec.set("shared-b", "creds", cloudsYAML("openstack", "p1-a"))
	fakeClouds := &clouds{backends: map[string]*memory.Backend{}}
	client := fake.NewClientset(credNetwork("shared-a", "n", "u1", "10.1.0.0/24", credsRef("creds")), credNetwork("shared-b", "m", "u2", "10.2.0.0/24", credsRef("creds")))
	done := runControllerWith(ctx, t, client, externalversions.NewSharedInformerFactory(client, 0), record.NewFakeRecorder(100), network.Options{
		Backend: memory.New(), BackendName: backend, GCInterval: time.Hour, Credentials: fakeClouds.credentials(sec.get, time.Minute)})
	defer func() { cancel(); <-done }()
	waitCondition(ctx, t, client, "shared-a", "n", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	waitCondition(ctx, t, client, "shared-b", "m", metav1.ConditionTrue, samplecrdv1.ReasonProvisioned)
	reported := func(ns string) bool {
		_, present := metricWith(t, "controller_network_cloud_up", map[string]string{"backend": backend, "network_namespace": ns})
		return present
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return reported("shared-a") && reported("shared-b"), nil
	}); err != nil {
		t.Fatal("the shared cloud is not reported in both namespaces")
	}
	markDeleted(ctx, t, client, "shared-a", "n")
	waitReleased(ctx, t, client, "shared-a", "n")
	if err := client.SamplecrdV1().Networks("shared-a").Delete(ctx, "n", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !reported("shared-a"), nil
	}); err != nil {
		t.Errorf("controller_network_cloud_up{network_namespace=shared-a} still reported 5s after its last Network went")
	}
	if !reported("shared-b") {
		t.Errorf("controller_network_cloud_up{network_namespace=shared-b} gone with shared-a's Network")
	}
}
