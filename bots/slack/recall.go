package slack

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/bots/internal/answer"
)

// Every reply carries message metadata naming the message it answers, so
// that Slack itself remembers what the answer flow's memory forgets
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
)

// tag is what a reply's metadata carries besides its source.
type tag struct {
	reaction string
	files    []string
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

// lookup finds the bot's reply to src in its thread, by its metadata.
func (b *Bot) lookup(ctx context.Context, src source) (*answer.Record[source], error) {
	channel, ts, thread := src.channel, src.ts, src.thread
	self := src.ws.self
	if thread == "" {
		return nil, nil
	}
	cursor := ""
	for range lookupPages {
		msgs, more, next, err := src.ws.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
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
				rec.Src = src
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
func replyTo(self *who, channel, ts string, m slack.Message) *answer.Record[source] {
	md := m.Metadata
	if (m.BotID != self.botID && m.User != self.userID) || md.EventType != metadataType ||
		md.EventPayload[metaSourceTS] != ts || md.EventPayload[metaSourceChannel] != channel {
		return nil
	}
	rec := &answer.Record[source]{Reply: m.Timestamp}
	rec.Reaction, _ = md.EventPayload[metaReaction].(string)
	if files, ok := md.EventPayload[metaFiles].([]any); ok {
		for _, f := range files {
			if id, ok := f.(string); ok && id != "" {
				rec.Files = append(rec.Files, id)
			}
		}
	}
	if at, ok := tsTime(m.Timestamp); ok {
		rec.Created = at
	}
	return rec
}
