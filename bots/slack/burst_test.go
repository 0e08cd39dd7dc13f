package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakeslack"
)

// epoch is the scheduler's stopped clock: a refusal's retry time does not
// depend on how long the handlers took.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// runFunc is an executor.Runner whose Run is a func.
type runFunc func(ctx context.Context, req executor.Request) (executor.Result, error)

func (f runFunc) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	return f(ctx, req)
}

// TestBurstRunsTheFirstMessage: ten quick messages from one user run the
// first; the rest are refused with a retry time, whatever the timing of the
// handlers (the first one's Slack calls are slowed down here).
func TestBurstRunsTheFirstMessage(t *testing.T) {
	t.Parallel()
	started, release := make(chan string, 10), make(chan struct{})
	sched := executor.NewScheduler(runFunc(func(ctx context.Context, req executor.Request) (executor.Result, error) {
		started <- req.Code
		select {
		case <-release:
		case <-ctx.Done():
		}
		return executor.Result{Success: true, Stdout: "ran " + req.Code + "\n"}, nil
	}), executor.Config{Concurrency: 2, MaxPerUser: 1, RunTimeout: 7 * time.Second, Clock: func() time.Time { return epoch },
		UserRate: executor.DefaultUserRate, UserBurst: executor.DefaultUserBurst})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = sched.Close(ctx)
	})
	h := start(t, Config{Channels: []string{"C0RUN"}}, sched, true)
	h.fake.Script("reactions.add", fakeslack.Response{Status: 429, RetryAfter: 1})
	u := h.user()
	var msgs []fakeslack.Message
	for i := range 10 {
		m := h.message("C0RUN", u, fmt.Sprintf("```print(%d)```", i))
		h.fake.SendEvent(messageEvent(m, "channel"))
		msgs = append(msgs, m)
	}
	for _, m := range msgs[1:] {
		c, err := h.fake.WaitCall(h.ctx, "chat.postEphemeral", func(c fakeslack.Call) bool { return c.Get("thread_ts") == m.TS })
		if err != nil {
			t.Fatalf("no refusal in %s's thread: %v", m.Text, err)
		}
		if text := c.Get("text"); !strings.Contains(text, "Slow down") || !strings.Contains(text, "try again in 7 s") {
			t.Errorf("refusal %q, want \"Slow down\" and \"try again in 7 s\"", text)
		}
	}
	select {
	case code := <-started:
		if code != "print(0)" {
			t.Fatalf("ran %q, want the first message's print(0)", code)
		}
	case <-h.ctx.Done():
		t.Fatal("nothing ran")
	}
	close(release)
	h.reply(msgs[0], "ran print(0)")
}
