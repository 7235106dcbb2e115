// Package procstat reads a process's CPU time and resident memory from /proc, to charge the
// servers under test with the CPU they used per transaction.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clkTck is USER_HZ, 100 on every Linux architecture Go supports (sysconf(_SC_CLK_TCK)).
const clkTck = 100

// Sample is one reading of a process.
type Sample struct {
	PID int
	// CPUSeconds is utime + stime.
	CPUSeconds float64
	// RSSBytes is VmRSS.
	RSSBytes int64
}

// Read samples pid (0: this process).
func Read(pid int) (Sample, error) {
	p := "self"
	if pid > 0 {
		p = strconv.Itoa(pid)
	}
	s := Sample{PID: pid}
	raw, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return s, err
	}
	s.CPUSeconds, err = ParseStat(raw)
	if err != nil {
		return s, fmt.Errorf("/proc/%s/stat: %w", p, err)
	}
	st, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		return s, err
	}
	s.RSSBytes = ParseRSS(st)
	return s, nil
}

// ParseStat returns utime+stime in seconds from the content of /proc/<pid>/stat.
func ParseStat(raw []byte) (float64, error) {
	// The command name (field 2) is in parentheses and may hold spaces: split after it.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name")
	}
	f := strings.Fields(string(raw[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad utime/stime")
	}
	return float64(ut+st) / clkTck, nil
}

// ParseRSS returns VmRSS in bytes from /proc/<pid>/status (0 if absent).
func ParseRSS(raw []byte) int64 {
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
