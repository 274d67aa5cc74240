package framework

import (
	"errors"
	"os"
	"os/exec"
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
