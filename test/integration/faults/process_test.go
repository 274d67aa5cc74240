package faults

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// process is a controller-manager running as a child process.
type process struct {
	*framework.Process
	t testing.TB
}

// startProcess runs the controller-manager binary with args and, besides
// the test's own environment, env. Its stdout and stderr go to a buffer
// (Logs), written to the test log if the test fails. It is killed when the
// test ends if still running.
func startProcess(t testing.TB, name string, env map[string]string, args ...string) *process {
	t.Helper()
	environ := os.Environ()
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	fp, err := framework.StartProcess(name, managerBinary(t), args, framework.ProcessOptions{Env: environ})
	if err != nil {
		t.Fatal(err)
	}
	p := &process{Process: fp, t: t}
	t.Cleanup(func() {
		fp.Kill()
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.Logs())
		}
	})
	return p
}

// managerArgs returns the arguments of a manager in namespace ns with
// kubeconfig, without a metrics server, plus extra.
func managerArgs(kubeconfig, ns string, extra ...string) []string {
	return scrapedManagerArgs(kubeconfig, ns, "0", extra...)
}

// scrapedManagerArgs is managerArgs with the metrics server on
// metricsAddr (over HTTPS, the default, as deployed).
func scrapedManagerArgs(kubeconfig, ns, metricsAddr string, extra ...string) []string {
	return append([]string{
		"--kubeconfig=" + kubeconfig,
		"--namespace=" + ns,
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=127.0.0.1:0",
		"--controllers=ingress-manager,network",
		"--network-backend=neutron",
	}, extra...)
}

// leaderArgs are the leader election flags with short durations.
func leaderArgs(ns, id string) []string {
	return []string{
		"--leader-elect",
		"--leader-elect-resource-namespace=" + ns,
		"--leader-elect-identity=" + id,
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=" + renewDeadline.String(),
		"--leader-elect-retry-period=" + retryPeriod.String(),
	}
}

// Leader election timing of the multi-process tests: short, so that a
// takeover takes seconds, but with a renew deadline a loaded API server
// (make test runs packages and tests in parallel on two cores) meets: a
// leader that loses its Lease before the test cuts it off proves nothing.
const (
	leaseDuration = 9 * time.Second
	renewDeadline = 6 * time.Second
	retryPeriod   = 1 * time.Second
)

// Logs returns everything the process wrote so far.
func (p *process) Logs() string { return p.Process.Logs(0) }

// Count returns how many lines of the output contain s.
func (p *process) Count(s string) int { return framework.CountLines(p.Logs(), s) }

// Signal sends sig to the process.
func (p *process) Signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.Process.Signal(sig); err != nil {
		p.t.Fatalf("signalling %s: %v", p.Name, err)
	}
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	exited, _ := p.Exited()
	return exited
}

// Wait waits at most timeout for the process to exit and returns its exit
// code.
func (p *process) Wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.Done():
	case <-time.After(timeout):
		p.t.Fatalf("%s still running %v later; output:\n%s", p.Name, timeout, p.Logs())
	}
	code, err := p.ExitCode()
	if err != nil {
		p.t.Fatalf("waiting for %s: %v", p.Name, err)
	}
	return code
}

// waitLog waits until the output has a line containing s.
func (p *process) waitLog(s string, timeout time.Duration) {
	p.t.Helper()
	framework.Eventually(p.t, timeout, fmt.Sprintf("%s to log %q", p.Name, s), func(context.Context) (bool, error) {
		if p.Count(s) > 0 {
			return true, nil
		}
		if p.exited() {
			return false, fmt.Errorf("%s exited; output:\n%s", p.Name, p.Logs())
		}
		return false, nil
	})
}

// klogTime matches the time in the header of a klog text line
// ("I1121 06:39:08.920928 ...").
var klogTime = regexp.MustCompile(`^[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{6}) `)

// logTimes returns the times of the lines of the output containing s, in
// order (the processes of a test share the machine's clock).
func (p *process) logTimes(s string) []time.Time {
	var out []time.Time
	for line := range strings.SplitSeq(p.Logs(), "\n") {
		if !strings.Contains(line, s) {
			continue
		}
		if m := klogTime.FindStringSubmatch(line); m != nil {
			if at, err := time.Parse("0102 15:04:05.000000", m[1]); err == nil {
				out = append(out, at)
			}
		}
	}
	return out
}
