package procstat

import (
	"os"
	"strconv"
	"strings"
)

// CPUTimes is what the machine's CPUs did, in ClockTicks: Busy (user,
// nice, system, irq and softirq time: every process's and the kernel
// workers') and All (Busy, idle, iowait and a VM's steal).
type CPUTimes struct{ Busy, All int64 }

// ReadCPUTimes reads the machine's CPU times from the stat file at path
// (/proc/stat); false where it cannot be read.
func ReadCPUTimes(path string) (CPUTimes, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return CPUTimes{}, false
	}
	return ParseCPUTimes(string(b))
}

// ParseCPUTimes reads the first line of a /proc/stat text: "cpu", then
// user, nice, system, idle, iowait, irq, softirq and steal (guest time
// is counted in user).
func ParseCPUTimes(stat string) (CPUTimes, bool) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return CPUTimes{}, false
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 {
			return CPUTimes{}, false
		}
		v[i] = n
	}
	busy := v[0] + v[1] + v[2] + v[5] + v[6]
	return CPUTimes{Busy: busy, All: busy + v[3] + v[4] + v[7]}, true
}
