package fakediscord_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/internal/fakediscord"
)

// TestWithoutMessageContent: an application without the intent has flags
// that say so, and a session that did not ask for it gets guild messages
// without content, except those that mention the bot; DMs keep theirs.
func TestWithoutMessageContent(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bot := fake.NewBot("nocontent")
	bot.DenyMessageContent()
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	s.SyncEvents = true
	body, err := s.Request("GET", discordgo.EndpointApplication("@me"), nil)
	var app discordgo.Application
	if err != nil || json.Unmarshal(body, &app) != nil || app.ID != bot.AppID {
		t.Fatalf("GET /applications/@me: %s %v", body, err)
	}
	if app.Flags&(fakediscord.FlagGatewayMessageContent|fakediscord.FlagGatewayMessageContentLimited) != 0 {
		t.Fatalf("flags %b still grant the intent", app.Flags)
	}
	s.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentDirectMessages
	ch := make(chan *discordgo.MessageCreate, 3)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { ch <- m })
	if err := s.Open(); err != nil {
		t.Fatalf("open without the intent: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })

	guild, channel := fake.NewID(), fake.NewID()
	author := &discordgo.User{ID: fake.NewID()}
	plain := bot.MessageCreate(discordgo.Message{ChannelID: channel, GuildID: guild, Author: author, Content: "!run `1`"})
	mention := bot.MessageCreate(discordgo.Message{ChannelID: channel, GuildID: guild, Author: author, Content: "<@" + bot.UserID + "> `2`"})
	dm := bot.MessageCreate(discordgo.Message{ChannelID: fake.NewID(), Author: author, Content: "`3`"})
	want := map[string]string{plain.ID: "", mention.ID: mention.Content, dm.ID: dm.Content}
	for range 3 {
		select {
		case m := <-ch:
			if m.Content != want[m.ID] {
				t.Errorf("message %s came with %q, want %q", m.ID, m.Content, want[m.ID])
			}
		case <-ctx.Done():
			t.Fatal("messages missing")
		}
	}
	got, err := s.ChannelMessage(channel, plain.ID)
	if err != nil || got.Content != "" {
		t.Fatalf("GET of a plain message: %q %v, want no content", got.Content, err)
	}
}

// TestInvokeOffersCommandsWhereDiscordWould: contexts, integration types
// and default member permissions decide where a command can be used.
func TestInvokeOffersCommandsWhereDiscordWould(t *testing.T) {
	t.Parallel()
	bot := fake.NewBot("invoke")
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	manage := int64(discordgo.PermissionManageGuild)
	everywhere := &[]discordgo.InteractionContextType{0, 1, 2}
	both := &[]discordgo.ApplicationIntegrationType{0, 1}
	guildOnly := &[]discordgo.InteractionContextType{0}
	_, err = s.ApplicationCommandBulkOverwrite(bot.AppID, "", []*discordgo.ApplicationCommand{
		{Name: "run", Description: "run", Contexts: everywhere, IntegrationTypes: both},
		{Name: "plain", Description: "guild install only"},
		{Name: "admin", Description: "admins", Contexts: guildOnly, DefaultMemberPermissions: &manage},
	})
	if err != nil {
		t.Fatal(err)
	}
	user := &discordgo.User{ID: fake.NewID()}
	guild, channel := fake.NewID(), fake.NewID()
	tests := []struct {
		name string
		in   fakediscord.Invocation
		ok   bool
	}{
		{"run in a DM through the user install", fakediscord.Invocation{Name: "run", Context: 2, User: user, ChannelID: channel, UserInstall: true}, true},
		{"plain in a DM through the user install", fakediscord.Invocation{Name: "plain", Context: 2, User: user, ChannelID: channel, UserInstall: true}, false},
		{"plain in the guild", fakediscord.Invocation{Name: "plain", Context: 0, GuildID: guild, User: user, ChannelID: channel, GuildInstall: true}, true},
		{"admin without Manage Server", fakediscord.Invocation{Name: "admin", Context: 0, GuildID: guild, User: user, ChannelID: channel, GuildInstall: true}, false},
		{"admin with Manage Server", fakediscord.Invocation{Name: "admin", Context: 0, GuildID: guild, User: user, ChannelID: channel, GuildInstall: true, Permissions: manage}, true},
		{"admin as Administrator", fakediscord.Invocation{Name: "admin", Context: 0, GuildID: guild, User: user, ChannelID: channel, GuildInstall: true, Permissions: discordgo.PermissionAdministrator}, true},
		{"admin in the bot's DM", fakediscord.Invocation{Name: "admin", Context: 1, User: user, ChannelID: channel, GuildInstall: true, Permissions: manage}, false},
		{"unknown", fakediscord.Invocation{Name: "nope", Context: 0, GuildID: guild, User: user, ChannelID: channel, GuildInstall: true}, false},
	}
	for _, tt := range tests {
		_, err := bot.Invoke(tt.in)
		if ok := err == nil; ok != tt.ok || (err != nil && !errors.Is(err, fakediscord.ErrNotOffered)) {
			t.Errorf("%s: err %v, want offered %v", tt.name, err, tt.ok)
		}
	}
}

// TestEditWithoutMessageContent: an edit reaches a session without the
// intent without its content too.
func TestEditWithoutMessageContent(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	bot := fake.NewBot("noedit")
	bot.DenyMessageContent()
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	s.SyncEvents = true
	s.Identify.Intents = discordgo.IntentsGuildMessages
	ch := make(chan *discordgo.MessageUpdate, 1)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageUpdate) { ch <- m })
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	m := fake.PutMessage(discordgo.Message{ChannelID: fake.NewID(), GuildID: fake.NewID(), Author: &discordgo.User{ID: fake.NewID()}, Content: "a"})
	m.Content = "!run `1`"
	bot.MessageUpdate(*m)
	select {
	case u := <-ch:
		if u.Content != "" {
			t.Fatalf("edit came with %q", u.Content)
		}
	case <-ctx.Done():
		t.Fatal("no MESSAGE_UPDATE")
	}
}
