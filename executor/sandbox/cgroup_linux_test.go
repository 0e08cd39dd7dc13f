package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
)

// The machine's cgroups are not ours: these run against a fake tree.

func fakeCgroup(t *testing.T, subtree string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "system.slice", "runblock.service")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(subtree), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestFindCgroup(t *testing.T) {
	const service = "system.slice/runblock.service"
	for _, tt := range []struct {
		name, subtree, env, self string
		want                     string // the subtree found below root, "": none
	}{
		{"own cgroup delegated", "cpu memory pids\n", "", "0::/system.slice/runblock.service\n", service},
		{"named by RUNBLOCK_CGROUP", "memory pids\n", service, "0::/user.slice\n", service},
		{"memory not enabled", "pids\n", "", "0::/system.slice/runblock.service\n", ""},
		{"cgroup v1", "memory pids\n", "", "12:memory:/system.slice\n", ""},
		{"hybrid: the v2 line among v1 lines", "memory pids\n", "", "12:memory:/system.slice\n1:name=systemd:/\n0::/system.slice/runblock.service\n", service},
		{"missing", "memory pids\n", "nope", "", ""},
		// Delegate=yes with DelegateSubgroup=supervisor: the service sits
		// in a leaf of its delegated cgroup.
		{"in a subgroup of a delegated cgroup", "memory pids\n", "", "0::/system.slice/runblock.service/supervisor\n", service},
		{"in a subgroup of a cgroup not delegated", "pids\n", "", "0::/system.slice/runblock.service/supervisor\n", ""},
		{"own cgroup missing", "memory pids\n", "", "0::/system.slice/other.service\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeCgroup(t, tt.subtree)
			leaf := filepath.Join(root, service, "supervisor")
			if err := os.MkdirAll(leaf, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(leaf, "cgroup.subtree_control"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			tree, err := findCgroup(root, tt.env, tt.self)
			switch {
			case tt.want == "" && err == nil:
				t.Fatalf("found %s, want none", tree.dir)
			case tt.want != "" && err != nil:
				t.Fatalf("found none (%v), want %s", err, tt.want)
			case tt.want != "" && tree.dir != filepath.Join(root, tt.want):
				t.Fatalf("found %s, want %s", tree.dir, tt.want)
			}
		})
	}
}

// TestRunCgroup proves, on a fake cgroup tree, that a run's cgroup is
// made below the service's with the policy's limits written, that
// oomKilled reads an OOM kill and the peak from memory.events and
// memory.peak, and that remove takes the cgroup away.
func TestRunCgroup(t *testing.T) {
	root := fakeCgroup(t, "memory pids\n")
	tree, err := findCgroup(root, filepath.Join(root, "system.slice/runblock.service"), "")
	if err != nil {
		t.Fatal(err)
	}
	cg, err := tree.newRun(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cg.fd >= 0 {
			_ = cg.remove()
		}
	}()
	if !strings.HasPrefix(cg.dir, tree.dir+"/run-") || cg.fd < 0 {
		t.Fatalf("run cgroup %q fd %d", cg.dir, cg.fd)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(cg.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("memory.max"); got != "268435456" {
		t.Errorf("memory.max = %q", got)
	}
	for k, v := range policy.Cgroup {
		if got := read(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if oom, _ := cg.oomKilled(); oom {
		t.Error("OOM kill without memory.events")
	}
	for name, content := range map[string]string{"memory.events": "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n", "memory.peak": "268435456\n"} {
		if err := os.WriteFile(filepath.Join(cg.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if oom, peak := cg.oomKilled(); !oom || peak != 256<<20 {
		t.Errorf("oomKilled = %v, %d", oom, peak)
	}
	// A real cgroup's files go with it; a fake one's are removed first.
	entries, _ := os.ReadDir(cg.dir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(cg.dir, e.Name()))
	}
	if err := cg.remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.dir); !os.IsNotExist(err) {
		t.Errorf("run cgroup left behind: %v", err)
	}
}
