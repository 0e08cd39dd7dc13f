package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// poolMaxAge bounds how long a pre-started sandbox waits for a snippet
// before it is replaced by a fresh one.
const poolMaxAge = 5 * time.Minute

// poolRefillAfter bounds how long a filler waits for the run that took its
// sandbox to end before it starts the next one (see fill).
const poolRefillAfter = 20 * time.Millisecond

// refillTimer is the pools' wait before a start beside a run still under
// way.
func refillTimer() <-chan time.Time { return time.After(poolRefillAfter) }

// pool keeps pre-started sandboxes: fully isolated, guard in place, waiting
// for one snippet on their request pipe. Each of its fillers holds one ready
// sandbox and offers it until a run takes it, then starts the next once
// that run has ended (see fill). A sandbox runs one snippet and is
// destroyed; nothing passes between runs.
type pool struct {
	log    *slog.Logger
	start  func(context.Context) (*proc, error) // one sandbox with the executor's default limits
	idle   chan *proc
	cancel context.CancelFunc
	closed <-chan struct{} // the fillers' context's Done
	wg     sync.WaitGroup
	// wait: a run that finds none idle waits for a start under way (see
	// take). Set where the starts are forks, a few ms of CPU each; a
	// sandbox started from scratch spends much of its 20 to 30 ms waiting
	// (exec, loading python), so under load a run's own start beside the
	// fillers' adds throughput (HumanEval at concurrency 2 took 1.96 s
	// waiting, 1.55 s not, on Debian's python in one bench run each).
	wait bool
	// refillAfter fires when a filler stops waiting for the run that took
	// its sandbox to end: refillTimer, or a test's clock.
	refillAfter func() <-chan time.Time

	mu       sync.Mutex
	starting int           // fillers starting a sandbox now
	waiting  int           // runs in take waiting for one of those starts
	failed   chan struct{} // closed, and made anew, when a start fails
}

// newPool is the executor's pool: pre-forked children of the plain fork
// server, or sandboxes started from scratch without one.
func newPool(e *Executor, size int) *pool {
	pl := *e.plan
	pl.preload = e.cfg.Preload.fromScratch()
	return startPool(e.log, size, e.fork != nil, refillTimer, func(ctx context.Context) (*proc, error) {
		return e.start(ctx, &pl, e.defaultLimits(), e.fork.spawn)
	})
}

// newPlotPool is the preloaded fork server's pool (see prefork): one
// pre-forked child, for the snippets that import a preload, which also
// waits while the preloaded fork server is down (the plain one then takes
// them).
func newPlotPool(e *Executor, preloaded *forkServer) *pool {
	return startPool(e.log, 1, true, refillTimer, func(ctx context.Context) (*proc, error) {
		return preloaded.prefork(ctx, e.defaultLimits(), e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
	})
}

func startPool(log *slog.Logger, size int, wait bool, refillAfter func() <-chan time.Time, start func(context.Context) (*proc, error)) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	// A pooled sandbox waits for its snippet: a forked one's init counts
	// nothing until it comes (proc.sleep, run wakes it).
	sleeping := func(ctx context.Context) (*proc, error) {
		sb, err := start(ctx)
		if err == nil {
			sb.sleep()
		}
		return sb, err
	}
	p := &pool{log: log, start: sleeping, idle: make(chan *proc), cancel: cancel, closed: ctx.Done(), wait: wait, refillAfter: refillAfter, failed: make(chan struct{})}
	for range size {
		p.wg.Go(func() { p.fill(ctx) })
	}
	return p
}

// fill keeps one ready sandbox on offer until ctx ends. Once a run took
// it, the next start waits until that run has ended, or poolRefillAfter
// has passed: started at once, it took the CPUs beside the run (a fork's
// start is 2 to 3 ms of CPU). A pre-forked print('hello') arriving alone
// answered in 2.5 ms p50 with the start beside it and 2.2 to 2.5 ms with
// the start after it (Debian's python, two runs each); in `runblock
// bench`, 0.25x to 0.28x bare python's before, 0.20x to 0.23x after (four
// runs each). Under load, the runs that find none idle start their own
// beside it, and the CPUs stay busy: HumanEval at concurrency 2
// (BenchmarkHumanEval/full-prefork/c2) took 0.56 to 0.62 s before and
// 0.55 to 0.58 s after (three runs each).
func (p *pool) fill(ctx context.Context) {
	backoff := time.NewTimer(0)
	defer backoff.Stop()
	<-backoff.C
	for ctx.Err() == nil {
		p.mu.Lock()
		p.starting++
		p.mu.Unlock()
		sb, err := p.start(ctx)
		p.mu.Lock()
		p.starting--
		if err != nil {
			close(p.failed)
			p.failed = make(chan struct{})
		}
		p.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, errForkServerDown) {
				p.log.Error("pool: start sandbox", "err", err)
			}
			backoff.Reset(time.Second)
			select {
			case <-backoff.C:
			case <-ctx.Done():
			}
			continue
		}
		old := time.NewTimer(poolMaxAge)
		select {
		case p.idle <- sb:
			select {
			case <-sb.waited:
			case <-p.refillAfter():
			case <-ctx.Done():
			}
		case <-sb.waited:
			p.log.Warn("pool: idle sandbox died; replacing it")
			sb.destroy()
		case <-old.C:
			sb.destroy()
		case <-ctx.Done():
			sb.destroy()
		}
		old.Stop()
	}
}

// take returns a ready sandbox: one idle now or, for a run alone (no
// other run under way) in a pool that waits, when none is idle but a
// filler is starting one that no other run waits for, that one once it
// is ready. It started before this run came, so it is ready before a
// sandbox this run would start now, and the run does not start another
// beside it on the same CPUs (back to back, that made every third run
// start its own: 10.5 ms at p50 where the others took 2.8). Beside other
// runs, a run starts its own: starts spend part of their time waiting on
// one another, and more of them at once kept HumanEval at concurrency 2
// about 7 % faster. nil when there is none to wait for, when that start
// fails, or when ctx ends.
func (p *pool) take(ctx context.Context, alone bool) *proc {
	for {
		select {
		case sb := <-p.idle:
			return p.checked(sb)
		default:
		}
		p.mu.Lock()
		if !alone || !p.wait || p.starting <= p.waiting {
			p.mu.Unlock()
			return nil
		}
		p.waiting++
		failed := p.failed
		p.mu.Unlock()
		var sb *proc
		again := false
		select {
		case sb = <-p.idle:
		case <-failed:
			again = true // another start may be under way
		case <-ctx.Done():
		case <-p.closed:
		}
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
		if !again {
			return p.checked(sb)
		}
	}
}

// checked returns sb, an idle sandbox just taken, or nil when there is
// none or it died while idle (destroyed then).
func (p *pool) checked(sb *proc) *proc {
	if sb == nil || sb.alive() {
		return sb
	}
	sb.destroy()
	return nil
}

// close stops the fillers and destroys their idle sandboxes.
func (p *pool) close() {
	p.cancel()
	p.wg.Wait()
}
