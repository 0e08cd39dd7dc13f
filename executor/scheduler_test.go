package executor_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/syncbuf"
)

// hang bounds every wait on the scheduler, to turn a hang into a failure.
const hang = 10 * time.Second

// fakeRunner is an executor.Runner with a func field.
type fakeRunner struct {
	run func(ctx context.Context, req executor.Request) (executor.Result, error)
}

func (f fakeRunner) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	return f.run(ctx, req)
}

// instant answers every request at once with its code as stdout.
var instant = fakeRunner{run: func(_ context.Context, req executor.Request) (executor.Result, error) {
	return executor.Result{Success: true, Stdout: req.Code}, nil
}}

// gate is a Runner whose runs block until the test ends them. Each run
// shows up on calls, in the order the runs start.
type gate struct {
	calls chan *call
}

type call struct {
	req  executor.Request
	ctx  context.Context
	done chan reply
}

type reply struct {
	res executor.Result
	err error
}

func newGate() *gate { return &gate{calls: make(chan *call, 100)} }

func (g *gate) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	c := &call{req: req, ctx: ctx, done: make(chan reply, 1)}
	g.calls <- c
	select {
	case r := <-c.done:
		return r.res, r.err
	case <-ctx.Done():
		return executor.Result{}, ctx.Err()
	}
}

// next returns the next run to start and checks it is the one for code.
func (g *gate) next(t *testing.T, code string) *call {
	t.Helper()
	select {
	case c := <-g.calls:
		if c.req.Code != code {
			t.Fatalf("run started %q, want %q", c.req.Code, code)
		}
		return c
	case <-time.After(hang):
		t.Fatalf("run %q did not start", code)
	}
	return nil
}

// idle checks that no run has started that the test has not taken.
func (g *gate) idle(t *testing.T) {
	t.Helper()
	select {
	case c := <-g.calls:
		t.Fatalf("run %q started, want none", c.req.Code)
	default:
	}
}

// finish ends the run with a successful result echoing its code.
func (c *call) finish() { c.done <- reply{res: executor.Result{Success: true, Stdout: c.req.Code}} }

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// pending is a Submit running in the background, with the progress it
// reported.
type pending struct {
	name     string
	cancel   context.CancelFunc
	progress chan executor.Progress
	done     chan reply
}

// submit starts Submit for user with code as the snippet.
func submit(t *testing.T, s *executor.Scheduler, user, code string) *pending {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := &pending{name: code, cancel: cancel, progress: make(chan executor.Progress, 100), done: make(chan reply, 1)}
	job := executor.Job{User: user, Request: executor.Request{Code: code}, Progress: func(pr executor.Progress) { p.progress <- pr }}
	go func() {
		res, err := s.Submit(ctx, job)
		p.done <- reply{res, err}
	}()
	return p
}

// queued waits for p to report it is queued with ahead jobs before it.
func (p *pending) queued(t *testing.T, ahead int) executor.Progress {
	t.Helper()
	return p.expect(t, executor.Progress{State: executor.StateQueued, Ahead: ahead})
}

// expect waits for p's next progress report and checks its state and place.
func (p *pending) expect(t *testing.T, want executor.Progress) executor.Progress {
	t.Helper()
	select {
	case got := <-p.progress:
		if got.State != want.State || got.Ahead != want.Ahead {
			t.Fatalf("%s: progress %+v, want state %d ahead %d", p.name, got, want.State, want.Ahead)
		}
		return got
	case <-time.After(hang):
		t.Fatalf("%s: no progress report, want state %d ahead %d", p.name, want.State, want.Ahead)
	}
	return executor.Progress{}
}

// quiet checks p has reported nothing more.
func (p *pending) quiet(t *testing.T) {
	t.Helper()
	select {
	case got := <-p.progress:
		t.Fatalf("%s: unexpected progress %+v", p.name, got)
	default:
	}
}

// result waits for p's Submit to return.
func (p *pending) result(t *testing.T) (executor.Result, error) {
	t.Helper()
	select {
	case r := <-p.done:
		return r.res, r.err
	case <-time.After(hang):
		t.Fatalf("%s: Submit did not return", p.name)
	}
	return executor.Result{}, nil
}

// ok waits for p to return its own code as stdout.
func (p *pending) ok(t *testing.T) {
	t.Helper()
	res, err := p.result(t)
	if err != nil || res.Stdout != p.name {
		t.Fatalf("%s: got %+v, %v; want stdout %q", p.name, res, err, p.name)
	}
}

// started waits for p to report it is running.
func (p *pending) started(t *testing.T) {
	t.Helper()
	p.expect(t, executor.Progress{State: executor.StateRunning})
}

// newScheduler returns a scheduler closed at the end of the test with a
// context that is already done, which cancels whatever is left.
func newScheduler(t *testing.T, r executor.Runner, cfg executor.Config) *executor.Scheduler {
	t.Helper()
	s := executor.NewScheduler(r, cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.Close(ctx)
	})
	return s
}

// submitNow calls Submit and returns its error. A job that waits (which the
// callers expect to be refused at once or run at once) is cancelled after a
// while, so that a wrongly queued job fails the test instead of hanging it.
func submitNow(s *executor.Scheduler, user, code string) error {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	_, err := s.Submit(ctx, executor.Job{User: user, Request: executor.Request{Code: code}})
	return err
}

// wantCode checks err is an *executor.Error with code.
func wantCode(t *testing.T, err error, code executor.Code) *executor.Error {
	t.Helper()
	var e *executor.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want code %s", err, code)
	}
	return e
}

func wantStats(t *testing.T, s *executor.Scheduler, running, queued int) {
	t.Helper()
	if st := s.Stats(); st.Running != running || st.Queued != queued {
		t.Fatalf("stats %+v, want running %d queued %d", st, running, queued)
	}
}

func TestSchedulerGlobalLimit(t *testing.T) {
	for _, concurrency := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(concurrency), func(t *testing.T) {
			g := newGate()
			s := newScheduler(t, g, executor.Config{Concurrency: concurrency, QueueSize: 10})
			var jobs []*pending
			var calls []*call
			for i := range concurrency + 2 {
				p := submit(t, s, fmt.Sprintf("u%d", i), fmt.Sprintf("job%d", i))
				jobs = append(jobs, p)
				if i < concurrency {
					calls = append(calls, g.next(t, p.name))
					p.started(t)
				} else {
					p.queued(t, i-concurrency)
				}
			}
			g.idle(t)
			wantStats(t, s, concurrency, 2)

			calls[0].finish()
			jobs[0].ok(t)
			calls = append(calls[1:], g.next(t, jobs[concurrency].name))
			jobs[concurrency+1].queued(t, 0)
			g.idle(t)
			wantStats(t, s, concurrency, 1)

			for i, c := range calls {
				c.finish()
				jobs[i+1].ok(t)
			}
			g.next(t, jobs[concurrency+1].name).finish()
			jobs[concurrency+1].ok(t)
			wantStats(t, s, 0, 0)
		})
	}
}

func TestSchedulerDefaultConcurrencyIsNumCPU(t *testing.T) {
	g := newGate()
	s := newScheduler(t, g, executor.Config{MaxPerUser: 1000})
	n := runtime.NumCPU()
	for i := range n {
		submit(t, s, "u", fmt.Sprint(i))
		g.next(t, fmt.Sprint(i))
	}
	p := submit(t, s, "u", "extra")
	p.queued(t, 0)
	wantStats(t, s, n, 1)
}

func TestSchedulerQueueFull(t *testing.T) {
	clock := newClock()
	g := newGate()
	m := &recMetrics{}
	s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 2, Clock: clock.Now, Metrics: m})

	// Before any run is measured the wait is unknown.
	first := submit(t, s, "a", "first")
	c := g.next(t, "first")
	b := submit(t, s, "b", "b")
	b.queued(t, 0)
	cc := submit(t, s, "c", "c")
	cc.queued(t, 1)
	e := wantCode(t, submitNow(s, "d", "d"), executor.ErrBusy)
	if e.RetryAfter != 0 {
		t.Errorf("RetryAfter = %v before any run, want 0", e.RetryAfter)
	}

	// Runs of 2 s each: the two queued jobs need 4 s.
	clock.Advance(2 * time.Second)
	c.finish()
	first.ok(t)
	c = g.next(t, "b")
	clock.Advance(2 * time.Second)
	c.finish()
	b.ok(t)
	c = g.next(t, "c")
	submit(t, s, "e", "e").queued(t, 0)
	submit(t, s, "f", "f").queued(t, 1)
	e = wantCode(t, submitNow(s, "d", "d"), executor.ErrBusy)
	if e.RetryAfter != 4*time.Second {
		t.Errorf("RetryAfter = %v, want 4s", e.RetryAfter)
	}
	if got := m.count("rejected"); got != 2 {
		t.Errorf("rejected runs = %d, want 2", got)
	}
	if m.rateLimited() != 0 {
		t.Errorf("a full queue counted as rate limiting")
	}
	wantStats(t, s, 1, 2)
	c.finish()
	cc.ok(t)
}

func TestSchedulerUserRate(t *testing.T) {
	type step struct {
		advance time.Duration
		user    string
		retry   time.Duration // 0: accepted
	}
	tests := []struct {
		name  string
		rate  float64
		burst int
		steps []step
	}{
		{"burst then wait", 0.25, 2, []step{
			{0, "a", 0},
			{0, "a", 0},
			{0, "a", 4 * time.Second},
			{0, "b", 0}, // users have their own buckets
			{time.Second, "a", 3 * time.Second},
			{time.Second, "a", 2 * time.Second}, // refusals took no token
			{2 * time.Second, "a", 0},
			{0, "a", 4 * time.Second},
		}},
		{"refill caps at burst", 1, 2, []step{
			{0, "a", 0},
			{0, "a", 0},
			{time.Hour, "a", 0},
			{0, "a", 0},
			{0, "a", time.Second},
		}},
		{"burst defaults to one", 0.5, 0, []step{
			{0, "a", 0},
			{0, "a", 2 * time.Second},
			{2 * time.Second, "a", 0},
		}},
		{"zero rate is unlimited", 0, 0, []step{
			{0, "a", 0}, {0, "a", 0}, {0, "a", 0}, {0, "a", 0}, {0, "a", 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			m := &recMetrics{}
			s := newScheduler(t, instant, executor.Config{Concurrency: 1, UserRate: tt.rate, UserBurst: tt.burst, Clock: clock.Now, Metrics: m})
			limited := 0
			for i, st := range tt.steps {
				clock.Advance(st.advance)
				err := submitNow(s, st.user, "x")
				if st.retry == 0 {
					if err != nil {
						t.Fatalf("step %d: %v, want accepted", i, err)
					}
					continue
				}
				limited++
				e := wantCode(t, err, executor.ErrRateLimited)
				if e.RetryAfter != st.retry {
					t.Fatalf("step %d: RetryAfter = %v, want %v", i, e.RetryAfter, st.retry)
				}
				if want := fmt.Sprintf("try again in %s", st.retry); !strings.Contains(e.Error(), want) {
					t.Fatalf("step %d: %q does not say %q", i, e.Error(), want)
				}
			}
			if m.rateLimited() != limited || m.count("rejected") != limited {
				t.Errorf("metrics: %d rate limited, %d rejected; want %d", m.rateLimited(), m.count("rejected"), limited)
			}
		})
	}
}

// Refusals for the job limit or a full queue take no rate token.
func TestSchedulerRejectionsKeepTokens(t *testing.T) {
	clock := newClock()
	g := newGate()
	s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 1, UserRate: 0.25, UserBurst: 2, Clock: clock.Now})
	run := func(user string) {
		t.Helper()
		p := submit(t, s, user, user)
		g.next(t, user).finish()
		p.ok(t)
	}
	run("c") // c has one token left

	a := submit(t, s, "a", "a1")
	c := g.next(t, "a1")
	_ = wantCode(t, submitNow(s, "a", "a2"), executor.ErrRateLimited) // one already running
	b := submit(t, s, "b", "b1")
	b.queued(t, 0)
	_ = wantCode(t, submitNow(s, "c", "c1"), executor.ErrBusy)
	c.finish()
	a.ok(t)
	g.next(t, "b1").finish()
	b.ok(t)

	// a and c each have their last token.
	run("a")
	run("c")
	for _, u := range []string{"a", "c"} {
		e := wantCode(t, submitNow(s, u, u), executor.ErrRateLimited)
		if e.RetryAfter != 4*time.Second {
			t.Errorf("%s: RetryAfter = %v, want 4s", u, e.RetryAfter)
		}
	}
}

func TestSchedulerMaxPerUser(t *testing.T) {
	tests := []struct {
		max, want int
		message   string
	}{
		{0, 1, "already have a snippet queued or running"},
		{1, 1, "already have a snippet queued or running"},
		{3, 3, "already have 3 snippets queued or running"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			g := newGate()
			s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 10, MaxPerUser: tt.max})
			var jobs []*pending
			for i := range tt.want {
				p := submit(t, s, "a", fmt.Sprintf("a%d", i))
				if i == 0 {
					p.started(t)
				} else {
					p.queued(t, i-1)
				}
				jobs = append(jobs, p)
			}
			e := wantCode(t, submitNow(s, "a", "over"), executor.ErrRateLimited)
			if !strings.Contains(e.Message, tt.message) {
				t.Errorf("message %q, want %q", e.Message, tt.message)
			}
			if e.RetryAfter < time.Second {
				t.Errorf("RetryAfter = %v, want at least 1s", e.RetryAfter)
			}
			other := submit(t, s, "b", "b")
			other.queued(t, 0) // b joins the current round, before a's later jobs

			g.next(t, "a0").finish()
			jobs[0].ok(t)
			again := submit(t, s, "a", "again")
			g.next(t, "b").finish()
			other.ok(t)
			for i := 1; i < tt.want; i++ {
				g.next(t, jobs[i].name).finish()
				jobs[i].ok(t)
			}
			g.next(t, "again").finish()
			again.ok(t)
		})
	}
}

// A user refused for MaxPerUser is told when to retry: when their job will
// have ended (at its time limit, or after the runs ahead of it when queued),
// and then a rate token is there; never "in a moment".
func TestSchedulerMaxPerUserRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		cfg     executor.Config
		other   bool          // another user's job runs first, so a's job is queued
		timeout time.Duration // a's job's own Request.Timeout
		want    time.Duration
	}{
		{name: "running job ends at the run timeout", cfg: executor.Config{RunTimeout: 10 * time.Second}, want: 7 * time.Second},
		{name: "the request's own timeout", cfg: executor.Config{RunTimeout: 10 * time.Second}, timeout: 5 * time.Second, want: 2 * time.Second},
		{name: "queued job waits a run, then runs", cfg: executor.Config{RunTimeout: 10 * time.Second}, other: true, want: 20 * time.Second},
		{name: "then the rate", cfg: executor.Config{RunTimeout: 10 * time.Second, UserRate: 0.05, UserBurst: 1}, want: 17 * time.Second},
		{name: "nothing known: a second", want: time.Second},
		{name: "past the limit: a second", cfg: executor.Config{RunTimeout: 2 * time.Second}, want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			g := newGate()
			cfg := tt.cfg
			cfg.Concurrency, cfg.QueueSize, cfg.Clock = 1, 10, clock.Now
			s := newScheduler(t, g, cfg)
			if tt.other {
				submit(t, s, "b", "b").started(t)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			progress := make(chan executor.Progress, 10)
			done := make(chan error, 1)
			go func() {
				_, err := s.Submit(ctx, executor.Job{User: "a", Request: executor.Request{Code: "a", Timeout: tt.timeout},
					Progress: func(p executor.Progress) { progress <- p }})
				done <- err
			}()
			select {
			case <-progress:
			case <-time.After(hang):
				t.Fatal("a's job was not admitted")
			}
			clock.Advance(3 * time.Second)
			e := wantCode(t, submitNow(s, "a", "again"), executor.ErrRateLimited)
			if d := e.RetryAfter - tt.want; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.want)
			}
			cancel()
			<-done
		})
	}
}

// A user flooding the queue delays another user's snippet by at most one run
// per flooding user.
func TestSchedulerFairness(t *testing.T) {
	type sub struct{ user, code string }
	tests := []struct {
		name    string
		blocker string // user of the run that holds the only slot
		subs    []sub
		aheads  []int // Ahead when each sub was queued
		order   []string
	}{
		{
			name:    "distinct users run first come first served",
			blocker: "x",
			subs:    []sub{{"b", "b1"}, {"c", "c1"}, {"d", "d1"}},
			aheads:  []int{0, 1, 2},
			order:   []string{"b1", "c1", "d1"},
		},
		{
			name:    "newcomer goes before the flooder's next run",
			blocker: "a",
			subs:    []sub{{"a", "a1"}, {"a", "a2"}, {"a", "a3"}, {"a", "a4"}, {"b", "b1"}},
			aheads:  []int{0, 1, 2, 3, 0},
			order:   []string{"b1", "a1", "a2", "a3", "a4"},
		},
		{
			name:    "newcomer waits one run behind another user's flood",
			blocker: "x",
			subs:    []sub{{"a", "a1"}, {"a", "a2"}, {"a", "a3"}, {"b", "b1"}},
			aheads:  []int{0, 1, 2, 1},
			order:   []string{"a1", "b1", "a2", "a3"},
		},
		{
			name:    "two flooders alternate",
			blocker: "x",
			subs:    []sub{{"a", "a1"}, {"a", "a2"}, {"a", "a3"}, {"c", "c1"}, {"c", "c2"}, {"c", "c3"}},
			aheads:  []int{0, 1, 2, 1, 3, 5},
			order:   []string{"a1", "c1", "a2", "c2", "a3", "c3"},
		},
		{
			name:    "newcomer behind two flooders",
			blocker: "a",
			subs:    []sub{{"a", "a1"}, {"a", "a2"}, {"c", "c1"}, {"c", "c2"}, {"b", "b1"}},
			aheads:  []int{0, 1, 0, 2, 1},
			order:   []string{"c1", "b1", "a1", "c2", "a2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate()
			s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 20, MaxPerUser: 10})
			blocker := submit(t, s, tt.blocker, "blocker")
			c := g.next(t, "blocker")
			byCode := map[string]*pending{}
			for i, sb := range tt.subs {
				p := submit(t, s, sb.user, sb.code)
				p.queued(t, tt.aheads[i])
				byCode[sb.code] = p
			}
			c.finish()
			blocker.ok(t)
			for _, code := range tt.order {
				g.next(t, code).finish()
				byCode[code].ok(t)
			}
			g.idle(t)
			if st := s.Stats(); st != (executor.Stats{}) {
				t.Errorf("stats after the runs: %+v, want zero", st)
			}
		})
	}
}

func TestSchedulerProgress(t *testing.T) {
	clock := newClock()
	g := newGate()
	s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 10, Clock: clock.Now})
	blocker := submit(t, s, "x", "blocker")
	blocker.started(t)
	c := g.next(t, "blocker")

	jobs := []*pending{submit(t, s, "b", "b")}
	jobs[0].queued(t, 0)
	clock.Advance(time.Second)
	jobs = append(jobs, submit(t, s, "c", "c"))
	jobs[1].queued(t, 1)
	jobs = append(jobs, submit(t, s, "d", "d"))
	jobs[2].queued(t, 2)
	jobs[0].quiet(t)

	for i, p := range jobs {
		clock.Advance(3 * time.Second)
		c.finish()
		if i == 0 {
			blocker.ok(t)
		} else {
			jobs[i-1].ok(t)
		}
		got := p.expect(t, executor.Progress{State: executor.StateRunning})
		if want := time.Duration(4+3*i) * time.Second; i == 0 && got.Wait != want {
			t.Errorf("b waited %v, want %v", got.Wait, want)
		}
		for j, q := range jobs[i+1:] {
			got := q.queued(t, j)
			if got.Wait <= 0 {
				t.Errorf("%s: wait %v, want > 0", q.name, got.Wait)
			}
		}
		c = g.next(t, p.name)
	}
	c.finish()
	jobs[2].ok(t)
	for _, p := range jobs {
		p.quiet(t)
	}
}

func TestSchedulerCancelQueued(t *testing.T) {
	g := newGate()
	m := &recMetrics{}
	s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 10, Metrics: m})
	a := submit(t, s, "a", "a")
	c := g.next(t, "a")
	b := submit(t, s, "b", "b")
	b.queued(t, 0)
	d := submit(t, s, "d", "d")
	d.queued(t, 1)

	b.cancel()
	_, err := b.result(t)
	_ = wantCode(t, err, executor.ErrCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want it to wrap context.Canceled", err)
	}
	d.queued(t, 0)
	wantStats(t, s, 1, 1)
	if got := m.lastDepth(); got != 1 {
		t.Errorf("queue depth metric %d, want 1", got)
	}

	c.finish()
	a.ok(t)
	g.next(t, "d").finish()
	d.ok(t)
	g.idle(t)

	// b can submit again: the cancelled job no longer counts against it.
	again := submit(t, s, "b", "b")
	g.next(t, "b").finish()
	again.ok(t)
}

func TestSchedulerCancelRunning(t *testing.T) {
	g := newGate()
	s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 10})
	a := submit(t, s, "a", "a")
	c := g.next(t, "a")
	b := submit(t, s, "b", "b")
	b.queued(t, 0)

	a.cancel()
	select {
	case <-c.ctx.Done():
	case <-time.After(hang):
		t.Fatal("the runner's context was not cancelled")
	}
	_, err := a.result(t)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the runner's context.Canceled", err)
	}
	g.next(t, "b").finish()
	b.ok(t)
}

func TestSchedulerCanceledBeforeSubmit(t *testing.T) {
	s := newScheduler(t, instant, executor.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Submit(ctx, executor.Job{User: "a"})
	_ = wantCode(t, err, executor.ErrCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want it to wrap context.Canceled", err)
	}
}

func TestSchedulerPassesRunnerResults(t *testing.T) {
	tooLarge := executor.Errorf(executor.ErrTooLarge, "snippet too large")
	plain := errors.New("exec: python3 not found")
	tests := []struct {
		name    string
		res     executor.Result
		err     error
		outcome string
	}{
		{"ok", executor.Result{Success: true, Stdout: "2\n"}, nil, "ok"},
		{"snippet error", executor.Result{Error: "ZeroDivisionError: division by zero"}, nil, "error"},
		{"timeout", executor.Result{Timeout: true}, nil, "timeout"},
		{"runner refusal", executor.Result{}, tooLarge, "rejected"},
		{"runner failure", executor.Result{}, plain, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			m := &recMetrics{}
			r := fakeRunner{run: func(context.Context, executor.Request) (executor.Result, error) {
				clock.Advance(1500 * time.Millisecond)
				return tt.res, tt.err
			}}
			s := newScheduler(t, r, executor.Config{Clock: clock.Now, Metrics: m})
			res, err := s.Submit(context.Background(), executor.Job{User: "a"})
			if !errors.Is(err, tt.err) || !reflect.DeepEqual(res, tt.res) {
				t.Fatalf("got %+v, %v; want %+v, %v", res, err, tt.res, tt.err)
			}
			want := []finished{{tt.outcome, 1500 * time.Millisecond}}
			if got := m.finishedRuns(); !slices.Equal(got, want) {
				t.Errorf("RunFinished calls %v, want %v", got, want)
			}
		})
	}
}

func TestSchedulerCloseDrains(t *testing.T) {
	g := newGate()
	s := executor.NewScheduler(g, executor.Config{Concurrency: 1, QueueSize: 10})
	a := submit(t, s, "a", "a")
	c := g.next(t, "a")
	b := submit(t, s, "b", "b")
	b.queued(t, 0)

	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	// a's second job is refused at once: for its job limit until Close has
	// begun, then for the shutdown.
	for executor.ErrorCode(submitNow(s, "a", "probe")) == executor.ErrRateLimited {
		runtime.Gosched()
	}
	_ = wantCode(t, submitNow(s, "n", "n"), executor.ErrShutdown)

	c.finish()
	a.ok(t)
	c = g.next(t, "b") // queued jobs still run
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a job running", err)
	default:
	}
	c.finish()
	b.ok(t)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(hang):
		t.Fatal("Close did not return after the jobs finished")
	}
	_ = wantCode(t, submitNow(s, "a", "late"), executor.ErrShutdown)
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestSchedulerCloseDeadline(t *testing.T) {
	g := newGate()
	s := executor.NewScheduler(g, executor.Config{Concurrency: 1, QueueSize: 10})
	a := submit(t, s, "a", "a")
	c := g.next(t, "a")
	b := submit(t, s, "b", "b")
	b.queued(t, 0)

	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctx) }()
	cancel()

	select {
	case err := <-closed:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 queued and 1 running") {
			t.Fatalf("Close: %v, want the cancelled jobs and context.Canceled", err)
		}
	case <-time.After(hang):
		t.Fatal("Close did not return after its deadline")
	}
	if c.ctx.Err() == nil {
		t.Error("the running job's context was not cancelled")
	}
	if _, err := a.result(t); !errors.Is(err, context.Canceled) {
		t.Errorf("running job: %v, want the runner's context.Canceled", err)
	}
	_, err := b.result(t)
	_ = wantCode(t, err, executor.ErrShutdown)
	g.idle(t)
	if st := s.Stats(); st != (executor.Stats{}) {
		t.Errorf("stats after Close: %+v, want zero", st)
	}
}

func TestSchedulerCloseIdle(t *testing.T) {
	s := executor.NewScheduler(instant, executor.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close of an idle scheduler: %v", err)
	}
	_ = wantCode(t, submitNow(s, "a", "a"), executor.ErrShutdown)
}

// The per-user state stays bounded: refilled buckets and idle users are
// dropped, while buckets still short of tokens are kept.
func TestSchedulerForgetsIdleUsers(t *testing.T) {
	clock := newClock()
	s := newScheduler(t, instant, executor.Config{Concurrency: 1, UserRate: 1, UserBurst: 1, Clock: clock.Now})
	const n = 500
	for i := range n {
		if err := submitNow(s, fmt.Sprintf("old%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Limiters != n || st.Users != 0 {
		t.Fatalf("stats %+v, want %d limiters (all still empty) and no users", st, n)
	}
	clock.Advance(time.Second)
	for i := range n {
		if err := submitNow(s, fmt.Sprintf("new%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Limiters >= 2*n || st.Limiters < n {
		t.Fatalf("%d limiters, want the %d refilled ones dropped and the %d new ones kept", st.Limiters, n, n)
	}
	_ = wantCode(t, submitNow(s, "new0", "x"), executor.ErrRateLimited)
	if err := submitNow(s, "old0", "x"); err != nil {
		t.Fatalf("a dropped bucket did not start full: %v", err)
	}
}

// Progress callbacks run outside the scheduler's lock: a callback may call
// back into the scheduler, and a slow one delays only its own job.
func TestSchedulerProgressOutsideLock(t *testing.T) {
	g := newGate()
	s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 10})
	a := submit(t, s, "a", "a")
	c := g.next(t, "a")

	entered := make(chan executor.Stats, 1)
	release := make(chan struct{})
	slowDone := make(chan reply, 1)
	go func() {
		res, err := s.Submit(context.Background(), executor.Job{User: "slow", Request: executor.Request{Code: "slow"}, Progress: func(p executor.Progress) {
			if p.State == executor.StateQueued && p.Ahead == 0 {
				entered <- s.Stats()
				<-release
			}
		}})
		slowDone <- reply{res, err}
	}()
	select {
	case st := <-entered:
		if st.Queued != 1 {
			t.Errorf("stats from the callback %+v, want 1 queued", st)
		}
	case <-time.After(hang):
		t.Fatal("no progress")
	}
	d := submit(t, s, "d", "d")
	d.queued(t, 1)
	c.finish()
	a.ok(t)
	close(release)
	g.next(t, "slow").finish()
	g.next(t, "d").finish()
	d.ok(t)
	if r := <-slowDone; r.err != nil {
		t.Fatal(r.err)
	}
}

type finished struct {
	outcome string
	d       time.Duration
}

// recMetrics records what the scheduler reports.
type recMetrics struct {
	mu       sync.Mutex
	finished []finished
	depths   []int
	limited  int
}

func (m *recMetrics) RunFinished(outcome string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished = append(m.finished, finished{outcome, d})
}

func (m *recMetrics) QueueDepth(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.depths = append(m.depths, n)
}

func (m *recMetrics) RateLimited() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limited++
}

func (m *recMetrics) count(outcome string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, f := range m.finished {
		if f.outcome == outcome {
			n++
		}
	}
	return n
}

func (m *recMetrics) finishedRuns() []finished {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]finished(nil), m.finished...)
}

func (m *recMetrics) rateLimited() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.limited
}

func (m *recMetrics) lastDepth() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.depths) == 0 {
		return -1
	}
	return m.depths[len(m.depths)-1]
}

// Users served while the scheduler never goes idle are forgotten too, once
// more of them linger than can be queued or running.
func TestSchedulerForgetsServedUsersWhileBusy(t *testing.T) {
	g := newGate()
	r := fakeRunner{run: func(ctx context.Context, req executor.Request) (executor.Result, error) {
		if req.Code == "block" {
			return g.Run(ctx, req)
		}
		return instant.Run(ctx, req)
	}}
	const concurrency, queue = 2, 3
	s := newScheduler(t, r, executor.Config{Concurrency: concurrency, QueueSize: queue})
	block := submit(t, s, "x", "block")
	c := g.next(t, "block")
	for i := range 100 {
		if err := submitNow(s, fmt.Sprintf("u%d", i), "x"); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Users > 2*(concurrency+queue)+1 {
			t.Fatalf("after %d users: %d tracked, want at most %d", i+1, st.Users, 2*(concurrency+queue)+1)
		}
	}
	c.finish()
	block.ok(t)
	if st := s.Stats(); st.Users != 0 {
		t.Errorf("%d users tracked once idle, want 0", st.Users)
	}
}

func TestSchedulerLogsRejections(t *testing.T) {
	tests := []struct {
		name string
		cfg  executor.Config
		want string
	}{
		{"busy", executor.Config{Concurrency: 1, QueueSize: 1}, `level=INFO msg="submission refused: queue full" user=c`},
		{"rate", executor.Config{Concurrency: 1, QueueSize: 1, UserRate: 0.001}, `level=DEBUG msg="submission rate limited" user=a`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf syncbuf.Buffer
			tt.cfg.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			r := fakeRunner{run: func(ctx context.Context, req executor.Request) (executor.Result, error) {
				if req.Code == "block" {
					<-ctx.Done()
					return executor.Result{}, ctx.Err()
				}
				return instant.Run(ctx, req)
			}}
			s := newScheduler(t, r, tt.cfg)
			if err := submitNow(s, "a", "x"); err != nil {
				t.Fatal(err)
			}
			submit(t, s, "x", "block").started(t)
			submit(t, s, "b", "b").queued(t, 0)
			if submitNow(s, "a", "x") == nil || submitNow(s, "c", "x") == nil {
				t.Fatal("submission accepted, want refused")
			}
			if !strings.Contains(buf.String(), tt.want) {
				t.Errorf("log\n%s\nlacks %s", buf.String(), tt.want)
			}
		})
	}
}

// TestSchedulerSetConcurrency follows a changing limit, as remote executors
// come and go: raising it starts queued jobs at once; lowering it lets the
// running ones finish and starts no more until they are under it.
func TestSchedulerSetConcurrency(t *testing.T) {
	g := newGate()
	s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 10})
	a := submit(t, s, "a", "a")
	ca := g.next(t, "a")
	a.started(t)
	b := submit(t, s, "b", "b")
	b.queued(t, 0)
	c := submit(t, s, "c", "c")
	c.queued(t, 1)
	wantStats(t, s, 1, 2)

	s.SetConcurrency(3)
	// b and c start together, in either order.
	started := map[string]*call{}
	for range 2 {
		select {
		case cl := <-g.calls:
			started[cl.req.Code] = cl
		case <-time.After(hang):
			t.Fatalf("only %d of b and c started", len(started))
		}
	}
	if started["b"] == nil || started["c"] == nil {
		t.Fatalf("started %v, want b and c", started)
	}
	wantStats(t, s, 3, 0)

	s.SetConcurrency(1)
	s.SetConcurrency(0) // ignored
	d := submit(t, s, "d", "d")
	d.queued(t, 0)
	ca.finish()
	a.ok(t)
	started["b"].finish()
	b.ok(t)
	g.idle(t)
	wantStats(t, s, 1, 1)
	started["c"].finish()
	c.ok(t)
	g.next(t, "d").finish()
	d.ok(t)
	wantStats(t, s, 0, 0)
}
