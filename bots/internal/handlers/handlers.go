// Package handlers runs a chat adapter's event handlers: each in a goroutine
// the Group owns, a bounded number at once, under a context that Close
// cancels only once its deadline has passed (drain, then cancel).
package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// Group owns an adapter's handlers.
type Group struct {
	log   *slog.Logger
	slots chan struct{}

	mu       sync.Mutex
	closing  bool
	inflight sync.WaitGroup

	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a Group running at most max handlers at once; log gets the
// dropped and panicking ones.
func New(max int, log *slog.Logger) *Group {
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{log: log, slots: make(chan struct{}, max), ctx: ctx, cancel: cancel}
}

// Go runs fn in a goroutine of the Group, unless the Group is closing or max
// handlers are in flight (then it logs the drop); it reports whether fn
// runs. A panic in fn is logged and the adapter carries on. fn's context
// ends when Close gives up waiting.
func (g *Group) Go(what string, fn func(ctx context.Context)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	select {
	case g.slots <- struct{}{}:
	default:
		g.log.Warn("too many events in flight; dropping one", "event", what)
		return false
	}
	g.inflight.Add(1)
	go func() {
		defer g.inflight.Done()
		defer func() { <-g.slots }()
		defer func() {
			if p := recover(); p != nil {
				g.log.Error("handling an event panicked; the bot carries on", "event", what, "panic", p, "stack", string(debug.Stack()))
			}
		}()
		fn(g.ctx)
	}()
	return true
}

// Do runs fn in the calling goroutine as one of the Group's handlers (Close
// waits for it), unless the Group is closing; it reports whether fn ran.
func (g *Group) Do(fn func(ctx context.Context)) bool {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return false
	}
	g.inflight.Add(1)
	g.mu.Unlock()
	defer g.inflight.Done()
	fn(g.ctx)
	return true
}

// Stop refuses new handlers; those in flight carry on.
func (g *Group) Stop() {
	g.mu.Lock()
	g.closing = true
	g.mu.Unlock()
}

// Close refuses new handlers and waits for those in flight until ctx ends;
// then it cancels their context and waits for them to return. It returns
// an error when ctx ended first.
func (g *Group) Close(ctx context.Context) error {
	g.Stop()
	drained := make(chan struct{})
	go func() {
		g.inflight.Wait()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("replies still in flight: %w", ctx.Err())
		g.cancel()
		<-drained
	}
	g.cancel()
	return err
}
