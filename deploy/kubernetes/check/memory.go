package check

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// ServiceMemoryBytes is what an executor holds besides its runs and
// sessions: runblock itself, the warm pool's sandboxes and the fork
// server.
const ServiceMemoryBytes = 256 << 20

// runblock's defaults (internal/config) of the settings the sum reads.
const (
	defaultMemoryBytes        = 256 << 20
	defaultSessionMemoryBytes = 1 << 30
)

// MemoryError is an executor whose memory limit is below what its
// settings let it hold at once.
type MemoryError struct {
	Deployment  string
	Limit, Need int64
	Sum         string // how Need adds up
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("%s: memory limit %d MiB is below %s = %d MiB: the kernel would kill the container with every run and session in it; raise the limit or lower the settings",
		e.Deployment, e.Limit>>20, e.Sum, e.Need>>20)
}

// ExecutorMemory checks that the memory limit of the executor Deployment
// d holds everything its settings allow at once:
// RUNBLOCK_CONCURRENCY x RUNBLOCK_MEMORY + RUNBLOCK_SESSION_MEMORY (none
// with RUNBLOCK_SESSIONS=off) + ServiceMemoryBytes. It returns a
// *MemoryError when it does not, and an error when a setting it needs is
// not a literal value.
func ExecutorMemory(d *appsv1.Deployment) error {
	if len(d.Spec.Template.Spec.Containers) != 1 {
		return fmt.Errorf("%s: %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	limit := c.Resources.Limits.Memory()
	if limit.IsZero() {
		return fmt.Errorf("%s: no memory limit", d.Name)
	}
	v, ok, err := literal(c, "RUNBLOCK_CONCURRENCY")
	if err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	if !ok {
		return fmt.Errorf("%s: RUNBLOCK_CONCURRENCY is unset: its default, the node's CPUs, bounds no memory limit; set it", d.Name)
	}
	runs, err := strconv.ParseInt(v, 10, 64)
	if err != nil || runs < 1 {
		return fmt.Errorf("%s: RUNBLOCK_CONCURRENCY=%q is not a whole number of at least 1", d.Name, v)
	}
	run, err := sizeSetting(c, "RUNBLOCK_MEMORY", defaultMemoryBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	sessions, err := sizeSetting(c, "RUNBLOCK_SESSION_MEMORY", defaultSessionMemoryBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	if v, _, _ := literal(c, "RUNBLOCK_SESSIONS"); strings.EqualFold(v, "off") {
		sessions = 0
	}
	need := runs*run + sessions + ServiceMemoryBytes
	if limit.Value() < need {
		return &MemoryError{Deployment: d.Name, Limit: limit.Value(), Need: need,
			Sum: fmt.Sprintf("RUNBLOCK_CONCURRENCY %d x RUNBLOCK_MEMORY %d MiB + RUNBLOCK_SESSION_MEMORY %d MiB + the service %d MiB", runs, run>>20, sessions>>20, ServiceMemoryBytes>>20)}
	}
	return nil
}

// literal is the value of c's variable name: ok is false when it is
// unset, and the error says when it is set other than by a value.
func literal(c corev1.Container, name string) (v string, ok bool, err error) {
	for _, e := range c.Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom != nil {
			return "", false, fmt.Errorf("%s comes from a reference: the check reads only a value", name)
		}
		return strings.TrimSpace(e.Value), e.Value != "", nil
	}
	return "", false, nil
}

// sizeSetting is the size setting name of c in bytes, def when unset.
func sizeSetting(c corev1.Container, name string, def int64) (int64, error) {
	v, ok, err := literal(c, name)
	if err != nil || !ok {
		return def, err
	}
	n, err := parseSize(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", name, v, err)
	}
	return n, nil
}

// parseSize reads a size as runblock does (internal/config.ParseSize): a
// number with a binary unit (K, KB, KiB, M, MB, MiB, G, GB, GiB; B for
// bytes), a bare number counting MiB.
func parseSize(s string) (int64, error) {
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	mult := map[string]float64{"": 1 << 20, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}[unit]
	f, err := strconv.ParseFloat(num, 64)
	if mult == 0 || err != nil {
		return 0, fmt.Errorf("not a size such as 256MiB or 1GiB")
	}
	return int64(f * mult), nil
}
