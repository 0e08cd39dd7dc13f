package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/fakediscord"
	"github.com/runblock/runblock/internal/fakeslack"
)

// TestBothAdaptersThroughMain runs Slack and Discord at once through Main
// against their fakes: both are reported ready, each answers a message, and
// both runs reach the one runner behind the shared scheduler. The service's
// own logger, at debug level, never shows a token.
func TestBothAdaptersThroughMain(t *testing.T) {
	slackFake := fakeslack.New(fakeslack.Options{PingInterval: 200 * time.Millisecond})
	t.Cleanup(slackFake.Close)
	discordFake := fakediscord.New(fakediscord.Options{HeartbeatInterval: 200 * time.Millisecond})
	t.Cleanup(discordFake.Close)
	discordFake.Install()
	fbot := discordFake.NewBot("runblock")

	cfg := defaultConfig(t, config.Env{
		"SLACK_BOT_TOKEN":    fakeslack.BotToken,
		"SLACK_APP_TOKEN":    fakeslack.AppToken,
		"DISCORD_BOT_TOKEN":  fbot.Token,
		"RUNBLOCK_HTTP_ADDR": "127.0.0.1:0",
		"LOG_LEVEL":          "debug",
	})
	cfg.Slack.APIURL = slackFake.APIURL()
	g := newGate()
	close(g.release)
	logs := &syncBuffer{}
	m := &Main{Config: cfg, Logger: config.NewLogger(logs, cfg), Runner: runnerFunc(g.run)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
		out := logs.String()
		for _, tok := range []string{fakeslack.BotToken, fakeslack.AppToken, fbot.Token} {
			if strings.Contains(out, tok) {
				t.Errorf("the log shows a token:\n%s", out)
			}
		}
		if !strings.Contains(out, "adapter open") {
			t.Errorf("the log lacks the start-up lines:\n%s", out)
		}
	})
	if err := slackFake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := fbot.WaitSessions(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r := m.readiness()
	if !r.Ready || !r.Adapters["slack"] || !r.Adapters["discord"] || r.Adapters["console"] {
		t.Errorf("readiness %+v, want slack and discord ready and no console", r)
	}

	channel, user := slackFake.NewID("C"), slackFake.NewID("U")
	msg := slackFake.PutMessage(fakeslack.Message{Channel: channel, User: user,
		Text: "<@" + fakeslack.BotUserID + "> ```python\nfrom_slack()\n```"})
	slackFake.SendEvent(map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": msg.Text, "ts": msg.TS, "event_ts": msg.TS})
	if _, err := slackFake.WaitMessage(ctx, channel, func(x fakeslack.Message) bool {
		return x.ThreadTS == msg.TS && strings.Contains(x.Text, "finished from_slack()")
	}); err != nil {
		t.Fatalf("no Slack reply: %v", err)
	}

	dchannel, guild := discordFake.NewID(), discordFake.NewID()
	dmsg := fbot.MessageCreate(discordgo.Message{ChannelID: dchannel, GuildID: guild,
		Author:  &discordgo.User{ID: discordFake.NewID(), Username: "ada"},
		Content: "!run ```python\nfrom_discord()\n```"})
	if _, err := discordFake.WaitRequest(ctx, func(r fakediscord.Request) bool {
		return r.Method == "POST" && r.Path == "/channels/"+dchannel+"/messages" && strings.Contains(r.Content(), "finished from_discord()")
	}); err != nil {
		t.Fatalf("no Discord reply to %s: %v", dmsg.ID, err)
	}

	if got := len(g.started); got != 2 {
		t.Errorf("%d runs reached the runner, want 2", got)
	}
}
