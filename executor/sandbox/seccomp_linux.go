package sandbox

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox: debugging other
// processes, changing mounts or namespaces, kernel keyrings, BPF, perf,
// modules, clocks and the like. None of them is needed to run Python.
var deniedSyscalls = []string{
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
}

// namespaceFlags are the clone flags that would create new namespaces.
var namespaceFlags = []uint64{
	unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWIPC, unix.CLONE_NEWUTS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// deniedSocketFamilies cannot be created: no IP networking, no raw packets.
var deniedSocketFamilies = []uint64{unix.AF_INET, unix.AF_INET6, unix.AF_PACKET}

// seccompProgram builds the sandbox's filter: kill the process on any
// syscall of a foreign ABI (int 0x80, x32), then a blocklist.
func seccompProgram() ([]bpf.Instruction, error) {
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	var conditional []seccomp.NameWithConditions
	for _, flag := range namespaceFlags {
		conditional = append(conditional, seccomp.NameWithConditions{
			Name:       "clone",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: flag}},
		})
	}
	for _, family := range deniedSocketFamilies {
		for _, call := range []string{"socket", "socketpair"} {
			conditional = append(conditional, seccomp.NameWithConditions{
				Name:       call,
				Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: family}},
			})
		}
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: deniedSyscalls},
			// clone3 passes its flags in memory a filter cannot read; ENOSYS
			// makes the C library fall back to clone, whose flags it can.
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: seccomp.ActionErrno, NamesWithCondtions: conditional},
		},
	}
	body, err := policy.Assemble()
	if err != nil {
		return nil, err
	}
	kill := bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 1},
		kill,
	}
	if native.ID == arch.X86_64.ID {
		prog = append(prog,
			bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(arch.X32.SeccompMask), SkipFalse: 1},
			kill,
		)
	}
	return append(prog, body...), nil
}

// seccompFilter assembles the filter once, in the service; stage 2 only
// loads it. It travels in the stage spec as the kernel's struct
// sock_filter array in native byte order (base64 in JSON): as JSON objects
// its instructions doubled the time every init spends decoding its spec.
func seccompFilter() ([]byte, error) {
	prog, err := seccompProgram()
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp filter: %w", err)
	}
	b := make([]byte, 0, len(raw)*sockFilterSize)
	for _, in := range raw {
		b = binary.NativeEndian.AppendUint16(b, in.Op)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	return b, nil
}

// sockFilterSize is the size of one struct sock_filter.
const sockFilterSize = 8

// loadSeccomp installs prog (see seccompFilter) on the calling thread,
// which is about to execve. no_new_privs must already be set on it.
func loadSeccomp(prog []byte) error {
	if len(prog)%sockFilterSize != 0 {
		return fmt.Errorf("load seccomp filter: %d bytes is not a whole program", len(prog))
	}
	filter := make([]syscall.SockFilter, len(prog)/sockFilterSize)
	for i := range filter {
		in := prog[i*sockFilterSize:]
		filter[i] = syscall.SockFilter{Code: binary.NativeEndian.Uint16(in), Jt: in[2], Jf: in[3], K: binary.NativeEndian.Uint32(in[4:])}
	}
	fprog := syscall.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("load seccomp filter: %w", errno)
	}
	return nil
}
