package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/formatting"
)

// reactionRunning marks a message whose run is queued or running.
var reactionRunning = formatting.RunningReaction(formatting.Discord)

// typingEvery renews the typing indicator, which Discord shows for 10 s.
const typingEvery = 8 * time.Second

// outputName is the attachment holding the whole output when the reply is cut.
const outputName = "output.txt"

// source is a message the flow answers.
type source struct {
	channelID string
	messageID string
	guildID   string
	user      string // the scheduler's key of the author, or of who asked
	explicit  bool   // triggered by the prefix, a mention or a DM
	content   string // the content run, to tell edits from embed updates
	// hook, for an interaction's answer (hook.go), is where the flow's
	// replies go instead of the channel; it has no message to react on.
	hook *hook
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
func outputFiles(r answer.Reply) []*discordgo.File {
	var files []*discordgo.File
	if r.Full != "" {
		files = append(files, &discordgo.File{Name: outputName, ContentType: "text/plain; charset=utf-8", Reader: strings.NewReader(r.Full)})
	}
	for _, f := range r.Files {
		files = append(files, &discordgo.File{Name: attachmentName(f.Path), ContentType: f.MIME, Reader: bytes.NewReader(f.Content)})
	}
	return files
}

// upload describes the upload files[ID] of a message: its alt text.
// discordgo's MessageAttachment has no description, so the bot sends its
// own payload.
type upload struct {
	ID          int    `json:"id"`
	Filename    string `json:"filename"`
	Description string `json:"description,omitempty"`
}

// uploads describe outputFiles(r), in their order: the images with their
// alt text (formatting.AltText).
func uploads(r answer.Reply) []upload {
	out := []upload{} // an edit's [] drops the earlier run's files
	if r.Full != "" {
		out = append(out, upload{ID: len(out), Filename: outputName})
	}
	for _, f := range r.Files {
		out = append(out, upload{ID: len(out), Filename: attachmentName(f.Path), Description: formatting.AltText(f)})
	}
	return out
}

// messageSend is discordgo's MessageSend with the uploads described.
type messageSend struct {
	*discordgo.MessageSend
	Attachments []upload `json:"attachments,omitempty"`
}

// messageEdit is the edit of a reply: its content, and its attachments,
// the new uploads only.
type messageEdit struct {
	Content         *string                           `json:"content,omitempty"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions,omitempty"`
	Attachments     []upload                          `json:"attachments"`
	Components      []discordgo.MessageComponent      `json:"components"` // [] removes the buttons
}

// request sends data, with files as multipart when there are any, and
// decodes the message Discord answers with.
func (b *Bot) request(ctx context.Context, method, endpoint, bucket string, data any, files []*discordgo.File) (*discordgo.Message, error) {
	s := b.session()
	var resp []byte
	var err error
	if len(files) > 0 {
		contentType, body, encErr := discordgo.MultipartBodyWithJSON(data, files)
		if encErr != nil {
			return nil, encErr
		}
		resp, err = s.RequestRaw(method, endpoint, contentType, body, bucket, 0, discordgo.WithContext(ctx))
	} else {
		resp, err = s.RequestWithBucketID(method, endpoint, data, bucket, discordgo.WithContext(ctx))
	}
	if err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := json.Unmarshal(resp, &m); err != nil {
		return nil, fmt.Errorf("decoding the message Discord sent back: %w", err)
	}
	return &m, nil
}

// attachmentName is a file's name on Discord, which has no directories.
func attachmentName(p string) string {
	return strings.ReplaceAll(p, "/", "_")
}

// attachments are the files of a message, which go into its run; their
// URLs are signed, so no token goes with the downloads.
func attachments(atts []*discordgo.MessageAttachment) []attach.Source {
	srcs := make([]attach.Source, 0, len(atts))
	for _, a := range atts {
		if a != nil {
			srcs = append(srcs, attach.Source{Name: a.Filename, Size: int64(a.Size), MIME: a.ContentType, URL: a.URL})
		}
	}
	return srcs
}

// start answers req in a handler, in its turn among the author's messages.
func (b *Bot) start(req answer.Request[source]) {
	b.flow.Take(&req)
	if !b.spawn(req.What, func(ctx context.Context) {
		b.metricReceived()
		b.flow.Answer(ctx, req)
	}) {
		b.flow.Drop(req)
	}
}

// platform is how the answer flow writes to Discord: one reply per message,
// referencing it and pinging nobody, edited in place by re-runs, with the
// run's files attached; ⏳ and typing while the run is in flight, then ✅ or
// ❌.
type platform struct{ b *Bot }

// Send posts r as a reply to src, or edits the reply of to into r; a
// private line with no reply to edit is a reply too (a message has no
// ephemeral reply), and an interaction's asker is told it alone.
func (p platform) Send(ctx context.Context, src source, to answer.Record[source], r answer.Reply) (answer.Sent, error) {
	switch {
	case r.Private && to.Reply == "" && src.hook != nil:
		return answer.Sent{}, p.b.hookTell(ctx, src.hook, r.Text)
	case src.hook != nil:
		return p.b.hookSend(ctx, src.hook, to.Reply, r)
	case to.Reply != "":
		return answer.Sent{ID: to.Reply}, p.b.edit(ctx, src, to.Reply, r)
	}
	m, err := p.b.send(ctx, src, r)
	if err != nil {
		return answer.Sent{}, err
	}
	p.b.own.Put(m.ID, struct{}{})
	return answer.Sent{ID: m.ID}, nil
}

// Delete deletes the reply of rec; one that is gone is answer.ErrGone.
func (p platform) Delete(ctx context.Context, rec answer.Record[source]) error {
	return goneError(p.b.session().ChannelMessageDelete(rec.Src.channelID, rec.Reply, discordgo.WithContext(ctx)))
}

// goneError marks Discord's "Unknown Message" as answer.ErrGone.
func goneError(err error) error {
	if restCode(err) == discordgo.ErrCodeUnknownMessage {
		return fmt.Errorf("%w: %w", answer.ErrGone, err)
	}
	return err
}

func (p platform) React(ctx context.Context, src source, emoji string, add bool) {
	if src.hook != nil || emoji == "" {
		return
	}
	p.b.react(ctx, src.channelID, src.messageID, emoji, add)
}

// Indicate shows typing and ⏳ while the run is in flight; the typing
// stops before the reply goes, ⏳ goes after it and the result's reaction
// comes. An interaction's deferred response shows that the bot is
// thinking.
func (p platform) Indicate(ctx context.Context, src source) func() func(string) {
	if src.hook != nil {
		return func() func(string) { return func(string) {} }
	}
	ind := p.b.indicate(ctx, src.channelID, src.messageID)
	return func() func(string) {
		ind.stop()
		return func(reaction string) {
			ind.wait()
			p.b.react(ctx, src.channelID, src.messageID, reactionRunning, false)
			p.React(ctx, src, reaction, true)
		}
	}
}

// Find finds the reply to src among the messages after it; which of ✅
// and ❌ src shows is not known, and the edit window is counted from the
// message itself.
func (p platform) Find(ctx context.Context, src source) (*answer.Record[source], error) {
	id, err := p.b.lookup(ctx, src.channelID, src.messageID)
	if id == "" || err != nil {
		return nil, err
	}
	at, err := discordgo.SnowflakeTimestamp(src.messageID)
	if err != nil {
		at = p.b.now()
	}
	return &answer.Record[source]{Src: src, Reply: id, ReactionUnknown: true, Created: at}, nil
}

// send posts r as a reply to src's message (in its thread when it is in
// one: a thread is its own channel), pinging nobody, not even the author.
func (b *Bot) send(ctx context.Context, src source, r answer.Reply) (*discordgo.Message, error) {
	failIfMissing := false
	endpoint := discordgo.EndpointChannelMessages(src.channelID)
	m, err := b.request(ctx, http.MethodPost, endpoint, endpoint, messageSend{MessageSend: &discordgo.MessageSend{
		Content:         r.Text,
		AllowedMentions: noMentions(),
		Components:      components(r.Buttons),
		Reference:       &discordgo.MessageReference{MessageID: src.messageID, ChannelID: src.channelID, GuildID: src.guildID, FailIfNotExists: &failIfMissing},
	}, Attachments: uploads(r)}, outputFiles(r))
	if err != nil && tooLarge(err) {
		if smaller, ok := b.refit(src.guildID, r); ok {
			b.log.Info("Discord refused the run's files as too large; the reply names those over the limit instead", "channel", src.channelID, "err", err)
			return b.send(ctx, src, smaller)
		}
	}
	return m, sendError(err)
}

// Discord's upload limit of one file: 10 MiB, more in a guild with
// boosts.
const (
	uploadLimit      = 10 << 20
	uploadLimitTier2 = 50 << 20
	uploadLimitTier3 = 100 << 20
)

// uploadLimit is the size of the largest file Discord takes in guildID
// ("" for a DM), as far as the state knows its boosts.
func (b *Bot) uploadLimit(guildID string) int64 {
	s := b.session()
	if guildID == "" || s == nil || s.State == nil {
		return uploadLimit
	}
	g, err := s.State.Guild(guildID)
	switch {
	case err != nil:
		return uploadLimit
	case g.PremiumTier == discordgo.PremiumTier3:
		return uploadLimitTier3
	case g.PremiumTier == discordgo.PremiumTier2:
		return uploadLimitTier2
	}
	return uploadLimit
}

// refit is the reply to try once Discord refused r's files as too large:
// the files within the per-file upload limit, the others named, else none
// of them; ok is false when there is nothing smaller to try.
func (b *Bot) refit(guildID string, r answer.Reply) (answer.Reply, bool) {
	if fit, ok := r.Fit(b.uploadLimit(guildID)); ok {
		return fit, true
	}
	if r.Fallback != nil {
		return *r.Fallback, true
	}
	return answer.Reply{}, false
}

// edit replaces the reply replyID with r: an empty attachments list drops
// the earlier run's files, the new ones are attached.
func (b *Bot) edit(ctx context.Context, src source, replyID string, r answer.Reply) error {
	channelID := src.channelID
	content := r.Text
	_, err := b.request(ctx, http.MethodPatch, discordgo.EndpointChannelMessage(channelID, replyID), discordgo.EndpointChannelMessage(channelID, ""),
		messageEdit{Content: &content, AllowedMentions: noMentions(), Attachments: uploads(r), Components: components(r.Buttons)}, outputFiles(r))
	if err != nil && tooLarge(err) {
		if smaller, ok := b.refit(src.guildID, r); ok {
			b.log.Info("Discord refused the run's files as too large; the reply names those over the limit instead", "channel", channelID, "err", err)
			return b.edit(ctx, src, replyID, smaller)
		}
	}
	return sendError(err)
}

// sendError says what to do about a reply Discord refused for want of
// permissions.
func sendError(err error) error {
	switch restCode(err) {
	case discordgo.ErrCodeMissingAccess, discordgo.ErrCodeMissingPermissions:
		return fmt.Errorf("no permission to reply in this channel; re-invite the bot with the logged invite URL or grant it the channel permissions: %w", err)
	}
	return err
}

// react adds (or removes) the bot's reaction; failures only cost the
// decoration, so they are logged at debug level.
func (b *Bot) react(ctx context.Context, channelID, messageID, emoji string, add bool) {
	var err error
	s := b.session()
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
func (b *Bot) indicate(ctx context.Context, channelID, messageID string) indicator {
	in := indicator{once: new(sync.Once), done: make(chan struct{}), finished: make(chan struct{})}
	s := b.session()
	go func() {
		defer close(in.finished)
		if err := s.ChannelTyping(channelID, discordgo.WithContext(ctx)); err != nil {
			b.log.Debug("typing", "err", err)
		}
		b.react(ctx, channelID, messageID, reactionRunning, true)
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
