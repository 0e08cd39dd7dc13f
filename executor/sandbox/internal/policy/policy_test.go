package policy

import (
	"errors"
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

// TestInLockdownOrder: steps as a sandbox recorded them pass in
// Lockdown's order, with the steps of layers a tier lacks left out; a
// step out of place, repeated or unknown fails, named in the error.
func TestInLockdownOrder(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []string
		bad   string // the step the error names; "" passes
	}{
		{name: "the whole order", steps: Lockdown},
		{name: "none", steps: nil},
		{name: "a tier without namespaces", steps: []string{protocol.StepNoNewPrivs, protocol.StepLandlock, protocol.StepSeccomp, protocol.StepRlimits}},
		{name: "the guard alone", steps: []string{protocol.StepRlimits}},
		{name: "mounts and descriptors swapped", steps: []string{protocol.StepNamespaces, protocol.StepDescriptors, protocol.StepMounts}, bad: protocol.StepMounts},
		{name: "seccomp before landlock", steps: []string{protocol.StepNoNewPrivs, protocol.StepSeccomp, protocol.StepLandlock}, bad: protocol.StepLandlock},
		{name: "a step twice", steps: []string{protocol.StepMounts, protocol.StepMounts}, bad: protocol.StepMounts},
		{name: "an unknown step", steps: []string{protocol.StepMounts, "chroot"}, bad: "chroot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := InLockdownOrder(c.steps)
			var order *outOfOrderError
			switch {
			case c.bad == "" && err != nil:
				t.Errorf("%q: %v", c.steps, err)
			case c.bad != "" && (!errors.As(err, &order) || order.Step != c.bad):
				t.Errorf("%q: %v, want an *outOfOrderError naming %s", c.steps, err, c.bad)
			}
		})
	}
}
