package sandbox

import (
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// socketFamilies are the address families policy.AllowedSocketFamilies may name.
var socketFamilies = map[string]uint64{"AF_UNIX": unix.AF_UNIX}

// seccompProgram builds the sandbox's filter from the policy: kill the
// process on any syscall of a foreign ABI (int 0x80, x32), then a
// blocklist.
func seccompProgram() ([]bpf.Instruction, error) {
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	var conditional []seccomp.NameWithConditions
	for _, name := range policy.CloneDenied {
		flag, ok := cloneFlags[name]
		if !ok {
			return nil, fmt.Errorf("unknown namespace %q", name)
		}
		conditional = append(conditional, seccomp.NameWithConditions{
			Name:       "clone",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: uint64(flag)}},
		})
	}
	// An allowlist: a call is denied when its family is none of the
	// allowed (the conditions of one entry must all hold). The whole 64-bit
	// argument is compared, so high bits set make it no allowed family.
	var otherFamily seccomp.ArgumentConditions
	for _, name := range policy.AllowedSocketFamilies {
		family, ok := socketFamilies[name]
		if !ok {
			return nil, fmt.Errorf("unknown socket family %q", name)
		}
		otherFamily = append(otherFamily, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: family})
	}
	for _, call := range []string{"socket", "socketpair"} {
		conditional = append(conditional, seccomp.NameWithConditions{Name: call, Conditions: otherFamily})
	}
	filter := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: policy.DeniedNames()},
			// clone3 passes its flags in memory a filter cannot read; ENOSYS
			// makes the C library fall back to clone, whose flags it can.
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: seccomp.ActionErrno, NamesWithCondtions: conditional},
		},
	}
	body, err := filter.Assemble()
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
	b := make([]byte, 0, len(raw)*protocol.SockFilterSize)
	for _, in := range raw {
		b = binary.NativeEndian.AppendUint16(b, in.Op)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	return b, nil
}
