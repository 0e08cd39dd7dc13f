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

// pool keeps pre-started sandboxes: fully isolated, guard in place, waiting
// for one snippet on their request pipe. Each of its fillers holds one ready
// sandbox and offers it until a run takes it, then starts the next. A
// sandbox runs one snippet and is destroyed; nothing passes between runs.
type pool struct {
	log    *slog.Logger
	start  func(context.Context) (*proc, error) // one sandbox with the executor's default limits
	idle   chan *proc
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards offering, the fillers holding a ready sandbox; running,
	// the runs in the sandboxes taken; holding, the fillers holding
	// their next start back (holdBack); and taken, closed (and
	// replaced) each time a run takes one.
	mu       sync.Mutex
	offering int
	running  int
	holding  int
	taken    chan struct{}
}

// newPool is the executor's pool: pre-forked children of the plain fork
// server, or sandboxes started from scratch without one.
func newPool(e *Executor, size int) *pool {
	pl := *e.plan
	pl.preload = e.cfg.Preload.fromScratch()
	return startPool(e.log, size, func(ctx context.Context) (*proc, error) {
		return e.start(ctx, &pl, e.defaultLimits(), e.fork.spawn)
	})
}

// newPlotPool is the preloaded fork server's pool (see prefork): one
// pre-forked child, for the snippets that import a preload, which also
// waits while the preloaded fork server is down (the plain one then takes
// them).
func newPlotPool(e *Executor, preloaded *forkServer) *pool {
	return startPool(e.log, 1, func(ctx context.Context) (*proc, error) {
		return preloaded.prefork(ctx, e.defaultLimits(), e.cfg.KeepBytes, e.cfg.MaxOutputBytes)
	})
}

func startPool(log *slog.Logger, size int, start func(context.Context) (*proc, error)) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{log: log, start: start, idle: make(chan *proc), cancel: cancel, taken: make(chan struct{})}
	for range size {
		p.wg.Go(func() { p.fill(ctx) })
	}
	return p
}

// fill keeps one ready sandbox on offer until ctx ends.
func (p *pool) fill(ctx context.Context) {
	backoff := time.NewTimer(0)
	defer backoff.Stop()
	<-backoff.C
	for ctx.Err() == nil {
		sb, err := p.start(ctx)
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
		p.offer(1)
		select {
		case p.idle <- sb:
			old.Stop()
			p.holdBack(ctx, sb)
			continue
		case <-sb.waited:
			p.log.Warn("pool: idle sandbox died; replacing it")
			sb.destroy()
		case <-old.C:
			sb.destroy()
		case <-ctx.Done():
			sb.destroy()
		}
		p.offer(-1)
		old.Stop()
	}
}

// offer counts a filler that starts (1) or ends (-1) offering a sandbox.
func (p *pool) offer(n int) {
	p.mu.Lock()
	p.offering += n
	p.mu.Unlock()
}

// holdBack counts the run that took sb, and holds the next start back
// while that run runs, if the sandboxes on offer are enough for the next
// run of each run taken (a single client's runs, one after another),
// until it ends or a run takes another: a start takes a CPU from the run
// beside it (a fork and a lockdown), which then answers later, while the
// next run would find a sandbox anyway. Else, with fewer on offer (runs
// at once), it starts at once. It also ends the others' holds.
func (p *pool) holdBack(ctx context.Context, sb *proc) {
	p.mu.Lock()
	p.offering--
	p.running++
	close(p.taken)
	p.taken = make(chan struct{})
	hold, taken := p.offering >= p.running, p.taken
	if hold {
		p.holding++
	}
	p.mu.Unlock()
	p.wg.Go(func() {
		select {
		case <-sb.waited:
		case <-ctx.Done():
		}
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	})
	if !hold {
		return
	}
	select {
	case <-sb.waited:
	case <-taken:
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.holding--
	p.mu.Unlock()
}

// take returns a ready sandbox, or nil when none is idle right now.
func (p *pool) take() *proc {
	select {
	case sb := <-p.idle:
		if sb.alive() {
			return sb
		}
		sb.destroy()
		return nil
	default:
		return nil
	}
}

// close stops the fillers and destroys their idle sandboxes.
func (p *pool) close() {
	p.cancel()
	p.wg.Wait()
}
