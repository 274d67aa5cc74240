package app

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/metrics"
)

// runLeaderElected runs the controllers while this replica holds the lease.
// A signal (ctx) drains them; losing the lease stops them at once, also in
// the middle of that drain, and makes Run return ErrLeaderElectionLost.
func (m *Manager) runLeaderElected(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	id := m.config.LeaderElection.Identity
	// The elector gets its own context, cancelled only once the controllers
	// have drained, so that ReleaseOnCancel never hands the lease over while
	// this replica is still writing.
	leCtx, cancelLE := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelLE()
	t := &leadership{started: make(chan struct{}), done: make(chan struct{})}
	le, err := m.newElector(ctx, id, t, cancelLE)
	if err != nil {
		return err
	}
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		le.Run(leCtx)
	}()

	// The elector returns on its own only when renewing failed.
	select {
	case <-ctx.Done():
	case <-electorDone:
	}
	t.wait()
	cancelLE() // releases the lease if held
	<-electorDone
	t.wait() // won the lease in the meantime: its controllers saw ctx done
	if ctx.Err() != nil {
		logger.Info("Stopped")
		return nil
	}
	logger.Error(nil, "Lost the leader lease: stopped every controller; exiting so a new leader takes over alone", "identity", id)
	return ErrLeaderElectionLost
}

// leadership is this replica's time as the leader: started is closed when
// it won the lease, done once its controllers have returned.
type leadership struct{ started, done chan struct{} }

// wait returns once the controllers have returned, at once if they never
// started.
func (t *leadership) wait() {
	select {
	case <-t.started:
		<-t.done
	default:
	}
}

// newElector returns the elector of the Lease, which runs the controllers
// (for t) once it leads. When the lease is lost, it cancels leCtx once the
// controllers have stopped, so that the elector gives the lease up too.
func (m *Manager) newElector(ctx context.Context, id string, t *leadership, cancelLE context.CancelFunc) (*leaderelection.LeaderElector, error) {
	logger := klog.FromContext(ctx)
	le := &m.config.LeaderElection
	lock, err := resourcelock.New(le.ResourceLock,
		le.ResourceNamespace, le.ResourceName,
		m.client.leaderElection.core, m.client.leaderElection.coordination,
		resourcelock.ResourceLockConfig{
			Identity:      id,
			EventRecorder: m.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "controller-manager", Host: id}),
		})
	if err != nil {
		return nil, fmt.Errorf("creating the leader election lock: %w", err)
	}
	var elector *leaderelection.LeaderElector
	elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		WatchDog:        m.health.leader,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				close(t.started)
				defer close(t.done)
				m.watchLease(leadCtx, elector)
				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				defer context.AfterFunc(m.stopNow, cancel)()
				logger.Info("Became leader: starting controllers", "identity", id)
				metrics.SetLeader(true)
				m.runControllers(runCtx)
				if m.stopNow.Err() != nil {
					// Lost: make the elector give up the lease too, now
					// that nothing of this replica writes any more.
					cancelLE()
				}
			},
			OnStoppedLeading: func() {
				metrics.SetLeader(false)
				logger.Info("Stopped leading", "identity", id)
			},
			OnNewLeader: func(current string) {
				if current != id {
					logger.Info("Another replica leads: standing by with warm caches", "leader", current, "identity", id)
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("configuring leader election: %w", err)
	}
	// Only RunOrDie connects the watchdog itself; without this, /healthz
	// would never see the elector.
	m.health.leader.SetLeaderElection(elector)
	return elector, nil
}

// watchLease ends m.stopNow (cause ErrLeaderElectionLost) when leadCtx
// ends, or as soon as le has seen another holder of the lease or has not
// renewed it for --leader-elect-renew-deadline. The elector gives the lease
// up then too, but it ends leadCtx only after its renew deadline and after
// trying to release the lease, which takes up to another renew deadline
// when the API server is unreachable: by then another replica may lead (it
// can once --leader-elect-lease-duration has passed since the last
// renewal), and this one must no longer be writing.
func (m *Manager) watchLease(leadCtx context.Context, le *leaderelection.LeaderElector) {
	o := &m.config.LeaderElection
	go func() {
		tick := time.NewTicker(min(o.RetryPeriod.Duration, 100*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-leadCtx.Done():
				m.loseLeaders(ErrLeaderElectionLost)
				return
			case <-tick.C:
				// Check fails once the last renewal is older than
				// LeaseDuration plus its argument.
				if !le.IsLeader() || le.Check(o.RenewDeadline.Duration-o.LeaseDuration.Duration) != nil {
					klog.FromContext(leadCtx).Info("Lease taken over or not renewed within the renew deadline: stopping the controllers at once",
						"leader", le.GetLeader(), "renewDeadline", o.RenewDeadline.Duration)
					m.loseLeaders(ErrLeaderElectionLost)
					return
				}
			}
		}
	}()
}
