//go:build !linux

package prom

import "syscall"

func processAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
