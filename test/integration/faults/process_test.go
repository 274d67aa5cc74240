package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// writeKubeconfig writes a kubeconfig equivalent to c (server, CA, client
// certificate) into the test's temporary directory and returns its path.
func writeKubeconfig(t testing.TB, c *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData, TLSServerName: c.ServerName}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// process is a controller-manager running as a child process.
type process struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error     // Wait's result, once done is closed
	at   time.Time // when it exited, once done is closed
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startProcess runs the controller-manager binary with args and, besides
// the test's own environment, env. Its stdout and stderr go to a buffer
// (Logs), written to the test log if the test fails. It is killed when the
// test ends if still running.
func startProcess(t testing.TB, name string, env map[string]string, args ...string) *process {
	t.Helper()
	p := &process{t: t, name: name, cmd: exec.Command(managerBinary(t), args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.Env = os.Environ()
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.at = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.Logs())
		}
	})
	return p
}

// managerArgs returns the arguments of a manager in namespace ns with
// kubeconfig, plus extra.
func managerArgs(kubeconfig, ns string, extra ...string) []string {
	return append([]string{
		"--kubeconfig=" + kubeconfig,
		"--namespace=" + ns,
		"--metrics-bind-address=0",
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
func (p *process) Logs() string { return p.out.String() }

// Count returns how many lines of the output contain s.
func (p *process) Count(s string) int { return framework.CountLines(p.Logs(), s) }

// Signal sends sig to the process.
func (p *process) Signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signalling %s: %v", p.name, err)
	}
}

// Exited reports whether the process has exited.
func (p *process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits at most timeout for the process to exit and returns its exit
// code.
func (p *process) Wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%s still running %v later; output:\n%s", p.name, timeout, p.Logs())
	}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exit):
		return exit.ExitCode() // -1 when killed by a signal
	}
	p.t.Fatalf("waiting for %s: %v", p.name, p.err)
	return -1
}

// ExitedAt returns when the process exited (after Wait).
func (p *process) ExitedAt() time.Time {
	<-p.done
	return p.at
}

// waitLog waits until the output has a line containing s.
func (p *process) waitLog(s string, timeout time.Duration) {
	p.t.Helper()
	framework.Eventually(p.t, timeout, fmt.Sprintf("%s to log %q", p.name, s), func(context.Context) (bool, error) {
		if p.Count(s) > 0 {
			return true, nil
		}
		if p.Exited() {
			return false, fmt.Errorf("%s exited; output:\n%s", p.name, p.Logs())
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
