package app

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/metrics/legacyregistry"

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

func metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	return mux
}
