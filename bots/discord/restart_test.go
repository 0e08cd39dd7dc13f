package discord_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakediscord"
)

// offsetClock is time.Now moved by an offset.
type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// restartable starts an adapter whose clock says it started minutes ago, so
// that the messages the test posts are new to it: adapters look for
// earlier replies on Discord only for messages older than themselves.
func restartable(t *testing.T, runner executor.Submitter) (*env, *offsetClock) {
	t.Helper()
	clk := &offsetClock{}
	clk.offset.Store(int64(-5 * time.Minute))
	return start(t, runner, func(c *discord.Config) { c.Clock = clk.Now; c.EditWindow = 10 * time.Minute }), clk
}

// restart closes the adapter and connects another for the same bot, as a
// restart or a deploy does: what the old one remembered is gone, and every
// message so far is older than the new one.
func (e *env) restart(clk *offsetClock) {
	e.t.Helper()
	closeBot(e.t, e)
	clk.offset.Store(0)
	e.open()
}

// lookups are the message list requests of the env's channel.
func (e *env) lookups() []fakediscord.Request {
	return fake.Requests(fakediscord.Match("GET", "/channels/"+e.channel+"/messages"))
}

// replyID is the id of the message a reply request created.
func replyID(t *testing.T, r fakediscord.Request) string {
	t.Helper()
	var m discordgo.Message
	if err := r.DecodeResponse(&m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func TestEditAfterRestartEditsTheSameReply(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e, clk := restartable(t, runner)
	m := e.say("!run " + block)
	reply := replyID(t, e.replyTo(e.channel, m.ID))
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("PUT", "/channels/"+e.channel+"/messages/"+m.ID+"/reactions/✅/@me")); err != nil {
		t.Fatal(err)
	}
	if n := len(e.lookups()); n != 0 {
		t.Fatalf("%d lookups for a new message, want 0", n)
	}
	e.restart(clk)

	edited := *m
	edited.Content = "!run ```python\nprint(2)\n```"
	e.fbot.MessageUpdate(edited)
	patch, err := fake.WaitRequest(e.ctx, fakediscord.Match("PATCH", "/channels/"+e.channel+"/messages/"+reply))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch.Content(), "ran: print(2)") {
		t.Fatalf("the reply was edited to %q", patch.Content())
	}
	closeBot(t, e)
	if rs := fake.Requests(isReplyTo(e.channel, m.ID)); len(rs) != 1 {
		t.Fatalf("%d replies to the message, want 1", len(rs))
	}
	// One lookup finds the reply, one recovers the message's session.
	lookups := e.lookups()
	if len(lookups) != 2 {
		t.Fatalf("%d lookups, want 2", len(lookups))
	}
	for _, l := range lookups {
		if l.Query.Get("after") != m.ID || l.Query.Get("limit") != "100" {
			t.Fatalf("lookup %+v, want one after the message", l.Query)
		}
	}
	// Which of ✅/❌ was on the message is unknown after a restart: the
	// other one is taken off, the right one put on.
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", "/channels/"+e.channel+"/messages/"+m.ID+"/reactions/❌/@me")); err != nil {
		t.Fatal(err)
	}
	if n := len(runner.Jobs()); n != 2 {
		t.Fatalf("%d jobs, want 2", n)
	}
}

func TestDeleteAfterRestartDeletesTheReply(t *testing.T) {
	t.Parallel()
	e, clk := restartable(t, &fakerunner.Runner{})
	m := e.say("!run " + block)
	reply := replyID(t, e.replyTo(e.channel, m.ID))
	// Other talk after the reply does not hide it.
	for range 3 {
		e.say("nice")
	}
	e.restart(clk)

	e.fbot.MessageDelete(e.channel, m.ID, e.guild)
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", "/channels/"+e.channel+"/messages/"+reply)); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.Message(reply); ok {
		t.Fatal("the reply is still there")
	}
}

func TestReactionAfterRestartDoesNotAnswerAgain(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e, clk := restartable(t, runner)
	m := fake.PutMessage(discordgo.Message{ChannelID: e.channel, Author: e.user, Content: block})
	e.fbot.ReactionAdd(e.channel, m.ID, e.guild, "▶️", e.user)
	e.replyTo(e.channel, m.ID)
	e.restart(clk)

	e.fbot.ReactionAdd(e.channel, m.ID, e.guild, "▶️", e.user)
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("GET", "/channels/"+e.channel+"/messages")); err != nil {
		t.Fatal(err)
	}
	closeBot(t, e)
	if rs := fake.Requests(isReplyTo(e.channel, m.ID)); len(rs) != 1 {
		t.Fatalf("%d replies to the message, want 1", len(rs))
	}
	if n := len(runner.Jobs()); n != 1 {
		t.Fatalf("%d jobs, want 1", n)
	}
}

// The map keeps answers for the edit window only; deleting an older
// message still deletes its reply, found on Discord.
func TestDeleteAfterTheMapForgotDeletesTheReply(t *testing.T) {
	t.Parallel()
	e, clk := restartable(t, &fakerunner.Runner{})
	m := e.say("!run " + block)
	reply := replyID(t, e.replyTo(e.channel, m.ID))
	clk.offset.Add(int64(discord.DefaultEditWindow + 6*time.Minute)) // past the window, by the adapter's clock
	e.fbot.MessageDelete(e.channel, m.ID, e.guild)
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", "/channels/"+e.channel+"/messages/"+reply)); err != nil {
		t.Fatal(err)
	}
}
