package slack

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/formatting"
)

// handleSocket acks a Socket Mode envelope first (Slack wants it within
// 3 s), then dispatches it; the run itself happens in a handler goroutine.
func (b *Bot) handleSocket(ctx context.Context, sm *socketmode.Client, ev socketmode.Event) {
	if ev.Request == nil {
		return
	}
	if err := sm.AckCtx(ctx, ev.Request.EnvelopeID, nil); err != nil {
		b.log.Warn("ack failed", "envelope", ev.Request.EnvelopeID, "err", err)
	}
	ws := b.single.Load()
	switch d := ev.Data.(type) {
	case slackevents.EventsAPIEvent:
		b.onEventsAPI(ws, d, ev.Request.RetryAttempt > 0)
	case slack.SlashCommand:
		b.onSlash(ws, d)
	case slack.InteractionCallback:
		b.onInteraction(ws, d)
	}
}

// onEventsAPI dispatches an event_callback, once per event id: Slack
// redelivers events it thinks were lost, over a socket or HTTP alike, and
// says so (retry).
func (b *Bot) onEventsAPI(ws *workspace, e slackevents.EventsAPIEvent, retry bool) {
	self := ws.self
	if cb, ok := e.Data.(*slackevents.EventsAPICallbackEvent); ok && cb.EventID != "" && !b.seen.Add(cb.EventID, struct{}{}) {
		b.log.Debug("duplicate event ignored", "event_id", cb.EventID)
		return
	}
	team := e.TeamID
	if team == "" {
		team = self.teamID
	}
	b.log.Debug("event", "type", e.InnerEvent.Type)
	switch ie := e.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		b.onMention(ws, team, ie, retry)
	case *slackevents.MessageEvent:
		b.onMessage(ws, team, ie, retry)
	case *slackevents.ReactionAddedEvent:
		b.onReaction(ws, team, ie)
	case *slackevents.AppHomeOpenedEvent:
		b.onHomeOpened(ws, team, ie)
	case *slackevents.AppUninstalledEvent, *slackevents.TokensRevokedEvent:
		// A distributed app deletes the installation before dispatch
		// (serveHTTP); the workspace of SLACK_BOT_TOKEN is the operator's.
		b.log.Warn("slack says the app was removed from the workspace or its token revoked", "event", e.InnerEvent.Type)
	}
}

// fromBot reports whether a message was posted by a bot or by runblock
// itself; those never trigger a run by themselves.
func fromBot(self *who, botID, user string) bool {
	return botID != "" || user == "" || user == self.userID
}

// own reports whether a message was posted by runblock itself.
func own(self *who, botID, user string) bool {
	return botID != "" && botID == self.botID || user != "" && user == self.userID
}

// mentions reports whether text mentions the bot user.
func mentions(self *who, text string) bool {
	return strings.Contains(text, "<@"+self.userID+">") || strings.Contains(text, "<@"+self.userID+"|")
}

// stripMention removes the bot's mentions, the trigger, from text.
func stripMention(self *who, text string) string {
	text = strings.ReplaceAll(text, "<@"+self.userID+">", "")
	for {
		i := strings.Index(text, "<@"+self.userID+"|")
		if i < 0 {
			return text
		}
		j := strings.IndexByte(text[i:], '>')
		if j < 0 {
			return text
		}
		text = text[:i] + text[i+j+1:]
	}
}

// threadOf is where replies to a message go: its thread, or a new thread
// under it.
func threadOf(threadTS, ts string) string {
	if threadTS != "" {
		return threadTS
	}
	return ts
}

// isDM reports whether a channel id is a direct message with the bot.
func isDM(channel string) bool { return strings.HasPrefix(channel, "D") }

// allowed reports whether explicit triggers work in channel of team.
func (b *Bot) allowed(team, channel string) bool {
	return b.config(team).allowed(channel)
}

func (b *Bot) received() {
	b.cfg.Metrics.MessageReceived(Platform)
}

func (b *Bot) onMention(ws *workspace, team string, ev *slackevents.AppMentionEvent, retry bool) {
	self := ws.self
	// An edited mention arrives as message_changed too; that path re-runs
	// it. Direct messages are handled as messages, mention or not.
	if fromBot(self, ev.BotID, ev.User) || ev.Edited != nil || isDM(ev.Channel) {
		return
	}
	b.mentioned(self, source{
		ws: ws, what: "mention", team: team, user: ev.User, channel: ev.Channel,
		ts: ev.TimeStamp, thread: threadOf(ev.ThreadTimeStamp, ev.TimeStamp),
		text: ev.Text, files: ev.Files, retry: retry,
	})
}

// mentioned answers a mention of the bot in a channel, once whichever of
// its events come: app_mention, and for a message that shares files, a
// message of subtype file_share, which may come alone (without an
// app_mention), before it or after it.
func (b *Bot) mentioned(self *who, src source) {
	if !b.mentions.Add(src.key(), struct{}{}) {
		b.log.Debug("mention answered from its other event", "channel", src.channel, "ts", src.ts)
		return
	}
	b.received()
	src.text, src.triggered, src.first = stripMention(self, src.text), true, true
	src.reset, src.export = answer.IsReset(src.text), answer.IsExport(src.text)
	if !b.allowed(src.team, src.channel) {
		b.start(src.notice(formatting.NoticeChannelNotAllowed))
		return
	}
	b.start(src)
}

func (b *Bot) onMessage(ws *workspace, team string, ev *slackevents.MessageEvent, retry bool) {
	self := ws.self
	dm := ev.ChannelType == slackevents.ChannelTypeIM || isDM(ev.Channel)
	switch ev.SubType {
	case "", "thread_broadcast", "file_share":
		if fromBot(self, ev.BotID, ev.User) {
			return
		}
		var files []slack.File
		if ev.Message != nil {
			files = ev.Message.Files
		}
		if !dm && ev.SubType == "file_share" && mentions(self, ev.Text) {
			b.mentioned(self, source{
				ws: ws, what: "mention", team: team, user: ev.User, channel: ev.Channel,
				ts: ev.TimeStamp, thread: threadOf(ev.ThreadTimeStamp, ev.TimeStamp),
				text: ev.Text, files: files, retry: retry,
			})
			return
		}
		if !dm && (mentions(self, ev.Text) || !b.config(team).channels[ev.Channel]) {
			return // app_mention handles mentions; elsewhere only mentions run
		}
		b.received()
		src := source{
			ws: ws, what: "channel", team: team, user: ev.User, channel: ev.Channel,
			ts: ev.TimeStamp, thread: threadOf(ev.ThreadTimeStamp, ev.TimeStamp),
			text: ev.Text, files: files, quiet: !dm, first: true, retry: retry,
		}
		if dm {
			// A mention in a DM is an explicit trigger like anywhere else.
			src.what, src.triggered, src.text = "dm", mentions(self, ev.Text), stripMention(self, ev.Text)
			src.reset, src.export = src.triggered && answer.IsReset(src.text), src.triggered && answer.IsExport(src.text)
		}
		b.start(src)
	case "message_changed":
		b.onEdit(ws, team, dm, ev)
	case "message_deleted":
		if prev := ev.PreviousMessage; prev != nil && own(self, prev.BotID, prev.User) {
			return // the bot's own reply: it answers no message
		}
		ts := ev.DeletedTimeStamp
		if ts == "" && ev.PreviousMessage != nil {
			ts = ev.PreviousMessage.Timestamp
		}
		thread := ts
		if ev.PreviousMessage != nil && ev.PreviousMessage.ThreadTimestamp != "" {
			thread = ev.PreviousMessage.ThreadTimestamp
		}
		b.deleted(ws, ev.Channel, ts, thread)
	}
}

// deleted deletes the reply to the message ts (in thread) in channel, if
// any.
func (b *Bot) deleted(ws *workspace, channel, ts, thread string) {
	if ts == "" {
		return
	}
	src := source{ws: ws, what: "delete", channel: channel, ts: ts, thread: thread}
	at, _ := tsTime(ts)
	req := answer.Request[source]{Src: src, What: src.what, Log: b.log.With("channel", channel, "ts", ts), Key: src.key(), At: at, Look: true}
	b.flow.Take(&req)
	if !b.spawn("delete", func(ctx context.Context) { b.flow.Delete(ctx, req) }) {
		b.flow.Drop(req)
	}
}

// tombstone is the subtype of a message deleted while it has thread
// replies: Slack keeps it as "This message was deleted." and sends a
// message_changed, not a message_deleted.
const tombstone = "tombstone"

// onEdit re-runs an edited message within the edit window and updates the
// earlier reply in place; a message turned into a tombstone is deleted.
func (b *Bot) onEdit(ws *workspace, team string, dm bool, ev *slackevents.MessageEvent) {
	self := ws.self
	msg, prev := ev.Message, ev.PreviousMessage
	if msg != nil && msg.SubType == tombstone {
		if prev != nil && own(self, prev.BotID, prev.User) {
			return
		}
		ts := msg.Timestamp
		if ts == "" && prev != nil {
			ts = prev.Timestamp
		}
		b.deleted(ws, ev.Channel, ts, threadOf(msg.ThreadTimestamp, ts))
		return
	}
	wc := b.config(team)
	if msg == nil || fromBot(self, msg.BotID, msg.User) || wc.editWindow <= 0 {
		return
	}
	if prev != nil && prev.Text == msg.Text {
		return // a thread reply count or an unfurl changed, not the text
	}
	mention := mentions(self, msg.Text)
	if !dm && !mention && !wc.channels[ev.Channel] {
		return
	}
	if !wc.allowed(ev.Channel) {
		return // the mention itself got the "not in this channel" notice
	}
	src := source{
		ws: ws, what: "edit", team: team, user: msg.User, channel: ev.Channel,
		ts: msg.Timestamp, thread: threadOf(msg.ThreadTimestamp, msg.Timestamp),
		text: msg.Text, files: msg.Files, triggered: mention, quiet: !dm && !mention,
	}
	if mention {
		src.text = stripMention(self, msg.Text)
	}
	if rec, ok := b.flow.Recall(src.key()); ok {
		if b.now().Sub(rec.Created) > wc.editWindow {
			return
		}
	} else if age, ok := tsAge(msg.Timestamp, b.now()); !ok || age > wc.editWindow {
		return
	}
	b.received()
	b.start(src)
}

// tsAge is how long ago a Slack message timestamp ("1700000000.000100") was.
func tsAge(ts string, now time.Time) (time.Duration, bool) {
	at, ok := tsTime(ts)
	return now.Sub(at), ok
}

// tsTime is the time of a Slack message timestamp.
func tsTime(ts string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000), true
}

// onReaction runs a message a person reacted to with the run reaction,
// whoever posted it (another bot's message too: the trigger is the person).
func (b *Bot) onReaction(ws *workspace, team string, ev *slackevents.ReactionAddedEvent) {
	self := ws.self
	if ev.Reaction != b.config(team).reaction || ev.Item.Type != "message" || ev.User == "" || ev.User == self.userID {
		return
	}
	b.received()
	channel, ts, user := ev.Item.Channel, ev.Item.Timestamp, ev.User
	b.spawn("reaction", func(ctx context.Context) {
		msg, err := fetch(ctx, ws, channel, ts)
		if err != nil {
			b.log.Warn("reaction: fetching the message", "channel", channel, "ts", ts, "err", err)
			return
		}
		if msg.User == self.userID || msg.BotID == self.botID {
			return // our own replies hold output, not code
		}
		src := source{
			ws: ws, what: "reaction", team: team, user: user, channel: channel,
			ts: ts, thread: threadOf(msg.ThreadTimestamp, msg.Timestamp),
			text: msg.Text, files: msg.Files,
		}
		if !b.allowed(team, channel) {
			src = src.notice(formatting.NoticeChannelNotAllowed)
		}
		b.flow.Answer(ctx, b.request(src))
	})
}

// fetch returns the message ts in channel: a top-level message from
// conversations.history, a thread reply from conversations.replies.
func fetch(ctx context.Context, ws *workspace, channel, ts string) (slack.Message, error) {
	h, err := ws.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
		ChannelID: channel, Latest: ts, Oldest: ts, Inclusive: true, Limit: 1,
	})
	if err == nil {
		for _, m := range h.Messages {
			if m.Timestamp == ts {
				return m, nil
			}
		}
	}
	msgs, _, _, err := ws.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: channel, Timestamp: ts, Latest: ts, Oldest: ts, Inclusive: true, Limit: 1,
	})
	if err != nil {
		return slack.Message{}, err
	}
	for _, m := range msgs {
		if m.Timestamp == ts {
			return m, nil
		}
	}
	return slack.Message{}, errNotFound
}

// onSlash runs /run's text, or opens the code modal when it is empty.
func (b *Bot) onSlash(ws *workspace, cmd slack.SlashCommand) {
	self := ws.self
	b.received()
	team := cmd.TeamID
	if team == "" {
		team = self.teamID
	}
	src := source{
		ws: ws, what: "slash", team: team, user: cmd.UserID, channel: cmd.ChannelID,
		text: cmd.Text, triggered: true, raw: true, responseURL: cmd.ResponseURL,
	}
	switch {
	case strings.EqualFold(strings.TrimSpace(cmd.Text), "help"):
		b.spawn("help", func(ctx context.Context) { b.help(ctx, src) })
	case isSettings(cmd.Text):
		b.spawn("settings", func(ctx context.Context) { b.settingsCommand(ctx, src) })
	case !b.allowed(team, cmd.ChannelID):
		b.start(src.notice(formatting.NoticeChannelNotAllowed))
	case strings.TrimSpace(cmd.Text) == "":
		b.spawn("modal", func(ctx context.Context) { b.openModal(ctx, ws, cmd) })
	case answer.IsReset(cmd.Text), answer.IsExport(cmd.Text):
		b.slashSession(src, answer.IsExport(cmd.Text))
	default:
		b.start(src)
	}
}

// openModal opens the /run modal with a multi-line code input; the channel
// rides in private_metadata to the view submission.
func (b *Bot) openModal(ctx context.Context, ws *workspace, cmd slack.SlashCommand) {
	input := slack.NewPlainTextInputBlockElement(slack.NewTextBlockObject(slack.PlainTextType, "print('hello')", false, false), modalInputID)
	input.Multiline = true
	view := slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      ModalCallbackID,
		PrivateMetadata: cmd.ChannelID,
		Title:           slack.NewTextBlockObject(slack.PlainTextType, "Run Python", false, false),
		Submit:          slack.NewTextBlockObject(slack.PlainTextType, "Run", false, false),
		Close:           slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock(modalBlockID, slack.NewTextBlockObject(slack.PlainTextType, "Code", false, false), nil, input),
		}},
	}
	if _, err := ws.api.OpenViewContext(ctx, cmd.TriggerID, view); err != nil {
		b.log.Error("opening the /run modal", "err", err)
	}
}

// onInteraction handles the "Run code" message shortcut, the /run modal's
// submission and the replies' buttons.
func (b *Bot) onInteraction(ws *workspace, cb slack.InteractionCallback) {
	self := ws.self
	team := cb.Team.ID
	if team == "" {
		team = self.teamID
	}
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		b.onButtons(ws, team, cb)
	case slack.InteractionTypeMessageAction:
		if cb.CallbackID != ShortcutCallbackID {
			return
		}
		b.received()
		msg := cb.Message
		src := source{
			ws: ws, what: "shortcut", team: team, user: cb.User.ID, channel: cb.Channel.ID,
			ts: msg.Timestamp, thread: threadOf(msg.ThreadTimestamp, msg.Timestamp),
			text: msg.Text, files: msg.Files, triggered: true, responseURL: cb.ResponseURL,
		}
		switch {
		case msg.User == self.userID || msg.BotID == self.botID:
			src = src.notice(formatting.NoticeNoCode)
		case !b.allowed(team, cb.Channel.ID):
			src = src.notice(formatting.NoticeChannelNotAllowed)
		}
		b.start(src)
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID != ModalCallbackID {
			return
		}
		b.received()
		b.start(source{
			ws: ws, what: "modal", team: team, user: cb.User.ID, channel: cb.View.PrivateMetadata,
			text: cb.View.State.Values[modalBlockID][modalInputID].Value, triggered: true, raw: true,
		})
	}
}
