package discord

import (
	"context"
	"log/slog"
	"net/http"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/answer"
)

// hook is an interaction the flow answers through the interaction's
// webhook, as a message reply is answered through the channel: a /run, its
// modal, "Run code", or a click on the buttons of such an answer. The
// interaction is deferred at once (Discord wants a response within 3 s);
// the flow's first post fills the deferred response (@original), its edits
// (the queue position, the output so far, the result with its buttons)
// edit it, and what only the asker may see goes as an ephemeral follow-up.
// The token lives 15 minutes: a later click on the answer's buttons is
// answered through that click's own interaction.
type hook struct {
	i *discordgo.Interaction
	// ack is the deferral: DeferredChannelMessageWithSource ("thinking…",
	// ephemeral when set) or, for a Delete click, DeferredMessageUpdate,
	// whose @original is the message the button is on.
	ack       discordgo.InteractionResponseType
	ephemeral bool

	mu       sync.Mutex
	original string // the @original message's id, once filled
	deleted  bool   // the deferred response was deleted
}

// hookSource is the source of an answer through h to its interaction i,
// asked by i's user, and the log of that interaction.
func (b *Bot) hookSource(i *discordgo.Interaction, h *hook) (source, *slog.Logger) {
	user := interactionUser(i)
	return source{channelID: i.ChannelID, guildID: i.GuildID, user: userKey(i.GuildID, user), explicit: true, hook: h},
		b.log.With("channel", i.ChannelID, "user", user)
}

// deferHook acknowledges h's interaction.
func (b *Bot) deferHook(ctx context.Context, h *hook) error {
	resp := &discordgo.InteractionResponse{Type: h.ack}
	if h.ephemeral {
		resp.Data = &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}
	}
	return b.session().InteractionRespond(h.i, resp, discordgo.WithContext(ctx))
}

// thinking reports whether h still shows the deferred "thinking…" response,
// neither filled nor deleted.
func (h *hook) thinking() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ack == discordgo.InteractionResponseDeferredChannelMessageWithSource && h.original == "" && !h.deleted
}

// send puts r into the response message id ("" for @original) of h, the
// run's files attached; a refusal (r.Private) is told the asker alone
// instead, and the deferred response goes.
func (b *Bot) hookSend(ctx context.Context, h *hook, id string, r answer.Reply) (answer.Sent, error) {
	if r.Private {
		return answer.Sent{}, b.hookTell(ctx, h, r.Text)
	}
	h.mu.Lock()
	if id == "" || id == h.original {
		id = "@original"
	}
	h.mu.Unlock()
	endpoint := discordgo.EndpointWebhookMessage(h.i.AppID, h.i.Token, id)
	content := r.Text
	m, err := b.request(ctx, http.MethodPatch, endpoint, discordgo.EndpointWebhookToken("", ""),
		messageEdit{Content: &content, AllowedMentions: noMentions(), Attachments: uploads(r), Components: components(r.Buttons)}, outputFiles(r))
	if err != nil && tooLarge(err) {
		if smaller, ok := b.refit(h.i.GuildID, r); ok {
			b.log.Info("Discord refused the run's files as too large; the answer names those over the limit instead", "channel", h.i.ChannelID, "err", err)
			return b.hookSend(ctx, h, id, smaller)
		}
	}
	if err != nil {
		return answer.Sent{}, err
	}
	if id == "@original" {
		h.mu.Lock()
		h.original = m.ID
		h.mu.Unlock()
	}
	return answer.Sent{ID: m.ID}, nil
}

// hookTell tells text to h's user alone: in the deferred response when it
// is ephemeral and still empty, else in an ephemeral follow-up, the public
// deferred response deleted first.
func (b *Bot) hookTell(ctx context.Context, h *hook, text string) error {
	s := b.session()
	h.mu.Lock()
	fill := h.ephemeral && h.original == "" && !h.deleted
	drop := !h.ephemeral && h.ack == discordgo.InteractionResponseDeferredChannelMessageWithSource && !h.deleted
	h.mu.Unlock()
	if fill {
		m, err := s.InteractionResponseEdit(h.i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions()}, discordgo.WithContext(ctx))
		if err != nil {
			return err
		}
		h.mu.Lock()
		h.original = m.ID
		h.mu.Unlock()
		return nil
	}
	if drop {
		b.hookDrop(ctx, h)
	}
	_, err := s.FollowupMessageCreate(h.i, true, &discordgo.WebhookParams{
		Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions(),
	}, discordgo.WithContext(ctx))
	return err
}

// hookDrop deletes h's deferred response.
func (b *Bot) hookDrop(ctx context.Context, h *hook) {
	h.mu.Lock()
	h.deleted = true
	h.mu.Unlock()
	if err := b.session().InteractionResponseDelete(h.i, discordgo.WithContext(ctx)); err != nil {
		b.log.Debug("deleting the deferred response", "err", err)
	}
}

// hookDone deletes h's deferred response if nothing was put in it: the
// interaction is answered elsewhere, or not at all (shutdown).
func (b *Bot) hookDone(ctx context.Context, h *hook) {
	if h.thinking() {
		b.hookDrop(ctx, h)
	}
}
