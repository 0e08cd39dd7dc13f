package discord

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Reactions the bot puts on a message it runs.
const (
	reactionOK     = "✅"
	reactionFailed = "❌"
)

// reactionRunning marks a message whose run is queued or running.
var reactionRunning = formatting.RunningReaction(formatting.Discord)

// typingEvery renews the typing indicator, which Discord shows for 10 s.
const typingEvery = 8 * time.Second

// outputName is the attachment holding the whole output when the reply is cut.
const outputName = "output.txt"

// source is the message a run answers.
type source struct {
	channelID string
	messageID string
	guildID   string
	user      string
	explicit  bool
	content   string
}

// outcome is a reply ready to send.
type outcome struct {
	text string
	full string // the whole output for output.txt, or ""
	ok   bool
	ran  bool // a run's result (✅/❌), not a rejection or a notice
}

// noMentions allows no mention at all. Parse must be an empty list, not nil:
// discordgo sends nil as "parse": null, and Discord then parses everything.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

func outputFiles(full string) []*discordgo.File {
	if full == "" {
		return nil
	}
	return []*discordgo.File{{Name: outputName, ContentType: "text/plain; charset=utf-8", Reader: strings.NewReader(full)}}
}

// execute runs ex for user and renders the result for Discord. Rejections
// and failures become a friendly line; internal errors are logged, not shown.
func (b *Bot) execute(ctx context.Context, user string, ex formatting.Extraction) outcome {
	res, err := b.runner.Submit(ctx, executor.Job{User: user, Request: executor.Request{Code: ex.Code, Stdin: ex.Stdin}})
	if err != nil {
		switch executor.ErrorCode(err) {
		case executor.ErrInternal, executor.ErrUnavailable:
			b.log.Error("discord: running a snippet", "user", user, "err", err)
		default:
			b.log.Info("discord: snippet not run", "user", user, "err", err)
		}
		return outcome{text: formatting.RenderError(formatting.Discord, err)}
	}
	r := formatting.RenderRun(formatting.Discord, ex, res, b.cfg.Render)
	return outcome{text: r.Text, full: r.Full, ok: r.OK, ran: true}
}

// reserve records that src is being answered; false means it already is.
func (b *Bot) reserve(src source) bool {
	return b.answers.reserve(src.messageID, answer{channelID: src.channelID, guildID: src.guildID, user: src.user, at: b.now(), explicit: src.explicit, content: src.content})
}

// answerMessage runs ex and replies to src (reserved), with ⏳ and typing
// while it runs and ✅ or ❌ after; it remembers the reply for edits and
// deletes.
func (b *Bot) answerMessage(ctx context.Context, s *discordgo.Session, src source, ex formatting.Extraction) {
	ind := b.indicate(ctx, s, src.channelID, src.messageID)
	defer ind.stop() // also when the run panics
	out := b.execute(ctx, src.user, ex)
	ind.stop()
	reply, err := b.reply(ctx, s, src.channelID, src.messageID, src.guildID, out)
	ind.wait()
	b.react(ctx, s, src.channelID, src.messageID, reactionRunning, false)
	if err != nil {
		b.answers.remove(src.messageID)
		return
	}
	if out.ran {
		b.react(ctx, s, src.channelID, src.messageID, resultReaction(out.ok), true)
	}
	b.settle(ctx, s, src, reply.ID, out)
}

// answerNotice replies to src (reserved) with a hint, and remembers the
// reply so that fixing the message runs it.
func (b *Bot) answerNotice(ctx context.Context, s *discordgo.Session, src source, text string) {
	out := outcome{text: text}
	reply, err := b.reply(ctx, s, src.channelID, src.messageID, src.guildID, out)
	if err != nil {
		b.answers.remove(src.messageID)
		return
	}
	b.settle(ctx, s, src, reply.ID, out)
}

// settle records the reply of src; a delete or an edit that came while it
// was in flight is carried out now.
func (b *Bot) settle(ctx context.Context, s *discordgo.Session, src source, replyID string, out outcome) {
	var edited *discordgo.Message
	a, ok := b.answers.update(src.messageID, func(a *answer) {
		a.replyID, a.ok, a.ran = replyID, out.ok, out.ran
		edited, a.edited = a.edited, nil
	})
	switch {
	case ok && a.deleted:
		b.answers.remove(src.messageID)
		if err := s.ChannelMessageDelete(src.channelID, replyID, discordgo.WithContext(ctx)); err != nil {
			b.log.Warn("discord: deleting the reply of a deleted message", "channel", src.channelID, "reply", replyID, "err", err)
		}
	case ok && edited != nil:
		b.rerun(ctx, s, edited)
	}
}

// rerun answers an edit of an answered message: it runs the new content and
// edits the reply in place. Only the newest of overlapping edits lands.
func (b *Bot) rerun(ctx context.Context, s *discordgo.Session, m *discordgo.Message) {
	var gen int
	a, ok := b.answers.update(m.ID, func(a *answer) {
		if a.replyID == "" || a.content == m.Content {
			return
		}
		a.gen++
		gen = a.gen
		a.content = m.Content
	})
	if !ok || gen == 0 {
		return // not answered yet, or the content did not change (an embed was added)
	}
	m.GuildID = a.guildID
	text := m.Content
	if tr, ok := b.trigger(s, m); ok {
		text = tr.text
	}
	b.metricReceived()
	ex := formatting.Extract(text, formatting.ExtractOptions{Platform: formatting.Discord, Triggered: a.explicit})
	var out outcome
	if ex.Found {
		ind := b.indicate(ctx, s, a.channelID, m.ID)
		defer ind.stop() // also when the run panics
		out = b.execute(ctx, a.user, ex)
		ind.stop()
		ind.wait()
		b.react(ctx, s, a.channelID, m.ID, reactionRunning, false)
	} else {
		out = outcome{text: notice(ex)}
	}
	cur, ok := b.answers.get(m.ID)
	if !ok || cur.gen != gen || cur.replyID == "" {
		return // a newer edit or a delete won
	}
	content := out.text
	_, err := s.ChannelMessageEditComplex(&discordgo.MessageEdit{
		ID:              cur.replyID,
		Channel:         cur.channelID,
		Content:         &content,
		AllowedMentions: noMentions(),
		Attachments:     &[]*discordgo.MessageAttachment{}, // drop the previous output.txt
		Files:           outputFiles(out.full),
	}, discordgo.WithContext(ctx))
	if err != nil {
		b.log.Warn("discord: editing the reply of an edited message", "channel", cur.channelID, "reply", cur.replyID, "err", err)
		return
	}
	b.metricReplied()
	if cur.ran && (!out.ran || cur.ok != out.ok) {
		b.react(ctx, s, cur.channelID, m.ID, resultReaction(cur.ok), false)
	}
	if out.ran && (!cur.ran || cur.ok != out.ok) {
		b.react(ctx, s, cur.channelID, m.ID, resultReaction(out.ok), true)
	}
	b.answers.update(m.ID, func(a *answer) { a.ok, a.ran = out.ok, out.ran })
}

// reply posts out as a reply to the message (in its thread when it is in
// one: a thread is its own channel), pinging nobody, not even the author.
func (b *Bot) reply(ctx context.Context, s *discordgo.Session, channelID, messageID, guildID string, out outcome) (*discordgo.Message, error) {
	failIfMissing := false
	m, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content:         out.text,
		AllowedMentions: noMentions(),
		Reference:       &discordgo.MessageReference{MessageID: messageID, ChannelID: channelID, GuildID: guildID, FailIfNotExists: &failIfMissing},
		Files:           outputFiles(out.full),
	}, discordgo.WithContext(ctx))
	if err != nil {
		b.logSendError(channelID, err)
		return nil, err
	}
	b.metricReplied()
	return m, nil
}

func (b *Bot) logSendError(channelID string, err error) {
	switch restCode(err) {
	case discordgo.ErrCodeMissingAccess, discordgo.ErrCodeMissingPermissions:
		b.log.Warn("discord: no permission to reply in this channel; re-invite the bot with the logged invite URL or grant it the channel permissions", "channel", channelID, "err", err)
	default:
		if !errors.Is(err, context.Canceled) {
			b.log.Error("discord: sending a reply", "channel", channelID, "err", err)
		}
	}
}

func resultReaction(ok bool) string {
	if ok {
		return reactionOK
	}
	return reactionFailed
}

// react adds (or removes) the bot's reaction; failures only cost the
// decoration, so they are logged at debug level.
func (b *Bot) react(ctx context.Context, s *discordgo.Session, channelID, messageID, emoji string, add bool) {
	var err error
	if add {
		err = s.MessageReactionAdd(channelID, messageID, emoji, discordgo.WithContext(ctx))
	} else {
		err = s.MessageReactionRemove(channelID, messageID, emoji, "@me", discordgo.WithContext(ctx))
	}
	if err != nil {
		b.log.Debug("discord: reaction", "emoji", emoji, "add", add, "err", err)
	}
}

// indicator shows typing and ⏳ while a run is in flight.
type indicator struct {
	once     *sync.Once
	done     chan struct{}
	finished chan struct{}
}

// stop ends the indicator; the reply need not wait for it. It may be called
// more than once.
func (in indicator) stop() { in.once.Do(func() { close(in.done) }) }

// wait waits for the indicator's goroutine, so that ⏳ is removed only after
// it was added.
func (in indicator) wait() { <-in.finished }

// indicate starts the indicator for a run answering messageID.
func (b *Bot) indicate(ctx context.Context, s *discordgo.Session, channelID, messageID string) indicator {
	in := indicator{once: new(sync.Once), done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(in.finished)
		if err := s.ChannelTyping(channelID, discordgo.WithContext(ctx)); err != nil {
			b.log.Debug("discord: typing", "err", err)
		}
		b.react(ctx, s, channelID, messageID, reactionRunning, true)
		t := time.NewTicker(typingEvery)
		defer t.Stop()
		for {
			select {
			case <-in.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.ChannelTyping(channelID, discordgo.WithContext(ctx)); err != nil {
					b.log.Debug("discord: typing", "err", err)
				}
			}
		}
	}()
	return in
}
