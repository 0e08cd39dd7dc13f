package stage

import (
	"errors"
	"testing"

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
