package discord_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/internal/fakerunner"
	"github.com/runblock/runblock/internal/fakediscord"
)

// TestStartsWithoutMessageContent: an application without the Message
// Content intent starts without asking for it, says in the log which
// triggers are off, and answers a mention, a reply that mentions it, a DM
// and /run; a plain prefix message, whose content Discord withholds, is
// not answered. (Before, Open failed with ErrDisallowedIntents.)
func TestStartsWithoutMessageContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prepare func(*fakediscord.Bot)
		// identifies are the intents asked for, in order
		identifies []discordgo.Intent
		why        string
	}{
		{"flags say so", func(*fakediscord.Bot) {}, []discordgo.Intent{discord.IntentsWithoutContent}, "the application's flags lack GATEWAY_MESSAGE_CONTENT"},
		{"flags unreadable, gateway refuses", func(b *fakediscord.Bot) {
			fake.FailNext(func(r fakediscord.Request) bool {
				return r.Token == b.Token && r.Method == "GET" && r.Path == "/applications/@me"
			}, http.StatusInternalServerError)
		}, []discordgo.Intent{discord.Intents, discord.IntentsWithoutContent}, "the gateway refused it with close code 4014"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fbot := fake.NewBot(t.Name())
			fbot.DenyMessageContent()
			tt.prepare(fbot)
			runner := &fakerunner.Runner{}
			e := startFor(t, fbot, runner, nil)

			var got []discordgo.Intent
			for _, id := range fbot.Identifies() {
				got = append(got, id.Intents)
			}
			if !slices.Equal(got, tt.identifies) {
				t.Fatalf("IDENTIFY intents %v, want %v", got, tt.identifies)
			}
			if a := e.bot.Access(); a.MessageContent || a.Why != tt.why {
				t.Fatalf("access %+v", a)
			}
			logs := e.logs.String()
			for _, want := range []string{tt.why, "these triggers are off: prefix messages (!run)", "Still on: mentions of the bot", "Message Content Intent"} {
				if !strings.Contains(logs, want) {
					t.Errorf("the log does not say %q:\n%s", want, logs)
				}
			}

			plain := e.say("!run `print('plain')`")
			mention := e.say("<@" + fbot.UserID + "> `print('mention')`")
			if r := e.replyTo(e.channel, mention.ID); !strings.Contains(r.Content(), "ran: print('mention')") {
				t.Fatalf("mention answered %q", r.Content())
			}
			reply := fbot.MessageCreate(discordgo.Message{
				ChannelID: e.channel, GuildID: e.guild, Author: e.user, Content: "`print('reply')`",
				Mentions:         []*discordgo.User{{ID: fbot.UserID, Bot: true}},
				MessageReference: &discordgo.MessageReference{MessageID: mention.ID, ChannelID: e.channel, GuildID: e.guild},
			})
			if r := e.replyTo(e.channel, reply.ID); !strings.Contains(r.Content(), "ran: print('reply')") {
				t.Fatalf("reply answered %q", r.Content())
			}
			dmChannel := fake.NewID()
			dm := e.sayIn(dmChannel, "", e.user, "`print('dm')`")
			if r := e.replyTo(dmChannel, dm.ID); !strings.Contains(r.Content(), "ran: print('dm')") {
				t.Fatalf("DM answered %q", r.Content())
			}
			in := e.slash(codeOption("print('slash')"))
			if r := e.original(in); !strings.Contains(r.Content(), "ran: print('slash')") {
				t.Fatalf("/run answered %q", r.Content())
			}
			// The plain message came first, and its event was handled
			// (dropped) before the ones answered above.
			if rs := fake.Requests(isReplyTo(e.channel, plain.ID)); len(rs) != 0 {
				t.Fatalf("a prefix message without content was answered: %s", rs[0].JSON)
			}
			for _, j := range runner.Jobs() {
				if strings.Contains(j.Request.Code, "plain") {
					t.Fatalf("ran %q", j.Request.Code)
				}
			}
		})
	}
}

// TestMessageContentFromFlags: an application whose flags grant the
// intent, limited (under 100 servers) or approved, asks for it.
func TestMessageContentFromFlags(t *testing.T) {
	t.Parallel()
	for _, flags := range []int{fakediscord.FlagGatewayMessageContent, fakediscord.FlagGatewayMessageContentLimited} {
		fbot := fake.NewBot(t.Name())
		fbot.SetApplicationFlags(flags)
		e := startFor(t, fbot, &fakerunner.Runner{}, nil)
		if ids := fbot.Identifies(); len(ids) != 1 || ids[0].Intents != discord.Intents {
			t.Fatalf("flags %b: identifies %+v", flags, ids)
		}
		if !e.bot.Access().MessageContent || !strings.Contains(e.logs.String(), "every trigger is on") {
			t.Fatalf("flags %b: access %+v", flags, e.bot.Access())
		}
		m := e.say("!run " + block)
		e.replyTo(e.channel, m.ID)
	}
}
