package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"golang.org/x/sys/unix"
)

// cgroupRoot is where cgroup v2 is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupTree is a cgroup v2 subtree delegated to the service: each
// sandbox starts in a cgroup of its own below it (clone3 with
// CLONE_INTO_CGROUP), whose memory.max is the run's memory limit. The
// machine's other cgroups are never touched.
type cgroupTree struct {
	dir string
	seq atomic.Uint64
}

// findCgroup returns the subtree named by name (RUNBLOCK_CGROUP: a path
// below root, or an absolute one), or else the service's own cgroup (from
// the /proc/self/cgroup text self), when it is delegated: the memory and
// pids controllers enabled for its children and the service may create
// them. A service that systemd started in a subgroup of its delegated
// cgroup (Delegate=yes with DelegateSubgroup=) sits in a leaf, which cannot
// enable controllers: then the delegated parent is the subtree. nil with
// the reason when there is none. Nothing is written.
func findCgroup(root, name, self string) (*cgroupTree, error) {
	if name != "" {
		if !filepath.IsAbs(name) {
			name = filepath.Join(root, name)
		}
		return delegated(name)
	}
	var own string
	for _, line := range strings.Split(self, "\n") {
		if path, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			own = path
		}
	}
	if own == "" {
		return nil, errors.New("no cgroup v2 hierarchy (cgroup v1 or hybrid)")
	}
	dir := filepath.Join(root, own)
	tree, err := delegated(dir)
	if err == nil || dir == root {
		return tree, err
	}
	if parent, perr := delegated(filepath.Dir(dir)); perr == nil && filepath.Dir(dir) != root {
		return parent, nil
	}
	return nil, err
}

// delegated returns the cgroup at dir when the service may create cgroups
// below it with the memory and pids controllers.
func delegated(dir string) (*cgroupTree, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	enabled := strings.Fields(string(b))
	for _, c := range []string{"memory", "pids"} {
		if !slices.Contains(enabled, c) {
			return nil, fmt.Errorf("cgroup %s does not enable %s for its children (cgroup.subtree_control)", dir, c)
		}
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return nil, fmt.Errorf("cgroup %s is not delegated to this user: %w", dir, err)
	}
	return &cgroupTree{dir: dir}, nil
}

// runCgroup is one sandbox's cgroup.
type runCgroup struct {
	dir string
	fd  int // for SysProcAttr.CgroupFD
}

// newRun makes a cgroup for one sandbox limited to memory bytes.
func (t *cgroupTree) newRun(memory int64) (*runCgroup, error) {
	dir := filepath.Join(t.dir, fmt.Sprintf("run-%d-%d", os.Getpid(), t.seq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	cg := &runCgroup{dir: dir, fd: -1}
	settings := map[string]string{"memory.max": strconv.FormatInt(memory, 10)}
	for k, v := range policy.Cgroup {
		settings[k] = v
	}
	for k, v := range settings {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			_ = cg.remove()
			return nil, fmt.Errorf("cgroup %s: %w", k, err)
		}
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = cg.remove()
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	cg.fd = fd
	return cg, nil
}

// oomKilled reports whether the kernel killed a process of the run for
// its memory, and the most the run held.
func (cg *runCgroup) oomKilled() (bool, int64) {
	var killed bool
	if b, err := os.ReadFile(filepath.Join(cg.dir, "memory.events")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
				killed = true
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(cg.dir, "memory.peak"))
	peak, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return killed, peak
}

// remove deletes the cgroup once its processes are gone.
func (cg *runCgroup) remove() error {
	if cg.fd >= 0 {
		unix.Close(cg.fd)
		cg.fd = -1
	}
	return unix.Rmdir(cg.dir)
}

// serviceCgroup finds the delegated subtree, if any (see findCgroup).
func serviceCgroup(name string) (*cgroupTree, error) {
	self, _ := os.ReadFile("/proc/self/cgroup")
	return findCgroup(cgroupRoot, name, string(self))
}
