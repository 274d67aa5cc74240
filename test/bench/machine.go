package bench

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/kube-sample/controller-manager/test/integration/framework"
)

// Machine describes where the benchmark ran.
type Machine struct {
	CPUModel  string  `json:"cpu_model"`
	Cores     int     `json:"cores"`
	RAMBytes  int64   `json:"ram_bytes"`
	Kernel    string  `json:"kernel,omitempty"`
	LoadStart float64 `json:"load1_start"`
	LoadEnd   float64 `json:"load1_end"`
	// OtherCPU is the share of the machine's CPU (0..1) that processes
	// other than the benchmark's own (harness, control plane, managers)
	// used during the run: other work competing with the measurements.
	OtherCPU   float64 `json:"other_processes_cpu_share"`
	GoVersion  string  `json:"go_version"`
	GOMAXPROCS int     `json:"gomaxprocs"`
}

func machineInfo() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), LoadStart: loadAvg1()}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return m
	}
	if cpus, err := fs.CPUInfo(); err == nil && len(cpus) > 0 {
		m.CPUModel = cpus[0].ModelName
	}
	if mem, err := fs.Meminfo(); err == nil && mem.MemTotalBytes != nil {
		m.RAMBytes = int64(*mem.MemTotalBytes)
	}
	if release, err := fs.SysctlStrings("kernel/osrelease"); err == nil && len(release) > 0 {
		m.Kernel = release[0]
	}
	return m
}

// sourceCommit is the short commit of the repository's HEAD, with "-dirty"
// when tracked files differ from it ("unknown" outside a git checkout).
func sourceCommit() string {
	root, err := framework.RepoRoot()
	if err != nil {
		return "unknown"
	}
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	commit, err := git("rev-parse", "--short", "HEAD")
	if err != nil || commit == "" {
		return "unknown"
	}
	// Untracked files (e.g. results not yet committed) do not change what
	// was measured.
	if status, err := git("status", "--porcelain", "--untracked-files=no"); err != nil || status != "" {
		commit += "-dirty"
	}
	return commit
}

// loadAvg1 is the 1-minute load average (-1 when unknown).
func loadAvg1() float64 {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return -1
	}
	l, err := fs.LoadAvg()
	if err != nil {
		return -1
	}
	return l.Load1
}

// processMem is a process's resident set, in bytes: its peak (VmHWM), now
// (VmRSS), and the part of it now that maps files (RssFile).
type processMem struct{ peak, current, file int64 }

// processMemory reads the resident set of pid.
func processMemory(pid int) (processMem, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return processMem{}, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return processMem{}, err
	}
	return processMem{peak: int64(st.VmHWM), current: int64(st.VmRSS), file: int64(st.RssFile)}, nil
}

// cpuSample is the machine's busy CPU time and the part of it used by this
// process and its descendants (control plane, managers), in seconds.
type cpuSample struct {
	at         time.Time
	busy, ours float64
}

// clockTicks is USER_HZ on Linux: procfs converts utime and stime to seconds,
// but not the children's cutime and cstime.
const clockTicks = 100

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return s
	}
	if st, err := fs.Stat(); err == nil {
		c := st.CPUTotal // busy: all but idle, iowait and the guest time user already holds
		s.busy = c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	}
	type proc struct {
		ppid int
		cpu  float64 // utime+stime+cutime+cstime
	}
	procs := map[int]proc{}
	all, _ := fs.AllProcs()
	for _, p := range all {
		st, err := p.Stat()
		if err != nil {
			continue // exited meanwhile
		}
		procs[p.PID] = proc{ppid: st.PPID, cpu: st.CPUTime() + float64(st.CUTime+st.CSTime)/clockTicks}
	}
	self := os.Getpid()
	for pid, p := range procs {
		for anc, hops := pid, 0; anc > 1 && hops < 64; anc, hops = procs[anc].ppid, hops+1 {
			if anc == self {
				s.ours += p.cpu
				break
			}
		}
	}
	return s
}

// otherShare is the share of the machine's CPU (0..1) that other processes
// used between s and later.
func (s cpuSample) otherShare(later cpuSample) float64 {
	wall := later.at.Sub(s.at).Seconds() * float64(runtime.NumCPU())
	if wall <= 0 {
		return 0
	}
	other := (later.busy - s.busy) - (later.ours - s.ours)
	return max(0, min(1, other/wall))
}
