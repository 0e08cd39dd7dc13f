package sandbox

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
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

// forkServer keeps one fork server running for an executor, and starts it
// again when it dies: a long-lived sandbox whose init (package stage)
// built its minimal root, in fresh user, mount, PID, network, IPC, UTS and
// cgroup namespaces, and started python with the guard in place and the
// preloads imported (the zygote of Android, the fork server of Sandbox2).
// It never runs user code: each run is a fork of it into namespaces of
// its own (held by a PID 1 its init makes), which locks itself down
// (forkserver.py), so a run costs a fork, not an interpreter start. The
// fork server's init supervises every run as a cold run's init does.
// While it is down, runs start from scratch.
//
// What holds, as for a cold run (and is tested):
//   - nothing of one run reaches another: each has its own user, mount,
//     PID, network, IPC, UTS and cgroup namespaces (a network namespace
//     may be one an earlier run left with no socket in it, see the
//     stage's keepNetwork), its own PID 1, /proc, work dir tmpfs and host
//     uid; its memory is a copy-on-write copy of
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

	// stats are the stat files of its init and its init's children,
	// opened at the first stopped and closed once its init has exited.
	statsOnce sync.Once
	stats     []*procstat.File
}

// stopped reports whether live's init or one of its children (its python,
// and the maker of its runs' PID 1s) is stopped (SIGSTOP, or traced):
// alive, it takes no runs, and would be found out only by a request's
// answerTimeout. Each fork asks: the stat files stay open, so that a
// question costs three reads, not three opens of /proc paths (about 1 %
// of a pre-forked run's CPU).
func (live *fsProc) stopped() bool {
	live.statsOnce.Do(func() {
		pid := live.cmd.Process.Pid
		for _, dir := range append([]string{"/proc/" + strconv.Itoa(pid)}, processes("/proc", func(dir string) bool { return parentOf(dir) == pid })...) {
			if f, err := procstat.Open(dir); err == nil {
				live.stats = append(live.stats, f)
			}
		}
	})
	for _, f := range live.stats {
		s, _ := f.Read()
		if state := s.State(); state == 'T' || state == 't' {
			return true
		}
	}
	return false
}

// closeStats closes what stopped opened, and keeps it from opening more.
func (live *fsProc) closeStats() {
	live.statsOnce.Do(func() {})
	for _, f := range live.stats {
		f.Close()
	}
}

// errStopped: the fork server's init or python is stopped.
var errStopped = errors.New("it is stopped (SIGSTOP)")

// forkServerRuns is forkServer.maxRuns.
const forkServerRuns = 1000

// forkServerUIDBase is the first uid of the fork server's user namespace
// mapped to the snippets' host uids: uid forkServerUIDBase+slot is host uid
// plan.hostUID+slot, and a run's namespace maps policy.UID to one of them.
const forkServerUIDBase = 1 << 20

// forkServerRestart bounds how fast a dying fork server is started again.
const forkServerRestart = time.Second

// forkServerAnswer is forkServer.answerTimeout: a fork takes milliseconds.
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
	conf, err := json.Marshal(protocol.ForkServerConf{
		JoinFlags: flags &^ unix.CLONE_NEWPID, CloneNewPID: unix.CLONE_NEWPID, Seccomp: hex.EncodeToString(pl.seccomp),
		ProcOptions: policy.ProcOptions, WorkDir: policy.WorkDir, ShmDir: policy.ShmDir, WorkInodes: policy.WorkInodes,
		WorkNoExec: policy.WorkNoExec, UID: policy.UID,
		ControlFD: protocol.FDForkControl, StatusFD: protocol.FDStatus, Ready: protocol.StatusReady, RequestMax: protocol.ForkRequestMax,
		RecordSlot: protocol.RecordSlot, RecordWorkBytes: protocol.RecordWorkBytes, RecordMemory: protocol.RecordMemory,
		RecordRehearse: protocol.RecordRehearse, RecordInit: protocol.RecordInit, RecordRlimits: protocol.RecordRlimits,
		RunPythonFDs: protocol.RunPythonFDs, RunFDs: protocol.ZygoteFDs, RunBack: protocol.ZygoteBack, RunInit: protocol.ZygoteInit, ReapSize: protocol.ForkReapSize, HelloMax: protocol.ForkHelloMax, ErrorMax: protocol.ForkErrorMax,
		StepNamespaces: protocol.StepNamespaces, StepMounts: protocol.StepMounts, StepDescriptors: protocol.StepDescriptors, StepNoNewPrivs: protocol.StepNoNewPrivs,
		StepLandlock: protocol.StepLandlock, StepSeccomp: protocol.StepSeccomp, StepUID: protocol.StepUID, StepRlimits: protocol.StepRlimits,
	})
	if err != nil {
		return nil, err
	}
	fontCache := ""
	if pl.fontCache != "" {
		fontCache = policy.FontCacheDir
	}
	spec.Args = slices.Concat(policy.PythonFlags, []string{"-c", forkServerLoader, pl.py.Guard}, protocol.GuardArgv(string(conf), pl.guardMode("forkserver"), fontCache, fs.preload, pl.py.Site))
	// The fork server is root of its namespace, and owns its own work dir.
	// spec.Landlock is the runs' (its init makes each run's ruleset).
	spec.Seccomp, spec.MemoryBytes, spec.UID, spec.GID = nil, 0, 0, 0
	spec.RunClone, spec.RunUID, spec.RunIDBase = flags&^unix.CLONE_NEWNET, policy.UID, forkServerUIDBase

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
		cmd.Args[0] = protocol.ForkServerMarker
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
		_ = cmd.Wait()
		live.closeStats()
		close(live.done)
	}()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(statusR).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	select {
	case line := <-ready:
		if line == protocol.StatusReady {
			return live, nil
		}
		live.stop()
		var st protocol.InitStatus
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

// sendControl sends msg with oob on the control socket ctl, without
// blocking.
func sendControl(ctl *os.File, msg, oob []byte) error {
	rc, err := ctl.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	if err := rc.Write(func(fd uintptr) bool {
		sendErr = unix.Sendmsg(int(fd), msg, oob, nil, unix.MSG_DONTWAIT)
		return true
	}); err != nil {
		return err
	}
	return sendErr
}

// errForkServerDown: no fork server takes runs right now.
var errForkServerDown = errors.New("the fork server is down")

// spawn asks the fork server for a run with lim, and waits until its guard
// is in place, as spawn does a sandbox from scratch. The run shares the
// fork server's pages until it writes them: copying them all before
// "ready" (MADV_POPULATE_WRITE, as pre-forked runs did) made a run's exit
// free them all and took a pooled run's CPU from the runs beside it, for
// no gain in an idle run's latency (HumanEval at c2 1.55 against 1.16 s,
// pooled hello at c2 p50 18.7 against 6.8 ms, 2026-12-03).
func (fs *forkServer) spawn(ctx context.Context, lim limits, keep, maxOutput int64) (*proc, error) {
	return fs.fork(ctx, lim, keep, maxOutput, false)
}

// prefork is spawn for the plots' pool: the run draws a figure before it
// says "ready" (_runblock_rehearse in forkserver.py), so the snippet's
// figure is a second figure drawn in that process: the pages a figure
// writes are copied and the font is loaded, not at about 3,000 faults of
// the snippet's time.
func (fs *forkServer) prefork(ctx context.Context, lim limits, keep, maxOutput int64) (*proc, error) {
	return fs.fork(ctx, lim, keep, maxOutput, true)
}

func (fs *forkServer) fork(ctx context.Context, lim limits, keep, maxOutput int64, rehearse bool) (*proc, error) {
	live := fs.current()
	if live == nil {
		return nil, errForkServerDown
	}
	if live.stopped() {
		return nil, fs.stuck(live, errStopped)
	}
	// Every run from the maxRuns-th on asks for a replacement, so one
	// that fails to start is asked for again by the next run.
	if live.forks.Add(1) >= fs.maxRuns {
		select {
		case fs.rotate <- struct{}{}:
		default: // a replacement is already asked for
		}
	}
	forked := &forkedLaunch{done: live.runs.Done}
	live.runs.Add(1)
	p := newProc(fs.plan, lim, maxOutput, forked)
	ends, err := p.pipes(true)
	if err != nil {
		return p.fail(ends, err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return p.fail(ends, err)
	}
	defer lifeR.Close()
	forked.lifeline = lifeW
	slot := -1
	if uid := fs.plan.runUID(); uid >= 0 {
		slot = uid - fs.plan.hostUID
	}
	lim.Accounted, lim.Tmpfs = true, true
	var rls []protocol.ForkRlimit
	for _, rl := range rlimits(lim) {
		rls = append(rls, protocol.ForkRlimit{Resource: rl.resource, Value: rl.value})
	}
	msg, err := json.Marshal(protocol.ForkRun{Rlimits: rls, Memory: lim.Memory, WorkBytes: min(policy.WorkBytes, lim.Memory),
		Slot: slot, Collect: fs.plan.transfer(), Rehearse: rehearse})
	if err == nil && len(msg) > protocol.ForkRequestMax {
		err = fmt.Errorf("a run request of %d bytes, over the bound of %d", len(msg), protocol.ForkRequestMax)
	}
	if err != nil {
		return p.fail(ends, err)
	}
	fds := []int{int(ends.stdin.Fd()), int(ends.stdout.Fd()), int(ends.stderr.Fd()), int(ends.request.Fd()),
		int(ends.status.Fd()), int(ends.init.Fd()), int(lifeR.Fd())}
	// A fork server whose queue is full is not taking requests: stuck.
	// The send goes through the socket's RawConn, which holds the
	// descriptor against a Close by keep (a fork server found stopped or
	// dead is stopped while runs are being asked of it): a closed one
	// answers os.ErrClosed, the fork server down.
	err = sendControl(live.ctl, msg, unix.UnixRights(fds...))
	ends.close()
	if errors.Is(err, unix.EAGAIN) {
		p.destroy()
		return nil, fs.stuck(live, errors.New("its requests are not read"))
	}
	if err != nil {
		p.destroy()
		return nil, fmt.Errorf("%w: %w", errForkServerDown, err)
	}
	p.waited = p.initDone // the run's init is gone (or its report is all there)
	// Past the deadline the fork server is killed, which ends the wait.
	why := fmt.Errorf("no run ready in %s", fs.answerTimeout)
	deadline := time.AfterFunc(fs.answerTimeout, func() { _ = fs.stuck(live, why) })
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

// up reports whether a fork server takes runs now: one that is stopped
// is taken for stuck at once.
func (fs *forkServer) up() bool {
	live := fs.current()
	if live != nil && live.stopped() {
		_ = fs.stuck(live, errStopped)
		return false
	}
	return live != nil
}
