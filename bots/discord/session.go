package discord

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/formatting"
)

// A thread is a session (bots/internal/answer/session.go). In a channel, a
// message that replies to a message of a session (a cell, or the bot's
// reply to one) continues it, and any other message starts its own: the
// session of a reply chain is named after the chain's first message. The
// run reaction on a message of a session continues it. After a restart
// the flow recovers a session's cells from Discord (Earlier): the thread's
// messages, or the chain's, that the bot replied to, with ✅ or ❌ on them.

// maxHops bounds the walk up a reply chain to its first message.
const maxHops = 20

// Bounds of the reading of a session's messages.
const (
	earlierPageSize = 100 // Discord's maximum
	earlierPages    = 5
)

// sessionOf returns the session m belongs to, and whether m starts it (a
// new message that replies to nothing, outside a thread); "" when m is
// in a channel the bot cannot read.
func (b *Bot) sessionOf(ctx context.Context, s *discordgo.Session, m *discordgo.Message, isNew bool) (string, bool) {
	guild := m.GuildID
	if guild == "" {
		guild = "dm"
	}
	if b.isThread(s, m.ChannelID) {
		return "discord:" + guild + ":" + m.ChannelID, false
	}
	prefix := "discord:" + guild + ":" + m.ChannelID + ":"
	if m.MessageReference == nil || m.MessageReference.MessageID == "" {
		if id := b.flow.SessionOf(m.ID); id != "" {
			return id, false
		}
		return prefix + m.ID, isNew
	}
	// Up the chain to a message of a known session, or to its first.
	ref, next := m.MessageReference.MessageID, m.ReferencedMessage
	for range maxHops {
		if id := b.flow.SessionOf(ref); id != "" {
			return id, false
		}
		parent := next
		if parent == nil || parent.ID != ref {
			var err error
			parent, err = s.ChannelMessage(m.ChannelID, ref, discordgo.WithContext(ctx))
			if err != nil {
				b.log.Debug("following a reply chain", "message", ref, "err", err)
				return prefix + ref, false
			}
		}
		if parent.MessageReference == nil || parent.MessageReference.MessageID == "" {
			return prefix + parent.ID, false
		}
		ref, next = parent.MessageReference.MessageID, parent.ReferencedMessage
	}
	return prefix + ref, false
}

// isThread reports whether channel is a thread, by the gateway's state
// (the Guilds intent brings the guilds' channels and threads).
func (b *Bot) isThread(s *discordgo.Session, channel string) bool {
	if s.State == nil {
		return false
	}
	c, err := s.State.Channel(channel)
	return err == nil && c.IsThread()
}

// startCell answers req as a cell of m's session, which is looked up in
// the handler.
func (b *Bot) startCell(s *discordgo.Session, req answer.Request[source], m *discordgo.Message) {
	b.flow.Take(&req)
	if !b.spawn(req.What, func(ctx context.Context) {
		b.metricReceived()
		req.Session, req.Starts = b.sessionOf(ctx, s, m, req.What == "message")
		b.flow.Answer(ctx, req)
	}) {
		b.flow.Drop(req)
	}
}

// Earlier returns the messages of the session the bot replied to, oldest
// first, with its replies, and its resets.
func (p platform) Earlier(ctx context.Context, src source, session string) ([]answer.Past[source], error) {
	b := p.b
	parts := strings.Split(session, ":")
	if len(parts) < 3 {
		return nil, nil
	}
	guild, channel, root := parts[1], parts[2], ""
	if len(parts) == 4 {
		root = parts[3]
	}
	s := b.session()
	var msgs []*discordgo.Message
	after := "0"
	if root != "" {
		first, err := s.ChannelMessage(channel, root, discordgo.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		msgs, after = append(msgs, first), root
	}
	for range earlierPages {
		page, err := s.ChannelMessages(channel, earlierPageSize, "", after, "", discordgo.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		for _, m := range page {
			msgs = append(msgs, m)
			if olderID(after, m.ID) {
				after = m.ID
			}
		}
		if len(page) < earlierPageSize {
			break
		}
	}
	slices.SortFunc(msgs, func(a, b *discordgo.Message) int {
		if a.ID == b.ID {
			return 0
		}
		if olderID(a.ID, b.ID) {
			return -1
		}
		return 1
	})
	msgs = slices.CompactFunc(msgs, func(a, b *discordgo.Message) bool { return a.ID == b.ID })
	if root != "" {
		msgs = chain(msgs, root)
	}
	self := b.botUserID()
	replies := make(map[string]*discordgo.Message)
	for _, m := range msgs {
		if m.Author != nil && m.Author.ID == self && m.MessageReference != nil {
			if _, ok := replies[m.MessageReference.MessageID]; !ok {
				replies[m.MessageReference.MessageID] = m
			}
		}
	}
	var past []answer.Past[source]
	for _, m := range msgs {
		mine := m.Author != nil && m.Author.ID == self
		reply := replies[m.ID]
		switch {
		case mine && m.Content == answer.ResetText:
			past = append(past, answer.Past[source]{Reset: true})
		case mine || reply == nil || m.Author == nil:
		default:
			m.GuildID = src.guildID
			if guild != "dm" {
				m.GuildID = guild
			}
			text, explicit := m.Content, m.GuildID == ""
			if tr, ok := b.trigger(s, b.guildConfig(ctx, m.GuildID), m); ok {
				text, explicit = tr.text, tr.explicit
			}
			user := userKey(m.GuildID, m.Author.ID)
			from := source{channelID: channel, messageID: m.ID, guildID: m.GuildID, user: user, explicit: explicit, content: m.Content}
			at, _ := discordgo.SnowflakeTimestamp(m.ID)
			past = append(past, answer.Past[source]{
				Request: answer.Request[source]{
					Src: from, What: "history", Key: m.ID, User: user, Text: text,
					Extract: formatting.ExtractOptions{Triggered: explicit}, Files: attachments(m.Attachments),
				},
				Reply: answer.Record[source]{Src: from, Reply: reply.ID, Reaction: result(m), Created: at},
			})
		}
	}
	return past, nil
}

// chain keeps the messages of msgs (oldest first) whose reply chain leads
// to root.
func chain(msgs []*discordgo.Message, root string) []*discordgo.Message {
	in := map[string]bool{root: true}
	var out []*discordgo.Message
	for _, m := range msgs {
		if m.ID == root || m.MessageReference != nil && in[m.MessageReference.MessageID] {
			in[m.ID] = true
			out = append(out, m)
		}
	}
	return out
}

// result is the result reaction the bot left on m: ✅, ❌, or "".
func result(m *discordgo.Message) string {
	for _, r := range m.Reactions {
		if r.Me && r.Emoji != nil {
			for _, ok := range []bool{true, false} {
				if e := (formatting.Reply{OK: ok}).Reaction(formatting.Discord); sameEmoji(r.Emoji.Name, e) {
					return e
				}
			}
		}
	}
	return ""
}

// resetInteraction answers /run reset: in a thread it resets the thread's
// session; in a channel, where a command replies to nothing, the session
// the user last ran a cell in there.
func (b *Bot) resetInteraction(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction) {
	b.metricReceived()
	id := b.commandSession(s, i)
	if id == "" {
		b.ephemeral(ctx, s, i, "You have no session here to reset.")
		return
	}
	// The reset waits for the session's cell in flight; Discord wants an
	// answer within 3 s.
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}, discordgo.WithContext(ctx)); err != nil {
		b.log.Error("deferring /run reset", "err", err)
		return
	}
	b.flow.Reset(ctx, b.log, id)
	text := answer.ResetText
	if _, err := s.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions()}, discordgo.WithContext(ctx)); err != nil {
		b.log.Error("answering /run reset", "err", err)
		return
	}
	b.metricReplied()
}

// commandSession is the session a /run option names: in a thread the
// thread's; in a channel, where a command replies to nothing, the one the
// user last ran a cell in there; "" for none.
func (b *Bot) commandSession(s *discordgo.Session, i *discordgo.Interaction) string {
	if b.cfg.NoSessions {
		return ""
	}
	guild := i.GuildID
	if guild == "" {
		guild = "dm"
	}
	id := "discord:" + guild + ":" + i.ChannelID
	if !b.isThread(s, i.ChannelID) {
		id = b.flow.Recent(userKey(i.GuildID, interactionUser(i)), id+":")
	}
	return id
}

// exportInteraction answers /run export: the session (commandSession) as
// a Jupyter notebook, attached to the command's answer.
func (b *Bot) exportInteraction(ctx context.Context, s *discordgo.Session, i *discordgo.Interaction) {
	b.metricReceived()
	id := b.commandSession(s, i)
	if id == "" {
		b.ephemeral(ctx, s, i, answer.NothingToExport)
		return
	}
	// The export waits for the session's cell in flight; Discord wants an
	// answer within 3 s.
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}, discordgo.WithContext(ctx)); err != nil {
		b.log.Error("deferring /run export", "err", err)
		return
	}
	nb, n, err := b.flow.Notebook(ctx, id)
	if err != nil {
		b.log.Error("writing a session's notebook", "session", id, "err", err)
	}
	text := answer.ExportText(n)
	edit := &discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions(),
		Files: []*discordgo.File{{Name: answer.ExportName, ContentType: "application/x-ipynb+json", Reader: bytes.NewReader(nb)}}}
	if err != nil || n == 0 {
		text, edit.Files = answer.NothingToExport, nil
	}
	if _, err := s.InteractionResponseEdit(i, edit, discordgo.WithContext(ctx)); err != nil {
		b.log.Error("answering /run export", "err", err)
		return
	}
	b.metricReplied()
}
