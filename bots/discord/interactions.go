package discord

import (
	"context"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/progress"
	"github.com/runblock/runblock/executor"
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
			ex := formatting.Extract(content, formatting.ExtractOptions{Platform: formatting.Discord, Triggered: true})
			b.runInteraction(ctx, s, i, ex, atts)
		case d.Name == CommandRun && d.GetOption(optionReset) != nil && d.GetOption(optionReset).BoolValue():
			b.resetInteraction(ctx, s, i)
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
			ex := formatting.Extract(code, formatting.ExtractOptions{Platform: formatting.Discord, Triggered: true, Raw: true})
			b.runInteraction(ctx, s, i, ex, nil)
		}
	case discordgo.InteractionModalSubmit:
		d := i.ModalSubmitData()
		if d.CustomID != modalRun {
			return
		}
		values := modalValues(d.Components)
		ex := formatting.Extract(values[inputCode], formatting.ExtractOptions{Platform: formatting.Discord, Triggered: true, Raw: true})
		if in := values[inputStdin]; in != "" {
			ex.Stdin = in
		}
		b.runInteraction(ctx, s, i, ex, nil)
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

// runInteraction answers a /run, modal or "Run code" interaction: a
// deferred response at once (Discord wants one within 3 s), then the result
// edited into it. Notices and rejections go to the user alone (ephemeral).
// atts are the files of the message "Run code" runs, which go into the run.
func (b *Bot) runInteraction(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction, ex formatting.Extraction, atts []*discordgo.MessageAttachment) {
	b.metricReceived()
	if !ex.Found {
		b.ephemeral(ctx, s, i, formatting.RenderNotice(formatting.Discord, ex.Notice()))
		return
	}
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}, discordgo.WithContext(ctx)); err != nil {
		b.log.Error("deferring an interaction", "err", err)
		return
	}
	// A run that waits behind others shows its place in the deferred
	// response, which the result then replaces.
	edit := func(ctx context.Context, text string) error {
		_, err := s.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions()}, discordgo.WithContext(ctx))
		return err
	}
	prog := progress.Watch(ctx, b.log, progress.Chat{
		Post:   func(ctx context.Context, text string) (string, error) { return "@original", edit(ctx, text) },
		Edit:   func(ctx context.Context, _, text string) error { return edit(ctx, text) },
		Render: func(pr executor.Progress) string { return formatting.RenderProgress(formatting.Discord, pr) },
	}, "")
	defer prog.Stop()
	out := b.flow.Run(ctx, b.log, nil, userKey(i.GuildID, interactionUser(i)), ex, attachments(atts), prog.Update)
	prog.Stop()
	if out.Reaction == "" {
		if err := s.InteractionResponseDelete(i, discordgo.WithContext(ctx)); err != nil {
			b.log.Debug("deleting the deferred response", "err", err)
		}
		if _, err := s.FollowupMessageCreate(i, true, &discordgo.WebhookParams{
			Content: out.Text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions(),
		}, discordgo.WithContext(ctx)); err != nil {
			b.log.Error("sending an interaction follow-up", "err", err)
			return
		}
		b.metricReplied()
		return
	}
	var err error
	for {
		content := out.Text
		_, err = s.InteractionResponseEdit(i, &discordgo.WebhookEdit{
			Content: &content, AllowedMentions: noMentions(), Files: outputFiles(out),
		}, discordgo.WithContext(ctx))
		if err == nil || !tooLarge(err) {
			break
		}
		smaller, ok := b.refit(i.GuildID, out)
		if !ok {
			break
		}
		out = smaller
	}
	if err != nil {
		b.log.Error("sending an interaction result", "err", err)
		return
	}
	b.metricReplied()
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
