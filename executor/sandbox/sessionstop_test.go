package sandbox_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/procstat"
)

// cpuTicks is the CPU time (user and system, in clock ticks) the host's
// process pid used so far; -1 once it is gone.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	s, err := procstat.Read("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return -1
	}
	ticks, _ := s.CPUTicks()
	return ticks
}

// hostPID is the host's pid of the process of the PID namespace ns whose
// command line holds marker.
func hostPID(t *testing.T, ns, marker string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[1-9]*")
	for _, dir := range dirs {
		link, _ := os.Readlink(dir + "/ns/pid")
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		if link == ns && bytes.Contains(cmdline, []byte(marker)) {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return pid
		}
	}
	t.Fatalf("no process of %s runs %q", ns, marker)
	return 0
}

// parent is the parent of the host's process pid.
func parent(t *testing.T, pid int) int {
	t.Helper()
	s, err := procstat.Read("/proc/" + strconv.Itoa(pid))
	if err != nil {
		t.Fatal(err)
	}
	ppid, ok := s.Int(4)
	if !ok {
		t.Fatalf("no parent in the stat of %d: %q", pid, s)
	}
	return int(ppid)
}

// TestSessionLeftoversStopBetweenCells: a busy loop a cell leaves
// running, in a child process of its own session and in a thread of the
// session's python, uses at most 0.1 CPU-seconds in the 5 s after its
// cell (its processes are stopped between cells), and the next cell
// works and sees the loop go on.
func TestSessionLeftoversStopBetweenCells(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		requireFull(t, e)
		s := startSession(t, e)
		ns := pidNamespace(t, s)
		res := cellWithin(t, s, executor.Request{Code: `import subprocess, sys, threading
loop = subprocess.Popen([sys.executable, '-c', 'import sys\nwhile True: pass', 'busy-loop'], start_new_session=True)
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
print(loop.pid)`}, 20*time.Second)
		inner := strings.TrimSpace(res.Stdout)
		if !res.Success || inner == "" {
			t.Fatalf("cell leaving a loop: %+v", res)
		}
		loop := hostPID(t, ns, "busy-loop")
		python := parent(t, loop)
		before := map[int]int64{loop: cpuTicks(t, loop), python: cpuTicks(t, python)}
		// The window the target is stated for: 5 s of wall time.
		<-time.After(5 * time.Second)
		for pid, name := range map[int]string{loop: "the loop's process", python: "the session's python (a looping thread)"} {
			used := time.Duration(cpuTicks(t, pid)-before[pid]) * time.Second / procstat.ClockTicks
			if used > 100*time.Millisecond {
				t.Errorf("%s used %s of CPU in the 5 s after its cell", name, used)
			}
			t.Logf("%s used %s of CPU in the 5 s after its cell", name, used)
		}
		res = cellWithin(t, s, executor.Request{Code: `import time
def ticks():
    with open('/proc/` + inner + `/stat') as f:
        return sum(map(int, f.read().rsplit(')', 1)[1].split()[11:13]))
start = ticks()
deadline = time.monotonic() + 10
while ticks() == start and time.monotonic() < deadline:
    time.sleep(0.01)
print('continued' if ticks() > start else 'stopped')`}, 30*time.Second)
		if !res.Success || res.Stdout != "continued\n" {
			t.Fatalf("the next cell: %+v", res)
		}
	})
}
