package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// capability is a Linux capability a root service needs to start sandboxes.
type capability struct {
	name string
	bit  uint
	why  string
}

// neededCapabilities are what a root service (the container's root, e.g.
// Compose's and Kubernetes' executor) needs in its effective set. A
// non-root service maps only its own uid and needs none.
var neededCapabilities = []capability{
	{"CAP_SETUID", 7, "write the sandbox's uid map, or setuid to the snippet's uid"},
	{"CAP_SETGID", 6, "write the sandbox's gid map, or setgid to the snippet's gid"},
	{"CAP_SETFCAP", 31, "map uid 0 into the sandbox's user namespace (Linux 5.12+): namespace tiers"},
	{"CAP_CHOWN", 0, "give the work dir to the snippet's uid: tiers without namespaces"},
	{"CAP_DAC_OVERRIDE", 1, "read and remove the snippet's work dir: tiers without namespaces"},
}

// missingCapabilities explains which of neededCapabilities a service with
// effective uid euid lacks, from the CapEff line of its /proc/self/status;
// "" when it is not root, lacks none, or status has no readable CapEff.
func missingCapabilities(status []byte, euid int) string {
	if euid != 0 {
		return ""
	}
	var eff uint64
	found := false
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			var err error
			eff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			found = err == nil
		}
	}
	if !found {
		return ""
	}
	var missing []string
	for _, c := range neededCapabilities {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, fmt.Sprintf("%s (to %s)", c.name, c.why))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("the service runs as root without %s: add them to the container (effective capabilities %016x)",
		strings.Join(missing, ", "), eff)
}

// capabilityHint is missingCapabilities of this process.
func capabilityHint() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	return missingCapabilities(status, os.Geteuid())
}
