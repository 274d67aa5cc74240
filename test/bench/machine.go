package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
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
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if kb, err := procField("/proc/meminfo", "MemTotal"); err == nil {
		m.RAMBytes = kb * 1024
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.LoadStart = loadAvg1()
	return m
}

// loadAvg1 is the 1-minute load average (-1 when unknown).
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// procField reads a "Key: <n> kB" line of a /proc file, in kB.
func procField(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			break
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}

// processMemory returns the peak (VmHWM) and current (VmRSS) resident set of
// pid, in bytes.
func processMemory(pid int) (peak, current int64, err error) {
	status := fmt.Sprintf("/proc/%d/status", pid)
	hwm, err := procField(status, "VmHWM")
	if err != nil {
		return 0, 0, err
	}
	rss, err := procField(status, "VmRSS")
	if err != nil {
		return 0, 0, err
	}
	return hwm * 1024, rss * 1024, nil
}

// cpuSample is the machine's busy CPU time and the part of it used by this
// process and its descendants (control plane, managers), in seconds.
type cpuSample struct {
	at         time.Time
	busy, ours float64
}

const clockTicks = 100 // USER_HZ on Linux

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		// cpu user nice system idle iowait irq softirq steal ...
		for i, v := range f {
			if i == 0 || i == 4 || i == 5 || i > 8 {
				continue
			}
			n, _ := strconv.ParseFloat(v, 64)
			s.busy += n / clockTicks
		}
	}
	type proc struct {
		ppid int
		cpu  float64 // utime+stime+cutime+cstime
	}
	procs := map[int]proc{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name (field 2) may hold spaces: fields start after ")".
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b)[i+1:])
		if len(f) < 15 {
			continue
		}
		p := proc{}
		p.ppid, _ = strconv.Atoi(f[1])
		for _, k := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			n, _ := strconv.ParseFloat(f[k], 64)
			p.cpu += n / clockTicks
		}
		procs[pid] = p
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
