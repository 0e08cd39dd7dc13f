package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"
)

// A reply is a message by the bot whose message_reference names the message
// it answers, so Discord itself remembers what the answer flow's
// memory forgets on a restart or a deploy: the bot finds its reply
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
)

// lookup returns the id of the bot's reply to messageID in channelID, or ""
// when there is none among the messages that follow it.
func (b *Bot) lookup(ctx context.Context, channelID, messageID string) (string, error) {
	self := b.botUserID()
	s := b.session()
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
