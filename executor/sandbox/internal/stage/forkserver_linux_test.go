package stage

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestForkedRunAlone: a forked run is reported before its teardown only
// when the count found python (by its pid in the run's namespace) or no
// process at all.
func TestForkedRunAlone(t *testing.T) {
	inner, err := innerPID(os.Getpid())
	if err != nil || inner != strconv.Itoa(os.Getpid()) {
		t.Fatalf("innerPID of this process (in the PID namespace it sees) = %q, %v: want %d", inner, err, os.Getpid())
	}
	r := &forkedRun{inner: "2"}
	for _, tt := range []struct {
		pids []string
		want bool
	}{
		{nil, true},
		{[]string{"2"}, true},
		{[]string{"3"}, false},
		{[]string{"2", "7"}, false},
	} {
		if got := r.alone(tt.pids); got != tt.want {
			t.Errorf("alone(%q) = %v, want %v", tt.pids, got, tt.want)
		}
	}
}

// TestExiting: a process is exiting, for the early read of how python
// ended, only once it has begun its exit and lost its memory (a zombie
// here), never while it lives; how it ended is then in its stat file.
func TestExiting(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	if _, ok := exiting(pid); ok || (&forkedRun{python: pid}).exiting() {
		t.Fatal("a live process is exiting")
	}
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := exiting(pid); !ok {
		t.Fatal("a dead process (a zombie) is not exiting")
	}
	for _, early := range []bool{true, false} {
		r := &forkedRun{python: pid}
		if early && !r.exiting() {
			t.Fatal("a dead process (a zombie) is not exiting")
		}
		if ws, ended, err := r.end(true); err != nil || !ended || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
			t.Fatalf("how it ended (read as it exits: %v): %v, %v, %v; want killed by SIGKILL", early, ws, ended, err)
		}
	}
}

// TestExitWatcher: a touch of a watched work dir's times makes its
// eventfd readable; what is written in it does not, and a stopped watch
// no longer counts.
func TestExitWatcher(t *testing.T) {
	x := newExitWatcher()
	if x == nil {
		t.Skip("no inotify here")
	}
	t.Cleanup(x.close)
	dir := t.TempDir()
	work, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(work) })
	ev, stop := x.watch(work)
	if ev < 0 {
		t.Fatal("no watch")
	}
	if err := os.WriteFile(filepath.Join(dir, "out.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.Chtimes(dir, now, now); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Poll([]unix.PollFd{{Fd: int32(ev), Events: unix.POLLIN}}, 60_000); n != 1 || err != nil {
		t.Fatalf("the touch was not seen: %d, %v", n, err)
	}
	var count [8]byte
	if _, err := unix.Read(ev, count[:]); err != nil || count[0] != 1 {
		t.Fatalf("events counted: %v, %v; want the touch alone", count, err)
	}
	stop()
	var nilWatcher *exitWatcher
	if ev, stop := nilWatcher.watch(work); ev != -1 {
		t.Fatalf("a nil watcher watched: %d", ev)
	} else {
		stop()
	}
}

// TestReportWholePastSignals: a report larger than its pipe reaches the
// reader whole although signals come while its write waits for the
// reader. One write returned at the first signal with what it had
// written, and the report lost its end.
func TestReportWholePastSignals(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	fd := int(w.Fd()) // blocking, as an init's report descriptor is
	b := bytes.Repeat([]byte("r"), 1<<20)
	tid := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // the thread ends with this goroutine
		tid <- unix.Gettid()
		report(fd, b)
		w.Close()
	}()
	writer := <-tid
	buf := make([]byte, 4<<10)
	got := 0
	for {
		_ = unix.Tgkill(os.Getpid(), writer, unix.SIGURG) // the runtime's own preemption signal
		n, err := r.Read(buf)
		got += n
		if err != nil {
			break
		}
	}
	if got != len(b) {
		t.Fatalf("read %d bytes of a report of %d", got, len(b))
	}
}
