package discord_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/fakediscord"
)

// invoke uses a command as Discord's client would offer it, failing the
// test when it would not.
func (e *env) invoke(in fakediscord.Invocation) fakediscord.Interaction {
	e.t.Helper()
	if in.User == nil {
		in.User = e.user
	}
	i, err := e.fbot.Invoke(in)
	if err != nil {
		e.t.Fatal(err)
	}
	return i
}

// TestUserInstallInDMRepliesThroughInteraction: a person who added the app
// to their account uses /run and Apps → Run code in a DM with someone else,
// a channel the bot cannot see: the answers come through the interaction
// (deferred, then the original response edited), and the bot never calls
// the channel itself.
func TestUserInstallInDMRepliesThroughInteraction(t *testing.T) {
	t.Parallel()
	runner := &fakerunner.Runner{}
	e := start(t, runner, nil)
	dm := fake.NewID()
	fake.NoAccess(dm)

	slash := e.invoke(fakediscord.Invocation{Name: discord.CommandRun, Context: discordgo.InteractionContextPrivateChannel, ChannelID: dm, UserInstall: true,
		Data: map[string]any{"options": []any{codeOption("print('dm')")}}})
	if typ, _ := e.callback(slash); typ != discordgo.InteractionResponseDeferredChannelMessageWithSource {
		t.Fatalf("callback type %d, want deferred", typ)
	}
	if r := e.original(slash); !strings.Contains(r.Content(), "ran: print('dm')") {
		t.Fatalf("/run answered %q", r.Content())
	}

	friend := &discordgo.User{ID: fake.NewID(), Username: "grace"}
	target := fake.PutMessage(discordgo.Message{ChannelID: dm, Author: friend, Content: "```python\nprint('theirs')\n```"})
	menu := e.invoke(fakediscord.Invocation{Name: discord.CommandRunCode, Type: discordgo.MessageApplicationCommand, Context: discordgo.InteractionContextPrivateChannel,
		ChannelID: dm, UserInstall: true, Data: map[string]any{"target_id": target.ID, "resolved": map[string]any{"messages": map[string]any{target.ID: target}}}})
	if r := e.original(menu); !strings.Contains(r.Content(), "ran: print('theirs')") {
		t.Fatalf("Run code answered %q", r.Content())
	}

	// Without code: a notice only the user sees, still through the
	// interaction.
	empty := e.invoke(fakediscord.Invocation{Name: discord.CommandRunCode, Type: discordgo.MessageApplicationCommand, Context: discordgo.InteractionContextPrivateChannel,
		ChannelID: dm, UserInstall: true, Data: map[string]any{"target_id": target.ID, "resolved": map[string]any{"messages": map[string]any{target.ID: discordgo.Message{ID: target.ID, ChannelID: dm, Author: friend, Content: "hello"}}}}})
	typ, r := e.callback(empty)
	var p struct {
		Data struct {
			Flags discordgo.MessageFlags `json:"flags"`
		} `json:"data"`
	}
	if err := r.Decode(&p); err != nil || typ != discordgo.InteractionResponseChannelMessageWithSource || p.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("notice %d %s", typ, r.JSON)
	}
	if rs := fake.Requests(func(r fakediscord.Request) bool { return strings.HasPrefix(r.Path, "/channels/"+dm+"/") }); len(rs) != 0 {
		t.Fatalf("the bot called the DM's channel: %s %s (%d)", rs[0].Method, rs[0].Path, rs[0].Status)
	}
	if jobs := runner.Jobs(); len(jobs) != 2 || jobs[0].User != "discord:dm:"+e.user.ID {
		t.Fatalf("jobs %+v", jobs)
	}
}

// TestUserInstallIgnoresChannelListOfServersWithoutTheBot: DISCORD_CHANNELS
// binds the servers that installed the bot; in a server that has not, a
// person's own install runs /run where they use it.
func TestUserInstallIgnoresChannelListOfServersWithoutTheBot(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.Channels = []string{"1"} })
	opts := map[string]any{"options": []any{codeOption("print(1)")}}
	theirs := e.invoke(fakediscord.Invocation{Name: discord.CommandRun, Context: discordgo.InteractionContextGuild, GuildID: e.guild, ChannelID: e.channel, UserInstall: true, Data: opts})
	if r := e.original(theirs); !strings.Contains(r.Content(), "ran: print(1)") {
		t.Fatalf("user install in a server without the bot answered %q", r.Content())
	}
	ours := e.invoke(fakediscord.Invocation{Name: discord.CommandRun, Context: discordgo.InteractionContextGuild, GuildID: e.guild, ChannelID: e.channel, GuildInstall: true, UserInstall: true, Data: opts})
	if _, r := e.callback(ours); callbackContent(t, r) != formatting.RenderNotice(formatting.Discord, formatting.NoticeChannelNotAllowed) {
		t.Fatalf("guild install outside DISCORD_CHANNELS answered %s", r.JSON)
	}
}

// TestCommandsOfferedForBothInstalls: global commands are for the server's
// and a person's install, in servers, the bot's DM and other DMs; a guild's
// commands carry neither (Discord ignores them there).
func TestCommandsOfferedForBothInstalls(t *testing.T) {
	t.Parallel()
	e := start(t, &fakerunner.Runner{}, nil)
	cmds := e.fbot.Commands("")
	for _, name := range []string{discord.CommandRun, discord.CommandRunCode} {
		i := slices.IndexFunc(cmds, func(c *discordgo.ApplicationCommand) bool { return c.Name == name })
		if i < 0 {
			t.Fatalf("%q not registered", name)
		}
		c := cmds[i]
		if c.Contexts == nil || !slices.Equal(*c.Contexts, []discordgo.InteractionContextType{0, 1, 2}) ||
			c.IntegrationTypes == nil || !slices.Equal(*c.IntegrationTypes, []discordgo.ApplicationIntegrationType{0, 1}) {
			t.Errorf("%q: contexts %v, integration types %v", name, c.Contexts, c.IntegrationTypes)
		}
	}
	if !strings.Contains(e.logs.String(), "integration_type=1") {
		t.Error("no user install URL in the log")
	}

	g := start(t, &fakerunner.Runner{}, func(c *discord.Config) { c.GuildID = "4242" })
	for _, c := range g.fbot.Commands("4242") {
		if c.Contexts != nil || c.IntegrationTypes != nil {
			t.Errorf("guild command %q has contexts %v, integration types %v", c.Name, c.Contexts, c.IntegrationTypes)
		}
	}
}

// callbackContent is the content of an interaction callback's message.
func callbackContent(t *testing.T, r fakediscord.Request) string {
	t.Helper()
	var p struct {
		Data struct {
			Content string `json:"content"`
		} `json:"data"`
	}
	if err := r.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p.Data.Content
}
