package sandbox

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor/sandbox/internal/policy"
)

// lockdownAnchor is where a path takes a step (or, step "", calls what
// takes the next ones): pattern, in the body of the function fn of file.
// Anchors in one function must appear in their order.
type lockdownAnchor struct {
	step, file, fn, pattern string
}

var lockdownAnchors = map[string][]lockdownAnchor{
	"cold": {
		{policy.StepNamespaces, "command_linux.go", "func (p *plan) command(", "attr.Cloneflags, err = namespaceFlags(policy.Namespaces)"},
		{"", stageFile, "func sandboxInit(", "spec := setUpInit()"},
		{policy.StepMounts, stageFile, "func setUpInit(", "buildRoot(spec)"},
		{policy.StepDescriptors, stageFile, "func setUpInit(", "closeOnExecFrom(protocol.FDInitStatus)"},
		{"", stageFile, "func sandboxInit(", "lockThread(spec)"},
		{policy.StepNoNewPrivs, stageFile, "func lockThread(", "unix.PR_SET_NO_NEW_PRIVS"},
		{policy.StepLandlock, stageFile, "func lockThread(", "restrictLandlock(*spec.Landlock)"},
		{policy.StepSeccomp, stageFile, "func lockThread(", "loadSeccomp(spec.Seccomp)"},
		{policy.StepUID, stageFile, "func sandboxInit(", "Credential: cred"},
		{policy.StepRlimits, "guard.py", "def _runblock_run(", "resource.setrlimit(res, (limit, limit))"},
	},
	"fork": {
		{policy.StepNamespaces, "forkserver.py", "def _runblock_fork_run(", `kit["clone"](conf["clone_flags"])`},
		{policy.StepMounts, "forkserver.py", "def _runblock_run_python(", `libc.mount(b"proc"`},
		{"", "forkserver.py", "def _runblock_run_python(", `socket.send_fds(back`},
		{"", stageForkFile, "func superviseFork(", "answerHello(back[0]"},
		{"", stageForkFile, "func answerHello(", `unix.Sendmsg(back, []byte("{}")`},
		{"", "forkserver.py", "def _runblock_run_python(", `socket.recv_fds(back`},
		{"", "forkserver.py", "def _runblock_run_python(", `_runblock_lock_run(conf`},
		{policy.StepDescriptors, "forkserver.py", "def _runblock_lock_run(", "posix.closerange(len(high), 1 << 30)"},
		{policy.StepNoNewPrivs, "forkserver.py", "def _runblock_lock_run(", `"no_new_privs")`},
		{policy.StepLandlock, "forkserver.py", "def _runblock_lock_run(", `"landlock_restrict_self")`},
		{policy.StepSeccomp, "forkserver.py", "def _runblock_lock_run(", `"seccomp")`},
		{policy.StepUID, "forkserver.py", "def _runblock_lock_run(", "posix.setresuid(uid, uid, uid)"},
		{policy.StepRlimits, "forkserver.py", "def _runblock_lock_run(", `kit["setrlimit"](`},
	},
}

// The stage's files, where the cold init and the fork server's init take
// their steps.
const (
	stageFile     = "internal/stage/stage_linux.go"
	stageForkFile = "internal/stage/forkserver_linux.go"
)

// functionBody is the text of the top-level function that starts with
// header in src, up to the next top-level one.
func functionBody(src, header string) (string, bool) {
	i := strings.Index(src, "\n"+header)
	if i < 0 {
		return "", false
	}
	body := src[i+1:]
	if end := regexp.MustCompile(`\n(func|def) `).FindStringIndex(body[1:]); end != nil {
		body = body[:end[0]+1]
	}
	return body, true
}

// TestLockdownOrder: both paths take every lockdown step in the one order
// of policy.Lockdown, read from where their code takes them (a change to
// either path's order, or to the list, fails it); and that order keeps
// what the kernel needs: the namespaces first, the mounts before seccomp
// (which denies mount) and before the uid (they need root of the
// namespace), no_new_privs before Landlock and seccomp (unprivileged,
// neither may be set without it).
func TestLockdownOrder(t *testing.T) {
	order := policy.Lockdown
	before := func(a, b string) bool { return slices.Index(order, a) < slices.Index(order, b) }
	all := []string{policy.StepNamespaces, policy.StepMounts, policy.StepDescriptors, policy.StepNoNewPrivs,
		policy.StepLandlock, policy.StepSeccomp, policy.StepUID, policy.StepRlimits}
	if !slices.Equal(slices.Sorted(slices.Values(order)), slices.Sorted(slices.Values(all))) {
		t.Fatalf("the order %q is not every step once", order)
	}
	if order[0] != policy.StepNamespaces || !before(policy.StepNoNewPrivs, policy.StepLandlock) ||
		!before(policy.StepNoNewPrivs, policy.StepSeccomp) || !before(policy.StepMounts, policy.StepSeccomp) ||
		!before(policy.StepMounts, policy.StepUID) {
		t.Errorf("the order %q breaks what the kernel needs", order)
	}
	for _, path := range []string{"cold", "fork"} {
		var steps []string
		last := map[string]int{} // function → offset of its last anchor
		for _, a := range lockdownAnchors[path] {
			src, err := os.ReadFile(a.file)
			if err != nil {
				t.Fatal(err)
			}
			body, ok := functionBody(string(src), a.fn)
			if !ok {
				t.Errorf("%s: no %s in %s", path, a.fn, a.file)
				continue
			}
			at := strings.Index(body, a.pattern)
			key := a.file + " " + a.fn
			if prev, seen := last[key]; at < 0 || seen && at <= prev {
				t.Errorf("%s: %q is not in %s of %s after the path's previous step there", path, a.pattern, a.fn, a.file)
			}
			last[key] = at
			if a.step != "" {
				steps = append(steps, a.step)
			}
		}
		if !slices.Equal(steps, order) {
			t.Errorf("%s: the code takes the steps in the order %q, not policy.Lockdown's %q", path, steps, order)
		}
	}
}
