package stage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

// stagingRoot is where an init builds the new root before pivot_root.
const stagingRoot = "/tmp"

// init runs the stage this process was started as (os.Args[0] names it,
// see protocol.InitMarker), and exits; in any other process it returns at
// once. So any binary that links the sandbox can be re-executed as its
// stages, and a stage starts once the packages it imports are
// initialized, before those that import it, not after every package of
// the binary (the service's chat, HTTP and SQL clients among them) as
// when main called it: in runblock's binary, 3.4 to 3.7 ms from the exec
// to a stage's first line, not 5.7 to 5.9 (internal/bench/RESULTS.md).
func init() {
	if len(os.Args) == 0 {
		return
	}
	switch filepath.Base(os.Args[0]) {
	case protocol.InitMarker:
		sandboxInit()
	case protocol.LockerMarker:
		sandboxLocker()
	case protocol.ForkServerMarker:
		sandboxForkServer()
	}
}

func readSpec() protocol.StageSpec {
	var spec protocol.StageSpec
	if len(os.Args) <= protocol.ArgSpec {
		die(protocol.FDStatus, errors.New("missing stage spec"))
	}
	if err := json.Unmarshal([]byte(os.Args[protocol.ArgSpec]), &spec); err != nil {
		die(protocol.FDStatus, fmt.Errorf("decode stage spec: %w", err))
	}
	return spec
}

// die reports a setup failure on fd and exits.
func die(fd int, err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if fd == protocol.FDInitStatus {
		writeAll(fd, encodeReport(protocol.InitStatus{Error: msg}, protocol.CollectLimits{}))
	} else {
		writeAll(fd, []byte("error: "+msg+"\n"))
	}
	os.Exit(1)
}

// writeAll writes b whole on fd, a pipe the service reads. One write
// that fills the pipe waits for the reader, and a signal that comes
// meanwhile (the runtime's own, or a child's end) ends it with what it
// wrote so far: a report of many files lost its end so.
func writeAll(fd int, b []byte) {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if n > 0 {
			b = b[n:]
		}
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// sandboxInit is a cold run's init, PID 1 of fresh user, mount, PID,
// network, IPC, UTS and cgroup namespaces, running as the namespace's
// root. It builds the minimal root, locks its thread down and forks python
// from it as the unprivileged sandbox uid, accounts the run's memory,
// reaps every process, and reports how python ended. When it exits, the
// kernel kills whatever is left in the PID namespace.
func sandboxInit() {
	runtime.LockOSThread()
	var steps lockdown
	// PID 1: the clone that started this init made fresh namespaces
	// (command_linux.go), a PID namespace among them.
	if unix.Getpid() == 1 {
		steps.took(protocol.StepNamespaces)
	}
	spec := setUpInit(&steps)
	// Python gains no capabilities by being uid 0 (when the sandbox uid is
	// the namespace's root): it cannot reach the init either.
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbitNoRoot|secbitNoRootLocked, 0, 0, 0); err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("securebits: %w", err))
	}
	// Before seccomp, which denies netlink sockets: the run's own network
	// namespace's sock_diag, for its socket buffers (see socketDiag).
	diag, err := openSocketDiag()
	if err != nil {
		die(protocol.FDInitStatus, err)
	}
	// Before seccomp, which denies memfd_create: the device of shared
	// anonymous memory, for the run's precise memory count (see countRun).
	_, _ = shmemDevice()
	// The work dir and its shared memory tmpfs, whose use the run's memory
	// count reads, as the fork server's init holds a forked run's.
	work, err := unix.Open(policy.WorkDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("open the work dir: %w", err))
	}
	shm, err := unix.Open(policy.WorkDir+"/"+policy.ShmDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("open the shared memory tmpfs: %w", err))
	}
	// Python's gate (protocol.FDGate): its guard waits until the init
	// supervises it, so that a late init misses nothing of the run.
	gate := make([]int, 2)
	if err := unix.Pipe2(gate, unix.O_CLOEXEC); err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("python's gate: %w", err))
	}
	children, _, err := childEnds() // for the init's life
	if err != nil {
		die(protocol.FDInitStatus, err)
	}
	// Python's nice value, set on this thread, which python inherits at
	// its fork: it never runs at the init's, however late the init runs
	// after the fork (set on python after it, a snippet sometimes began
	// first under load, and the canary found nice 0). This thread keeps
	// it; the supervision below runs on another.
	if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), policy.SnippetNice); err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("python's nice value: %w", err))
	}
	// Lock down this thread only: python is forked from it and inherits
	// its no_new_privs, Landlock domain and seccomp filter; the init's
	// other threads never run sandbox code.
	if err := lockThread(spec, &steps); err != nil {
		die(protocol.FDInitStatus, err)
	}
	// syscall.ForkExec, not os.StartProcess: the latter first probes pidfd
	// support by forking a throwaway child, once per process, so per run.
	cred := &syscall.Credential{Uid: uint32(spec.UID), Gid: uint32(spec.GID), NoSetGroups: !spec.SetGroups}
	files := []uintptr{0, 1, 2, protocol.FDRequest, protocol.FDStatus, uintptr(gate[0])}
	pid, err := syscall.ForkExec(spec.Python, append([]string{spec.Python}, spec.Args...), &syscall.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setsid: true},
	})
	if err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("start python: %w", err))
	}
	steps.took(protocol.StepUID) // python runs as cred, forked from the locked thread
	for _, fd := range files {
		unix.Close(int(fd))
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("pidfd_open: %w", err))
	}
	w := watch{pidfd: pidfd, lifeline: -1, exit: -1, children: children, idle: int(policy.MemoryPoll.Milliseconds()), limit: spec.MemoryBytes,
		memory: &counter{diag: newSocketDiag(diag), work: work, shm: shm, proc: "/proc"}}
	// Supervised from a thread at the init's own nice value, which the
	// runtime makes from a thread that was never locked down. This one
	// waits: it is python's parent, whose end would be python's
	// parent-death signal.
	var st protocol.InitStatus
	supervised := make(chan error)
	go func() {
		var err error
		st, err = w.supervise(coldRun{python: pid}, func() error { return unix.Close(gate[1]) })
		supervised <- err
	}()
	if err := <-supervised; err != nil {
		die(protocol.FDInitStatus, err)
	}
	st.Lockdown = steps
	finishRun(st, spec.Collect)
}

// childEnds returns an eventfd that every SIGCHLD of this process makes
// ready, and what stops that and closes it. A cold run's init is PID 1 of
// the run: the parent of python and of every orphan of the run, each of
// which stays a zombie, counted against the run's RLIMIT_NPROC of 64,
// until the init reaps it. Woken by the signal, the supervisor reaps them
// as they end: at its counts only (every 50 ms at most), 70 "true &" in a
// row under a loaded machine left 64 zombies, and the last shell could not
// fork.
func childEnds() (int, func(), error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, nil, fmt.Errorf("eventfd: %w", err)
	}
	ended, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(ended, unix.SIGCHLD)
	go func() {
		defer close(done)
		one := binary.NativeEndian.AppendUint64(nil, 1)
		for range ended {
			_, _ = unix.Write(fd, one)
		}
	}()
	return fd, func() {
		signal.Stop(ended)
		close(ended)
		<-done
		unix.Close(fd)
	}, nil
}

// coldRun is a run started from scratch, as its init supervises it: the
// init is python's parent and PID 1 of the run, and reaps python and the
// run's orphans as they end (childEnds wakes its supervisor).
type coldRun struct {
	python int
}

func (r coldRun) end(bool) (unix.WaitStatus, bool, error) {
	for {
		var ws unix.WaitStatus
		reaped, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("wait: %w", err)
		}
		if reaped <= 0 {
			return 0, false, nil
		}
		if reaped == r.python {
			return ws, true, nil
		}
	}
}

// kill kills every process of the namespace but the init; finishRun reaps
// them.
func (coldRun) kill() { _ = unix.Kill(-1, unix.SIGKILL) }

// alone is false: a cold run's init kills and reports as it always does
// (its kill does not wait).
func (coldRun) alone([]string) bool { return false }

func (r coldRun) signal() { r.kill() }

// exiting is false: a cold run's init watches no touch (watch.exit), and
// reaps python once it is dead.
func (coldRun) exiting() bool { return false }

// finishRun ends an init whose python is done: kills whatever it left
// running, so nothing changes the work dir while its files are read,
// reaps, collects the files (none when collect.MaxFiles is 0) and reports;
// then exits.
func finishRun(st protocol.InitStatus, collect protocol.CollectLimits) {
	_ = unix.Kill(-1, unix.SIGKILL)
	for {
		if _, err := unix.Wait4(-1, nil, 0, nil); errors.Is(err, unix.ECHILD) {
			break
		}
	}
	if collect.MaxFiles > 0 {
		var err error
		if st.Files, st.Omitted, err = CollectFiles(policy.WorkDir, collect); err != nil {
			st.Files, st.Omitted = nil, workDirUnreadable(err)
		}
	}
	st.Displays = ReadDisplays(policy.WorkDir)
	writeAll(protocol.FDInitStatus, encodeReport(st, collect))
	os.Exit(0)
}

// lockdown records the lockdown steps a stage takes, in the order it
// takes them, for its report (protocol.InitStatus.Lockdown); nil records
// nothing.
type lockdown []string

func (l *lockdown) took(step string) {
	if l != nil {
		*l = append(*l, step)
	}
}

// setUpInit is what an init (a cold run's, the fork server's) does first:
// it reads its spec, builds the minimal root and names the host; steps
// records the lockdown steps it takes.
func setUpInit(steps *lockdown) protocol.StageSpec {
	// Not dumpable: a snippet of the same uid (a service that is not root)
	// cannot open the init's descriptors through /proc/1/fd.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("set not dumpable: %w", err))
	}
	spec := readSpec()
	if err := buildRoot(spec); err != nil {
		die(protocol.FDInitStatus, err)
	}
	steps.took(protocol.StepMounts)
	if err := unix.Sethostname([]byte(policy.Hostname)); err != nil {
		die(protocol.FDInitStatus, fmt.Errorf("sethostname: %w", err))
	}
	// After the mounts, as on the fork path (policy.Lockdown): python
	// inherits 0 to 4 only, not the init's report (fd 5) nor anything the
	// service inherited. Until python starts, nothing else runs here.
	if err := closeOnExecFrom(protocol.FDInitStatus); err != nil {
		die(protocol.FDInitStatus, err)
	}
	steps.took(protocol.StepDescriptors)
	return spec
}

// Securebits (linux/securebits.h).
const (
	secbitNoRoot       = 1 << 0
	secbitNoRootLocked = 1 << 1
)

// closeOnExecFrom marks every descriptor from fd on close-on-exec.
func closeOnExecFrom(fd int) error {
	err := unix.CloseRange(uint(fd), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11: one by one.
	entries, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("close_range: %w; list descriptors: %w", err, rerr)
	}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= fd {
			_, _ = unix.FcntlInt(uintptr(n), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}

// buildRoot mounts a tmpfs root holding read-only binds of what python
// needs, a minimal /dev, a fresh /proc, a size-limited work dir, and
// pivots into it. Nothing else of the host stays reachable.
func buildRoot(spec protocol.StageSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// What is bound may live under the staging root's mount point (a
	// virtualenv or the font cache in /tmp): hold every source open before
	// that is covered, and bind it through its fd.
	src := map[string]string{}
	for _, path := range slices.Concat(spec.Binds, spec.Files, []string{spec.FontCache}) {
		if path == "" {
			continue
		}
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer unix.Close(fd)
		src[path] = fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	r := stagingRoot
	if err := unix.Mount("tmpfs", r, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, policy.RootTmpfs); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	for _, dir := range spec.Binds {
		if err := os.MkdirAll(r+dir, 0o755); err != nil {
			return err
		}
		if err := bindReadOnly(src[dir], r+dir, unix.MS_REC); err != nil {
			return err
		}
	}
	if spec.FontCache != "" {
		if err := os.MkdirAll(r+policy.FontCacheDir, 0o755); err != nil {
			return err
		}
		if err := bindReadOnly(src[spec.FontCache], r+policy.FontCacheDir, 0); err != nil {
			return err
		}
	}
	for _, file := range spec.Files {
		if err := touch(r + file); err != nil {
			return err
		}
		if err := bindReadOnly(src[file], r+file, 0); err != nil {
			return err
		}
	}
	for name, target := range spec.Symlinks {
		if err := os.Symlink(target, r+name); err != nil {
			return err
		}
	}
	if err := buildDev(r+"/dev", policy.WorkDir+"/"+policy.ShmDir); err != nil {
		return err
	}
	if err := os.Mkdir(r+policy.WorkDir, 0o755); err != nil {
		return err
	}
	work := fmt.Sprintf("size=%d,nr_inodes=%d,mode=700,uid=%d,gid=%d", spec.WorkBytes, policy.WorkInodes, spec.UID, spec.GID)
	workFlags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if policy.WorkNoExec {
		workFlags |= unix.MS_NOEXEC
	}
	if err := unix.Mount("tmpfs", r+policy.WorkDir, "tmpfs", workFlags, work); err != nil {
		return fmt.Errorf("mount work dir: %w", err)
	}
	shm := r + policy.WorkDir + "/" + policy.ShmDir
	if err := os.Mkdir(shm, 0o700); err != nil {
		return err
	}
	shmOpts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=700,uid=%d,gid=%d", spec.ShmBytes, policy.WorkInodes, spec.UID, spec.GID)
	if err := unix.Mount("tmpfs", shm, "tmpfs", workFlags, shmOpts); err != nil {
		return fmt.Errorf("mount shared memory: %w", err)
	}
	if err := os.Symlink(policy.WorkDir, r+"/tmp"); err != nil {
		return err
	}
	if err := os.MkdirAll(r+"/etc", 0o755); err != nil {
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0::/:/bin/false\nsandbox:x:%d:%d::%s:/bin/false\n", spec.UID, spec.GID, policy.WorkDir)
	if err := os.WriteFile(r+"/etc/passwd", []byte(passwd), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(r+"/etc/group", fmt.Appendf(nil, "root:x:0:\nsandbox:x:%d:\n", spec.GID), 0o644); err != nil {
		return err
	}
	// /proc must be mounted while the host's /proc is still visible, or the
	// kernel refuses it as "too revealing".
	if err := os.Mkdir(r+"/proc", 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", r+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, policy.ProcOptions); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := os.Mkdir(r+"/.old", 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(r, r+"/.old"); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := os.Remove("/.old"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remount root read-only: %w", err)
	}
	return nil
}

// buildDev makes a /dev with the policy's devices and links only, and shm
// linked to the work dir's shm.
func buildDev(dev, shm string) error {
	if err := os.Mkdir(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, policy.DevTmpfs); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, name := range policy.Devices {
		if err := touch(dev + "/" + name); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+name, dev+"/"+name, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", name, err)
		}
	}
	for name, target := range policy.DevLinks {
		if err := os.Symlink(target, dev+"/"+name); err != nil {
			return err
		}
	}
	if err := os.Symlink(shm, dev+"/shm"); err != nil {
		return err
	}
	return unix.Mount("", dev, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, policy.DevTmpfs)
}

func touch(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// bindReadOnly binds src at dst and makes it read-only and nosuid. The
// flags the kernel locks for an unprivileged user namespace (nodev, noexec,
// atime) are carried over from the source mount.
func bindReadOnly(src, dst string, flags uintptr) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|flags, ""); err != nil {
		return fmt.Errorf("bind %s: %w", strings.TrimPrefix(dst, stagingRoot), err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(src, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", strings.TrimPrefix(dst, stagingRoot), err)
	}
	remount := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID)
	for stFlag, msFlag := range map[int64]uintptr{
		unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC, unix.ST_NOATIME: unix.MS_NOATIME,
		unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if st.Flags&stFlag != 0 {
			remount |= msFlag
		}
	}
	if st.Flags&(unix.ST_NOATIME|unix.ST_RELATIME) == 0 {
		remount |= unix.MS_STRICTATIME
	}
	if err := unix.Mount("", dst, "", remount, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", dst, err)
	}
	return nil
}

// sandboxLocker is the stage without namespaces: it sets no_new_privs,
// Landlock and seccomp on its locked thread, then becomes python from that
// thread (execve keeps what the calling thread had).
func sandboxLocker() {
	runtime.LockOSThread()
	if err := closeOnExecFrom(protocol.FDStatus + 1); err != nil {
		die(protocol.FDStatus, err)
	}
	spec := readSpec()
	if err := lockThread(spec, nil); err != nil {
		die(protocol.FDStatus, err)
	}
	err := syscall.Exec(spec.Python, append([]string{spec.Python}, spec.Args...), spec.Env)
	die(protocol.FDStatus, fmt.Errorf("exec %s: %w", spec.Python, err))
}

// lockThread sets no_new_privs, Landlock and seccomp on the calling
// thread; steps records those it took.
func lockThread(spec protocol.StageSpec, steps *lockdown) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	steps.took(protocol.StepNoNewPrivs)
	if spec.Landlock != nil {
		restricted, err := restrictLandlock(*spec.Landlock)
		if err != nil {
			return err
		}
		if restricted {
			steps.took(protocol.StepLandlock)
		}
	}
	if len(spec.Seccomp) > 0 {
		if err := loadSeccomp(spec.Seccomp); err != nil {
			return err
		}
		steps.took(protocol.StepSeccomp)
	}
	return nil
}

// landlockABI is the Landlock version the rules are written for; older
// kernels enforce the subset they know (best effort), and the canary run
// checks what is really enforced.
var landlockABI = landlock.V5

// restrictLandlock restricts the calling thread to set; !restricted:
// the kernel has no Landlock.
func restrictLandlock(set protocol.LandlockSet) (restricted bool, err error) {
	fd, err := landlockRuleset(set)
	if err != nil || fd < 0 {
		return false, err // fd < 0: no Landlock here; the canary run reports it
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return false, fmt.Errorf("landlock: %w", err)
	}
	return true, nil
}

// landlockRuleset makes the ruleset of set, -1 where the kernel has no
// Landlock. It takes effect by landlock_restrict_self with no flags.
func landlockRuleset(set protocol.LandlockSet) (int, error) {
	rules := []landlock.Rule{
		landlock.PathAccess(llsys.AccessFSReadDir, set.ListDirs...),
		landlock.RODirs(set.RODirs...).IgnoreIfMissing(),
		landlock.RWDirs(set.RWDirs...),
		landlock.ROFiles(set.ROFiles...).IgnoreIfMissing(),
		landlock.RWFiles(set.RWFiles...),
	}
	// No TCP bind or connect rules: all TCP bind/connect is denied.
	fd, flags, err := landlockABI.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return -1, fmt.Errorf("landlock: %w", err)
	}
	if flags != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("landlock: the ruleset needs restrict flags %#x", flags)
	}
	return fd, nil
}

// loadSeccomp installs prog (see seccompFilter) on the calling thread,
// which is about to execve. no_new_privs must already be set on it.
func loadSeccomp(prog []byte) error {
	if len(prog)%protocol.SockFilterSize != 0 {
		return fmt.Errorf("load seccomp filter: %d bytes is not a whole program", len(prog))
	}
	filter := make([]syscall.SockFilter, len(prog)/protocol.SockFilterSize)
	for i := range filter {
		in := prog[i*protocol.SockFilterSize:]
		filter[i] = syscall.SockFilter{Code: binary.NativeEndian.Uint16(in), Jt: in[2], Jf: in[3], K: binary.NativeEndian.Uint32(in[4:])}
	}
	fprog := syscall.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("load seccomp filter: %w", errno)
	}
	return nil
}
