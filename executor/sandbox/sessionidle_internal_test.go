//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/internal/eventually"
	"golang.org/x/sys/unix"
)

// idleWindow is the window over which an idle session is watched, and
// idleWindows how many of them it gets to become quiet: the session's
// supervisor counted its memory every 50 ms, about ten times a window,
// in every window.
const (
	idleWindow  = 500 * time.Millisecond
	idleWindows = 6
)

// TestIdleSessionUsesNoCPU: a live session that waits for a cell, before
// its first and between cells, is never scheduled: neither its
// supervisor (the fork server's init, whose goroutine for the session
// counted its memory every 50 ms) nor its processes (stopped, or blocked
// in a read). It counts their schedulings (context switches of every
// thread) over a window once the init has read that the session idles.
func TestIdleSessionUsesNoCPU(t *testing.T) {
	s := liveSession(t, false)
	root, _ := s.processes()
	if root == "" {
		t.Skip("the session's processes cannot be read here")
	}
	supervisor := "/proc/" + strconv.Itoa(parentOf("/proc/"+strconv.Itoa(parentOf(s.eldest))))
	if argv0, _ := os.ReadFile(supervisor + "/cmdline"); !bytes.HasPrefix(argv0, []byte(protocol.ForkServerMarker+"\x00")) {
		t.Fatalf("%s is not the fork server's init: %q", supervisor, argv0)
	}
	watched := func() []string {
		return append(processes(root+"/proc", nil), supervisor)
	}
	quiet := func(when string) {
		t.Helper()
		waitRead(t, s.p, when)
		quietWindow(t, when, watched)
	}
	quiet("before its first cell")
	if res, err := s.Run(context.Background(), executor.Request{Code: "x = [1] * 1000\nprint(len(x))"}); err != nil || res.Stdout != "1000\n" {
		t.Fatalf("cell: %+v, %v", res, err)
	}
	quiet("after a cell")
	if res, err := s.Run(context.Background(), executor.Request{Code: "print(len(x) + 1)"}); err != nil || res.Stdout != "1001\n" {
		t.Fatalf("a cell after idling: %+v, %v", res, err)
	}
}

// TestIdlePooledRunUsesNoCPU: a pre-forked run waiting in the pool for
// its snippet is not scheduled, nor is its supervisor (the fork server's
// init), which counted its memory every 50 ms while no snippet existed;
// and it runs its snippet once taken.
func TestIdlePooledRunUsesNoCPU(t *testing.T) {
	e, err := New(context.Background(), Config{Pool: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	live := e.fork.current()
	if live == nil {
		t.Skip("no fork server here")
	}
	// One taken from the pool, as a run takes it; the pool forks the
	// next, which waits on offer: both idle.
	p := <-e.pool.idle
	waitRead(t, p, "the taken run")
	supervisor := "/proc/" + strconv.Itoa(live.cmd.Process.Pid)
	quietWindow(t, "two pooled runs waiting", func() []string { return []string{supervisor} })
	if res, err := p.run(context.Background(), executor.Request{Code: "print('hello')"}); err != nil || res.Stdout != "hello\n" {
		t.Fatalf("the idle pooled run: %+v, %v", res, err)
	}
}

// waitRead waits until p's init has read all that was written on its
// lifeline.
func waitRead(t *testing.T, p *proc, when string) {
	t.Helper()
	rc, err := p.launch.(*forkedLaunch).lifeline.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	// What is written on the lifeline and not yet read (either end of a
	// pipe tells).
	unread := func() (n int) {
		n = -1
		_ = rc.Control(func(fd uintptr) {
			if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil { // FIONREAD
				n = v
			}
		})
		return n
	}
	eventually.True(t, func() bool { return unread() == 0 }, "%s: the init never read that it idles", when)
}

// quietWindow watches the processes at the /proc/PID directories watched
// lists for idleWindows windows of idleWindow, and fails t unless one
// window saw none of their threads scheduled.
func quietWindow(t *testing.T, when string, watched func() []string) {
	t.Helper()
	var got []int64
	for range idleWindows {
		before := schedulings(watched())
		<-time.After(idleWindow)
		n := schedulings(watched()) - before
		if got = append(got, n); n == 0 {
			return
		}
	}
	t.Errorf("%s: scheduled in every window of %s: %v times", when, idleWindow, got)
}

// schedulings is how often the threads of the processes at dirs
// (/proc/PID directories) were switched out so far: their voluntary and
// involuntary context switches.
func schedulings(dirs []string) int64 {
	var n int64
	for _, dir := range dirs {
		tasks, _ := filepath.Glob(dir + "/task/*/status")
		for _, status := range tasks {
			b, err := os.ReadFile(status)
			if err != nil {
				continue
			}
			for _, key := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
				if i := bytes.Index(b, []byte("\n"+key)); i >= 0 {
					f := bytes.Fields(b[i+1+len(key):])
					if len(f) > 0 {
						v, _ := strconv.ParseInt(string(f[0]), 10, 64)
						n += v
					}
				}
			}
		}
	}
	return n
}

// TestSessionStopsWakeNotTheForkServer: the stops and continues of a
// forked session's python around its cells (it is the fork server's
// child) do not wake the fork server: in 20 cells it runs fewer than 10
// times, where each stop and each continue woke it once.
func TestSessionStopsWakeNotTheForkServer(t *testing.T) {
	e := newHardened(t, Config{})
	s, err := e.StartSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if res, err := s.Run(context.Background(), executor.Request{Code: "print(0)"}); err != nil || res.Stdout != "0\n" {
		t.Fatalf("first cell: %+v, %v", res, err)
	}
	forkServer := []string{"/proc/" + strconv.Itoa(forkServerPython(t, e.fork.current().cmd.Process.Pid))}
	before := schedulings(forkServer)
	for i := range 20 {
		if res, err := s.Run(context.Background(), executor.Request{Code: "print(" + strconv.Itoa(i) + ")"}); err != nil || res.Stdout != strconv.Itoa(i)+"\n" {
			t.Fatalf("cell %d: %+v, %v", i, res, err)
		}
	}
	woke := schedulings(forkServer) - before
	t.Logf("the fork server ran %d times in 20 cells", woke)
	if woke >= 10 {
		t.Errorf("the fork server (%s) ran %d times in 20 cells of its child's session", forkServer[0], woke)
	}
}
