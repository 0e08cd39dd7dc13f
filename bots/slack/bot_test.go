package slack

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/bots/internal/netretry"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakeslack"
)

func TestOpenFailsFastOnBadTokens(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	defer fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, tc := range []struct {
		name      string
		bot, app  string
		wantError string
	}{
		{"bad bot token", "xoxb-wrong", fakeslack.AppToken, "SLACK_BOT_TOKEN was rejected"},
		{"bad app token", fakeslack.BotToken, "xapp-wrong", "SLACK_APP_TOKEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Config{BotToken: tc.bot, AppToken: tc.app, APIURL: fake.APIURL()}, echo, nil)
			err := b.Open(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.wantError) || !strings.Contains(err.Error(), "invalid_auth") {
				t.Fatalf("Open = %v, want an invalid_auth error naming %s", err, tc.wantError)
			}
			if b.Ready() {
				t.Fatal("Ready after a failed Open")
			}
			if err := b.Close(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOpenWithoutNetwork: Slack out of reach is a network problem, said so
// and retried with backoff, not a token problem.
func TestOpenWithoutNetwork(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/api/"
	l.Close()
	var waits []time.Duration
	retry := netretry.Backoff{Initial: time.Second, Max: 4 * time.Second, Attempts: 4, Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}
	b := New(Config{BotToken: fakeslack.BotToken, AppToken: fakeslack.AppToken, APIURL: closed, Retry: retry}, echo, nil)
	err = b.Open(context.Background())
	var unreachable *netretry.Error
	if !errors.As(err, &unreachable) || !strings.Contains(err.Error(), "cannot reach Slack") || strings.Contains(err.Error(), "SLACK_BOT_TOKEN") {
		t.Fatalf("Open = %v, want a network error that does not blame the token", err)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestMentionRepliesInThreadWithReactions(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	if !h.bot.Ready() {
		t.Fatal("not Ready after Open")
	}
	ch := h.channel()
	m := h.mention(ch, h.user(), "```print(1)```")
	r := h.reply(m, "ran print(1)")
	h.reaction(m, "white_check_mark")
	got, _ := h.fake.Get(ch, m.TS)
	if strings.Contains(strings.Join(got.Reactions, ","), "hourglass") {
		t.Fatalf("⏳ left on the message: %v", got.Reactions)
	}
	post, err := h.fake.WaitCall(h.ctx, "chat.postMessage", nil)
	if err != nil {
		t.Fatal(err)
	}
	if post.Get("parse") != "none" || post.Get("link_names") != "false" || post.Get("unfurl_links") != "false" {
		t.Fatalf("reply options: parse=%q link_names=%q unfurl_links=%q", post.Get("parse"), post.Get("link_names"), post.Get("unfurl_links"))
	}
	h.settle()
	// The message event of the same mention did not run it a second time.
	if n := len(h.fake.BotReplies(ch, m.TS)); n != 1 {
		t.Fatalf("%d replies, want 1: %+v", n, h.fake.BotReplies(ch, m.TS))
	}
	if r.ThreadTS != m.TS {
		t.Fatalf("reply thread %q, want %q", r.ThreadTS, m.TS)
	}
	if rcv, rep, _ := h.metrics.get(); rcv != 1 || rep != 1 {
		t.Fatalf("metrics received=%d replied=%d, want 1, 1", rcv, rep)
	}
}

func TestReplyInExistingThread(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	ch := h.channel()
	parent := h.message(ch, h.user(), "a question")
	m := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: h.user(), ThreadTS: parent.TS, Text: "<@" + fakeslack.BotUserID + "> ```print(2)```"})
	h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": ch, "user": m.User, "text": m.Text, "ts": m.TS, "thread_ts": parent.TS})
	r := h.reply(m, "ran print(2)")
	if r.ThreadTS != parent.TS {
		t.Fatalf("reply in thread %q, want the existing thread %q", r.ThreadTS, parent.TS)
	}
	h.reaction(m, "white_check_mark")
}

func TestNeverAnswersBots(t *testing.T) {
	t.Parallel()
	ch := "C0RUN"
	h := start(t, Config{Channels: []string{ch}}, echo, true)
	own := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: fakeslack.BotUserID, BotID: fakeslack.BotID, Text: "```print('loop')```"})
	h.fake.SendEvent(messageEvent(own, "channel"))
	other := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "```print('llm')```"})
	h.fake.SendEvent(messageEvent(other, "channel"))
	h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": ch, "user": "U0LLM", "bot_id": "B0LLM", "text": "<@U0BOT> ```print(3)```", "ts": other.TS})
	// A person's message after them is answered, so they were seen first.
	m := h.message(ch, h.user(), "```print('human')```")
	h.fake.SendEvent(messageEvent(m, "channel"))
	h.reply(m, "ran print('human')")
	h.settle()
	if n := len(h.fake.BotMessages(ch)); n != 2 { // the bot's own message and its one reply
		t.Fatalf("bot messages = %+v", h.fake.BotMessages(ch))
	}
}

func TestDuplicateDeliveryRunsOnce(t *testing.T) {
	t.Parallel()
	runs := make(chan string, 10)
	counting := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		runs <- job.Request.Code
		return echo(ctx, job)
	})
	h := start(t, Config{}, counting, true)
	ch := h.channel()
	m := h.message(ch, h.user(), "<@U0BOT> ```print(1)```")
	env := h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": ch, "user": m.User, "text": m.Text, "ts": m.TS})
	if err := h.fake.Redeliver(env); err != nil {
		t.Fatal(err)
	}
	h.reply(m, "ran print(1)")
	// slack-go writes acks from its own goroutine: wait for it before Close
	// ends the socket, or the ack may never leave.
	if _, err := h.fake.WaitAck(h.ctx, env); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
}

func TestSlackRateLimitDelaysReply(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	h.fake.Script("chat.postMessage", fakeslack.Response{Status: 429, RetryAfter: 1})
	m := h.mention(h.channel(), h.user(), "```print(1)```")
	h.reply(m, "ran print(1)")
	calls := h.fake.Calls("chat.postMessage")
	if len(calls) != 2 || calls[0].Status != 429 {
		t.Fatalf("postMessage calls: %+v", calls)
	}
}

func TestReconnects(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	for i, drop := range []func() error{
		func() error { return h.fake.Disconnect("refresh_requested") },
		h.fake.Drop,
	} {
		if err := drop(); err != nil {
			t.Fatal(err)
		}
		m := h.mention(h.channel(), h.user(), "```print(1)```")
		h.reply(m, "ran print(1)")
		if err := h.fake.WaitConnections(h.ctx, i+2); err != nil {
			t.Fatal(err)
		}
	}
	h.settle()
	if _, _, rc := h.metrics.get(); rc != 2 {
		t.Fatalf("Reconnected counted %d times, want 2", rc)
	}
}

func TestNoticesAreEphemeral(t *testing.T) {
	t.Parallel()
	h := start(t, Config{Channels: []string{"C0OK"}}, echo, true)
	u := h.user()
	none := h.mention("C0OK", u, "hello there")
	h.ephemeral("C0OK", u, "No code found")
	js := h.mention("C0OK", u, "```js\nconsole.log(1)\n```")
	c := h.ephemeral("C0OK", u, "Only Python")
	if c.Get("thread_ts") != js.TS {
		t.Fatalf("notice thread_ts = %q, want %q", c.Get("thread_ts"), js.TS)
	}
	h.mention("C0ELSEWHERE", u, "```print(1)```")
	h.ephemeral("C0ELSEWHERE", u, "Not in this channel")
	// In a listed channel a message without code is not addressed to the bot.
	quiet := h.message("C0OK", u, "just chatting")
	h.fake.SendEvent(messageEvent(quiet, "channel"))
	last := h.message("C0OK", u, "```print(9)```")
	h.fake.SendEvent(messageEvent(last, "channel"))
	h.reply(last, "ran print(9)")
	h.settle()
	if n := len(h.fake.Calls("chat.postEphemeral")); n != 3 {
		t.Fatalf("%d ephemeral notices, want 3", n)
	}
	if r := h.fake.BotReplies("C0OK", none.TS); len(r) != 0 {
		t.Fatalf("public replies to a notice: %+v", r)
	}
}

func TestRejectionsAreFriendly(t *testing.T) {
	t.Parallel()
	var internal = errors.New("fork: resource temporarily unavailable at /secret/path")
	errs := map[string]error{
		"busy":     &executor.Error{Code: executor.ErrBusy, RetryAfter: 3 * time.Second},
		"limited":  &executor.Error{Code: executor.ErrRateLimited, RetryAfter: 12 * time.Second},
		"large":    executor.Errorf(executor.ErrTooLarge, "code is 2 MiB"),
		"internal": internal,
	}
	failing := fakerunner.Func(func(_ context.Context, job executor.Job) (executor.Result, error) {
		return executor.Result{}, errs[strings.TrimSpace(job.Request.Code)]
	})
	h := start(t, Config{}, failing, true)
	ch, u := h.channel(), h.user()
	h.mention(ch, u, "`busy`")
	h.ephemeral(ch, u, "Busy")
	h.mention(ch, u, "`limited`")
	h.ephemeral(ch, u, "12 s")
	h.mention(ch, u, "`large`")
	h.ephemeral(ch, u, "Too large")
	m := h.mention(ch, u, "`internal`")
	r := h.reply(m, "Something went wrong")
	if strings.Contains(r.Text, "secret") {
		t.Fatalf("internal error echoed into chat: %q", r.Text)
	}
	h.settle()
	if n := strings.Count(h.logs.String(), "/secret/path"); n != 1 {
		t.Fatalf("internal error logged %d times, want once:\n%s", n, h.logs.String())
	}
	got, _ := h.fake.Get(ch, m.TS)
	if len(got.Reactions) != 0 {
		t.Fatalf("reactions left after a failure: %v", got.Reactions)
	}
}

func TestQueuedRunKeepsOneReply(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	queued := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		job.Progress(executor.Progress{State: executor.StateQueued, Ahead: 2})
		<-release
		job.Progress(executor.Progress{State: executor.StateRunning})
		return echo(ctx, job)
	})
	h := start(t, Config{}, queued, true)
	m := h.mention(h.channel(), h.user(), "```print(1)```")
	h.reply(m, "2 ahead")
	h.reaction(m, "hourglass_flowing_sand")
	close(release)
	r := h.reply(m, "ran print(1)")
	h.settle()
	if n := len(h.fake.BotReplies(m.Channel, m.TS)); n != 1 {
		t.Fatalf("%d replies, want the queued one updated: %+v", n, h.fake.BotReplies(m.Channel, m.TS))
	}
	if r.Edits < 1 {
		t.Fatalf("reply edited %d times, want the queued reply replaced by the result", r.Edits)
	}
}

// TestEditShowsItsPlaceInTheQueue: an edit's re-run that waits in the
// queue shows its place in the reply it will replace, as a new message's
// run does.
func TestEditShowsItsPlaceInTheQueue(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	runner := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		if job.Request.Code == "print(2)" {
			job.Progress(executor.Progress{State: executor.StateQueued, Ahead: 1})
			select {
			case <-release:
			case <-ctx.Done():
				return executor.Result{}, ctx.Err()
			}
			job.Progress(executor.Progress{State: executor.StateRunning})
		}
		return echo(ctx, job)
	})
	h := start(t, Config{EditWindow: time.Minute}, runner, true)
	open := sync.OnceFunc(func() { close(release) })
	t.Cleanup(open) // before the bot closes, when the test fails
	m := h.mention(h.channel(), h.user(), "```print(1)```")
	first := h.reply(m, "ran print(1)")
	h.reaction(m, "white_check_mark")
	m = h.edit(m, "<@"+fakeslack.BotUserID+"> ```print(2)```")
	if queued := h.reply(m, "1 ahead"); queued.TS != first.TS {
		t.Fatalf("the queue position went to %s, want the reply %s", queued.TS, first.TS)
	}
	open()
	h.reply(m, "ran print(2)")
	h.reaction(m, "white_check_mark")
	h.settle()
	if n := len(h.fake.BotReplies(m.Channel, m.TS)); n != 1 {
		t.Fatalf("%d replies, want the one reply updated: %+v", n, h.fake.BotReplies(m.Channel, m.TS))
	}
}

func TestCloseWaitsForRunsInFlight(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	release := make(chan struct{})
	slow := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		close(started)
		<-release
		return echo(ctx, job)
	})
	h := start(t, Config{}, slow, true)
	m := h.mention(h.channel(), h.user(), "```print(1)```")
	<-started
	closed := make(chan error, 1)
	go func() { closed <- h.bot.Close(h.ctx) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a run in flight", err)
	default:
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if r := h.fake.BotReplies(m.Channel, m.TS); len(r) != 1 || !strings.Contains(r[0].Text, "ran print(1)") {
		t.Fatalf("the run in flight was not answered before Close returned: %+v", r)
	}
}

func TestCloseDeadlineCancelsRuns(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	stuck := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		close(started)
		<-ctx.Done()
		return executor.Result{}, &executor.Error{Code: executor.ErrCanceled, Err: ctx.Err()}
	})
	h := start(t, Config{}, stuck, true)
	h.mention(h.channel(), h.user(), "```print(1)```")
	<-started
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	if err := h.bot.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
}

// BenchmarkMentionToReply measures the adapter's path for one message, from
// the Socket Mode envelope to the finished reply (⏳, reply, ✅), with an
// instant runner and the fake Slack on loopback.
func BenchmarkMentionToReply(b *testing.B) {
	h := start(b, Config{}, echo, true)
	ch, u := h.channel(), h.user()
	for b.Loop() {
		m := h.mention(ch, u, "`print(1)`")
		h.reaction(m, "white_check_mark")
	}
}

func TestPanicInAHandlerIsLoggedAndTheBotCarriesOn(t *testing.T) {
	t.Parallel()
	runner := fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		if job.Request.Code == "boom" {
			panic("runner exploded")
		}
		return echo(ctx, job)
	})
	h := start(t, Config{}, runner, true)
	ch := h.channel()
	h.mention(ch, h.user(), "```boom```")
	m := h.mention(ch, h.user(), "```print(1)```")
	h.reply(m, "ran print(1)")
	h.settle()
	if !strings.Contains(h.logs.String(), "handling an event panicked") {
		t.Fatalf("the panic was not logged:\n%s", h.logs.String())
	}
}
