package stage

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/executor/sandbox/sandboxtest"
	"github.com/runblock/runblock/internal/eventually"
	"github.com/runblock/runblock/internal/procstat"
	"golang.org/x/sys/unix"
)

// TestMakerMakesRunInits: the maker, a copy of this process that runs no
// Go, answers each request with a PID 1 in fresh namespaces (the PID and
// user namespaces asked for, and a network namespace of its own) that
// holds no descriptor, blocks every signal but SIGKILL and SIGSTOP, lets
// the kernel reap its children and dies when killed.
func TestMakerMakesRunInits(t *testing.T) {
	first, inits := testMaker(t, unix.CLONE_NEWUSER|unix.CLONE_NEWPID, nil)
	link := func(path string) string { return sandboxtest.Readlink(t, path) }
	second, ok := <-inits
	if !ok {
		t.Fatal("a second PID 1 was not made")
	}
	if link("/proc/"+strconv.Itoa(first.pid)+"/ns/net") == link("/proc/"+strconv.Itoa(second.pid)+"/ns/net") {
		t.Error("two PID 1s share a network namespace")
	}
	for _, init := range []runInit{first, second} {
		dir := "/proc/" + strconv.Itoa(init.pid)
		// It closes what it inherited as it starts, which may be after
		// the maker answered.
		eventually.True(t, func() bool {
			fds, err := os.ReadDir(dir + "/fd")
			return err == nil && len(fds) == 0
		}, "PID 1 %d holds descriptors, want none", init.pid)
		status, err := os.ReadFile(dir + "/status")
		if err != nil {
			t.Fatal(err)
		}
		fields := map[string]string{}
		for line := range strings.Lines(string(status)) {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.TrimSpace(v)
			}
		}
		blocked, _ := strconv.ParseUint(fields["SigBlk"], 16, 64)
		ignored, _ := strconv.ParseUint(fields["SigIgn"], 16, 64)
		if blocked|1<<(unix.SIGKILL-1)|1<<(unix.SIGSTOP-1) != 1<<64-1 || ignored&(1<<(unix.SIGCHLD-1)) == 0 {
			t.Errorf("PID 1's signals: blocked %s, ignored %s; want all blocked, SIGCHLD ignored", fields["SigBlk"], fields["SigIgn"])
		}
		// A clone of the maker, which keeps nothing of the init's memory
		// but its stacks and TLS (makerUnmaps): about 0.1 MiB here and
		// 0.2 in `runblock executor`, where clones of this test's process
		// held 0.9 and of a fork server's init 2.8.
		if anon, _ := strconv.Atoi(strings.TrimSuffix(fields["RssAnon"], " kB")); runtime.GOARCH == "amd64" && anon > 512 {
			t.Errorf("PID 1 holds %d KiB of its own memory, want at most 512", anon)
		}
		if f := strings.Fields(fields["NSpid"]); len(f) != 2 || f[1] != "1" {
			t.Errorf("PID 1's pids %q, want PID 1 of a PID namespace of its own", fields["NSpid"])
		}
		for _, ns := range []string{"net", "user"} {
			if link(dir+"/ns/"+ns) == link("/proc/self/ns/"+ns) {
				t.Errorf("PID 1 is in this process's %s namespace", ns)
			}
		}
		if err := unix.PidfdSendSignal(init.pidfd, unix.SIGKILL, nil, 0); err != nil {
			t.Fatal(err)
		}
		if n, err := unix.Poll([]unix.PollFd{{Fd: int32(init.pidfd), Events: unix.POLLIN}}, 60_000); n != 1 || err != nil {
			t.Fatalf("killed, PID 1 did not end: %d, %v", n, err)
		}
	}
	unix.Close(second.pidfd)
}

// testMaker starts a maker of PID 1s with the namespaces of flags (and
// the network namespaces of nets, see makeRunInits) and takes its first
// PID 1; the maker ends with the test (its socket shut,
// makeRunInits kills it), and the first PID 1 and every one it made that
// the test did not take die.
func testMaker(t *testing.T, flags uintptr, nets <-chan int) (runInit, <-chan runInit) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the maker needs root, to make network namespaces")
	}
	maker, makerPID, err := startMaker(flags)
	if err != nil {
		t.Fatal(err)
	}
	inits := make(chan runInit, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		makeRunInits(inits, maker, makerPID, nets)
	}()
	first, ok := <-inits
	if !ok {
		unix.Close(maker)
		t.Fatal("no PID 1 was made")
	}
	s, err := procstat.Read("/proc/" + strconv.Itoa(first.pid))
	ppid, ok := s.Int(4)
	if err != nil || !ok || int(ppid) != makerPID {
		t.Fatalf("PID 1's parent: %d, %v; want the maker, %d", ppid, err, makerPID)
	}
	t.Cleanup(func() {
		_ = unix.PidfdSendSignal(first.pidfd, unix.SIGKILL, nil, 0)
		unix.Close(first.pidfd)
		// Its writes only: the answer to the request under way comes
		// (a PID 1 the test kills), no request follows, and the maker
		// ends with no clone under way.
		if err := unix.Shutdown(maker, unix.SHUT_WR); err != nil {
			t.Error(err)
		}
		for init := range inits {
			_ = unix.PidfdSendSignal(init.pidfd, unix.SIGKILL, nil, 0)
			unix.Close(init.pidfd)
		}
		<-done
		unix.Close(maker)
		var ws unix.WaitStatus
		if _, err := unix.Wait4(makerPID, &ws, 0, nil); err != nil || ws.Exited() && ws.ExitStatus() != 0 {
			t.Errorf("the maker, its socket shut: %v, %v; want it ended (killed, or exited with 0)", ws, err)
		}
	})
	return first, inits
}

// TestKeepNetwork: a run's network namespace goes to the next PID 1s
// once its PID 1 has ended with no socket left in it, and only then; the
// maker makes a PID 1 in it.
func TestKeepNetwork(t *testing.T) {
	nets := make(chan int, 1)
	first, inits := testMaker(t, unix.CLONE_NEWUSER|unix.CLONE_NEWPID, nets)
	second, ok := <-inits
	if !ok {
		t.Fatal("a second PID 1 was not made")
	}
	defer unix.Close(second.pidfd)
	netOf := func(pid int) string { return sandboxtest.Readlink(t, "/proc/"+strconv.Itoa(pid)+"/ns/net") }
	kept := netOf(second.pid)
	kill := func(init runInit) func() {
		return func() { _ = unix.PidfdSendSignal(init.pidfd, unix.SIGKILL, nil, 0) }
	}
	keepNetwork(first, kill(first), newSocketDiag(inNetwork(t, first.pid, true)), nets)
	if len(nets) != 0 {
		t.Fatal("a network namespace with a socket left in it was kept")
	}
	keepNetwork(second, kill(second), newSocketDiag(inNetwork(t, second.pid, false)), nets)
	if len(nets) != 1 {
		t.Fatal("an empty network namespace was not kept")
	}
	// Two PID 1s may have been asked for before it was kept: the one
	// after them is made in it.
	found := false
	for range 3 {
		init, ok := <-inits
		if !ok {
			t.Fatal("no PID 1 was made")
		}
		found = found || netOf(init.pid) == kept
		_ = unix.PidfdSendSignal(init.pidfd, unix.SIGKILL, nil, 0)
		unix.Close(init.pidfd)
		if found {
			break
		}
	}
	if !found || len(nets) != 0 {
		t.Errorf("no PID 1 was made in the kept network namespace %s (still on offer: %d)", kept, len(nets))
	}
}

// inNetwork opens a sock_diag socket in the network namespace of pid and,
// where left, a Unix socket there that the test holds. Its thread goes
// back to its own namespace: a thread that ended would kill the maker
// (its parent thread, for PR_SET_PDEATHSIG) where it was the one that
// cloned it.
func inNetwork(t *testing.T, pid int, left bool) (diag int) {
	t.Helper()
	own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(own)
	ns, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ns)
	runtime.LockOSThread()
	if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	var fds []int
	diag, err = openSocketDiag()
	fds = append(fds, diag)
	if left && err == nil {
		var fd int
		fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		fds = append(fds, fd)
	}
	if back := unix.Setns(own, unix.CLONE_NEWNET); back != nil {
		t.Fatalf("back to the test's network namespace: %v", back) // the thread stays locked, and ends
	}
	runtime.UnlockOSThread()
	for _, fd := range fds {
		if fd >= 0 {
			t.Cleanup(func() { unix.Close(fd) })
		}
	}
	if err != nil {
		t.Fatalf("in the network namespace of %d: %v", pid, err)
	}
	return diag
}

// TestReapAskedByTheRunsPID1: a run's init asks the fork server to reap
// the run's python by the run's PID 1, as the run's request named it, in
// ForkReapSize bytes after the request: where the run ends before python
// said hello, the init does not know python's pid, and python may be
// forked still (here the fork server never forks it). The init asked by
// python's pid and, without it, looked for python in the PID 1's
// namespace: a python forked after that look was never reaped, and its
// PID 1 never ended.
func TestReapAskedByTheRunsPID1(t *testing.T) {
	_, inits := testMaker(t, unix.CLONE_NEWUSER|unix.CLONE_NEWPID, nil)
	init, ok := <-inits
	if !ok {
		t.Fatal("no PID 1 was made")
	}
	ours := make(chan runInit, 1)
	ours <- init // superviseFork takes it, and kills and closes it
	zygote, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(zygote[0])
	defer unix.Close(zygote[1])
	var fds []int // python's 0 to 4, the report's write end, the lifeline's read end
	for range protocol.RunPythonFDs {
		fd, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
	var report, lifeline [2]int
	for _, p := range []*[2]int{&report, &lifeline} {
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
	}
	defer unix.Close(report[0])
	fds = append(fds, report[1], lifeline[0])
	exits := newExitWatcher()
	defer exits.close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		superviseFork(zygote[0], fds, protocol.ForkRun{Slot: -1}, nil, ours, nil, idMaps{uid: 1000, base: 1 << 20}, exits)
	}()
	giveUp := sync.OnceFunc(func() { unix.Close(lifeline[1]) }) // the service gives up on the run
	t.Cleanup(func() { giveUp(); <-done })

	buf := make([]byte, protocol.ForkRequestMax)
	oob := make([]byte, unix.CmsgSpace(protocol.ZygoteFDs*4))
	n, oobn, _, _, err := unix.Recvmsg(zygote[1], buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range receivedFDs(oob[:oobn]) {
		unix.Close(fd)
	}
	if n < 8*(protocol.RecordInit+1) || int(binary.LittleEndian.Uint64(buf[8*protocol.RecordInit:])) != init.pid {
		t.Fatalf("the run's request %x does not name its PID 1, %d", buf[:n], init.pid)
	}
	giveUp()
	<-done
	n, _, err = unix.Recvfrom(zygote[1], buf, unix.MSG_DONTWAIT)
	if err != nil || n != protocol.ForkReapSize || int(binary.LittleEndian.Uint64(buf[:n])) != init.pid {
		t.Errorf("after the run's end the fork server read %x (%v), want its PID 1, %d, in %d bytes", buf[:max(n, 0)], err, init.pid, protocol.ForkReapSize)
	}
}

// TestIDMaps: a run's user namespace maps its root, and the snippet's uid
// where the run has a slot.
func TestIDMaps(t *testing.T) {
	for _, slot := range []int{-1, 3} {
		init, _ := testMaker(t, unix.CLONE_NEWUSER, nil)
		err := idMaps{uid: 1000, base: 1 << 20}.write(init.pid, slot)
		got, _ := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", init.pid))
		gids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/gid_map", init.pid))
		want := [][]string{{"0", "0", "1"}}
		if slot >= 0 {
			want = append(want, []string{"1000", strconv.Itoa(1<<20 + slot), "1"})
		}
		if err != nil || fmt.Sprint(fieldsOf(string(got))) != fmt.Sprint(want) || string(gids) != string(got) {
			t.Errorf("slot %d: maps %q and %q, %v; want %v", slot, got, gids, err, want)
		}
	}
}

// fieldsOf is each line of s split into its fields.
func fieldsOf(s string) [][]string {
	var out [][]string
	for line := range strings.Lines(s) {
		out = append(out, strings.Fields(line))
	}
	return out
}

// reapOnSecondAsk forks, from a python outside the run, a process into
// the PID namespace of the run's PID 1 (a pidfd of it at descriptor 3),
// as the fork server forks python, and reaps it only once asked twice on
// descriptor 4: a fork server that missed the first ask.
const reapOnSecondAsk = `import ctypes, os, socket, sys, time
if ctypes.CDLL(None, use_errno=True).setns(3, 0x20000000) != 0:
    sys.exit("setns: errno %d" % ctypes.get_errno())
pid = os.fork()
if pid == 0:
    time.sleep(600)
    os._exit(0)
print(pid, flush=True)
asks = socket.socket(fileno=4)
asks.recv(64)
asks.recv(64)
os.waitpid(pid, 0)
`

// TestKillAsksForTheReapAgain: a killed run whose PID 1 has not ended
// (it ends only once python is reaped) asks the fork server to reap
// python again, so that a fork server that missed the first ask lets
// the PID 1 end; kill waited for it for good.
func TestKillAsksForTheReapAgain(t *testing.T) {
	init, _ := testMaker(t, unix.CLONE_NEWUSER|unix.CLONE_NEWPID, nil)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("the fork server's stand-in needs python3: %v", err)
	}
	asks, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(asks[0])
	pidfd, err := unix.Dup(init.pidfd)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-I", "-c", reapOnSecondAsk)
	cmd.ExtraFiles = []*os.File{os.NewFile(uintptr(pidfd), "pid1"), os.NewFile(uintptr(asks[1]), "asks")}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("the stand-in forked nothing: %q, %v", line, err)
	}
	ask := func() { _, _ = unix.Write(asks[0], []byte{1}) }
	r := &forkedRun{initfd: init.pidfd, reap: sync.OnceFunc(ask), ask: ask}
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		r.kill()
	}()
	select {
	case <-killed:
	case <-time.After(30 * reapAgain):
		t.Fatal("kill still waits for the run's PID 1, which waits for the reap")
	}
}
