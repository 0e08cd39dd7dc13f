package discord_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	rb "github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakediscord"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// posted returns the message a reply request created.
func posted(t *testing.T, r fakediscord.Request) discordgo.Message {
	t.Helper()
	var m discordgo.Message
	if err := r.DecodeResponse(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// buttons returns the custom ids of the buttons on message id, by action.
func buttons(t *testing.T, id string) map[rb.Action]string {
	t.Helper()
	var rows []struct {
		Type       int `json:"type"`
		Components []struct {
			Type     int    `json:"type"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	raw := fake.Components(id)
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatalf("components %s: %v", raw, err)
	}
	out := make(map[rb.Action]string)
	for _, r := range rows {
		for _, c := range r.Components {
			if a, _, ok := rb.ParseButton(c.CustomID); ok && r.Type == 1 && c.Type == 2 {
				out[a] = c.CustomID
			}
		}
	}
	return out
}

// click clicks the button id on the reply m as user, a member with perms,
// and returns the interaction.
func (e *env) click(m discordgo.Message, user *discordgo.User, perms int64, id string) fakediscord.Interaction {
	return e.fbot.InteractionCreate(map[string]any{
		"type": discordgo.InteractionMessageComponent, "channel_id": e.channel, "guild_id": e.guild,
		"member":  map[string]any{"user": user, "permissions": strconv.FormatInt(perms, 10)},
		"message": m,
		"data":    map[string]any{"custom_id": id, "component_type": discordgo.ButtonComponent},
	})
}

// told waits for what the clicker alone is told: the deferred ephemeral
// response, edited.
func (e *env) told(in fakediscord.Interaction, want string) {
	e.t.Helper()
	if typ, r := e.callback(in); typ != discordgo.InteractionResponseDeferredChannelMessageWithSource || !strings.Contains(string(r.JSON), `"flags":64`) {
		e.t.Fatalf("callback %d %s: want a deferred ephemeral response", typ, r.JSON)
	}
	r := e.original(in)
	if r.Content() != want {
		e.t.Fatalf("told %q, want %q", r.Content(), want)
	}
}

// gone waits for the deferred response to a click with nothing to tell to
// be deleted.
func (e *env) gone(in fakediscord.Interaction) {
	e.t.Helper()
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", "/webhooks/"+e.fbot.AppID+"/"+in.Token+"/messages/@original")); err != nil {
		e.t.Fatal(err)
	}
}

func TestButtonsDelete(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	stranger := &discordgo.User{ID: fake.NewID(), Username: "eve"}
	admin := &discordgo.User{ID: fake.NewID(), Username: "mod"}
	for _, tc := range []struct {
		name    string
		clicker *discordgo.User
		perms   int64
	}{
		{"the author", e.user, 0},
		{"a moderator", admin, discordgo.PermissionManageMessages},
		{"an administrator", admin, discordgo.PermissionAdministrator},
	} {
		m := e.say("!run\n```py\nprint(1)\n```")
		r := posted(t, e.replyTo(e.channel, m.ID))
		ids := buttons(t, r.ID)
		if _, ok := ids[rb.ActionFull]; ok || ids[rb.ActionDelete] == "" || ids[rb.ActionAgain] == "" {
			t.Fatalf("buttons %v: want Run again and Delete, no Full output on a reply that was not cut", ids)
		}
		e.told(e.click(r, stranger, discordgo.PermissionSendMessages, ids[rb.ActionDelete]), rb.OnlyAuthor)
		if _, ok := fake.Message(r.ID); !ok {
			t.Fatal("a stranger deleted the reply")
		}
		in := e.click(r, tc.clicker, tc.perms, ids[rb.ActionDelete])
		e.gone(in)
		if _, ok := fake.Message(r.ID); ok {
			t.Fatalf("%s could not delete the reply", tc.name)
		}
		e.told(e.click(r, e.user, 0, ids[rb.ActionDelete]), rb.Deleted)
	}
}

// TestButtonsDeleteOfAReplyGone: a Delete on a reply that is gone (a
// moderator deleted it, or another click a moment before: Discord answers
// 10008 Unknown Message) is told so, never that it failed, and the
// buttons do not come back.
func TestButtonsDeleteOfAReplyGone(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	m := e.say("!run\n```py\nprint(1)\n```")
	r := posted(t, e.replyTo(e.channel, m.ID))
	ids := buttons(t, r.ID)
	mod, err := discordgo.New("Bot " + e.fbot.Token)
	if err != nil {
		t.Fatal(err)
	}
	mod.Client = fake.Client()
	if err := mod.ChannelMessageDelete(e.channel, r.ID, discordgo.WithContext(e.ctx)); err != nil {
		t.Fatal(err)
	}
	e.told(e.click(r, e.user, 0, ids[rb.ActionDelete]), rb.Deleted)
	e.told(e.click(r, e.user, 0, ids[rb.ActionDelete]), rb.Deleted)
}

// tenLines runs code with "range(10)" in it to ten lines, more than the
// view of the tests' replies.
func tenLines(ctx context.Context, job executor.Job) (executor.Result, error) {
	if strings.Contains(job.Request.Code, "range(10)") {
		return executor.Result{Success: true, Stdout: strings.Repeat("line\n", 10)}, nil
	}
	return fakerunner.Echo("ran: ")(ctx, job)
}

func TestButtonsRunAgainAndFullOutput(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{Func: tenLines}
	e := start(t, runner, func(c *discord.Config) { c.Render.MaxLines = 3 })
	clicker := &discordgo.User{ID: fake.NewID(), Username: "bob"}
	m := e.say("!run\n```py\nprint('\\n'.join(map(str, range(10))))\n```")
	req := e.replyTo(e.channel, m.ID)
	r := posted(t, req)
	ids := buttons(t, r.ID)
	if ids[rb.ActionFull] == "" {
		t.Fatalf("buttons %v: a cut reply has Full output", ids)
	}
	golden(t, "buttons.golden.json", fake.Components(r.ID))

	e.gone(e.click(r, clicker, 0, ids[rb.ActionAgain]))
	again, err := fake.WaitRequests(e.ctx, 2, answer(isReplyTo(e.channel, m.ID)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(buttons(t, posted(t, again[1]).ID)); n != 4 { // with Export notebook
		t.Fatalf("the new reply has %d buttons", n)
	}
	jobs := runner.Jobs()
	if len(jobs) != 2 || !strings.HasSuffix(jobs[0].User, ":"+e.user.ID) || !strings.HasSuffix(jobs[1].User, ":"+clicker.ID) {
		t.Fatalf("jobs of %q, %q: want the author's, then the clicker's", jobs[0].User, jobs[len(jobs)-1].User)
	}

	e.gone(e.click(r, clicker, 0, ids[rb.ActionFull]))
	full, err := fake.WaitRequest(e.ctx, func(x fakediscord.Request) bool {
		return isReplyTo(e.channel, m.ID)(x) && x.Content() == rb.FullOutputIs
	})
	if err != nil {
		t.Fatal(err)
	}
	if fm := posted(t, full); len(fm.Attachments) != 1 || fm.Attachments[0].Filename != "output.txt" {
		t.Fatalf("full output attachments %+v", fm.Attachments)
	}
}

func TestButtonsTooOld(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	old := fake.PutMessage(discordgo.Message{ChannelID: e.channel, Author: &discordgo.User{ID: e.fbot.AppID, Bot: true}, Content: "an earlier process's reply"})
	for _, a := range []rb.Action{rb.ActionDelete, rb.ActionAgain, rb.ActionFull} {
		e.told(e.click(*old, e.user, discordgo.PermissionAdministrator, rb.ButtonID(a, "0000.1")), rb.TooOld)
	}
	if _, ok := fake.Message(old.ID); !ok {
		t.Fatal("an old reply was deleted")
	}
}

// golden compares the components JSON raw, its token made "T", with
// testdata/name (-update rewrites it).
func golden(t *testing.T, name string, raw json.RawMessage) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(regexp.MustCompile(`(rb:[a-z]+:)[^"]+`).ReplaceAll(got, []byte("${1}T")), '\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("components:\n%s\nwant (%s):\n%s", got, path, want)
	}
}
