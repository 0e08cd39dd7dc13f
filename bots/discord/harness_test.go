package discord_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/goleak"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/fakediscord"
	"github.com/runblock/runblock/internal/syncbuf"
)

// fake is the fake Discord the tests share, reached through
// Config.APIURL; they keep apart by bot token and channel ids.
var fake *fakediscord.Server

func TestMain(m *testing.M) {
	// The tests wait on sockets (and discordgo's Session.Close sleeps a
	// second), not on the CPUs: unless -parallel is given, run more of them
	// at once than the default GOMAXPROCS.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "16"); err != nil {
			panic(err)
		}
	}
	fake = fakediscord.New(fakediscord.Options{})
	code := m.Run()
	closeStack()
	fake.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// countMetrics counts the adapter's observations.
type countMetrics struct {
	mu                            sync.Mutex
	received, replied, reconnects int
}

func (m *countMetrics) MessageReceived(p string) { m.add(p, &m.received) }
func (m *countMetrics) MessageReplied(p string)  { m.add(p, &m.replied) }
func (m *countMetrics) Reconnected(p string)     { m.add(p, &m.reconnects) }

func (m *countMetrics) add(p string, n *int) {
	if p != discord.Platform {
		panic("platform " + p)
	}
	m.mu.Lock()
	*n++
	m.mu.Unlock()
}

func (m *countMetrics) Reconnects() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reconnects
}

// env is one connected adapter on the fake.
type env struct {
	t       *testing.T
	ctx     context.Context
	fbot    *fakediscord.Bot
	bot     *discord.Bot
	metrics *countMetrics
	logs    *syncbuf.Buffer // the adapter's log, also sent to t.Log
	guild   string
	channel string
	user    *discordgo.User

	cfg    discord.Config // what start made, for restart
	runner executor.Submitter
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start connects an adapter for a fresh fake bot; configure may change the
// Config before New.
func start(t *testing.T, runner executor.Submitter, configure func(*discord.Config)) *env {
	t.Helper()
	return startFor(t, fake.NewBot(t.Name()), runner, configure)
}

// startFor connects an adapter for fbot, which the test has set up.
func startFor(t *testing.T, fbot *fakediscord.Bot, runner executor.Submitter, configure func(*discord.Config)) *env {
	t.Helper()
	e := &env{t: t, ctx: testCtx(t), fbot: fbot, metrics: &countMetrics{}, logs: &syncbuf.Buffer{}}
	e.guild, e.channel = fake.NewID(), fake.NewID()
	e.user = &discordgo.User{ID: fake.NewID(), Username: "ada"}
	cfg := discord.Config{Token: e.fbot.Token, APIURL: fake.URL(), Metrics: e.metrics}
	if configure != nil {
		configure(&cfg)
	}
	e.cfg, e.runner = cfg, runner
	e.open()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.bot.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

// open connects a new adapter for the env's fake bot, with an empty memory.
func (e *env) open() {
	e.t.Helper()
	e.bot = discord.New(e.cfg, e.runner, slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{e.t}, e.logs), &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err := e.bot.Open(e.ctx); err != nil {
		e.t.Fatalf("open: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// say posts a message by the test user in the env's channel.
func (e *env) say(content string) *discordgo.Message {
	return e.sayIn(e.channel, e.guild, e.user, content)
}

func (e *env) sayIn(channel, guild string, author *discordgo.User, content string) *discordgo.Message {
	return e.fbot.MessageCreate(discordgo.Message{ChannelID: channel, GuildID: guild, Author: author, Content: content})
}

// replyTo waits for the bot's answer to message id in channel: its reply,
// or, when the reply first showed the queue position, the edit of it that
// holds the answer.
func (e *env) replyTo(channel, id string) fakediscord.Request {
	e.t.Helper()
	r, err := fake.WaitRequest(e.ctx, isReplyTo(channel, id))
	if err != nil {
		e.t.Fatal(err)
	}
	if !isProgress(r.Content()) {
		return r
	}
	var m discordgo.Message
	if err := r.DecodeResponse(&m); err != nil {
		e.t.Fatal(err)
	}
	r, err = fake.WaitRequest(e.ctx, answer(fakediscord.Match("PATCH", "/channels/"+channel+"/messages/"+m.ID)))
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// isProgress reports whether content shows a run's place in the queue, or
// its output so far (the live view of a run past the live output's grace,
// a session's cell under its header): not yet its answer.
func isProgress(content string) bool {
	first, rest, _ := strings.Cut(content, "\n")
	second, _, _ := strings.Cut(rest, "\n")
	return content == formatting.RenderProgress(formatting.Discord, executor.Progress{State: executor.StateRunning}) ||
		strings.HasPrefix(content, "_Queued, ") || strings.HasPrefix(first, liveStatus) || strings.HasPrefix(second, liveStatus)
}

// liveStatus begins the status line of a live view ("**Running** · 3 s").
var liveStatus, _, _ = strings.Cut(formatting.Render(formatting.Discord, executor.Result{}, formatting.RenderOptions{Running: true}).Text, "· ")

// answer narrows match to requests that carry an answer, not a queue
// position.
func answer(match func(fakediscord.Request) bool) func(fakediscord.Request) bool {
	return func(r fakediscord.Request) bool { return match(r) && !isProgress(r.Content()) }
}

func isReplyTo(channel, id string) func(fakediscord.Request) bool {
	return func(r fakediscord.Request) bool {
		if r.Method != "POST" || r.Path != "/channels/"+channel+"/messages" || r.Status != 200 {
			return false
		}
		var p struct {
			Ref *struct {
				MessageID string `json:"message_id"`
			} `json:"message_reference"`
		}
		return r.Decode(&p) == nil && p.Ref != nil && p.Ref.MessageID == id
	}
}

// reference decodes a reply's message_reference.
func reference(t *testing.T, r fakediscord.Request) (id string, failIfNotExists *bool) {
	t.Helper()
	var p struct {
		Ref *struct {
			MessageID       string `json:"message_id"`
			FailIfNotExists *bool  `json:"fail_if_not_exists"`
		} `json:"message_reference"`
	}
	if err := r.Decode(&p); err != nil || p.Ref == nil {
		t.Fatalf("no message_reference in %s", r.JSON)
	}
	return p.Ref.MessageID, p.Ref.FailIfNotExists
}

// assertNoMentions fails unless r allowed no mention at all, "parse": [].
func assertNoMentions(t *testing.T, r fakediscord.Request) {
	t.Helper()
	if !r.AllowedMentions().None() {
		t.Fatalf("%s %s: allowed_mentions is not none: %s", r.Method, r.Path, r.JSON)
	}
}

// assertAllSentWithoutMentions checks every message-carrying request of token.
func assertAllSentWithoutMentions(t *testing.T, token string) {
	t.Helper()
	n := 0
	for _, r := range fake.Requests(func(r fakediscord.Request) bool { return r.Token == token }) {
		if r.JSON == nil || r.Content() == "" {
			continue
		}
		n++
		assertNoMentions(t, r)
	}
	if n == 0 {
		t.Fatal("no message sent")
	}
}

// TestIsProgressKnowsTheLiveView: the harness waits past a run's live view
// (its output so far, under a session cell's header too) for its answer,
// as it does past its place in the queue: e2e tests read the live view of
// a run that outlasted the live output's grace on a loaded machine
// ("**Running** · 7 s" where the cell's answer was expected).
func TestIsProgressKnowsTheLiveView(t *testing.T) {
	t.Parallel()
	live := formatting.Render(formatting.Discord, executor.Result{Stdout: "9\n", Duration: 7 * time.Second}, formatting.RenderOptions{Running: true}).Text
	cell := formatting.Render(formatting.Discord, executor.Result{Stdout: "9\n", Duration: 7 * time.Second}, formatting.RenderOptions{Running: true, Header: "[3]"}).Text
	done := formatting.Render(formatting.Discord, executor.Result{Success: true, Stdout: "9\n"}, formatting.RenderOptions{Header: "[3]"}).Text
	for _, tc := range []struct {
		content string
		want    bool
	}{{live, true}, {cell, true}, {done, false}} {
		if got := isProgress(tc.content); got != tc.want {
			t.Errorf("isProgress(%q) = %v, want %v", tc.content, got, tc.want)
		}
	}
}
