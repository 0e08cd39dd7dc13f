package discord

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/bots/internal/progress"
	"github.com/runblock/runblock/bots/internal/runerror"
	"github.com/runblock/runblock/bots/internal/turns"
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
	// attachments are the message's files, which go into the run.
	attachments []*discordgo.MessageAttachment
	// turn keeps the user's runs in the order their messages came; nil
	// for a run not started from the gateway's events in order.
	turn *turns.Turn
}

// outcome is a reply ready to send.
type outcome struct {
	text  string
	full  string          // the whole output for output.txt, or ""
	files []executor.File // the run's files, attached after output.txt
	// noFiles is the reply without the run's files, which it names
	// instead: for when Discord refuses them as too large.
	noFiles *outcome
	ok      bool
	ran     bool // a run's result (✅/❌), not a rejection or a notice
}

// noMentions allows no mention at all. Parse must be an empty list, not nil:
// discordgo sends nil as "parse": null, and Discord then parses everything.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// maxAttachments is Discord's limit of files on one message.
const maxAttachments = 10

// Why a file that did not fit on the message was left out.
const (
	omitOverAttachments = "over Discord's 10 attachments a message"
	omitUploadSize      = "over Discord's upload size limit"
)

// tooLarge reports whether Discord refused an upload as too large.
func tooLarge(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && (restCode(err) == discordgo.ErrCodeRequestEntityTooLarge ||
		re.Response != nil && re.Response.StatusCode == http.StatusRequestEntityTooLarge)
}

// outputFiles are the attachments of a reply: output.txt when the text had
// to be cut, then the run's files in the order the snippet made them (an
// image renders inline).
func outputFiles(out outcome) []*discordgo.File {
	var files []*discordgo.File
	if out.full != "" {
		files = append(files, &discordgo.File{Name: outputName, ContentType: "text/plain; charset=utf-8", Reader: strings.NewReader(out.full)})
	}
	for _, f := range out.files {
		files = append(files, &discordgo.File{Name: attachmentName(f.Path), ContentType: f.MIME, Reader: bytes.NewReader(f.Content)})
	}
	return files
}

// attachmentName is a file's name on Discord, which has no directories.
func attachmentName(p string) string {
	return strings.ReplaceAll(p, "/", "_")
}

// execute runs ex, with the attachments of its message, for user and
// renders the result for Discord; runerror decides what of a failure is
// logged and the friendly line shown instead. progress, when not nil, gets
// the run's place in the queue.
func (b *Bot) execute(ctx context.Context, turn *turns.Turn, user string, ex formatting.Extraction, atts []*discordgo.MessageAttachment, progress func(executor.Progress)) outcome {
	in, skipped := b.inputs(ctx, atts)
	res, err := turn.Submit(ctx, b.runner, executor.Job{User: user, Request: executor.Request{Code: ex.Code, Stdin: ex.Stdin, Files: in}, Progress: progress})
	if err != nil {
		text, _ := runerror.Report(ctx, b.log.With("user", user), formatting.Discord, err)
		return outcome{text: text}
	}
	opts := b.cfg.Render
	opts.Skipped = skipped
	r := formatting.RenderRun(formatting.Discord, ex, res, opts)
	if room := maxAttachments - len(res.Files); r.Full != "" && room < 1 || room < 0 {
		// More files than one message takes: the last ones are named instead.
		keep := min(len(res.Files), maxAttachments)
		if r.Full != "" {
			keep--
		}
		var over []executor.OmittedFile
		for _, f := range res.Files[keep:] {
			over = append(over, executor.OmittedFile{Path: f.Path, Size: f.Size, Reason: omitOverAttachments})
		}
		res.Files, res.FilesOmitted = res.Files[:keep], append(over, res.FilesOmitted...)
		r = formatting.RenderRun(formatting.Discord, ex, res, opts)
	}
	out := outcome{text: r.Text, full: r.Full, files: res.Files, ok: r.OK, ran: true}
	if len(res.Files) > 0 {
		over := make([]executor.OmittedFile, 0, len(res.Files)+len(res.FilesOmitted))
		for _, f := range res.Files {
			over = append(over, executor.OmittedFile{Path: f.Path, Size: f.Size, Reason: omitUploadSize})
		}
		res.Files, res.FilesOmitted = nil, append(over, res.FilesOmitted...)
		r = formatting.RenderRun(formatting.Discord, ex, res, opts)
		out.noFiles = &outcome{text: r.Text, full: r.Full, ok: r.OK, ran: true}
	}
	return out
}

// inputs downloads the attachments of the message for the run, within the
// executor's caps. Discord's attachment URLs are signed: no token goes with them.
func (b *Bot) inputs(ctx context.Context, atts []*discordgo.MessageAttachment) ([]executor.File, []executor.OmittedFile) {
	if len(atts) == 0 {
		return nil, nil
	}
	srcs := make([]attach.Source, 0, len(atts))
	for _, a := range atts {
		if a == nil {
			continue
		}
		srcs = append(srcs, attach.Source{Name: a.Filename, Size: int64(a.Size), MIME: a.ContentType, URL: a.URL})
	}
	return attach.Fetcher{
		Client: b.files,
		Limits: attach.Limits{Files: b.cfg.MaxFiles, Bytes: b.cfg.MaxFilesBytes},
		Log:    b.log,
	}.Fetch(ctx, srcs)
}

// reserve records that src is being answered; false means it already is.
func (b *Bot) reserve(src source) bool {
	return b.answers.Add(src.messageID, answer{channelID: src.channelID, guildID: src.guildID, user: src.user, at: b.now(), explicit: src.explicit, content: src.content})
}

// answerMessage runs ex and replies to src (reserved), with ⏳ and typing
// while it runs and ✅ or ❌ after; a run that waits behind others first
// gets a "queued, N ahead" reply, which the result then replaces. It
// remembers the reply for edits and deletes.
func (b *Bot) answerMessage(ctx context.Context, s *discordgo.Session, src source, ex formatting.Extraction) {
	// The turn comes before the Discord calls, and passes on once the
	// scheduler has the job.
	defer src.turn.Done()
	src.turn.Wait(ctx)
	ind := b.indicate(ctx, s, src.channelID, src.messageID)
	defer ind.stop() // also when the run panics
	prog := progress.Watch(ctx, b.log, progress.Chat{
		Post: func(ctx context.Context, text string) (string, error) {
			m, err := b.send(ctx, s, src.channelID, src.messageID, src.guildID, outcome{text: text})
			if err != nil {
				return "", err
			}
			return m.ID, nil
		},
		Edit: func(ctx context.Context, id, text string) error {
			return b.edit(ctx, s, src.channelID, id, outcome{text: text})
		},
		Render: func(pr executor.Progress) string { return formatting.RenderProgress(formatting.Discord, pr) },
	}, "")
	defer prog.Stop()
	out := b.execute(ctx, src.turn, src.user, ex, src.attachments, prog.Update)
	replyID := prog.Stop()
	ind.stop()
	var err error
	if replyID != "" {
		if err = b.edit(ctx, s, src.channelID, replyID, out); err != nil {
			b.logSendError(src.channelID, err)
		}
	} else {
		var m *discordgo.Message
		if m, err = b.send(ctx, s, src.channelID, src.messageID, src.guildID, out); err == nil {
			replyID = m.ID
		}
	}
	if err == nil {
		b.metricReplied()
	}
	ind.wait()
	b.react(ctx, s, src.channelID, src.messageID, reactionRunning, false)
	if err != nil {
		b.answers.Remove(src.messageID)
		return
	}
	if out.ran {
		b.react(ctx, s, src.channelID, src.messageID, resultReaction(out.ok), true)
	}
	b.settle(ctx, s, src, replyID, out)
}

// answerNotice replies to src (reserved) with a hint, and remembers the
// reply so that fixing the message runs it.
func (b *Bot) answerNotice(ctx context.Context, s *discordgo.Session, src source, text string) {
	out := outcome{text: text}
	reply, err := b.reply(ctx, s, src.channelID, src.messageID, src.guildID, out)
	if err != nil {
		b.answers.Remove(src.messageID)
		return
	}
	b.settle(ctx, s, src, reply.ID, out)
}

// settle records the reply of src; a delete or an edit that came while it
// was in flight is carried out now.
func (b *Bot) settle(ctx context.Context, s *discordgo.Session, src source, replyID string, out outcome) {
	var edited *discordgo.Message
	a, ok := b.answers.Update(src.messageID, func(a *answer) {
		a.replyID, a.ok, a.ran = replyID, out.ok, out.ran
		edited, a.edited = a.edited, nil
	})
	switch {
	case ok && a.deleted:
		b.answers.Remove(src.messageID)
		if err := s.ChannelMessageDelete(src.channelID, replyID, discordgo.WithContext(ctx)); err != nil {
			b.log.Warn("deleting the reply of a deleted message", "channel", src.channelID, "reply", replyID, "err", err)
		}
	case ok && edited != nil:
		b.rerun(ctx, s, edited)
	}
}

// rerun answers an edit of an answered message: it runs the new content and
// edits the reply in place. Only the newest of overlapping edits lands.
func (b *Bot) rerun(ctx context.Context, s *discordgo.Session, m *discordgo.Message) {
	var gen int
	a, ok := b.answers.Update(m.ID, func(a *answer) {
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
		out = b.execute(ctx, nil, a.user, ex, m.Attachments, nil)
		ind.stop()
		ind.wait()
		b.react(ctx, s, a.channelID, m.ID, reactionRunning, false)
	} else {
		out = outcome{text: notice(ex)}
	}
	cur, ok := b.answers.Get(m.ID)
	if !ok || cur.gen != gen || cur.replyID == "" {
		return // a newer edit or a delete won
	}
	if err := b.edit(ctx, s, cur.channelID, cur.replyID, out); err != nil {
		b.log.Warn("editing the reply of an edited message", "channel", cur.channelID, "reply", cur.replyID, "err", err)
		return
	}
	b.metricReplied()
	switch {
	case cur.reactionUnknown: // either may be there
		for _, ok := range []bool{true, false} {
			if !out.ran || ok != out.ok {
				b.react(ctx, s, cur.channelID, m.ID, resultReaction(ok), false)
			}
		}
	case cur.ran && (!out.ran || cur.ok != out.ok):
		b.react(ctx, s, cur.channelID, m.ID, resultReaction(cur.ok), false)
	}
	if out.ran && (cur.reactionUnknown || !cur.ran || cur.ok != out.ok) {
		b.react(ctx, s, cur.channelID, m.ID, resultReaction(out.ok), true)
	}
	b.answers.Update(m.ID, func(a *answer) { a.ok, a.ran, a.reactionUnknown = out.ok, out.ran, false })
}

// reply posts out as a reply to the message and counts it.
func (b *Bot) reply(ctx context.Context, s *discordgo.Session, channelID, messageID, guildID string, out outcome) (*discordgo.Message, error) {
	m, err := b.send(ctx, s, channelID, messageID, guildID, out)
	if err != nil {
		return nil, err
	}
	b.metricReplied()
	return m, nil
}

// send posts out as a reply to the message (in its thread when it is in
// one: a thread is its own channel), pinging nobody, not even the author.
func (b *Bot) send(ctx context.Context, s *discordgo.Session, channelID, messageID, guildID string, out outcome) (*discordgo.Message, error) {
	failIfMissing := false
	m, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content:         out.text,
		AllowedMentions: noMentions(),
		Reference:       &discordgo.MessageReference{MessageID: messageID, ChannelID: channelID, GuildID: guildID, FailIfNotExists: &failIfMissing},
		Files:           outputFiles(out),
	}, discordgo.WithContext(ctx))
	if err != nil && out.noFiles != nil && tooLarge(err) {
		b.log.Info("Discord refused the run's files as too large; the reply names them instead", "channel", channelID, "err", err)
		return b.send(ctx, s, channelID, messageID, guildID, *out.noFiles)
	}
	if err != nil {
		b.logSendError(channelID, err)
		return nil, err
	}
	return m, nil
}

// edit replaces the reply replyID with out: an empty attachments list drops
// the earlier run's files, the new ones are attached.
func (b *Bot) edit(ctx context.Context, s *discordgo.Session, channelID, replyID string, out outcome) error {
	content := out.text
	_, err := s.ChannelMessageEditComplex(&discordgo.MessageEdit{
		ID:              replyID,
		Channel:         channelID,
		Content:         &content,
		AllowedMentions: noMentions(),
		Attachments:     &[]*discordgo.MessageAttachment{},
		Files:           outputFiles(out),
	}, discordgo.WithContext(ctx))
	if err != nil && out.noFiles != nil && tooLarge(err) {
		b.log.Info("Discord refused the run's files as too large; the reply names them instead", "channel", channelID, "err", err)
		return b.edit(ctx, s, channelID, replyID, *out.noFiles)
	}
	return err
}

func (b *Bot) logSendError(channelID string, err error) {
	switch restCode(err) {
	case discordgo.ErrCodeMissingAccess, discordgo.ErrCodeMissingPermissions:
		b.log.Warn("no permission to reply in this channel; re-invite the bot with the logged invite URL or grant it the channel permissions", "channel", channelID, "err", err)
	default:
		if !errors.Is(err, context.Canceled) {
			b.log.Error("sending a reply", "channel", channelID, "err", err)
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
		b.log.Debug("reaction", "emoji", emoji, "add", add, "err", err)
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
			b.log.Debug("typing", "err", err)
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
					b.log.Debug("typing", "err", err)
				}
			}
		}
	}()
	return in
}
