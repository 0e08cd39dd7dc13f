package sandbox

import (
	"encoding/binary"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// seccompVerdict runs the filter prog on a syscall as the kernel would
// (seccomp_data: nr, arch, ip, args) and names what it does.
func seccompVerdict(t *testing.T, vm *bpf.VM, audit uint32, nr int, args ...uint64) string {
	t.Helper()
	// The filter loads 32-bit words in the machine's order; the VM loads
	// them big-endian: each word is written big-endian.
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], audit)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[20+8*i:], uint32(a>>32))
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	switch action, value := uint32(ret)&0xffff0000, uint32(ret)&0xffff; action {
	case unix.SECCOMP_RET_ALLOW:
		return "allow"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "kill the process"
	case unix.SECCOMP_RET_ERRNO:
		return "fail with " + unix.ErrnoName(unix.Errno(value))
	default:
		return fmt.Sprintf("return %#x", uint32(ret))
	}
}

// TestSeccompPolicyGolden: the seccomp filter the sandbox assembles from
// the policy acts as testdata/seccomp-<arch>.golden says: every syscall of
// the machine's table run through the filter, and clone and socket with
// each flag and family the policy names; each denied syscall with the
// policy's reason. A change of the policy or of its assembly shows in
// the golden file (go test -run TestSeccompPolicyGolden -update rewrites
// it).
func TestSeccompPolicyGolden(t *testing.T) {
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	if native != arch.X86_64 && native != arch.AARCH64 {
		t.Skipf("no golden file for %s", native.Name)
	}
	prog, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, g := range policy.DeniedSyscalls {
		for _, name := range g.Names {
			why[name] = g.Why
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# The sandbox's seccomp filter on %s, as it acts (TestSeccompPolicyGolden).\n", native.Name)
	fmt.Fprintf(&b, "a syscall of another ABI (audit arch %#x): %s\n", uint32(arch.I386.ID), seccompVerdict(t, vm, uint32(arch.I386.ID), 0))
	if native == arch.X86_64 {
		fmt.Fprintf(&b, "an x32 syscall (nr | %#x): %s\n", arch.X32.SeccompMask, seccompVerdict(t, vm, uint32(native.ID), arch.X32.SeccompMask))
	}
	allowed := 0
	for _, nr := range slices.Sorted(maps.Keys(native.SyscallNumbers)) {
		name := native.SyscallNumbers[nr]
		v := seccompVerdict(t, vm, uint32(native.ID), nr)
		if v == "allow" {
			allowed++
			continue
		}
		fmt.Fprintf(&b, "%s (%d): %s", name, nr, v)
		if why[name] != "" {
			fmt.Fprintf(&b, ": %s", why[name])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "the %d other syscalls of the table: allow\n", allowed)
	clone := native.SyscallNames["clone"]
	fmt.Fprintf(&b, "clone without a namespace flag: %s\n", seccompVerdict(t, vm, uint32(native.ID), clone, uint64(unix.SIGCHLD)))
	for _, ns := range policy.CloneDenied {
		fmt.Fprintf(&b, "clone with the %s namespace's flag: %s\n", ns, seccompVerdict(t, vm, uint32(native.ID), clone, uint64(cloneFlags[ns])|uint64(unix.SIGCHLD)))
	}
	for _, call := range []string{"socket", "socketpair"} {
		for _, f := range []struct {
			name   string
			family uint64
		}{{"AF_UNIX", unix.AF_UNIX}, {"AF_INET", unix.AF_INET}, {"AF_INET6", unix.AF_INET6}, {"AF_NETLINK", unix.AF_NETLINK},
			{"AF_PACKET", unix.AF_PACKET}, {"AF_VSOCK", unix.AF_VSOCK}, {"AF_UNIX with high bits set", 1<<32 | unix.AF_UNIX}} {
			fmt.Fprintf(&b, "%s(%s): %s\n", call, f.name, seccompVerdict(t, vm, uint32(native.ID), native.SyscallNames[call], f.family))
		}
	}
	golden := filepath.Join("testdata", "seccomp-"+native.Name+".golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestSeccompPolicyGolden -update writes it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the effective seccomp policy differs from %s (-update rewrites it after review):\n%s", golden, got)
	}
}

// TestSeccompSearchActsAsTheLibrarysChain: the filter's binary search
// (seccompProgram) gives every syscall what go-seccomp-bpf's assembly of
// the same policy gives it, behind the same check of the ABI: each
// number up to 1023 and in the x32 range, in this ABI and others, with
// first arguments that cover clone's namespace flags and the socket
// families, high bits set and not.
//
// But for one call, where the chain is wrong: once clone's conditions
// fail, the chain goes on to compare the argument it loaded with the
// numbers of socket and socketpair, the next syscalls with conditions
// (it loads the number again nowhere), so a clone whose flags' low word
// is one of those numbers is held to the socket family's condition, and
// fails. The search allows it, as the policy does.
func TestSeccompSearchActsAsTheLibrarysChain(t *testing.T) {
	native, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	search, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	chain, err := librarysChain(native)
	if err != nil {
		t.Fatal(err)
	}
	vms := [2]*bpf.VM{}
	for i, prog := range [][]bpf.Instruction{search, chain} {
		if vms[i], err = bpf.NewVM(prog); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("the search: %d instructions, the chain: %d", len(search), len(chain))
	args := []uint64{0, uint64(unix.SIGCHLD), 1 << 32, 1<<32 | unix.AF_UNIX, ^uint64(0)}
	for family := range uint64(64) {
		args = append(args, family)
	}
	for _, flag := range cloneFlags {
		args = append(args, uint64(flag), uint64(flag)|uint64(unix.SIGCHLD), uint64(flag)<<32)
	}
	nrs := []int{}
	for nr := range 1024 {
		nrs = append(nrs, nr, nr|int(arch.X32.SeccompMask))
	}
	clone := native.SyscallNames["clone"]
	chainsError := func(nr int, arg uint64) bool {
		low := int(uint32(arg))
		return nr == clone && (low == native.SyscallNames["socket"] || low == native.SyscallNames["socketpair"])
	}
	for _, audit := range []uint32{uint32(native.ID), uint32(arch.I386.ID), uint32(arch.ARM.ID)} {
		for _, nr := range nrs {
			for _, arg := range args {
				got, want := seccompVerdict(t, vms[0], audit, nr, arg), seccompVerdict(t, vms[1], audit, nr, arg)
				if audit == uint32(native.ID) && chainsError(nr, arg) {
					want = "allow"
				}
				if got != want {
					t.Fatalf("syscall %d (audit arch %#x) with %#x: the search says %s, the library's chain %s", nr, audit, arg, got, want)
				}
			}
		}
	}
}

// librarysChain is go-seccomp-bpf's assembly of the policy, behind the
// filter's check of the ABI: what seccompProgram assembled before its
// search.
func librarysChain(native *arch.Info) ([]bpf.Instruction, error) {
	var conditional []seccomp.NameWithConditions
	for _, name := range policy.CloneDenied {
		conditional = append(conditional, seccomp.NameWithConditions{
			Name:       "clone",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: uint64(cloneFlags[name])}},
		})
	}
	var otherFamily seccomp.ArgumentConditions
	for _, name := range policy.AllowedSocketFamilies {
		otherFamily = append(otherFamily, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: socketFamilies[name]})
	}
	for _, call := range []string{"socket", "socketpair"} {
		conditional = append(conditional, seccomp.NameWithConditions{Name: call, Conditions: otherFamily})
	}
	filter := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: policy.DeniedNames()},
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
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(native.ID), SkipTrue: 1},
		kill,
	}
	if native.ID == arch.X86_64.ID {
		prog = append(prog,
			bpf.LoadAbsolute{Off: 0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(arch.X32.SeccompMask), SkipFalse: 1},
			kill,
		)
	}
	return append(prog, body...), nil
}
