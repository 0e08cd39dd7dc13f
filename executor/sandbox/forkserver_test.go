//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/eventually"
)

// The tests of issue 15: what must hold for a run that is a fork of the
// fork server.

// newForking makes an executor whose runs are forks of its fork server,
// skipping where the machine cannot have one.
func newForking(t *testing.T, cfg Config) *Executor {
	t.Helper()
	cfg.DisableForkServer = false
	return newHardened(t, cfg)
}

// runFacts is what runFactsProbe prints about the run it runs in.
type runFacts struct {
	Random  float64  `json:"random"`
	Bits    string   `json:"bits"`
	Numpy   *float64 `json:"numpy"`
	Hash    int64    `json:"hash"`
	PID     int      `json:"pid"`
	PPID    int      `json:"ppid"`
	Procs   []int    `json:"procs"`
	Work    []string `json:"work"`
	FDs     []int    `json:"fds"`
	PIDNS   string   `json:"pidns"`
	NetNS   string   `json:"netns"`
	Preload bool     `json:"preloaded"`
}

// runFactsProbe prints a run's runFacts, then leaves a file in its work
// dir for the next run to find.
const runFactsProbe = `import json, os, sys
preloaded = "random" in sys.modules
import random
fds = []
for fd in range(1024):
    try:
        os.fstat(fd)
        fds.append(fd)
    except OSError:
        pass
np = sys.modules.get("numpy")
print(json.dumps({
    "random": random.random(), "bits": str(random.getrandbits(64)), "hash": hash("runblock"),
    "numpy": float(np.random.rand()) if np else None,
    "pid": os.getpid(), "ppid": os.getppid(),
    "procs": sorted(int(d) for d in os.listdir("/proc") if d.isdigit()),
    "work": sorted(os.listdir(".")), "fds": fds, "pidns": os.readlink("/proc/self/ns/pid"),
    "netns": os.readlink("/proc/self/ns/net"), "preloaded": preloaded,
}))
with open("left-by-the-last-run", "w") as f:
    f.write("x")`

func parseFacts(t *testing.T, res executor.Result) runFacts {
	t.Helper()
	var f runFacts
	if !res.Success || json.Unmarshal([]byte(res.Stdout), &f) != nil {
		t.Fatalf("probe: success=%v stdout=%q error=%q stderr=%s", res.Success, res.Stdout, res.Error, res.Stderr)
	}
	return f
}

// checkFresh checks that run b, after a, got nothing of a's.
func checkFresh(t *testing.T, a, b runFacts) {
	t.Helper()
	for _, f := range []runFacts{a, b} {
		if !f.Preload {
			t.Errorf("random was not imported before the fork: the test proves nothing about reseeding")
		}
		// PID 2 of a PID namespace of its own, under an init it cannot see.
		if f.PID != 2 || (f.PPID != 1 && f.PPID != 0) || !slices.Equal(f.Procs, []int{f.PID}) {
			t.Errorf("pid %d, ppid %d, /proc lists %v: want pid 2 under PID 1, seeing only itself", f.PID, f.PPID, f.Procs)
		}
		if fmt.Sprint(f.FDs) != "[0 1 2]" {
			t.Errorf("descriptors %v, want exactly 0 1 2", f.FDs)
		}
		if slices.Contains(f.Work, "left-by-the-last-run") {
			t.Errorf("the work dir holds %v", f.Work)
		}
	}
	if a.Random == b.Random || a.Bits == b.Bits {
		t.Errorf("two runs drew the same numbers: random() %v and %v, getrandbits(64) %s and %s", a.Random, b.Random, a.Bits, b.Bits)
	}
	if a.Numpy != nil && b.Numpy != nil && *a.Numpy == *b.Numpy {
		t.Errorf("two runs drew the same numpy.random.rand() %v", *a.Numpy)
	}
	if a.PIDNS == b.PIDNS {
		t.Errorf("two runs share the PID namespace %s", a.PIDNS)
	}
	// The fork server's init makes the runs' network namespaces ahead of
	// them, none the host's (b's may be one a left: see
	// TestForkedRunNetworkReused).
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if a.NetNS == host || b.NetNS == host {
		t.Errorf("the runs' network namespaces are %s and %s, the host's %s: want one of their own", a.NetNS, b.NetNS, host)
	}
	if !slices.Equal(a.Work, b.Work) {
		t.Errorf("the work dir was %v, then %v", a.Work, b.Work)
	}
	if a.Hash == b.Hash {
		t.Logf("note: both runs hash strings alike (%d): the fork shares the fork server's hash secret", a.Hash)
	}
}

// TestForkedRunsShareNothing: two forks of the fork server, and two
// pre-forked children of the pool, draw different random numbers (the
// generators were seeded before the fork), each in a PID namespace and a
// work dir of its own, holding descriptors 0, 1 and 2 only.
func TestForkedRunsShareNothing(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"forked, random warm", Config{}},
		{"forked", Config{Preload: Preload{Modules: []string{"random"}}}},
		{"pre-forked", Config{Preload: Preload{Modules: []string{"random"}}, Pool: 1}},
	}
	const debian = "/usr/bin/python3"
	if err := exec.Command(debian, "-c", "import numpy").Run(); err == nil {
		cases = append(cases,
			struct {
				name string
				cfg  Config
			}{"forked numpy", Config{Python: debian, Preload: Preload{Modules: []string{"random", "numpy"}}}},
			struct {
				name string
				cfg  Config
			}{"pre-forked numpy", Config{Python: debian, Preload: Preload{Modules: []string{"random", "numpy"}}, Pool: 1}},
		)
	} else {
		t.Logf("numpy of %s missing (apt-get install python3-numpy): its generator not checked", debian)
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newForking(t, tt.cfg)
			run := func() runFacts {
				req := executor.Request{Code: runFactsProbe, Timeout: 20 * time.Second}
				if e.pool == nil {
					return parseFacts(t, runForked(t, e, req))
				}
				// The pool's sandboxes are forks of the plain fork server,
				// which preloads nothing: pre-fork one from the preloaded
				// one, ready before its snippet as the pool's are.
				p, err := e.forkServer(true).spawn(context.Background(), e.limits(req), e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
				if err != nil {
					t.Fatal(err)
				}
				if !p.forked() {
					t.Fatal("the pre-forked sandbox is not a fork of the fork server")
				}
				res, err := p.run(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				return parseFacts(t, res)
			}
			a := run()
			b := run()
			checkFresh(t, a, b)
			if strings.Contains(tt.name, "numpy") && (a.Numpy == nil || b.Numpy == nil) {
				t.Errorf("numpy was not preloaded")
			}
		})
	}
}

// TestForkServerIsWarm: a forked run finds the standard modules of
// _RUNBLOCK_WARM imported, and a failed one still gets its own traceback,
// with its source lines, though the fork server formatted one before.
func TestForkServerIsWarm(t *testing.T) {
	e := newForking(t, Config{})
	res := runForked(t, e, executor.Request{Code: `import sys
print(sorted(m for m in ("atexit", "traceback", "typing", "dataclasses", "linecache") if m in sys.modules))`})
	if want := "['atexit', 'dataclasses', 'linecache', 'traceback', 'typing']\n"; !res.Success || res.Stdout != want {
		t.Errorf("stdout=%q, want %q (error=%q stderr=%s)", res.Stdout, want, res.Error, res.Stderr)
	}
	res = runForked(t, e, executor.Request{Code: "x = 1\ndef f():\n    return x / 0\nf()\n"})
	for _, want := range []string{`File "<snippet>", line 4, in <module>`, "    return x / 0", "ZeroDivisionError: division by zero"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
		}
	}
	if strings.Contains(res.Stderr, "1 / 0") {
		t.Errorf("the traceback shows the fork server's warm-up source:\n%s", res.Stderr)
	}
}

// TestForkedRunSharesNoWritableMemory: a fork maps nothing both writable
// and shared, with the fork server or anyone.
func TestForkedRunSharesNoWritableMemory(t *testing.T) {
	e := newForking(t, Config{})
	res := runForked(t, e, executor.Request{Code: `for line in open("/proc/self/maps"):
    perms = line.split()[1]
    if "w" in perms and perms.endswith("s"):
        print(line.strip())
print("checked")`})
	if !res.Success || res.Stdout != "checked\n" {
		t.Errorf("writable shared mappings: stdout=%q error=%q stderr=%s", res.Stdout, res.Error, res.Stderr)
	}
}

// TestForkServerOutOfReach: a run that signals every pid it can, then
// every process it may (kill(-1)), and connects to every unix socket it
// finds, leaves the fork server running and forking.
func TestForkServerOutOfReach(t *testing.T) {
	e := newForking(t, Config{})
	live := e.fork.current()
	res := runForked(t, e, executor.Request{Code: `import ctypes, itertools, os, signal, socket, stat
me, connected = os.getpid(), []
def pids():
    return itertools.chain(range(1, me), range(me + 1, 4194305))
sent = map(ctypes.CDLL(None).kill, pids(), itertools.repeat(signal.SIGKILL))
hit = [pid for pid, r in zip(pids(), sent) if r == 0]
names = []
try:
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        if len(line.split()) > 7:
            names.append(line.split()[7])
except OSError:
    pass
for root, dirs, files in os.walk("/"):
    if root.startswith("/proc"):
        dirs[:] = []
        continue
    for name in dirs + files:
        path = os.path.join(root, name)
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                names.append(path)
        except OSError:
            pass
for name in names:
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
        s = socket.socket(socket.AF_UNIX, kind)
        try:
            s.connect("\0" + name[1:] if name.startswith("@") else name)
            connected.append(name)
        except OSError:
            pass
        finally:
            s.close()
print("signalled", hit, "connected", connected, "sockets", names, flush=True)
try:
    os.kill(-1, signal.SIGKILL)
except ProcessLookupError:
    print("kill(-1): no process to signal")`, Timeout: 60 * time.Second})
	if res.Timeout || res.MemoryExceeded || res.OutputLimit {
		t.Fatalf("the run did not finish: %+v", res)
	}
	t.Logf("%s", res.Stdout)
	if !strings.HasPrefix(res.Stdout, "signalled [] connected [] ") {
		t.Errorf("the run reached something: stdout=%q error=%q stderr=%s", res.Stdout, res.Error, res.Stderr)
	}
	if !res.Success && res.Signal != "SIGKILL" {
		t.Errorf("the run ended with %q %q, want success or its own SIGKILL: %s", res.Signal, res.Error, res.Stderr)
	}
	// A run forked after that one proves the fork server's python alive.
	if after := runForked(t, e, executor.Request{Code: "print('still forking')"}); after.Stdout != "still forking\n" {
		t.Fatalf("run after: %+v", after)
	}
	if now := e.fork.current(); now != live {
		t.Fatalf("the fork server was replaced (%p, was %p)", now, live)
	}
	select {
	case <-live.done:
		t.Fatalf("the fork server's init ended: %s", live.report)
	default:
	}
	if err := live.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the fork server's init: %v", err)
	}
}

// TestKilledForkServerRestarts: killing the fork server under a run ends
// that run cleanly (a result of a run from scratch, or an error, never a
// partial result), and a new fork server takes the next runs.
func TestKilledForkServerRestarts(t *testing.T) {
	e := newForking(t, Config{})
	old := e.fork.current()
	marker := fmt.Sprintf("rbfsk%d", time.Now().UnixNano()%1e6)
	type outcome struct {
		res executor.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := e.Run(context.Background(), executor.Request{
			Code: fmt.Sprintf("import ctypes, time\nctypes.CDLL(None).prctl(15, b%q)\ntime.sleep(3)\nprint('done')", marker)})
		done <- outcome{res, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The snippet is running once a process in the fork server's tree has
	// taken its name.
	if !eventually.Poll(ctx, func() bool {
		return slices.ContainsFunc(leftoverPIDs(marker), func(pid int) bool { return descends(fmt.Sprintf("/proc/%d", pid), old.cmd.Process.Pid) })
	}) {
		t.Fatal("the snippet never ran in a fork")
	}
	if err := old.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		var xerr *executor.Error
		switch {
		case o.err != nil && !errors.As(o.err, &xerr):
			t.Errorf("Run: %v, want an *executor.Error", o.err)
		case o.err == nil && (!o.res.Success || o.res.Stdout != "done\n"):
			t.Errorf("Run returned a result of the killed run: %+v", o.res)
		}
		t.Logf("the run under the killed fork server: %q %v", o.res.Stdout, o.err)
	case <-ctx.Done():
		t.Fatal("Run hangs after its fork server was killed")
	}
	select {
	case <-old.done:
	case <-ctx.Done():
		t.Fatal("the killed fork server's init was never reaped")
	}
	if !eventually.Poll(ctx, func() bool { now := e.fork.current(); return now != nil && now != old }) {
		t.Fatal("no new fork server")
	}
	if res := runForked(t, e, executor.Request{Code: "print('forked again')"}); res.Stdout != "forked again\n" {
		t.Fatalf("run through the new fork server: %+v", res)
	}
}

// leftoverPIDs lists the processes whose name is marker.
func leftoverPIDs(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		var pid int
		if _, err := fmt.Sscan(d.Name(), &pid); err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + d.Name() + "/comm"); err == nil && strings.TrimSpace(string(b)) == marker {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestPreforkedHandedOutOnce: the pool's pre-forked children are distinct,
// each runs one snippet, in a PID namespace of its own.
func TestPreforkedHandedOutOnce(t *testing.T) {
	e := newForking(t, Config{Pool: 1})
	a, b := <-e.pool.idle, <-e.pool.idle
	if a == b || !a.forked() || !b.forked() {
		t.Fatalf("took %p (forked %v) and %p (forked %v)", a, a.forked(), b, b.forked())
	}
	ns := func(p *proc) string {
		res, err := p.run(context.Background(), executor.Request{Code: "import os\nprint(os.readlink('/proc/self/ns/pid'))"})
		if err != nil || !res.Success || !strings.HasPrefix(res.Stdout, "pid:[") {
			t.Fatalf("run: %+v %v", res, err)
		}
		return res.Stdout
	}
	if na, nb := ns(a), ns(b); na == nb {
		t.Errorf("two pre-forked children share the PID namespace %s", na)
	}
	res, err := a.run(context.Background(), executor.Request{Code: "print('second snippet')"})
	if err == nil && strings.Contains(res.Stdout, "second snippet") {
		t.Errorf("a pre-forked child ran a second snippet: %+v", res)
	}
}

// TestCanaryRunsThroughAFork: the executor's report says the canary ran
// through a fork; a fork server whose runs miss a layer is refused by it.
func TestCanaryRunsThroughAFork(t *testing.T) {
	e := newForking(t, Config{})
	if r := e.report.ForkServer; !r.Active || !strings.Contains(r.Detail, "canary") {
		t.Errorf("fork server report %+v", r)
	}
	// Runs forked without the seccomp filter: the canary must notice.
	pl := *e.plan
	pl.seccomp = nil
	fs, _, r := newForkServers(context.Background(), e.cfg, &pl)
	if fs != nil {
		fs.close()
		t.Fatalf("a fork server whose runs have no seccomp passed its canary: %+v", r)
	}
	if r.Active || !strings.Contains(r.Detail, "canary run through a fork") || !strings.Contains(r.Detail, "seccomp") {
		t.Errorf("report of a fork server without seccomp: %+v", r)
	}
	cold := newHardened(t, Config{DisableForkServer: true})
	if r := cold.report.ForkServer; r.Active || cold.fork != nil || !strings.Contains(r.Detail, "RUNBLOCK_FORKSERVER=off") {
		t.Errorf("disabled fork server: %+v", r)
	}
}

// TestForkServerFallback: where the fork server cannot start (a tier
// without namespaces), runs start from scratch, and the doctor says why
// there is none.
func TestForkServerFallback(t *testing.T) {
	py, err := findPython(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := newPlan(py, tiers[2])
	if err != nil {
		t.Fatal(err)
	}
	pl.hostUID = -1
	cfg := Config{}.withDefaults()
	if fs, err := startForkServer(context.Background(), pl, nil, cfg.Logger); err == nil || fs != nil {
		if fs != nil {
			fs.close()
		}
		t.Fatalf("a fork server started without namespaces: %v", err)
	}
	fs, _, r := newForkServers(context.Background(), cfg, pl)
	if fs != nil || r.Active || !strings.Contains(r.Detail, "unavailable") || !strings.Contains(r.Detail, "namespaces") {
		t.Errorf("fork server without namespaces: %+v", r)
	}
	e := &Executor{cfg: cfg, log: cfg.Logger, plan: pl}
	res, err := e.Run(context.Background(), executor.Request{Code: "print('from scratch')"})
	if err != nil || !res.Success || res.Stdout != "from scratch\n" {
		t.Fatalf("run without a fork server: %+v %v", res, err)
	}
	d, err := Doctor(context.Background(), Config{DisableForkServer: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.ForkServer.Active || !strings.Contains(d.ForkServer.Detail, "RUNBLOCK_FORKSERVER=off") {
		t.Errorf("doctor with the fork server off: %+v", d.ForkServer)
	}
}

// TestForkedRunHandlesSignalsAsPython: a forked run's python handles
// SIGINT and SIGCHLD as any python does (the fork server ignores SIGCHLD,
// and a run's init handles it), pre-forked or forked on demand.
func TestForkedRunHandlesSignalsAsPython(t *testing.T) {
	const probe = `import os, signal
assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, signal.getsignal(signal.SIGINT)
assert signal.getsignal(signal.SIGCHLD) is signal.SIG_DFL, signal.getsignal(signal.SIGCHLD)
try:
    os.kill(os.getpid(), signal.SIGINT)
except KeyboardInterrupt:
    print("interrupted")
pid = os.fork()
if pid == 0:
    os._exit(7)
print(os.waitpid(pid, 0)[1] >> 8)
`
	for _, pool := range []int{0, 1} {
		e := newForking(t, Config{Pool: pool})
		res, err := e.Run(context.Background(), executor.Request{Code: probe, Script: true})
		if err != nil || !res.Success || res.Stdout != "interrupted\n7\n" {
			t.Errorf("pool %d: %v %+v", pool, err, res)
		}
	}
}

// threadsAfterForkProbe forks while a second thread runs: the child must
// find only itself in threading (whose after-fork step a run's python
// skips when the fork server ran one thread, and must have put back for
// the snippet's own forks), start a thread that logs, and exit as python
// exits, joining its threads; then the run's python starts a thread that
// logs (logging's lock, which the fork server took before the clone, made
// anew). Then it drops matplotlib's fonts, where it has them, and collects.
const threadsAfterForkProbe = `import gc, logging, os, sys, threading
ready, stop = threading.Event(), threading.Event()
def work():
    ready.set()
    stop.wait()
def log_in_thread(name):
    box = []
    t = threading.Thread(target=lambda: box.append(logging.getLogger(name).name))
    t.start()
    t.join(5)
    return box
t = threading.Thread(target=work)
t.start()
ready.wait()
pid = os.fork()
if pid == 0:
    print("child", threading.active_count(), threading.current_thread() is threading.main_thread(), log_in_thread("child"), flush=True)
    sys.exit(0)
_, status = os.waitpid(pid, 0)
box = log_in_thread("run")
stop.set()
t.join()
print("run", os.waitstatus_to_exitcode(status), box)
fonts = sys.modules.get("matplotlib.font_manager")
if fonts is not None:
    fonts._get_font.cache_clear()
gc.collect()
with open("after.txt", "w") as f:
    f.write("written")
print(open("after.txt").read())
`

// TestForkedRunThreadsAfterFork: in a run forked from the plain fork
// server and from one that preloaded matplotlib and drew a figure, the
// snippet's own fork with two threads gets threading's after-fork step,
// threads can log, and the fonts the fork server keeps for good are never
// freed in the run (which would close a descriptor number the run may use).
func TestForkedRunThreadsAfterFork(t *testing.T) {
	cases := []struct {
		name, head string
		cfg        Config
	}{{"plain", "", Config{}}}
	const debian = "/usr/bin/python3"
	if err := exec.Command(debian, "-c", "import matplotlib.pyplot").Run(); err == nil {
		cases = append(cases, struct {
			name, head string
			cfg        Config
		}{"preloaded matplotlib", "import matplotlib.pyplot\n", Config{Python: debian, Preload: Preload{Modules: []string{"matplotlib.pyplot"}}}})
	} else {
		t.Logf("matplotlib of %s missing (apt-get install python3-matplotlib): its fonts not checked", debian)
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newForking(t, tt.cfg)
			res := runForked(t, e, executor.Request{Code: tt.head + threadsAfterForkProbe, Timeout: 20 * time.Second})
			want := "child 1 True ['child']\nrun 0 ['run']\nwritten\n"
			if !res.Success || res.Stdout != want || res.Stderr != "" {
				t.Errorf("stdout=%q, want %q (error=%q timeout=%v stderr=%s)", res.Stdout, want, res.Error, res.Timeout, res.Stderr)
			}
		})
	}
}

// TestForkedRunEndsAsPythonExits: python touches its work dir as it
// exits, and its init then reads how it ended before the kernel has freed
// its memory. The init trusts nothing of the touch: a snippet that
// touches the work dir itself runs on to its end, whose status is the
// kernel's, and an exit after the touch reports the output whole.
func TestForkedRunEndsAsPythonExits(t *testing.T) {
	for _, pool := range []int{0, 1} {
		e := newForking(t, Config{Pool: pool})
		for _, c := range []struct {
			name, code, stdout, signal string
			exit                       int
		}{
			{"touched, then runs on", "import os, time\nos.utime('.')\ntime.sleep(0.05)\nprint('after')\nraise SystemExit(3)", "after\n", "", 3},
			{"touched, then killed", "import os, signal\nprint('before', flush=True)\nos.utime('.')\nos.kill(os.getpid(), signal.SIGKILL)", "before\n", "SIGKILL", -1},
			{"exits with much output", "import sys\nsys.stdout.write('x' * 60000)\nsys.exit(5)", strings.Repeat("x", 60000), "", 5},
			{"exits as a cell", "open('left.txt', 'w').write('data')\nprint('ok')", "ok\n", "", 0},
		} {
			res, err := e.Run(context.Background(), executor.Request{Code: c.code, Script: true})
			if err != nil || res.Stdout != c.stdout || res.Signal != c.signal || res.ExitCode != c.exit {
				t.Errorf("pool %d, %s: %v; stdout %d bytes %.40q, signal %q, exit %d; want %.40q, %q, %d", pool, c.name, err, len(res.Stdout), res.Stdout, res.Signal, res.ExitCode, c.stdout, c.signal, c.exit)
			}
			if c.name == "exits as a cell" && (len(res.Files) != 1 || string(res.Files[0].Content) != "data") {
				t.Errorf("pool %d: the file left: %+v", pool, res.Files)
			}
		}
	}
}

// TestBallastTakesTheFreeBlocks: after _runblock_ballast (and the
// warm-up that frees blocks among live objects), the last object it made
// of each size class from 32 bytes is the first block of a pool, and the
// next object of that size comes from the same pool: a fork's
// allocations take fresh pages, not the free blocks among the fork
// server's objects, whose pages they would copy.
func TestBallastTakesTheFreeBlocks(t *testing.T) {
	const check = `
_runblock_warm()
ballast = _runblock_ballast()
last = {}
for obj in ballast:
    if obj is not None:
        last[33 + len(obj) if type(obj) is bytes else 32] = obj
for size in range(32, 513, 16):
    obj = bytes(size - 33) if size > 32 else (1 << 21) + size
    if id(last[size]) % _RUNBLOCK_POOL_BYTES != _RUNBLOCK_POOL_FIRST or id(obj) // _RUNBLOCK_POOL_BYTES != id(last[size]) // _RUNBLOCK_POOL_BYTES:
        print(size, id(last[size]) % _RUNBLOCK_POOL_BYTES, id(obj) // _RUNBLOCK_POOL_BYTES - id(last[size]) // _RUNBLOCK_POOL_BYTES)
`
	if out := forkserverCode(t, check); len(out) > 0 {
		t.Errorf("size classes whose last ballast object is not a pool's first block, or whose next object is in another pool (size, offset, pools apart):\n%s", out)
	}
}

// TestBallastIsBounded: under an allocator whose blocks are never a
// pool's first (a build without obmalloc), the ballast stops at its
// bound, not after tens of MiB held by the fork server for good.
func TestBallastIsBounded(t *testing.T) {
	const most = 2 << 20
	const check = `
import sys
_RUNBLOCK_POOL_FIRST = 1  # no object starts there: nothing stops the fill early
print(sum(sys.getsizeof(obj) for obj in _runblock_ballast() if obj is not None))
`
	out := forkserverCode(t, check)
	held, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if held > most {
		t.Errorf("the ballast holds %d bytes, over %d", held, most)
	}
}

// forkserverCode runs forkserver.py's definitions and then code in the
// python found, outside any sandbox, and returns what it printed.
func forkserverCode(t *testing.T, code string) string {
	t.Helper()
	py, err := findPython(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py.Real, "-I", "-S", "-c", forkserverSource+code).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return string(out)
}
