package sandbox

import (
	"math"

	"golang.org/x/sys/unix"
)

// policy is the whole sandbox policy, in one place, in the spirit of
// snekbox's nsjail config. The mechanics that apply it read it from here:
// the namespaces and mounts in command_linux.go and sandbox_linux.go, the
// Landlock rules in plan.go and sandbox_linux.go, the seccomp filter in
// seccomp_linux.go, the rlimits and environment in plan.go and guard.py.
// The canary run (probe.go) checks that what is promised here is enforced.
//
// A tier may leave kernel layers out where the machine lacks them (see
// tiers; `runblock doctor` reports what is in force). In the full tier, a
// snippet:
//
//   - runs as uid 1000 of its own user namespace (host uid 1_900_000_000
//     when the service is root), with no_new_privs, in fresh mount, PID,
//     network, IPC, UTS and cgroup namespaces: it sees only its own
//     processes, and a network with no interface but a loopback that is down;
//   - sees a read-only root holding the interpreter and the system
//     libraries, a /dev of four devices, its own /proc, and one writable,
//     size-limited work dir (also its /tmp, HOME and TMPDIR);
//   - may create Unix-domain sockets and socket pairs (inside the sandbox
//     only), but no IPv4, IPv6 or packet socket: socket() fails with EPERM,
//     and Landlock also denies every TCP bind and connect;
//   - may not debug other processes, mount, create namespaces, load BPF,
//     use keyrings, perf, io_uring, modules or the clock (EPERM), nor make a
//     syscall of another ABI (int 0x80, x32): that kills it;
//   - is bounded by rlimits: address space (the run's memory limit), CPU
//     time, file size, open files, processes, no core dumps;
//   - gets only the environment below: heavy libraries single-threaded,
//     matplotlib drawing off-screen with its config in the work dir;
//   - gets back the files it leaves in its work dir, within the caps of the
//     executor's Config, read by the service without following symlinks
//     (see collectFiles); names starting with "_" or "." are scratch.
var policy = struct {
	// Python runs as `python <PythonFlags> -c <guard loader> ...`:
	// isolated mode (no user site, no PYTHON* variables), no site import.
	PythonFlags []string

	// Namespaces the sandbox's init is started in, named as in
	// /proc/self/ns/. CloneDenied are those the snippet may not create.
	Namespaces  []string
	CloneDenied []string
	Hostname    string

	// The snippet's uid and gid inside the sandbox, and on the host when
	// the service is root: high, unused, owning nothing on the host.
	UID, HostUID int

	// File system of the namespaced tiers: a tmpfs root, then these.
	RootTmpfs string // mount options of the root tmpfs
	// SystemDirs are bound read-only where they are directories and
	// recreated where they are symlinks (/bin -> usr/bin); the
	// interpreter's prefixes and directory are bound read-only too.
	SystemDirs []string
	// SystemFiles are bound read-only, where they exist.
	SystemFiles []string
	// FontCacheDir is where matplotlib's font cache, built once by the
	// service at start-up, is bound read-only; the guard links it into the
	// per-run MPLCONFIGDIR.
	FontCacheDir string
	// /dev is a read-only tmpfs with binds of Devices and the links DevLinks.
	DevTmpfs string
	Devices  []string
	DevLinks map[string]string
	// WorkDir is a tmpfs of WorkBytes (and WorkInodes inodes) owned by the
	// snippet; /tmp links to it. Without a mount namespace it is a fresh
	// host directory instead. RLIMIT_FSIZE is WorkBytes too.
	WorkDir    string
	WorkBytes  int64
	WorkInodes int
	// ShmDir, in the work dir, is made by the init and linked from
	// /dev/shm (POSIX semaphores of multiprocessing), so it counts in the
	// work dir's size.
	ShmDir string
	// ScratchPrefixes mark work dir names that never come back as files.
	ScratchPrefixes []string
	// /proc is the sandbox's own, with ProcOptions; /etc holds only the
	// system files and a passwd and group naming root and the sandbox user.
	ProcOptions string
	// After pivot_root the root is remounted read-only, nosuid, nodev.

	// Landlock (both tiers that have it): read the interpreter and system
	// directories (and /etc, /proc with namespaces); read ReadFiles; write
	// the work dir and WriteFiles; with namespaces, list the root. Nothing
	// else, and no TCP bind or connect at all.
	ReadFiles  []string
	WriteFiles []string

	// Seccomp: everything not listed is allowed. DeniedSyscalls fail with
	// EPERM; clone with any CloneDenied flag fails with EPERM; clone3 fails
	// with ENOSYS (the filter cannot read its flags, so the C library falls
	// back to clone); socket and socketpair of DeniedSocketFamilies fail
	// with EPERM; a syscall of a foreign ABI (i386 int 0x80, x32) kills the
	// process.
	DeniedSyscalls       []string
	DeniedSocketFamilies []string

	// Rlimits, set as soft = hard by the guard before it says "ready".
	Rlimits []rlimitRule

	// Env is the snippet's whole environment; WorkDirEnv variables are set
	// to the work dir joined with their value.
	Env        []string
	WorkDirEnv map[string]string
}{
	PythonFlags: []string{"-I", "-S"},

	Namespaces:  []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"},
	CloneDenied: []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time"},
	Hostname:    "sandbox",

	UID:     1000,
	HostUID: 1_900_000_000,

	RootTmpfs: "size=1m,nr_inodes=1024,mode=755",
	// /etc/alternatives holds the links Debian's BLAS and LAPACK are found
	// by (numpy); /etc/fonts is fontconfig's configuration.
	SystemDirs:      []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives", "/etc/fonts"},
	SystemFiles:     []string{"/etc/ld.so.cache", "/etc/localtime", "/etc/matplotlibrc", "/etc/mime.types"},
	FontCacheDir:    "/etc/runblock/matplotlib",
	DevTmpfs:        "size=64k,nr_inodes=64,mode=755",
	Devices:         []string{"null", "zero", "random", "urandom"},
	DevLinks:        map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"},
	WorkDir:         "/sandbox",
	WorkBytes:       workBytes,
	WorkInodes:      4096,
	ShmDir:          ".shm",
	ScratchPrefixes: []string{"_", "."},
	// hidepid hides PID 1 (the init, another uid); subset=pid leaves out
	// /proc/sys and friends.
	ProcOptions: "hidepid=invisible,subset=pid",

	ReadFiles:  []string{"/dev/zero", "/dev/random", "/dev/urandom"},
	WriteFiles: []string{"/dev/null"},

	DeniedSyscalls: []string{
		"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
		"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
		"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
		"open_by_handle_at", "name_to_handle_at",
		"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "vhangup",
		"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
		"sethostname", "setdomainname", "iopl", "ioperm",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		"personality", "lookup_dcookie", "fanotify_init",
	},
	DeniedSocketFamilies: []string{"AF_INET", "AF_INET6", "AF_PACKET"},

	Rlimits: []rlimitRule{
		{"AS", unix.RLIMIT_AS, func(lim limits) uint64 { return uint64(lim.Memory) }}, // where the OS has it, see addressSpaceLimit
		{"CPU", unix.RLIMIT_CPU, func(lim limits) uint64 { return uint64(math.Ceil(lim.Timeout.Seconds())) + 1 }},
		{"FSIZE", unix.RLIMIT_FSIZE, func(limits) uint64 { return workBytes }},
		{"NOFILE", unix.RLIMIT_NOFILE, func(limits) uint64 { return 256 }},
		{"NPROC", unix.RLIMIT_NPROC, func(limits) uint64 { return 64 }}, // threads included
		{"CORE", unix.RLIMIT_CORE, func(limits) uint64 { return 0 }},
	},

	Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PYTHONIOENCODING=utf-8",
		"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1", "NUMEXPR_NUM_THREADS=1",
		"VECLIB_MAXIMUM_THREADS=1", "GOTO_NUM_THREADS=1", "MPLBACKEND=Agg"},
	WorkDirEnv: map[string]string{"HOME": "", "TMPDIR": "", "MPLCONFIGDIR": ".config/matplotlib"},
}

// workBytes bounds the snippet's writable work dir and RLIMIT_FSIZE.
const workBytes = 32 << 20

// rlimitRule is one resource limit of the policy; value gives it for a
// run's limits.
type rlimitRule struct {
	name     string // RLIMIT_ name, as resource.RLIMIT_<name> in python
	resource int
	value    func(limits) uint64
}
