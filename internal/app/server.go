package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/kube-sample/controller-manager/internal/controller"
)

// health serves /healthz (the process is alive and, when leading, renewing
// its lease) and /readyz (every enabled controller's caches have synced;
// true for a leader-election standby too, whose caches are kept warm).
type health struct {
	controllers []controller.Interface
	leader      *leaderelection.HealthzAdaptor // nil without leader election
}

func (h *health) unsynced() []string {
	var names []string
	for _, c := range h.controllers {
		if !c.HasSynced() {
			names = append(names, c.Name())
		}
	}
	sort.Strings(names)
	return names
}

func (h *health) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if h.leader != nil {
			if err := h.leader.Check(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if names := h.unsynced(); len(names) > 0 {
			http.Error(w, "caches not synced: "+strings.Join(names, ", "), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// metricsHandler serves /metrics and, with profiling, Go's profiles at
// /debug/pprof/ (as kube-controller-manager's --profiling does).
func metricsHandler(profiling bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// newServers prepares the metrics and health servers and binds their
// listeners.
func (m *Manager) newServers(ctx context.Context) error {
	sc := &m.config.Servers
	var err error
	m.metricsHandler = metricsHandler(sc.Profiling)
	if !sc.MetricsSecure && sc.MetricsBindAddress != "0" && !isLoopback(sc.MetricsBindAddress) {
		klog.FromContext(ctx).Info("Warning: --metrics-secure=false serves /metrics in plain HTTP to anyone who can connect; use it on 127.0.0.1 only", "address", sc.MetricsBindAddress)
	}
	if sc.MetricsSecure && sc.MetricsBindAddress != "0" {
		if m.metricsHandler, err = withAuthnAuthz(ctx, m.client.authentication, m.client.authorization, m.metricsHandler); err != nil {
			return err
		}
		if m.metricsTLS, m.runMetricsTLS, err = servingTLSConfig(ctx, sc.TLSCertFile, sc.TLSPrivateKeyFile); err != nil {
			return err
		}
	}
	if m.metricsLn, err = listen(ctx, sc.MetricsBindAddress); err != nil {
		return fmt.Errorf("--metrics-bind-address: %w", err)
	}
	if m.healthLn, err = listen(ctx, sc.HealthProbeBindAddress); err != nil {
		m.closeListeners()
		return fmt.Errorf("--health-probe-bind-address: %w", err)
	}
	return nil
}

// isLoopback reports whether the (validated) bind address addr listens on
// loopback only.
func isLoopback(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listen(ctx context.Context, addr string) (net.Listener, error) {
	if addr == "0" {
		return nil, nil
	}
	return (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
}

func (m *Manager) closeListeners() {
	for _, ln := range []net.Listener{m.metricsLn, m.healthLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// MetricsAddress is the bound metrics address ("" when disabled).
func (m *Manager) MetricsAddress() string { return addrOf(m.metricsLn) }

// HealthAddress is the bound health probe address ("" when disabled).
func (m *Manager) HealthAddress() string { return addrOf(m.healthLn) }

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// serveOn serves h on ln until ctx is done: over TLS when tlsConfig is set.
func serveOn(ctx context.Context, wg *sync.WaitGroup, name string, ln net.Listener, h http.Handler, tlsConfig *tls.Config) {
	if ln == nil {
		return
	}
	wg.Go(func() {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		logger := klog.FromContext(ctx)
		scheme := "http"
		if tlsConfig != nil {
			scheme = "https"
			ln = tls.NewListener(ln, tlsConfig)
		}
		logger.Info("Serving", "server", name, "address", ln.Addr().String(), "scheme", scheme)
		stop := context.AfterFunc(ctx, func() {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
		})
		defer stop()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server failed", "server", name)
		}
	})
}
