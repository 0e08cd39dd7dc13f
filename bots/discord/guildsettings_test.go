package discord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/internal/fakediscord"
	"github.com/runblock/runblock/internal/store"
	"github.com/runblock/runblock/internal/store/storetest"
)

// settingsOptions is the data of /runblock settings with options.
func settingsOptions(kv ...string) map[string]any {
	var opts []any
	for i := 0; i+1 < len(kv); i += 2 {
		opts = append(opts, map[string]any{"name": kv[i], "type": discordgo.ApplicationCommandOptionString, "value": kv[i+1]})
	}
	return map[string]any{"options": []any{map[string]any{"name": "settings", "type": discordgo.ApplicationCommandOptionSubCommand, "options": opts}}}
}

// settings uses /runblock settings in the env's guild as a member with
// perms and returns the ephemeral answer.
func (e *env) settings(perms int64, kv ...string) string {
	e.t.Helper()
	in := e.invoke(fakediscord.Invocation{Name: discord.CommandRunblock, Context: discordgo.InteractionContextGuild, GuildID: e.guild,
		ChannelID: e.channel, GuildInstall: true, Permissions: perms, Data: settingsOptions(kv...)})
	return e.ephemeralAnswer(in)
}

func (e *env) ephemeralAnswer(in fakediscord.Interaction) string {
	e.t.Helper()
	typ, r := e.callback(in)
	var p struct {
		Data struct {
			Content string                 `json:"content"`
			Flags   discordgo.MessageFlags `json:"flags"`
		} `json:"data"`
	}
	if err := r.Decode(&p); err != nil || typ != discordgo.InteractionResponseChannelMessageWithSource || p.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		e.t.Fatalf("not an ephemeral answer: %d %s", typ, r.JSON)
	}
	return p.Data.Content
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	loc, err := store.ParseLocation(storetest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), loc, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestGuildSettingsChangeTheNextRun: a member with Manage Server changes
// the guild's prefix and channels with /runblock settings, kept in a real
// SQLite store; the next messages and /run in that guild follow them.
func TestGuildSettingsChangeTheNextRun(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.Settings = st; c.EditWindow = 10 * time.Minute })
	other := fake.NewID()

	got := e.settings(discordgo.PermissionManageGuild, "prefix", "?py", "channels", "<#"+other+">")
	for _, want := range []string{"Prefix: `?py` (set here)", "Channels: <#" + other + "> (set here)", "Edit window: 10m (the default; at most 10m)"} {
		if !strings.Contains(got, want) {
			t.Fatalf("settings answer %q lacks %q", got, want)
		}
	}
	saved, err := st.Settings(e.ctx, "discord", e.guild)
	if err != nil || saved.Prefix != "?py" || len(saved.Channels) != 1 || saved.Channels[0] != other {
		t.Fatalf("stored %+v %v", saved, err)
	}

	old := e.sayIn(other, e.guild, e.user, "!run `print('old prefix')`")
	m := e.sayIn(other, e.guild, e.user, "?py `print('new prefix')`")
	if r := e.replyTo(other, m.ID); !strings.Contains(r.Content(), "ran: print('new prefix')") {
		t.Fatalf("new prefix answered %q", r.Content())
	}
	if rs := fake.Requests(isReplyTo(other, old.ID)); len(rs) != 0 {
		t.Fatalf("the old prefix still runs: %s", rs[0].JSON)
	}
	in := e.slash(codeOption("print('outside')"))
	if got := e.ephemeralAnswer(in); !strings.Contains(got, "Not in this channel") {
		t.Fatalf("/run outside the guild's channels answered %q", got)
	}
	for _, j := range runner.Jobs() {
		if strings.Contains(j.Request.Code, "old prefix") || strings.Contains(j.Request.Code, "outside") {
			t.Fatalf("ran %q", j.Request.Code)
		}
	}

	// Back to the defaults: the operator's prefix runs in the channel again.
	if got := e.settings(discordgo.PermissionAdministrator, "prefix", "default", "channels", "default"); !strings.Contains(got, "Prefix: `!run` (the default)") {
		t.Fatalf("reset answered %q", got)
	}
	m = e.say("!run `print('default again')`")
	e.replyTo(e.channel, m.ID)
}

// TestGuildSettingsNeedManageServer: Discord does not offer the command to
// a member without Manage Server; where a server widened it anyway, the
// bot refuses and changes nothing.
func TestGuildSettingsNeedManageServer(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.Settings = st })
	if _, err := e.fbot.Invoke(fakediscord.Invocation{Name: discord.CommandRunblock, Context: discordgo.InteractionContextGuild, GuildID: e.guild,
		ChannelID: e.channel, User: e.user, GuildInstall: true, Permissions: discordgo.PermissionSendMessages, Data: settingsOptions("prefix", "?py")}); err == nil {
		t.Fatal("Discord offers /runblock settings to a member without Manage Server")
	}
	in := e.fbot.InteractionCreate(map[string]any{
		"type": discordgo.InteractionApplicationCommand, "channel_id": e.channel, "guild_id": e.guild, "context": 0,
		"authorizing_integration_owners": map[string]string{"0": e.guild},
		"member":                         map[string]any{"user": e.user, "permissions": "2048"},
		"data":                           map[string]any{"id": "1", "name": "runblock", "type": 1, "options": settingsOptions("prefix", "?py")["options"]},
	})
	if got := e.ephemeralAnswer(in); !strings.Contains(got, "Manage Server") {
		t.Fatalf("answered %q", got)
	}
	if saved, err := st.Settings(e.ctx, "discord", e.guild); err != nil || saved.Prefix != "" {
		t.Fatalf("stored %+v %v", saved, err)
	}
	m := e.say("!run `print(1)`")
	e.replyTo(e.channel, m.ID)
}

// TestGuildSettingsBounds: the operator's DISCORD_CHANNELS and
// DISCORD_EDIT_WINDOW bound what a guild chooses; a wrong option changes
// nothing and says why.
func TestGuildSettingsBounds(t *testing.T) {
	t.Parallel()
	allowed := fake.NewID()
	e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.Channels = []string{allowed}; c.EditWindow = 5 * time.Minute })
	tests := []struct {
		kv   []string
		want string
	}{
		{[]string{"channels", "<#" + fake.NewID() + ">"}, "is not one of the channels this runblock's operator allows"},
		{[]string{"channels", "general"}, `"general" is not a channel`},
		{[]string{"edit_window", "1h"}, "at most 5m"},
		{[]string{"edit_window", "soon"}, "must be a duration"},
		{[]string{"prefix", "run code"}, "without spaces"},
		{[]string{"prefix", "?py", "edit_window", "1h"}, "Nothing changed"},
		{nil, "Prefix: `!run` (the default)"},
		{[]string{"edit_window", "0", "reaction", "<:snake:123456789012345678>", "channels", allowed}, "Edit window: never (set here; at most 5m)"},
		{nil, "Run reaction: snake (set here)"},
	}
	for _, tt := range tests {
		if got := e.settings(discordgo.PermissionManageGuild, tt.kv...); !strings.Contains(got, tt.want) {
			t.Errorf("%v: answered %q, want %q", tt.kv, got, tt.want)
		}
	}
}

// TestGuildSettingsSurviveRestart: what a guild chose is in the store, so
// a new process (a restart, a deploy) follows it from its first message.
func TestGuildSettingsSurviveRestart(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.Settings = st })
	e.settings(discordgo.PermissionManageGuild, "prefix", "?py")
	closeBot(t, e)
	e.open()
	m := e.say("?py `print('after restart')`")
	if r := e.replyTo(e.channel, m.ID); !strings.Contains(r.Content(), "ran: print('after restart')") {
		t.Fatalf("answered %q", r.Content())
	}
}

// TestGuildSettingsStoreDown: when the store cannot be read the
// environment's settings apply (the log says why, once, and the store is
// not asked again at every message); an admin's change is refused with
// "try again" rather than saved over settings it could not read.
func TestGuildSettingsStoreDown(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.Settings = st })
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"print('store down')", "print('still down')"} {
		m := e.say("!run `" + code + "`")
		if r := e.replyTo(e.channel, m.ID); !strings.Contains(r.Content(), "ran: "+code) {
			t.Fatalf("answered %q", r.Content())
		}
	}
	if got := e.settings(discordgo.PermissionManageGuild, "prefix", "?py"); !strings.Contains(got, "could not be read or saved just now; nothing changed") {
		t.Fatalf("answered %q", got)
	}
	if logs := e.logs.String(); strings.Count(logs, "reading a guild's settings; the operator's apply meanwhile") != 1 || !strings.Contains(logs, `msg="reading a guild's settings" guild=`) {
		t.Fatalf("log:\n%s", logs)
	}
}

// TestGuildUserRate: a guild holds its members to a rate below the
// operator's; another guild, and the operator's ceiling, are unaffected.
func TestGuildUserRate(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, func(c *discord.Config) { c.UserRate, c.UserBurst = 5.0/60, 2 })
	if got := e.settings(discordgo.PermissionManageGuild, "user_rate", "10/min"); !strings.Contains(got, "at most 5/min") {
		t.Fatalf("over the ceiling answered %q", got)
	}
	if got := e.settings(discordgo.PermissionManageGuild, "user_rate", "1/h"); !strings.Contains(got, "Per-user rate: 1/h (set here; at most 5/min)") {
		t.Fatalf("answered %q", got)
	}
	for i, want := range []string{"ran: print(1)", "ran: print(2)", "**Slow down**"} {
		m := e.say("!run `print(" + string(rune('1'+i)) + ")`")
		if r := e.replyTo(e.channel, m.ID); !strings.Contains(r.Content(), want) {
			t.Fatalf("run %d answered %q, want %q", i+1, r.Content(), want)
		}
	}
	other := fake.NewID()
	m := e.sayIn(e.channel, other, e.user, "!run `print('elsewhere')`")
	if r := e.replyTo(e.channel, m.ID); !strings.Contains(r.Content(), "ran: print('elsewhere')") {
		t.Fatalf("another guild answered %q", r.Content())
	}
	if n := len(runner.Jobs()); n != 3 {
		t.Fatalf("%d runs reached the scheduler, want 3", n)
	}
}
