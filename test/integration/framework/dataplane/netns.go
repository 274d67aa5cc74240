// Package dataplane runs a real data plane beside the test control plane:
// Traefik (bin/traefik, built by hack/build-tools.sh) watching the test API
// server, and backends, small HTTP servers on this machine standing in for
// a Service's Pods, published through the Service's EndpointSlice. Tests
// then send real HTTP requests through Traefik.
//
// The API server refuses loopback addresses (127.0.0.0/8) in EndpointSlices,
// so the backends listen on BackendIP, a documentation address (RFC 5737)
// that only exists on the loopback interface of a private network namespace.
// Main re-executes the test binary in such a namespace, with the control
// plane, the manager, Traefik and the backends all inside it: nothing of
// the test leaves this machine and the host's network is never changed.
package dataplane

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"testing"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// BackendIP is the address backends listen on and EndpointSlices carry. It
// is assigned to lo inside the private network namespace only.
const BackendIP = "198.51.100.10"

// envChild marks the re-executed process that runs in the namespace.
const envChild = "CONTROLLER_MANAGER_TEST_NETNS"

// unavailable is why the process does not run in a private network
// namespace ("" when it does).
var unavailable = "dataplane.Main was not called from TestMain"

// Main runs run in a private network namespace whose loopback interface
// carries BackendIP and a default route, and returns its exit code. Call
// it from TestMain around everything else (the control plane too):
//
//	func TestMain(m *testing.M) {
//		os.Exit(dataplane.Main(func() int { return framework.Run(m, &cfg) }))
//	}
//
// The test binary is started again with the same arguments in a new
// network namespace (as root; otherwise inside a new user namespace, where
// the kernel allows that), and this process only waits for it. When no
// namespace can be made, run runs here and Require skips (fails under CI).
func Main(run func() int) int {
	if os.Getenv(envChild) != "" {
		// Not for the processes this one starts: a test binary among them
		// must make its own namespace.
		os.Unsetenv(envChild)
		if err := configureLoopback(); err != nil {
			fmt.Fprintf(os.Stderr, "dataplane: configuring the network namespace: %v\n", err)
			return 1
		}
		unavailable = ""
		return run()
	}
	code, err := reexecInNamespace()
	if err == nil {
		return code
	}
	unavailable = fmt.Sprintf("no private network namespace could be made (%v); the traffic tests need one to give backends an address the API server accepts in an EndpointSlice without touching this machine's network (run as root, or enable unprivileged user namespaces)", err)
	fmt.Fprintln(os.Stderr, "dataplane:", unavailable)
	return run()
}

// Require skips the test when the process does not run in the private
// network namespace, and fails it instead under CI (CI=true), where the
// namespace path must run.
func Require(t testing.TB) {
	t.Helper()
	if unavailable == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, but %s", unavailable)
	}
	t.Skip(unavailable)
}

// Available reports whether the process runs in the private network
// namespace.
func Available() bool { return unavailable == "" }

// Isolation says where the process runs, for logs.
func Isolation() string {
	if unavailable == "" {
		return fmt.Sprintf("private network namespace (lo: 127.0.0.1, %s)", BackendIP)
	}
	return "host network: " + unavailable
}

// reexecInNamespace runs this binary again in a new network namespace and
// returns its exit code; an error means the namespace could not be made.
func reexecInNamespace() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envChild+"=1")
	// Pdeathsig is tied to the thread that starts the child: keep it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Without root, only a user namespace owning the network namespace
	// grants the right to configure it.
	cmd.SysProcAttr, err = namespaceAttr(os.Geteuid() != 0)
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	code, err := framework.WaitForwarding(cmd, sigs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dataplane: waiting for the test process in the network namespace: %v\n", err)
		return 1, nil
	}
	if code < 0 {
		fmt.Fprintf(os.Stderr, "dataplane: the test process in the network namespace ended: %v\n", cmd.ProcessState)
		return 1, nil
	}
	return code, nil
}
