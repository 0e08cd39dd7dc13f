package sandbox

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The steps of a sandbox's lockdown, before any snippet code exists.
const (
	stepNamespaces  = "namespaces"
	stepMounts      = "mounts"
	stepDescriptors = "descriptors" // python keeps 0 to 4 only (protocol.go)
	stepUID         = "uid"
	stepRlimits     = "rlimits"
	stepNoNewPrivs  = "no_new_privs"
	stepLandlock    = "landlock"
	stepSeccomp     = "seccomp"
)

var lockdownSteps = []string{stepNamespaces, stepMounts, stepDescriptors, stepUID, stepRlimits, stepNoNewPrivs, stepLandlock, stepSeccomp}

// The order in which each path applies the steps today. They differ: a
// cold run's init locks its own thread (no_new_privs, Landlock, seccomp)
// and forks python from it as the sandbox uid, whose guard then sets the
// rlimits; a forked python is root of its namespace until it locks
// itself down, so it drops its uid first and locks down last, and the
// fork server's init sets its rlimits before that. One order for both
// needs one of them changed (see TestLockdownOrder).
var (
	lockdownCold = []string{stepNamespaces, stepDescriptors, stepMounts, stepNoNewPrivs, stepLandlock, stepSeccomp, stepUID, stepRlimits}
	lockdownFork = []string{stepNamespaces, stepMounts, stepRlimits, stepDescriptors, stepUID, stepNoNewPrivs, stepLandlock, stepSeccomp}
)

// lockdownAnchor is where a path takes a step (or, step "", calls what
// takes the next ones): pattern, in the body of the function fn of file.
// Anchors in one function must appear in their order.
type lockdownAnchor struct {
	step, file, fn, pattern string
}

var lockdownAnchors = map[string][]lockdownAnchor{
	"cold": {
		{stepNamespaces, "command_linux.go", "func (p *plan) command(", "attr.Cloneflags, err = namespaceFlags(policy.Namespaces)"},
		{"", "internal/stage/stage_linux.go", "func sandboxInit(", "spec := setUpInit()"},
		{stepDescriptors, "internal/stage/stage_linux.go", "func setUpInit(", "closeOnExecFrom(protocol.FDInitStatus)"},
		{stepMounts, "internal/stage/stage_linux.go", "func setUpInit(", "buildRoot(spec)"},
		{"", "internal/stage/stage_linux.go", "func sandboxInit(", "lockThread(spec)"},
		{stepNoNewPrivs, "internal/stage/stage_linux.go", "func lockThread(", "unix.PR_SET_NO_NEW_PRIVS"},
		{stepLandlock, "internal/stage/stage_linux.go", "func lockThread(", "restrictLandlock(*spec.Landlock)"},
		{stepSeccomp, "internal/stage/stage_linux.go", "func lockThread(", "loadSeccomp(spec.Seccomp)"},
		{stepUID, "internal/stage/stage_linux.go", "func sandboxInit(", "Credential: cred"},
		{stepRlimits, "guard.py", "def _runblock_run(", "resource.setrlimit(res, (limit, limit))"},
	},
	"fork": {
		{stepNamespaces, "forkserver.py", "def _runblock_fork_run(", `kit["clone"](conf["clone_flags"])`},
		{stepMounts, "forkserver.py", "def _runblock_run_python(", `libc.mount(b"proc"`},
		{"", "forkserver.py", "def _runblock_run_python(", `socket.send_fds(back`},
		{"", "internal/stage/forkserver_linux.go", "func superviseFork(", "lockForkedRun(back[0]"},
		{stepRlimits, "internal/stage/forkserver_linux.go", "func lockForkedRun(", "unix.Prlimit(python"},
		{"", "internal/stage/forkserver_linux.go", "func lockForkedRun(", `unix.Sendmsg(back, []byte("{}")`},
		{"", "forkserver.py", "def _runblock_run_python(", `socket.recv_fds(back`},
		{"", "forkserver.py", "def _runblock_run_python(", `_runblock_lock_run(conf`},
		{stepDescriptors, "forkserver.py", "def _runblock_lock_run(", "posix.closerange(len(high), 1 << 30)"},
		{stepUID, "forkserver.py", "def _runblock_lock_run(", "posix.setresuid(uid, uid, uid)"},
		{stepNoNewPrivs, "forkserver.py", "def _runblock_lock_run(", `"no_new_privs")`},
		{stepLandlock, "forkserver.py", "def _runblock_lock_run(", `"landlock_restrict_self")`},
		{stepSeccomp, "forkserver.py", "def _runblock_lock_run(", `"seccomp")`},
	},
}

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

// TestLockdownOrder: each path takes every lockdown step, in the order
// declared for it (lockdownCold, lockdownFork), read from where its code
// takes them; and both orders keep what the kernel needs: the namespaces
// first, no_new_privs before Landlock and seccomp (unprivileged, neither
// may be set without it), the mounts before seccomp (which denies mount).
func TestLockdownOrder(t *testing.T) {
	before := func(order []string, a, b string) bool { return slices.Index(order, a) < slices.Index(order, b) }
	for path, order := range map[string][]string{"cold": lockdownCold, "fork": lockdownFork} {
		if !slices.Equal(slices.Sorted(slices.Values(order)), slices.Sorted(slices.Values(lockdownSteps))) {
			t.Errorf("%s: the order %q is not every step once", path, order)
		}
		if order[0] != stepNamespaces || !before(order, stepNoNewPrivs, stepLandlock) || !before(order, stepNoNewPrivs, stepSeccomp) ||
			!before(order, stepMounts, stepSeccomp) {
			t.Errorf("%s: the order %q breaks what the kernel needs", path, order)
		}
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
			t.Errorf("%s: the code takes the steps in the order %q, declared %q", path, steps, order)
		}
	}
}
