package stage

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/internal/procstat"
	"golang.org/x/sys/unix"
)

// sandboxForkServer is the fork server's init: PID 1 of its namespaces,
// root of its user namespace. It builds the minimal root as a run's init
// does and starts python as the fork server, not locked down (it makes
// each run's namespaces). Then it is every forked run's init: the service
// asks it for runs on the control socket (protocol.FDForkControl), it
// passes each on to the fork server and supervises what comes back
// (superviseFork). When the fork server ends it reports how, and
// everything in the namespaces dies with it.
func sandboxForkServer() {
	spec := setUpInit(nil) // the runs take their own lockdown (forkserver.py)
	maker, makerPID, err := startMaker(spec.RunClone)
	if err != nil {
		die(protocol.FDInitStatus, err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("fork server socket: %w", err))
	}
	pid, err := syscall.ForkExec(spec.Python, append([]string{spec.Python}, spec.Args...), &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []uintptr{0, 1, 2, protocol.FDForkControl: uintptr(pair[1]), protocol.FDStatus: protocol.FDStatus},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true},
	})
	if err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("start python: %w", err))
	}
	unix.Close(pair[1])
	unix.Close(protocol.FDStatus)
	inits := make(chan runInit, initsAhead)
	nets := make(chan int, netsKept)
	go makeRunInits(inits, maker, makerPID, nets)
	ids := idMaps{uid: spec.RunUID, base: spec.RunIDBase}
	go serveForks(protocol.FDForkControl, pair[0], spec.Landlock, inits, nets, ids, newExitWatcher())
	var st protocol.InitStatus
	for {
		var ws unix.WaitStatus
		reaped, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			die(protocol.FDInitStatus, fmt.Errorf("wait: %w", err))
		}
		if reaped == pid {
			ending.Store(true)
			setEnd(&st, ws)
			break
		}
		if reaped == makerPID {
			// No run can be made any more: the service starts another
			// fork server, as it does when this one ends.
			ending.Store(true)
			st.Error = fmt.Sprintf("the maker of the runs' PID 1s ended (wait status %#x)", ws)
			if ws.Exited() && ws.ExitStatus() == makerNoCloseRange {
				st.Error = "the maker of the runs' PID 1s could not close the init's descriptors: close_range needs Linux 5.9"
			}
			break
		}
	}
	finishRun(st, protocol.CollectLimits{})
}

// serveForks takes run requests from the service on ctl, hands python's
// descriptors and a back channel to the fork server (zygote), and
// supervises each run. When the service closes ctl, it kills the fork
// server.
func serveForks(ctl, zygote int, landlock *protocol.LandlockSet, inits <-chan runInit, nets chan<- int, ids idMaps, exits *exitWatcher) {
	buf := make([]byte, protocol.ForkRequestMax)
	oob := make([]byte, unix.CmsgSpace(protocol.RunFDs*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(ctl, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			ending.Store(true)
			_ = unix.Kill(-1, unix.SIGKILL) // the service is gone
			os.Exit(1)
		}
		fds := receivedFDs(oob[:oobn])
		var run protocol.ForkRun
		if len(fds) != protocol.RunFDs || json.Unmarshal(buf[:n], &run) != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		go superviseFork(zygote, fds, run, landlock, inits, nets, ids, exits)
	}
}

// ending: the fork server is gone, or the service let go of it, and every
// run dies with its init. A run that ends meanwhile ended by that fault,
// not by its snippet: its supervisor reports nothing, so that the service
// finds the run stale and runs it again from scratch (Executor.Run),
// never with a verdict of the kill or an error of reading its end.
var ending atomic.Bool

// report writes a run's report b on fd, unless the fork server is ending.
func report(fd int, b []byte) {
	if !ending.Load() {
		writeAll(fd, b)
	}
}

// receivedFDs are the descriptors in a message's control data.
func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// superviseFork runs one forked run: asks the fork server for it, waits
// for python's hello, then supervises it as a cold run's init does its own
// (watch.supervise): accounts the run's memory, and when python ends kills
// the run, collects the files left in its work dir and reports how python
// ended on the report descriptor, which python never held. When the
// service closes the lifeline it kills the run without a report. The
// run's network namespace then goes to nets where keepNetwork finds it
// empty.
func superviseFork(zygote int, fds []int, run protocol.ForkRun, landlock *protocol.LandlockSet, inits <-chan runInit, nets chan<- int, ids idMaps, exits *exitWatcher) {
	reportFD, lifeline := fds[protocol.RunReport], fds[protocol.RunLifeline]
	defer unix.Close(reportFD)
	defer unix.Close(lifeline)
	toZygote := append(fds[:protocol.RunPythonFDs:protocol.RunPythonFDs], -1) // the back channel's end at ZygoteBack
	// Each is closed once sent, or where the fork server is not asked.
	defer func() {
		for _, fd := range toZygote {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	fail := func(err error) {
		report(reportFD, encodeReport(protocol.InitStatus{Error: err.Error()}, protocol.CollectLimits{}))
	}
	init, ok := <-inits
	if !ok {
		// The maker is gone, and this init ends with it: the service runs
		// the run again, from scratch while no fork server is up.
		ending.Store(true)
		return
	}
	// python is the fork server's child: its zombie keeps how it ended
	// until reap asks the fork server to reap it, once that is read or at
	// the run's end. The fork server knows it by the run's PID 1 (see
	// protocol.ForkReapSize), where it never said a word too; a killed
	// run whose PID 1 does not end asks again (forkedRun.kill).
	ask := func() { askReap(zygote, init.pid) }
	reap := sync.OnceFunc(ask)
	// Killed once the run ends, however it ends (again, where the
	// supervisor killed it already): that ends every process of the run.
	end := func() {
		reap()
		_ = unix.PidfdSendSignal(init.pidfd, unix.SIGKILL, nil, 0)
	}
	defer unix.Close(init.pidfd)
	defer end()
	if err := ids.write(init.pid, run.Slot); err != nil {
		fail(err)
		return
	}
	back, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fail(fmt.Errorf("back channel: %w", err))
		return
	}
	defer unix.Close(back[0])
	if err := unix.SetsockoptInt(back[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		fail(fmt.Errorf("back channel: %w", err))
		return
	}
	toZygote[protocol.ZygoteBack] = back[1]
	err = unix.Sendmsg(zygote, run.Record(init.pid), unix.UnixRights(append(toZygote, init.pidfd)...), nil, 0) // the PID 1 at ZygoteInit
	for i, fd := range toZygote {
		unix.Close(fd)
		toZygote[i] = -1
	}
	if err != nil {
		fail(fmt.Errorf("ask the fork server: %w", err))
		return
	}
	wait := []unix.PollFd{{Fd: int32(back[0]), Events: unix.POLLIN}, {Fd: int32(lifeline), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(wait, -1); err != nil && !errors.Is(err, unix.EINTR) {
			fail(fmt.Errorf("wait for python's hello: %w", err))
			return
		}
		if wait[0].Revents != 0 {
			break
		}
		if wait[1].Revents != 0 {
			return // killed before python said hello
		}
	}
	buf := make([]byte, protocol.ForkHelloMax)
	oob := make([]byte, unix.CmsgSpace(2*4)+unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, _, _, err := unix.Recvmsg(back[0], buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		fail(fmt.Errorf("the fork failed before python said hello: %v", err))
		return
	}
	var cred *unix.Ucred
	work, diag := -1, -1
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if c, err := unix.ParseUnixCredentials(&m); err == nil {
				cred = c
			}
			if got, err := unix.ParseUnixRights(&m); err == nil {
				for _, fd := range got {
					defer unix.Close(fd)
				}
				if len(got) == 2 {
					work, diag = got[0], got[1]
				}
			}
		}
	}
	var hello protocol.ForkHello
	if err := json.Unmarshal(buf[:n], &hello); err != nil || hello.Error != "" {
		fail(fmt.Errorf("fork server: %s", cmp.Or(hello.Error, fmt.Sprint(err))))
		return
	}
	if cred == nil || work < 0 {
		fail(errors.New("python's hello came without its credentials, work dir or sock_diag socket"))
		return
	}
	sockets := newSocketDiag(diag)
	defer keepNetwork(init, end, sockets, nets)
	// Opened before the snippet exists: the mount python made.
	shm, err := unix.Openat(work, policy.ShmDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		fail(fmt.Errorf("open the shared memory tmpfs: %w", err))
		return
	}
	defer unix.Close(shm)
	python := int(cred.Pid)
	if err := unix.Setpriority(unix.PRIO_PROCESS, python, policy.SnippetNice); err != nil {
		fail(fmt.Errorf("python's nice value: %w", err))
		return
	}
	exit, unwatch := exits.watch(work)
	defer unwatch()
	st, err := superviseForked(python, init, reap, ask, lifeline, exit, run.Memory, &counter{diag: sockets, work: work, shm: shm}, func() error {
		return answerHello(back[0], python, landlock)
	})
	if errors.Is(err, errLifeline) {
		return
	}
	if err != nil {
		fail(err)
		return
	}
	if run.Collect.MaxFiles > 0 {
		if st.Files, st.Omitted, err = collectAt(work, run.Collect); err != nil {
			st.Files, st.Omitted = nil, workDirUnreadable(err)
		}
	}
	st.Displays = readDisplaysAt(work)
	b := encodeReport(st, run.Collect)
	report(reportFD, b)
	// This init lives on: what collecting many files and writing a large
	// report took goes back to the system now, not at the runtime's
	// leisure, so that no run leaves memory behind in it.
	if len(b) >= 64<<10 {
		debug.FreeOSMemory()
	}
}

// netsKept bounds the network namespaces that runs left and keepNetwork
// kept for the next PID 1s (see makeRunInits); one more is closed.
const netsKept = 4

// netDeadWait bounds how long keepNetwork waits for a run's PID 1 to end.
const netDeadWait = time.Second

// keepNetwork ends the run (end) and offers its network namespace, of
// which diag is a socket, to the next PID 1s on nets once the run's PID 1
// has ended, and so every process of the run (it ends only once every
// other process of its PID namespace has been reaped), and sock_diag
// lists no socket left in it: a namespace that runs' processes left with
// none holds nothing of theirs (nothing of a run can configure it: it
// belongs to the fork server's user namespace, and the run makes Unix
// sockets only, whose in-flight descriptors keep any other alive). A
// network namespace costs a run about 0.6 ms of CPU, half of it in the
// kernel's workers once it is freed, of a pre-forked hello's 5 to 6 ms.
// Where any of that cannot be told, the namespace is freed.
func keepNetwork(init runInit, end func(), diag *socketDiag, nets chan<- int) {
	end()
	if ending.Load() {
		return
	}
	if dead, err := ended(init.pidfd, netDeadWait); !dead || err != nil {
		return
	}
	if left, _, err := diag.dump(); err != nil || left != 0 {
		return
	}
	ns, err := unix.IoctlRetInt(diag.fd, unix.SIOCGSKNS)
	if err != nil {
		return
	}
	select {
	case nets <- ns:
	default:
		unix.Close(ns)
	}
}

// answerHello answers python's hello with its Landlock ruleset (made here
// with set's paths as python sees them), which python restricts itself
// with as it locks itself down (forkserver.py). Nothing of the snippet
// exists yet.
func answerHello(back, python int, set *protocol.LandlockSet) error {
	var rights []byte
	if set != nil {
		root := fmt.Sprintf("/proc/%d/root", python)
		in := func(paths []string) []string {
			out := make([]string, len(paths))
			for i, p := range paths {
				out[i] = root + p
			}
			return out
		}
		ruleset, err := landlockRuleset(protocol.LandlockSet{ListDirs: in(set.ListDirs), RODirs: in(set.RODirs), RWDirs: in(set.RWDirs),
			ROFiles: in(set.ROFiles), RWFiles: in(set.RWFiles)})
		if err != nil {
			return err
		}
		if ruleset >= 0 {
			defer unix.Close(ruleset)
			rights = unix.UnixRights(ruleset)
		}
	}
	if err := unix.Sendmsg(back, []byte("{}"), rights, nil, 0); err != nil {
		return fmt.Errorf("answer python's hello: %w", err)
	}
	return nil
}

// forkedRun is a run forked from the fork server, as the fork server's
// init supervises it: python's pid (in the fork server's PID namespace),
// a pidfd of the run's PID 1 (which this init made: killing it ends the
// run) and how it asks the fork server to reap python (its child, whose
// zombie keeps how it ended until then).
type forkedRun struct {
	python, initfd int
	inner          string // python's pid in the run's PID namespace
	reap           func()
	ask            func() // asks for the reap again (see kill)
	// status is python's, once exiting read it.
	status *unix.WaitStatus
}

// superviseForked supervises the forked run of python (see
// watch.supervise), counting its memory with mem (which it completes with
// the run's PID namespace) against limit, watching exit (see watch.exit;
// -1: none); reap asks the fork server to reap python.
func superviseForked(python int, init runInit, reap, ask func(), lifeline, exit int, limit int64, mem *counter, start func() error) (protocol.InitStatus, error) {
	// Until python is reaped, its pid, stat file and namespace links stay
	// its own, even once it ended.
	pidfd, err := unix.PidfdOpen(python, 0)
	if err != nil {
		return protocol.InitStatus{}, fmt.Errorf("pidfd_open python: %w", err)
	}
	defer unix.Close(pidfd)
	// The run's /proc, which python mounted, as its PID 1's root shows it:
	// open, it stays the run's whatever becomes of that pid. The fork
	// server's own lists every run's processes.
	proc, err := os.Open(fmt.Sprintf("/proc/%d/root/proc", init.pid))
	if err != nil {
		return protocol.InitStatus{}, fmt.Errorf("open the run's /proc: %w", err)
	}
	defer proc.Close()
	if err := unix.PidfdSendSignal(init.pidfd, 0, nil, 0); err != nil {
		return protocol.InitStatus{}, fmt.Errorf("the run's init: %w", err)
	}
	mem.proc = fmt.Sprintf("/proc/self/fd/%d", proc.Fd())
	inner, err := innerPID(python)
	if err != nil {
		return protocol.InitStatus{}, err
	}
	w := watch{pidfd: pidfd, lifeline: lifeline, exit: exit, children: -1, idle: -1, memory: mem, limit: limit}
	return w.supervise(&forkedRun{python: python, initfd: init.pidfd, inner: inner, reap: reap, ask: ask}, start)
}

// end reads how python ended once it did, or once it is exiting (see
// exiting): a zombie until this init asks for its reap, its status is in
// its stat file, where the kernel writes it before it frees python's
// memory.
func (r *forkedRun) end(exited bool) (unix.WaitStatus, bool, error) {
	if !exited {
		return 0, false, nil
	}
	if r.status != nil {
		return *r.status, true, nil
	}
	ws, err := exitStatus(r.python)
	return ws, true, err
}

// exiting reports whether python is exiting: every thread of it has begun
// its exit, so that none runs the snippet's code again, and the kernel
// has taken python's memory from it, after setting the status it exits
// with (do_exit in the kernel's exit.c: exit_code, then exit_mm), which
// it keeps for end. It asks again every exitPoll for up to exitWait:
// python touches its work dir just before its exit. Nothing here trusts
// the touch, which the snippet can make too: where python is not exiting
// by then, it is false.
func (r *forkedRun) exiting() bool {
	deadline := time.Now().Add(exitWait)
	for {
		if ws, ok := exiting(r.python); ok {
			r.status = &ws
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		_ = unix.Nanosleep(&unix.Timespec{Nsec: exitPoll.Nanoseconds()}, nil)
	}
}

// exitWait bounds how long exiting waits for python's exit after its
// touch, which python makes just before it exits (a thread of it held in
// a system call exits at the call's end), and exitPoll is how often it
// asks meanwhile.
const (
	exitWait = time.Millisecond
	exitPoll = 20 * time.Microsecond
)

// pfExiting is the flag of a task that has begun its exit (PF_EXITING of
// the kernel's sched.h), in the flags of its stat file.
const pfExiting = 0x4

// exiting reports whether every thread of pid is exiting and pid's memory
// is taken from it (its stat's virtual size is 0), and then the status it
// exits with.
func exiting(pid int) (unix.WaitStatus, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	s, err := procstat.Read(dir)
	flags, ok := s.Int(9)
	vsize, ok2 := s.Int(23)
	code, ok3 := s.Int(52)
	if err != nil || !ok || !ok2 || !ok3 || flags&pfExiting == 0 || vsize != 0 {
		return 0, false
	}
	tasks, err := Processes(dir+"/task", nil)
	if err != nil {
		return 0, false
	}
	for _, task := range tasks {
		if task == dir+"/task/"+strconv.Itoa(pid) {
			continue
		}
		s, err := procstat.Read(task)
		flags, ok := s.Int(9)
		if err != nil || !ok || flags&pfExiting == 0 {
			return 0, false
		}
	}
	return unix.WaitStatus(code), true
}

// reapAgain is how long kill waits for a killed run's PID 1 to end
// before it asks the fork server again to reap python.
const reapAgain = time.Second

// kill kills the run's init, which ends every process of the run, and
// waits until they are dead. The PID 1 ends only once the fork server
// reaped python, which it does at the ask, or as python's end is
// signalled where python still ran; where the PID 1 has not ended within
// reapAgain, the fork server is asked again, at that pace: once, in the
// whole suite under -race, a fork server sat reading its socket beside
// python's unreaped zombie, its PID 1 waiting for the reap and this
// wait for the PID 1, for good.
func (r *forkedRun) kill() {
	r.signal()
	for {
		if dead, err := ended(r.initfd, reapAgain); dead || err != nil {
			return
		}
		r.ask()
	}
}

// ended reports whether the process of pidfd ended within d.
func ended(pidfd int, d time.Duration) (bool, error) {
	dead := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(dead, int(d.Milliseconds()))
		if !errors.Is(err, unix.EINTR) {
			return n > 0, err
		}
	}
}

// signal kills the run's init, which ends every process of the run, once
// it asked the fork server to reap python (without which the PID 1 does
// not end).
func (r *forkedRun) signal() {
	r.reap()
	_ = unix.PidfdSendSignal(r.initfd, unix.SIGKILL, nil, 0)
}

// alone: python, exiting or a zombie, is all there is (its pid in the
// run's PID namespace, as the count names it), or not even that.
func (r *forkedRun) alone(pids []string) bool {
	return len(pids) == 0 || len(pids) == 1 && pids[0] == r.inner
}

// innerPID is pid's pid in its own PID namespace: the last of the NSpid
// line of its status.
func innerPID(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", fmt.Errorf("read python's status: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" {
			return f[len(f)-1], nil
		}
	}
	return "", errors.New("python's status has no NSpid line")
}

// exitStatus is the wait status of pid, exiting or a zombie, from its
// stat file.
func exitStatus(pid int) (unix.WaitStatus, error) {
	s, err := procstat.Read("/proc/" + strconv.Itoa(pid))
	code, ok := s.Int(52)
	if err != nil || !ok {
		return 0, fmt.Errorf("read how python ended: %v", err)
	}
	return unix.WaitStatus(code), nil
}
