package prom

import "syscall"

// processAttr puts Prometheus in a process group of its own, killed with
// the test process.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
