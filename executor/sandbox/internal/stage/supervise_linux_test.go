package stage

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

// TestLifeline: the supervisor takes the last of the service's idle and
// busy bytes read at once, keeps its state on a byte that is neither,
// and reads a closed lifeline as the service's kill, though a byte the
// service wrote before it closed it is still unread (the run's PID 1 has
// ended the run at the close, and python's end cannot be read).
func TestLifeline(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	for _, c := range []struct {
		write      string
		idle, want bool
	}{
		{string(rune(protocol.LifelineIdle)), false, true},
		{string(rune(protocol.LifelineBusy)), true, false},
		{string([]byte{protocol.LifelineBusy, protocol.LifelineIdle}), false, true},
		{string([]byte{protocol.LifelineIdle, protocol.LifelineBusy}), true, false},
		{"?", true, true},
		{"?", false, false},
	} {
		if _, err := unix.Write(p[1], []byte(c.write)); err != nil {
			t.Fatal(err)
		}
		if got, err := lifeline(p[0], ready(t, p[0]), c.idle); err != nil || got != c.want {
			t.Errorf("%q read while idle=%v: idle=%v, %v; want idle=%v", c.write, c.idle, got, err, c.want)
		}
	}
	if _, err := unix.Write(p[1], []byte{protocol.LifelineBusy}); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[1])
	if _, err := lifeline(p[0], ready(t, p[0]), true); !errors.Is(err, errLifeline) {
		t.Errorf("a lifeline closed after a busy byte reads as %v, want errLifeline", err)
	}
	if _, err := lifeline(p[0], ready(t, p[0]), true); !errors.Is(err, errLifeline) {
		t.Errorf("a closed lifeline reads as %v, want errLifeline", err)
	}
}

// ready is what poll reports of fd, which has something to read.
func ready(t *testing.T, fd int) int16 {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 0); err != nil || n != 1 {
		t.Fatalf("poll the lifeline: %d, %v", n, err)
	}
	return fds[0].Revents
}

// reapRun is a supervised run whose python is pid, a child of the test:
// its end reaps it once it ended, as a cold run's end reaps what ended.
type reapRun struct{ pid int }

func (r reapRun) end(bool) (unix.WaitStatus, bool, error) {
	var ws unix.WaitStatus
	reaped, err := unix.Wait4(r.pid, &ws, unix.WNOHANG, nil)
	return ws, reaped == r.pid, err
}
func (reapRun) kill()               {}
func (reapRun) alone([]string) bool { return false }
func (reapRun) exiting() bool       { return false }
func (reapRun) signal()             {}

// TestSupervisorReapsAsChildrenEnd: a child's end wakes the supervisor
// (childEnds), which reaps it then, not after its wait of an hour: a
// cold run's init reaps the run's orphans as they end. Reaped only when
// the wait ended (every 50 ms at most), 70 "true &" in a row under load
// left 64 zombies, the run's RLIMIT_NPROC, and the last shell could not
// fork.
func TestSupervisorReapsAsChildrenEnd(t *testing.T) {
	children, stop, err := childEnds()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
	if err != nil {
		t.Skipf("no /bin/true to start: %v", err)
	}
	w := watch{pidfd: -1, lifeline: -1, exit: -1, children: children, idle: int(time.Hour.Milliseconds())}
	done := make(chan error, 1)
	go func() {
		// The child's SIGCHLD goes to another thread: it would interrupt
		// the wait of this one, where it happened to land, which did not
		// need the eventfd. The thread ends with this goroutine.
		runtime.LockOSThread()
		var chld unix.Sigset_t
		chld.Val[(unix.SIGCHLD-1)/64] |= 1 << ((unix.SIGCHLD - 1) % 64)
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &chld, nil); err != nil {
			done <- err
			return
		}
		_, err := w.supervise(reapRun{pid}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the child's end did not wake the supervisor")
	}
}
