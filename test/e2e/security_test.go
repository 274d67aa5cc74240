package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nonRootUID is the user the image runs as (Dockerfile USER 65532:65532).
const nonRootUID = 65532

// TestContainersReadOnlyRootNonRoot: in each running manager container the
// runtime's spec has a read-only root and user 65532, the process runs as
// 65532, and a write to / fails with EROFS, even a write by root through
// the container's own mount (/proc/PID/root).
func TestContainersReadOnlyRootNonRoot(t *testing.T) {
	ctx := context.Background()
	pods, err := managerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		id, _ := containerID(t, &p)
		out, err := testNode.Ctr(ctx, "containers", "info", id)
		if err != nil {
			t.Fatal(err)
		}
		// The OCI runtime spec's fields this test reads.
		var info struct {
			Spec struct {
				Root *struct {
					Readonly bool `json:"readonly"`
				} `json:"root"`
				Process *struct {
					User struct {
						UID uint32 `json:"uid"`
						GID uint32 `json:"gid"`
					} `json:"user"`
					NoNewPrivileges bool `json:"noNewPrivileges"`
				} `json:"process"`
			}
		}
		if err := json.Unmarshal(out, &info); err != nil {
			t.Fatalf("ctr containers info %s: %v", id, err)
		}
		s := info.Spec
		if s.Root == nil || !s.Root.Readonly {
			t.Errorf("pod %s: the runtime spec's root is not read-only: %+v", p.Name, s.Root)
		}
		if s.Process == nil || s.Process.User.UID != nonRootUID || s.Process.User.GID != nonRootUID || !s.Process.NoNewPrivileges {
			t.Errorf("pod %s: the runtime spec's process: %+v, want uid/gid %d and no new privileges", p.Name, s.Process, nonRootUID)
		}
		pid := taskPID(t, id)
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, _ := strings.Cut(line, ":"); k == "Uid" || k == "Gid" {
				if f := strings.Fields(v); len(f) != 4 || strings.Count(v, fmt.Sprint(nonRootUID)) != 4 {
					t.Errorf("pod %s: process %d has %s %v, want %d everywhere (real, effective, saved, filesystem)", p.Name, pid, k, f, nonRootUID)
				}
			}
		}
		probe := filepath.Join(fmt.Sprintf("/proc/%d/root", pid), "e2e-write-probe")
		err = os.WriteFile(probe, []byte("x"), 0o600)
		if err == nil {
			_ = os.Remove(probe)
		}
		if !errors.Is(err, syscall.EROFS) {
			t.Errorf("pod %s: writing / of its container: %v, want EROFS (read-only file system)", p.Name, err)
		} else {
			t.Logf("pod %s: spec root read-only, uid %d; writing / gives %v", p.Name, s.Process.User.UID, err)
		}
	}
}

// taskPID returns the host PID of a running container's process.
func taskPID(t *testing.T, id string) int {
	t.Helper()
	out, err := testNode.Ctr(context.Background(), "task", "ls")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == id && f[2] == "RUNNING" {
			var pid int
			if _, err := fmt.Sscan(f[1], &pid); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no running task %s in `ctr task ls`:\n%s", id, out)
	return 0
}
