package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// newPooled makes an executor with a pool of size sandboxes: pre-forked
// children of the fork server, or with cold, pre-started sandboxes.
func newPooled(t *testing.T, size int, cold bool) *Executor {
	t.Helper()
	e, err := New(context.Background(), Config{Pool: size, DisableForkServer: cold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if e.report.Tier != TierFull {
		t.Skipf("pool tests need the full tier, have %q", e.report.Tier)
	}
	if !cold && e.fork == nil {
		t.Fatalf("no fork server to pre-fork from: %s", e.report.ForkServer.Detail)
	}
	return e
}

// runPooled runs code in a sandbox taken from the pool, waiting for one.
func runPooled(t *testing.T, e *Executor, code string) executor.Result {
	t.Helper()
	res, err := (<-e.pool.idle).run(context.Background(), executor.Request{Code: code})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPoolNoStateBetweenSnippets(t *testing.T) {
	for _, cold := range []bool{true, false} {
		t.Run(map[bool]string{true: "pre-started", false: "pre-forked"}[cold], func(t *testing.T) {
			testNoStateBetweenSnippets(t, newPooled(t, 1, cold))
		})
	}
}

func testNoStateBetweenSnippets(t *testing.T, e *Executor) {
	a := runPooled(t, e, `import os, sys, json, builtins
open("state.txt", "w").write("a")
open("/tmp/state.txt", "w").write("a")
import ctypes
ctypes.CDLL(None).setenv(b"RB_STATE", b"a", 1)
os.environ._data[b"RB_STATE"] = b"a"
json.rb_state = "a"
builtins.rb_state = "a"
sys.modules["rb_state"] = json
print("a done")`)
	if a.Stdout != "a done\n" {
		t.Fatalf("snippet A: %q %s", a.Stdout, a.Stderr)
	}
	b := runPooled(t, e, `import os, sys, json, builtins
import ctypes
ctypes.CDLL(None).getenv.restype = ctypes.c_char_p
print(os.path.exists("state.txt"), os.path.exists("/tmp/state.txt"), "RB_STATE" in os.environ or bool(ctypes.CDLL(None).getenv(b"RB_STATE")),
      hasattr(json, "rb_state"), hasattr(builtins, "rb_state"), "rb_state" in sys.modules)`)
	if b.Stdout != "False False False False False False\n" {
		t.Fatalf("snippet B saw A's state: %q %s", b.Stdout, b.Stderr)
	}
}

// children lists the pids whose parent is this process.
func children(t *testing.T) []int {
	t.Helper()
	var pids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestPoolReplacesDeadSandboxesAndCloses(t *testing.T) {
	e, err := New(context.Background(), Config{Pool: 2, DisableForkServer: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.report.Tier != TierFull {
		e.Close()
		t.Skipf("pool tests need the full tier, have %q", e.report.Tier)
	}
	// Two sandboxes take a moment to start; take one to know one is ready.
	sb := <-e.pool.idle
	if _, err := sb.run(context.Background(), executor.Request{Code: "pass"}); err != nil {
		t.Fatal(err)
	}
	before := children(t)
	for _, pid := range before {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// A killed sandbox may still be on offer until its filler has reaped it;
	// Run falls back to a cold start then (errStale). Wait for a new one.
	var fresh *proc
	for fresh == nil {
		fresh = <-e.pool.idle
		if slices.Contains(before, fresh.launch.(*coldLaunch).cmd.Process.Pid) {
			if _, err := fresh.run(context.Background(), executor.Request{Code: "pass"}); err != errStale {
				t.Errorf("run on a killed sandbox: %v, want errStale", err)
			}
			fresh = nil
		}
	}
	res, err := fresh.run(context.Background(), executor.Request{Code: "print('still here')"})
	if err != nil || res.Stdout != "still here\n" {
		t.Fatalf("after the idle sandboxes died: %+v %v", res, err)
	}
	e.Close()
	if left := children(t); len(left) > 0 {
		t.Fatalf("sandboxes left after Close: %v", left)
	}
}

func TestPoolFootprint(t *testing.T) {
	e := newPooled(t, 1, true)
	runPooled(t, e, "pass")
	sb := <-e.pool.idle
	defer sb.destroy()
	var rss, pss int
	var procs []string
	stats, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, f := range stats {
		dir := filepath.Dir(f)
		b, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil || !descends(dir, sb.launch.(*coldLaunch).cmd.Process.Pid) {
			continue
		}
		procs = append(procs, strings.Fields(string(b))[1])
		rss += kB(filepath.Join(dir, "status"), "VmRSS:")
		pss += kB(filepath.Join(dir, "smaps_rollup"), "Pss:")
	}
	t.Logf("an idle pooled sandbox %v: RSS %d KiB, PSS %d KiB", procs, rss, pss)
	if len(procs) < 2 {
		t.Fatalf("expected the init and python, found %v", procs)
	}
}

// descends reports whether the process in dir is pid or one of its descendants.
func descends(dir string, pid int) bool {
	for range 10 {
		b, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			return false
		}
		self, _ := strconv.Atoi(filepath.Base(dir))
		if self == pid {
			return true
		}
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		dir = filepath.Join("/proc", fields[1])
	}
	return false
}

func kB(file, key string) int {
	b, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	return 0
}

// fakeLaunch is a sandbox's launch that ends it at its kill, for the
// pool's own tests: the pool only hands sandboxes over.
type fakeLaunch struct {
	end  chan struct{}
	once sync.Once
}

func (f *fakeLaunch) kill()                                   { f.once.Do(func() { close(f.end) }) }
func (*fakeLaunch) unreported(*executor.Result)               {}
func (*fakeLaunch) setupError(stderr string, read bool) error { return nil }
func (*fakeLaunch) release()                                  {}

// fakePool is a pool of one filler whose starts the test ends: each
// start says it began on begun, then makes a sandbox or fails with what
// the test sends on outcome. wait: runs wait for a start under way;
// refillAfter: the pool's refill timer.
func fakePool(t *testing.T, wait bool, refillAfter func() <-chan time.Time) (p *pool, begun chan struct{}, outcome chan error) {
	t.Helper()
	begun, outcome = make(chan struct{}, 4), make(chan error)
	p = startPool(slog.New(slog.DiscardHandler), 1, wait, refillAfter, func(ctx context.Context) (*proc, error) {
		begun <- struct{}{}
		select {
		case err := <-outcome:
			if err != nil {
				return nil, err
			}
			l := &fakeLaunch{end: make(chan struct{})}
			return &proc{launch: l, waited: l.end}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	t.Cleanup(p.close)
	return p, begun, outcome
}

// takeWaiting takes from p in a goroutine, and returns once that take
// waits for a start under way.
func takeWaiting(t *testing.T, ctx context.Context, p *pool) <-chan *proc {
	t.Helper()
	got := make(chan *proc, 1)
	go func() { got <- p.take(ctx, true) }()
	for {
		p.mu.Lock()
		waiting := p.waiting
		p.mu.Unlock()
		if waiting == 1 {
			return got
		}
		select {
		case sb := <-got:
			t.Fatalf("take returned %v at once, with a start under way", sb)
		default:
			runtime.Gosched()
		}
	}
}

func TestPoolTakeWaitsForAStartUnderWay(t *testing.T) {
	p, begun, outcome := fakePool(t, true, refillTimer)
	<-begun
	got := takeWaiting(t, context.Background(), p)
	// That start is the waiting run's: a second run starts its own.
	if sb := p.take(context.Background(), true); sb != nil {
		t.Fatal("a second take waited for the start the first waits for")
	}
	outcome <- nil
	if sb := <-got; sb == nil || !sb.alive() {
		t.Fatalf("take got %v, want the sandbox the start made", sb)
	}
}

func TestPoolTakeGivesUpOnAFailedStart(t *testing.T) {
	p, begun, outcome := fakePool(t, true, refillTimer)
	<-begun
	got := takeWaiting(t, context.Background(), p)
	outcome <- errors.New("the fork server is down")
	if sb := <-got; sb != nil {
		t.Fatalf("take got %v from a failed start", sb)
	}
}

func TestPoolTakeEndsWithItsContext(t *testing.T) {
	p, begun, _ := fakePool(t, true, refillTimer)
	<-begun
	ctx, cancel := context.WithCancel(context.Background())
	got := takeWaiting(t, ctx, p)
	cancel()
	if sb := <-got; sb != nil {
		t.Fatalf("a canceled take got %v", sb)
	}
}

func TestPoolTakeWaitsNotForAStartFromScratch(t *testing.T) {
	p, begun, _ := fakePool(t, false, refillTimer)
	<-begun
	if sb := p.take(context.Background(), true); sb != nil {
		t.Fatalf("take got %v with no sandbox ready", sb)
	}
}

func TestPoolTakeBesideOtherRunsWaitsNot(t *testing.T) {
	p, begun, _ := fakePool(t, true, refillTimer)
	<-begun
	if sb := p.take(context.Background(), false); sb != nil {
		t.Fatalf("take got %v with no sandbox ready", sb)
	}
}

// refillClock is a pool's refill timer that the test fires; armed says a
// filler waits on it.
type refillClock struct {
	armed chan struct{}
	fire  chan time.Time
}

func newRefillClock() *refillClock {
	return &refillClock{armed: make(chan struct{}, 1), fire: make(chan time.Time)}
}

func (c *refillClock) after() <-chan time.Time {
	c.armed <- struct{}{}
	return c.fire
}

// refillWaiting takes the sandbox of a pool's first start, and returns
// once the pool's filler waits on the refill clock, its next start not
// begun.
func refillWaiting(t *testing.T) (sb *proc, clock *refillClock, begun chan struct{}) {
	t.Helper()
	clock = newRefillClock()
	p, begun, outcome := fakePool(t, true, clock.after)
	<-begun
	got := takeWaiting(t, context.Background(), p)
	outcome <- nil
	if sb = <-got; sb == nil {
		t.Fatal("take got no sandbox from the start under way")
	}
	t.Cleanup(sb.destroy)
	select {
	case <-begun:
		t.Fatal("the next start began beside the run that took the sandbox")
	case <-clock.armed:
	}
	return sb, clock, begun
}

// TestPoolRefillsOnceTheRunEnded: the filler starts the next sandbox once
// the run that took its last one has ended, not beside that run.
func TestPoolRefillsOnceTheRunEnded(t *testing.T) {
	sb, _, begun := refillWaiting(t)
	sb.kill() // the run ends
	<-begun
}

// TestPoolRefillsBesideALongRun: once the refill timer fires, the next
// start begins beside a run still under way.
func TestPoolRefillsBesideALongRun(t *testing.T) {
	sb, clock, begun := refillWaiting(t)
	clock.fire <- time.Time{}
	<-begun
	if !sb.alive() {
		t.Fatal("the run ended")
	}
}
