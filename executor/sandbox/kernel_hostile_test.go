//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/eventually"
)

// The tests of issue 20's item 11: the kernel paths of recent sandbox
// escapes, each refused by a kernel layer (seccomp, Landlock, namespaces),
// on both paths and with the guard off (bothPaths), issued as raw syscalls
// through ctypes. Syscall numbers are x86-64's.

// needAMD64 skips where the snippets' syscall numbers are not the machine's.
func needAMD64(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("syscall numbers of x86-64")
	}
}

// wantDenied runs code, which prints one line per attempt that was not
// refused as expected and then "done", and fails on any such line.
func wantDenied(t *testing.T, e *Executor, req executor.Request) executor.Result {
	t.Helper()
	res := runCode(t, e, req)
	if !res.Success || res.Stdout != "done\n" {
		t.Errorf("not refused:\n%s\nsuccess=%v error=%q stderr=%s", res.Stdout, res.Success, res.Error, res.Stderr)
	}
	return res
}

// kernelKit is the snippets' common start: libc's syscall returning a
// long, and check, which reports a call whose result is not -1 with one of
// the wanted errnos.
const kernelKit = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
EPERM, ENOENT, ESRCH, EACCES, ENOSYS = 1, 2, 3, 13, 38

def verdict(what, r, err, want):
    if r != -1 or err not in want:
        print("%s = %d (errno %d), want -1 with errno in %s" % (what, r, err, want), flush=True)

def check(what, call, *want):
    ctypes.set_errno(0)
    r = call()
    verdict(what, r, ctypes.get_errno(), want)

def cannot_open(path, flags):
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    os.close(fd)
    print("opened %s with flags %#o" % (path, flags), flush=True)
`

// TestUnguardedRefusesNothing: the guard-off option of the hostile tests
// really turns the guard's refusals off (else a hostile test "unguarded"
// would prove nothing).
func TestUnguardedRefusesNothing(t *testing.T) {
	for _, cold := range []bool{false, true} {
		t.Run(map[bool]string{false: "fork", true: "cold"}[cold], func(t *testing.T) {
			code := "import os\ntry:\n    print(os.system('exit 3') >> 8)\nexcept PermissionError as exc:\n    print(exc)"
			guarded := runCode(t, newHardened(t, Config{DisableForkServer: cold}), executor.Request{Code: code})
			unguarded := runCode(t, newHardened(t, Config{DisableForkServer: cold, unguarded: true}), executor.Request{Code: code})
			if !strings.Contains(guarded.Stdout, "disabled in runblock") || unguarded.Stdout != "3\n" {
				t.Errorf("guarded: %q, unguarded: %q (stderr %s)", guarded.Stdout, unguarded.Stdout, unguarded.Stderr)
			}
		})
	}
}

// TestKeyringsDenied: no keyctl, add_key or request_key, from the snippet
// or a child: CVE-2024-42318 let KEYCTL_SESSION_TO_PARENT strip the
// parent's Landlock domain. Landlock still holds afterwards (/dev/zero is
// readable only).
func TestKeyringsDenied(t *testing.T) {
	bothPaths(t, testKeyringsDenied)
}

func testKeyringsDenied(t *testing.T, path Config) {
	needAMD64(t)
	e := newHardened(t, path)
	const keys = `
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_SESSION_TO_PARENT, KEY_SPEC_SESSION_KEYRING = 1, 18, -3
check("keyctl(JOIN_SESSION_KEYRING)", lambda: libc.syscall(250, KEYCTL_JOIN_SESSION_KEYRING, None), EPERM)
check("keyctl(SESSION_TO_PARENT)", lambda: libc.syscall(250, KEYCTL_SESSION_TO_PARENT), EPERM)
check("add_key", lambda: libc.syscall(248, b"user", b"k", b"v", 1, KEY_SPEC_SESSION_KEYRING), EPERM)
check("request_key", lambda: libc.syscall(249, b"user", b"k", None, KEY_SPEC_SESSION_KEYRING), EPERM)
`
	code := kernelKit + keys + `
import subprocess
child = subprocess.run([sys.executable, "-c", sys.argv[1]], capture_output=True, text=True)
sys.stdout.write(child.stdout + child.stderr)
cannot_open("/dev/zero", os.O_WRONLY)
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
if status["NoNewPrivs"].strip() != "1" or status["Seccomp"].strip() != "2":
    print("no_new_privs %s, seccomp %s" % (status["NoNewPrivs"], status["Seccomp"]))
print("done")`
	wantDenied(t, e, executor.Request{Code: code, Args: []string{kernelKit + keys}})
}

// TestIOUringDenied: io_uring, whose requests bypass seccomp once a ring
// exists, cannot be set up, entered or registered.
func TestIOUringDenied(t *testing.T) {
	bothPaths(t, testIOUringDenied)
}

func testIOUringDenied(t *testing.T, path Config) {
	needAMD64(t)
	e := newHardened(t, path)
	wantDenied(t, e, executor.Request{Code: kernelKit + `
params = ctypes.create_string_buffer(120)  # struct io_uring_params
check("io_uring_setup", lambda: libc.syscall(425, 8, params), EPERM)
check("io_uring_enter", lambda: libc.syscall(426, 0, 1, 1, 0, None, 0), EPERM)
check("io_uring_register", lambda: libc.syscall(427, 0, 0, None, 0), EPERM)
print("done")`})
}

// TestNestedNamespacesDenied: no user namespace (which would make the
// snippet root of a network namespace and reach nf_tables through
// netlink), nor any other, by unshare, clone, clone3 or setns, nor
// util-linux's unshare; no netlink socket.
func TestNestedNamespacesDenied(t *testing.T) {
	bothPaths(t, testNestedNamespacesDenied)
}

func testNestedNamespacesDenied(t *testing.T, path Config) {
	needAMD64(t)
	e := newHardened(t, path)
	wantDenied(t, e, executor.Request{Code: kernelKit + `
import shutil, signal, subprocess
NEWUSER, NEWNET, NEWNS, NEWPID = 0x10000000, 0x40000000, 0x00020000, 0x20000000
for name, flags in (("NEWUSER|NEWNET", NEWUSER | NEWNET), ("NEWUSER", NEWUSER), ("NEWNET", NEWNET), ("NEWNS", NEWNS), ("NEWPID", NEWPID)):
    check("unshare(%s)" % name, lambda: libc.syscall(272, flags), EPERM)
    # A child that got through would return 0 here: end it at once.
    r = libc.syscall(56, flags | signal.SIGCHLD, 0, 0, 0, 0)
    err = ctypes.get_errno()
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    verdict("clone(%s)" % name, r, err, (EPERM,))

class CloneArgs(ctypes.Structure):
    _fields_ = [(f, ctypes.c_uint64) for f in ("flags", "pidfd", "child_tid", "parent_tid", "exit_signal",
                                                "stack", "stack_size", "tls", "set_tid", "set_tid_size", "cgroup")]
args = CloneArgs(flags=NEWUSER | NEWNET, exit_signal=signal.SIGCHLD)
r = libc.syscall(435, ctypes.byref(args), ctypes.sizeof(args))
err = ctypes.get_errno()
if r == 0:
    os._exit(0)
if r > 0:
    os.waitpid(r, 0)
verdict("clone3(NEWUSER|NEWNET)", r, err, (ENOSYS,))
for ns in ("user", "net", "mnt"):
    fd = os.open("/proc/self/ns/" + ns, os.O_RDONLY)
    check("setns(%s)" % ns, lambda: libc.syscall(308, fd, 0), EPERM)
    os.close(fd)
NETLINK_NETFILTER = 12
check("socket(AF_NETLINK, NETLINK_NETFILTER)", lambda: libc.syscall(41, 16, 3, NETLINK_NETFILTER), EPERM)
tool = shutil.which("unshare")
if tool:
    r = subprocess.run([tool, "--user", "--map-root-user", "--net", "true"], capture_output=True)
    if r.returncode == 0:
        print("util-linux unshare --user --net succeeded")
print("done")`})
}

// TestProcWritesDenied: nothing in /proc opens for writing, directly or
// through a symlink the snippet leaves in its work dir (the runc CVEs of
// November 2025 redirected writes into /proc/sys and /proc/self/attr);
// nothing is written on the host.
func TestProcWritesDenied(t *testing.T) {
	bothPaths(t, testProcWritesDenied)
}

func testProcWritesDenied(t *testing.T, path Config) {
	needAMD64(t)
	e := newHardened(t, path)
	before, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
	// Opened only: a write that the open let through would do nothing.
	wantDenied(t, e, executor.Request{Code: kernelKit + `
targets = ["/proc/self/attr/current", "/proc/self/attr/exec", "/proc/thread-self/attr/current",
           "/proc/self/attr/apparmor/current", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
           "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger", "/proc/self/oom_score_adj", "/proc/self/uid_map",
           "/proc/self/setgroups", "/proc/self/mem", "/proc/self/coredump_filter", "/proc/1/mem"]
for i, target in enumerate(targets):
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC):
        cannot_open(target, flags)
    link = "link%d" % i
    os.symlink(target, link)
    cannot_open(link, os.O_WRONLY)
    os.symlink("/proc/self/cwd/" + link, link + "-via-cwd")
    cannot_open(link + "-via-cwd", os.O_WRONLY)
os.symlink("/proc", "procdir")
cannot_open("procdir/sys/kernel/core_pattern", os.O_WRONLY)
cannot_open("procdir/self/attr/current", os.O_WRONLY)
print("done")`})
	if after, _ := os.ReadFile("/proc/sys/kernel/core_pattern"); string(after) != string(before) {
		t.Errorf("core_pattern changed: %q -> %q", before, after)
	}
}

// debugAttempts tries every way to debug or read another process's memory
// against each pid of the JSON map on stdin, the snippet's own child and
// pid 1: ptrace, process_vm_readv/writev, pidfd_getfd, kcmp (seccomp:
// EPERM whatever the target), /proc/PID/mem for writing (Landlock, or
// hidden). Pids of another PID namespace must be invisible (ESRCH).
const debugAttempts = kernelKit + `
import json, signal, time
targets = {name: pids for name, pids in json.loads(sys.stdin.read() or "{}").items()}
buf = ctypes.create_string_buffer(b"runblock", 64)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
vec = iovec(ctypes.addressof(buf), 64)  # the same address in a forked child
child = os.fork()
if child == 0:
    while True:
        time.sleep(1)
hidden = set(pid for pids in targets.values() for pid in pids)
targets["own child"] = [child]
targets["pid 1"] = [1]
PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_SEIZE = 0, 16, 0x4206
check("ptrace(TRACEME)", lambda: libc.syscall(101, PTRACE_TRACEME, 0, 0, 0), EPERM)
for name, pids in targets.items():
    for pid in pids:
        what = "%s %d" % (name, pid)
        check("ptrace(ATTACH, %s)" % what, lambda: libc.syscall(101, PTRACE_ATTACH, pid, 0, 0), EPERM)
        check("ptrace(SEIZE, %s)" % what, lambda: libc.syscall(101, PTRACE_SEIZE, pid, 0, 0), EPERM)
        check("process_vm_readv(%s)" % what, lambda: libc.syscall(310, pid, ctypes.byref(vec), 1, ctypes.byref(vec), 1, 0), EPERM)
        check("process_vm_writev(%s)" % what, lambda: libc.syscall(311, pid, ctypes.byref(vec), 1, ctypes.byref(vec), 1, 0), EPERM)
        check("kcmp(%s)" % what, lambda: libc.syscall(312, os.getpid(), pid, 0, 0, 0), EPERM)
        ctypes.set_errno(0)
        pidfd = libc.syscall(434, pid, 0)
        pidfd_err = ctypes.get_errno()
        if pidfd >= 0:
            check("pidfd_getfd(%s)" % what, lambda: libc.syscall(438, pidfd, 0, 0), EPERM)
            os.close(pidfd)
        for flags in (os.O_WRONLY, os.O_RDWR):
            cannot_open("/proc/%d/mem" % pid, flags)
        if pid in hidden:
            check("kill(%s, 0)" % what, lambda: libc.syscall(62, pid, 0), ESRCH)
            verdict("pidfd_open(%s)" % what, pidfd, pidfd_err, (ESRCH,))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
`

// TestNoDebuggingOtherProcesses: a snippet cannot ptrace, read or write the
// memory of, or take descriptors from any process: its own child (seccomp
// refuses the calls whatever the target), its run's PID 1, the fork server
// (its init and python) or a sibling run, whose host pids it is given:
// those are in other PID namespaces, invisible. The sibling ends
// untouched.
func TestNoDebuggingOtherProcesses(t *testing.T) {
	bothPaths(t, testNoDebuggingOtherProcesses)
}

func testNoDebuggingOtherProcesses(t *testing.T, path Config) {
	needAMD64(t)
	e := newHardened(t, path)
	marker := fmt.Sprintf("rbsib%d", time.Now().UnixNano()%1e9)
	sibling, err := startRun(e, e.limits(executor.Request{Timeout: 20 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res executor.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		// It names itself and lives for siblingLife, past the attack.
		res, err := sibling.run(context.Background(), executor.Request{Code: fmt.Sprintf(
			"import ctypes, time\nctypes.CDLL(None).prctl(15, b%q)\ntime.sleep(%g)\nprint('sibling intact')", marker, siblingLife.Seconds())})
		done <- result{res, err}
	}()
	targets := map[string][]int{}
	found, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	eventually.Poll(found, func() bool { targets["sibling run"] = hostPids(marker); return len(targets["sibling run"]) > 0 })
	cancel()
	if cold, ok := sibling.launch.(*coldLaunch); ok {
		targets["sibling run"] = descendants(cold.cmd.Process.Pid) // its init
	}
	if e.fork != nil {
		if live := e.fork.current(); live != nil {
			targets["fork server"] = descendants(live.cmd.Process.Pid)
		}
	}
	stdin, err := json.Marshal(targets)
	if err != nil {
		t.Fatal(err)
	}
	wantDenied(t, e, executor.Request{Code: debugAttempts + "print('done')", Stdin: string(stdin)})
	if len(targets["sibling run"]) == 0 || len(hostPids(marker)) == 0 {
		t.Errorf("the sibling run was not alive throughout the attack (pids %v): raise siblingLife", targets["sibling run"])
	}
	t.Logf("host pids attacked: %v", targets)
	r := <-done
	if r.err != nil || r.res.Stdout != "sibling intact\n" {
		t.Errorf("the sibling run: %q %v (error %q)", r.res.Stdout, r.err, r.res.Error)
	}
}

// siblingLife is how long the sibling run of testNoDebuggingOtherProcesses
// lives: past the attack.
const siblingLife = 4 * time.Second

// hostPids are the host pids of the processes whose name is marker.
func hostPids(marker string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		if b, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil && strings.TrimSpace(string(b)) == marker {
			if pid, err := strconv.Atoi(filepath.Base(dir)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// descendants are pid and its descendants, by /proc's children lists.
func descendants(pid int) []int {
	pids := []int{pid}
	for i := 0; i < len(pids); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pids[i]))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, field := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(field); err == nil && !slices.Contains(pids, c) {
					pids = append(pids, c)
				}
			}
		}
	}
	return pids
}

// TestRemoteDebuggingDisabled: CPython 3.14's remote debugging (PEP 768,
// sys.remote_exec) is off in the sandbox's python (-X
// disable-remote-debug) and in the pythons a snippet starts
// (PYTHON_DISABLE_REMOTE_DEBUG in its environment), and an attach fails
// even between two pythons that have it on: it needs ptrace rights or
// process_vm_writev, which seccomp refuses. Where the interpreter predates
// 3.14 (no sys.remote_exec), the test proves the option and the variable
// are set and that the attach primitives are refused (debugAttempts).
func TestRemoteDebuggingDisabled(t *testing.T) {
	bothPaths(t, testRemoteDebuggingDisabled)
}

func testRemoteDebuggingDisabled(t *testing.T, path Config) {
	needAMD64(t)
	e := newHardened(t, path)
	res := wantDenied(t, e, executor.Request{Code: debugAttempts + `
import subprocess
if os.environ.get("PYTHON_DISABLE_REMOTE_DEBUG") != "1":
    print("PYTHON_DISABLE_REMOTE_DEBUG is %r" % os.environ.get("PYTHON_DISABLE_REMOTE_DEBUG"))
if "disable-remote-debug" not in sys._xoptions:
    print("python runs without -X disable-remote-debug: %r" % sys._xoptions)
probe = "import os, sys; print(os.environ.get('PYTHON_DISABLE_REMOTE_DEBUG'), getattr(sys, 'is_remote_debug_enabled', lambda: False)())"
got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.split()
if got != ["1", "False"]:
    print("a child python: variable, enabled = %s" % got)
if hasattr(sys, "is_remote_debug_enabled") and sys.is_remote_debug_enabled():
    print("remote debugging is on in the snippet's python")
if hasattr(sys, "remote_exec"):
    # Both with remote debugging on: only the kernel stands between them.
    clean = {k: v for k, v in os.environ.items() if k != "PYTHON_DISABLE_REMOTE_DEBUG"}
    victim = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"], env=clean)
    with open("payload.py", "w") as f:
        f.write("open(%r, 'w').write('attached')" % os.path.abspath("attached"))
    attacker = "import sys\ntry:\n    sys.remote_exec(%d, %r)\n    print('remote_exec returned')\nexcept Exception as exc:\n    print('refused')" % (victim.pid, os.path.abspath("payload.py"))
    out = subprocess.run([sys.executable, "-c", attacker], env=clean, capture_output=True, text=True, timeout=10)
    time.sleep(0.5)
    victim.kill()
    if out.stdout.strip() != "refused" or os.path.exists("attached"):
        print("sys.remote_exec: %r %r, payload ran: %s" % (out.stdout, out.stderr[-300:], os.path.exists("attached")))
    sys.stderr.write("remote_exec tried\n")
print("done")`})
	if strings.Contains(res.Stderr, "remote_exec tried") {
		t.Log("sys.remote_exec attach attempted and refused")
	} else {
		t.Log("this python has no sys.remote_exec (before 3.14): proved the option, the variable and the refused attach primitives")
	}
}
