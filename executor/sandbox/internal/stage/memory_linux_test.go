package stage

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeProc is a /proc/PID directory of one process holding anonKB
// resident, whose smaps lists one mapping of a tmpfs file.
func fakeProc(t *testing.T, anonKB int) string {
	t.Helper()
	dir := t.TempDir()
	status := "Name:\tpython3\nRssAnon:\t" + strconv.Itoa(anonKB) + " kB\nRssShmem:\t0 kB\n"
	smaps := "7f0000000000-7f0010000000 rw-s 00000000 00:2a 12 /work/.shm/psm_1\nPss:\t" + strconv.Itoa(anonKB) + " kB\nAnonymous:\t0 kB\n"
	for name, text := range map[string]string{"status": status, "smaps": smaps} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCountByShareOnlyWhereNeeded: past limit by what its processes hold
// resident, a run is counted again by share, beside the check of its
// tmpfs; not where its tmpfs and sockets alone are past limit, which is
// the verdict at once.
func TestCountByShareOnlyWhereNeeded(t *testing.T) {
	proc := fakeProc(t, 2048)
	for _, tc := range []struct {
		name        string
		held, limit int64
		walk        bool
		total       int64
	}{
		{"under limit", 1 << 20, 4 << 20, false, 3 << 20},
		{"past limit resident", 1 << 20, 2 << 20, true, 1 << 20},
		{"held past limit", 3 << 20, 2 << 20, false, 3 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var walks, dones int
			total, complete, recounted := countRun(tc.held, []string{proc}, tc.limit, func() func() {
				walks++
				return func() { dones++ }
			})
			if total != tc.total || !complete || recounted != tc.walk {
				t.Errorf("total %d complete %v recounted %v, want %d true %v", total, complete, recounted, tc.total, tc.walk)
			}
			if want := map[bool]int{true: 1}[tc.walk]; walks != want || dones != want {
				t.Errorf("walking called %d times, done %d times; want %d", walks, dones, want)
			}
		})
	}
}

// fakeRun is a supervised run whose signal is recorded.
type fakeRun struct{ signalled chan struct{} }

func (fakeRun) end(bool) (unix.WaitStatus, bool, error) { return 0, false, nil }
func (fakeRun) kill()                                   {}
func (fakeRun) alone([]string) bool                     { return false }
func (fakeRun) exiting() bool                           { return false }
func (r fakeRun) signal()                               { close(r.signalled) }

// TestCheckTmpfs: beside a count by share, the use of the run's tmpfs
// past limit kills the run (a run filling its shared memory during a
// long count got SIGBUS at the tmpfs's size, not the memory verdict);
// under limit, the check ends with the count and kills nothing.
func TestCheckTmpfs(t *testing.T) {
	dir, err := unix.Open(t.TempDir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(dir) })
	c := &counter{work: dir, shm: dir}
	used := c.tmpfs()
	if used <= 0 {
		t.Skipf("the file system of %s reports no use", os.TempDir())
	}

	run := fakeRun{signalled: make(chan struct{})}
	var over atomic.Int64
	done := watch{memory: c, limit: used / 4}.checkTmpfs(run, &over)()
	<-run.signalled
	done()
	if over.Load() <= used/4 {
		t.Errorf("over %d, want past the limit %d", over.Load(), used/4)
	}

	run = fakeRun{signalled: make(chan struct{})}
	over.Store(0)
	watch{memory: c, limit: used * 4}.checkTmpfs(run, &over)()()
	select {
	case <-run.signalled:
		t.Error("killed under limit")
	default:
	}
	if over.Load() != 0 {
		t.Errorf("over %d under limit", over.Load())
	}
}

// TestMemoryLines: a status file's lines of the keys are summed, in
// bytes, without allocating (the service counts a session at every cell's
// end, and each session's init every few milliseconds).
func TestMemoryLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	status := "Name:\tpython3\nRssAnon:\t    1234 kB\nRssFile:\t  99 kB\nRssShmem:\t10 kB\nHugetlbPages:\t       0 kB"
	if err := os.WriteFile(path, []byte(status), 0o600); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if kB, found, ok := memoryLines(path, rssKeys, buf); kB != 1244<<10 || !found || !ok {
		t.Errorf("read %d bytes (found %v, ok %v), want %d", kB, found, ok, 1244<<10)
	}
	if kB, found, ok := memoryLines(filepath.Join(t.TempDir(), "gone"), rssKeys, buf); kB != 0 || found || !ok {
		t.Errorf("a process gone: %d bytes (found %v, ok %v), want none, not found, ok", kB, found, ok)
	}
	// The path as a C string, no more.
	if n := testing.AllocsPerRun(100, func() { memoryLines(path, rssKeys, buf) }); n > 1 {
		t.Errorf("a read allocates %.0f times, want at most 1", n)
	}
}

// TestProcessesListsPIDDirectories: a listing keeps the PID directories
// of a proc mount, past what one read of the directory holds, and
// allocates only what it returns (the service lists a session's processes
// at every cell's end, a run's init at every count).
func TestProcessesListsPIDDirectories(t *testing.T) {
	proc := t.TempDir()
	var want []string
	for i := range 600 {
		name := strconv.Itoa(i)
		if err := os.Mkdir(filepath.Join(proc, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			want = append(want, proc+"/"+name)
		}
	}
	for _, name := range []string{"self", "meminfo", "thread-self"} {
		if err := os.Mkdir(filepath.Join(proc, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Processes(proc, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listed %d directories, want the %d PID ones (not 0, self, meminfo, thread-self)", len(got), len(want))
	}
	if got, err := Processes(proc, func(dir string) bool { return filepath.Base(dir) == "7" }); err != nil || !slices.Equal(got, []string{proc + "/7"}) {
		t.Errorf("matching 7: %v, %v", got, err)
	}
	if got, err := Processes(filepath.Join(proc, "none"), nil); got != nil || err == nil {
		t.Errorf("a proc that is not there: %v, %v; want none and an error", got, err)
	}

	small := t.TempDir()
	for _, name := range []string{"1", "42", "self"} {
		if err := os.Mkdir(filepath.Join(small, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The path as a C string, two directories' paths, the slice holding
	// them (grown twice).
	if n := testing.AllocsPerRun(100, func() { _, _ = Processes(small, nil) }); n > 5 {
		t.Errorf("a listing of two processes allocates %.0f times, want at most 5", n)
	}
}
