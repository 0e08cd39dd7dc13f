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
// interaction), acknowledged at once, as Discord wants within 3 s. On a
// message reply: a deferred ephemeral response, then what the clicker is
// told edited into it, or the response deleted when there is nothing to
// tell (a delete, a run again, whose new reply is in the channel). On an
// interaction's answer (/run, the modal, "Run code"), whose own token may
// have expired, the click's interaction answers instead (onAnswerButton).
func (b *Bot) onButton(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction) {
	id := i.MessageComponentData().CustomID
	action, _, ok := answer.ParseButton(id)
	if !ok {
		return
	}
	b.metricReceived()
	if m := i.Message; m != nil && (m.InteractionMetadata != nil || m.WebhookID != "") {
		b.onAnswerButton(ctx, i, id, action)
		return
	}
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
		Admin: admin(i),
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

// onAnswerButton carries out a click on the buttons of an interaction's
// answer through the click's own interaction (hook.go), which works
// whatever the age of the answer and whether the bot is in the channel (a
// user-installed app): Run again is deferred publicly, and its answer, a
// new job of the clicker, fills the click's response, as a /run's does;
// Full output is deferred ephemerally and filled with the file; Delete is
// deferred as an update of the message the button is on, which deleting
// the click's response then deletes. Refusals (only the author, too old)
// are ephemeral.
func (b *Bot) onAnswerButton(ctx context.Context, i *discordgo.Interaction, id string, action answer.Action) {
	h := &hook{i: i, ack: discordgo.InteractionResponseDeferredChannelMessageWithSource}
	switch action {
	case answer.ActionDelete:
		h.ack = discordgo.InteractionResponseDeferredMessageUpdate
	case answer.ActionFull:
		h.ephemeral = true
	}
	if err := b.deferHook(ctx, h); err != nil {
		b.log.Error("acknowledging a button", "err", err)
		return
	}
	defer b.hookDone(ctx, h)
	src, log := b.hookSource(i, h)
	b.flow.Click(ctx, answer.Click[source]{
		ID: id, Src: src, User: src.user,
		Admin: admin(i),
		Tell:  func(ctx context.Context, text string) error { return b.hookTell(ctx, h, text) },
		Remove: func(ctx context.Context) error {
			err := b.session().InteractionResponseDelete(i, discordgo.WithContext(ctx))
			if err == nil {
				return nil
			}
			// Through the channel, where the bot is.
			log.Info("deleting an answer through its click failed; deleting it through the channel", "err", err)
			return goneError(b.session().ChannelMessageDelete(i.ChannelID, i.Message.ID, discordgo.WithContext(ctx)))
		},
		Log: log,
	})
}

// admin reports whether the clicker of i may delete anyone's reply.
func admin(i *discordgo.Interaction) func(context.Context) bool {
	return func(context.Context) bool { return i.Member != nil && i.Member.Permissions&canDelete != 0 }
}
