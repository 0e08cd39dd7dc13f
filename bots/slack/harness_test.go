package slack

import (
	"context"
	"flag"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/fakeslack"
	"github.com/runblock/runblock/internal/syncbuf"
)

func TestMain(m *testing.M) {
	// The tests mostly wait on sockets, not on the CPUs: unless -parallel
	// is given, run more of them at once than the default GOMAXPROCS (not
	// many more: each Python test starts its own executor).
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "4"); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}

// testTimeout bounds each test's waits, to catch hangs; it is no timing claim.
const testTimeout = 60 * time.Second

// echo answers every job with its code as stdout.
var echo = fakerunner.Echo("ran ")

// counts is a Metrics that counts.
type counts struct {
	mu                            sync.Mutex
	received, replied, reconnects int
}

func (c *counts) MessageReceived(string) { c.mu.Lock(); c.received++; c.mu.Unlock() }
func (c *counts) MessageReplied(string)  { c.mu.Lock(); c.replied++; c.mu.Unlock() }
func (c *counts) Reconnected(string)     { c.mu.Lock(); c.reconnects++; c.mu.Unlock() }
func (c *counts) get() (int, int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.received, c.replied, c.reconnects
}

type harness struct {
	t       testing.TB
	ctx     context.Context
	fake    *fakeslack.Server
	bot     *Bot
	metrics *counts
	logs    *syncbuf.Buffer

	// what start was given, for restart
	cfg    Config
	runner executor.Submitter
	before []func(*Bot)
}

// start runs a Bot with cfg (tokens and API URL filled in) against a fresh
// fake Slack; socket says whether it connects over Socket Mode.
func start(t testing.TB, cfg Config, runner executor.Submitter, socket bool, before ...func(*Bot)) *harness {
	t.Helper()
	return startWith(t, fakeslack.Options{}, cfg, runner, socket, before...)
}

// startWith is start against a fake Slack with opts.
func startWith(t testing.TB, opts fakeslack.Options, cfg Config, runner executor.Submitter, socket bool, before ...func(*Bot)) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	opts.PingInterval = 200 * time.Millisecond
	fake := fakeslack.New(opts)
	t.Cleanup(fake.Close)
	cfg.BotToken = fakeslack.BotToken
	if socket {
		cfg.AppToken = fakeslack.AppToken
	}
	cfg.APIURL = fake.APIURL()
	h := &harness{t: t, ctx: ctx, fake: fake, metrics: &counts{}, logs: &syncbuf.Buffer{}, runner: runner, before: before}
	cfg.Metrics = h.metrics
	h.cfg = cfg
	h.open()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := h.bot.Close(cctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("bot log:\n%s", h.logs.String())
		}
	})
	return h
}

// open starts a new Bot on the harness's fake, with an empty memory.
func (h *harness) open() {
	h.t.Helper()
	h.bot = New(h.cfg, h.runner, slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for _, f := range h.before {
		f(h.bot)
	}
	if err := h.bot.Open(h.ctx); err != nil {
		h.t.Fatalf("Open: %v", err)
	}
}

// channel returns a fresh public channel id.
func (h *harness) channel() string { return h.fake.NewID("C") }

// user returns a fresh user id.
func (h *harness) user() string { return h.fake.NewID("U") }

// message puts a message by user into channel, as Slack stores it.
func (h *harness) message(channel, user, text string) fakeslack.Message {
	return h.fake.PutMessage(fakeslack.Message{Channel: channel, User: user, Text: text})
}

func messageEvent(m fakeslack.Message, channelType string) map[string]any {
	ev := map[string]any{"type": "message", "channel": m.Channel, "user": m.User, "text": m.Text,
		"ts": m.TS, "event_ts": m.TS, "channel_type": channelType}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	if m.BotID != "" {
		ev["bot_id"] = m.BotID
		ev["subtype"] = "bot_message"
	}
	return ev
}

// mention posts "<@bot> text" to channel and sends both events Slack
// sends for it: app_mention and message.
func (h *harness) mention(channel, user, text string) fakeslack.Message {
	m := h.message(channel, user, "<@"+fakeslack.BotUserID+"> "+text)
	h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": m.Text, "ts": m.TS, "event_ts": m.TS})
	h.fake.SendEvent(messageEvent(m, "channel"))
	return m
}

// reply waits for the bot's answer in m's thread whose text contains want
// (not a live view of it, which the answer replaces).
func (h *harness) reply(m fakeslack.Message, want string) fakeslack.Message {
	h.t.Helper()
	return h.botReply(m, want, false)
}

// liveReply waits for the bot's live view in m's thread whose text
// contains want.
func (h *harness) liveReply(m fakeslack.Message, want string) fakeslack.Message {
	h.t.Helper()
	return h.botReply(m, want, true)
}

func (h *harness) botReply(m fakeslack.Message, want string, live bool) fakeslack.Message {
	h.t.Helper()
	thread := m.ThreadTS
	if thread == "" {
		thread = m.TS
	}
	r, err := h.fake.WaitMessage(h.ctx, m.Channel, func(x fakeslack.Message) bool {
		return x.BotID == fakeslack.BotID && x.ThreadTS == thread && strings.Contains(x.Text, want) && isLive(x.Text) == live
	})
	if err != nil {
		h.t.Fatalf("no reply containing %q in thread %s (live view: %v): %v; replies: %+v", want, thread, live, err, h.fake.BotReplies(m.Channel, thread))
	}
	return r
}

// isLive reports whether text is the live view of a run past the live
// output's grace (its output so far, "*Running* · 3 s", under a session
// cell's header), which the answer replaces: not yet the answer.
func isLive(text string) bool {
	first, rest, _ := strings.Cut(text, "\n")
	second, _, _ := strings.Cut(rest, "\n")
	return strings.HasPrefix(first, liveStatus) || strings.HasPrefix(second, liveStatus)
}

// liveStatus begins the status line of a live view.
var liveStatus, _, _ = strings.Cut(formatting.Render(formatting.Slack, executor.Result{}, formatting.RenderOptions{Running: true}).Text, "· ")

// reaction waits for reaction name on m.
func (h *harness) reaction(m fakeslack.Message, name string) {
	h.t.Helper()
	if err := h.fake.WaitReaction(h.ctx, m.Channel, m.TS, name); err != nil {
		got, _ := h.fake.Get(m.Channel, m.TS)
		h.t.Fatalf("%v; reactions: %v", err, got.Reactions)
	}
}

// ephemeral waits for an ephemeral message to user whose text contains want.
func (h *harness) ephemeral(channel, user, want string) fakeslack.Call {
	h.t.Helper()
	c, err := h.fake.WaitCall(h.ctx, "chat.postEphemeral", func(c fakeslack.Call) bool {
		return c.Get("channel") == channel && c.Get("user") == user && strings.Contains(c.Get("text"), want)
	})
	if err != nil {
		h.t.Fatalf("no ephemeral %q to %s: %v; calls: %+v", want, user, err, h.fake.Calls("chat.postEphemeral"))
	}
	return c
}

// settle closes the bot, so every handler has finished, for assertions on
// what it did not do.
func (h *harness) settle() {
	h.t.Helper()
	if err := h.bot.Close(h.ctx); err != nil {
		h.t.Fatalf("Close: %v", err)
	}
}

// clock is a settable clock for the edit window.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }
func (c *clock) set(d time.Duration)     { c.offset.Store(int64(d)) }
func (c *clock) install() func(*Bot)     { return func(b *Bot) { b.now = c.now } }

// edit changes m's text in the fake and sends the message_changed event.
func (h *harness) edit(m fakeslack.Message, text string) fakeslack.Message {
	prev := messageEvent(m, "")
	m, ok := h.fake.Edit(m.Channel, m.TS, text)
	if !ok {
		h.t.Fatalf("no message %s to edit", m.TS)
	}
	msg := messageEvent(m, "")
	msg["edited"] = map[string]any{"user": m.User, "ts": m.TS}
	delete(msg, "channel_type")
	delete(prev, "channel_type")
	h.fake.SendEvent(map[string]any{"type": "message", "subtype": "message_changed", "hidden": true, "channel": m.Channel,
		"channel_type": "channel", "message": msg, "previous_message": prev, "ts": m.TS, "event_ts": m.TS})
	return m
}

// remove deletes m in the fake and sends the message_deleted event.
func (h *harness) remove(m fakeslack.Message) {
	h.fake.SendEvent(map[string]any{"type": "message", "subtype": "message_deleted", "hidden": true, "channel": m.Channel,
		"channel_type": "channel", "deleted_ts": m.TS, "previous_message": messageEvent(m, ""), "ts": m.TS, "event_ts": m.TS})
}

// bury deletes m, which has thread replies, as Slack does: m becomes a
// tombstone, sent as message_changed.
func (h *harness) bury(m fakeslack.Message) {
	prev := messageEvent(m, "")
	delete(prev, "channel_type")
	msg := map[string]any{"type": "message", "subtype": "tombstone", "text": "This message was deleted.", "user": "USLACKBOT",
		"hidden": true, "ts": m.TS, "thread_ts": m.TS, "reply_count": 1}
	h.fake.SendEvent(map[string]any{"type": "message", "subtype": "message_changed", "hidden": true, "channel": m.Channel,
		"channel_type": "channel", "message": msg, "previous_message": prev, "ts": m.TS, "event_ts": m.TS})
}

// TestIsLive: the harness tells a run's live view (its output so far, under
// a session cell's header too) from its answer, so that reply waits for
// the answer and liveReply for the view.
func TestIsLive(t *testing.T) {
	t.Parallel()
	live := formatting.Render(formatting.Slack, executor.Result{Stdout: "9\n", Duration: 7 * time.Second}, formatting.RenderOptions{Running: true}).Text
	cell := formatting.Render(formatting.Slack, executor.Result{Stdout: "9\n", Duration: 7 * time.Second}, formatting.RenderOptions{Running: true, Header: "[3]"}).Text
	done := formatting.Render(formatting.Slack, executor.Result{Success: true, Stdout: "9\n"}, formatting.RenderOptions{Header: "[3]"}).Text
	for _, tc := range []struct {
		text string
		want bool
	}{{live, true}, {cell, true}, {done, false}} {
		if got := isLive(tc.text); got != tc.want {
			t.Errorf("isLive(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}
