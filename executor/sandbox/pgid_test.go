package sandbox_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/eventually"
)

// children returns the pids and process groups of this process's children.
func children(t *testing.T) map[int]int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	out := make(map[int]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pgrp, _ := strconv.Atoi(fields[2])
		if ppid == os.Getpid() {
			out[pid] = pgrp
		}
	}
	return out
}

// TestSandboxesHaveTheirOwnProcessGroup: pooled sandboxes never share the
// service's process group, so a Ctrl-C at the terminal (SIGINT to the
// foreground group) does not kill them.
func TestSandboxesHaveTheirOwnProcessGroup(t *testing.T) {
	newExecutor(t, sandbox.Config{Pool: 2, AllowUnisolated: true})
	var kids map[int]int
	// Polling /proc: there is nothing to wait on.
	eventually.True(t, func() bool { kids = children(t); return len(kids) > 0 }, "no pooled sandbox started")
	own := syscall.Getpgrp()
	for pid, pgrp := range kids {
		if pgrp == own {
			t.Errorf("sandbox %d is in the test's process group %d", pid, own)
		}
	}
}
