//go:build linux

package sandbox

import (
	"strconv"
	"testing"

	"github.com/runblock/runblock/executor/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// TestForkedRunNetworkMadeAhead: a forked run's network namespace is one
// the maker of its PID 1 made ahead of the run, not one its clone made:
// it belongs to the fork server's user namespace, not the run's (so the
// run never holds a capability in it), and it is not the fork server's
// own.
func TestForkedRunNetworkMadeAhead(t *testing.T) {
	s := liveSession(t, false)
	if root, _ := s.processes(); root == "" {
		t.Skip("the session's processes cannot be read here")
	}
	link := func(path string) string { return sandboxtest.Readlink(t, path) }
	// The run's python, and the fork server, its parent.
	server := "/proc/" + strconv.Itoa(parentOf(s.eldest))
	fd, err := unix.Open(s.eldest+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	owner, err := unix.IoctlRetInt(fd, unix.NS_GET_USERNS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(owner)
	if got, run, want := link("/proc/self/fd/"+strconv.Itoa(owner)), link(s.eldest+"/ns/user"), link(server+"/ns/user"); got != want {
		t.Errorf("the run's network namespace belongs to %s, want the fork server's user namespace %s (the run's is %s)", got, want, run)
	}
	if run, own := link(s.eldest+"/ns/net"), link(server+"/ns/net"); run == own {
		t.Errorf("the run is in the fork server's network namespace %s", own)
	}
}
