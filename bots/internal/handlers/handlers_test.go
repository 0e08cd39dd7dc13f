package handlers

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/internal/eventually"
	"github.com/runblock/runblock/internal/syncbuf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newGroup(t *testing.T, max int) (*Group, *syncbuf.Buffer) {
	t.Helper()
	var logs syncbuf.Buffer
	g := New(max, slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() {
		if err := g.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return g, &logs
}

// blocked starts a handler on g that waits for release; it reports
// whether Go took it.
func blocked(g *Group, release <-chan struct{}) bool {
	return g.Go("blocked", func(context.Context) { <-release })
}

// TestGoBoundsTheHandlersInFlight proves Go runs at most max handlers at
// once, drops the next with a log line naming its event, and takes new
// ones once a slot is free again.
func TestGoBoundsTheHandlersInFlight(t *testing.T) {
	g, logs := newGroup(t, 2)
	release := make(chan struct{})
	for i := range 2 {
		if !blocked(g, release) {
			t.Fatalf("handler %d of 2 was dropped", i)
		}
	}
	ran := make(chan struct{})
	if g.Go("third", func(context.Context) { close(ran) }) {
		t.Fatal("a third handler ran beside two in flight, max 2")
	}
	if got := logs.String(); !strings.Contains(got, "too many events in flight") || !strings.Contains(got, "event=third") {
		t.Errorf("log %q, want the drop of event third", got)
	}
	close(release)
	eventually.True(t, func() bool { return g.Go("fourth", func(context.Context) {}) }, "no slot came free after the handlers returned")
}

// TestPanicIsLoggedAndFreesItsSlot proves a handler's panic is logged with
// its event and value, and the Group goes on taking handlers in its slot.
func TestPanicIsLoggedAndFreesItsSlot(t *testing.T) {
	g, logs := newGroup(t, 1)
	if !g.Go("boom", func(context.Context) { panic("kaboom") }) {
		t.Fatal("the handler was dropped")
	}
	eventually.True(t, func() bool { return strings.Contains(logs.String(), "panicked") }, "the panic was not logged: %q", logs.String())
	if got := logs.String(); !strings.Contains(got, "event=boom") || !strings.Contains(got, "panic=kaboom") {
		t.Errorf("log %q, want the event and the panic's value", got)
	}
	eventually.True(t, func() bool { return g.Go("after", func(context.Context) {}) }, "the panicking handler kept its slot")
}

// TestStopRefusesNewHandlersOnly proves that after Stop, Go and Do refuse
// (without running fn) while a handler already in flight runs to its end.
func TestStopRefusesNewHandlersOnly(t *testing.T) {
	g, _ := newGroup(t, 4)
	release, finished := make(chan struct{}), make(chan error, 1)
	g.Go("in flight", func(ctx context.Context) {
		<-release
		finished <- ctx.Err()
	})
	g.Stop()
	ran := false
	if g.Go("late", func(context.Context) { ran = true }) || g.Do(func(context.Context) { ran = true }) || ran {
		t.Fatal("a handler ran after Stop")
	}
	close(release)
	if err := <-finished; err != nil {
		t.Errorf("the handler in flight saw its context end: %v", err)
	}
}

// TestDoRunsInTheCallersGoroutine proves Do has run fn when it returns
// (the race detector would see fn's write otherwise) and passes the
// Group's context.
func TestDoRunsInTheCallersGoroutine(t *testing.T) {
	g, _ := newGroup(t, 1)
	var got context.Context
	if !g.Do(func(ctx context.Context) { got = ctx }) {
		t.Fatal("Do refused on an open Group")
	}
	if got == nil || got.Err() != nil {
		t.Fatalf("fn's context %v, want the Group's live context", got)
	}
}

// TestCloseDrainsThenCancels proves Close waits for the handlers in
// flight, Go's and Do's, without ending their context while ctx lasts,
// returns nil once they are done, and then ends their context.
func TestCloseDrainsThenCancels(t *testing.T) {
	g, _ := newGroup(t, 4)
	release := make(chan struct{})
	var during atomic.Value
	var ctxs [2]context.Context
	started := make(chan struct{}, 2)
	g.Go("go", func(ctx context.Context) {
		ctxs[0] = ctx
		started <- struct{}{}
		<-release
		during.Store(ctx.Err() == nil)
	})
	go g.Do(func(ctx context.Context) {
		ctxs[1] = ctx
		started <- struct{}{}
		<-release
	})
	<-started
	<-started
	closed := make(chan error, 1)
	go func() { closed <- g.Close(context.Background()) }()
	eventually.True(t, func() bool { return !g.Go("probe", func(context.Context) {}) }, "Close did not refuse new handlers")
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with two handlers in flight", err)
	default:
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("Close = %v, want nil after the handlers drained", err)
	}
	if ok, _ := during.Load().(bool); !ok {
		t.Error("the handler's context ended while Close was still draining")
	}
	for i, ctx := range ctxs {
		if ctx.Err() == nil {
			t.Errorf("handler %d's context still live after Close", i)
		}
	}
}

// TestClosePastItsDeadlineCancelsAndWaits proves a Close whose ctx ends
// first cancels the handlers' context, waits for them to return, and
// says so in an error wrapping ctx's.
func TestClosePastItsDeadlineCancelsAndWaits(t *testing.T) {
	g, _ := newGroup(t, 1)
	var returned atomic.Bool
	started := make(chan struct{})
	g.Go("stuck", func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		returned.Store(true)
	})
	<-started
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	err := g.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "replies still in flight") {
		t.Fatalf("Close = %v, want replies still in flight wrapping the deadline", err)
	}
	if !returned.Load() {
		t.Error("Close returned before the cancelled handler did")
	}
}
