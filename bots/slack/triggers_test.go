package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakeslack"
)

func TestDirectMessage(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	u := h.user()
	m := h.message("D0DM", u, "```\nprint('dm')\n```")
	h.fake.SendEvent(messageEvent(m, "im"))
	h.reply(m, "ran print('dm')")
	// A mention in a DM runs once, as a message.
	dm := h.message("D0DM", u, "<@U0BOT> `print('both')`")
	h.fake.SendEvent(map[string]any{"type": "app_mention", "channel": "D0DM", "user": u, "text": dm.Text, "ts": dm.TS})
	h.fake.SendEvent(messageEvent(dm, "im"))
	h.reply(dm, "ran print('both')")
	hi := h.message("D0DM", u, "hi")
	h.fake.SendEvent(messageEvent(hi, "im"))
	h.ephemeral("D0DM", u, "No code found")
	h.settle()
	if n := len(h.fake.Calls("chat.postMessage")); n != 2 {
		t.Fatalf("%d posts, want 2 (the mention in a DM runs once)", n)
	}
}

func TestEditReRunsInPlaceAndDeleteRemovesReply(t *testing.T) {
	t.Parallel()
	var clk clock
	h := start(t, Config{EditWindow: 10 * time.Minute}, echo, true, clk.install())
	m := h.mention(h.channel(), h.user(), "```print(1)```")
	first := h.reply(m, "ran print(1)")
	h.reaction(m, "white_check_mark")

	m = h.edit(m, "<@U0BOT> ```print(2)```")
	r := h.reply(m, "ran print(2)")
	if r.TS != first.TS || r.Edits != 1 {
		t.Fatalf("edit re-run posted %+v, want the reply %s updated once", r, first.TS)
	}
	// An edit into something that does not run says so in place.
	m = h.edit(m, "<@U0BOT> never mind")
	h.reply(m, "No code found")
	if _, err := h.fake.WaitCall(h.ctx, "reactions.remove", fakeslack.Param("name", "white_check_mark")); err != nil {
		t.Fatal(err)
	}

	clk.advance(11 * time.Minute)
	m = h.edit(m, "<@U0BOT> ```print(3)```")
	h.remove(m)
	if err := h.fake.WaitGone(h.ctx, m.Channel, first.TS); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if calls := h.fake.Calls("chat.update"); len(calls) != 2 {
		t.Fatalf("%d updates, want 2 (the edit past the window is not re-run): %+v", len(calls), calls)
	}
	if n := len(h.fake.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("%d posts, want 1", n)
	}
}

// TestTombstoneDeletesReply: a message with thread replies deleted on Slack
// becomes a tombstone (message_changed); its reply goes as with
// message_deleted, in a listed channel and for a mention alike.
func TestTombstoneDeletesReply(t *testing.T) {
	t.Parallel()
	var clk clock
	h := start(t, Config{Channels: []string{"C0OK"}, EditWindow: 10 * time.Minute}, echo, true, clk.install())
	listed := h.message("C0OK", h.user(), "```print('listed')```")
	h.fake.SendEvent(messageEvent(listed, "channel"))
	mention := h.mention("C0OK", h.user(), "```print('mention')```")
	replies := []fakeslack.Message{h.reply(listed, "ran print('listed')"), h.reply(mention, "ran print('mention')")}
	clk.advance(time.Hour) // deleting is not editing: no window applies
	for i, m := range []fakeslack.Message{listed, mention} {
		h.bury(m)
		if err := h.fake.WaitGone(h.ctx, m.Channel, replies[i].TS); err != nil {
			t.Fatal(err)
		}
	}
	h.settle()
	if calls := h.fake.Calls("chat.update"); len(calls) != 0 {
		t.Fatalf("the tombstone was answered: %+v", calls)
	}
}

func TestEditAddingCodeInListedChannelRuns(t *testing.T) {
	t.Parallel()
	h := start(t, Config{Channels: []string{"C0OK"}, EditWindow: time.Minute}, echo, true)
	m := h.message("C0OK", h.user(), "print(1) oops no fence")
	h.fake.SendEvent(messageEvent(m, "channel"))
	m = h.edit(m, "```print(1)```")
	h.reply(m, "ran print(1)")
}

func TestLongOutputUploadsFile(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	long := fakerunner.Func(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: strings.Join(lines, "\n") + "\n"}, nil
	})
	var clk clock
	h := start(t, Config{EditWindow: time.Minute}, long, true, clk.install())
	m := h.mention(h.channel(), h.user(), "```for i in range(100): print(f'line {i}')```")
	r := h.reply(m, "line 0")
	if strings.Contains(r.Text, "line 99") {
		t.Fatalf("reply not cut: %q", r.Text)
	}
	f, err := h.fake.WaitFile(h.ctx, m.Channel, m.TS)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(f.Content), "line 99") || f.Length != len(f.Content) {
		t.Fatalf("file %s (%d of %d bytes) lacks the full output", f.Filename, len(f.Content), f.Length)
	}
	// A re-run replaces the file.
	h.edit(m, "<@U0BOT> ```print('again')```")
	if _, err := h.fake.WaitCall(h.ctx, "files.delete", fakeslack.Param("file", f.ID)); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if fs := h.fake.Files(m.Channel, m.TS); len(fs) != 1 || fs[0].ID == f.ID {
		t.Fatalf("files after the re-run: %+v", fs)
	}
}

func TestSlashCommand(t *testing.T) {
	t.Parallel()
	h := start(t, Config{Channels: []string{"C0OK"}}, echo, true)
	u := h.user()
	env := h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "print(5)", "user_id": u, "channel_id": "C0OK", "trigger_id": "trig", "response_url": h.fake.ResponseURL()})
	r, err := h.fake.WaitMessage(h.ctx, "C0OK", func(m fakeslack.Message) bool {
		return m.BotID == fakeslack.BotID && m.ThreadTS == "" && strings.Contains(m.Text, "ran print(5)")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitAck(h.ctx, env); err != nil {
		t.Fatal(err)
	}
	if len(r.Reactions) != 0 {
		t.Fatalf("reactions on the reply: %v", r.Reactions)
	}

	// In a channel the bot is not in, the reply goes through the response_url.
	h.fake.Script("chat.postMessage", fakeslack.Response{Error: "not_in_channel"})
	viaURL := h.fake.ResponseURL()
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "print(6)", "user_id": u, "channel_id": "C0OK", "response_url": viaURL})
	p, err := h.fake.WaitPosted(h.ctx, viaURL[strings.LastIndex(viaURL, "/")+1:])
	if err != nil {
		t.Fatal(err)
	}
	if p.Body["response_type"] != "in_channel" || !strings.Contains(fmt.Sprint(p.Body["text"]), "ran print(6)") ||
		p.Body["parse"] != "none" || p.Body["link_names"] != false {
		t.Fatalf("response_url post: %v", p.Body)
	}

	// Not in a listed channel: an ephemeral line through the response_url.
	url := h.fake.ResponseURL()
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "print(5)", "user_id": u, "channel_id": "C0NO", "response_url": url})
	p, err = h.fake.WaitPosted(h.ctx, url[strings.LastIndex(url, "/")+1:])
	if err != nil {
		t.Fatal(err)
	}
	if p.Body["response_type"] != "ephemeral" || !strings.Contains(fmt.Sprint(p.Body["text"]), "Not in this channel") ||
		p.Body["parse"] != "none" || p.Body["link_names"] != false {
		t.Fatalf("response_url post: %v", p.Body)
	}
}

func TestSlashCommandModal(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	u, ch := h.user(), h.channel()
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": " ", "user_id": u, "channel_id": ch, "trigger_id": "trig-1"})
	open, err := h.fake.WaitCall(h.ctx, "views.open", fakeslack.Param("trigger_id", "trig-1"))
	if err != nil {
		t.Fatal(err)
	}
	view := open.Get("view")
	for _, want := range []string{`"callback_id":"runblock_run"`, `"private_metadata":"` + ch + `"`, `"multiline":true`, `"action_id":"code"`} {
		if !strings.Contains(view, want) {
			t.Fatalf("view lacks %s: %s", want, view)
		}
	}
	env := h.fake.SendInteractive(map[string]any{"type": "view_submission", "user": map[string]any{"id": u},
		"view": map[string]any{"id": "V1", "callback_id": ModalCallbackID, "private_metadata": ch,
			"state": map[string]any{"values": map[string]any{"code": map[string]any{"code": map[string]any{"type": "plain_text_input", "value": "print('modal')\nprint(2)"}}}}}})
	if _, err := h.fake.WaitMessage(h.ctx, ch, func(m fakeslack.Message) bool {
		return m.BotID == fakeslack.BotID && strings.Contains(m.Text, "ran print('modal')")
	}); err != nil {
		t.Fatal(err)
	}
	a, err := h.fake.WaitAck(h.ctx, env)
	if err != nil || len(a.Payload) != 0 {
		t.Fatalf("view submission ack %+v, %v: want an empty ack (closes the modal)", a, err)
	}
}

func TestMessageShortcut(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	ch, u := h.channel(), h.user()
	m := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "Here you go:\n```python\nprint(7)\n```"})
	h.fake.SendInteractive(map[string]any{"type": "message_action", "callback_id": ShortcutCallbackID, "trigger_id": "t",
		"response_url": h.fake.ResponseURL(), "user": map[string]any{"id": u}, "channel": map[string]any{"id": ch},
		"message": map[string]any{"type": "message", "user": "U0LLM", "bot_id": "B0LLM", "text": m.Text, "ts": m.TS}})
	h.reply(m, "ran print(7)")
	h.reaction(m, "white_check_mark")
}

func TestReactionRunsBotMessage(t *testing.T) {
	t.Parallel()
	h := start(t, Config{RunReaction: ":rocket:"}, echo, true)
	ch, u := h.channel(), h.user()
	react := func(m fakeslack.Message, name string) {
		h.fake.SendEvent(map[string]any{"type": "reaction_added", "user": u, "reaction": name, "item_user": m.User,
			"item": map[string]any{"type": "message", "channel": m.Channel, "ts": m.TS}, "event_ts": m.TS})
	}
	llm := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "```python\nprint(8)\n```"})
	react(llm, "thumbsup")
	react(llm, "rocket")
	r := h.reply(llm, "ran print(8)")
	h.reaction(llm, "white_check_mark")

	// A reply in a thread is found through conversations.replies.
	inThread := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", ThreadTS: llm.TS, Text: "```python\nprint(9)\n```"})
	react(inThread, "rocket")
	h.reply(inThread, "ran print(9)")

	// The bot's own reply is output, not code.
	own, _ := h.fake.Get(ch, r.TS)
	react(own, "rocket")
	last := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "```python\nprint(10)\n```"})
	react(last, "rocket")
	h.reply(last, "ran print(10)")
	h.settle()
	if n := len(h.fake.BotReplies(ch, llm.TS)); n != 2 {
		t.Fatalf("thread of the first message has %d bot replies, want 2: %+v", n, h.fake.BotReplies(ch, llm.TS))
	}
	if n := len(h.fake.Calls("chat.postMessage")); n != 3 {
		t.Fatalf("%d posts, want 3", n)
	}
}
