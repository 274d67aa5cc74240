// Command local-up starts a local control plane (etcd + kube-apiserver from
// bin/, on 127.0.0.1, with the project's CRDs installed), writes an admin
// kubeconfig, and runs bin/controller-manager against it. Ctrl-C stops the
// manager, then the control plane, and removes the kubeconfig and every
// temporary directory. `make run` uses it when no cluster is given.
//
// Usage: go run ./hack/local-up [--kubeconfig-out PATH] [-- manager flags...]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

func main() {
	os.Exit(run())
}

func run() int {
	root, err := framework.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		return 1
	}
	kubeconfigOut := flag.String("kubeconfig-out", filepath.Join(root, ".run", "kubeconfig"),
		"Where to write the admin kubeconfig of the local control plane (removed on exit).")
	manager := flag.String("manager", filepath.Join(root, "bin", "controller-manager"), "The controller-manager binary to run.")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [flags] [-- controller-manager flags]\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()

	// Signals are ours from here on: the first stops the manager gracefully,
	// a second one makes it exit at once; the control plane is always stopped.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	env, err := framework.Environment()
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "local-up: starting etcd and kube-apiserver on 127.0.0.1 ...")
	if _, err := env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "local-up: starting the control plane:", err)
		_ = env.Stop()
		return 1
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "local-up: stopping the control plane")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "local-up: stopping the control plane:", err)
		}
	}()

	user, err := env.AddUser(envtest.User{Name: "local-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-up: creating the admin user:", err)
		return 1
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-up: writing the kubeconfig:", err)
		return 1
	}
	if err := os.MkdirAll(filepath.Dir(*kubeconfigOut), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		return 1
	}
	if err := os.WriteFile(*kubeconfigOut, kubeconfig, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "local-up:", err)
		return 1
	}
	defer os.Remove(*kubeconfigOut)

	kubectl := "kubectl"
	if _, err := os.Stat(filepath.Join(root, "bin", "kubectl")); err == nil {
		kubectl = filepath.Join(root, "bin", "kubectl")
	}
	fmt.Fprintf(os.Stderr, "\nlocal-up: control plane ready. Use it with:\n\n  %s --kubeconfig=%s get pods -A\n\n", kubectl, *kubeconfigOut)
	if kubectl == "kubectl" {
		fmt.Fprintln(os.Stderr, "local-up: (no kubectl at hand? `make kubectl` builds bin/kubectl)")
	}

	// Plain HTTP metrics on loopback, for curl; flags given after -- win.
	args := append([]string{"--kubeconfig=" + *kubeconfigOut, "--metrics-secure=false", "--metrics-bind-address=127.0.0.1:8080"}, flag.Args()...)
	cmd := exec.Command(*manager, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	// Own process group: a terminal Ctrl-C reaches us, and we forward it, so
	// the order of shutdown stays manager first, control plane second.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "local-up: starting the manager:", err)
		return 1
	}
	code, err := framework.WaitForwarding(cmd, sigs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-up: manager:", err)
		return 1
	}
	return code
}
