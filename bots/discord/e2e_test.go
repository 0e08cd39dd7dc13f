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
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/fakediscord"
)

// e2eTimeout is the executor's run timeout in the end-to-end tests: short
// for the timeout test, long enough for python to start under -race.
const e2eTimeout = 3 * time.Second

// stack is the real executor and scheduler the end-to-end tests share; it
// is closed by TestMain.
var stack struct {
	once  sync.Once
	ex    *sandbox.Executor
	sched *executor.Scheduler
	err   error
}

// realRunner returns the shared scheduler in front of a real executor that
// runs real Python.
//
// The end-to-end tests take turns, two at a time (the scheduler's
// concurrency), so that each test's deadline starts when its runs can
// start, not behind every other test's; the other tests run meanwhile.
func realRunner(t testing.TB) executor.Submitter {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real Python behind the fake Discord; skipped with -short")
	}
	e2eTurns <- struct{}{}
	t.Cleanup(func() { <-e2eTurns })
	stack.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stack.ex, stack.err = sandbox.New(ctx, sandbox.Config{Timeout: e2eTimeout, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
		if stack.err == nil {
			stack.sched = executor.NewScheduler(stack.ex, executor.Config{Concurrency: 2, QueueSize: 64, MaxPerUser: 1})
		}
	})
	if stack.err != nil {
		t.Fatalf("executor: %v", stack.err)
	}
	return stack.sched
}

var e2eTurns = make(chan struct{}, 2)

func closeStack() {
	if stack.sched == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = stack.sched.Close(ctx)
	stack.ex.Close()
}

func TestE2EMessages(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)
	cases := []struct {
		name     string
		content  func(e *env) string
		want     string
		reaction string
	}{
		{"prefix", func(*env) string { return "!run\n```python\nprint(6 * 7)\n```" }, "42", "✅"},
		{"mention", func(e *env) string { return "<@" + e.fbot.UserID + "> ```py\nprint('hi')\n```" }, "hi", "✅"},
		{"error", func(*env) string { return "!run ```py\n1/0\n```" }, "ZeroDivisionError", "❌"},
		{"timeout", func(*env) string { return "!run ```py\nwhile True: pass\n```" }, "Timed out", "❌"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := e.say(c.content(e))
			r := e.replyTo(e.channel, m.ID)
			post, err := fake.WaitRequest(e.ctx, isReplyTo(e.channel, m.ID)) // the reply itself, also when it first showed the queue
			if err != nil {
				t.Fatal(err)
			}
			if id, fail := reference(t, post); id != m.ID || fail == nil || *fail {
				t.Fatalf("reference %s", post.JSON)
			}
			if !strings.Contains(string(r.JSON), `"parse":[]`) {
				t.Fatalf("no \"parse\":[] in %s", r.JSON)
			}
			assertNoMentions(t, r)
			if !strings.Contains(r.Content(), c.want) {
				t.Fatalf("content %q lacks %q", r.Content(), c.want)
			}
			if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("PUT", "/channels/"+e.channel+"/messages/"+m.ID+"/reactions/"+c.reaction+"/@me")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestE2ELongOutputAttachment(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)
	m := e.say("!run ```py\nfor i in range(500):\n    print('line', i)\n```")
	r := e.replyTo(e.channel, m.ID)
	if n := len([]rune(r.Content())); n > 2000 {
		t.Fatalf("%d characters", n)
	}
	if len(r.Files) != 1 || r.Files[0].Name != "output.txt" {
		t.Fatalf("files %+v", r.Files)
	}
	if data := string(r.Files[0].Data); !strings.Contains(data, "line 0\n") || !strings.Contains(data, "line 499") {
		t.Fatalf("output.txt holds %d bytes without the ends", len(data))
	}
}

func TestE2EEveryoneCannotPing(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)
	m := e.say("!run ```py\nprint('@everyone'); print('<@" + e.user.ID + ">')\n```")
	r := e.replyTo(e.channel, m.ID)
	if want := "\n@everyone\n<@" + e.user.ID + ">\n"; !strings.Contains(r.Content(), want) || strings.ContainsRune(r.Content(), '\u200b') {
		t.Fatalf("content %q, want the output exactly: %q", r.Content(), want)
	}
	assertNoMentions(t, r)
}

func TestE2EInteractions(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)

	t.Run("run with option", func(t *testing.T) {
		in := e.slash(codeOption("print(sum(range(10)))"))
		if typ, _ := e.callback(in); typ != discordgo.InteractionResponseDeferredChannelMessageWithSource {
			t.Fatalf("callback type %d", typ)
		}
		r := e.original(in)
		if !strings.Contains(r.Content(), "45") {
			t.Fatalf("content %q", r.Content())
		}
		assertNoMentions(t, r)
	})

	t.Run("run with modal", func(t *testing.T) {
		in := e.slash()
		if typ, _ := e.callback(in); typ != discordgo.InteractionResponseModal {
			t.Fatalf("callback type %d", typ)
		}
		submit := e.fbot.InteractionCreate(map[string]any{
			"type": discordgo.InteractionModalSubmit, "channel_id": e.channel, "guild_id": e.guild,
			"member": map[string]any{"user": e.user},
			"data": map[string]any{"custom_id": "runblock:run", "components": []any{
				map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "code", "value": "name = input()\nprint('hello', name)"}}},
				map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "stdin", "value": "modal"}}},
			}},
		})
		r := e.original(submit)
		if !strings.Contains(r.Content(), "hello modal") {
			t.Fatalf("content %q", r.Content())
		}
	})

	t.Run("Run code", func(t *testing.T) {
		target := fake.PutMessage(discordgo.Message{ChannelID: e.channel, Author: e.user, Content: "```py\nprint('menu' * 2)\n```"})
		in := e.fbot.InteractionCreate(map[string]any{
			"type": discordgo.InteractionApplicationCommand, "channel_id": e.channel, "guild_id": e.guild,
			"member": map[string]any{"user": e.user},
			"data": map[string]any{
				"id": "2", "name": "Run code", "type": discordgo.MessageApplicationCommand, "target_id": target.ID,
				"resolved": map[string]any{"messages": map[string]any{target.ID: target}},
			},
		})
		r := e.original(in)
		if !strings.Contains(r.Content(), "menumenu") {
			t.Fatalf("content %q", r.Content())
		}
	})
}

func TestE2EReactionOnABotsMessage(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)
	llm := &discordgo.User{ID: fake.NewID(), Username: "assistant", Bot: true}
	m := fake.PutMessage(discordgo.Message{ChannelID: e.channel, GuildID: e.guild, Author: llm, Content: "Try this:\n```python\nprint(2 ** 10)\n```"})
	e.fbot.ReactionAdd(e.channel, m.ID, e.guild, "▶️", e.user)
	r := e.replyTo(e.channel, m.ID)
	if !strings.Contains(r.Content(), "1024") {
		t.Fatalf("content %q", r.Content())
	}
}

// TestEditRerunsIntoSameReplyAndDeleteRemovesIt: an edit within the window
// re-runs into the same reply, dropping the old output.txt; deleting the
// message deletes the reply.
func TestEditRerunsIntoSameReplyAndDeleteRemovesIt(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	e := start(t, realRunner(t), func(c *discord.Config) { c.Clock = clk.Now; c.EditWindow = 10 * time.Minute })
	m := e.say("!run ```py\nprint('first')\n```")
	var reply discordgo.Message
	if err := e.replyTo(e.channel, m.ID).DecodeResponse(&reply); err != nil {
		t.Fatal(err)
	}

	clk.Add(9 * time.Minute)
	edited := *m
	edited.Content = "!run ```py\nprint('second')\n```"
	e.fbot.MessageUpdate(edited)
	patch, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
		return fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply.ID)(r) && strings.Contains(string(r.JSON), "second")
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch.Content(), "second") {
		t.Fatalf("edited to %q", patch.Content())
	}
	assertNoMentions(t, patch)
	if !strings.Contains(string(patch.JSON), `"attachments":[]`) {
		t.Fatalf("edit keeps the old attachments: %s", patch.JSON)
	}
	if got, _ := fake.Message(reply.ID); !strings.Contains(got.Content, "second") {
		t.Fatalf("stored reply %q", got.Content)
	}

	e.fbot.MessageDelete(e.channel, m.ID, e.guild)
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", "/channels/"+e.channel+"/messages/"+reply.ID)); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.Message(reply.ID); ok {
		t.Fatal("reply still there")
	}
}

func TestE2EBotMessagesIgnored(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)
	other := e.sayIn(e.channel, e.guild, &discordgo.User{ID: fake.NewID(), Bot: true}, "!run ```py\nprint('bot')\n```")
	last := e.say("!run ```py\nprint('human')\n```")
	if r := e.replyTo(e.channel, last.ID); !strings.Contains(r.Content(), "human") {
		t.Fatalf("content %q", r.Content())
	}
	closeBot(t, e)
	if rs := fake.Requests(isReplyTo(e.channel, other.ID)); len(rs) != 0 {
		t.Fatalf("answered a bot: %s", rs[0].JSON)
	}
}

func TestE2ERateLimitedReplyArrives(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)
	fake.RateLimitNext(fakediscord.Match("POST", "/channels/"+e.channel+"/messages"), 500*time.Millisecond, false)
	m := e.say("!run ```py\nprint('patient')\n```")
	r := e.replyTo(e.channel, m.ID)
	if !strings.Contains(r.Content(), "patient") {
		t.Fatalf("content %q", r.Content())
	}
	if rs := fake.Requests(fakediscord.Match("POST", "/channels/"+e.channel+"/messages")); len(rs) != 2 || rs[0].Status != 429 {
		t.Fatalf("%d posts", len(rs))
	}
}

func TestE2EReconnectThenAnswer(t *testing.T) {
	t.Parallel()
	for _, op := range []struct {
		name string
		do   func(*fakediscord.Bot) error
	}{{"op 7", (*fakediscord.Bot).Reconnect}, {"op 9", (*fakediscord.Bot).InvalidSession}} {
		t.Run(op.name, func(t *testing.T) {
			e := start(t, realRunner(t), nil)
			if err := op.do(e.fbot); err != nil {
				t.Fatal(err)
			}
			m := e.say("!run ```py\nprint('still here')\n```")
			if r := e.replyTo(e.channel, m.ID); !strings.Contains(r.Content(), "still here") {
				t.Fatalf("content %q", r.Content())
			}
			if err := e.fbot.WaitSessions(e.ctx, 2); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestE2EManyUsersOneReplyEach(t *testing.T) {
	t.Parallel()
	e := start(t, realRunner(t), nil)
	const n = 12
	var ms []*discordgo.Message
	for i := range n {
		u := &discordgo.User{ID: fake.NewID(), Username: "student"}
		ms = append(ms, e.sayIn(e.channel, e.guild, u, "!run ```py\nprint('user', "+string(rune('0'+i%10))+")\n```"))
	}
	for _, m := range ms {
		r := e.replyTo(e.channel, m.ID)
		if !strings.Contains(r.Content(), "user") {
			t.Fatalf("reply %q", r.Content())
		}
	}
	closeBot(t, e)
	for _, m := range ms {
		if k := len(fake.Requests(isReplyTo(e.channel, m.ID))); k != 1 {
			t.Fatalf("message %s got %d replies", m.ID, k)
		}
	}
	assertAllSentWithoutMentions(t, e.fbot.Token)
}
