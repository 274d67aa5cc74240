package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where the benchmark ran.
type Machine struct {
	CPUModel   string  `json:"cpu_model"`
	Cores      int     `json:"cores"`
	RAMBytes   int64   `json:"ram_bytes"`
	Kernel     string  `json:"kernel,omitempty"`
	LoadStart  float64 `json:"load1_start"`
	LoadEnd    float64 `json:"load1_end"`
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
