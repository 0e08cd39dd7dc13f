package discord

import (
	"context"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/formatting"
)

func (b *Bot) onInteraction(s *discordgo.Session, ic *discordgo.InteractionCreate) {
	if ic.Interaction == nil {
		return
	}
	i := ic.Interaction
	b.spawn("interaction", func(ctx context.Context) { b.handleInteraction(ctx, s, i) })
}

func (b *Bot) handleInteraction(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction) {
	if i.Type == discordgo.InteractionMessageComponent {
		b.onButton(ctx, s, i)
		return
	}
	if i.Type != discordgo.InteractionApplicationCommand && i.Type != discordgo.InteractionModalSubmit {
		return
	}
	if i.Type == discordgo.InteractionApplicationCommand && i.ApplicationCommandData().Name == CommandRunblock {
		b.settingsInteraction(ctx, s, i)
		return
	}
	if guildInstalled(i) && !b.channelAllowed(s, b.guildConfig(ctx, i.GuildID), i.GuildID, i.ChannelID) {
		b.metricReceived()
		b.ephemeral(ctx, s, i, formatting.RenderNotice(formatting.Discord, formatting.NoticeChannelNotAllowed))
		return
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
		d := i.ApplicationCommandData()
		switch {
		case d.CommandType == discordgo.MessageApplicationCommand && d.Name == CommandRunCode:
			var content string
			var atts []*discordgo.MessageAttachment
			if d.Resolved != nil && d.Resolved.Messages[d.TargetID] != nil {
				content, atts = d.Resolved.Messages[d.TargetID].Content, d.Resolved.Messages[d.TargetID].Attachments
			}
			b.runInteraction(ctx, s, i, content, formatting.ExtractOptions{Triggered: true}, "", atts)
		case d.Name == CommandRun && d.GetOption(optionReset) != nil && d.GetOption(optionReset).BoolValue():
			b.resetInteraction(ctx, s, i)
		case d.Name == CommandRun && d.GetOption(optionExport) != nil && d.GetOption(optionExport).BoolValue():
			b.exportInteraction(ctx, s, i)
		case d.Name == CommandRun:
			var code string
			if o := d.GetOption(optionCode); o != nil && o.Type == discordgo.ApplicationCommandOptionString {
				code = o.StringValue()
			}
			if strings.TrimSpace(code) == "" {
				if err := s.InteractionRespond(i, runModal(), discordgo.WithContext(ctx)); err != nil {
					b.log.Error("opening the /run editor", "err", err)
				}
				return
			}
			b.runInteraction(ctx, s, i, code, formatting.ExtractOptions{Triggered: true, Raw: true}, "", nil)
		}
	case discordgo.InteractionModalSubmit:
		d := i.ModalSubmitData()
		if d.CustomID != modalRun {
			return
		}
		values := modalValues(d.Components)
		b.runInteraction(ctx, s, i, values[inputCode], formatting.ExtractOptions{Triggered: true, Raw: true}, values[inputStdin], nil)
	}
}

// guildInstalled reports whether the server's install of the app
// authorizes i: then the server's channel rules apply. An interaction that
// only a person's install authorizes (a user-installed app, in a server
// that has not added the bot) is that person's, wherever it is.
func guildInstalled(i *discordgo.Interaction) bool {
	if i.AuthorizingIntegrationOwners == nil {
		return true // an older payload: the bot's own install
	}
	_, ok := i.AuthorizingIntegrationOwners[discordgo.ApplicationIntegrationGuildInstall]
	return ok
}

// modalValues maps the text inputs of a modal submit by custom id.
func modalValues(rows []discordgo.MessageComponent) map[string]string {
	out := make(map[string]string)
	var visit func(c discordgo.MessageComponent)
	visit = func(c discordgo.MessageComponent) {
		switch c := c.(type) {
		case *discordgo.ActionsRow:
			for _, cc := range c.Components {
				visit(cc)
			}
		case discordgo.ActionsRow:
			for _, cc := range c.Components {
				visit(cc)
			}
		case *discordgo.TextInput:
			out[c.CustomID] = c.Value
		case discordgo.TextInput:
			out[c.CustomID] = c.Value
		}
	}
	for _, r := range rows {
		visit(r)
	}
	return out
}

func interactionUser(i *discordgo.Interaction) string {
	switch {
	case i.Member != nil && i.Member.User != nil:
		return i.Member.User.ID
	case i.User != nil:
		return i.User.ID
	}
	return "unknown"
}

// runInteraction answers a /run, modal or "Run code" interaction through
// the shared flow (hook.go), as a message is answered: a deferred response
// at once (Discord wants one within 3 s), then the queue position, the
// output so far and the result with its buttons edited into it. Notices
// and rejections go to the user alone (ephemeral) and have no buttons. The
// code is extracted from text with opts; stdin, when set, is the run's
// standard input; atts are the files of the message "Run code" runs.
func (b *Bot) runInteraction(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction, text string, opts formatting.ExtractOptions, stdin string, atts []*discordgo.MessageAttachment) {
	b.metricReceived()
	opts.Platform = formatting.Discord
	if ex := formatting.Extract(text, opts); !ex.Found {
		b.ephemeral(ctx, s, i, formatting.RenderNotice(formatting.Discord, ex.Notice()))
		return
	}
	h := &hook{i: i, ack: discordgo.InteractionResponseDeferredChannelMessageWithSource}
	if err := b.deferHook(ctx, h); err != nil {
		b.log.Error("deferring an interaction", "err", err)
		return
	}
	defer b.hookDone(ctx, h)
	src, log := b.hookSource(i, h)
	b.flow.Answer(ctx, answer.Request[source]{
		Src: src, What: "interaction", Log: log,
		User: src.user, Text: text, Extract: opts, Stdin: stdin, Files: attachments(atts),
	})
}

// ephemeral answers an interaction with a line only its user sees.
func (b *Bot) ephemeral(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction, text string) {
	err := s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()},
	}, discordgo.WithContext(ctx))
	if err != nil {
		b.log.Error("answering an interaction", "err", err)
		return
	}
	b.metricReplied()
}
