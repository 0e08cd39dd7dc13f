package discord_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	rb "github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/internal/fakediscord"
)

// webhook is the path of the webhook of interaction in, with rest after
// it: "/messages/@original", or "" for its follow-ups.
func (e *env) webhook(in fakediscord.Interaction, rest string) string {
	return "/webhooks/" + e.fbot.AppID + "/" + in.Token + rest
}

// answered waits for the answer of in in its response and returns the
// response message.
func (e *env) answered(in fakediscord.Interaction) discordgo.Message {
	e.t.Helper()
	return posted(e.t, e.original(in))
}

// clickIn clicks the button id on the message m in channel as user: in a
// guild a member with perms, else (guild "") a DM's user.
func (e *env) clickIn(channel, guild string, m discordgo.Message, user *discordgo.User, perms int64, id string) fakediscord.Interaction {
	d := map[string]any{
		"type": discordgo.InteractionMessageComponent, "channel_id": channel, "message": m,
		"data": map[string]any{"custom_id": id, "component_type": discordgo.ButtonComponent},
	}
	if guild != "" {
		d["guild_id"] = guild
		d["member"] = map[string]any{"user": user, "permissions": strconv.FormatInt(perms, 10)}
	} else {
		d["user"] = user
	}
	return e.fbot.InteractionCreate(d)
}

// acked waits for the callback of in and fails unless it is of type typ,
// ephemeral as said.
func (e *env) acked(in fakediscord.Interaction, typ discordgo.InteractionResponseType, ephemeral bool) {
	e.t.Helper()
	got, r := e.callback(in)
	if got != typ || strings.Contains(string(r.JSON), `"flags":64`) != ephemeral {
		e.t.Fatalf("callback %d %s: want type %d, ephemeral %v", got, r.JSON, typ, ephemeral)
	}
}

// followedUp waits for the ephemeral follow-up of in that tells want.
func (e *env) followedUp(in fakediscord.Interaction, want string) {
	e.t.Helper()
	r, err := fake.WaitRequest(e.ctx, fakediscord.Match("POST", e.webhook(in, "")))
	if err != nil {
		e.t.Fatal(err)
	}
	var p struct {
		Flags discordgo.MessageFlags `json:"flags"`
	}
	if err := r.Decode(&p); err != nil || p.Flags&discordgo.MessageFlagsEphemeral == 0 || r.Content() != want || r.Status != 200 {
		e.t.Fatalf("follow-up %d %s: want %q only the clicker sees", r.Status, r.JSON, want)
	}
	assertNoMentions(e.t, r)
}

// TestSlashRunAnswerHasButtons: the answer to /run carries Run again and
// Delete, as a message reply does, in one edit of the deferred response.
func TestSlashRunAnswerHasButtons(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	in := e.slash(codeOption("print(6 * 7)"))
	e.acked(in, discordgo.InteractionResponseDeferredChannelMessageWithSource, false)
	m := e.answered(in)
	if !strings.Contains(m.Content, "ran: print(6 * 7)") {
		t.Fatalf("answer %q", m.Content)
	}
	golden(t, "interaction_buttons.golden.json", fake.Components(m.ID))
	// A fast run: one answer, no output so far, nothing else.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.bot.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sent := fake.Requests(func(r fakediscord.Request) bool { return strings.HasPrefix(r.Path, e.webhook(in, "")) })
	if len(sent) != 1 || sent[0].Method != "PATCH" || sent[0].Path != e.webhook(in, "/messages/@original") {
		for _, r := range sent {
			t.Logf("%s %s %q", r.Method, r.Path, r.Content())
		}
		t.Fatalf("%d requests on the interaction's webhook, want the one answer", len(sent))
	}
}

// TestSlashRunAnswerRunAgainAndFullOutput: Run again on a /run answer runs
// the code as a new job of the clicker, answered through the click like a
// /run (with its own buttons), long after the /run's token expired; Full
// output shows the whole output to the clicker alone.
func TestSlashRunAnswerRunAgainAndFullOutput(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{Func: tenLines}
	e := start(t, runner, func(c *discord.Config) { c.Render.MaxLines = 3 })
	clicker := &discordgo.User{ID: fake.NewID(), Username: "bob"}
	in := e.slash(codeOption("print('\\n'.join(map(str, range(10))))"))
	m := e.answered(in)
	ids := buttons(t, m.ID)
	if len(ids) != 3 {
		t.Fatalf("buttons %v: want Run again, Delete and Full output", ids)
	}
	fake.Expire(in.Token)

	again := e.click(m, clicker, 0, ids[rb.ActionAgain])
	e.acked(again, discordgo.InteractionResponseDeferredChannelMessageWithSource, false)
	m2 := e.answered(again)
	if !strings.Contains(m2.Content, "line") || len(buttons(t, m2.ID)) != 3 {
		t.Fatalf("run again answered %q with buttons %v", m2.Content, buttons(t, m2.ID))
	}
	jobs := runner.Jobs()
	if len(jobs) != 2 || jobs[0].User != "discord:"+e.guild+":"+e.user.ID || jobs[1].User != "discord:"+e.guild+":"+clicker.ID {
		t.Fatalf("jobs of %q, %q: want the author's, then the clicker's", jobs[0].User, jobs[len(jobs)-1].User)
	}

	full := e.click(m, clicker, 0, ids[rb.ActionFull])
	e.acked(full, discordgo.InteractionResponseDeferredChannelMessageWithSource, true)
	r := e.original(full)
	if r.Content() != rb.FullOutputIs || len(r.Files) != 1 || r.Files[0].Name != "output.txt" || !strings.Contains(string(r.Files[0].Data), strings.Repeat("line\n", 10)) {
		t.Fatalf("full output %q with files %+v", r.Content(), r.Files)
	}
	if rs := fake.Requests(func(r fakediscord.Request) bool { return strings.HasPrefix(r.Path, "/channels/"+e.channel+"/messages") }); len(rs) != 0 {
		t.Fatalf("the bot posted in the channel: %s %s", rs[0].Method, rs[0].Path)
	}
}

// TestSlashRunAnswerDelete: only the author, or a member who may manage
// messages, deletes a /run answer, also past the 15 minutes of its token
// and where the bot cannot see the channel (a user-installed app in a DM):
// the click's deferred update deletes the message the button is on.
// Everyone else is told so, alone.
func TestSlashRunAnswerDelete(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	stranger := &discordgo.User{ID: fake.NewID(), Username: "eve"}
	mod := &discordgo.User{ID: fake.NewID(), Username: "mod"}
	dm := fake.NewID()
	fake.NoAccess(dm)
	for _, tc := range []struct {
		name           string
		channel, guild string
		clicker        *discordgo.User
		perms          int64
	}{
		{"the author in a server", e.channel, e.guild, e.user, 0},
		{"a moderator in a server", e.channel, e.guild, mod, discordgo.PermissionManageMessages},
		{"the author of a user install's answer in a DM", dm, "", e.user, 0},
	} {
		var in fakediscord.Interaction
		if tc.guild == "" {
			in = e.invoke(fakediscord.Invocation{Name: discord.CommandRun, Context: discordgo.InteractionContextPrivateChannel, ChannelID: dm, UserInstall: true,
				Data: map[string]any{"options": []any{codeOption("print(1)")}}})
		} else {
			in = e.slash(codeOption("print(1)"))
		}
		m := e.answered(in)
		del := buttons(t, m.ID)[rb.ActionDelete]
		if del == "" {
			t.Fatalf("%s: the answer has no Delete button", tc.name)
		}
		no := e.clickIn(tc.channel, tc.guild, m, stranger, discordgo.PermissionSendMessages, del)
		e.acked(no, discordgo.InteractionResponseDeferredMessageUpdate, false)
		e.followedUp(no, rb.OnlyAuthor)
		if _, ok := fake.Message(m.ID); !ok {
			t.Fatalf("%s: a stranger deleted the answer", tc.name)
		}
		fake.Expire(in.Token)
		yes := e.clickIn(tc.channel, tc.guild, m, tc.clicker, tc.perms, del)
		e.acked(yes, discordgo.InteractionResponseDeferredMessageUpdate, false)
		if _, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool {
			return fakediscord.Match("DELETE", e.webhook(yes, "/messages/@original"))(r) && r.Status == 204
		}); err != nil {
			t.Fatal(err)
		}
		if _, ok := fake.Message(m.ID); ok {
			t.Fatalf("%s could not delete the answer", tc.name)
		}
	}
	if rs := fake.Requests(func(r fakediscord.Request) bool { return strings.HasPrefix(r.Path, "/channels/"+dm+"/") }); len(rs) != 0 {
		t.Fatalf("the bot called the DM's channel: %s %s", rs[0].Method, rs[0].Path)
	}
}

// TestSlashRunAnswerButtonsTooOld: the buttons of an interaction's answer
// this process does not know (an earlier process's) answer each click
// with a clear line the clicker alone sees, and change nothing.
func TestSlashRunAnswerButtonsTooOld(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	old := fake.PutMessage(discordgo.Message{ChannelID: e.channel, Author: &discordgo.User{ID: e.fbot.AppID, Bot: true}, WebhookID: e.fbot.AppID, Content: "an earlier process's answer"})
	del := e.click(*old, e.user, 0, rb.ButtonID(rb.ActionDelete, "0000.1"))
	e.acked(del, discordgo.InteractionResponseDeferredMessageUpdate, false)
	e.followedUp(del, rb.TooOld)

	again := e.click(*old, e.user, 0, rb.ButtonID(rb.ActionAgain, "0000.1"))
	e.acked(again, discordgo.InteractionResponseDeferredChannelMessageWithSource, false)
	if _, err := fake.WaitRequest(e.ctx, fakediscord.Match("DELETE", e.webhook(again, "/messages/@original"))); err != nil {
		t.Fatal(err)
	}
	e.followedUp(again, rb.TooOld)

	e.told(e.click(*old, e.user, 0, rb.ButtonID(rb.ActionFull, "0000.1")), rb.TooOld)
	if _, ok := fake.Message(old.ID); !ok {
		t.Fatal("an old answer was deleted")
	}
}

// TestSlashRunLiveOutput: a /run still going after the grace shows its
// output so far in its response, edited as it grows, and the result with
// its buttons replaces it there: one answer, no follow-up, no output
// twice.
func TestSlashRunLiveOutput(t *testing.T) {
	t.Parallel()
	clock := fakerunner.NewClock()
	runner, outputs, written, end := fakerunner.Scripted(4 * time.Second)
	e := start(t, runner, func(c *discord.Config) { c.LiveClock = clock })
	in := e.slash(codeOption("print('step one')"))
	e.acked(in, discordgo.InteractionResponseDeferredChannelMessageWithSource, false)
	edit := fakediscord.Match("PATCH", e.webhook(in, "/messages/@original"))
	outputs <- "step one\n"
	<-written
	clock.Advance(2 * time.Second)
	first, err := fake.WaitRequest(e.ctx, edit)
	if err != nil {
		t.Fatal(err)
	}
	if c := first.Content(); !strings.HasPrefix(c, "**Running** · 2 s\n") || !strings.Contains(c, "step one") {
		t.Fatalf("live answer %q", c)
	}
	outputs <- "step one\nstep two\n"
	<-written
	clock.Advance(time.Second)
	live, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool { return edit(r) && r.Seq > first.Seq })
	if err != nil {
		t.Fatal(err)
	}
	if c := live.Content(); !strings.HasPrefix(c, "**Running** · 3 s\n") || !strings.Contains(c, "step two") {
		t.Fatalf("live edit %q", c)
	}
	close(end)
	final, err := fake.WaitRequest(e.ctx, func(r fakediscord.Request) bool { return edit(r) && strings.HasPrefix(r.Content(), "**OK**") })
	if err != nil {
		t.Fatal(err)
	}
	if c := final.Content(); strings.Count(c, "step one") != 1 || strings.Count(c, "step two") != 1 {
		t.Fatalf("result %q", c)
	}
	m := posted(t, final)
	if len(buttons(t, m.ID)) != 2 {
		t.Fatalf("the result's buttons: %v", buttons(t, m.ID))
	}
	if got, ok := fake.Original(in.Token); !ok || got.ID != m.ID || got.Content != final.Content() {
		t.Fatalf("the response is %q (%s), want the result in message %s", got.Content, got.ID, m.ID)
	}
	if edits := fake.Requests(edit); len(edits) != 3 {
		t.Fatalf("%d edits of the response, want the output twice and the result", len(edits))
	}
	if rs := fake.Requests(fakediscord.Match("POST", e.webhook(in, ""))); len(rs) != 0 {
		t.Fatalf("%d follow-ups", len(rs))
	}
}
