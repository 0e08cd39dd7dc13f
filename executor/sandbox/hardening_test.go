package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/policy"
	"github.com/runblock/runblock/internal/syncbuf"
)

// The tests of issue 11: what a hostile snippet tried and must not get.

// newHardened makes an executor with the full isolation tier whose runs
// are forks of its fork server, or, with cfg.DisableForkServer, start
// from scratch.
func newHardened(t *testing.T, cfg Config) *Executor {
	t.Helper()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if err := e.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.report.Tier != TierFull {
		MissingFullTier(t, "needs the full isolation tier, have %q; the stronger tiers failed: %+v", e.report.Tier, e.report.FailedTiers)
	}
	if !cfg.DisableForkServer && e.fork == nil {
		if e.plan.cgroup != nil {
			t.Skipf("no fork server with a delegated cgroup: %s", e.report.ForkServer.Detail)
		}
		t.Fatalf("full tier without a fork server: %s", e.report.ForkServer.Detail)
	}
	return e
}

// fullTierRequired: where CI=true (CI machines of this project have the
// full tier) or RUNBLOCK_REQUIRE_FULL_TIER=1, a hostile test that would
// skip for want of the full tier fails instead, so that no run passes with
// them unrun. (Tests read the environment; the service never does.)
func fullTierRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv("RUNBLOCK_REQUIRE_FULL_TIER") == "1"
}

// MissingFullTier ends a test that needs the full isolation tier where the
// machine lacks it: a skip, or a failure where fullTierRequired. Exported
// for this package's external tests.
func MissingFullTier(t testing.TB, format string, args ...any) {
	t.Helper()
	if fullTierRequired() {
		t.Fatalf(format+" (a failure, not a skip: CI=true or RUNBLOCK_REQUIRE_FULL_TIER=1 requires the full tier)", args...)
	}
	t.Skipf(format, args...)
}

// bothPaths runs test on the fork path (each run a fork of the fork
// server) and on the cold path (each run starts python from scratch),
// each with the guard and without it ("unguarded": the guard refuses
// nothing, so what holds is the kernel's doing): path is the Config that
// picks it.
func bothPaths(t *testing.T, test func(t *testing.T, path Config)) {
	for _, unguarded := range []bool{false, true} {
		for _, cold := range []bool{false, true} {
			name := map[bool]string{false: "fork", true: "cold"}[cold] + map[bool]string{false: "", true: "-unguarded"}[unguarded]
			t.Run(name, func(t *testing.T) {
				test(t, Config{DisableForkServer: cold, unguarded: unguarded})
			})
		}
	}
}

// Unguarded is cfg with the guard refusing nothing (see Config.unguarded),
// for this package's external tests.
func Unguarded(cfg Config) Config {
	cfg.unguarded = true
	return cfg
}

// runForked runs req in a fresh fork of the fork server Run picks for it
// (the preloaded one for a snippet that imports a preload), never in a
// sandbox started from scratch.
func runForked(t *testing.T, e *Executor, req executor.Request) executor.Result {
	t.Helper()
	p, err := e.forkServer(e.cfg.Preload.uses(req.Code)).spawn(context.Background(), e.limits(req), e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
	if err != nil {
		t.Fatalf("fork a run: %v", err)
	}
	if !p.forked() {
		t.Fatal("the fork server's run is not marked forked")
	}
	res, err := p.run(context.Background(), req)
	if err != nil {
		t.Fatalf("forked run of %.60q: %v", req.Code, err)
	}
	return res
}

// runCode runs req as Run does, in a fork of the fork server when e has
// one (never falling back to a cold start), else from scratch.
func runCode(t *testing.T, e *Executor, req executor.Request) executor.Result {
	t.Helper()
	if e.fork != nil {
		return runForked(t, e, req)
	}
	res, err := e.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run(%.60q): %v", req.Code, err)
	}
	return res
}

// startRun starts a sandbox for one run as Run would: a fork of the fork
// server when e has one, else from scratch.
func startRun(e *Executor, lim limits) (*proc, error) {
	if e.fork != nil {
		return e.fork.spawn(context.Background(), lim, e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
	}
	return spawn(context.Background(), e.plan, lim, e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
}

// startHelper runs this test binary as a helper service (see TestMain) with
// code on its stdin, and cmd.Env added to its environment, and returns what
// it printed.
func startHelper(t *testing.T, cmd *exec.Cmd, mode, code string) helperOutput {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, helperEnv+"="+mode)
	cmd.Stdin = strings.NewReader(code)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %s: %v\n%s", mode, err, stderr.String())
	}
	var h helperOutput
	if err := json.Unmarshal(out, &h); err != nil {
		t.Fatalf("helper %s printed %q: %v", mode, out, err)
	}
	return h
}

// fdProbe lists the snippet's open descriptors and what it could do with
// those past stderr.
const fdProbe = `import json, os
fds, got = [], []
for fd in range(1024):
    try:
        os.fstat(fd)
    except OSError:
        continue
    fds.append(fd)
    if fd < 3:
        continue
    for what, call in (("read", lambda: os.pread(fd, 100, 0)), ("write", lambda: os.write(fd, b"INJECTED\n")),
                       ("list", lambda: os.listdir(fd))):
        try:
            got.append((fd, what, str(call())[:40]))
        except OSError:
            pass
print(json.dumps({"fds": fds, "got": got}))`

// TestInheritedDescriptorsStayOutside: whatever descriptors the service
// inherits (a secret file, a log, a directory), the snippet has 0, 1 and 2
// only, cold and pooled.
func TestInheritedDescriptorsStayOutside(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "app.log")
	var files []*os.File
	for _, open := range []func() (*os.File, error){
		func() (*os.File, error) { return os.Open(secret) },
		func() (*os.File, error) { return os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) },
		func() (*os.File, error) { return os.Open(dir) },
	} {
		f, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		files = append(files, f)
	}
	for _, mode := range []string{"run", "run-pooled", "run cold", "run-pooled cold",
		"run unguarded", "run-pooled unguarded", "run cold unguarded", "run-pooled cold unguarded"} {
		t.Run(mode, func(t *testing.T) {
			mode, unguarded := strings.CutSuffix(mode, " unguarded")
			mode, cold := strings.CutSuffix(mode, " cold")
			cmd := exec.Command(os.Args[0])
			cmd.Env = os.Environ()
			if cold {
				cmd.Env = append(cmd.Env, helperColdEnv+"=1")
			}
			if unguarded {
				cmd.Env = append(cmd.Env, helperUnguardedEnv+"=1")
			}
			// fds 3..11 of the helper service: where a supervisor's
			// descriptors and the design's own would meet.
			cmd.ExtraFiles = append(append(append([]*os.File{}, files...), files...), files...)
			h := startHelper(t, cmd, mode, fdProbe)
			if h.Err != "" {
				t.Fatal(h.Err)
			}
			if h.Report.Tier == TierNone || (h.Report.Tier != TierFull && fullTierRequired()) {
				MissingFullTier(t, "tier %q", h.Report.Tier)
			}
			if h.Report.ForkServer.Active == cold && h.Report.Tier == TierFull {
				t.Fatalf("cold=%v, but the fork server: %+v", cold, h.Report.ForkServer)
			}
			var got struct {
				FDs []int `json:"fds"`
				Got []any `json:"got"`
			}
			if err := json.Unmarshal([]byte(h.Result.Stdout), &got); err != nil {
				t.Fatalf("tier %s: stdout %q stderr %s", h.Report.Tier, h.Result.Stdout, h.Result.Stderr)
			}
			if fmt.Sprint(got.FDs) != "[0 1 2]" || len(got.Got) > 0 {
				t.Errorf("tier %s: the snippet has descriptors %v and did %v", h.Report.Tier, got.FDs, got.Got)
			}
			if b, _ := os.ReadFile(logPath); len(b) > 0 {
				t.Errorf("the snippet wrote into an inherited file: %q", b)
			}
		})
	}
}

// TestVerdictCannotBeForged: what the snippet writes to any descriptor
// changes neither its verdict nor the operator's log.
func TestVerdictCannotBeForged(t *testing.T) {
	bothPaths(t, testVerdictCannotBeForged)
}

func testVerdictCannotBeForged(t *testing.T, cfg Config) {
	var logBuf syncbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	e := newHardened(t, cfg)
	const forge = `import os
for fd in range(3, 16):
    for msg in (b'{"error":"FORGED","exited":true,"exit_code":0,"signal":11}\n', b"memory\n", b"error: FORGED\n"):
        try:
            os.write(fd, msg)
        except OSError:
            pass
`
	tests := []struct {
		name, code string
		timeout    bool
		success    bool
		signal     string
		exit       int
	}{
		{"then success", forge + "print('done')", false, true, "", 0},
		{"then timeout", forge + "while True: pass", true, false, "SIGKILL", -1},
		{"then exit 3", forge + "raise SystemExit(3)", false, false, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCode(t, e, executor.Request{Code: tt.code, Timeout: 500 * time.Millisecond})
			if res.Success != tt.success || res.Timeout != tt.timeout || res.Signal != tt.signal || res.ExitCode != tt.exit || res.MemoryExceeded {
				t.Errorf("success=%v timeout=%v signal=%q exit=%d memory=%v error=%q", res.Success, res.Timeout, res.Signal, res.ExitCode, res.MemoryExceeded, res.Error)
			}
		})
	}
	if strings.Contains(logBuf.String(), "FORGED") {
		t.Errorf("the operator log holds the forged line: %s", logBuf.String())
	}
}

// TestMemoryBoundedPerRun: a run's processes, shared memory and work dir
// together get the memory notice past the limit.
func TestMemoryBoundedPerRun(t *testing.T) {
	bothPaths(t, testMemoryBoundedPerRun)
}

func testMemoryBoundedPerRun(t *testing.T, cfg Config) {
	e := newHardened(t, cfg)
	children := `import os, sys
child = "b = b'x' * (200 << 20)\nimport time\ntime.sleep(30)"
pids = [os.posix_spawn(sys.executable, [sys.executable, "-c", child], {}) for _ in range(6)]
print("spawned", flush=True)
for pid in pids:
    os.waitpid(pid, 0)
print("all held")`
	// The work dir's file is written in one go, then the snippet goes
	// past the limit and holds it. The count is polled (see
	// policy.MemoryRate), so where the CPU is saturated the snippet may
	// print "held" before it: what counts is that the run is killed while
	// it holds, long before its sleep ends. (A count at python's end would
	// find the memory given back, and no verdict.)
	workDir := `import time
with open("big", "wb") as f:
    f.write(b"x" * (30 << 20))
b = b"y" * (300 << 20)
print("held", flush=True)
time.sleep(30)`
	for _, tt := range []struct{ name, code string }{{"six children", children}, {"work dir", workDir}} {
		t.Run(tt.name, func(t *testing.T) {
			// A timeout of its own: on a machine whose CPU is saturated
			// (one busy loop per core beside the test) six pythons take
			// more than the default 5 s to start, at the snippet's nice
			// value; the memory verdict must still come.
			lim := e.defaultLimits()
			lim.Timeout = 60 * time.Second
			p, err := startRun(e, lim)
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.run(context.Background(), executor.Request{Code: tt.code})
			if err != nil {
				t.Fatal(err)
			}
			if !res.MemoryExceeded || res.Success || res.Timeout || res.Duration >= 30*time.Second || strings.Contains(res.Stdout, "all held") {
				t.Errorf("memory=%v success=%v timeout=%v stdout=%q error=%q stderr=%s", res.MemoryExceeded, res.Success, res.Timeout, res.Stdout, res.Error, res.Stderr)
			}
			t.Logf("killed after %v holding %d KiB by the last count, %d KiB over the limit", res.Duration, p.memoryPeak>>10, (p.memoryPeak-e.cfg.MemoryBytes)>>10)
		})
	}
}

// TestMemoryLeftAtExitCounted: a run whose work dir and shared memory
// tmpfs hold more than its limit when python exits gets the memory
// verdict, not success, though python exited on its own before the next
// count. (Before, about one run in three of these succeeded.)
func TestMemoryLeftAtExitCounted(t *testing.T) {
	bothPaths(t, testMemoryLeftAtExitCounted)
}

func testMemoryLeftAtExitCounted(t *testing.T, cfg Config) {
	e := newHardened(t, cfg)
	const work = 30 << 20
	// Together 1 MiB past the limit, so that the run passes it at the
	// very end, and exits at once.
	code := fmt.Sprintf(`import os
for name, size in (("big", %d), ("/dev/shm/big", %d)):
    fd = os.open(name, os.O_CREAT | os.O_WRONLY, 0o600)
    os.posix_fallocate(fd, 0, size)
os._exit(0)`, work, e.cfg.MemoryBytes-work+(1<<20))
	for i := range 10 {
		p, err := startRun(e, e.defaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.run(context.Background(), executor.Request{Code: code})
		if err != nil {
			t.Fatal(err)
		}
		if !res.MemoryExceeded || res.Success {
			t.Errorf("run %d: memory=%v success=%v exit=%d stderr=%s (counted %d KiB at most)", i, res.MemoryExceeded, res.Success, res.ExitCode, res.Stderr, p.memoryPeak>>10)
		}
	}
}

// TestShortForkedRunCounted: a forked run is counted while python lives
// however soon it ends: the start-up canary's run-memory check needs a
// count above zero, and without one the fork server is turned off. (Before,
// the first count came after python was let go; beside two busy loops 3
// of 120 such runs ended before it, and a loaded machine started without
// its fork server now and then.)
func TestShortForkedRunCounted(t *testing.T) {
	for _, cfg := range []Config{{}, Unguarded(Config{})} {
		t.Run(map[bool]string{false: "fork", true: "fork-unguarded"}[cfg.unguarded], func(t *testing.T) {
			e := newHardened(t, cfg)
			for i := range 40 {
				p, err := startRun(e, e.defaultLimits())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.run(context.Background(), executor.Request{Code: "import os\nos._exit(0)"}); err != nil {
					t.Fatal(err)
				}
				if p.memoryPeak <= 0 {
					t.Errorf("run %d ended uncounted", i)
				}
			}
		})
	}
}

// TestKernelSurfacesDenied: shared memory that escapes per-process
// accounting, inotify/fanotify and every socket family but AF_UNIX are
// refused.
func TestKernelSurfacesDenied(t *testing.T) {
	bothPaths(t, testKernelSurfacesDenied)
}

func testKernelSurfacesDenied(t *testing.T, path Config) {
	if runtime.GOARCH != "amd64" {
		t.Skip("syscall numbers of x86-64")
	}
	e := newHardened(t, path)
	res := runCode(t, e, executor.Request{Code: `import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
out = []
for name, nr, args in [("memfd_create", 319, (b"x", 0)), ("shmget", 29, (0, 1 << 20, 0o1600)), ("semget", 64, (0, 1, 0o1600)),
                       ("msgget", 68, (0, 0o1600)), ("mq_open", 240, (b"q", 0o100 | 2, 0o600, None)),
                       ("inotify_init", 253, ()), ("inotify_init1", 294, (0,)), ("fanotify_init", 300, (0, 0))]:
    r = libc.syscall(nr, *args)
    out.append("%s=%s" % (name, "denied" if r == -1 and ctypes.get_errno() in (1, 97) else "allowed(%d/%d)" % (r, ctypes.get_errno())))
for family in (socket.AF_INET, socket.AF_INET6, 16, 17, 31, 38, 40, 44, 46, 63, 1 << 32 | 2, 1 << 32 | 40):
    for call in ("socket", "socketpair"):
        r = libc.syscall(41 if call == "socket" else 53, family, 1, 0, ctypes.byref((ctypes.c_int * 2)()))
        if not (r == -1 and ctypes.get_errno() in (1, 97)):
            out.append("%s(%d)=allowed(%d/%d)" % (call, family, r, ctypes.get_errno()))
a, b = socket.socketpair()
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
out.append("unix ok")
print(" ".join(out))`})
	want := "memfd_create=denied shmget=denied semget=denied msgget=denied mq_open=denied inotify_init=denied inotify_init1=denied fanotify_init=denied unix ok\n"
	if res.Stdout != want {
		t.Errorf("got  %q\nwant %q\nstderr %s", res.Stdout, want, res.Stderr)
	}
}

// TestAddressSpaceIsALooseBackstop: ordinary code that reserves much more
// address space than it uses runs at the default limit.
func TestAddressSpaceIsALooseBackstop(t *testing.T) {
	bothPaths(t, testAddressSpaceIsALooseBackstop)
}

func testAddressSpaceIsALooseBackstop(t *testing.T, path Config) {
	e := newHardened(t, path)
	res := runCode(t, e, executor.Request{Code: `from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(8) as ex:
    print(sum(ex.map(lambda i: i * i, range(100))))`})
	if !res.Success || res.Stdout != "328350\n" {
		t.Errorf("ThreadPoolExecutor(8): stdout=%q error=%q", res.Stdout, res.Error)
	}
	const debian = "/usr/bin/python3"
	if err := exec.Command(debian, "-c", "import numpy, matplotlib").Run(); err != nil {
		t.Skipf("numpy and matplotlib of %s missing (apt-get install python3-numpy python3-matplotlib): %v", debian, err)
	}
	debianPath := path
	debianPath.Python = debian
	e = newHardened(t, debianPath)
	res = runCode(t, e, executor.Request{Code: `import numpy as np
a = np.random.rand(300, 300)
print((a @ a).shape)
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.plot([1, 2, 3])
plt.savefig("p.png")
print("plotted")`, Timeout: 30 * time.Second})
	if !res.Success || res.Stdout != "(300, 300)\nplotted\n" {
		t.Errorf("numpy and matplotlib: stdout=%q error=%q stderr=%s", res.Stdout, res.Error, res.Stderr)
	}
}

// TestMegabyteSnippet: a 1 MiB snippet compiles and runs at the default
// limit; a compile that runs out of memory is a memory notice without the
// guard's frames.
func TestMegabyteSnippet(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a 1 MiB snippet twice; skipped with -short")
	}
	bothPaths(t, testMegabyteSnippet)
}

func testMegabyteSnippet(t *testing.T, path Config) {
	e := newHardened(t, path)
	res := runCode(t, e, executor.Request{Code: strings.Repeat("x=1\n", 262134) + "print(x)\n", Timeout: 30 * time.Second})
	if !res.Success || res.Stdout != "1\n" {
		t.Errorf("1 MiB snippet: success=%v stdout=%q error=%q memory=%v stderr=%.300s", res.Success, res.Stdout, res.Error, res.MemoryExceeded, res.Stderr)
	}
	// One statement: it cannot be compiled in pieces.
	res = runCode(t, e, executor.Request{Code: "x = [" + strings.Repeat("1,", 400000) + "]\n", MemoryBytes: 48 << 20, Timeout: 30 * time.Second})
	if !res.MemoryExceeded || res.Success || strings.Contains(res.Stderr, "_runblock") || strings.Contains(res.Stderr, "<string>") {
		t.Errorf("compile out of memory: memory=%v success=%v error=%q stderr=%.500s", res.MemoryExceeded, res.Success, res.Error, res.Stderr)
	}
}

// TestUnflushedOutputKept: what the snippet printed before a timeout or a
// kill comes back, flushed or not.
func TestUnflushedOutputKept(t *testing.T) {
	bothPaths(t, testUnflushedOutputKept)
}

func testUnflushedOutputKept(t *testing.T, path Config) {
	e := newHardened(t, path)
	for _, tt := range []struct{ name, code string }{
		{"timeout", "print('progress…')\nimport sys\nsys.stderr.write('err')\nwhile True: pass"},
		{"memory kill", "print('progress…')\nimport sys\nsys.stderr.write('err')\nb = b'x' * (600 << 20)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := runCode(t, e, executor.Request{Code: tt.code, Timeout: 500 * time.Millisecond})
			if res.Success || res.Stdout != "progress…\n" || !strings.HasPrefix(res.Stderr, "err") {
				t.Errorf("stdout=%q stderr=%q error=%q", res.Stdout, res.Stderr, res.Error)
			}
		})
	}
}

// TestRootOfAUserNamespaceMappingOneUID: root in a user namespace that maps
// only itself (rootless Podman, Docker userns-remap) still gets a tier
// with namespaces, and runs snippets.
func TestRootOfAUserNamespaceMappingOneUID(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("util-linux unshare not installed")
	}
	if err := exec.Command(unshare, "--user", "--map-root-user", "true").Run(); err != nil {
		t.Skipf("no unprivileged user namespaces here: %v", err)
	}
	d := startHelper(t, exec.Command(unshare, "--user", "--map-root-user", os.Args[0]), "doctor", "")
	if d.Err != "" || d.Report.Tier == TierNone || d.Report.Tier == TierUnisolated {
		t.Fatalf("doctor: tier %q, %s", d.Report.Tier, d.Err)
	}
	for _, l := range d.Report.Layers {
		if strings.HasSuffix(l.Name, "-namespace") && !l.Verified {
			t.Errorf("layer %s not verified: %s", l.Name, l.Detail)
		}
	}
	// Its runs are forks too: the namespace denies setgroups, which a fork
	// must not call.
	if !d.Report.ForkServer.Active {
		t.Errorf("no fork server: %s", d.Report.ForkServer.Detail)
	}
	r := startHelper(t, exec.Command(unshare, "--user", "--map-root-user", os.Args[0]), "run",
		"import os\nprint(os.getuid(), [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0])")
	if r.Err != "" || !r.Result.Success || r.Result.Stdout == "" {
		t.Fatalf("run: %+v %s", r.Result, r.Err)
	}
	if uid, caps, _ := strings.Cut(strings.TrimSpace(r.Result.Stdout), " "); uid == "0" && strings.Trim(caps, "0") != "" {
		t.Errorf("the snippet is uid 0 with capabilities %s", caps)
	}
	t.Logf("tier %s, snippet uid %s", d.Report.Tier, r.Result.Stdout)
}

// TestHostIDs: the snippets' host ids from a user namespace's maps.
func TestHostIDs(t *testing.T) {
	full := "         0          0 4294967295\n"
	for _, tt := range []struct {
		name, uids, gids string
		base, n          int
	}{
		{"initial namespace", full, full, policy.HostUID, policy.HostUIDs},
		{"unshare --map-root-user", "0 1000 1\n", "0 1000 1\n", 0, 0},
		{"rootless podman", "0 1000 1\n1 100000 65536\n", "0 1000 1\n1 100000 65536\n", 1, 65536},
		{"rootless podman, wide", "0 1000 1\n1 100000 200000\n", "0 1000 1\n1 100000 200000\n", 200001 - 65536, 65536},
		{"userns-remap, gids narrower", "0 231072 65536\n", "0 231072 1000\n", 1, 999},
		{"no map", "", "", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, n := hostIDs(tt.uids, tt.gids)
			if n != tt.n || (n > 0 && base != tt.base) {
				t.Errorf("got %d+%d, want %d+%d", base, n, tt.base, tt.n)
			}
		})
	}
}
