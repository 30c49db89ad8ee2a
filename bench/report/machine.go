package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

type machineInfo struct {
	CPU, Memory, Go, OS, Commit string
	Cores                       int
	Load                        string // the load average as the run went

}

// machine describes where the report ran.
func machine() machineInfo {
	m := machineInfo{CPU: "unknown", Memory: "unknown", Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
				m.Memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.OS = strings.TrimSpace(string(out)) + " " + runtime.GOARCH
	}
	m.Go = runtime.Version()
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(strings.TrimPrefix(string(out), "go version "))
	}
	m.Commit = "unknown"
	if out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=12").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "rev-parse", "--abbrev-ref", "HEAD").Output(); err == nil {
		m.Commit += " (" + strings.TrimSpace(string(out)) + ")"
	}
	return m
}

// loadAvg is the 1-minute load average (/proc/loadavg), "unknown" if unread.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
