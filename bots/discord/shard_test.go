package discord_test

import (
	"errors"
	"log/slog"
	"strconv"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/fakediscord"
)

// guildOnShard is a guild id whose events go to shard id of n.
func guildOnShard(t *testing.T, id, n int) string {
	t.Helper()
	for k := uint64(1) << 30; ; k++ {
		g := strconv.FormatUint(k<<22, 10)
		if fakediscord.ShardOf(g, n) == id {
			return g
		}
	}
}

func TestShardsSplitTheEvents(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fbot := fake.NewBot(t.Name())
	fbot.RequireShards(2)
	open := func(cfg discord.Config, runner executor.Submitter) (*discord.Bot, error) {
		cfg.Token, cfg.APIURL = fbot.Token, fake.URL()
		b := discord.New(cfg, runner, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
		err := b.Open(ctx)
		t.Cleanup(func() {
			if err := b.Close(ctx); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		return b, err
	}

	// Unsharded, Discord refuses the bot with a clear error.
	if _, err := open(discord.Config{}, &fakerunner.Runner{}); !errors.Is(err, discord.ErrShardingRequired) {
		t.Fatalf("unsharded open: %v, want ErrShardingRequired", err)
	}
	if _, err := open(discord.Config{ShardID: 2, ShardCount: 2}, &fakerunner.Runner{}); err == nil {
		t.Fatal("shard 2 of 2 opened") // refused before connecting
	}

	runners := []*fakerunner.Runner{{}, {}}
	for id, r := range runners {
		if _, err := open(discord.Config{ShardID: id, ShardCount: 2}, r); err != nil {
			t.Fatalf("shard %d: %v", id, err)
		}
	}
	var shards [][2]int
	for _, id := range fbot.Identifies() {
		if id.Shard != nil {
			shards = append(shards, *id.Shard)
		}
	}
	if len(shards) != 2 || shards[0] != [2]int{0, 2} || shards[1] != [2]int{1, 2} {
		t.Fatalf("IDENTIFY shard arrays %v, want [0 2] and [1 2]", shards)
	}

	user := &discordgo.User{ID: fake.NewID(), Username: "ada"}
	say := func(guild string) *discordgo.Message {
		ch := fake.NewID()
		m := fbot.MessageCreate(discordgo.Message{ChannelID: ch, GuildID: guild, Author: user, Content: "!run " + block})
		if _, err := fake.WaitRequest(ctx, isReplyTo(ch, m.ID)); err != nil {
			t.Fatal(err)
		}
		return m
	}
	say(guildOnShard(t, 1, 2))
	say(guildOnShard(t, 0, 2))
	say("") // a DM: shard 0
	say(guildOnShard(t, 1, 2))
	if n0, n1 := len(runners[0].Jobs()), len(runners[1].Jobs()); n0 != 2 || n1 != 2 {
		t.Fatalf("shard 0 ran %d, shard 1 ran %d; want 2 each (its guilds, DMs on 0)", n0, n1)
	}
}
