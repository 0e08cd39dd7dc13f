package sandbox

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"golang.org/x/sys/unix"
)

// kernelNumbers are protocol.go's kernel numbers, by their Go names, each
// with the value golang.org/x/sys/unix gives it.
var kernelNumbers = map[string][2]int64{
	"PrSetDumpable":           {protocol.PrSetDumpable, unix.PR_SET_DUMPABLE},
	"PrSetSeccomp":            {protocol.PrSetSeccomp, unix.PR_SET_SECCOMP},
	"PrSetSecurebits":         {protocol.PrSetSecurebits, unix.PR_SET_SECUREBITS},
	"PrSetNoNewPrivs":         {protocol.PrSetNoNewPrivs, unix.PR_SET_NO_NEW_PRIVS},
	"SeccompModeFilter":       {protocol.SeccompModeFilter, unix.SECCOMP_MODE_FILTER},
	"SecbitsNoRoot":           {protocol.SecbitsNoRoot, secbitNoRoot | secbitNoRootLocked},
	"SysLandlockRestrictSelf": {protocol.SysLandlockRestrictSelf, unix.SYS_LANDLOCK_RESTRICT_SELF},
	"CapabilityVersion3":      {protocol.CapabilityVersion3, unix.LINUX_CAPABILITY_VERSION_3},
	"MountNoSuid":             {protocol.MountNoSuid, unix.MS_NOSUID},
	"MountNoDev":              {protocol.MountNoDev, unix.MS_NODEV},
	"MountNoExec":             {protocol.MountNoExec, unix.MS_NOEXEC},
	"NetlinkSockDiag":         {protocol.NetlinkSockDiag, unix.NETLINK_SOCK_DIAG},
	"SaNoCldStop":             {protocol.SaNoCldStop, saNoCldStop},
}

// SECBIT_NOROOT and SECBIT_NOROOT_LOCKED (linux/securebits.h), which
// golang.org/x/sys/unix does not name.
const (
	secbitNoRoot       = 1 << 0
	secbitNoRootLocked = 1 << 1
)

// SA_NOCLDSTOP (asm-generic/signal.h, the same on x86-64 and arm64),
// which golang.org/x/sys/unix does not name either.
const saNoCldStop = 1

// A kernel number written bare in a call of forkserver.py.
var bareKernelNumber = regexp.MustCompile(`\b(prctl|syscall)\((\d|0x)|\bsocket\.socket\([^)]*,\s*\d+\)`)

// kernelNumberErrors lists where the protocol lines of forkserver (the
// source of forkserver.py) disagree with numbers (Go name: value), and
// the kernel numbers it writes bare.
func kernelNumberErrors(forkserver string, numbers map[string]int64) []string {
	var errs []string
	seen := map[string]bool{}
	for _, m := range protocolLine.FindAllStringSubmatch(forkserver, -1) {
		names, values, goNames := strings.Split(m[1], ","), strings.Split(m[2], ","), strings.Fields(m[3])
		if len(names) != len(values) || len(names) != len(goNames) {
			errs = append(errs, fmt.Sprintf("forkserver.py: %q: %d names, %d values, %d Go names", m[0], len(names), len(values), len(goNames)))
			continue
		}
		for i, goName := range goNames {
			name := strings.TrimSpace(names[i])
			value, err := strconv.ParseInt(strings.TrimSpace(values[i]), 0, 64)
			want, ok := numbers[goName]
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("forkserver.py: %s stands for %s, which protocol.go does not declare", name, goName))
			case err != nil || value != want:
				errs = append(errs, fmt.Sprintf("forkserver.py: %s = %s, protocol.go's %s is %d", name, strings.TrimSpace(values[i]), goName, want))
			case len(regexp.MustCompile(`\b`+name+`\b`).FindAllString(forkserver, -1)) < 2:
				errs = append(errs, fmt.Sprintf("forkserver.py: %s is declared and never used", name))
			}
			seen[goName] = true
		}
	}
	for _, goName := range slices.Sorted(maps.Keys(numbers)) {
		if !seen[goName] {
			errs = append(errs, fmt.Sprintf("forkserver.py: no protocol line names %s", goName))
		}
	}
	if bare := bareKernelNumber.FindAllString(forkserver, -1); bare != nil {
		errs = append(errs, fmt.Sprintf("forkserver.py: bare kernel numbers: %q", bare))
	}
	return errs
}

// TestForkServerKernelNumbers holds the kernel numbers of forkserver.py
// (prctl options, syscall numbers, mount flags) to protocol.go's, and
// those to golang.org/x/sys/unix's; no call writes one bare. Each case
// changes one side alone, and must be caught.
func TestForkServerKernelNumbers(t *testing.T) {
	numbers := map[string]int64{}
	for name, v := range kernelNumbers {
		numbers[name] = v[0]
		if v[0] != v[1] {
			t.Errorf("protocol.%s is %d, the kernel's is %d", name, v[0], v[1])
		}
	}
	if errs := kernelNumberErrors(forkserverSource, numbers); errs != nil {
		t.Fatalf("forkserver.py disagrees with protocol.go:\n%s", strings.Join(errs, "\n"))
	}
	replace := func(old, new string) string {
		if !strings.Contains(forkserverSource, old) {
			t.Fatalf("the case's %q is not in the source", old)
		}
		return strings.Replace(forkserverSource, old, new, 1)
	}
	changed := maps.Clone(numbers)
	changed["PrSetSeccomp"] = 23
	for _, c := range []struct {
		name, forkserver string
		numbers          map[string]int64
		want             string
	}{
		{name: "Go's number changed", numbers: changed, want: "PR_SET_SECCOMP = 22, protocol.go's PrSetSeccomp is 23"},
		{name: "forkserver.py's number changed", forkserver: replace("= 446  #", "= 445  #"), want: "SYS_LANDLOCK_RESTRICT_SELF = 445"},
		{name: "a bare prctl", forkserver: replace("prctl(PR_SET_NO_NEW_PRIVS,", "prctl(38,"), want: `bare kernel numbers: ["prctl(3"]`},
		{name: "a bare syscall", forkserver: replace("syscall(SYS_LANDLOCK_RESTRICT_SELF,", "syscall(446,"), want: `["syscall(4"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.numbers == nil {
				c.numbers = numbers
			}
			errs := kernelNumberErrors(cmp.Or(c.forkserver, forkserverSource), c.numbers)
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, c.want) }) {
				t.Errorf("the change is not caught: want an error with %q, got %q", c.want, errs)
			}
		})
	}
}
