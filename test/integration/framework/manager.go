package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/app"
)

// Manager is a controller manager running in the test process.
type Manager struct {
	*app.Manager
	// Logger holds every line the manager logged.
	Logger klog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	// errExpected: the test checks Run's error itself.
	errExpected bool
	// forbidden records the requests the API server refused with 403.
	forbidden *forbiddenRecorder
	// forbiddenExpected: the test checks Forbidden itself.
	forbiddenExpected bool
}

// Options returns manager options for a test: no metrics server, a health
// server on a free loopback port, short shutdown timeout.
func Options() *app.Options {
	o := app.NewOptions()
	o.MetricsBindAddress = "0"
	o.HealthProbeBindAddress = "127.0.0.1:0"
	o.ShutdownTimeout = 10 * time.Second
	return o
}

// NewLogger returns a logger that writes to t and keeps every line.
func NewLogger(t testing.TB) klog.Logger {
	return ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
}

// StartManager builds and runs a manager with o against cfg. The manager is
// stopped (and must have stopped cleanly) when the test ends, unless the
// test stopped it.
//
// The manager runs as config/default's ServiceAccount, with exactly the RBAC
// of config/default (installed by Main): cfg (usually the admin config,
// possibly wrapped) impersonates it, unless cfg already impersonates someone
// (AsServiceAccount). With leader election in another namespace than the
// manifest's, the manifest's Role and RoleBinding for the Lease are copied
// into o.LeaderElection.ResourceNamespace first. Any request of the manager that the API
// server refuses with 403 Forbidden (a permission config/rbac lacks) fails
// the test when the manager stops, unless the test calls ExpectForbidden.
func StartManager(t testing.TB, cfg *rest.Config, o *app.Options) *Manager {
	t.Helper()
	cfg, err := managerConfig(cfg, o)
	if err != nil {
		t.Fatalf("running the manager as its ServiceAccount: %v", err)
	}
	forbidden := &forbiddenRecorder{}
	cfg = forbidden.wrap(cfg)
	logger := NewLogger(t)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	config, err := o.Complete()
	if err != nil {
		cancel()
		t.Fatalf("completing the options: %v", err)
	}
	m, err := app.NewManager(ctx, config, cfg)
	if err != nil {
		cancel()
		t.Fatalf("creating the manager: %v", err)
	}
	tm := &Manager{Manager: m, Logger: logger, cancel: cancel, done: make(chan struct{}), forbidden: forbidden}
	go func() {
		defer close(tm.done)
		tm.err = m.Run(ctx)
	}()
	t.Cleanup(func() {
		if err := tm.Stop(); err != nil && !tm.errExpected {
			t.Errorf("manager stopped with an error: %v", err)
		}
		if reqs := tm.Forbidden(); len(reqs) > 0 && !tm.forbiddenExpected {
			t.Errorf("the API server refused %d requests of the manager (running as %s) with 403 Forbidden: config/rbac lacks a permission:\n%s",
				len(reqs), cfg.Impersonate.UserName, strings.Join(reqs, "\n"))
		}
	})
	return tm
}

// managerConfig returns cfg impersonating the manager's ServiceAccount
// (unless cfg impersonates someone already) and, with leader election,
// grants the account the manifest's Lease rules in the Lease's namespace.
func managerConfig(cfg *rest.Config, o *app.Options) (*rest.Config, error) {
	if o.LeaderElection.LeaderElect {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := grantLeaseAccess(ctx, setupConfig(cfg), o.LeaderElection.ResourceNamespace); err != nil {
			return nil, err
		}
	}
	if cfg.Impersonate.UserName != "" {
		return cfg, nil
	}
	ns, name, err := ManagerServiceAccount()
	if err != nil {
		return nil, err
	}
	return AsServiceAccount(cfg, ns, name), nil
}

// Stop cancels the manager's context (as SIGTERM does) and waits for Run
// to return, returning its error.
func (m *Manager) Stop() error {
	m.cancel()
	<-m.done
	return m.err
}

// ExpectError tells the cleanup that the test checks Run's error itself.
func (m *Manager) ExpectError() { m.errExpected = true }

// ExpectForbidden tells the cleanup that the test checks Forbidden itself.
func (m *Manager) ExpectForbidden() { m.forbiddenExpected = true }

// Forbidden lists the manager's requests the API server refused with 403
// Forbidden so far ("PATCH /apis/networking.k8s.io/v1/namespaces/ns/ingresses/x").
func (m *Manager) Forbidden() []string { return m.forbidden.list() }

// Done is closed when Run has returned.
func (m *Manager) Done() <-chan struct{} { return m.done }

// Err is Run's result, valid once Done is closed.
func (m *Manager) Err() error { return m.err }

// Logs returns everything the manager logged so far.
func (m *Manager) Logs() string {
	return m.Logger.GetSink().(ktesting.Underlier).GetBuffer().String()
}

// LogLines returns the logged messages (without key/value pairs) in order.
func (m *Manager) LogLines() []ktesting.LogEntry {
	return m.Logger.GetSink().(ktesting.Underlier).GetBuffer().Data()
}

// CountLogs returns how many logged messages contain s.
func (m *Manager) CountLogs(s string) int {
	n := 0
	for _, e := range m.LogLines() {
		if strings.Contains(e.Message, s) {
			n++
		}
	}
	return n
}
