package discord_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
)

// runFunc is an executor.Runner whose Run is a func.
type runFunc func(ctx context.Context, req executor.Request) (executor.Result, error)

func (f runFunc) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	return f(ctx, req)
}

// TestBurstRunsTheFirstMessage proves ten quick messages from one user run
// the first and refuse the rest with a retry time, even when the first
// message's handler reaches the scheduler only after all were sent.
func TestBurstRunsTheFirstMessage(t *testing.T) {
	t.Parallel()
	started, release := make(chan string, 10), make(chan struct{})
	epoch := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // a stopped clock: the retry time is exact
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
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = sched.Close(ctx)
	})
	// The first message's handler reaches the scheduler only once every
	// message has been sent (as on a loaded machine): it must still be the
	// one that runs.
	late := make(chan struct{})
	e := start(t, fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		if job.Request.Code == "print(0)" {
			select {
			case <-late:
			case <-ctx.Done():
			}
		}
		return sched.Submit(ctx, job)
	}), nil)
	var msgs []*discordgo.Message
	for i := range 10 {
		msgs = append(msgs, e.say(fmt.Sprintf("!run `print(%d)`", i)))
	}
	close(late)
	for _, m := range msgs[1:] {
		text := e.replyTo(e.channel, m.ID).Content()
		if !strings.Contains(text, "Slow down") || !strings.Contains(text, "try again in 7 s") {
			t.Errorf("refusal %q, want \"Slow down\" and \"try again in 7 s\"", text)
		}
	}
	select {
	case code := <-started:
		if code != "print(0)" {
			t.Fatalf("ran %q, want the first message's print(0)", code)
		}
	case <-e.ctx.Done():
		t.Fatal("nothing ran")
	}
	close(release)
	if text := e.replyTo(e.channel, msgs[0].ID).Content(); !strings.Contains(text, "ran print(0)") {
		t.Fatalf("reply %q, want the run of print(0)", text)
	}
}
