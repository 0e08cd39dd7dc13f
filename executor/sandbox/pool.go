package sandbox

import (
	"context"
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
	e      *Executor
	plan   *plan // the executor's, with Config.Preload
	idle   chan *proc
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newPool(e *Executor, size int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	pl := *e.plan
	pl.preload = e.cfg.Preload.fromScratch()
	p := &pool{e: e, plan: &pl, idle: make(chan *proc), cancel: cancel}
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
		sb, err := p.e.start(ctx, p.plan, p.e.defaultLimits(), p.e.fork.spawn)
		if err != nil {
			if ctx.Err() == nil {
				p.e.log.Error("pool: start sandbox", "err", err)
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
			p.e.log.Warn("pool: idle sandbox died; replacing it")
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
