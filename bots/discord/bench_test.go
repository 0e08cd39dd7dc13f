package discord_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
)

// BenchmarkMessageToReply measures MESSAGE_CREATE over the fake gateway to
// the reply POST at the fake REST API: gateway decode, trigger and
// extraction, the run, rendering and the JSON reply through discordgo's rate
// limiter; once with a runner that answers at once (the adapter's own cost)
// and once with real Python.
func BenchmarkMessageToReply(b *testing.B) {
	b.Run("adapter only", func(b *testing.B) { benchMessageToReply(b, &fakerunner.Runner{}) })
	// The same path with the real scheduler, executor and Python behind it.
	b.Run("real python", func(b *testing.B) { benchMessageToReply(b, realRunner(b)) })
}

func benchMessageToReply(b *testing.B, runner executor.Submitter) {
	fbot := fake.NewBot("bench")
	bot := discord.New(discord.Config{Token: fbot.Token, APIURL: fake.URL()}, runner, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := bot.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = bot.Close(ctx) }()
	guild, user := fake.NewID(), &discordgo.User{ID: fake.NewID()}
	for b.Loop() {
		channel := fake.NewID() // a fresh channel: reaction buckets do not pile up
		m := fbot.MessageCreate(discordgo.Message{ChannelID: channel, GuildID: guild, Author: user, Content: "!run " + block})
		if _, err := fake.WaitRequest(ctx, isReplyTo(channel, m.ID)); err != nil {
			b.Fatal(err)
		}
	}
}
