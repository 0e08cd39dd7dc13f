package sandbox

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// The memory tests of issue 20: what a run holds is charged to it, however
// it holds it.

// leaderExits makes n children (as many as the process cap allows) that
// each hold mib MiB in a thread after their main thread left with a bare
// SYS_exit: the thread group lives on, its leader a zombie whose own
// /proc/PID/status shows no memory. The parent prints how much the
// children say they hold, then "survived" unless the run is stopped.
func leaderExits(n, mib int) string {
	return fmt.Sprintf(`import os, sys
child = """
import ctypes, os, threading, time
def hold():
    # Once the leader is a zombie: what the thread then holds, the
    # leader's own status file does not show.
    while open("/proc/self/task/%%d/stat" %% os.getpid()).read().rpartition(")")[2].split()[0] != "Z":
        time.sleep(0.001)
    b = b"x" * (%d << 20)
    rss = [l.split()[1] for l in open("/proc/thread-self/status") if l.startswith("VmRSS")][0]
    os.write(1, (rss + "\\n").encode())
    time.sleep(60)
try:
    threading.Thread(target=hold).start()
except RuntimeError:  # the process cap
    os.write(1, b"0\\n")
    raise SystemExit
ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: this thread only
"""
r, w = os.pipe()
kids = 0
for _ in range(%d):
    try:
        os.posix_spawn(sys.executable, [sys.executable, "-c", child], {}, file_actions=[(os.POSIX_SPAWN_DUP2, w, 1)])
        kids += 1
    except OSError:
        break
os.close(w)
held = 0
with os.fdopen(r) as f:
    for _ in range(kids):
        held += int(f.readline() or 0)
print("children", kids, "held", held >> 10, "MiB", flush=True)
import time
time.sleep(1)
print("survived")`, mib, n)
}

// TestMemoryOfExitedLeadersCounted: threads that outlive their thread
// group's leader are charged to the run (issue 20, item 1: four children
// held ~660 MiB under a 256 MiB limit, and the run succeeded).
func TestMemoryOfExitedLeadersCounted(t *testing.T) {
	bothPaths(t, testMemoryOfExitedLeadersCounted)
}

func testMemoryOfExitedLeadersCounted(t *testing.T, cfg Config) {
	e := newHardened(t, cfg)
	for _, tt := range []struct {
		name     string
		n, mib   int
		duration time.Duration
	}{
		{"four children of 160 MiB", 4, 160, 5 * time.Second},
		{"31 children of 32 MiB, the process cap of 64 tasks", 31, 32, 10 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := startRun(e, limits{Timeout: tt.duration, Memory: 256 << 20})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.run(context.Background(), executor.Request{Code: leaderExits(tt.n, tt.mib)})
			if err != nil {
				t.Fatal(err)
			}
			if !res.MemoryExceeded || res.Success || res.Timeout || strings.Contains(res.Stdout, "survived") {
				t.Errorf("memory=%v success=%v timeout=%v stdout=%q error=%q stderr=%.500s", res.MemoryExceeded, res.Success, res.Timeout, res.Stdout, res.Error, res.Stderr)
			}
			t.Logf("%s after %v; the last count was %d KiB (limit 256 MiB); stdout %q", res.Error, res.Duration, p.memoryPeak>>10, res.Stdout)
		})
	}
}

// TestOrphansReaped: the run's PID 1 reaps the orphans the snippet leaves
// (issue 20, item 5: on the fork path seventy `true &` left 62 zombies,
// and the last shells could not fork).
func TestOrphansReaped(t *testing.T) {
	bothPaths(t, testOrphansReaped)
}

const orphans = `import subprocess
for i in range(70):
    subprocess.run("true &", shell=True, check=True)
print("ran", i + 1)`

func testOrphansReaped(t *testing.T, path Config) {
	e := newHardened(t, path)
	res := runCode(t, e, executor.Request{Code: orphans, Timeout: 20 * time.Second})
	if !res.Success || res.Stdout != "ran 70\n" {
		t.Errorf("success=%v stdout=%q error=%q stderr=%.500s", res.Success, res.Stdout, res.Error, res.Stderr)
	}
}

// TestOrphansReapedWithoutTheCount: a cold run's init reaps orphans where
// it does not count the run's memory (a delegated cgroup does; a memory
// limit of 0 stands for that here).
func TestOrphansReapedWithoutTheCount(t *testing.T) {
	e := newHardened(t, Config{DisableForkServer: true})
	p, err := spawn(context.Background(), e.plan, limits{Timeout: 20 * time.Second}, e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.run(context.Background(), executor.Request{Code: orphans})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Stdout != "ran 70\n" {
		t.Errorf("success=%v stdout=%q error=%q stderr=%.500s", res.Success, res.Stdout, res.Error, res.Stderr)
	}
}

// TestSharedMemoryBoundedByTheRun: POSIX shared memory may take what the
// run's memory allows, not the work dir's size or RLIMIT_FSIZE (issue 20,
// item 10: 40 MiB failed with "File too large"), and is charged to the run.
func TestSharedMemoryBoundedByTheRun(t *testing.T) {
	bothPaths(t, testSharedMemoryBoundedByTheRun)
}

func testSharedMemoryBoundedByTheRun(t *testing.T, path Config) {
	e := newHardened(t, path)
	const fill = `from multiprocessing import shared_memory
shm = shared_memory.SharedMemory(create=True, size=%d << 20)
for i in range(0, shm.size, 1 << 20):
    shm.buf[i:i + (1 << 20)] = b"x" * (1 << 20)
print("filled", shm.size >> 20, flush=True)
shm.close()
shm.unlink()`
	res := runCode(t, e, executor.Request{Code: fmt.Sprintf(fill, 40)})
	if !res.Success || res.Stdout != "filled 40\n" {
		t.Errorf("40 MiB: success=%v stdout=%q error=%q stderr=%.500s", res.Success, res.Stdout, res.Error, res.Stderr)
	}
	res = runCode(t, e, executor.Request{Code: fmt.Sprintf(fill, 300)})
	if !res.MemoryExceeded || res.Success || res.Stdout != "" {
		t.Errorf("300 MiB: memory=%v success=%v stdout=%q error=%q stderr=%.500s", res.MemoryExceeded, res.Success, res.Stdout, res.Error, res.Stderr)
	}
}

// TestSocketBuffersCounted: what a run queues in Unix sockets is its
// memory (issue 20, item 3: one process queued ~640 MiB in socket pairs
// with a raised SO_SNDBUF while its resident memory was 14 MiB).
func TestSocketBuffersCounted(t *testing.T) {
	bothPaths(t, testSocketBuffersCounted)
}

func testSocketBuffersCounted(t *testing.T, path Config) {
	e := newHardened(t, path)
	p, err := startRun(e, limits{Timeout: 10 * time.Second, Memory: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.run(context.Background(), executor.Request{Code: `import socket
pairs, queued = [], 0
for _ in range(64):
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)
    a.setblocking(False)
    try:
        while True:
            queued += a.send(b"x" * (1 << 16))
    except BlockingIOError:
        pass
    pairs.append((a, b))
rss = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmRSS")][0]
print("queued", queued >> 20, "MiB in", len(pairs), "pairs; resident", int(rss) >> 10, "MiB", flush=True)
import time
time.sleep(0.5)
print("survived")`})
	if err != nil {
		t.Fatal(err)
	}
	if !res.MemoryExceeded || res.Success || strings.Contains(res.Stdout, "survived") {
		t.Errorf("memory=%v success=%v timeout=%v stdout=%q error=%q stderr=%.500s", res.MemoryExceeded, res.Success, res.Timeout, res.Stdout, res.Error, res.Stderr)
	}
	t.Logf("%s after %v; the last count was %d KiB (limit 256 MiB); stdout %q", res.Error, res.Duration, p.memoryPeak>>10, res.Stdout)
}

// TestWhatForksShare pins what the forks of one fork server share (see
// README.md, "What the forks of one fork server share"): the kernel's
// AT_RANDOM bytes (glibc's stack canary and pointer guard), the memory
// layout and the str hash secret; never the random generators nor the
// kernel's randomness. Cold runs share none of it.
func TestWhatForksShare(t *testing.T) {
	bothPaths(t, testWhatForksShare)
}

func testWhatForksShare(t *testing.T, path Config) {
	e := newHardened(t, path)
	const probe = `import ctypes, os, random
libc = ctypes.CDLL(None)
libc.getauxval.restype = ctypes.c_ulong
libc.getauxval.argtypes = [ctypes.c_ulong]
print(ctypes.string_at(libc.getauxval(25), 16).hex())  # AT_RANDOM
print(hex(ctypes.cast(libc.getauxval, ctypes.c_void_p).value), hex(id(None)))  # libc's and the heap's layout
print(hash("runblock"))
print(random.random())
print(os.urandom(16).hex())`
	var runs [2][]string
	for i := range runs {
		res := runCode(t, e, executor.Request{Code: probe})
		if !res.Success {
			t.Fatalf("probe: %s\n%s", res.Error, res.Stderr)
		}
		runs[i] = strings.Split(strings.TrimSpace(res.Stdout), "\n")
		if len(runs[i]) != 5 {
			t.Fatalf("probe printed %q", res.Stdout)
		}
	}
	forked := !path.DisableForkServer
	for i, what := range []string{"AT_RANDOM", "memory layout", "str hash secret", "random", "os.urandom"} {
		shared := runs[0][i] == runs[1][i]
		if want := forked && i < 3; shared != want {
			t.Errorf("%s shared by two runs: %v, want %v (%q, %q)", what, shared, want, runs[0][i], runs[1][i])
		}
	}
}

// TestDoctorStatesTheMemoryBound: doctor's run-memory line names the
// mechanism, what it counts and the worst case.
func TestDoctorStatesTheMemoryBound(t *testing.T) {
	lim := limits{Timeout: time.Second, Memory: 256 << 20}
	for _, tt := range []struct {
		name string
		pl   *plan
		want []string
	}{
		{"counted by the init", &plan{layers: layerSet{Namespaces: true}, noCgroup: "no cgroup v2 hierarchy"}, []string{
			"whole run ≤ 256 MiB, counted by the init every 2ms–50ms", "every thread group", "shared memory tmpfs", "Unix socket buffers",
			"Not counted: pipe buffers", "Hard bound were the count blind: 64 tasks × 1024 MiB address space = 256 × the limit",
			"No delegated cgroup (no cgroup v2 hierarchy)",
		}},
		{"delegated cgroup", &plan{layers: layerSet{Namespaces: true}, cgroup: &cgroupTree{dir: "/sys/fs/cgroup/runblock"}}, []string{
			"whole run ≤ 256 MiB, exact: memory.max of its own cgroup below the delegated /sys/fs/cgroup/runblock",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, l := range tt.pl.verify(canaryAnswers{}, lim, 1<<20) {
				if l.Name != "run-memory" {
					continue
				}
				for _, w := range tt.want {
					if !strings.Contains(l.Detail, w) {
						t.Errorf("run-memory %q\nlacks %q", l.Detail, w)
					}
				}
				return
			}
			t.Fatal("no run-memory layer")
		})
	}
}

// TestSharedPagesCountedOnce: shared memory counts once, however many
// processes map it (red team, medium): a 130 MiB SharedMemory (its pages
// were counted as the .shm tmpfs's use and again as the mapping's) and 100
// MiB of MAP_SHARED|MAP_ANONYMOUS touched by a parent and 4 children (the
// cold path counted it once per process, 279 MiB) succeed under 256 MiB.
func TestSharedPagesCountedOnce(t *testing.T) {
	bothPaths(t, func(t *testing.T, path Config) {
		e := newHardened(t, path)
		for _, tc := range []struct{ name, code, stdout string }{
			{"SharedMemory", `from multiprocessing import shared_memory
import time
s = shared_memory.SharedMemory(create=True, size=130 << 20)
for i in range(0, s.size, 1 << 20):
    s.buf[i:i + (1 << 20)] = b"x" * (1 << 20)
time.sleep(0.5)
print("held 130")
s.close()
s.unlink()`, "held 130\n"},
			{"shared anonymous", `import mmap, os, time
m = mmap.mmap(-1, 100 << 20, flags=mmap.MAP_SHARED)
for i in range(0, len(m), 4096):
    m[i] = 1
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        for i in range(0, len(m), 4096):
            m[i] = 2
        time.sleep(1.5)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print("shared ok")`, "shared ok\n"},
		} {
			p, err := startRun(e, limits{Timeout: 10 * time.Second, Memory: 256 << 20})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.run(context.Background(), executor.Request{Code: tc.code})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Success || res.Stdout != tc.stdout {
				t.Errorf("%s: memory=%v success=%v stdout=%q error=%q stderr=%.500s", tc.name, res.MemoryExceeded, res.Success, res.Stdout, res.Error, res.Stderr)
			}
			t.Logf("%s: the highest count was %d KiB (limit 256 MiB)", tc.name, p.memoryPeak>>10)
		}
	})
}
