package slack

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakeslack"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ (buttons, manifests)")

// buttonIDs returns the action ids of the buttons on m, by action.
func buttonIDs(t *testing.T, m fakeslack.Message) map[answer.Action]string {
	t.Helper()
	var atts []struct {
		Blocks []struct {
			Type     string `json:"type"`
			Elements []struct {
				ActionID string `json:"action_id"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(m.Attachments), &atts); err != nil {
		t.Fatalf("attachments %q: %v", m.Attachments, err)
	}
	out := make(map[answer.Action]string)
	for _, a := range atts {
		for _, b := range a.Blocks {
			for _, e := range b.Elements {
				if action, _, ok := answer.ParseButton(e.ActionID); ok && b.Type == "actions" {
					out[action] = e.ActionID
				}
			}
		}
	}
	return out
}

// click clicks the button id on the reply r as user and returns the id of
// the click's response_url.
func (h *harness) click(r fakeslack.Message, user, id string) string {
	url := h.fake.ClickURL(r)
	h.fake.SendInteractive(h.fake.BlockActions(r, user, id, url))
	return url[strings.LastIndex(url, "/")+1:]
}

// told waits for the ephemeral answer to a click (its response_url id).
func (h *harness) told(id, want string) {
	h.t.Helper()
	p, err := h.fake.WaitPosted(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	if p.Body["text"] != want || p.Body["response_type"] != "ephemeral" {
		h.t.Fatalf("told %+v, want %q to the clicker alone", p.Body, want)
	}
}

// tenLines runs code with "range(10)" in it to ten lines, more than the
// view of the tests' replies.
func tenLines(ctx context.Context, job executor.Job) (executor.Result, error) {
	if strings.Contains(job.Request.Code, "range(10)") {
		return executor.Result{Success: true, Stdout: strings.Repeat("line\n", 10)}, nil
	}
	return echo(ctx, job)
}

func TestButtonsDelete(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	ch, author, stranger, admin := h.channel(), h.user(), h.user(), h.user()
	h.fake.SetAdmin(admin)
	for _, tc := range []struct {
		name, clicker string
	}{{"the author", author}, {"an admin", admin}} {
		m := h.mention(ch, author, "```python\nprint(1)\n```")
		r := h.reply(m, "ran print(1)")
		ids := buttonIDs(t, r)
		if _, ok := ids[answer.ActionFull]; ok || ids[answer.ActionDelete] == "" || ids[answer.ActionAgain] == "" {
			t.Fatalf("buttons %v: want Run again and Delete, no Full output on a reply that was not cut", ids)
		}
		h.told(h.click(r, stranger, ids[answer.ActionDelete]), answer.OnlyAuthor)
		if _, ok := h.fake.Get(ch, r.TS); !ok {
			t.Fatal("a stranger deleted the reply")
		}
		h.click(r, tc.clicker, ids[answer.ActionDelete])
		if err := h.fake.WaitGone(h.ctx, ch, r.TS); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// The reply is gone, and its buttons say so.
		h.told(h.click(r, author, ids[answer.ActionDelete]), answer.Deleted)
	}
}

func TestButtonsRunAgainAndFullOutput(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{Func: tenLines}
	cfg := Config{}
	cfg.Render.MaxLines = 3
	h := start(t, cfg, runner, true)
	ch, author, clicker := h.channel(), h.user(), h.user()
	m := h.mention(ch, author, "```python\nprint('\\n'.join(map(str, range(10))))\n```")
	r := h.reply(m, "line")
	ids := buttonIDs(t, r)
	if ids[answer.ActionFull] == "" {
		t.Fatalf("buttons %v: a cut reply has Full output", ids)
	}
	h.click(r, clicker, ids[answer.ActionAgain])
	again, err := h.fake.WaitMessage(h.ctx, ch, func(x fakeslack.Message) bool {
		return x.BotID == fakeslack.BotID && x.ThreadTS == m.TS && x.TS != r.TS && strings.Contains(x.Text, "line") && x.Attachments != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(buttonIDs(t, again)) != 4 { // with Export notebook: a cell of the thread's session
		t.Fatalf("the new reply's buttons: %q", again.Attachments)
	}
	jobs := runner.Jobs()
	if len(jobs) != 2 || jobs[0].User != "slack:"+fakeslack.TeamID+":"+author || jobs[1].User != "slack:"+fakeslack.TeamID+":"+clicker {
		t.Fatalf("jobs of %v, want the author's then the clicker's", []string{jobs[0].User, jobs[len(jobs)-1].User})
	}
	// The reply has its whole output as a file: Full output points to
	// it, to the clicker alone, and posts no second copy.
	outputs := func(fs []fakeslack.File) int {
		n := 0
		for _, f := range fs {
			if f.Filename == "output.txt" && f.Length == len(strings.Repeat("line\n", 10)) {
				n++
			}
		}
		return n
	}
	if _, err := h.fake.WaitFiles(h.ctx, ch, m.TS, func(fs []fakeslack.File) bool { return outputs(fs) == 2 }); err != nil {
		t.Fatal(err) // the reply's and the Run again's
	}
	h.told(h.click(r, clicker, ids[answer.ActionFull]), answer.FullOutputIn)
	if n := outputs(h.fake.Files(ch, m.TS)); n != 2 {
		t.Fatalf("%d output.txt files in the thread, want the two replies' only", n)
	}
	for _, x := range h.fake.BotReplies(ch, m.TS) {
		if x.Text == answer.FullOutputIs {
			t.Fatal("Full output posted a second copy")
		}
	}
}

// TestButtonsDeleteOfAReplyGone: a Delete on a reply that is gone (a
// moderator deleted it, or another click a moment before) is told so,
// never that it failed, and the buttons do not come back.
func TestButtonsDeleteOfAReplyGone(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	ch, author := h.channel(), h.user()
	m := h.mention(ch, author, "```python\nprint(1)\n```")
	r := h.reply(m, "ran print(1)")
	ids := buttonIDs(t, r)
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(h.fake.APIURL()))
	if _, _, err := api.DeleteMessageContext(h.ctx, ch, r.TS); err != nil {
		t.Fatal(err)
	}
	h.told(h.click(r, author, ids[answer.ActionDelete]), answer.Deleted)
	h.told(h.click(r, author, ids[answer.ActionDelete]), answer.Deleted)
}

func TestButtonsTooOld(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	ch := h.channel()
	r := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: fakeslack.BotUserID, BotID: fakeslack.BotID, Text: "an earlier process's reply"})
	for _, a := range []answer.Action{answer.ActionDelete, answer.ActionAgain, answer.ActionFull} {
		h.told(h.click(r, h.user(), answer.ButtonID(a, "0000.1")), answer.TooOld)
	}
	if _, ok := h.fake.Get(ch, r.TS); !ok {
		t.Fatal("an old reply was deleted")
	}
}

func TestButtonsGolden(t *testing.T) {
	got, err := json.MarshalIndent(buttonsAttachment(buttonsBlockID, []answer.Button{
		{Action: answer.ActionAgain, Label: "Run again", ID: answer.ButtonID(answer.ActionAgain, "t.1")},
		{Action: answer.ActionDelete, Label: "Delete", ID: answer.ButtonID(answer.ActionDelete, "t.1")},
		{Action: answer.ActionFull, Label: "Full output", ID: answer.ButtonID(answer.ActionFull, "t.1")},
	}), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "buttons.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(got)+"\n" {
		t.Fatalf("buttons:\n%s\nwant (testdata/buttons.golden.json; -update rewrites it):\n%s", got, want)
	}
}

// TestCommandAnswersHaveButtons: the answers to /run (a top-level message)
// and to the "Run code" shortcut (a reply in the message's thread) go
// through the same flow as a mention's and carry its buttons; Delete on
// the /run answer is the author's alone.
func TestCommandAnswersHaveButtons(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	ch, u, stranger := h.channel(), h.user(), h.user()
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "print(5)", "user_id": u, "channel_id": ch, "trigger_id": "trig", "response_url": h.fake.ResponseURL()})
	slash, err := h.fake.WaitMessage(h.ctx, ch, func(m fakeslack.Message) bool {
		return m.BotID == fakeslack.BotID && m.ThreadTS == "" && strings.Contains(m.Text, "ran print(5)")
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := buttonIDs(t, slash)
	if ids[answer.ActionAgain] == "" || ids[answer.ActionDelete] == "" {
		t.Fatalf("/run answer's buttons %v", ids)
	}
	h.told(h.click(slash, stranger, ids[answer.ActionDelete]), answer.OnlyAuthor)
	h.click(slash, u, ids[answer.ActionDelete])
	if err := h.fake.WaitGone(h.ctx, ch, slash.TS); err != nil {
		t.Fatal(err)
	}

	m := h.fake.PutMessage(fakeslack.Message{Channel: ch, User: "U0LLM", BotID: "B0LLM", Text: "```python\nprint(7)\n```"})
	h.fake.SendInteractive(map[string]any{"type": "message_action", "callback_id": ShortcutCallbackID, "trigger_id": "t",
		"response_url": h.fake.ResponseURL(), "user": map[string]any{"id": u}, "channel": map[string]any{"id": ch},
		"message": map[string]any{"type": "message", "user": "U0LLM", "bot_id": "B0LLM", "text": m.Text, "ts": m.TS}})
	if ids := buttonIDs(t, h.reply(m, "ran print(7)")); ids[answer.ActionAgain] == "" || ids[answer.ActionDelete] == "" {
		t.Fatalf("shortcut answer's buttons %v", ids)
	}
}

// runNotIn runs code with /run as user in channel, a channel the bot is not
// a member of, and returns the answer posted through the command's
// response_url, which holds want.
func (h *harness) runNotIn(channel, user, code, want string) fakeslack.Message {
	h.t.Helper()
	h.fake.Script("chat.postMessage", fakeslack.Response{Error: "not_in_channel"})
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": code, "user_id": user, "channel_id": channel, "response_url": h.fake.ResponseURLIn(channel)})
	r, err := h.fake.WaitMessage(h.ctx, channel, func(m fakeslack.Message) bool {
		return m.BotID == fakeslack.BotID && strings.Contains(m.Text, want)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// TestResponseURLReplyDelete: /run in a channel the bot is not a member of
// is answered through the command's response_url with the buttons of every
// reply; Delete is the author's alone and removes the answer through the
// click's response_url, since the bot can neither see nor delete it.
func TestResponseURLReplyDelete(t *testing.T) {
	t.Parallel()
	h := start(t, Config{}, echo, true)
	ch, author, stranger := h.channel(), h.user(), h.user()
	r := h.runNotIn(ch, author, "print(5)", "ran print(5)")
	ids := buttonIDs(t, r)
	if _, ok := ids[answer.ActionFull]; ok || ids[answer.ActionDelete] == "" || ids[answer.ActionAgain] == "" {
		t.Fatalf("buttons %v: want Run again and Delete, no Full output on a reply that was not cut", ids)
	}
	h.told(h.click(r, stranger, ids[answer.ActionDelete]), answer.OnlyAuthor)
	if _, ok := h.fake.Get(ch, r.TS); !ok {
		t.Fatal("a stranger deleted the answer")
	}
	id := h.click(r, author, ids[answer.ActionDelete])
	if err := h.fake.WaitGone(h.ctx, ch, r.TS); err != nil {
		t.Fatal(err)
	}
	if p, err := h.fake.WaitPosted(h.ctx, id); err != nil || p.Body["delete_original"] != true {
		t.Fatalf("the click's response_url got %+v (%v), want delete_original", p.Body, err)
	}
	if n := len(h.fake.Calls("chat.delete")); n != 0 {
		t.Fatalf("%d chat.delete calls for an answer the bot cannot delete", n)
	}
	h.told(h.click(r, author, ids[answer.ActionDelete]), answer.Deleted)
}

// TestResponseURLReplyRunAgainAndFullOutput: Run again on an answer posted
// through a response_url, the bot still not in the channel, answers
// through the click's response_url, a job of the clicker with the buttons
// again; Full output comes to the clicker alone, as text.
func TestResponseURLReplyRunAgainAndFullOutput(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{Func: tenLines}
	cfg := Config{}
	cfg.Render.MaxLines = 3
	h := start(t, cfg, runner, true)
	ch, author, clicker := h.channel(), h.user(), h.user()
	r := h.runNotIn(ch, author, "print('\\n'.join(map(str, range(10))))", "line")
	ids := buttonIDs(t, r)
	if len(ids) != 3 {
		t.Fatalf("buttons %v: a cut answer has Run again, Delete and Full output", ids)
	}
	h.fake.Script("chat.postMessage", fakeslack.Response{Error: "not_in_channel"})
	h.click(r, clicker, ids[answer.ActionAgain])
	again, err := h.fake.WaitMessage(h.ctx, ch, func(x fakeslack.Message) bool {
		return x.BotID == fakeslack.BotID && x.TS != r.TS && strings.Contains(x.Text, "line")
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(buttonIDs(t, again)) != 3 {
		t.Fatalf("the new answer's buttons: %q", again.Attachments)
	}
	jobs := runner.Jobs()
	if len(jobs) != 2 || jobs[1].User != "slack:"+fakeslack.TeamID+":"+clicker {
		t.Fatalf("%d jobs, want the author's then the clicker's", len(jobs))
	}
	h.fake.Script("chat.postMessage", fakeslack.Response{Error: "not_in_channel"})
	p, err := h.fake.WaitPosted(h.ctx, h.click(r, clicker, ids[answer.ActionFull]))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := p.Body["text"].(string)
	if p.Body["response_type"] != "ephemeral" || !strings.HasPrefix(text, answer.FullOutputIs+"\n") || strings.Count(text, "line") != 10 {
		t.Fatalf("full output %+v: want the ten lines to the clicker alone", p.Body)
	}
}
