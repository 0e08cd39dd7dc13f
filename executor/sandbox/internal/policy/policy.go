// Package policy is the whole sandbox policy, in one place, in the spirit
// of snekbox's nsjail config. Both sides of the sandbox read it from here:
// the service (package sandbox) plans each sandbox from it (the
// namespaces and uid maps in command_linux.go, the Landlock rules, the
// rlimits and environment in plan.go, the seccomp filter in
// seccomp_linux.go, a run's cgroup in cgroup_linux.go), and the stages
// that run inside the sandbox (package stage) apply it (the minimal root,
// the lockdown, the memory accounting, the files that come back); the fork
// server (forkserver.py) gets what it applies in its configuration. The
// canary run (probe.go) checks that what is promised here is enforced.
//
// A run forked from the fork server gets the same policy, applied after
// the clone instead of by a fresh init: its own python (forkserver.py)
// mounts its /proc, work dir and shared memory tmpfs, sets no_new_privs,
// Landlock (with the ruleset the fork server's init makes) and seccomp,
// drops its uid and sets its rlimits; the fork server's init supervises
// it as a cold run's init supervises its own (accounts its memory, reads
// how it ended, collects its files). The canary checks that path too.
// Both paths take the lockdown's steps in the one order of Lockdown.
//
// A tier may leave kernel layers out where the machine lacks them (see
// the service's tiers; `runblock doctor` reports what is in force). In the
// full tier, a snippet:
//
//   - runs in its own user namespace: where the service is root, as uid
//     1000 of it, which is a host uid of its own (1_900_000_000 plus a
//     per-sandbox slot, so the process limit counts per run); where it is
//     not, as uid 0 of it, which is the service's uid, with no capabilities
//     (securebits: none gained as root, none regained by exec); with
//     no_new_privs, in fresh mount, PID, network, IPC, UTS and cgroup
//     namespaces: it sees only its own processes, and a network with no
//     interface but a loopback that is down (a forked run's network
//     namespace may be one an earlier run left, once every process of
//     that run ended with no socket left in it: what a run can change
//     there is its sockets);
//   - sees a read-only root holding the interpreter and the system
//     libraries, a /dev of four devices, its own /proc, and one writable,
//     size-limited, noexec work dir (also its /tmp, HOME and TMPDIR) with
//     its shared memory tmpfs in it (/dev/shm);
//   - has descriptors 0, 1 and 2 only: python starts with 0 to 4 (see
//     package protocol), nothing else the service holds or inherited, and
//     the guard closes 3 and 4 once it has the snippet, before the snippet
//     runs;
//   - may create Unix-domain sockets and socket pairs (inside the sandbox
//     only), and no socket of any other family (IP, packet, netlink, vsock,
//     bluetooth, any family added later): socket() fails with EPERM, and
//     Landlock also denies every TCP bind and connect where the kernel's
//     Landlock has network rules;
//   - may not debug other processes, mount, create namespaces, load BPF,
//     use keyrings, perf, io_uring, modules, the clock, inotify or fanotify,
//     nor memory outside its processes' own (memfd, SysV shared memory,
//     semaphores and message queues, POSIX message queues) (EPERM), nor make
//     a syscall of another ABI (int 0x80, x32): that kills it;
//   - is bounded as a whole run by its memory limit: with a delegated
//     cgroup v2 subtree, by the cgroup's memory.max; without one, the init
//     (for a forked run, the fork server's init) sums the memory of every
//     thread group of the sandbox, the use of its work dir and shared
//     memory tmpfs and its Unix socket buffers (see MemoryPoll) and kills
//     the run past the limit;
//   - is bounded by rlimits: address space (a loose backstop per process
//     where the run's memory is accounted, the memory limit where it is
//     not), CPU time, file size, open files, processes, no core dumps;
//   - gets only the environment below: heavy libraries single-threaded,
//     matplotlib drawing off-screen with its config in the work dir,
//     Python's remote debugging (PEP 768) off;
//   - gets back the files it leaves in its work dir, within the caps of the
//     executor's Config: read without following symlinks (see
//     stage.CollectFiles) by the init once every process of the run is
//     dead, and sent in its bounded report (package protocol); names
//     starting with "_" or "." are scratch.
//
// A live session (executor/sandbox/session.go) is such a sandbox whose python runs cells
// one after another, in the same layers, limits and accounting: its
// memory limit bounds the whole session, its CPU time rlimit is
// SessionCPU, and the service's timer bounds each cell. Its request and
// status pipes stay open while the cells run, so the cells' code can
// write what the service reads there, and the files of each cell are
// collected by the guard in python, beside the cell's code. So, for a
// session, the service trusts nothing of it: every line and frame is
// bounded and checked (package protocol) and anything malformed ends the
// session with the cell's failure; an end marker carries a nonce drawn
// for that cell only; the verdicts (timeout, memory, exit status, signal)
// still come only from the wait status, the init's report and the
// service's own timers and output counts. What a cell can forge is its own
// output, its own files (paths checked: clean, relative) and whether it
// raised: what it could print or write anyway.
package policy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

// Python runs as `python <PythonFlags> -c <guard loader> ...`: isolated
// mode (no user site, no PYTHON* variables), no site import, unbuffered
// stdout and stderr (what a snippet printed survives its kill; each print
// is a write), and no remote debugging (PEP 768, Python 3.14+:
// sys.remote_exec into this interpreter; the option, as -I may hide
// PYTHON_DISABLE_REMOTE_DEBUG, which Env sets for the pythons a snippet
// starts itself; older versions ignore both).
var PythonFlags = []string{"-I", "-S", "-u", "-X", "disable-remote-debug"}

// Namespaces the sandbox's init is started in, named as in /proc/self/ns/.
// CloneDenied are those the snippet may not create.
var (
	Namespaces  = []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}
	CloneDenied = []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time"}
	Hostname    = "sandbox"
)

// Where the service is root: the snippet's uid and gid inside the sandbox
// (UID), and on the host HostUID plus a slot below HostUIDs, so that
// concurrent sandboxes have distinct host uids (RLIMIT_NPROC and the
// kernel's per-user pipe and inotify budgets count per run). High, unused,
// owning nothing on the host. Where it is not, the snippet is uid 0 of its
// namespace, the service's uid, without capabilities. The tiers without
// namespaces run it as a host uid of these where the service is root and
// others can reach the interpreter, else as the service's own uid.
var (
	UID      = 1000
	HostUID  = 1_900_000_000
	HostUIDs = 1 << 16
)

// File system of the namespaced tiers: a tmpfs root (mount options
// RootTmpfs), then these. After pivot_root the root is remounted
// read-only, nosuid, nodev.
var (
	RootTmpfs = "size=1m,nr_inodes=1024,mode=755"
	// SystemDirs are bound read-only where they are directories and
	// recreated where they are symlinks (/bin -> usr/bin); the
	// interpreter's prefixes and directory are bound read-only too.
	// /etc/alternatives holds the links Debian's BLAS and LAPACK are found
	// by (numpy); /etc/fonts is fontconfig's configuration.
	SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives", "/etc/fonts"}
	// SystemFiles are bound read-only, where they exist.
	SystemFiles = []string{"/etc/ld.so.cache", "/etc/localtime", "/etc/matplotlibrc", "/etc/mime.types"}
	// FontCacheDir is where matplotlib's font cache, built once by the
	// service at start-up, is bound read-only; the guard links it into the
	// per-run MPLCONFIGDIR.
	FontCacheDir = "/etc/runblock/matplotlib"
	// /dev is a read-only tmpfs with binds of Devices and the links DevLinks.
	DevTmpfs = "size=64k,nr_inodes=64,mode=755"
	Devices  = []string{"null", "zero", "random", "urandom"}
	DevLinks = map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}
	// WorkDir is a tmpfs of WorkBytes (at most the run's memory limit; and
	// WorkInodes inodes) owned by the snippet, noexec when WorkNoExec; /tmp
	// links to it. Without a mount namespace it is a fresh host directory
	// instead, and RLIMIT_FSIZE is WorkBytes.
	WorkDir    = "/sandbox"
	WorkBytes  = int64(workBytes)
	WorkInodes = 4096
	WorkNoExec = true
	// ShmDir, in the work dir, is a tmpfs of its own of the run's memory
	// limit and an eighth (and WorkInodes inodes; the eighth lets the count
	// see a run fill it past its limit before it is full, as its mapped
	// pages count once, by its use), mounted by the init (on the fork path
	// by the run's python before it drops its privileges) and linked from
	// /dev/shm: POSIX shared memory and semaphores (multiprocessing) are
	// bounded by the run's memory, which counts their use with the work
	// dir's, not by the work dir's size or RLIMIT_FSIZE.
	ShmDir = ".shm"
	// ScratchPrefixes mark work dir names that never come back as files.
	ScratchPrefixes = []string{"_", "."}
	// /proc is the sandbox's own, with ProcOptions: hidepid hides PID 1
	// (the init, another uid); subset=pid leaves out /proc/sys and
	// friends. /etc holds only the system files and a passwd and group
	// naming root and the sandbox user.
	ProcOptions = "hidepid=invisible,subset=pid"
)

// Landlock (both tiers that have it): read the interpreter and system
// directories (and /etc, /proc with namespaces); read ReadFiles; write the
// work dir and WriteFiles; with namespaces, list the root. Nothing else,
// and no TCP bind or connect at all where the kernel's Landlock has
// network rules (ABI 4, Linux 6.7; the rules are applied best effort, and
// seccomp allows no TCP socket anyway).
var (
	ReadFiles  = []string{"/dev/zero", "/dev/random", "/dev/urandom"}
	WriteFiles = []string{"/dev/null"}
)

// Seccomp: everything not listed is allowed. DeniedSyscalls fail with
// EPERM; clone with any CloneDenied flag fails with EPERM; clone3 fails
// with ENOSYS (the filter cannot read its flags, so the C library falls
// back to clone); socket and socketpair of any family but
// AllowedSocketFamilies fail with EPERM; a syscall of a foreign ABI (i386
// int 0x80, x32) kills the process. The effective filter is in the
// sandbox's testdata/seccomp-<arch>.golden (TestSeccompPolicyGolden).
var (
	DeniedSyscalls = []SyscallGroup{
		{"reading or changing other processes (the supervisor, the fork server)",
			[]string{"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"}},
		{"changing the file system view the sandbox was built with, or leaving it",
			[]string{"mount", "umount2", "pivot_root", "chroot", "unshare", "setns"}},
		{"the new mount API: the same as mount",
			[]string{"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr"}},
		{"opening files by handle, past the mount and Landlock checks of a path",
			[]string{"open_by_handle_at", "name_to_handle_at"}},
		{"kernel attack surface a snippet has no use for: keyrings, BPF, perf, userfaultfd",
			[]string{"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd"}},
		{"the machine's own administration",
			[]string{"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
				"swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "vhangup"}},
		{"the host's clocks", []string{"settimeofday", "clock_settime", "clock_adjtime", "adjtimex"}},
		{"the host's names and I/O ports", []string{"sethostname", "setdomainname", "iopl", "ioperm"}},
		{"io_uring: syscalls the filter cannot see, and a large kernel surface",
			[]string{"io_uring_setup", "io_uring_enter", "io_uring_register"}},
		{"execution domains and old profiling interfaces", []string{"personality", "lookup_dcookie"}},
		{"file watches, which count against the host uid's inotify budget, shared with other runs",
			[]string{"inotify_init", "inotify_init1", "fanotify_init"}},
		{"memory outside the run's processes and tmpfs, which the memory count does not see",
			[]string{"memfd_create", "memfd_secret", "shmget", "semget", "msgget", "mq_open"}},
	}
	AllowedSocketFamilies = []string{"AF_UNIX"}
)

// A SyscallGroup is syscalls the seccomp filter denies, and why.
type SyscallGroup struct {
	Why   string
	Names []string
}

// DeniedNames are the names of DeniedSyscalls, in their order.
func DeniedNames() []string {
	var names []string
	for _, g := range DeniedSyscalls {
		names = append(names, g.Names...)
	}
	return names
}

// Memory of a run without a cgroup, counted the same on both paths by the
// run's supervisor (a cold run's init, or for a forked run the fork
// server's init): the sum of RssAnon, RssShmem and HugetlbPages of every
// thread group in the run's PID namespace but its init's (read through a
// live thread where the group's leader has exited), plus the use of the
// work dir and shared memory tmpfs and the run's Unix socket buffers
// (through sock_diag of its network namespace). That sum counts a shared
// page in every process that maps it, so where it passes the limit the run
// is counted again from each process's /proc/PID/smaps: the proportional
// share (Pss) of its anonymous and shared anonymous mappings, only the
// written pages of a file's mapping (the tmpfs counts by its use), and its
// hugetlb pages; pages a fork still shares with the fork server count by
// their share. The run is killed when that count too is past the limit.
// The supervisor counts again before the run could have allocated what is
// left at MemoryRate bytes a second (faster than a snippet faults pages in
// on one core): at least every MemoryPoll and at most every MemoryPollMin,
// so the run passes its limit by at most MemoryRate × MemoryPollMin plus
// what it allocates while being killed. Other kernel memory (page tables,
// pipe buffers, bounded by the uid's pipe budget) is not counted
// (executor/sandbox/README.md, "Memory of a run").
var (
	MemoryRate    = int64(4 << 30)
	MemoryPoll    = 50 * time.Millisecond
	MemoryPollMin = 2 * time.Millisecond
)

// Cgroup is what a run's own cgroup gets where a cgroup v2 subtree is
// delegated to the service (see cgroup_linux.go): memory.max is the run's
// memory limit, and these files are written as given.
var Cgroup = map[string]string{"memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "64"}

// Rlimits, set as soft = hard before the guard says "ready", by python
// itself as the sandbox uid, the last step of Lockdown: by the guard in a
// run started from scratch, by forkserver.py in a forked run.
var Rlimits = append([]RlimitRule{
	// Where the OS has it (see addressSpaceLimit).
	{"AS", unix.RLIMIT_AS, AddressSpace},
	{"CPU", unix.RLIMIT_CPU, func(lim Limits) uint64 { return uint64(math.Ceil(lim.Timeout.Seconds())) + 1 }},
	// With a mount namespace every writable file system is a tmpfs of
	// bounded size whose use is the run's memory; a file (the shared
	// memory of multiprocessing) may then be as large as a process may
	// map. Without one, the work dir is a host directory.
	{"FSIZE", unix.RLIMIT_FSIZE, func(lim Limits) uint64 {
		if lim.Tmpfs {
			return AddressSpace(lim)
		}
		return workBytes
	}},
	{"NOFILE", unix.RLIMIT_NOFILE, func(Limits) uint64 { return 256 }},
	{"NPROC", unix.RLIMIT_NPROC, func(Limits) uint64 { return 64 }}, // threads included
	{"CORE", unix.RLIMIT_CORE, func(Limits) uint64 { return 0 }},
}, schedulingRlimits...)

// SnippetNice is the nice value of a run's python (and of every process
// and thread it starts, which inherit it), set by the run's supervisor
// before the snippet exists; the supervisor keeps the service's. Where the
// CPU is contended, the supervisor's memory count then wins the CPU from
// the snippet it counts, and keeps its pace (see MemoryRate): a snippet
// competing with the machine's other work at nice 10 gets about a tenth
// of the share of a process at nice 0. A quiet machine runs it at full
// speed.
const SnippetNice = 10

// SessionCPU is a live session's RLIMIT_CPU, in place of a run's timeout
// plus a second: the CPU time its python, and each process it starts, may
// use over all the session's cells. Past it the session ends (SIGXCPU,
// reported as a timeout). Each cell's own timeout is the service's timer.
const SessionCPU = 15 * time.Minute

// Env is the snippet's whole environment; WorkDirEnv variables are set to
// the work dir joined with their value.
var (
	Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PYTHONIOENCODING=utf-8",
		"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1", "NUMEXPR_NUM_THREADS=1",
		"VECLIB_MAXIMUM_THREADS=1", "GOTO_NUM_THREADS=1", "MPLBACKEND=Agg", "PYTHON_DISABLE_REMOTE_DEBUG=1"}
	WorkDirEnv = map[string]string{"HOME": "", "TMPDIR": "", "MPLCONFIGDIR": ".config/matplotlib"}
)

// Lockdown is the one order in which a run started from scratch and a run
// forked from the fork server take the steps of their lockdown, before
// any snippet code exists (the steps are named in package protocol): in
// fresh namespaces, their mounts (made as root of the namespace, before
// seccomp denies mount); descriptors; no_new_privs before Landlock and
// seccomp (unprivileged, neither may be set without it); then the uid,
// which a cold run's init gives python as it forks it from its locked
// thread (the init itself stays root of the namespace, to supervise the
// run); last the rlimits, which python sets itself, as the sandbox uid.
// The cold path takes them in Go (command_linux.go, package stage) and
// the guard, the forked one in forkserver.py. Each records the steps as
// it takes them; the canary run (InLockdownOrder) and TestLockdownOrder
// hold what was recorded to this list.
var Lockdown = []string{protocol.StepNamespaces, protocol.StepMounts, protocol.StepDescriptors, protocol.StepNoNewPrivs,
	protocol.StepLandlock, protocol.StepSeccomp, protocol.StepUID, protocol.StepRlimits}

// outOfOrderError is InLockdownOrder's error: Steps, as a sandbox
// recorded them, are not in Lockdown's order.
type outOfOrderError struct {
	Steps []string
	// Step is the first step out of place: unknown, repeated, or taken
	// after one that Lockdown puts after it.
	Step string
}

func (e *outOfOrderError) Error() string {
	return fmt.Sprintf("lockdown steps %s: %s is out of the order %s",
		strings.Join(e.Steps, " "), e.Step, strings.Join(Lockdown, " "))
}

// InLockdownOrder reports whether steps, the lockdown steps a sandbox
// recorded as it took them, come in Lockdown's order, each once: a
// tier without a layer leaves its step out. Its error names the first
// step out of place.
func InLockdownOrder(steps []string) error {
	next := 0 // Lockdown's index past the last step seen
	for _, step := range steps {
		i := slices.Index(Lockdown, step)
		if i < next {
			return &outOfOrderError{Steps: steps, Step: step}
		}
		next = i + 1
	}
	return nil
}

// workBytes bounds the snippet's writable work dir (and RLIMIT_FSIZE
// without a mount namespace).
const workBytes = 32 << 20

// Limits are the limits a sandbox is started with.
type Limits struct {
	Timeout time.Duration
	Memory  int64
	// Accounted: the run's memory as a whole is bounded (by the init or a
	// cgroup); Tmpfs: the work dir and shared memory are tmpfs mounts of
	// bounded size (a mount namespace). Both set by the service's plan.
	Accounted, Tmpfs bool
}

// AddressSpace is RLIMIT_AS for lim: a loose backstop where the run's
// memory is accounted (threads and libraries such as OpenBLAS reserve far
// more address space than they use), the memory limit where it is not.
func AddressSpace(lim Limits) uint64 {
	if lim.Accounted {
		return uint64(max(4*lim.Memory, 1<<30))
	}
	return uint64(lim.Memory)
}

// RlimitRule is one resource limit of the policy; Value gives it for a
// run's limits.
type RlimitRule struct {
	Name     string // RLIMIT_ name, as resource.RLIMIT_<name> in python
	Resource int
	Value    func(Limits) uint64
}
