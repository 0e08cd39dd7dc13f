package sandbox

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

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
// process on any syscall of a foreign ABI (int 0x80, x32), then look the
// syscall's number up in a binary search over the numbers the policy
// names (seccompAsm.search), each leading to its verdict; every other
// number is allowed.
//
// A search, not a chain: go-seccomp-bpf assembles a policy as a chain
// that compares the number with each syscall named in turn, about 65
// comparisons before a call is allowed. The kernel runs the filter at
// every system call of the snippet, and as it loads the filter it runs it
// for each syscall number, to find those it may allow without running it
// (its action cache): the chain's load took about 0.13 ms of every run's
// start, 1.6 % of a pre-forked HumanEval program's CPU; the search's,
// with at most 8 comparisons, about 0.03. The policy is go-seccomp-bpf's
// to assemble still, in TestSeccompSearchActsAsTheLibrarysChain, which
// holds the two to the same verdict on every syscall number.
func seccompProgram() ([]bpf.Instruction, error) {
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	var nsFlags uint64
	for _, name := range policy.CloneDenied {
		flag, ok := cloneFlags[name]
		if !ok {
			return nil, fmt.Errorf("unknown namespace %q", name)
		}
		nsFlags |= uint64(flag)
	}
	var families []uint32
	for _, name := range policy.AllowedSocketFamilies {
		family, ok := socketFamilies[name]
		if !ok {
			return nil, fmt.Errorf("unknown socket family %q", name)
		}
		families = append(families, uint32(family))
	}
	if nsFlags>>32 != 0 {
		return nil, fmt.Errorf("namespace flags %#x past the low word of clone's argument", nsFlags)
	}
	var a seccompAsm
	kill, deny, noSys, allow, clone, socket := a.label(), a.label(), a.label(), a.label(), a.label(), a.label()
	verdicts := map[uint32]int{}
	name := func(call string, verdict int) error {
		nr, ok := native.SyscallNames[call]
		if !ok {
			return fmt.Errorf("unknown syscall %q on %s", call, native.Name)
		}
		if _, twice := verdicts[uint32(nr)]; twice {
			return fmt.Errorf("syscall %q named twice in the policy", call)
		}
		verdicts[uint32(nr)] = verdict
		return nil
	}
	for _, call := range policy.DeniedNames() {
		if err := name(call, deny); err != nil {
			return nil, err
		}
	}
	// clone3 passes its flags in memory a filter cannot read; ENOSYS
	// makes the C library fall back to clone, whose flags it can.
	for call, verdict := range map[string]int{"clone3": noSys, "clone": clone, "socket": socket, "socketpair": socket} {
		if err := name(call, verdict); err != nil {
			return nil, err
		}
	}

	a.emit(bpf.LoadAbsolute{Off: seccompArch, Size: 4})
	a.jump(bpf.JumpEqual, uint32(native.ID), next, kill)
	a.emit(bpf.LoadAbsolute{Off: seccompNr, Size: 4})
	if native.ID == arch.X86_64.ID {
		a.jump(bpf.JumpGreaterOrEqual, uint32(arch.X32.SeccompMask), kill, next)
	}
	a.search(slices.Sorted(maps.Keys(verdicts)), verdicts, allow)
	// clone with any denied namespace flag (all in the argument's low word).
	a.mark(clone)
	a.emit(bpf.LoadAbsolute{Off: seccompArgLow, Size: 4})
	a.jump(bpf.JumpBitsSet, uint32(nsFlags), deny, allow)
	// socket and socketpair of a family not allowed: the whole 64-bit
	// argument is compared, so high bits set make it no allowed family.
	a.mark(socket)
	a.emit(bpf.LoadAbsolute{Off: seccompArgLow + 4, Size: 4})
	a.jump(bpf.JumpEqual, 0, next, deny)
	a.emit(bpf.LoadAbsolute{Off: seccompArgLow, Size: 4})
	for _, family := range families {
		a.jump(bpf.JumpEqual, family, allow, next)
	}
	a.mark(deny) // (none of them)
	a.emit(bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.EPERM)})
	a.mark(kill)
	a.emit(bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)})
	a.mark(noSys)
	a.emit(bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)})
	a.mark(allow)
	a.emit(bpf.RetConstant{Val: uint32(seccomp.ActionAllow)})
	return a.assemble()
}

// Offsets in struct seccomp_data: the syscall's number, its audit arch,
// and the low word of its first argument (the words of a 64-bit argument
// in the machine's order: little-endian on the architectures runblock
// isolates on, amd64 and arm64).
const (
	seccompNr     = 0
	seccompArch   = 4
	seccompArgLow = 16
)

// next, as a jump's target, is the instruction after it.
const next = -1

// seccompAsm assembles a classic BPF program with jumps to labels, which
// must lie ahead, within the 255 instructions a conditional jump can
// skip.
type seccompAsm struct {
	prog   []bpf.Instruction
	jumps  map[int][2]int // instruction index: its true and false labels
	labels []int          // label: the instruction it marks
}

func (a *seccompAsm) label() int {
	a.labels = append(a.labels, -1)
	return len(a.labels) - 1
}

func (a *seccompAsm) mark(label int) { a.labels[label] = len(a.prog) }

func (a *seccompAsm) emit(in bpf.Instruction) { a.prog = append(a.prog, in) }

func (a *seccompAsm) jump(cond bpf.JumpTest, val uint32, yes, no int) {
	if a.jumps == nil {
		a.jumps = map[int][2]int{}
	}
	a.jumps[len(a.prog)] = [2]int{yes, no}
	a.emit(bpf.JumpIf{Cond: cond, Val: val})
}

// search emits a binary search of the loaded syscall number over nrs
// (sorted, not empty), to the label verdicts gives each, or to
// otherwise: up to three numbers are compared in turn, more split at the
// middle one.
func (a *seccompAsm) search(nrs []uint32, verdicts map[uint32]int, otherwise int) {
	if len(nrs) <= 3 {
		for i, nr := range nrs {
			no := next
			if i == len(nrs)-1 {
				no = otherwise
			}
			a.jump(bpf.JumpEqual, nr, verdicts[nr], no)
		}
		return
	}
	mid := len(nrs) / 2
	upper := a.label()
	a.jump(bpf.JumpGreaterOrEqual, nrs[mid], upper, next)
	a.search(nrs[:mid], verdicts, otherwise)
	a.mark(upper)
	a.search(nrs[mid:], verdicts, otherwise)
}

// assemble resolves the jumps to their labels.
func (a *seccompAsm) assemble() ([]bpf.Instruction, error) {
	for i, to := range a.jumps {
		in := a.prog[i].(bpf.JumpIf)
		skips := [2]uint8{}
		for k, label := range to {
			at := i + 1
			if label != next {
				at = a.labels[label]
			}
			if at <= i || at-i-1 > 255 {
				return nil, fmt.Errorf("seccomp filter: a jump of instruction %d to %d", i, at)
			}
			skips[k] = uint8(at - i - 1)
		}
		in.SkipTrue, in.SkipFalse = skips[0], skips[1]
		a.prog[i] = in
	}
	return a.prog, nil
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
