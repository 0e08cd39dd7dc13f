package discord

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/bwmarrin/discordgo"

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

// trigger decides whether m is for the bot.
func (b *Bot) trigger(s *discordgo.Session, m *discordgo.Message) (trigger, bool) {
	text := m.Content
	explicit := false
	if id := b.botUserID(); id != "" && mentions(m, id) {
		text = strings.NewReplacer("<@"+id+">", "", "<@!"+id+">", "").Replace(text)
		explicit = true
	}
	if rest, ok := cutPrefix(text, b.cfg.Prefix); ok {
		text, explicit = rest, true
	}
	switch {
	case m.GuildID == "":
		return trigger{text: text, explicit: true}, true
	case b.channelListed(s, m.ChannelID):
		return trigger{text: text, explicit: explicit, quiet: !explicit}, true
	case explicit:
		return trigger{text: text, explicit: true, notAllowed: !b.channelAllowed(s, m.GuildID, m.ChannelID)}, true
	}
	return trigger{}, false
}

// channelAllowed reports whether the bot runs code in a channel: everywhere
// when Config.Channels is empty, else in DMs and the listed channels (and
// their threads) only.
func (b *Bot) channelAllowed(s *discordgo.Session, guildID, channel string) bool {
	return guildID == "" || len(b.cfg.Channels) == 0 || b.channelListed(s, channel)
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
// is in Config.Channels.
func (b *Bot) channelListed(s *discordgo.Session, channel string) bool {
	if len(b.cfg.Channels) == 0 {
		return false
	}
	if slices.Contains(b.cfg.Channels, channel) {
		return true
	}
	if s.State != nil {
		if c, err := s.State.Channel(channel); err == nil && c.IsThread() {
			return slices.Contains(b.cfg.Channels, c.ParentID)
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
	tr, ok := b.trigger(s, m)
	if !ok {
		return
	}
	if tr.notAllowed {
		b.spawn("message", func(ctx context.Context) {
			b.metricReceived()
			b.reply(ctx, s, m.ChannelID, m.ID, m.GuildID, outcome{text: formatting.RenderNotice(formatting.Discord, formatting.NoticeChannelNotAllowed)})
		})
		return
	}
	ex := formatting.Extract(tr.text, formatting.ExtractOptions{Platform: formatting.Discord, Triggered: tr.explicit})
	if !ex.Found && tr.quiet {
		return
	}
	src := source{channelID: m.ChannelID, messageID: m.ID, guildID: m.GuildID, user: userKey(m.GuildID, m.Author.ID), explicit: tr.explicit, content: m.Content}
	if !b.reserve(src) {
		return
	}
	if ex.Found {
		src.turn = b.turns.Take(src.user)
	}
	if !b.spawn("message", func(ctx context.Context) {
		b.metricReceived()
		if !ex.Found {
			b.answerNotice(ctx, s, src, notice(ex))
			return
		}
		b.answerMessage(ctx, s, src, ex)
	}) {
		src.turn.Done()
		b.answers.Remove(src.messageID)
	}
}

func (b *Bot) onMessageUpdate(s *discordgo.Session, mu *discordgo.MessageUpdate) {
	m := mu.Message
	if m == nil || m.Content == "" || (m.Author != nil && b.isSelfOrBot(m)) || b.cfg.EditWindow <= 0 {
		return
	}
	queued, same := false, false
	if _, ok := b.answers.Update(m.ID, func(a *answer) {
		switch {
		case a.content == m.Content:
			same = true // an embed or a pin changed, not the code
		case a.replyID == "":
			a.edited, queued = m, true
		}
	}); !ok {
		b.recallEdit(s, m)
		return
	} else if queued || same {
		return
	}
	b.spawn("edit", func(ctx context.Context) { b.rerun(ctx, s, m) })
}

func (b *Bot) onMessageDelete(s *discordgo.Session, md *discordgo.MessageDelete) {
	if md.Message == nil {
		return
	}
	a, ok := b.answers.Update(md.ID, func(a *answer) { a.deleted = true })
	if !ok {
		b.recallDelete(s, md.ChannelID, md.ID)
		return
	}
	if a.replyID == "" {
		return // the first run is in flight; its reply is deleted when it lands
	}
	b.answers.Remove(md.ID)
	b.spawn("delete", func(ctx context.Context) {
		if err := s.ChannelMessageDelete(a.channelID, a.replyID, discordgo.WithContext(ctx)); err != nil {
			b.log.Warn("deleting the reply of a deleted message", "channel", a.channelID, "reply", a.replyID, "err", err)
		}
	})
}

func (b *Bot) onReactionAdd(s *discordgo.Session, r *discordgo.MessageReactionAdd) {
	if r.MessageReaction == nil || !sameEmoji(r.Emoji.Name, b.cfg.RunReaction) || r.UserID == b.botUserID() {
		return
	}
	if r.Member != nil && r.Member.User != nil && r.Member.User.Bot {
		return
	}
	if !b.channelAllowed(s, r.GuildID, r.ChannelID) {
		return
	}
	src := source{channelID: r.ChannelID, messageID: r.MessageID, guildID: r.GuildID, user: userKey(r.GuildID, r.UserID)}
	if !b.reserve(src) {
		return // answered or being answered: an edit re-runs it
	}
	ok := b.spawn("reaction", func(ctx context.Context) {
		m, err := s.ChannelMessage(r.ChannelID, r.MessageID, discordgo.WithContext(ctx))
		if err != nil {
			b.answers.Remove(r.MessageID)
			b.log.Warn("fetching the message of a run reaction", "channel", r.ChannelID, "message", r.MessageID, "err", err)
			return
		}
		ex := formatting.Extract(m.Content, formatting.ExtractOptions{Platform: formatting.Discord})
		if !ex.Found {
			b.answers.Remove(r.MessageID)
			return
		}
		b.answers.Update(r.MessageID, func(a *answer) { a.content = m.Content })
		if b.recalled(ctx, s, src) {
			return // answered before a restart: an edit re-runs it
		}
		b.metricReceived()
		b.answerMessage(ctx, s, src, ex)
	})
	if !ok {
		b.answers.Remove(src.messageID)
	}
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

// notice is the hint for an explicit trigger without runnable code.
func notice(ex formatting.Extraction) string {
	if len(ex.OtherLanguages) > 0 {
		return formatting.RenderNotice(formatting.Discord, formatting.NoticeNotPython)
	}
	return formatting.RenderNotice(formatting.Discord, formatting.NoticeNoCode)
}

func (b *Bot) metricReceived() {
	b.cfg.Metrics.MessageReceived(Platform)
}

func (b *Bot) metricReplied() {
	b.cfg.Metrics.MessageReplied(Platform)
}
