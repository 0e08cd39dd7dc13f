package slack

import (
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/internal/fakeslack"
	"github.com/runblock/runblock/internal/store/storetest"
)

// settings sends "/run settings args" from user in team and returns the
// ephemeral answer.
func (r *replica) settings(team, user, args string) string {
	r.t.Helper()
	respURL := r.fake.ResponseURL()
	form := url.Values{"command": {"/run"}, "text": {strings.TrimSpace("settings " + args)}, "team_id": {team}, "user_id": {user},
		"channel_id": {"C1"}, "response_url": {respURL}, "trigger_id": {"trig"}}
	if status, body := send(r.t, r.url+"/slack/events", "application/x-www-form-urlencoded", []byte(form.Encode()), secret, time.Now()); status != http.StatusOK {
		r.t.Fatalf("/run settings %s: %d %s", args, status, body)
	}
	posted, err := r.fake.WaitPosted(r.ctx, respURL[strings.LastIndexByte(respURL, '/')+1:])
	if err != nil {
		r.t.Fatal(err)
	}
	if posted.Body["response_type"] != "ephemeral" {
		r.t.Errorf("/run settings %s answered for everyone: %v", args, posted.Body)
	}
	text, _ := posted.Body["text"].(string)
	return text
}

// react puts a message with code into a fresh channel of id's workspace,
// sends the reaction name to it and returns the message.
func (r *replica) react(id fakeslack.Identity, name, code string) fakeslack.Message {
	r.t.Helper()
	m := r.fake.PutMessage(fakeslack.Message{Channel: r.fake.NewID("C"), User: r.fake.NewID("U"), Text: "```" + code + "```"})
	p, _ := r.fake.EventCallbackIn(id, map[string]any{"type": "reaction_added", "user": "UREACTS", "reaction": name,
		"item": map[string]any{"type": "message", "channel": m.Channel, "ts": m.TS}, "event_ts": m.TS})
	if status := r.event(p); status != http.StatusOK {
		r.t.Fatalf("reaction_added: %d", status)
	}
	return m
}

// TestWorkspaceSettingsApplyToItsEvents: an admin's /run settings change
// the run reaction and turn sessions off in their workspace; the next
// events there follow, another workspace's do not; a member is refused
// and changes nothing; a value out of bounds is refused with the reason.
func TestWorkspaceSettingsApplyToItsEvents(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	runner := &fakerunner.Runner{}
	r := distribute(t, fake, storetest.SQLite(t), runner)
	one := r.install(fakeslack.Install{TeamID: "T1ONE", UserID: "UADMIN"})
	two := r.install(fakeslack.Install{TeamID: "T2TWO", UserID: "UOTHER"})
	fake.SetAdmin("UADMIN")

	if got := r.settings("T1ONE", "UMEMBER", "reaction rocket"); !strings.Contains(got, "Only the workspace's admins and owners") {
		t.Errorf("a member's change answered %q", got)
	}
	if st, err := r.store.Settings(r.ctx, Platform, "T1ONE"); err != nil || st.RunReaction != "" {
		t.Errorf("after a member's change the store holds %+v %v", st, err)
	}
	for _, c := range []struct{ args, want string }{
		{"edit_window 5m", "Nothing changed: edits do not re-run on this runblock (the operator's SLACK_EDIT_WINDOW)"},
		{"sessions maybe", "Nothing changed: sessions must be `on` or `off`"},
		{"reaction a b", "Nothing changed: the reaction must be one emoji's name"},
		{"channels #chat", `Nothing changed: "#chat" is not a channel`},
		{"colour blue", `Nothing changed: there is no setting "colour"`},
		{"", "Run reaction: :arrow_forward: (the default)"},
		{"sessions off", "Sessions: off (every message runs alone) (set here)"},
		{"reaction :rocket:", "Run reaction: :rocket: (set here)"},
	} {
		if got := r.settings("T1ONE", "UADMIN", c.args); !strings.Contains(got, c.want) {
			t.Errorf("/run settings %s answered %q, want %q", c.args, got, c.want)
		}
	}

	// The first workspace runs on :rocket:, alone; the second keeps ▶️
	// and its sessions.
	r.replyIn(r.react(one, "rocket", "print(1)"), "print(1)")
	r.replyIn(r.react(two, "arrow_forward", "print(2)"), "print(2)")
	m1, ev1 := r.mention(one, "print(3)")
	m2, ev2 := r.mention(two, "print(4)")
	r.event(ev1)
	r.event(ev2)
	r.replyIn(m1, "print(3)")
	r.replyIn(m2, "print(4)")
	r.react(two, "rocket", "print(5)")
	r.react(one, "arrow_forward", "print(6)")
	r.close()
	sessions := map[string]bool{}
	for _, j := range runner.Jobs() {
		sessions[j.Request.Code] = j.Request.Session != nil
	}
	want := map[string]bool{"print(1)": false, "print(2)": true, "print(3)": false, "print(4)": true}
	if !maps.Equal(sessions, want) {
		t.Errorf("runs (code: in a session) %v, want %v: the first workspace's alone", sessions, want)
	}
}

// TestWorkspaceSettingsStoreDown: with the store down a change answers
// "try again" and changes nothing, and runs are still answered with the
// operator's settings (the failed read logged once).
func TestWorkspaceSettingsStoreDown(t *testing.T) {
	t.Parallel()
	st := openStore(t, storetest.SQLite(t))
	h := start(t, Config{Store: st}, echo, true)
	h.fake.SetAdmin("UADMIN")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ch := h.channel()
	for _, code := range []string{"print('down')", "print('still down')"} {
		h.reply(h.mention(ch, h.user(), "```"+code+"```"), "ran "+code)
	}
	respURL := h.fake.ResponseURL()
	h.fake.SendSlashCommand(map[string]string{"command": "/run", "text": "settings reaction rocket", "user_id": "UADMIN",
		"channel_id": ch, "response_url": respURL})
	posted, err := h.fake.WaitPosted(h.ctx, respURL[strings.LastIndexByte(respURL, '/')+1:])
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := posted.Body["text"].(string); !strings.Contains(text, "nothing changed. Try again in a moment") {
		t.Errorf("a change with the store down answered %q", text)
	}
	if logs := h.logs.String(); strings.Count(logs, "reading a workspace's settings; the operator's apply meanwhile") != 1 {
		t.Errorf("log:\n%s", logs)
	}
}

// TestWorkspaceUserRate: a workspace holds its users to a rate of its
// own; another workspace is unaffected.
func TestWorkspaceUserRate(t *testing.T) {
	t.Parallel()
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	runner := &fakerunner.Runner{}
	r := distribute(t, fake, storetest.SQLite(t), runner)
	one := r.install(fakeslack.Install{TeamID: "T1ONE", UserID: "UADMIN"})
	two := r.install(fakeslack.Install{TeamID: "T2TWO", UserID: "UOTHER"})
	fake.SetAdmin("UADMIN")
	if got := r.settings("T1ONE", "UADMIN", "user_rate 1/h"); !strings.Contains(got, "Per-user rate: 1/h (set here)") {
		t.Fatalf("answered %q", got)
	}
	say := func(id fakeslack.Identity, code, want string) {
		t.Helper()
		m := fake.PutMessage(fakeslack.Message{Channel: fake.NewID("C"), User: "USAME", Text: "<@" + fakeslack.BotUserID + "> ```" + code + "```"})
		p, _ := fake.EventCallbackIn(id, map[string]any{"type": "app_mention", "channel": m.Channel, "user": m.User, "text": m.Text, "ts": m.TS, "event_ts": m.TS})
		r.event(p)
		if want != "Slow down" {
			r.replyIn(m, want)
			return
		}
		// A refusal goes to the user alone.
		if _, err := fake.WaitCall(r.ctx, "chat.postEphemeral", func(c fakeslack.Call) bool {
			return c.Get("channel") == m.Channel && c.Get("user") == "USAME" && strings.Contains(c.Get("text"), want)
		}); err != nil {
			t.Fatalf("no %q to %s: %v", want, m.Channel, err)
		}
	}
	say(one, "print(1)", "ran: print(1)")
	say(one, "print(2)", "Slow down")
	say(two, "print(3)", "ran: print(3)")
	say(two, "print(4)", "ran: print(4)")
	if n := len(runner.Jobs()); n != 3 {
		t.Errorf("%d runs reached the scheduler, want 3", n)
	}
}
