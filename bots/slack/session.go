package slack

import (
	"context"
	"strings"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/bots/internal/answer"
)

// A thread is a session (bots/internal/answer/session.go): a runnable
// top-level message starts one, and every runnable message in its thread
// continues it, whoever posts it, as does the run reaction or the "Run
// code" shortcut on a message in it. /run and its modal name no thread, so
// they run alone. After a restart the flow recovers a session's cells from
// the thread (Earlier): the messages the bot answered, by the metadata of
// its replies.

// sessionPrefix is the start of the ids of the sessions in a channel.
func sessionPrefix(team, channel string) string { return "slack:" + team + ":" + channel + ":" }

// session is the id of src's session: its thread's; "" for a run that is
// no message's (/run, the modal).
func (s source) session() string {
	if s.ts == "" || s.thread == "" {
		return ""
	}
	return sessionPrefix(s.team, s.channel) + s.thread
}

// slashSession answers /run reset and /run export: it resets (or posts
// as a notebook) the session in the channel the user last ran a cell in,
// since a slash command does not say which thread it was typed in.
func (b *Bot) slashSession(src source, export bool) {
	what := "reset"
	if export {
		what = "export"
	}
	id := b.flow.Recent(src.userKey(), sessionPrefix(src.team, src.channel))
	if id == "" {
		b.spawn(what, func(ctx context.Context) {
			if err := b.notify(ctx, src, "You have no session in this channel to "+what+"."); err != nil {
				b.log.Warn("answering /run "+what, "err", err)
			}
		})
		return
	}
	src.thread = strings.TrimPrefix(id, sessionPrefix(src.team, src.channel))
	src.what, src.reset, src.export = what, !export, export
	req := b.request(src)
	req.Session = id
	b.flow.Take(&req)
	if !b.spawn(src.what, func(ctx context.Context) { b.flow.Answer(ctx, req) }) {
		b.flow.Drop(req)
	}
}

// Earlier returns the messages of src's thread the bot answered, oldest
// first, with its replies, and its resets.
func (p platform) Earlier(ctx context.Context, src source, _ string) ([]answer.Past[source], error) {
	ws := src.ws
	if ws == nil || src.thread == "" {
		return nil, nil
	}
	self := ws.self
	var msgs []slack.Message
	cursor := ""
	for range lookupPages {
		page, more, next, err := ws.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: src.channel, Timestamp: src.thread, Cursor: cursor, Limit: lookupPageSize, IncludeAllMetadata: true,
		})
		if err != nil {
			if err.Error() == "thread_not_found" {
				return nil, nil
			}
			return nil, err
		}
		msgs = append(msgs, page...)
		if !more || next == "" {
			break
		}
		cursor = next
	}
	replies := make(map[string]*answer.Record[source])
	for _, m := range msgs {
		if ts, ok := m.Metadata.EventPayload[metaSourceTS].(string); ok {
			if rec := replyTo(self, src.channel, ts, m); rec != nil {
				replies[ts] = rec
			}
		}
	}
	var past []answer.Past[source]
	for _, m := range msgs {
		mine := m.BotID == self.botID || m.User == self.userID
		switch {
		case mine && m.Text == answer.ResetText:
			past = append(past, answer.Past[source]{Reset: true})
		case mine || replies[m.Timestamp] == nil:
		default:
			s := source{
				ws: ws, what: "history", team: src.team, user: m.User, channel: src.channel,
				ts: m.Timestamp, thread: src.thread, text: m.Text, files: m.Files, triggered: isDM(src.channel),
			}
			if mentions(self, m.Text) {
				s.text, s.triggered = stripMention(self, m.Text), true
			}
			rec := replies[m.Timestamp]
			rec.Src = s
			past = append(past, answer.Past[source]{Request: p.b.request(s), Reply: *rec})
		}
	}
	return past, nil
}
