// Package node drives the one-node Kubernetes of hack/node-up.sh for the
// e2e tests: it starts or reuses a node, loads images into its runtime,
// runs the test binary again inside the node's network namespace (the only
// place its API server can be reached), and reads what its components
// wrote: their logs and the API server's audit log.
package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// Node is a node of hack/node-up.sh, known by its state directory.
type Node struct {
	// State is the absolute path of its state directory.
	State string
	// Name is the node's name, also that of its network namespace.
	Name string
	// NetNS is the path of its network namespace.
	NetNS string
	// IP is the node's address in that namespace (the API server's too).
	IP string

	root string
}

// Start runs hack/node-up.sh state, its output going to this process's
// stderr, and returns the node once it is Ready. When ctx ends first,
// node-up is stopped (SIGTERM): Down then removes what it had started.
func Start(ctx context.Context, state string) (*Node, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	if err := script(ctx, root, "node-up.sh", state); err != nil {
		return nil, err
	}
	return Open(state)
}

// Down runs hack/node-down.sh state: it stops the node of state, whole or
// half started, and does nothing when there is none.
func Down(state string) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	return script(context.Background(), root, "node-down.sh", state)
}

// Open returns the node whose state directory is state, started earlier.
func Open(state string) (*Node, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(state)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(abs, "node.env"))
	if err != nil {
		return nil, fmt.Errorf("no node in %s (hack/node-up.sh %s starts one): %w", state, state, err)
	}
	n := &Node{State: abs, root: root}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "NODE_NAME":
			n.Name = v
		case "NETNS":
			n.NetNS = v
		case "NODE_IP":
			n.IP = v
		}
	}
	if n.Name == "" || n.NetNS == "" || n.IP == "" {
		return nil, fmt.Errorf("%s/node.env names no node, network namespace or address (a node of an older hack/node-up.sh? stop it with hack/node-down.sh)", abs)
	}
	return n, nil
}

// LoadImage imports an OCI archive into the node's containerd.
func (n *Node) LoadImage(ctx context.Context, archive string) error {
	return script(ctx, n.root, "node-load-image.sh", n.State, archive)
}

// OpenStackDir is where StartOpenStack keeps the OpenStack's state.
func (n *Node) OpenStackDir() string { return filepath.Join(n.State, "openstack") }

// StartOpenStack runs hack/openstack-up.sh in the node's network namespace,
// its servers on the node's address, where Pods reach them (the catalog
// names that address too), with its state in OpenStackDir. It does nothing
// when they run already; hack/node-down.sh stops them.
func (n *Node) StartOpenStack(ctx context.Context) error {
	cmd := command(ctx, "nsenter", "--net="+n.NetNS, "--", filepath.Join(n.root, "hack", "openstack-up.sh"))
	cmd.Dir = n.root
	cmd.Env = append(os.Environ(), "OPENSTACK_DIR="+n.OpenStackDir(), "OPENSTACK_HOST="+n.IP)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/openstack-up.sh in the node's network namespace: %w", err)
	}
	return nil
}

// Kubeconfig is the path of the cluster admin's kubeconfig.
func (n *Node) Kubeconfig() string { return filepath.Join(n.State, "kubeconfig") }

// Config returns the cluster admin's client config. It reaches the API
// server only from inside the node's network namespace (Inside).
func (n *Node) Config() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", n.Kubeconfig())
}

// Inside reports whether this process runs in the node's network namespace.
func (n *Node) Inside() (bool, error) {
	var self, node syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &self); err != nil {
		return false, err
	}
	if err := syscall.Stat(n.NetNS, &node); err != nil {
		return false, fmt.Errorf("the node's network namespace: %w", err)
	}
	return self.Ino == node.Ino && self.Dev == node.Dev, nil
}

// Reexec runs this executable again with args and env added to the
// environment, in the node's network namespace (nsenter, which enters only
// that namespace), and returns its exit code. When ctx ends first, the
// process gets SIGTERM.
func (n *Node) Reexec(ctx context.Context, args []string, env ...string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := command(ctx, "nsenter", append([]string{"--net=" + n.NetNS, "--", exe}, args...)...)
	cmd.Stdin, cmd.Stdout = os.Stdin, os.Stdout
	cmd.Env = append(os.Environ(), env...)
	err = cmd.Run()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		if exit.ExitCode() < 0 {
			return 1, fmt.Errorf("the tests in the node's network namespace ended: %v", exit)
		}
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("running the tests in the node's network namespace: %w", err)
	}
	return 0, nil
}

// Components are the processes hack/node-up.sh starts, in start order; each
// logs to logs/<name>.log.
var Components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "containerd", "kube-proxy", "kubelet"}

// LogTail returns the last lines of a component's log.
func (n *Node) LogTail(component string, lines int) string {
	b, err := os.ReadFile(filepath.Join(n.State, "logs", component+".log"))
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// GarbageCollectorWatches reports whether kube-controller-manager's garbage
// collector watches resource (say "httproutes"), from its log: it finds the
// resources to watch in discovery every 30 seconds, so a CRD installed after
// it started has dependents it cannot see until then, and a foreground
// deletion of their owner does not wait for them.
func (n *Node) GarbageCollectorWatches(resource string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(n.State, "logs", "kube-controller-manager.log"))
	if err != nil {
		return false, err
	}
	added := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, "syncing garbage collector with updated resources from discovery"):
			// diff="added: [...], removed: [...]"
			diff := line[strings.Index(line, "diff="):]
			if i := strings.Index(diff, "removed:"); i >= 0 {
				diff = diff[:i]
			}
			if strings.Contains(diff, "added:") && strings.Contains(diff, "Resource="+resource) {
				added = true
			}
		case added && strings.Contains(line, "synced garbage collector"):
			return true, nil
		}
	}
	return false, nil
}

// AuditMark is the audit log's current end: Audit called with it returns
// only the events written from then on, so that a test reads its own window
// of a log that grows over the whole run.
func (n *Node) AuditMark() (int64, error) {
	fi, err := os.Stat(filepath.Join(n.State, "logs", "audit.log"))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Audit returns the API server's audit events (writes only; see the policy
// in hack/node-up.sh) written since mark (an AuditMark; 0 for all) that
// match keep. A line the API server is still writing is left out.
func (n *Node) Audit(mark int64, keep func(*auditv1.Event) bool) ([]auditv1.Event, error) {
	f, err := os.Open(filepath.Join(n.State, "logs", "audit.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(mark, io.SeekStart); err != nil {
		return nil, err
	}
	var events []auditv1.Event
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return events, nil // a partial last line is still being written
		}
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("audit log line %q: %w", line, err)
		}
		if keep(&ev) {
			events = append(events, ev)
		}
	}
}

// Ctr runs containerd's ctr against the node's containerd, in the
// namespace of the CRI (the kubelet's containers), and returns its output.
func (n *Node) Ctr(ctx context.Context, args ...string) ([]byte, error) {
	sock := filepath.Join(n.State, "containerd", "containerd.sock")
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// script runs hack/NAME with args, its output going to stderr.
func script(ctx context.Context, root, name string, args ...string) error {
	cmd := command(ctx, filepath.Join(root, "hack", name), args...)
	cmd.Dir = root
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// command is exec.CommandContext whose process gets SIGTERM when ctx ends
// (scripts clean up on it), and SIGKILL a minute later; its output goes to
// stderr.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}
