package discord

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/formatting"
)

// trigger is why a message is for the bot.
type trigger struct {
	text string // the content without the prefix or the bot's mention
	// explicit: the prefix, a mention of the bot, or a DM. Inline code counts
	// and a message without code gets a hint.
	explicit bool
	// quiet: picked up only because the channel is in Config.Channels, so a
	// message without Python stays unanswered.
	quiet bool
	// notAllowed: an explicit trigger in a guild channel outside
	// Config.Channels, answered with a hint only.
	notAllowed bool
}

// trigger decides whether m is for the bot, under its guild's gc.
func (b *Bot) trigger(s *discordgo.Session, gc guildConfig, m *discordgo.Message) (trigger, bool) {
	text := m.Content
	explicit := false
	if id := b.botUserID(); id != "" && mentions(m, id) {
		text = strings.NewReplacer("<@"+id+">", "", "<@!"+id+">", "").Replace(text)
		explicit = true
	}
	if rest, ok := cutPrefix(text, gc.prefix); ok {
		text, explicit = rest, true
	}
	switch {
	case m.GuildID == "":
		return trigger{text: text, explicit: true}, true
	case b.channelListed(s, gc.channels, m.ChannelID):
		return trigger{text: text, explicit: explicit, quiet: !explicit}, true
	case explicit:
		return trigger{text: text, explicit: true, notAllowed: !b.channelAllowed(s, gc, m.GuildID, m.ChannelID)}, true
	}
	return trigger{}, false
}

// channelAllowed reports whether the bot runs code in a channel: everywhere
// when the guild's channels (gc) are not set, else in DMs and the listed
// channels (and their threads) only.
func (b *Bot) channelAllowed(s *discordgo.Session, gc guildConfig, guildID, channel string) bool {
	return guildID == "" || len(gc.channels) == 0 || b.channelListed(s, gc.channels, channel)
}

func mentions(m *discordgo.Message, id string) bool {
	for _, u := range m.Mentions {
		if u != nil && u.ID == id {
			return true
		}
	}
	return strings.Contains(m.Content, "<@"+id+">") || strings.Contains(m.Content, "<@!"+id+">")
}

// cutPrefix strips the command prefix when the message starts with it as a
// word: "!run ```…", "!run\n```…", "!run`print(1)`", but not "!running".
func cutPrefix(text, prefix string) (string, bool) {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	if prefix == "" || !strings.HasPrefix(t, prefix) {
		return "", false
	}
	rest := t[len(prefix):]
	if rest == "" || rest[0] == '`' || unicode.IsSpace(rune(rest[0])) {
		return rest, true
	}
	return "", false
}

// channelListed reports whether channel, or the channel a thread belongs to,
// is one of channels.
func (b *Bot) channelListed(s *discordgo.Session, channels []string, channel string) bool {
	if len(channels) == 0 {
		return false
	}
	if slices.Contains(channels, channel) {
		return true
	}
	if s.State != nil {
		if c, err := s.State.Channel(channel); err == nil && c.IsThread() {
			return slices.Contains(channels, c.ParentID)
		}
	}
	return false
}

// isSelfOrBot reports whether a message comes from a bot, a webhook or this
// bot itself: those are never run by a message trigger.
func (b *Bot) isSelfOrBot(m *discordgo.Message) bool {
	return m.Author == nil || m.Author.Bot || m.Author.System || m.WebhookID != "" || m.Author.ID == b.botUserID()
}

func (b *Bot) onMessageCreate(s *discordgo.Session, mc *discordgo.MessageCreate) {
	m := mc.Message
	if m == nil || b.isSelfOrBot(m) {
		return
	}
	tr, ok := b.trigger(s, b.guildConfig(context.Background(), m.GuildID), m)
	if !ok {
		return
	}
	src := source{channelID: m.ChannelID, messageID: m.ID, guildID: m.GuildID, user: userKey(m.GuildID, m.Author.ID), explicit: tr.explicit, content: m.Content}
	if tr.notAllowed {
		n := formatting.NoticeChannelNotAllowed
		b.start(answer.Request[source]{Src: src, What: "message", Notice: &n})
		return
	}
	opts := formatting.ExtractOptions{Triggered: tr.explicit}
	if tr.quiet && !formatting.Extract(tr.text, formatting.ExtractOptions{Platform: formatting.Discord}).Found {
		return // chat in a listed channel
	}
	b.startCell(s, answer.Request[source]{
		Src: src, What: "message", Key: m.ID, User: src.user, Text: tr.text, Extract: opts,
		Files: attachments(m.Attachments), Quiet: tr.quiet, Once: true, Reset: tr.explicit && answer.IsReset(tr.text),
		Export: tr.explicit && answer.IsExport(tr.text),
	}, m)
}

// onMessageUpdate re-runs an edit of an answered message into its reply,
// within the edit window; an edit of a message the flow does not know is
// re-run when an earlier process answered it.
func (b *Bot) onMessageUpdate(s *discordgo.Session, mu *discordgo.MessageUpdate) {
	m := mu.Message
	if m == nil || m.Content == "" || (m.Author != nil && b.isSelfOrBot(m)) {
		return
	}
	src, known := b.flow.Last(m.ID)
	if known {
		m.GuildID = src.guildID
	}
	gc := b.guildConfig(context.Background(), m.GuildID)
	if gc.editWindow <= 0 {
		return
	}
	at, err := discordgo.SnowflakeTimestamp(m.ID)
	switch {
	case known && src.content == m.Content:
		return // an embed or a pin changed, not the code
	case known:
		src.content = m.Content
	case err != nil || m.Author == nil || b.now().Sub(at) > gc.editWindow || !b.flow.MayHaveAnswered(at):
		return // not answered by this process, nor by an earlier one
	}
	tr, triggered := b.trigger(s, gc, m)
	if !known {
		src = source{channelID: m.ChannelID, messageID: m.ID, guildID: m.GuildID, user: userKey(m.GuildID, m.Author.ID), explicit: tr.explicit, content: m.Content}
	}
	text := m.Content
	if triggered {
		text = tr.text
	}
	b.startCell(s, answer.Request[source]{
		Src: src, What: "edit", Key: m.ID, User: src.user, Text: text, Extract: formatting.ExtractOptions{Triggered: src.explicit},
		Files: attachments(m.Attachments), At: at, Look: true, Rerun: true, Window: gc.editWindow,
	}, m)
}

// onMessageDelete deletes the reply of a deleted message, once it is there.
func (b *Bot) onMessageDelete(_ *discordgo.Session, md *discordgo.MessageDelete) {
	if md.Message == nil {
		return
	}
	if _, ok := b.own.Remove(md.ID); ok || md.BeforeDelete != nil && md.BeforeDelete.Author != nil && md.BeforeDelete.Author.ID == b.botUserID() {
		return // the bot's own reply: it answers no message
	}
	at, _ := discordgo.SnowflakeTimestamp(md.ID)
	req := answer.Request[source]{Src: source{channelID: md.ChannelID, messageID: md.ID}, What: "delete", Key: md.ID, At: at, Look: true}
	b.flow.Take(&req)
	if !b.spawn("delete", func(ctx context.Context) { b.flow.Delete(ctx, req) }) {
		b.flow.Drop(req)
	}
}

func (b *Bot) onReactionAdd(s *discordgo.Session, r *discordgo.MessageReactionAdd) {
	if r.MessageReaction == nil || r.UserID == b.botUserID() || r.Member != nil && r.Member.User != nil && r.Member.User.Bot {
		return
	}
	gc := b.guildConfig(context.Background(), r.GuildID)
	if !sameEmoji(r.Emoji.Name, gc.reaction) || !b.channelAllowed(s, gc, r.GuildID, r.ChannelID) {
		return
	}
	if _, known := b.flow.Last(r.MessageID); known {
		return // answered or being answered: an edit re-runs it
	}
	b.spawn("reaction", func(ctx context.Context) {
		m, err := s.ChannelMessage(r.ChannelID, r.MessageID, discordgo.WithContext(ctx))
		if err != nil {
			b.log.Warn("fetching the message of a run reaction", "channel", r.ChannelID, "message", r.MessageID, "err", err)
			return
		}
		if !formatting.Extract(m.Content, formatting.ExtractOptions{Platform: formatting.Discord}).Found {
			return
		}
		at, _ := discordgo.SnowflakeTimestamp(r.MessageID)
		b.metricReceived()
		m.GuildID = r.GuildID
		session, _ := b.sessionOf(ctx, s, m, false)
		// Answered before a restart, it is not answered again: an edit
		// re-runs it.
		b.flow.Answer(ctx, answer.Request[source]{
			Src:  source{channelID: r.ChannelID, messageID: r.MessageID, guildID: r.GuildID, user: userKey(r.GuildID, r.UserID), content: m.Content},
			What: "reaction", Key: r.MessageID, User: userKey(r.GuildID, r.UserID), Text: m.Content,
			Files: attachments(m.Attachments), At: at, Quiet: true, Once: true, Look: true, Session: session,
		})
	})
}

// sameEmoji compares emoji names ignoring the variation selector, which
// clients add or drop ("▶" and "▶️").
func sameEmoji(a, b string) bool {
	strip := func(s string) string { return strings.ReplaceAll(s, "\ufe0f", "") }
	return strip(a) == strip(b)
}

// userKey is the scheduler's rate-limit key of a Discord user.
func userKey(guildID, userID string) string {
	if guildID == "" {
		guildID = "dm"
	}
	return "discord:" + guildID + ":" + userID
}

func (b *Bot) metricReceived() {
	b.cfg.Metrics.MessageReceived(Platform)
}

func (b *Bot) metricReplied() {
	b.cfg.Metrics.MessageReplied(Platform)
}
