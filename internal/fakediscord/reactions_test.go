package fakediscord_test

import (
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestBotReactionsAreListed: the bot's reactions show on the message as
// Discord lists them (me set), go when removed, and stay through an edit.
func TestBotReactionsAreListed(t *testing.T) {
	t.Parallel()
	bot := fake.NewBot("reactions")
	s, err := discordgo.New("Bot " + bot.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = fake.Client()
	m := fake.PutMessage(discordgo.Message{ChannelID: fake.NewID(), Content: "x", Author: &discordgo.User{ID: fake.NewID()}})
	mine := func() []string {
		t.Helper()
		got, err := s.ChannelMessage(m.ChannelID, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range got.Reactions {
			if r.Me && r.Count == 1 {
				names = append(names, r.Emoji.Name)
			}
		}
		return names
	}
	for _, e := range []string{"⏳", "✅"} {
		if err := s.MessageReactionAdd(m.ChannelID, m.ID, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MessageReactionRemove(m.ChannelID, m.ID, "⏳", "@me"); err != nil {
		t.Fatal(err)
	}
	if got := mine(); len(got) != 1 || got[0] != "✅" {
		t.Fatalf("reactions %v, want ✅", got)
	}
	edit := *m
	edit.Content = "y"
	bot.MessageUpdate(edit)
	if got := mine(); len(got) != 1 || got[0] != "✅" {
		t.Fatalf("reactions after an edit %v, want ✅", got)
	}
}
