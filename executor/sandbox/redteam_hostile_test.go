//go:build linux

package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// The second outside battery of issue 20, on both paths: the cases that
// failed, each with the class of its fix.

// TestTinyMemoryLimitIsAResult: a request's memory limit below what the
// interpreter needs to start is raised to executor.MinMemoryBytes, so the run is a
// result, never the executor's failure (before: "internal: sandbox setup
// failed: <nil>" for 1 byte or 1 MiB, on both paths, as for
// `runblock exec --memory 1MiB`).
func TestTinyMemoryLimitIsAResult(t *testing.T) {
	bothPaths(t, func(t *testing.T, path Config) {
		e := newHardened(t, path)
		for _, memory := range []int64{1, 1 << 20, 4 << 20} {
			res, err := e.Run(context.Background(), executor.Request{Code: "print('ran')", MemoryBytes: memory})
			if err != nil {
				t.Fatalf("memory %d: %v", memory, err)
			}
			if !res.Success || res.Stdout != "ran\n" || res.MemoryLimit != executor.MinMemoryBytes {
				t.Errorf("memory %d: success=%v stdout=%q limit=%d error=%q stderr=%.300q", memory, res.Success, res.Stdout, res.MemoryLimit, res.Error, res.Stderr)
			}
		}
	})
}

// TestReservedInputNamesRefused: an input file the sandbox cannot place
// because the sandbox itself holds that name in the work dir (the shared
// memory tmpfs) is a client's error naming it, not runblock's own
// traceback (before: IsADirectoryError from _runblock_unpack, on both
// paths).
func TestReservedInputNamesRefused(t *testing.T) {
	bothPaths(t, func(t *testing.T, path Config) {
		e := newHardened(t, path)
		for _, p := range []string{".shm", ".shm/x", "ok", "a/.shm"} {
			res, err := e.Run(context.Background(), executor.Request{Code: "print('ran')", Files: []executor.File{{Path: p, Content: []byte("x")}}})
			reserved := p == ".shm" || strings.HasPrefix(p, ".shm/")
			var pe *executor.PathError
			switch {
			case reserved && (!errors.As(err, &pe) || executor.ErrorCode(err) != executor.ErrInvalid || pe.Index != 0 || !strings.Contains(err.Error(), "reserved")):
				t.Errorf("input %q: got %v (result %+v), want an invalid request naming it reserved", p, err, res)
			case !reserved && (err != nil || !res.Success):
				t.Errorf("input %q: err=%v success=%v stderr=%.300q", p, err, res.Success, res.Stderr)
			}
		}
	})
}

// TestNonDumpableProcessesCounted: a process that makes itself
// non-dumpable (prctl PR_SET_DUMPABLE 0) is still charged to the run. On
// the fork path the count reads smaps, which a non-dumpable process
// opens only to a reader holding CAP_SYS_PTRACE over it, once the resident
// sum passes the limit; a process it cannot read would count as 0.
func TestNonDumpableProcessesCounted(t *testing.T) {
	bothPaths(t, func(t *testing.T, path Config) {
		e := newHardened(t, path)
		p, err := startRun(e, limits{Timeout: 10 * time.Second, Memory: 256 << 20})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.run(context.Background(), executor.Request{Code: `import ctypes, os, time
libc = ctypes.CDLL(None)
r, w = os.pipe()
for _ in range(4):
    if os.fork() == 0:
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
        b = b"x" * (100 << 20)
        os.write(w, b"k")
        time.sleep(30)
        os._exit(0)
for _ in range(4):
    os.read(r, 1)
time.sleep(1)
print("survived")`})
		if err != nil {
			t.Fatal(err)
		}
		if !res.MemoryExceeded || res.Success || strings.Contains(res.Stdout, "survived") {
			t.Errorf("memory=%v success=%v timeout=%v stdout=%q error=%q stderr=%.500s", res.MemoryExceeded, res.Success, res.Timeout, res.Stdout, res.Error, res.Stderr)
		}
	})
}

// TestUnlinkedFilesCounted: a file of the shared memory tmpfs that is
// unlinked but held open keeps its pages, and is charged to the run: 200
// MiB of it and 150 MiB resident, each under the 256 MiB limit alone.
func TestUnlinkedFilesCounted(t *testing.T) {
	bothPaths(t, func(t *testing.T, path Config) {
		e := newHardened(t, path)
		p, err := startRun(e, limits{Timeout: 10 * time.Second, Memory: 256 << 20})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.run(context.Background(), executor.Request{Code: `import os, time
fd = os.open("/dev/shm/held", os.O_CREAT | os.O_RDWR)
for _ in range(200):
    os.write(fd, b"y" * (1 << 20))
os.unlink("/dev/shm/held")
print("unlinked", flush=True)
b = b"z" * (150 << 20)
time.sleep(1)
print("survived")`})
		if err != nil {
			t.Fatal(err)
		}
		if !res.MemoryExceeded || res.Success || strings.Contains(res.Stdout, "survived") {
			t.Errorf("memory=%v success=%v timeout=%v stdout=%q error=%q stderr=%.500s", res.MemoryExceeded, res.Success, res.Timeout, res.Stdout, res.Error, res.Stderr)
		}
	})
}
