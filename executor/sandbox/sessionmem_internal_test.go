//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/stage"
)

// scanNamespace is every process of pidNS in all of the host's /proc (the
// way the service found a session's processes before it read its
// sandbox's own /proc): their /proc/PID directories, and their pids in
// the namespace (the last of NSpid).
func scanNamespace(pidNS string) (procs, inner []string) {
	for _, dir := range processes("/proc", func(dir string) bool {
		ns, err := os.Readlink(dir + "/ns/pid")
		return err == nil && ns == pidNS
	}) {
		procs = append(procs, dir)
		b, _ := os.ReadFile(dir + "/status")
		for line := range bytes.Lines(b) {
			if f := strings.Fields(string(line)); len(f) > 1 && f[0] == "NSpid:" {
				inner = append(inner, f[len(f)-1])
			}
		}
	}
	return procs, inner
}

// leftRunning is a cell that leaves processes behind whose parents are
// gone: a child forked by a thread that exited, and a daemon that left its
// session with setsid and was orphaned (a double fork); both not dumpable.
const leftRunning = `import ctypes, os, threading, time
def sleeper():
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(4, 0)  # PR_SET_DUMPABLE: no
        time.sleep(3600)
        os._exit(0)
t = threading.Thread(target=sleeper)
t.start()
t.join()
middle = os.fork()
if middle == 0:
    os.setsid()
    sleeper()
    os._exit(0)
os.waitpid(middle, 0)
time.sleep(0.2)
`

// TestSessionCountsAllItsProcesses: the live session's count lists the
// processes of its PID namespace that a scan of all of the host's /proc
// finds: its init, python and the processes a cell left whose parents are
// gone, on both paths.
func TestSessionCountsAllItsProcesses(t *testing.T) {
	for _, cold := range []bool{false, true} {
		t.Run(map[bool]string{false: "fork", true: "cold"}[cold], func(t *testing.T) {
			s := liveSession(t, cold)
			if res, err := s.Run(context.Background(), executor.Request{Code: leftRunning}); err != nil || !res.Success {
				t.Fatalf("cell: %+v %v", res, err)
			}
			_, procs := s.processes()
			var got []string
			for _, dir := range procs {
				got = append(got, path.Base(dir))
			}
			_, want := scanNamespace(s.pidNS)
			slices.Sort(got)
			slices.Sort(want)
			if len(want) < 4 || !slices.Equal(got, want) {
				t.Fatalf("the session's own /proc lists %v, all of /proc %v: want the same, at least 4 (init, python, 2 left running)", got, want)
			}
		})
	}
}

func liveSession(t testing.TB, cold bool) *sessionSandbox {
	t.Helper()
	e, err := New(context.Background(), Config{DisableForkServer: cold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	live, err := e.StartSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Close() })
	return live.(*sessionSandbox)
}

// BenchmarkSessionMemoryCount: one count of an idle session (fork path),
// as MemoryBytes takes it, from the sandbox's own /proc (own-proc),
// beside the same count of the processes found in all of the host's /proc
// (all-of-proc); and the listing of its processes alone, each way.
func BenchmarkSessionMemoryCount(b *testing.B) {
	s := liveSession(b, false)
	if res, err := s.Run(context.Background(), executor.Request{Code: "x = 1"}); err != nil || !res.Success {
		b.Fatalf("cell: %+v %v", res, err)
	}
	if s.MemoryBytes() == s.p.lim.Memory {
		b.Fatal("the session's memory could not be read")
	}
	b.Run("own-proc", func(b *testing.B) {
		for b.Loop() {
			s.MemoryBytes()
		}
	})
	b.Run("all-of-proc", func(b *testing.B) {
		for b.Loop() {
			procs, _ := scanNamespace(s.pidNS)
			if _, ok := stage.Proportional(0, procs); !ok {
				b.Fatal("incomplete count")
			}
		}
	})
	b.Run("list-own-proc", func(b *testing.B) {
		for b.Loop() {
			s.processes()
		}
	})
	b.Run("list-all-of-proc", func(b *testing.B) {
		for b.Loop() {
			scanNamespace(s.pidNS)
		}
	})
}
