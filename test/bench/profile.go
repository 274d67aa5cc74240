package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// profiled starts the manager's CPU profile (its --profiling endpoint) for
// the expected length of a cold start at create rate l, written to
// <CPUProfileDir>/<name>.pprof, then its allocation profile
// (<name>.allocs.pprof); wait returns once both are written. Without
// CPUProfileDir it does nothing.
func (r *run) profiled(ctx context.Context, mgr *managerProcess, name string, l float64) (wait func() error) {
	if r.cfg.CPUProfileDir == "" {
		return func() error { return nil }
	}
	// The profile covers the cold start with room to spare; what follows it
	// is idle and adds next to nothing.
	seconds := int(math.Ceil(2*float64(r.cfg.N)/l)) + 3
	url := strings.TrimSuffix(mgr.metricsURL, "/metrics") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds)
	allocs := strings.TrimSuffix(mgr.metricsURL, "/metrics") + "/debug/pprof/allocs"
	done := make(chan error, 1)
	go func() {
		// Then what the process allocated since it started (the garbage the
		// collector's share of the CPU is paid for).
		err := fetchTo(ctx, url, filepath.Join(r.cfg.CPUProfileDir, name+".pprof"), time.Duration(seconds+30)*time.Second)
		if err == nil {
			err = fetchTo(ctx, allocs, filepath.Join(r.cfg.CPUProfileDir, name+".allocs.pprof"), 30*time.Second)
		}
		done <- err
	}()
	return func() error { return <-done }
}

// fetchTo writes what url answers to path, within timeout.
func fetchTo(ctx context.Context, url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	// The endpoint answers once the manager listens; it starts at once.
	var resp *http.Response
	for {
		if resp, err = http.DefaultClient.Do(req); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
