package slack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/internal/fakeslack"
)

// say posts "<@bot> text" by user in thread (a top-level message when
// thread is ""), with files, and sends Slack's events for it.
func (h *harness) say(channel, thread, user, text string, files ...map[string]any) fakeslack.Message {
	m := h.fake.PutMessage(fakeslack.Message{Channel: channel, ThreadTS: thread, User: user, Text: "<@" + fakeslack.BotUserID + "> " + text, Files: files})
	ev := map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": m.Text, "ts": m.TS, "event_ts": m.TS, "files": files}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	h.fake.SendEvent(ev)
	h.fake.SendEvent(messageEvent(m, "channel"))
	return m
}

// cell waits for the bot's reply to m, whose first line is header and
// which contains want.
func (h *harness) cell(m fakeslack.Message, header, want string) fakeslack.Message {
	h.t.Helper()
	r, err := h.fake.WaitMessage(h.ctx, m.Channel, func(x fakeslack.Message) bool {
		return x.BotID == fakeslack.BotID && x.Metadata != nil && x.Metadata.EventPayload["source_ts"] == m.TS && strings.Contains(x.Text, want) && !isLive(x.Text)
	})
	if err != nil {
		h.t.Fatalf("no reply to %s holding %q: %v; replies: %+v", m.TS, want, err, h.fake.BotReplies(m.Channel, threadOf(m.ThreadTS, m.TS)))
	}
	if first, _, _ := strings.Cut(r.Text, "\n"); first != header {
		h.t.Fatalf("reply %q, want it to begin %q", r.Text, header)
	}
	return r
}

func code(c string) string { return "```" + c + "```" }

// TestThreadIsASession: a top-level message starts a session, the
// messages in its thread continue it whoever posts them, an edit of the
// first re-runs all three into their replies, a reset (a mention, /run
// reset) starts it fresh; another thread never sees it.
func TestThreadIsASession(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	h := start(t, Config{EditWindow: DefaultEditWindow}, runner, true)
	ch, ada, bob := h.channel(), h.user(), h.user()
	m1 := h.say(ch, "", ada, code("a=1"))
	r1 := h.cell(m1, "[1]", "after : a=1")
	m2 := h.say(ch, m1.TS, bob, code("b=a"))
	r2 := h.cell(m2, "[2]", "after a=1: b=a")
	m3 := h.say(ch, m1.TS, ada, code("print(b)"))
	r3 := h.cell(m3, "[3]", "after a=1,b=a: print(b)")
	other := h.say(ch, "", bob, code("print(a)"))
	h.cell(other, "[1]", "after : print(a)")

	h.edit(m1, "<@"+fakeslack.BotUserID+"> "+code("a=2"))
	for _, want := range []struct {
		r    fakeslack.Message
		text string
	}{{r1, "[1]"}, {r2, "after a=2: b=a"}, {r3, "after a=2,b=a: print(b)"}} {
		if _, err := h.fake.WaitMessage(h.ctx, ch, func(m fakeslack.Message) bool {
			return m.TS == want.r.TS && strings.Contains(m.Text, want.text)
		}); err != nil {
			got, _ := h.fake.Get(ch, want.r.TS)
			t.Fatalf("reply %s is %q, want it to contain %q: %v", want.r.TS, got.Text, want.text, err)
		}
	}
	wantJobs := []string{"a=1 <- []", "b=a <- [a=1]", "print(b) <- [a=1 b=a]", "print(a) <- []",
		"a=2 <- []", "b=a <- [a=2]", "print(b) <- [a=2 b=a]"}
	if got := runner.Replays(); !slices.Equal(got, wantJobs) {
		t.Fatalf("jobs:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(wantJobs, "\n  "))
	}

	// A mention with only "reset" starts the session fresh.
	h.reply(h.say(ch, m1.TS, bob, "reset"), answer.ResetText)
	session := "slack:" + fakeslack.TeamID + ":" + ch + ":" + m1.TS
	if got := runner.Ended(); !slices.Equal(got, []string{session}) {
		t.Fatalf("ended %v, want %s", got, session)
	}
	h.cell(h.say(ch, m1.TS, ada, code("x=1")), "[1]", "after : x=1")

	// /run reset names no thread: it resets the session the user last
	// ran a cell in, in that channel.
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "reset", "user_id": ada, "channel_id": ch, "response_url": h.fake.ResponseURL()})
	if _, err := h.fake.WaitCalls(h.ctx, "chat.postMessage", 2, func(c fakeslack.Call) bool {
		return c.Get("thread_ts") == m1.TS && c.Get("text") == answer.ResetText
	}); err != nil {
		t.Fatal(err)
	}
	// Someone who ran nothing there is told so.
	url := h.fake.ResponseURL()
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "reset", "user_id": h.user(), "channel_id": ch, "response_url": url})
	if p, err := h.fake.WaitPosted(h.ctx, url[strings.LastIndex(url, "/")+1:]); err != nil || !strings.Contains(fmt.Sprint(p.Body["text"]), "no session") {
		t.Fatalf("posted %+v, %v; want a notice", p, err)
	}
	h.settle()
	if got := runner.Ended(); len(got) != 2 || got[1] != session {
		t.Fatalf("ended %v, want %s twice", got, session)
	}
}

// TestSessionRecoveredAfterRestart: after a restart the first cell in a
// thread recovers the session's cells from the thread once, the input
// files of the earlier cells with them, and its reply says the state was
// rebuilt.
func TestSessionRecoveredAfterRestart(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	h, clk := restartable(t, Config{}, runner)
	ch, ada := h.channel(), h.user()
	csv := []byte("x\n1\n")
	data := h.fake.AddUserFile(fakeslack.UserFile{Name: "data.csv", Mimetype: "text/csv", Content: csv, Size: -1})
	m1 := h.say(ch, "", ada, code("df=read('data.csv')"), data)
	h.cell(m1, "[1]", "df=read")
	h.cell(h.say(ch, m1.TS, ada, code("raise")), "[2]", "Error")
	h.cell(h.say(ch, m1.TS, ada, code("n=len(df)")), "[3]", "n=len(df)")
	if r := runner.Jobs()[2].Request.Session.Replay; len(r) != 1 || len(r[0].Files) != 1 || string(r[0].Files[0].Content) != string(csv) {
		t.Fatalf("the third cell's replay %+v, want the first cell with its file", r)
	}
	h.restart(clk)
	// The new process's executor holds nothing either.
	_ = runner.Sessions.End(h.ctx, "slack:"+fakeslack.TeamID+":"+ch+":"+m1.TS)
	before := len(h.lookups())
	h.cell(h.say(ch, m1.TS, ada, code("print(n)")), "[4] · state rebuilt from 2 earlier cells", "print(n)")
	h.cell(h.say(ch, m1.TS, ada, code("print(df)")), "[5]", "print(df)")
	h.settle()
	if n := len(h.lookups()) - before; n != 1 {
		t.Fatalf("%d conversations.replies calls after the restart, want 1", n)
	}
	jobs := runner.Jobs()
	last := jobs[len(jobs)-2].Request.Session.Replay
	if len(last) != 2 || last[0].Code != "df=read('data.csv')" || len(last[0].Files) != 1 ||
		last[0].Files[0].Path != "data.csv" || string(last[0].Files[0].Content) != string(csv) {
		t.Fatalf("the replay after the restart: %+v, want the first cell with its file, then the third", last)
	}
}

// TestRunReactionContinuesTheSession: an LLM writes its answer in two
// messages of a thread; the run reaction on the second runs it in the
// session of the first.
func TestRunReactionContinuesTheSession(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	h := start(t, Config{}, runner, true)
	ch, u := h.channel(), h.user()
	react := func(m fakeslack.Message) {
		h.fake.SendEvent(map[string]any{"type": "reaction_added", "user": u, "reaction": DefaultRunReaction, "item_user": m.User,
			"item": map[string]any{"type": "message", "channel": m.Channel, "ts": m.TS}, "event_ts": m.TS})
	}
	first := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "Load it:\n```python\ndf=load()\n```"})
	react(first)
	h.cell(first, "[1]", "df=load()")
	second := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", ThreadTS: first.TS, Text: "Then:\n```python\nprint(df)\n```"})
	react(second)
	h.cell(second, "[2]", "after df=load(): print(df)")
}

// TestSessionsOffRunsAlone: with sessions off a thread's messages run
// alone, as before.
func TestSessionsOffRunsAlone(t *testing.T) {
	t.Parallel()
	runner := fakerunner.NewSessions()
	h := start(t, Config{NoSessions: true}, runner, true)
	ch, u := h.channel(), h.user()
	m := h.say(ch, "", u, code("a=1"))
	h.reply(m, "alone: a=1")
	h.reply(h.say(ch, m.TS, u, code("print(a)")), "alone: print(a)")
	h.say(ch, m.TS, u, "reset")
	h.ephemeral(ch, u, "")
	h.settle()
	if len(runner.Ended()) != 0 {
		t.Fatal("a session was ended with sessions off")
	}
}
