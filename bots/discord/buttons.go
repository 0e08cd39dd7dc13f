package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/answer"
)

// components shows a reply's buttons (answer.Button) as an action row of
// message components, their custom ids the flow's; none is an empty list,
// which removes the earlier ones from an edited reply.
func components(buttons []answer.Button) []discordgo.MessageComponent {
	if len(buttons) == 0 {
		return []discordgo.MessageComponent{}
	}
	row := discordgo.ActionsRow{}
	for _, b := range buttons {
		style := discordgo.SecondaryButton
		switch b.Action {
		case answer.ActionAgain:
			style = discordgo.PrimaryButton
		case answer.ActionDelete:
			style = discordgo.DangerButton
		}
		row.Components = append(row.Components, discordgo.Button{Label: b.Label, Style: style, CustomID: b.ID})
	}
	return []discordgo.MessageComponent{row}
}

// canDelete are the permissions that let a member delete anyone's reply.
const canDelete = discordgo.PermissionManageMessages | discordgo.PermissionAdministrator

// onButton carries out a click on a reply's button (a component
// interaction): a deferred ephemeral response at once, which Discord wants
// within 3 s, then what the clicker is told edited into it, or the
// response deleted when there is nothing to tell (a delete, a run again,
// whose new reply is in the channel).
func (b *Bot) onButton(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction) {
	id := i.MessageComponentData().CustomID
	if _, _, ok := answer.ParseButton(id); !ok {
		return
	}
	b.metricReceived()
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral},
	}, discordgo.WithContext(ctx)); err != nil {
		b.log.Error("acknowledging a button", "err", err)
		return
	}
	src := source{channelID: i.ChannelID, guildID: i.GuildID, user: userKey(i.GuildID, interactionUser(i)), explicit: true}
	if m := i.Message; m != nil {
		src.messageID = m.ID
		if ref := m.MessageReference; ref != nil && ref.MessageID != "" {
			src.messageID = ref.MessageID // the message the reply answers
		}
	}
	told := false
	b.flow.Click(ctx, answer.Click[source]{
		ID: id, Src: src, User: src.user,
		Admin: func(context.Context) bool { return i.Member != nil && i.Member.Permissions&canDelete != 0 },
		Tell: func(ctx context.Context, text string) error {
			told = true
			_, err := s.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions()}, discordgo.WithContext(ctx))
			return err
		},
		Log: b.log.With("channel", i.ChannelID, "user", interactionUser(i)),
	})
	if !told {
		if err := s.InteractionResponseDelete(i, discordgo.WithContext(ctx)); err != nil {
			b.log.Debug("deleting the deferred response to a button", "err", err)
		}
	}
}
