package framework

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// WaitForwarding waits for the started cmd, sending it every signal that
// arrives on sigs meanwhile, so that a parent stopped by Ctrl-C or SIGTERM
// lets its child shut down first. It returns the child's exit code (-1
// when a signal ended it), or an error when the child could not be waited
// for.
func WaitForwarding(cmd *exec.Cmd, sigs <-chan os.Signal) (int, error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case err := <-done:
			if exit := (*exec.ExitError)(nil); err == nil || errors.As(err, &exit) {
				return cmd.ProcessState.ExitCode(), nil
			}
			return 0, err
		}
	}
}

// Process is a program run beside the tests: the manager's binary, Traefik,
// external-dns. Its output goes to a file (ProcessOptions.LogPath) or to
// memory.
type Process struct {
	Name string
	// Started is when it was started.
	Started time.Time
	cmd     *exec.Cmd
	logPath string
	out     syncBuffer
	done    chan struct{}
	err     error     // Wait's result, once done is closed
	at      time.Time // when it exited, once done is closed
	stop    sync.Once
}

// ProcessOptions configure StartProcess.
type ProcessOptions struct {
	// Dir is the working directory; empty: this process's.
	Dir string
	// Env is the whole environment; nil: this process's.
	Env []string
	// LogPath receives stdout and stderr; empty: memory.
	LogPath string
	// SysProcAttr, for a process group of its own or a signal when the
	// test process dies.
	SysProcAttr *syscall.SysProcAttr
}

// StartProcess starts bin with args.
func StartProcess(name, bin string, args []string, o ProcessOptions) (*Process, error) {
	p := &Process{Name: name, cmd: exec.Command(bin, args...), logPath: o.LogPath, done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env, p.cmd.SysProcAttr = o.Dir, o.Env, o.SysProcAttr
	var logFile *os.File
	if o.LogPath != "" {
		f, err := os.Create(o.LogPath)
		if err != nil {
			return nil, err
		}
		logFile = f
		p.cmd.Stdout, p.cmd.Stderr = f, f
	} else {
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	}
	p.Started = time.Now()
	if err := p.cmd.Start(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		p.at = time.Now()
		if logFile != nil {
			logFile.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended, and Wait's error then.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// ExitCode waits for the process to exit and returns its exit code (-1
// when a signal ended it), or an error when it could not be waited for.
func (p *Process) ExitCode() (int, error) {
	<-p.done
	var exit *exec.ExitError
	if p.err == nil || errors.As(p.err, &exit) {
		return p.cmd.ProcessState.ExitCode(), nil
	}
	return -1, p.err
}

// ExitedAt returns when the process exited, once it has.
func (p *Process) ExitedAt() time.Time {
	<-p.done
	return p.at
}

// Stop sends SIGTERM and waits at most timeout for the process to exit,
// then kills it. It returns Wait's error, or one saying it was killed. It
// is safe to call more than once.
func (p *Process) Stop(timeout time.Duration) error {
	var killed error
	p.stop.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(timeout):
			_ = p.cmd.Process.Kill()
			<-p.done
			killed = fmt.Errorf("%s did not stop within %v after SIGTERM: killed", p.Name, timeout)
		}
	})
	<-p.done
	if killed != nil {
		return killed
	}
	return p.err
}

// Kill kills the process if it still runs and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Logs returns what the process wrote so far: its whole output, or the last
// max bytes of it when max > 0.
func (p *Process) Logs(max int) string {
	b := []byte(p.out.String())
	if p.logPath != "" {
		var err error
		if b, err = os.ReadFile(p.logPath); err != nil {
			return fmt.Sprintf("(reading %s: %v)", p.logPath, err)
		}
	}
	if max > 0 && len(b) > max {
		b = append([]byte("...\n"), b[len(b)-max:]...)
	}
	return string(b)
}

// LogPath is the file the output goes to ("": memory).
func (p *Process) LogPath() string { return p.logPath }

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
