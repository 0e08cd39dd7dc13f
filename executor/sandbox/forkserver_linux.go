package sandbox

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forkServer keeps one fork server running for an executor, and starts it
// again when it dies: a long-lived sandbox whose init (sandboxForkServer)
// built its minimal root, in fresh user, mount, PID, network, IPC, UTS and
// cgroup namespaces, and started python with the guard in place and the
// preloads imported (the zygote of Android, the fork server of Sandbox2).
// It never runs user code: each run is a clone of it into namespaces of
// its own, which locks itself down (forkserver.py), so a run costs a fork,
// not an interpreter start. The fork server's init supervises every run
// as a cold run's init does. While it is down, runs start from scratch.
//
// What holds, as for a cold run (and is tested):
//   - nothing of one run reaches another: each has its own user, mount,
//     PID, network, IPC, UTS and cgroup namespaces, its own PID 1, /proc,
//     work dir tmpfs and host uid; its memory is a copy-on-write copy of
//     the fork server's, never shared writable; random (and numpy's
//     global generator) is reseeded;
//   - the fork server cannot be reached from a run: it is in a parent PID
//     namespace (invisible, unsignallable), another uid, and the run holds
//     none of its descriptors; ptrace and the like are denied by seccomp;
//   - a run's verdict comes from its exit status, read by the init, never
//     from anything python writes.
//
// What does not: what a process draws once, at execve, is the fork
// server's, the same in every run: its memory layout, the kernel's
// AT_RANDOM bytes (glibc's stack canary and pointer guard) and python's
// str hash secret (CPython caches each string's hash under it, and every
// dict of the interpreter is built on those hashes). A fork cannot draw
// them anew; no run can give another input that would make them matter
// (README.md, "What the forks of one fork server share"). Each fork server
// draws its own when it starts, and a new one takes over after
// forkServerRuns runs.
type forkServer struct {
	plan    *plan
	preload string
	log     *slog.Logger

	// maxRuns is how many runs a fork server forks before a new one,
	// with a hash secret of its own, takes over: the secret is the one
	// thing its runs share (see forkServer).
	maxRuns int64
	// start starts one fork server: launch, or a test's stand-in.
	start func(context.Context) (*fsProc, error)
	// answerTimeout bounds how long a run waits for the fork server to
	// take its request and fork it ready: past it the fork server is
	// taken for stuck, killed and started again, and the run starts from
	// scratch.
	answerTimeout time.Duration

	mu     sync.Mutex
	live   *fsProc       // nil while down
	rotate chan struct{} // the live one has forked maxRuns runs or more

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// fsProc is one started fork server.
type fsProc struct {
	cmd    *exec.Cmd
	ctl    *os.File // the service's end of the control socket
	kill   context.CancelFunc
	done   chan struct{} // the fork server's init has exited
	report []byte        // its init's report
	logs   sync.WaitGroup
	forks  atomic.Int64   // runs asked of it
	runs   sync.WaitGroup // its runs not yet destroyed
}

// forkServerRuns is forkServer.maxRuns.
const forkServerRuns = 1000

// forkServerUIDBase is the first uid of the fork server's user namespace
// mapped to the snippets' host uids: uid forkServerUIDBase+slot is host uid
// plan.hostUID+slot, and a run's namespace maps policy.UID to one of them.
const forkServerUIDBase = 1 << 20

// forkServerRestart bounds how fast a dying fork server is started again.
const forkServerRestart = time.Second

// forkServerAnswer is forkServer.answerTimeout: a fork takes milliseconds,
// a pre-forked one copying its preloads' pages well under a second.
const forkServerAnswer = 10 * time.Second

// startForkServer starts the fork server of pl, with preload imported, and
// keeps it running until close.
func startForkServer(ctx context.Context, pl *plan, preload []string, log *slog.Logger) (*forkServer, error) {
	if !pl.layers.Namespaces {
		return nil, errors.New("this tier has no namespaces: each run needs its own")
	}
	if pl.cgroup != nil {
		return nil, errors.New("each run gets its own cgroup, which a fork cannot be placed in here")
	}
	fs := &forkServer{plan: pl, preload: strings.Join(preload, ","), log: log, maxRuns: forkServerRuns,
		answerTimeout: forkServerAnswer, rotate: make(chan struct{}, 1)}
	fs.start = fs.launch
	live, err := fs.start(ctx)
	if err != nil {
		return nil, err
	}
	fs.live = live
	mctx, cancel := context.WithCancel(context.Background())
	fs.cancel = cancel
	fs.wg.Go(func() { fs.keep(mctx, live) })
	return fs, nil
}

// keep starts the fork server again whenever it dies, and replaces it
// after maxRuns runs, until ctx ends. A replaced one ends once the
// runs forked from it are destroyed.
func (fs *forkServer) keep(ctx context.Context, live *fsProc) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	<-retry.C
	for {
		select {
		case <-live.done:
		case <-fs.rotate:
			next, err := fs.start(ctx)
			if err != nil {
				if ctx.Err() == nil {
					fs.log.Error("start the next fork server", "err", err)
				}
				continue
			}
			fs.mu.Lock()
			fs.live = next
			fs.mu.Unlock()
			old := live
			live = next
			fs.wg.Go(func() { fs.retire(ctx, old) })
			continue
		case <-ctx.Done():
			live.stop()
			return
		}
		fs.log.Warn("fork server died; starting it again (runs start from scratch meanwhile)", "report", strings.TrimSpace(string(live.report)))
		fs.mu.Lock()
		fs.live = nil
		fs.mu.Unlock()
		live.stop()
		for {
			retry.Reset(forkServerRestart)
			select {
			case <-retry.C:
			case <-ctx.Done():
				return
			}
			next, err := fs.start(ctx)
			if err == nil {
				live = next
				break
			}
			fs.log.Error("start the fork server", "err", err)
		}
		fs.mu.Lock()
		fs.live = live
		fs.mu.Unlock()
	}
}

// retire stops a replaced fork server once its runs are destroyed (or at
// once when ctx ends, which ends them).
func (fs *forkServer) retire(ctx context.Context, old *fsProc) {
	idle := make(chan struct{})
	go func() {
		old.runs.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	old.stop()
	<-idle // stop destroyed what was left
}

// close stops the fork server; runs forked from it end with it.
func (fs *forkServer) close() {
	fs.cancel()
	fs.wg.Wait()
}

func (fs *forkServer) current() *fsProc {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.live
}

// launch starts one fork server and waits until it is ready.
func (fs *forkServer) launch(ctx context.Context) (*fsProc, error) {
	pl := fs.plan
	flags, err := namespaceFlags(policy.Namespaces)
	if err != nil {
		return nil, err
	}
	lim := limits{Timeout: DefaultTimeout, Memory: DefaultMemoryBytes}
	spec := pl.spec(lim, policy.WorkDir)
	conf, err := json.Marshal(forkServerConf{
		CloneFlags: flags, SysClone: unix.SYS_CLONE, Seccomp: hex.EncodeToString(pl.seccomp),
		ProcOptions: policy.ProcOptions, WorkDir: policy.WorkDir, ShmDir: policy.ShmDir, WorkInodes: policy.WorkInodes,
		WorkNoExec: policy.WorkNoExec, UID: policy.UID, IDBase: forkServerUIDBase,
		ControlFD: fdForkControl, StatusFD: fdStatus, Ready: statusReady, RequestMax: forkRequestMax, RunFDs: runFDs,
		RunPythonFDs: runPythonFDs, RunBack: runReport, RunLifeline: runLifeline, HelloMax: forkHelloMax, ErrorMax: forkErrorMax,
	})
	if err != nil {
		return nil, err
	}
	fontCache := ""
	if pl.fontCache != "" {
		fontCache = policy.FontCacheDir
	}
	spec.Args = slices.Concat(policy.PythonFlags, []string{"-c", forkServerLoader, pl.py.Guard}, guardArgv(string(conf), pl.guardMode("forkserver"), fontCache, fs.preload, pl.py.Site))
	// The fork server is root of its namespace, and owns its own work dir.
	// spec.Landlock is the runs' (its init makes each run's ruleset).
	spec.Seccomp, spec.MemoryBytes, spec.UID, spec.GID = nil, 0, 0, 0

	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	live := &fsProc{ctl: os.NewFile(uintptr(pair[0]), "fork server control"), done: make(chan struct{})}
	child := os.NewFile(uintptr(pair[1]), "fork server control")
	defer child.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		live.ctl.Close()
		return nil, err
	}
	defer statusR.Close()
	initR, initW, err := os.Pipe()
	if err != nil {
		live.ctl.Close()
		statusW.Close()
		return nil, err
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		live.ctl.Close()
		statusW.Close()
		initR.Close()
		initW.Close()
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	live.kill = cancel
	cmd, err := pl.command(pctx, spec, -1, -1)
	if err == nil {
		cmd.Args[0] = forkServerMarker
		if pl.mapRoot {
			ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: forkServerUIDBase, HostID: pl.hostUID, Size: pl.uidSlots}}
			cmd.SysProcAttr.UidMappings, cmd.SysProcAttr.GidMappings = ids, ids
		}
		cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = logW, logW, []*os.File{child, statusW, initW}
		cmd.WaitDelay = time.Second
		err = cmd.Start()
	}
	statusW.Close()
	initW.Close()
	logW.Close()
	if err != nil {
		cancel()
		live.ctl.Close()
		initR.Close()
		logR.Close()
		return nil, fmt.Errorf("start the fork server: %w", err)
	}
	live.cmd = cmd
	live.logs.Go(func() {
		// What the fork server's python says (a failed fork's traceback)
		// goes to the log, a line at a time.
		// A line is logged in pieces of at most 4 KiB, and the pipe read
		// to its end, so the fork server never blocks writing to it.
		r := bufio.NewReaderSize(logR, 4<<10)
		for {
			line, err := r.ReadSlice('\n')
			if len(line) > 0 {
				fs.log.Warn("fork server", "says", strings.TrimSpace(string(line)))
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		logR.Close()
	})
	go func() {
		live.report, _ = io.ReadAll(io.LimitReader(initR, 64<<10))
		initR.Close()
		cmd.Wait()
		close(live.done)
	}()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(statusR).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	select {
	case line := <-ready:
		if line == statusReady {
			return live, nil
		}
		live.stop()
		var st initStatus
		if json.Unmarshal(live.report, &st) == nil && st.Error != "" {
			return nil, errors.New(st.Error)
		}
		return nil, fmt.Errorf("the fork server ended before it was ready: %s", strings.TrimSpace(string(live.report)))
	case <-ctx.Done():
		live.stop()
		<-ready
		return nil, ctx.Err()
	}
}

// stop kills the fork server (and every run forked from it) and waits.
func (live *fsProc) stop() {
	live.ctl.Close()
	live.kill()
	<-live.done
	live.logs.Wait()
}

// errForkServerDown: no fork server takes runs right now.
var errForkServerDown = errors.New("the fork server is down")

// spawn asks the fork server for a run with lim, and waits until its guard
// is in place, like spawn.
func (fs *forkServer) spawn(ctx context.Context, lim limits, keep, maxOutput int64) (*proc, error) {
	return fs.fork(ctx, lim, keep, maxOutput, false)
}

// prefork is spawn for the pool: the run copies the pages it shares with
// the fork server before it says "ready", not one by one as its snippet
// touches them; unless the fork server preloaded modules, whose heap (about
// 40 MiB with numpy and matplotlib) each run would copy whole while a plain
// run writes to a few hundred of its pages (measured: idle pre-forked hello
// about as slow either way, closed loop at c1 19.7 against 7.9 ms).
func (fs *forkServer) prefork(ctx context.Context, lim limits, keep, maxOutput int64) (*proc, error) {
	return fs.fork(ctx, lim, keep, maxOutput, fs.preload == "")
}

func (fs *forkServer) fork(ctx context.Context, lim limits, keep, maxOutput int64, prefault bool) (*proc, error) {
	live := fs.current()
	if live == nil {
		return nil, errForkServerDown
	}
	// Every run from the maxRuns-th on asks for a replacement, so one
	// that fails to start is asked for again by the next run.
	if live.forks.Add(1) >= fs.maxRuns {
		select {
		case fs.rotate <- struct{}{}:
		default: // a replacement is already asked for
		}
	}
	p := newProc(fs.plan, lim, maxOutput)
	live.runs.Add(1)
	p.release = live.runs.Done
	ends, err := p.pipes(true)
	if err != nil {
		return p.fail(ends, err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return p.fail(ends, err)
	}
	defer lifeR.Close()
	var once sync.Once
	p.kill = func() { once.Do(func() { lifeW.Close() }) }
	slot := -1
	if uid := fs.plan.runUID(); uid >= 0 {
		slot = uid - fs.plan.hostUID
	}
	lim.Accounted, lim.Tmpfs = true, true
	var rls []forkRlimit
	for _, rl := range rlimits(lim) {
		rls = append(rls, forkRlimit{rl.resource, rl.value})
	}
	msg, err := json.Marshal(forkRun{Rlimits: rls, Memory: lim.Memory, WorkBytes: min(policy.WorkBytes, lim.Memory), Prefault: prefault,
		Slot: slot, Collect: fs.plan.transfer()})
	if err == nil && len(msg) > forkRequestMax {
		err = fmt.Errorf("a run request of %d bytes, over the bound of %d", len(msg), forkRequestMax)
	}
	if err != nil {
		return p.fail(ends, err)
	}
	fds := []int{int(ends.stdin.Fd()), int(ends.stdout.Fd()), int(ends.stderr.Fd()), int(ends.request.Fd()),
		int(ends.status.Fd()), int(ends.init.Fd()), int(lifeR.Fd())}
	// A fork server whose queue is full is not taking requests: stuck.
	err = unix.Sendmsg(int(live.ctl.Fd()), msg, unix.UnixRights(fds...), nil, unix.MSG_DONTWAIT)
	ends.close()
	if errors.Is(err, unix.EAGAIN) {
		p.destroy()
		return nil, fs.stuck(live, errors.New("its requests are not read"))
	}
	if err != nil {
		p.destroy()
		return nil, fmt.Errorf("%w: %w", errForkServerDown, err)
	}
	p.forked = true
	// Past the deadline the fork server is killed, which ends the wait.
	why := fmt.Errorf("no run ready in %s", fs.answerTimeout)
	deadline := time.AfterFunc(fs.answerTimeout, func() { fs.stuck(live, why) })
	p, err = p.ready(ctx, keep)
	if !deadline.Stop() && err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %w", errForkServerDown, why)
	}
	return p, err
}

// stuck takes live, which stopped answering, out of service: runs start
// from scratch at once, and it is killed (its runs with it: each is
// started again from scratch, see Executor.Run), so that keep starts it
// again. It returns the error of the run that found it so.
func (fs *forkServer) stuck(live *fsProc, why error) error {
	fs.mu.Lock()
	if fs.live == live {
		fs.live = nil
		fs.log.Warn("the fork server stopped answering; starting it again (runs start from scratch meanwhile)", "why", why)
	}
	fs.mu.Unlock()
	live.kill()
	return fmt.Errorf("%w: %w", errForkServerDown, why)
}

// up reports whether a fork server takes runs now.
func (fs *forkServer) up() bool { return fs.current() != nil }

// sandboxForkServer is the fork server's init: PID 1 of its namespaces,
// root of its user namespace. It builds the minimal root as a run's init
// does and starts python as the fork server, not locked down (it makes
// each run's namespaces). Then it is every forked run's init: the service
// asks it for runs on the control socket (fdForkControl), it passes each on to
// the fork server and supervises what comes back (superviseFork). When
// the fork server ends it reports how, and everything in the namespaces
// dies with it.
func sandboxForkServer() {
	spec := setUpInit()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		die(fdInitStatus, fmt.Errorf("fork server socket: %w", err))
	}
	pid, err := syscall.ForkExec(spec.Python, append([]string{spec.Python}, spec.Args...), &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []uintptr{0, 1, 2, fdForkControl: uintptr(pair[1]), fdStatus: fdStatus},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true},
	})
	if err != nil {
		die(fdInitStatus, fmt.Errorf("start python: %w", err))
	}
	unix.Close(pair[1])
	unix.Close(fdStatus)
	go serveForks(fdForkControl, pair[0], spec.Landlock)
	var st initStatus
	for {
		var ws unix.WaitStatus
		reaped, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			die(fdInitStatus, fmt.Errorf("wait: %w", err))
		}
		if reaped == pid {
			st.setEnd(ws)
			break
		}
	}
	finishRun(st, collectLimits{})
}

// serveForks takes run requests from the service on ctl, hands python's
// descriptors and a back channel to the fork server (zygote), and
// supervises each run. When the service closes ctl, it kills the fork
// server.
func serveForks(ctl, zygote int, landlock *landlockSet) {
	buf := make([]byte, forkRequestMax)
	oob := make([]byte, unix.CmsgSpace(runFDs*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(ctl, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			unix.Kill(-1, unix.SIGKILL) // the service is gone
			os.Exit(1)
		}
		fds := receivedFDs(oob[:oobn])
		var run forkRun
		if len(fds) != runFDs || json.Unmarshal(buf[:n], &run) != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		go superviseFork(zygote, buf[:n:n], fds, run, landlock)
		buf = make([]byte, forkRequestMax)
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
// for python's hello, then does what a cold run's init does: accounts the
// run's memory, and when python ends kills the run, collects the files
// left in its work dir and reports how python ended on the report
// descriptor, which python never held. When the service closes the
// lifeline it kills the run without a report.
func superviseFork(zygote int, msg []byte, fds []int, run forkRun, landlock *landlockSet) {
	report, lifeline := fds[runReport], fds[runLifeline]
	defer unix.Close(report)
	defer unix.Close(lifeline)
	fail := func(err error) {
		syscall.Write(report, encodeReport(initStatus{Error: err.Error()}, collectLimits{}))
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
	// The run's PID 1 holds the lifeline too, and ends the run when it
	// closes: nothing of a run outlives the service's hold on it.
	err = unix.Sendmsg(zygote, msg, unix.UnixRights(append(fds[:runPythonFDs:runPythonFDs], back[1], lifeline)...), nil, 0)
	for _, fd := range append(fds[:runPythonFDs:runPythonFDs], back[1]) {
		unix.Close(fd)
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
	buf := make([]byte, forkHelloMax)
	oob := make([]byte, unix.CmsgSpace(2*4)+unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, _, _, err := unix.Recvmsg(back[0], buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		fail(fmt.Errorf("the fork failed before python said hello: %v", err))
		return
	}
	var hello forkHello
	if err := json.Unmarshal(buf[:n], &hello); err != nil || hello.Error != "" {
		fail(fmt.Errorf("fork server: %s", cmp.Or(hello.Error, fmt.Sprint(err))))
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
	if cred == nil || work < 0 {
		fail(errors.New("python's hello came without its credentials, work dir or sock_diag socket"))
		return
	}
	// Opened before the snippet exists: the mount python made.
	shm, err := unix.Openat(work, policy.ShmDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		fail(fmt.Errorf("open the shared memory tmpfs: %w", err))
		return
	}
	defer unix.Close(shm)
	r := &forkedRun{python: int(cred.Pid), work: work, shm: shm, diag: newSocketDiag(diag)}
	st, err := r.supervise(run.Memory, lifeline, func() error {
		return lockForkedRun(back[0], int(cred.Pid), run.Rlimits, landlock)
	})
	if errors.Is(err, errLifeline) {
		return
	}
	if err != nil {
		fail(err)
		return
	}
	if run.Collect.MaxFiles > 0 {
		if st.Files, st.Omitted, err = collectFilesAt(work, run.Collect); err != nil {
			st.Files, st.Omitted = nil, workDirUnreadable(err)
		}
	}
	b := encodeReport(st, run.Collect)
	syscall.Write(report, b)
	// This init lives on: what collecting many files and writing a large
	// report took goes back to the system now, not at the runtime's
	// leisure, so that no run leaves memory behind in it.
	if len(b) >= 64<<10 {
		debug.FreeOSMemory()
	}
}

// lockForkedRun sets python's rlimits and answers its hello with its
// Landlock ruleset (made here with set's paths as python sees them), which
// python restricts itself with once it dropped its uid. Nothing of the
// snippet exists yet.
func lockForkedRun(back, python int, rls []forkRlimit, set *landlockSet) error {
	for _, rl := range rls {
		if err := unix.Prlimit(python, rl.Resource, &unix.Rlimit{Cur: rl.Value, Max: rl.Value}, nil); err != nil {
			return fmt.Errorf("set python's rlimit %d: %w", rl.Resource, err)
		}
	}
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
		ruleset, err := landlockRuleset(landlockSet{ListDirs: in(set.ListDirs), RODirs: in(set.RODirs), RWDirs: in(set.RWDirs),
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

// errLifeline: the service closed a run's lifeline, to kill it.
var errLifeline = errors.New("killed by the service")

// forkedRun is a run as its supervisor sees it: python's pid (in the fork
// server's PID namespace), the run's init (python's parent, PID 1 of the
// run's namespace: killing it ends the run), the work dir and its shared
// memory tmpfs, and the sock_diag of its network namespace.
type forkedRun struct {
	python, init int
	pidNS        string // readlink of python's /proc/PID/ns/pid
	work, shm    int
	diag         *socketDiag // of the run's network namespace
}

// supervise lets python run the snippet (start), waits for python to end,
// accounting the run's memory, then kills the run and returns how python
// ended.
func (r *forkedRun) supervise(limit int64, lifeline int, start func() error) (initStatus, error) {
	var st initStatus
	// The run's PID 1 never reaps python: until the run is killed, python's
	// pid, stat file and namespace links stay its own, even once it ended.
	pidfd, err := unix.PidfdOpen(r.python, 0)
	if err != nil {
		return st, fmt.Errorf("pidfd_open python: %w", err)
	}
	defer unix.Close(pidfd)
	if r.init, err = parentOf(r.python); err != nil {
		return st, err
	}
	initfd, err := unix.PidfdOpen(r.init, 0)
	if err != nil {
		return st, fmt.Errorf("pidfd_open the run's init: %w", err)
	}
	defer unix.Close(initfd)
	if r.pidNS, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", r.python)); err != nil {
		return st, fmt.Errorf("python's PID namespace: %w", err)
	}
	kill := func() {
		unix.PidfdSendSignal(initfd, unix.SIGKILL, nil, 0)
		unix.Poll([]unix.PollFd{{Fd: int32(initfd), Events: unix.POLLIN}}, -1) // everything in the run is dead
	}
	wait := -1
	if limit > 0 {
		// Counted once before the snippet exists, so that every run,
		// however short, is counted while python lives (the canary's
		// peak is how the start-up check knows the count works).
		st.Peak, _, _ = r.memory(limit)
		wait = memoryWait(limit, st.Peak)
	}
	if err := start(); err != nil {
		kill()
		return st, err
	}
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}, {Fd: int32(lifeline), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, wait)
		if err != nil && !errors.Is(err, unix.EINTR) {
			kill()
			return st, fmt.Errorf("poll: %w", err)
		}
		if fds[1].Revents != 0 {
			kill()
			return st, errLifeline
		}
		if fds[0].Revents != 0 {
			// Python is a zombie until its init dies: its status is in
			// its stat file.
			ws, err := exitStatus(r.python)
			var used int64
			if limit > 0 {
				used, _, _ = r.memory(limit) // before the kill: what the rest of the run still holds
			}
			kill()
			if err != nil {
				return st, err
			}
			st.setEnd(ws)
			if limit > 0 {
				st.countEnd(used, limit)
			}
			return st, nil
		}
		if n != 0 || limit == 0 {
			continue
		}
		used, complete, recounted := r.memory(limit)
		st.Peak = max(st.Peak, used)
		if used > limit {
			st.Memory = true
			st.Exited, st.Signal = false, int(unix.SIGKILL)
			kill()
			return st, nil
		}
		wait = memoryWait(limit, used)
		if !complete || recounted {
			// Python is changing its uid, or the run was spared by the
			// recount (see countRun): look again soon.
			wait = int(policy.MemoryPollMin.Milliseconds())
		}
	}
}

// memory is what the run holds (see countRun: past limit, pages still
// shared with the fork server count by their share): its processes'
// memory, the use of the work dir and its shared memory tmpfs and the
// buffers of its sockets; and whether every process could be read.
func (r *forkedRun) memory(limit int64) (total int64, complete, recounted bool) {
	held, _ := r.diag.memory() // 0 where the kernel has no unix_diag
	for _, fd := range []int{r.work, r.shm} {
		var fs unix.Statfs_t
		if unix.Fstatfs(fd, &fs) == nil {
			held += int64(fs.Blocks-fs.Bfree) * fs.Bsize
		}
	}
	d, err := os.Open("/proc")
	if err != nil {
		return held, false, false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	init := strconv.Itoa(r.init)
	var pids []string
	for _, name := range names {
		if name == init || name[0] < '0' || name[0] > '9' {
			continue
		}
		if ns, err := os.Readlink("/proc/" + name + "/ns/pid"); err == nil && ns == r.pidNS {
			pids = append(pids, name)
		}
	}
	return countRun(held, pids, limit)
}

// parentOf is pid's parent, from its stat file.
func parentOf(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil || len(f) < 2 {
		return 0, fmt.Errorf("read the stat of %d: %v", pid, err)
	}
	return strconv.Atoi(f[1])
}

// exitStatus is the wait status of pid, a zombie, from its stat file.
func exitStatus(pid int) (unix.WaitStatus, error) {
	f, err := statFields(pid)
	if err != nil || len(f) < 50 {
		return 0, fmt.Errorf("read how python ended: %v", err)
	}
	code, err := strconv.Atoi(f[49])
	return unix.WaitStatus(code), err
}

// statFields are the fields of /proc/PID/stat after the command name: the
// state first.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])), nil
}
