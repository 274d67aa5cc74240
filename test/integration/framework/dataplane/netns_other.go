//go:build !linux

package dataplane

import (
	"errors"
	"syscall"
)

var errNotLinux = errors.New("network namespaces are Linux only")

func namespaceAttr(bool) (*syscall.SysProcAttr, error) { return nil, errNotLinux }

func configureLoopback() error { return errNotLinux }

func processAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
