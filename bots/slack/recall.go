package slack

import (
	"context"
	"log/slog"
	"time"

	"github.com/slack-go/slack"
)

// Every reply carries message metadata naming the message it answers, so
// that Slack itself remembers what the in-memory map (Bot.replies) forgets
// on a restart or a deploy: an edit of an earlier-answered message updates
// its reply, a delete removes it, and a redelivered event is not answered
// twice. The metadata is read back from the thread with
// conversations.replies and include_all_metadata, which needs the history
// scopes the app already has (manifest.yaml).
const (
	metadataType = "runblock_reply" // event_type of a reply's metadata

	// Keys of the event_payload.
	metaSourceChannel = "source_channel"
	metaSourceTS      = "source_ts"
	metaReaction      = "reaction" // the final reaction on the source
	metaFiles         = "files"    // ids of the output files in the thread
)

// Bounds of a lookup in a thread.
const (
	lookupPageSize = 200
	lookupPages    = 5
	// clockSkew widens "posted before this process started" for a local
	// clock behind Slack's.
	clockSkew = 2 * time.Minute
)

// tag is what a reply's metadata carries besides its source.
type tag struct {
	reaction string
	files    []string
}

func (t tag) of(rec *record) tag {
	if rec == nil {
		return t
	}
	return tag{reaction: t.reaction, files: rec.files}
}

// metadata is the reply metadata for src with t.
func metadata(src source, t tag) slack.MsgOption {
	files := make([]any, len(t.files))
	for i, f := range t.files {
		files[i] = f
	}
	return slack.MsgOptionMetadata(slack.SlackMetadata{
		EventType: metadataType,
		EventPayload: map[string]any{
			metaSourceChannel: src.channel,
			metaSourceTS:      src.ts,
			metaReaction:      t.reaction,
			metaFiles:         files,
		},
	})
}

// recall returns the record of the reply to the message ts in channel
// (whose replies go to thread): from memory, else, when look is set and the
// message may have been answered before this process knew of it, from
// Slack. Nil means not answered, or not found (which is logged).
func (b *Bot) recall(ctx context.Context, log *slog.Logger, channel, ts, thread string, look bool) *record {
	key := channel + "/" + ts
	if rec, ok := b.replies.Get(key); ok {
		return rec
	}
	if !look || !b.mayHaveAnswered(ts) {
		return nil
	}
	rec, err := b.lookup(ctx, channel, ts, thread)
	if err != nil {
		log.Warn("looking for an earlier reply in the thread", "thread", thread, "err", err)
		return nil
	}
	if rec != nil {
		log.Debug("earlier reply found in the thread", "reply", rec.ts)
		b.replies.Put(key, rec)
	}
	return rec
}

// mayHaveAnswered reports whether a message the map does not know may still
// have a reply: it was posted before this process started (a restart), or
// so long ago that its entry may have expired, or the map is full and may
// have dropped it.
func (b *Bot) mayHaveAnswered(ts string) bool {
	at, ok := tsTime(ts)
	if !ok {
		return false
	}
	return at.Before(time.Unix(0, b.openedAt.Load()).Add(clockSkew)) || b.now().Sub(at) > replyTTL ||
		b.replies.Len() >= maxReplies
}

// lookup finds the bot's reply to the message ts in channel in thread, by
// its metadata.
func (b *Bot) lookup(ctx context.Context, channel, ts, thread string) (*record, error) {
	self := b.self.Load()
	if self == nil || thread == "" {
		return nil, nil
	}
	cursor := ""
	for range lookupPages {
		msgs, more, next, err := b.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: thread, Cursor: cursor, Limit: lookupPageSize, IncludeAllMetadata: true,
		})
		if err != nil {
			if err.Error() == "thread_not_found" {
				return nil, nil
			}
			return nil, err
		}
		for _, m := range msgs {
			if rec := replyTo(self, channel, ts, m); rec != nil {
				return rec, nil
			}
		}
		if !more || next == "" {
			return nil, nil
		}
		cursor = next
	}
	return nil, nil
}

// replyTo returns the record of m when m is the bot's reply to the message
// ts in channel.
func replyTo(self *who, channel, ts string, m slack.Message) *record {
	md := m.Metadata
	if (m.BotID != self.botID && m.User != self.userID) || md.EventType != metadataType ||
		md.EventPayload[metaSourceTS] != ts || md.EventPayload[metaSourceChannel] != channel {
		return nil
	}
	rec := &record{channel: channel, ts: m.Timestamp}
	rec.reaction, _ = md.EventPayload[metaReaction].(string)
	if files, ok := md.EventPayload[metaFiles].([]any); ok {
		for _, f := range files {
			if id, ok := f.(string); ok && id != "" {
				rec.files = append(rec.files, id)
			}
		}
	}
	if at, ok := tsTime(m.Timestamp); ok {
		rec.created = at
	}
	return rec
}
