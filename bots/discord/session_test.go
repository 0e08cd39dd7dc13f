package discord_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	answerflow "github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/internal/fakediscord"
)

// thread makes a public thread in the env's guild, known to the adapter's
// state as Discord's GUILD_CREATE makes it.
func (e *env) thread() string {
	id := fake.NewID()
	e.fbot.Dispatch("GUILD_CREATE", map[string]any{
		"id": e.guild, "name": "school",
		"channels": []any{map[string]any{"id": e.channel, "type": discordgo.ChannelTypeGuildText, "guild_id": e.guild}},
		"threads":  []any{map[string]any{"id": id, "type": discordgo.ChannelTypeGuildPublicThread, "guild_id": e.guild, "parent_id": e.channel}},
	})
	return id
}

// post posts content by author in channel, replying to ref when it is
// not "".
func (e *env) post(channel string, author *discordgo.User, ref, content string) *discordgo.Message {
	m := discordgo.Message{ChannelID: channel, GuildID: e.guild, Author: author, Content: content}
	if ref != "" {
		m.MessageReference = &discordgo.MessageReference{MessageID: ref, ChannelID: channel, GuildID: e.guild}
	}
	return e.fbot.MessageCreate(m)
}

// cell waits for the reply to m, whose first line is header and which
// contains want, and returns the reply's id.
func (e *env) cell(m *discordgo.Message, header, want string) string {
	e.t.Helper()
	r := e.replyTo(m.ChannelID, m.ID)
	if first, _, _ := strings.Cut(r.Content(), "\n"); first != header || !strings.Contains(r.Content(), want) {
		e.t.Fatalf("reply %q, want it to begin %q and hold %q", r.Content(), header, want)
	}
	return replyID(e.t, r)
}

// edited waits for the edit of reply that contains want.
func (e *env) edited(channel, reply, want string) {
	e.t.Helper()
	if _, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
		return fakediscord.Match("PATCH", "/channels/"+channel+"/messages/"+reply)(r) && strings.Contains(r.Content(), want)
	}); err != nil {
		e.t.Fatalf("no edit of %s with %q: %v", reply, want, err)
	}
}

func run(code string) string { return "!run ```python\n" + code + "\n```" }

// TestThreadIsASessionOnDiscord: a thread's messages are the cells of
// one session, whoever posts them; an edit of the first re-runs all three
// into their replies; a mention with only "reset" and /run reset start it
// fresh.
func TestThreadIsASessionOnDiscord(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	e := start(t, runner, func(c *discord.Config) { c.EditWindow = discord.DefaultEditWindow })
	th := e.thread()
	bob := &discordgo.User{ID: fake.NewID(), Username: "bob"}
	m1 := e.post(th, e.user, "", run("a=1"))
	r1 := e.cell(m1, "[1]", "after : a=1")
	m2 := e.post(th, bob, "", run("b=a"))
	r2 := e.cell(m2, "[2]", "after a=1: b=a")
	r3 := e.cell(e.post(th, e.user, "", run("print(b)")), "[3]", "after a=1,b=a: print(b)")

	edit := *m1
	edit.Content = run("a=2")
	e.fbot.MessageUpdate(edit)
	e.edited(th, r1, "after : a=2")
	e.edited(th, r2, "after a=2: b=a")
	e.edited(th, r3, "after a=2,b=a: print(b)")

	reset := e.post(th, bob, "", "<@"+e.fbot.UserID+"> reset")
	if r := e.replyTo(th, reset.ID); r.Content() != answerflow.ResetText {
		t.Fatalf("reply to reset %q", r.Content())
	}
	session := "discord:" + e.guild + ":" + th
	if got := runner.Ended(); !slices.Equal(got, []string{session}) {
		t.Fatalf("ended %v, want %s", got, session)
	}
	e.cell(e.post(th, e.user, "", run("x=1")), "[1]", "after : x=1")

	in := e.fbot.InteractionCreate(map[string]any{
		"type": discordgo.InteractionApplicationCommand, "channel_id": th, "guild_id": e.guild,
		"member": map[string]any{"user": e.user},
		"data": map[string]any{"id": "1", "name": "run", "type": discordgo.ChatApplicationCommand,
			"options": []any{map[string]any{"name": "reset", "type": discordgo.ApplicationCommandOptionBoolean, "value": true}}},
	})
	if r := e.original(in); r.Content() != answerflow.ResetText {
		t.Fatalf("/run reset answered %q", r.Content())
	}
	if got := runner.Ended(); len(got) != 2 || got[1] != session {
		t.Fatalf("ended %v", got)
	}
}

// TestReplyChainIsASession: in a channel, a message that replies to a
// cell or to the bot's reply continues its session; a message that
// replies to nothing starts its own.
func TestReplyChainIsASession(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	e := start(t, runner, nil)
	m1 := e.say(run("a=1"))
	r1 := e.cell(m1, "[1]", "after : a=1")
	e.cell(e.post(e.channel, e.user, r1, run("b=a")), "[2]", "after a=1: b=a")
	e.cell(e.say(run("print(a)")), "[1]", "after : print(a)")
	e.cell(e.post(e.channel, e.user, m1.ID, run("print(b)")), "[3]", "after a=1,b=a: print(b)")
}

// TestSessionRecoveredAfterRestartOnDiscord: after a restart the next
// cell recovers the session's cells once, ✅ ones in the replay and ❌ ones
// not, from a thread and from a reply chain.
func TestSessionRecoveredAfterRestartOnDiscord(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	e, clk := restartable(t, runner)
	th := e.thread()
	e.cell(e.post(th, e.user, "", run("a=1")), "[1]", "a=1")
	e.cell(e.post(th, e.user, "", run("raise")), "[2]", "Error")
	c1 := e.say(run("c=1"))
	cr1 := e.cell(c1, "[1]", "c=1")
	c2 := e.post(e.channel, e.user, cr1, run("d=c"))
	cr2 := e.cell(c2, "[2]", "d=c")
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("PUT", "/channels/"+e.channel+"/messages/"+c2.ID+"/reactions/✅/@me")); err != nil {
		t.Fatal(err)
	}
	reads := func() int { return len(fake.Requests(fakediscord.Match("GET", "/channels/"+th+"/messages"))) }
	before := reads()
	e.restart(clk)
	e.fbot.Dispatch("GUILD_CREATE", map[string]any{
		"id": e.guild, "name": "school",
		"threads": []any{map[string]any{"id": th, "type": discordgo.ChannelTypeGuildPublicThread, "guild_id": e.guild, "parent_id": e.channel}},
	})
	for _, id := range []string{"discord:" + e.guild + ":" + th, "discord:" + e.guild + ":" + e.channel + ":" + c1.ID} {
		if err := runner.Sessions.End(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	e.cell(e.post(th, e.user, "", run("print(a)")), "[3] · state rebuilt from 1 earlier cell", "after a=1: print(a)")
	e.cell(e.post(th, e.user, "", run("print(2)")), "[4]", "after a=1,print(a): print(2)")
	e.cell(e.post(e.channel, e.user, cr2, run("print(d)")), "[3] · state rebuilt from 2 earlier cells", "after c=1,d=c: print(d)")
	closeBot(t, e)
	if n := reads() - before; n != 1 {
		t.Fatalf("%d reads of the thread after the restart, want 1", n)
	}
}

// TestRunReactionContinuesTheSessionOnDiscord: an LLM writes its answer
// in two messages of a thread; the run reaction on the second runs it in
// the session of the first.
func TestRunReactionContinuesTheSessionOnDiscord(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	e := start(t, runner, nil)
	th := e.thread()
	llm := &discordgo.User{ID: fake.NewID(), Username: "llm", Bot: true}
	first := e.post(th, llm, "", "Load it:\n```python\ndf=load()\n```")
	e.fbot.ReactionAdd(th, first.ID, e.guild, discord.DefaultRunReaction, e.user)
	e.cell(first, "[1]", "df=load()")
	second := e.post(th, llm, "", "Then:\n```python\nprint(df)\n```")
	e.fbot.ReactionAdd(th, second.ID, e.guild, discord.DefaultRunReaction, e.user)
	e.cell(second, "[2]", "after df=load(): print(df)")
}

// TestExportOnDiscord: "!run export" in a thread and /run export post the
// thread's session as a notebook, one code cell per cell.
func TestExportOnDiscord(t *testing.T) {
	t.Parallel()
	e := start(t, fakerunner.NewSessions(), nil)
	th := e.thread()
	e.cell(e.post(th, e.user, "", run("a=1")), "[1]", "after : a=1")
	e.cell(e.post(th, e.user, "", run("print(a)")), "[2]", "after a=1: print(a)")
	cells := func(data []byte) int {
		var nb struct {
			Cells []struct {
				Count int `json:"execution_count"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(data, &nb); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		return len(nb.Cells)
	}

	ask := e.post(th, e.user, "", "!run export")
	r := posted(t, e.replyTo(th, ask.ID))
	if r.Content != answerflow.ExportText(2) || len(r.Attachments) != 1 || r.Attachments[0].Filename != answerflow.ExportName {
		t.Fatalf("reply %q with %+v", r.Content, r.Attachments)
	}
	if data, _ := fake.AttachmentData(r.Attachments[0].URL); cells(data) != 2 {
		t.Fatalf("%d cells", cells(data))
	}

	in := e.fbot.InteractionCreate(map[string]any{
		"type": discordgo.InteractionApplicationCommand, "channel_id": th, "guild_id": e.guild,
		"member": map[string]any{"user": e.user},
		"data": map[string]any{"id": "1", "name": "run", "type": discordgo.ChatApplicationCommand,
			"options": []any{map[string]any{"name": "export", "type": discordgo.ApplicationCommandOptionBoolean, "value": true}}},
	})
	if o := e.original(in); o.Content() != answerflow.ExportText(2) {
		t.Fatalf("/run export answered %q", o.Content())
	}
}
