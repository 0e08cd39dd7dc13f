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
