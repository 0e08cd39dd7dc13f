package session

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/executor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeLive is a live session that runs a tiny language (each cell shows
// its code as its output so far to a live view): "fail" raises,
// "kill" ends the process (as a timeout does), "exit" ends it
// successfully, "state" prints every cell the process ran before it,
// "slow" takes 20 s of the fake clock, and anything else succeeds and
// prints itself.
type fakeLive struct {
	id    int
	clock *fakeClock
	mem   int64
	// block, if set, is waited on by every cell ("hold" cells only).
	block chan struct{}
	// running counts this process's cells in Run at once.
	running int32Gauge

	mu     sync.Mutex
	ran    []string
	alive  bool
	closed bool
}

func (l *fakeLive) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	if req.Session != nil {
		return executor.Result{}, errors.New("a live session got a Session")
	}
	if n := l.running.add(1); n > 1 {
		return executor.Result{}, fmt.Errorf("%d cells at once in one session", n)
	}
	defer l.running.add(-1)
	if req.Code == "hold" && l.block != nil {
		select {
		case <-l.block:
		case <-ctx.Done():
			return executor.Result{}, ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.alive {
		return executor.Result{}, errors.New("run on a dead session")
	}
	if out := executor.OutputOf(ctx); out != nil {
		out(req.Code, "")
	}
	res := executor.Result{Success: true, Stdout: req.Code}
	switch req.Code {
	case "fail":
		res = executor.Result{Error: "Boom", ExitCode: 1}
	case "kill":
		res = executor.Result{Timeout: true, Error: "timed out"}
		l.alive = false
	case "exit":
		l.alive = false
	case "state":
		res.Stdout = strings.Join(l.ran, ";")
	case "slow":
		l.clock.advance(20 * time.Second)
	}
	l.ran = append(l.ran, req.Code)
	return res, nil
}

func (l *fakeLive) Alive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.alive
}

func (l *fakeLive) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("closed twice")
	}
	l.closed, l.alive = true, false
	return nil
}

func (l *fakeLive) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// measuredLive is a fakeLive that reports its memory.
type measuredLive struct{ *fakeLive }

func (l measuredLive) MemoryBytes() int64 { return l.mem }

type int32Gauge struct {
	mu sync.Mutex
	n  int
}

func (g *int32Gauge) add(d int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += d
	return g.n
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// starter is a fake SessionStarter: start, if set, replaces its default
// of a fresh fakeLive.
type starter struct {
	clock *fakeClock
	start func(ctx context.Context) (executor.LiveSession, error)
	mem   int64 // > 0: lives report this memory

	mu    sync.Mutex
	lives []*fakeLive
	block chan struct{}
}

func (s *starter) StartSession(ctx context.Context) (executor.LiveSession, error) {
	if s.start != nil {
		return s.start(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &fakeLive{id: len(s.lives) + 1, clock: s.clock, alive: true, mem: s.mem, block: s.block}
	s.lives = append(s.lives, l)
	if s.mem > 0 {
		return measuredLive{l}, nil
	}
	return l, nil
}

func (s *starter) started() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lives)
}

func (s *starter) live(i int) *fakeLive {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lives[i]
}

type runnerFunc func(ctx context.Context, req executor.Request) (executor.Result, error)

func (f runnerFunc) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	return f(ctx, req)
}

// fakeMetrics records the Manager's observations.
type fakeMetrics struct {
	mu        sync.Mutex
	live      int
	cells     int
	replays   map[string]int
	replayed  int
	evictions map[string]int
}

func (f *fakeMetrics) SessionsLive(n int) { f.mu.Lock(); f.live = n; f.mu.Unlock() }
func (f *fakeMetrics) SessionCell()       { f.mu.Lock(); f.cells++; f.mu.Unlock() }
func (f *fakeMetrics) SessionReplay(outcome string, cells int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replays[outcome]++
	f.replayed += cells
}
func (f *fakeMetrics) SessionEvicted(reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evictions[reason]++
}

type fixture struct {
	m       *Manager
	starter *starter
	clock   *fakeClock
	ticks   chan time.Time
	metrics *fakeMetrics
	inner   []executor.Request
	innerMu sync.Mutex
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{
		clock:   &fakeClock{t: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)},
		ticks:   make(chan time.Time),
		metrics: &fakeMetrics{replays: map[string]int{}, evictions: map[string]int{}},
	}
	f.starter = &starter{clock: f.clock}
	inner := runnerFunc(func(_ context.Context, req executor.Request) (executor.Result, error) {
		f.innerMu.Lock()
		defer f.innerMu.Unlock()
		f.inner = append(f.inner, req)
		return executor.Result{Success: true, Stdout: "alone"}, nil
	})
	f.m = New(inner, f.starter, Options{Config: cfg, Clock: f.clock.now, Ticks: f.ticks, Metrics: f.metrics})
	t.Cleanup(func() {
		if err := f.m.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return f
}

// cell runs code in session id and fails the test on an error.
func (f *fixture) cell(t *testing.T, id, code string, replay ...string) executor.Result {
	t.Helper()
	res, err := f.m.Run(context.Background(), request(id, code, replay...))
	if err != nil {
		t.Fatalf("cell %q of %s: %v", code, id, err)
	}
	if res.Session == nil {
		t.Fatalf("cell %q of %s: no session info", code, id)
	}
	return res
}

// request is a cell of session id; replay, if given (even empty: pass
// "-" alone), is the caller's record.
func request(id, code string, replay ...string) executor.Request {
	s := &executor.Session{ID: id}
	if len(replay) > 0 {
		s.Replay = []executor.Request{}
		for _, c := range replay {
			if c != "-" {
				s.Replay = append(s.Replay, executor.Request{Code: c})
			}
		}
	}
	return executor.Request{Code: code, Session: s}
}

func wantInfo(t *testing.T, res executor.Result, want executor.SessionInfo) {
	t.Helper()
	if *res.Session != want {
		t.Errorf("session info %+v, want %+v", *res.Session, want)
	}
}

func TestRequestWithoutSessionGoesToInnerRunner(t *testing.T) {
	f := newFixture(t, Config{})
	res, err := f.m.Run(context.Background(), executor.Request{Code: "print(1)"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "alone" || res.Session != nil || len(f.inner) != 1 || f.inner[0].Code != "print(1)" {
		t.Errorf("got %+v, inner saw %+v", res, f.inner)
	}
	if f.starter.started() != 0 {
		t.Error("a run without a session started a live session")
	}
}

func TestCellsOfASessionShareOneProcess(t *testing.T) {
	f := newFixture(t, Config{})
	wantInfo(t, f.cell(t, "a", "x = 1"), executor.SessionInfo{ID: "a", Cell: 1})
	wantInfo(t, f.cell(t, "a", "fail"), executor.SessionInfo{ID: "a", Cell: 2})
	res := f.cell(t, "a", "state")
	wantInfo(t, res, executor.SessionInfo{ID: "a", Cell: 3})
	if res.Stdout != "x = 1;fail" {
		t.Errorf("the third cell saw %q, want the first two", res.Stdout)
	}
	if n := f.starter.started(); n != 1 {
		t.Errorf("%d processes started, want 1", n)
	}
	other := f.cell(t, "b", "state")
	wantInfo(t, other, executor.SessionInfo{ID: "b", Cell: 1})
	if other.Stdout != "" {
		t.Errorf("another session saw %q", other.Stdout)
	}
	if f.m.Live() != 2 || f.metrics.live != 2 || f.metrics.cells != 4 {
		t.Errorf("live %d (metric %d), cells metric %d; want 2, 2, 4", f.m.Live(), f.metrics.live, f.metrics.cells)
	}
}

func TestEndedProcessIsRebuiltFromTheSuccessfulCells(t *testing.T) {
	f := newFixture(t, Config{})
	f.cell(t, "a", "x = 1")
	f.cell(t, "a", "fail")
	f.cell(t, "a", "y = 2")
	wantInfo(t, f.cell(t, "a", "kill"), executor.SessionInfo{ID: "a", Cell: 4, Ended: true})
	if !f.starter.live(0).isClosed() || f.m.Live() != 0 {
		t.Fatal("the ended process was kept")
	}
	res := f.cell(t, "a", "state")
	wantInfo(t, res, executor.SessionInfo{ID: "a", Cell: 5, Restored: 2})
	if res.Stdout != "x = 1;y = 2" {
		t.Errorf("rebuilt state %q, want the two successful cells", res.Stdout)
	}
	if f.metrics.replays["restored"] != 1 || f.metrics.replayed != 2 {
		t.Errorf("replay metrics %v, %d cells", f.metrics.replays, f.metrics.replayed)
	}
	// A cell that ends its process successfully is not replayed either.
	f.cell(t, "a", "exit")
	res = f.cell(t, "a", "state")
	if res.Session.Restored != 3 || res.Stdout != "x = 1;y = 2;state" {
		t.Errorf("after exit: restored %d, state %q", res.Session.Restored, res.Stdout)
	}
}

func TestCallersReplayIsUsedWhenTheProcessDoesNotHoldIt(t *testing.T) {
	f := newFixture(t, Config{})
	// A bot after its restart: the executor has never seen the session.
	res := f.cell(t, "t", "state", "a", "b")
	wantInfo(t, res, executor.SessionInfo{ID: "t", Cell: 3, Restored: 2})
	if res.Stdout != "a;b" {
		t.Errorf("state %q", res.Stdout)
	}
	// Its next cell sends the record with that cell: the process holds it.
	res = f.cell(t, "t", "state", "a", "b", "state")
	wantInfo(t, res, executor.SessionInfo{ID: "t", Cell: 4})
	if f.starter.started() != 1 {
		t.Errorf("%d processes for a matching replay, want 1", f.starter.started())
	}
	// An edit of the first cell: the record differs, so a new process
	// replays it.
	res = f.cell(t, "t", "state", "a2", "b")
	wantInfo(t, res, executor.SessionInfo{ID: "t", Cell: 3, Restored: 2})
	if res.Stdout != "a2;b" || !f.starter.live(0).isClosed() {
		t.Errorf("state %q after an edit (old process closed: %v)", res.Stdout, f.starter.live(0).isClosed())
	}
	// An empty record (a reset thread) starts from nothing.
	res = f.cell(t, "t", "state", "-")
	wantInfo(t, res, executor.SessionInfo{ID: "t", Cell: 1})
	if res.Stdout != "" {
		t.Errorf("state %q after an empty record", res.Stdout)
	}
}

// TestReplayedCellsShowNoLiveOutput: the cells replayed before a cell are
// not the cell's: a live view of it (executor.WithOutput) sees only the
// cell's own output.
func TestReplayedCellsShowNoLiveOutput(t *testing.T) {
	f := newFixture(t, Config{})
	var mu sync.Mutex
	var seen []string
	ctx := executor.WithOutput(context.Background(), func(stdout, _ string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, stdout)
	})
	res, err := f.m.Run(ctx, request("t", "mine", "a", "b"))
	if err != nil || res.Session == nil || res.Session.Restored != 2 {
		t.Fatalf("cell: %+v, %v; want it after a replay of 2", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []string{"mine"}) {
		t.Errorf("the live view saw %q, want the cell's own output only", seen)
	}
}

func TestFailedReplayRunsTheCellFresh(t *testing.T) {
	f := newFixture(t, Config{})
	res := f.cell(t, "t", "state", "a", "fail", "b")
	wantInfo(t, res, executor.SessionInfo{ID: "t", Cell: 1, Fresh: true})
	if res.Stdout != "" {
		t.Errorf("a fresh session saw %q", res.Stdout)
	}
	if f.starter.started() != 2 || !f.starter.live(0).isClosed() {
		t.Error("the half-replayed process was kept")
	}
	if f.metrics.replays["fresh"] != 1 {
		t.Errorf("replay metrics %v", f.metrics.replays)
	}
	// The fresh session then goes on from its own record.
	_ = f.starter.live(1).Close()
	res = f.cell(t, "t", "state")
	wantInfo(t, res, executor.SessionInfo{ID: "t", Cell: 2, Restored: 1})
}

func TestReplayPastItsBudgetRunsTheCellFresh(t *testing.T) {
	f := newFixture(t, Config{ReplayBudget: 30 * time.Second})
	// Each slow cell takes 20 s: the third would begin past the budget.
	res := f.cell(t, "t", "state", "slow", "slow", "slow")
	wantInfo(t, res, executor.SessionInfo{ID: "t", Cell: 1, Fresh: true})
	if ran := f.starter.live(0).ran; len(ran) != 2 {
		t.Errorf("the replay ran %v, want two cells before the budget", ran)
	}
	res = f.cell(t, "u", "state", "slow")
	wantInfo(t, res, executor.SessionInfo{ID: "u", Cell: 2, Restored: 1})
}

func TestReplayPastItsBudgetIsCutByTheDeadline(t *testing.T) {
	f := newFixture(t, Config{ReplayBudget: time.Millisecond})
	f.starter.block = make(chan struct{}) // a replayed "hold" waits until the budget's deadline
	res := f.cell(t, "t", "state", "hold")
	wantInfo(t, res, executor.SessionInfo{ID: "t", Cell: 1, Fresh: true})
}

func TestLeastRecentlyUsedIsEvictedPastTheCount(t *testing.T) {
	f := newFixture(t, Config{MaxLive: 2})
	f.cell(t, "a", "a1")
	f.cell(t, "b", "b1")
	f.cell(t, "a", "a2") // b is now the least recently used
	f.cell(t, "c", "c1")
	if f.m.Live() != 2 {
		t.Errorf("%d live, want 2", f.m.Live())
	}
	f.m.evicting.Wait() // its process ends beside the cell
	if !f.starter.live(1).isClosed() || f.starter.live(0).isClosed() {
		t.Error("evicted the wrong session: want b's")
	}
	if f.metrics.evictions["count"] != 1 {
		t.Errorf("evictions %v", f.metrics.evictions)
	}
	res := f.cell(t, "b", "state")
	wantInfo(t, res, executor.SessionInfo{ID: "b", Cell: 2, Restored: 1})
	if res.Stdout != "b1" {
		t.Errorf("b rebuilt as %q", res.Stdout)
	}
}

func TestLeastRecentlyUsedIsEvictedPastTheMemory(t *testing.T) {
	f := newFixture(t, Config{MaxLive: 10, MemoryBytes: 250})
	f.starter.mem = 100
	f.cell(t, "a", "a1")
	f.cell(t, "b", "b1")
	f.cell(t, "c", "c1")
	f.m.evicting.Wait()
	if f.m.Live() != 2 || !f.starter.live(0).isClosed() {
		t.Errorf("%d live (a closed: %v), want 2 with a evicted", f.m.Live(), f.starter.live(0).isClosed())
	}
	if f.metrics.evictions["memory"] != 1 {
		t.Errorf("evictions %v", f.metrics.evictions)
	}
}

func TestTheMostRecentSessionIsKeptEvenOverTheMemory(t *testing.T) {
	f := newFixture(t, Config{MemoryBytes: 50})
	f.starter.mem = 100
	f.cell(t, "a", "a1")
	res := f.cell(t, "a", "state")
	wantInfo(t, res, executor.SessionInfo{ID: "a", Cell: 2})
	if f.starter.started() != 1 {
		t.Errorf("%d processes: the only session was evicted", f.starter.started())
	}
}

func TestUnmeasuredSessionsAreCountedAtSessionBytes(t *testing.T) {
	f := newFixture(t, Config{})
	m := New(runnerFunc(nil), f.starter, Options{Config: Config{MemoryBytes: 300, MaxLive: 10}, SessionBytes: 100, Ticks: f.ticks})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := m.Run(context.Background(), request(id, "x")); err != nil {
			t.Fatal(err)
		}
	}
	if m.Live() != 3 {
		t.Errorf("%d live, want 3 at 100 bytes each under 300", m.Live())
	}
}

func TestIdleSessionEndsAndTheNextCellReplays(t *testing.T) {
	f := newFixture(t, Config{Idle: 15 * time.Minute})
	f.cell(t, "a", "a1")
	f.clock.advance(10 * time.Minute)
	f.cell(t, "b", "b1")
	f.clock.advance(6 * time.Minute)
	// The second tick is taken once the sweep of the first is done.
	f.ticks <- f.clock.now()
	f.ticks <- f.clock.now()
	if f.m.Live() != 1 || !f.starter.live(0).isClosed() || f.starter.live(1).isClosed() {
		t.Fatalf("after a's idle time: %d live, want only b's", f.m.Live())
	}
	if f.metrics.evictions["idle"] != 1 {
		t.Errorf("evictions %v", f.metrics.evictions)
	}
	res := f.cell(t, "a", "state")
	wantInfo(t, res, executor.SessionInfo{ID: "a", Cell: 2, Restored: 1})
}

func TestEndForgetsTheSession(t *testing.T) {
	f := newFixture(t, Config{})
	if ok, err := f.m.EndSession(context.Background(), "a"); ok || err != nil {
		t.Errorf("End of an unknown session: %v, %v", ok, err)
	}
	f.cell(t, "a", "a1")
	f.cell(t, "a", "kill")
	if ok, err := f.m.EndSession(context.Background(), "a"); !ok || err != nil {
		t.Errorf("End of a session without a process: %v, %v", ok, err)
	}
	f.cell(t, "b", "b1")
	if ok, err := f.m.EndSession(context.Background(), "b"); !ok || err != nil {
		t.Errorf("End: %v, %v", ok, err)
	}
	if !f.starter.live(1).isClosed() || f.m.Live() != 0 {
		t.Error("End left the process")
	}
	res := f.cell(t, "b", "state")
	wantInfo(t, res, executor.SessionInfo{ID: "b", Cell: 1})
	if res.Stdout != "" {
		t.Errorf("an ended session's next cell saw %q", res.Stdout)
	}
	if ok, _ := f.m.EndSession(context.Background(), "a"); ok {
		t.Error("a session ended twice")
	}
}

func TestCellsRunOneAtATimeInOrder(t *testing.T) {
	f := newFixture(t, Config{})
	f.starter.block = make(chan struct{})
	first := make(chan executor.Result, 1)
	go func() {
		res, _ := f.m.Run(context.Background(), request("a", "hold"))
		first <- res
	}()
	waitRefs(t, f.m, "a", 1)
	const n = 5
	results := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.m.Run(context.Background(), request("a", fmt.Sprint("c", i)))
			if err != nil {
				t.Error(err)
			}
			results <- res.Stdout
		}()
		waitRefs(t, f.m, "a", 2+i) // queued behind the others
	}
	close(f.starter.block)
	if res := <-first; res.Session.Cell != 1 {
		t.Errorf("first cell %+v", res.Session)
	}
	wg.Wait()
	close(results)
	i := 0
	for out := range results {
		if want := fmt.Sprint("c", i); out != want {
			t.Errorf("cell %d printed %q, want %q", i, out, want)
		}
		i++
	}
	if res := f.cell(t, "a", "state"); res.Stdout != "hold;c0;c1;c2;c3;c4" {
		t.Errorf("state %q", res.Stdout)
	}
}

// waitRefs waits until n callers are in session key (running or queued).
func waitRefs(t *testing.T, m *Manager, key string, n int) {
	t.Helper()
	for {
		m.mu.Lock()
		s := m.sessions[key]
		got := 0
		if s != nil {
			got = s.refs
		}
		m.mu.Unlock()
		if got >= n {
			return
		}
		runtime.Gosched()
	}
}

func TestSessionsRunAtOnceButACellsNeverOverlap(t *testing.T) {
	f := newFixture(t, Config{})
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.m.Run(context.Background(), request(fmt.Sprint("s", i%3), "x")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if f.starter.started() != 3 {
		t.Errorf("%d processes for 3 sessions", f.starter.started())
	}
}

func TestCellCanceledWhileWaitingForItsTurn(t *testing.T) {
	f := newFixture(t, Config{})
	f.starter.block = make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = f.m.Run(context.Background(), request("a", "hold"))
	}()
	waitRefs(t, f.m, "a", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.m.Run(ctx, request("a", "x"))
	if executor.ErrorCode(err) != executor.ErrCanceled {
		t.Errorf("got %v, want canceled", err)
	}
	close(f.starter.block)
	<-done
}

func TestBadSessionID(t *testing.T) {
	f := newFixture(t, Config{})
	for _, id := range []string{"", strings.Repeat("x", executor.MaxSessionIDBytes+1)} {
		_, err := f.m.Run(context.Background(), request(id, "x"))
		if executor.ErrorCode(err) != executor.ErrInvalid {
			t.Errorf("id of %d bytes: %v, want invalid", len(id), err)
		}
	}
}

func TestStartFailureIsTheServicesError(t *testing.T) {
	f := newFixture(t, Config{})
	f.starter.start = func(context.Context) (executor.LiveSession, error) {
		return nil, executor.Errorf(executor.ErrUnavailable, "no isolation")
	}
	_, err := f.m.Run(context.Background(), request("a", "x"))
	if executor.ErrorCode(err) != executor.ErrUnavailable {
		t.Errorf("got %v", err)
	}
	f.starter.start = nil
	wantInfo(t, f.cell(t, "a", "x"), executor.SessionInfo{ID: "a", Cell: 1})
}

func TestRecordPastItsBoundStartsFresh(t *testing.T) {
	f := newFixture(t, Config{})
	big := executor.Request{Code: "big", Files: []executor.File{{Path: "data", Content: make([]byte, MaxRecordBytes)}}, Session: &executor.Session{ID: "a"}}
	if _, err := f.m.Run(context.Background(), big); err != nil {
		t.Fatal(err)
	}
	f.cell(t, "a", "kill")
	wantInfo(t, f.cell(t, "a", "state"), executor.SessionInfo{ID: "a", Cell: 1, Fresh: true})
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.m.recordBytes > MaxRecordBytes {
		t.Errorf("%d bytes of records kept", f.m.recordBytes)
	}
}

func TestCloseEndsEverySessionAndWaitsForRunningCells(t *testing.T) {
	f := newFixture(t, Config{})
	f.cell(t, "a", "a1")
	f.starter.block = make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := f.m.Run(context.Background(), request("b", "hold"))
		done <- err
	}()
	waitRefs(t, f.m, "b", 1)
	for f.starter.started() < 2 {
		runtime.Gosched()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.m.Close(ctx); err == nil {
		t.Error("Close returned with a cell running")
	}
	if !f.starter.live(0).isClosed() || f.starter.live(1).isClosed() {
		t.Error("Close must end the idle session and leave the running one to its cell")
	}
	if _, err := f.m.Run(context.Background(), request("c", "x")); executor.ErrorCode(err) != executor.ErrShutdown {
		t.Errorf("a cell after Close: %v", err)
	}
	close(f.starter.block)
	if err := <-done; err != nil {
		t.Errorf("the running cell: %v", err)
	}
	if !f.starter.live(1).isClosed() {
		t.Error("the running cell's session outlived Close")
	}
	if f.m.Live() != 0 {
		t.Errorf("%d live after Close", f.m.Live())
	}
}

func TestStateHashSeparatesFields(t *testing.T) {
	a := stateOf([]executor.Request{{Code: "ab", Stdin: "c"}})
	b := stateOf([]executor.Request{{Code: "a", Stdin: "bc"}})
	c := stateOf([]executor.Request{{Code: "ab", Stdin: "c", Timeout: time.Second}})
	if a == b {
		t.Error("code and stdin run into each other")
	}
	if a != c {
		t.Error("a cell's limits change its state")
	}
}

// reportingLive is a fakeLive whose memory is what memory says, asked
// after each of its cells.
type reportingLive struct {
	*fakeLive
	memory func() int64
}

func (l reportingLive) MemoryBytes() int64 { return l.memory() }

// TestEvictionCountsReportedMemoryNotTheLimit: sessions that report
// little all stay live however large the limit they would be counted at
// otherwise, and one whose cell grows it evicts the least recently used
// by what it reports after that cell.
func TestEvictionCountsReportedMemoryNotTheLimit(t *testing.T) {
	f := newFixture(t, Config{})
	var mu sync.Mutex
	held := map[int]int64{} // by the fake's id
	var lives []*fakeLive
	f.starter.start = func(context.Context) (executor.LiveSession, error) {
		mu.Lock()
		defer mu.Unlock()
		l := &fakeLive{id: len(lives) + 1, clock: f.clock, alive: true}
		lives = append(lives, l)
		held[l.id] = 10
		return reportingLive{fakeLive: l, memory: func() int64 {
			l.mu.Lock()
			grew := len(l.ran) > 0 && l.ran[len(l.ran)-1] == "grow"
			l.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			if grew {
				held[l.id] = 150
			}
			return held[l.id]
		}}, nil
	}
	m := New(runnerFunc(nil), f.starter, Options{Config: Config{MemoryBytes: 300, MaxLive: 10}, SessionBytes: 1000, Ticks: f.ticks, Metrics: f.metrics})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	run := func(id, code string) {
		t.Helper()
		if _, err := m.Run(context.Background(), request(id, code)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		run(id, "x")
	}
	if m.Live() != 5 || f.metrics.evictions["memory"] != 0 {
		t.Fatalf("%d live, evictions %v: want all 5 live at 10 bytes each (not 1000) under 300", m.Live(), f.metrics.evictions)
	}
	run("e", "grow") // 4×10 + 150 = 190: still under
	m.countMemory()  // as the sweep does after a cell's answer
	if m.Live() != 5 {
		t.Fatalf("%d live after e grew to 150, want 5", m.Live())
	}
	run("a", "grow") // 3×10 + 2×150 = 330: b, c and d, the least recently used, go
	m.countMemory()
	if m.Live() != 2 || f.metrics.evictions["memory"] != 3 {
		t.Fatalf("%d live, evictions %v: want b, c, d evicted by memory", m.Live(), f.metrics.evictions)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, want := range []bool{false, true, true, true, false} {
		if lives[i].isClosed() != want {
			t.Errorf("session %c closed: %v, want %v", 'a'+i, !want, want)
		}
	}
}

// TestMemoryCountWaitsForQuiet: the memory of the sessions cells ran in is
// counted once no cell has ended for a while, not between cells that
// follow each other closely (a count beside the next cell delays it), and
// at the sweep's tick where cells never pause.
func TestMemoryCountWaitsForQuiet(t *testing.T) {
	f := newFixture(t, Config{})
	var counts atomic.Int32
	f.starter.start = func(context.Context) (executor.LiveSession, error) {
		l := &fakeLive{id: 1, clock: f.clock, alive: true}
		return reportingLive{fakeLive: l, memory: func() int64 { counts.Add(1); return 10 }}, nil
	}
	armed, fire, ticks := make(chan struct{}), make(chan time.Time), make(chan time.Time)
	m := New(runnerFunc(nil), f.starter, Options{Config: Config{MaxLive: 10}, Ticks: ticks,
		quietTimer: func(time.Duration) <-chan time.Time {
			armed <- struct{}{}
			return fire
		}})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	cell := func(id string) {
		t.Helper()
		if _, err := m.Run(context.Background(), request(id, "x")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-armed:
		case <-time.After(10 * time.Second):
			t.Fatal("a cell's end did not arm the wait for quiet")
		}
	}
	want := func(n int32, when string) {
		t.Helper()
		if got := counts.Load(); got != n {
			t.Fatalf("%s: %d counts, want %d", when, got, n)
		}
	}
	cell("a")
	cell("b")
	cell("a")
	want(2, "between cells (each start counts once)")
	fire <- time.Time{}
	ticks <- time.Time{} // the sweep took it: the quiet count is done
	want(4, "once the cells paused")
	cell("b")
	ticks <- time.Time{}
	ticks <- time.Time{}
	want(5, "at the tick, with no pause")
}

// closingLive is a fakeLive whose Close waits until release is closed,
// as a sandbox's waits for its processes' teardown.
type closingLive struct {
	*fakeLive
	closing, release chan struct{}
}

func (l closingLive) Close() error {
	close(l.closing)
	<-l.release
	return l.fakeLive.Close()
}

// TestEvictionDoesNotHoldUpTheCell: the cell that starts a session
// answers while the process it evicted is still ending (a sandbox's
// Close waits for the teardown), and Close waits for that end.
func TestEvictionDoesNotHoldUpTheCell(t *testing.T) {
	f := newFixture(t, Config{MaxLive: 1})
	closing, release := make(chan struct{}), make(chan struct{})
	var evicted *fakeLive
	f.starter.start = func(context.Context) (executor.LiveSession, error) {
		l := &fakeLive{id: 1, clock: f.clock, alive: true}
		if evicted == nil {
			evicted = l
			return closingLive{fakeLive: l, closing: closing, release: release}, nil
		}
		return l, nil
	}
	f.cell(t, "a", "a1")
	answered := make(chan error, 1)
	go func() {
		_, err := f.m.Run(context.Background(), request("b", "b1")) // evicts a
		answered <- err
	}()
	<-closing
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the cell waited for the process it evicted to end")
	}
	closed := make(chan error, 1)
	go func() { closed <- f.m.Close(context.Background()) }()
	close(release)
	if err := <-closed; err != nil || !evicted.isClosed() {
		t.Fatalf("Close returned (%v) before the evicted process ended", err)
	}
}
