package slack

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/fakeslack"
)

// python returns the real thing behind the adapter: a scheduler in front of
// an executor running each snippet in a fresh Python subprocess.
//
// The Python tests take turns, two at a time, so that each test's deadline
// starts when its runs can start; the other tests run meanwhile.
func python(t *testing.T, sc executor.Config) *executor.Scheduler {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real Python behind the fake Slack; skipped with -short")
	}
	pythonTurns <- struct{}{}
	t.Cleanup(func() { <-pythonTurns })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Timeout: 2 * time.Second, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	sched := executor.NewScheduler(ex, sc)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = sched.Close(ctx)
	})
	return sched
}

var pythonTurns = make(chan struct{}, 2)

func TestPythonMentionOKAndError(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, python(t, executor.Config{Concurrency: 2}), true)
	ch := h.channel()
	ok := h.mention(ch, h.user(), "```python\nprint('sum =', sum(range(10)))\n```")
	r := h.reply(ok, "sum = 45")
	h.reaction(ok, "white_check_mark")
	if !strings.Contains(r.Text, "OK") {
		t.Fatalf("reply %q lacks the OK status", r.Text)
	}
	bad := h.mention(ch, h.user(), "```python\nx = 1\nprint(x / 0)\n```")
	h.reply(bad, "ZeroDivisionError: division by zero")
	h.reaction(bad, "x")
	// Output is escaped: it cannot ping the channel.
	ping := h.mention(ch, h.user(), "```python\nprint('<!channel> <@U123> & co')\n```")
	p := h.reply(ping, "&amp; co")
	if strings.Contains(p.Text, "<!channel>") || strings.Contains(p.Text, "<@U123>") {
		t.Fatalf("live mention in the reply: %q", p.Text)
	}
}

func TestPythonTimeout(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, python(t, executor.Config{Concurrency: 1}), true)
	m := h.mention(h.channel(), h.user(), "```python\nprint('started', flush=True)\nwhile True:\n    pass\n```")
	r := h.reply(m, "Timed out")
	h.reaction(m, "x")
	if !strings.Contains(r.Text, "started") {
		t.Fatalf("timeout reply lacks the output so far: %q", r.Text)
	}
}

func TestPythonLongOutputFile(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, python(t, executor.Config{Concurrency: 1}), true)
	m := h.mention(h.channel(), h.user(), "```python\nfor i in range(200):\n    print('row', i)\n```")
	r := h.reply(m, "row 0")
	if strings.Contains(r.Text, "row 199") {
		t.Fatalf("reply not cut: %d bytes", len(r.Text))
	}
	f, err := h.fake.WaitFile(h.ctx, m.Channel, m.TS)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(f.Content), "row 199") {
		t.Fatalf("uploaded file lacks the end of the output: %q", f.Content)
	}
	h.reaction(m, "white_check_mark")
}

func TestPythonTriggers(t *testing.T) {
	t.Parallel()
	var clk clock
	h := start(t, Config{EditWindow: 10 * time.Minute}, python(t, executor.Config{Concurrency: 2}), true, clk.install())
	ch, u := h.channel(), h.user()

	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "print(6 * 7)", "user_id": u, "channel_id": ch, "trigger_id": "t"})
	if _, err := h.fake.WaitMessage(h.ctx, ch, func(m fakeslack.Message) bool {
		return m.BotID == fakeslack.BotID && m.ThreadTS == "" && strings.Contains(m.Text, "42")
	}); err != nil {
		t.Fatal(err)
	}

	llm := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "Sure:\n```python\nprint('from', 'llm')\n```"})
	h.fake.SendInteractive(map[string]any{"type": "message_action", "callback_id": ShortcutCallbackID, "trigger_id": "t",
		"user": map[string]any{"id": u}, "channel": map[string]any{"id": ch},
		"message": map[string]any{"type": "message", "user": "U0LLM", "bot_id": "B0LLM", "text": llm.Text, "ts": llm.TS}})
	h.reply(llm, "from llm")

	other := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "```python\nprint('reacted', 1 + 1)\n```"})
	h.fake.SendEvent(map[string]any{"type": "reaction_added", "user": u, "reaction": "arrow_forward", "item_user": "U0LLM",
		"item": map[string]any{"type": "message", "channel": ch, "ts": other.TS}})
	h.reply(other, "reacted 2")
	h.reaction(other, "white_check_mark")

	m := h.mention(ch, u, "```python\nprint('version', 1)\n```")
	first := h.reply(m, "version 1")
	m = h.edit(m, "<@U0BOT> ```python\nprint('version', 2)\n```")
	second := h.reply(m, "version 2")
	if second.TS != first.TS {
		t.Fatalf("edit posted a new reply %s, want %s updated", second.TS, first.TS)
	}
	h.remove(m)
	if err := h.fake.WaitGone(h.ctx, ch, first.TS); err != nil {
		t.Fatal(err)
	}
}

func TestPythonResilience(t *testing.T) {
	t.Parallel()
	h := start(t, Config{Channels: []string{"C0RUN"}}, python(t, executor.Config{Concurrency: 2}), true)
	ch := "C0RUN"

	own := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: fakeslack.BotUserID, BotID: fakeslack.BotID, Text: "```python\nprint('loop')\n```"})
	h.fake.SendEvent(messageEvent(own, "channel"))

	h.fake.Script("chat.postMessage", fakeslack.Response{Status: 429, RetryAfter: 1})
	limited := h.message(ch, h.user(), "```python\nprint('after 429')\n```")
	env := h.fake.SendEvent(messageEvent(limited, "channel"))
	if err := h.fake.Redeliver(env); err != nil {
		t.Fatal(err)
	}
	h.reply(limited, "after 429")

	if err := h.fake.Disconnect("refresh_requested"); err != nil {
		t.Fatal(err)
	}
	after := h.message(ch, h.user(), "```python\nprint('after reconnect')\n```")
	h.fake.SendEvent(messageEvent(after, "channel"))
	h.reply(after, "after reconnect")
	if err := h.fake.WaitConnections(h.ctx, 2); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if r := h.fake.BotReplies(ch, own.TS); len(r) != 0 {
		t.Fatalf("answered its own message: %+v", r)
	}
	if r := h.fake.BotReplies(ch, limited.TS); len(r) != 1 {
		t.Fatalf("%d replies to the redelivered message, want 1", len(r))
	}
	if _, _, rc := h.metrics.get(); rc != 1 {
		t.Fatalf("Reconnected counted %d times, want 1", rc)
	}
}

func TestPythonManyUsers(t *testing.T) {
	t.Parallel()
	sched := python(t, executor.Config{Concurrency: 2, QueueSize: 64, UserRate: 1.0 / 3600, UserBurst: 1})
	admitted := make(chan string, 64)
	h := start(t, Config{}, fakerunner.Func(func(ctx context.Context, job executor.Job) (executor.Result, error) {
		var once sync.Once
		progress := job.Progress
		job.Progress = func(p executor.Progress) {
			once.Do(func() { admitted <- job.User })
			progress(p)
		}
		return sched.Submit(ctx, job)
	}), true)
	ch := h.channel()
	const users = 20
	var msgs []fakeslack.Message
	var us []string
	for i := range users {
		us = append(us, h.user())
		msgs = append(msgs, h.mention(ch, us[i], fmt.Sprintf("```python\nprint('user', %d)\n```", i)))
	}
	for range users {
		select {
		case <-admitted:
		case <-h.ctx.Done():
			t.Fatal("runs not admitted")
		}
	}
	for i := range 5 {
		h.mention(ch, us[i], "```python\nprint('again')\n```")
	}
	for i := range 5 {
		h.ephemeral(ch, us[i], "Slow down")
	}
	for i, m := range msgs {
		h.reply(m, fmt.Sprintf("user %d\n", i))
	}
	h.settle()
	for i, m := range msgs {
		if r := h.fake.BotReplies(ch, m.TS); len(r) != 1 {
			t.Errorf("user %d: %d replies: %+v", i, len(r), r)
		}
	}
	if n := len(h.fake.BotMessages(ch)); n != users {
		t.Errorf("%d bot messages, want %d", n, users)
	}
}
