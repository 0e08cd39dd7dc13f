package slack

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
)

// stepClock is an answer.Clock the test moves on.
type stepClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters map[chan time.Time]time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	if c.waiters == nil {
		c.waiters = make(map[chan time.Time]time.Time)
	}
	c.waiters[ch] = t
	return ch
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for ch, at := range c.waiters {
		if !at.After(c.now) {
			ch <- c.now
			delete(c.waiters, ch)
		}
	}
}

// TestLiveOutputUpdatesTheReply: a run still going after the grace posts
// its output so far with the real slack-go client, and the result
// replaces it with chat.update in the same message: one post, the output
// once.
func TestLiveOutputUpdatesTheReply(t *testing.T) {
	t.Parallel()
	clk := &stepClock{now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	outputs, written, end := make(chan string), make(chan struct{}), make(chan struct{})
	runner := &fakerunner.Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		all := ""
		for {
			select {
			case all = <-outputs:
				if out := executor.OutputOf(ctx); out != nil {
					out(all, "")
				}
				written <- struct{}{}
			case <-end:
				return executor.Result{Success: true, Stdout: all, Duration: 4 * time.Second}, nil
			}
		}
	}}
	h := start(t, Config{NoSessions: true, LiveClock: clk}, runner, true)
	m := h.mention(h.channel(), h.user(), "```loop()```")
	outputs <- "step one\n"
	<-written
	clk.Advance(2 * time.Second)
	live := h.reply(m, "*Running* · 2 s")
	if !strings.Contains(live.Text, "step one") {
		t.Fatalf("live reply %q", live.Text)
	}
	close(end)
	r := h.reply(m, "*OK* · 4 s")
	if r.TS != live.TS || strings.Count(r.Text, "step one") != 1 {
		t.Fatalf("result %+v, want the live reply %s updated, its output once", r, live.TS)
	}
	h.settle()
	if n := len(h.fake.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("%d posts, want 1", n)
	}
	if n := len(h.fake.Calls("chat.update")); n != 1 {
		t.Fatalf("%d updates, want 1 (the result)", n)
	}
}
