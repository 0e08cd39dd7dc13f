package discord_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/fakediscord"
	"github.com/runblock/runblock/internal/httpserver"
)

// remoteScheduler is a bot's scheduler in a scaled-out deployment: its
// runs go to a `runblock executor` (the execute API in front of a real
// sandbox) on 127.0.0.1 through the remote runner.
func remoteScheduler(t *testing.T) *executor.Scheduler {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Pool: 1, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	exSched := executor.NewScheduler(ex, executor.Config{Concurrency: 1, MaxPerUser: 100})
	svc := api.NewService(api.ServiceConfig{
		Addr:      "127.0.0.1:0",
		Runner:    ex,
		Scheduler: exSched,
		Load:      func() httpserver.Load { return httpserver.Load{Capacity: 1, QueueSize: 10} },
		API:       api.Config{Limits: wire.Limits{Timeout: 10 * time.Second, MemoryBytes: 256 << 20, MaxCodeBytes: 1 << 20}},
	})
	if err := svc.Open(ctx); err != nil {
		t.Fatal(err)
	}
	rr, err := remote.New(ctx, remote.Config{URLs: []string{"http://" + svc.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	sched := executor.NewScheduler(rr, executor.Config{Concurrency: 1, MaxPerUser: 100})
	t.Cleanup(func() {
		_ = sched.Close(context.Background())
		rr.Close()
		_ = exSched.Close(context.Background())
		_ = svc.Close(context.Background())
		ex.Close()
	})
	return sched
}

// seenRunner tells when the output so far of a run first holds want.
type seenRunner struct {
	executor.Submitter
	want string
	seen chan struct{}
	once sync.Once
}

func (r *seenRunner) Submit(ctx context.Context, job executor.Job) (executor.Result, error) {
	if out := executor.OutputOf(ctx); out != nil {
		ctx = executor.WithOutput(ctx, func(stdout, stderr string) {
			out(stdout, stderr)
			if strings.Contains(stdout, r.want) {
				r.once.Do(func() { close(r.seen) })
			}
		})
	}
	return r.Submitter.Submit(ctx, job)
}

// TestLiveOutputThroughARemoteExecutor: a bot whose runs go to a remote
// executor shows a long run's output so far, as one with its own sandbox
// does: the executor streams it, the live reply shows it, and the result
// replaces it in the same message.
func TestLiveOutputThroughARemoteExecutor(t *testing.T) {
	t.Parallel()
	clock := fakerunner.NewClock()
	runner := &seenRunner{Submitter: remoteScheduler(t), want: "step one", seen: make(chan struct{})}
	e := start(t, runner, func(c *discord.Config) { c.LiveClock, c.NoSessions = clock, true })
	m := e.say("!run ```python\nimport time\nprint('step one', flush=True)\ntime.sleep(3)\nprint('step two')\n```")
	select {
	case <-runner.seen:
	case <-e.ctx.Done():
		t.Fatal("the run's output never reached the bot while it ran")
	}
	clock.Advance(2 * time.Second)
	first, err := fake.WaitRequest(e.ctx, isReplyTo(e.channel, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if c := first.Content(); !strings.HasPrefix(c, "**Running** · 2 s\n") || !strings.Contains(c, "step one") || strings.Contains(c, "step two") {
		t.Fatalf("live reply %q", c)
	}
	var reply discordgo.Message
	if err := first.DecodeResponse(&reply); err != nil {
		t.Fatal(err)
	}
	edit := fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply.ID)
	final, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
		return edit(r) && r.Status == 200 && strings.HasPrefix(r.Content(), "**OK**")
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := final.Content(); strings.Count(c, "step one") != 1 || strings.Count(c, "step two") != 1 {
		t.Fatalf("result %q", c)
	}
	if posts := fake.Requests(isReplyTo(e.channel, m.ID)); len(posts) != 1 {
		t.Fatalf("%d replies posted, want 1", len(posts))
	}
}
