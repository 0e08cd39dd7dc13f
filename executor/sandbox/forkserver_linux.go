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
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forkServer keeps one fork server running for an executor, and starts it
// again when it dies: a long-lived sandbox whose init (sandboxForkServer)
// built its minimal root, in fresh user, mount, PID, network, IPC, UTS and
// cgroup namespaces, and started python with the guard in place and the
// preloads imported (the zygote of Android, the fork server of Sandbox2).
// It never runs user code: each run is a fork of it that enters namespaces
// of its own and locks itself down (forkserver.py), so a run costs a fork,
// not an interpreter start. While it is down, runs start from scratch.
type forkServer struct {
	plan    *plan
	preload string
	log     *slog.Logger

	mu   sync.Mutex
	live *fsProc // nil while down

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
}

// forkServerUIDBase is the first uid of the fork server's user namespace
// mapped to the snippets' host uids: uid forkServerUIDBase+slot is host uid
// plan.hostUID+slot, and a run's namespace maps policy.UID to one of them.
const forkServerUIDBase = 1 << 20

// forkServerRestart bounds how fast a dying fork server is started again.
const forkServerRestart = time.Second

// startForkServer starts the fork server of pl, with preload imported, and
// keeps it running until close.
func startForkServer(ctx context.Context, pl *plan, preload []string, log *slog.Logger) (*forkServer, error) {
	if !pl.layers.Namespaces {
		return nil, errors.New("this tier has no namespaces: each run needs its own")
	}
	if pl.cgroup != nil {
		return nil, errors.New("each run gets its own cgroup, which a fork cannot be placed in here")
	}
	fs := &forkServer{plan: pl, preload: strings.Join(preload, ","), log: log}
	live, err := fs.launch(ctx)
	if err != nil {
		return nil, err
	}
	fs.live = live
	mctx, cancel := context.WithCancel(context.Background())
	fs.cancel = cancel
	fs.wg.Go(func() { fs.keep(mctx, live) })
	return fs, nil
}

// keep starts the fork server again whenever it dies, until ctx ends.
func (fs *forkServer) keep(ctx context.Context, live *fsProc) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	<-retry.C
	for {
		select {
		case <-live.done:
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
			next, err := fs.launch(ctx)
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

// forkServerConf is the fork server's configuration (forkserver.py): the
// policy, for the mechanics there to apply.
type forkServerConf struct {
	CloneFlags  uintptr       `json:"clone_flags"`
	SysClone    int           `json:"sys_clone"` // clone(2)'s number here
	Seccomp     string        `json:"seccomp"`   // hex of the assembled filter
	Landlock    *forkLandlock `json:"landlock"`  // nil: none
	ProcOptions string        `json:"proc_options"`
	WorkDir     string        `json:"work_dir"`
	ShmDir      string        `json:"shm_dir"`
	WorkInodes  int           `json:"work_inodes"`
	WorkNoExec  bool          `json:"work_noexec"`
	UID         int           `json:"uid"`
	IDBase      int           `json:"id_base"`
	RunInit     string        `json:"run_init"` // argv[0] of the service's binary as a run's init
	StageEnv    []string      `json:"stage_env"`
}

// forkRun is the message that asks the fork server for one run.
type forkRun struct {
	Rlimits   string        `json:"rlimits"`
	Memory    int64         `json:"memory"` // bound of the whole run, accounted by its init
	WorkBytes int64         `json:"work_bytes"`
	Slot      int           `json:"slot"` // the snippet's uid slot, -1: none (the service is not root)
	Collect   collectLimits `json:"collect"`
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
	var landlockRules *forkLandlock
	if spec.Landlock != nil {
		landlockRules = forkLandlockRules(*spec.Landlock)
	}
	conf, err := json.Marshal(forkServerConf{
		CloneFlags: flags, SysClone: unix.SYS_CLONE, Seccomp: hex.EncodeToString(pl.seccomp), Landlock: landlockRules,
		ProcOptions: policy.ProcOptions, WorkDir: policy.WorkDir, ShmDir: policy.ShmDir, WorkInodes: policy.WorkInodes,
		WorkNoExec: policy.WorkNoExec, UID: policy.UID, IDBase: forkServerUIDBase,
		RunInit: runInitMarker, StageEnv: stageEnv,
	})
	if err != nil {
		return nil, err
	}
	fontCache := ""
	if pl.fontCache != "" {
		fontCache = policy.FontCacheDir
	}
	spec.Args = slices.Concat(policy.PythonFlags, []string{"-c", guardLoader, pl.py.Guard, string(conf), "forkserver", fontCache, fs.preload}, pl.py.Site)
	// The fork server is root of its namespace, and owns its own work dir.
	spec.Seccomp, spec.MemoryBytes, spec.UID, spec.GID, spec.Landlock = nil, 0, 0, 0, nil

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
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			fs.log.Warn("fork server", "says", sc.Text())
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
		if line == "ready" {
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
	live := fs.current()
	if live == nil {
		return nil, errForkServerDown
	}
	p := newProc(fs.plan, lim, maxOutput)
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
	lim.Accounted = true
	msg, err := json.Marshal(forkRun{Rlimits: rlimitArg(lim), Memory: lim.Memory, WorkBytes: min(policy.WorkBytes, lim.Memory),
		Slot: slot, Collect: fs.plan.transfer()})
	if err != nil {
		return p.fail(ends, err)
	}
	fds := []int{int(ends.stdin.Fd()), int(ends.stdout.Fd()), int(ends.stderr.Fd()), int(ends.request.Fd()),
		int(ends.status.Fd()), int(ends.init.Fd()), int(lifeR.Fd())}
	err = unix.Sendmsg(int(live.ctl.Fd()), msg, unix.UnixRights(fds...), nil, 0)
	ends.close()
	if err != nil {
		p.destroy()
		return nil, fmt.Errorf("%w: %w", errForkServerDown, err)
	}
	p.forked = true
	return p.ready(ctx, keep)
}

// stageEnv is the whole environment of the service's own binary when it
// runs as a sandbox stage: nothing of the service's. One P is plenty for
// an init; a -race build would otherwise sleep 1 s in every init's exit.
var stageEnv = []string{"GORACE=atexit_sleep_ms=0", "GOMAXPROCS=1"}

// sandboxForkServer is the fork server's init: PID 1 of its namespaces,
// root of its user namespace. It builds the minimal root as a run's init
// does, starts python as the fork
// server, not locked down (it makes each run's namespaces), and reaps
// every process orphaned to it until the fork server ends; then it reports
// how, and everything in the namespaces dies with it.
func sandboxForkServer() {
	runtime.LockOSThread()
	if err := closeOnExecFrom(fdInitStatus); err != nil {
		die(fdInitStatus, err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		die(fdInitStatus, fmt.Errorf("set not dumpable: %w", err))
	}
	spec := readSpec()
	// The runs' file collector: this binary, reached by descriptor once
	// the root is the sandbox's.
	exe, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		die(fdInitStatus, fmt.Errorf("open own binary: %w", err))
	}
	if err := buildRoot(spec); err != nil {
		die(fdInitStatus, err)
	}
	if err := unix.Sethostname([]byte(policy.Hostname)); err != nil {
		die(fdInitStatus, fmt.Errorf("sethostname: %w", err))
	}
	files := []uintptr{0, 1, 2, fdRequest, fdStatus, ^uintptr(0), uintptr(exe)} // 5: closed
	pid, err := syscall.ForkExec(spec.Python, append([]string{spec.Python}, spec.Args...), &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true},
	})
	if err != nil {
		die(fdInitStatus, fmt.Errorf("start python: %w", err))
	}
	for _, fd := range []int{fdRequest, fdStatus, exe} {
		unix.Close(fd)
	}
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
			st.Exited, st.ExitCode = ws.Exited(), ws.ExitStatus()
			if ws.Signaled() {
				st.Signal = int(ws.Signal())
			}
			break
		}
	}
	unix.Kill(-1, unix.SIGKILL)
	b, _ := json.Marshal(st)
	syscall.Write(fdInitStatus, append(b, '\n'))
	os.Exit(0)
}

// fdLifeline is where a forked run's init holds the lifeline: the service
// closes its end to kill the run. fdAccounting: python waits until the
// init closes it, once it accounts the run's memory.
const (
	fdLifeline   = 3
	fdAccounting = 4
)

// sandboxRunInit is a forked run's init from the moment python (the run's
// R3, see forkserver.py) is forked: the run's PID 1, exec'd by it, so that
// supervising the run does not touch the fork server's heap. It does what
// the init of a cold run does from there: accounts the run's memory, and
// when python ends kills what is left, reaps, and reports how python
// ended, with the files, on fdInitStatus, which python never held. When
// the lifeline closes it kills the run and exits without a report.
func sandboxRunInit() {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		die(fdInitStatus, fmt.Errorf("set not dumpable: %w", err))
	}
	var arg struct {
		PID     int           `json:"pid"`
		Memory  int64         `json:"memory"`
		Collect collectLimits `json:"collect"`
	}
	if len(os.Args) < 2 {
		die(fdInitStatus, errors.New("missing run spec"))
	}
	if err := json.Unmarshal([]byte(os.Args[1]), &arg); err != nil {
		die(fdInitStatus, fmt.Errorf("decode run spec: %w", err))
	}
	unix.Close(fdAccounting) // superviseRun accounts at once
	st, err := superviseRun(arg.PID, arg.Memory, fdLifeline, true)
	if errors.Is(err, errLifeline) {
		os.Exit(1)
	}
	if err != nil {
		die(fdInitStatus, err)
	}
	finishRun(st, arg.Collect)
}
