//go:build linux

package sandbox

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
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

// TestForkedRunNetworkReused: a forked run's network namespace may be one
// an earlier run left, once every process of that run has ended with no
// socket left in it (keepNetwork): runs back to back come to reuse one,
// and each finds nothing of an earlier run's there (the name of an
// abstract Unix socket, which lives in the network namespace, is free
// though each run leaves one bound, held by a descriptor in flight), nor
// of a live session's, whose namespace is no other run's while it lives.
func TestForkedRunNetworkReused(t *testing.T) {
	e := newForking(t, Config{})
	live, err := e.StartSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Close() })
	const probe = `import os, socket
def free(name):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(name)
        return True
    except OSError:
        return False
    finally:
        s.close()
# SO_NETNS_COOKIE: a network namespace's, never another's, where the
# inode number of /proc/self/ns/net may be a freed namespace's.
netns = int.from_bytes(socket.socket(socket.AF_UNIX).getsockopt(socket.SOL_SOCKET, 71, 8), "little")
print(netns, free(b"\0runblock-held"), free(b"\0runblock-left"))
`
	const leave = `
left = socket.socket(socket.AF_UNIX)
left.bind(b"\0runblock-left")
a, b = socket.socketpair()
socket.send_fds(a, [b"x"], [a.fileno(), b.fileno(), left.fileno()])
`
	res, err := live.Run(context.Background(), executor.Request{Code: probe + "held = socket.socket(socket.AF_UNIX)\nheld.bind(b\"\\0runblock-held\")\nheld.listen()\n"})
	if err != nil || !res.Success {
		t.Fatalf("session: %+v, %v", res, err)
	}
	session, _, _ := strings.Cut(res.Stdout, " ")
	seen := map[string]bool{session: true}
	reused := false
	for i := range 40 {
		code := probe
		if i%2 == 0 {
			code += leave
		}
		res, err := e.Run(context.Background(), executor.Request{Code: code})
		if err != nil || !res.Success {
			t.Fatalf("run %d: %+v, %v", i, res, err)
		}
		f := strings.Fields(res.Stdout)
		if len(f) != 3 || f[1] != "True" || f[2] != "True" || f[0] == session {
			t.Fatalf("run %d in %q, the session's %s: want a network namespace of its own, the session's socket and the last runs' not found (True True)", i, res.Stdout, session)
		}
		reused = reused || seen[f[0]]
		seen[f[0]] = true
		if reused && i >= 10 {
			break
		}
	}
	if !reused {
		t.Errorf("40 runs back to back had %d network namespaces: none was reused", len(seen)-1)
	}
}
