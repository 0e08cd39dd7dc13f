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
	// A pooled sandbox waits for its snippet: a forked one's init counts
	// nothing until it comes (proc.sleep, run wakes it).
	sleeping := func(ctx context.Context) (*proc, error) {
		sb, err := start(ctx)
		if err == nil {
			sb.sleep()
		}
		return sb, err
	}
	p := &pool{log: log, start: sleeping, idle: make(chan *proc), cancel: cancel}
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
		select {
		case p.idle <- sb:
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
