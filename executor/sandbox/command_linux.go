package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

// tiers are tried strongest first; the first whose canary run verifies
// every layer it turns on is used.
var tiers = []layerSet{
	{Namespaces: true, Landlock: true, Seccomp: true, Locker: true},
	{Namespaces: true, Seccomp: true, Locker: true},
	{Landlock: true, Seccomp: true, Locker: true},
	{Seccomp: true, Locker: true},
}

// cloneFlags are the clone flags of the namespaces, by their names in
// /proc/self/ns/ (see policy.Namespaces and policy.CloneDenied).
var cloneFlags = map[string]uintptr{
	"user": unix.CLONE_NEWUSER, "mnt": unix.CLONE_NEWNS, "pid": unix.CLONE_NEWPID, "net": unix.CLONE_NEWNET,
	"ipc": unix.CLONE_NEWIPC, "uts": unix.CLONE_NEWUTS, "cgroup": unix.CLONE_NEWCGROUP, "time": unix.CLONE_NEWTIME,
}

// namespaceFlags returns the clone flags of the named namespaces.
func namespaceFlags(names []string) (uintptr, error) {
	var flags uintptr
	for _, name := range names {
		flag, ok := cloneFlags[name]
		if !ok {
			return 0, fmt.Errorf("unknown namespace %q", name)
		}
		flags |= flag
	}
	return flags, nil
}

// addressSpaceLimit: RLIMIT_AS bounds the snippet's memory.
const addressSpaceLimit = true

// command builds the process that becomes the sandbox.
// hostUID is the snippet's host uid (see plan.runUID); cgroupFD, when not
// -1, the cgroup the sandbox starts in.
func (p *plan) command(ctx context.Context, spec protocol.StageSpec, hostUID, cgroupFD int) (*exec.Cmd, error) {
	arg, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	// Setpgid: a sandbox never shares the service's process group, so a
	// Ctrl-C at the terminal (SIGINT to the foreground group) spares it.
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	switch {
	case p.layers.Namespaces:
		cmd = exec.CommandContext(ctx, "/proc/self/exe")
		cmd.Args = []string{protocol.InitMarker, string(arg)}
		if attr.Cloneflags, err = namespaceFlags(policy.Namespaces); err != nil {
			return nil, err
		}
		if p.mapRoot {
			// The init maps to host root only so it can bind the interpreter
			// from directories like /root; the snippet gets hostUID.
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: policy.UID, HostID: hostUID, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: policy.UID, HostID: hostUID, Size: 1}}
			attr.GidMappingsEnableSetgroups = true
		} else {
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		}
		cmd.Dir = "/"
	default:
		if p.layers.Locker {
			cmd = exec.CommandContext(ctx, "/proc/self/exe")
			cmd.Args = []string{protocol.LockerMarker, string(arg)}
		} else {
			cmd = exec.CommandContext(ctx, spec.Python, spec.Args...)
			cmd.Args[0] = spec.Python
		}
		if hostUID >= 0 {
			attr.Credential = &syscall.Credential{Uid: uint32(hostUID), Gid: uint32(hostUID)}
		}
		cmd.Dir = spec.Dir
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	}
	if cgroupFD >= 0 {
		attr.UseCgroupFD, attr.CgroupFD = true, cgroupFD
	}
	cmd.SysProcAttr = attr
	cmd.Env = spec.Env
	if p.layers.Namespaces || p.layers.Locker {
		// Our own binary: nothing of the service's environment. One P is
		// plenty for an init; a -race build would otherwise sleep 1 s in
		// every init's exit.
		cmd.Env = []string{"GORACE=atexit_sleep_ms=0", "GOMAXPROCS=1"}
	}
	return cmd, nil
}

// pipe makes a pipe for a sandbox: its service's end (the read end where
// reads) goes through the runtime's poller, the sandbox's end stays
// blocking, as a process expects its descriptors. os.Pipe's would put
// both in the poller, and the sandbox's is then made blocking again to be
// handed over, and taken out of the poller as it is closed: about 20
// system calls a sandbox of six pipes.
func pipe(reads bool) (service, sandbox *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	s, c := fds[1], fds[0]
	if reads {
		s, c = fds[0], fds[1]
	}
	if err := unix.SetNonblock(s, true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// os.NewFile polls a descriptor that is non-blocking, and only such.
	return os.NewFile(uintptr(s), "|0"), os.NewFile(uintptr(c), "|1"), nil
}
