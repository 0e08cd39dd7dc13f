package discord_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakediscord"
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

// TestLiveOutputEditsTheReplyThroughARateLimit: a run still going after
// the grace posts its output so far, its next output is edited into that
// reply through a 429 (waited out for its retry_after), and the result
// replaces it in the same message: one reply, no output twice.
func TestLiveOutputEditsTheReplyThroughARateLimit(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
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
	e := start(t, runner, func(c *discord.Config) { c.LiveClock, c.NoSessions = clock, true })
	path := "/channels/" + e.channel + "/messages"
	m := e.say("!run " + block)
	outputs <- "step one\n"
	<-written
	clock.Advance(2 * time.Second)
	first, err := fake.WaitRequest(e.ctx, isReplyTo(e.channel, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if c := first.Content(); !strings.HasPrefix(c, "**Running** · 2 s\n") || !strings.Contains(c, "step one") {
		t.Fatalf("live reply %q", c)
	}
	var reply discordgo.Message
	if err := first.DecodeResponse(&reply); err != nil {
		t.Fatal(err)
	}
	edit := fakediscord.Match("PATCH", path+"/"+reply.ID)
	fake.RateLimitNext(edit, 200*time.Millisecond, false)
	outputs <- "step one\nstep two\n"
	<-written
	clock.Advance(time.Second)
	live, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool { return edit(r) && r.Status == 200 })
	if err != nil {
		t.Fatal(err)
	}
	if c := live.Content(); !strings.HasPrefix(c, "**Running** · 3 s\n") || !strings.Contains(c, "step two") {
		t.Fatalf("live edit %q", c)
	}
	close(end)
	final, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
		return edit(r) && r.Status == 200 && strings.HasPrefix(r.Content(), "**OK**")
	})
	if err != nil {
		for _, r := range fake.Requests(func(fakediscord.Request) bool { return true }) {
			t.Logf("%s %s %d %q", r.Method, r.Path, r.Status, r.Content())
		}
		t.Fatal(err)
	}
	if c := final.Content(); strings.Count(c, "step one") != 1 || strings.Count(c, "step two") != 1 {
		t.Fatalf("result %q", c)
	}
	edits := fake.Requests(edit)
	if len(edits) != 3 || edits[0].Status != 429 {
		t.Fatalf("%d edits of the reply (first status %d), want a 429, the live edit and the result", len(edits), edits[0].Status)
	}
	posts := fake.Requests(isReplyTo(e.channel, m.ID))
	if len(posts) != 1 {
		t.Fatalf("%d replies posted, want 1", len(posts))
	}
}
