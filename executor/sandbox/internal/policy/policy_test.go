package policy

import (
	"slices"
	"testing"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// TestLockdownKeepsWhatTheKernelNeeds: Lockdown is every step once, and
// its order keeps what the kernel needs: the namespaces first, the mounts
// before seccomp (which denies mount) and before the uid (they need root
// of the namespace), no_new_privs before Landlock and seccomp
// (unprivileged, neither may be set without it).
func TestLockdownKeepsWhatTheKernelNeeds(t *testing.T) {
	all := []string{protocol.StepNamespaces, protocol.StepMounts, protocol.StepDescriptors, protocol.StepNoNewPrivs,
		protocol.StepLandlock, protocol.StepSeccomp, protocol.StepUID, protocol.StepRlimits}
	if !slices.Equal(slices.Sorted(slices.Values(Lockdown)), slices.Sorted(slices.Values(all))) {
		t.Fatalf("the order %q is not every step once", Lockdown)
	}
	before := func(a, b string) bool { return slices.Index(Lockdown, a) < slices.Index(Lockdown, b) }
	if Lockdown[0] != protocol.StepNamespaces || !before(protocol.StepNoNewPrivs, protocol.StepLandlock) ||
		!before(protocol.StepNoNewPrivs, protocol.StepSeccomp) || !before(protocol.StepMounts, protocol.StepSeccomp) ||
		!before(protocol.StepMounts, protocol.StepUID) {
		t.Errorf("the order %q breaks what the kernel needs", Lockdown)
	}
}
