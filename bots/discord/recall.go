package discord

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"
)

// A reply is a message by the bot whose message_reference names the message
// it answers, so Discord itself remembers what the in-memory map
// (Bot.answers) forgets on a restart or a deploy: the bot finds its reply
// among the messages posted after the source (GET
// /channels/{id}/messages?after=), and an edit of an earlier-answered
// message updates that reply, a delete removes it, and a run reaction does
// not answer twice. (MESSAGE_CREATE needs no lookup: a new session never
// replays an earlier one's events, and this session's replays are in the
// map.)

// Bounds of a lookup.
const (
	lookupPageSize = 100 // Discord's maximum
	lookupPages    = 3
	// clockSkew widens "posted before this process started" for a local
	// clock behind Discord's.
	clockSkew = 2 * time.Minute
)

// mayHaveAnswered reports whether a message the map does not know may still
// have a reply: it was posted before this process started (a restart), or
// longer ago than the map keeps answers, or the map is full and may have
// dropped it.
func (b *Bot) mayHaveAnswered(messageID string) bool {
	at, err := discordgo.SnowflakeTimestamp(messageID)
	if err != nil {
		return false
	}
	return at.Before(time.Unix(0, b.openedAt.Load()).Add(clockSkew)) || b.now().Sub(at) > b.cfg.EditWindow ||
		b.answers.Len() >= b.cfg.MaxAnswers
}

// lookup returns the id of the bot's reply to messageID in channelID, or ""
// when there is none among the messages that follow it.
func (b *Bot) lookup(ctx context.Context, s *discordgo.Session, channelID, messageID string) (string, error) {
	self := b.botUserID()
	after := messageID
	for range lookupPages {
		msgs, err := s.ChannelMessages(channelID, lookupPageSize, "", after, "", discordgo.WithContext(ctx))
		if err != nil {
			return "", err
		}
		found := ""
		for _, m := range msgs {
			if m.Author != nil && m.Author.ID == self && m.MessageReference != nil && m.MessageReference.MessageID == messageID &&
				(found == "" || olderID(m.ID, found)) {
				found = m.ID
			}
			if olderID(after, m.ID) {
				after = m.ID
			}
		}
		if found != "" || len(msgs) < lookupPageSize {
			return found, nil
		}
	}
	return "", nil
}

// olderID reports whether snowflake a comes before b.
func olderID(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// recalled looks for an earlier reply to src, reserved and not answered in
// this process, when it may have one; found, it adopts it as src's reply
// (an edit or a delete queued meanwhile is carried out) and reports true:
// the message is answered already.
func (b *Bot) recalled(ctx context.Context, s *discordgo.Session, src source) bool {
	if !b.mayHaveAnswered(src.messageID) {
		return false
	}
	replyID, err := b.lookup(ctx, s, src.channelID, src.messageID)
	if err != nil {
		b.log.Warn("looking for an earlier reply", "channel", src.channelID, "message", src.messageID, "err", err)
		return false
	}
	if replyID == "" {
		return false
	}
	b.log.Info("already answered; not answering again", "channel", src.channelID, "message", src.messageID, "reply", replyID)
	b.answers.Update(src.messageID, func(a *answer) { a.reactionUnknown = true })
	b.settle(ctx, s, src, replyID, outcome{})
	return true
}

// recallEdit handles an edit of a message the map does not know: when an
// earlier process answered it, the reply is adopted and the edit re-run
// into it.
func (b *Bot) recallEdit(s *discordgo.Session, m *discordgo.Message) {
	at, err := discordgo.SnowflakeTimestamp(m.ID)
	if err != nil || m.Author == nil || b.now().Sub(at) > b.cfg.EditWindow || !b.mayHaveAnswered(m.ID) {
		return
	}
	b.spawn("edit", func(ctx context.Context) {
		replyID, err := b.lookup(ctx, s, m.ChannelID, m.ID)
		if err != nil {
			b.log.Warn("looking for the reply of an edited message", "channel", m.ChannelID, "message", m.ID, "err", err)
			return
		}
		if replyID == "" {
			return // not answered before either
		}
		tr, _ := b.trigger(s, m)
		b.answers.Add(m.ID, answer{
			channelID: m.ChannelID, guildID: m.GuildID, user: userKey(m.GuildID, m.Author.ID), at: at,
			explicit: tr.explicit, replyID: replyID, reactionUnknown: true,
		})
		b.rerun(ctx, s, m)
	})
}

// recallDelete deletes the reply to a deleted message the map does not
// know, when an earlier process answered it.
func (b *Bot) recallDelete(s *discordgo.Session, channelID, messageID string) {
	if !b.mayHaveAnswered(messageID) {
		return
	}
	b.spawn("delete", func(ctx context.Context) {
		replyID, err := b.lookup(ctx, s, channelID, messageID)
		if err != nil {
			b.log.Warn("looking for the reply of a deleted message", "channel", channelID, "message", messageID, "err", err)
			return
		}
		if replyID == "" {
			return
		}
		if err := s.ChannelMessageDelete(channelID, replyID, discordgo.WithContext(ctx)); err != nil {
			b.log.Warn("deleting the reply of a deleted message", "channel", channelID, "reply", replyID, "err", err)
		}
	})
}
