package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/bots/internal/progress"
	"github.com/runblock/runblock/bots/internal/runerror"
	"github.com/runblock/runblock/bots/internal/turns"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

var errNotFound = errors.New("message not found")

// source is one request to run code, whatever triggered it.
type source struct {
	what                string // trigger, for logs: mention, dm, channel, edit, reaction, shortcut, slash, modal
	team, user, channel string
	// ts is the message holding the code ("" for /run and the modal); its
	// reactions show progress and its reply is remembered for edits.
	ts string
	// thread is where replies go; "" posts at the top level.
	thread string
	text   string
	// triggered and raw are the formatting.ExtractOptions.
	triggered, raw bool
	// quiet: a message that was not addressed to the bot (a listed
	// channel), so finding no code is no reason to answer.
	quiet bool
	// first: the message's first delivery (not an edit, a reaction or a
	// shortcut); if it already has a reply, it is a redelivery. retry:
	// Slack says it delivers it again; only then may an earlier process
	// have answered it.
	first, retry bool
	// responseURL, for /run and the shortcut, takes ephemeral notices.
	responseURL string
	// only, when set, is the notice to send instead of running.
	only *formatting.Notice
	// turn keeps the user's runs in the order their events came; nil
	// for a source not taken from the event loop in order (a reaction,
	// after fetching the message).
	turn *turns.Turn
}

// userKey is the scheduler's key for the user.
func (s source) userKey() string { return "slack:" + s.team + ":" + s.user }

func (s source) key() string {
	if s.ts == "" {
		return ""
	}
	return s.channel + "/" + s.ts
}

func (s source) notice(n formatting.Notice) source {
	s.only = &n
	return s
}

// record is what the adapter remembers of a reply, for edits and deletes.
type record struct {
	channel, ts string // the reply
	reaction    string // the final reaction on the source, "" if none
	files       []string
	created     time.Time
}

// start answers src in a handler, in its turn among the user's events.
func (b *Bot) start(src source) {
	src.turn = b.turns.Take(src.userKey())
	if !b.spawn(src.what, func(ctx context.Context) { b.handle(ctx, src) }) {
		src.turn.Done()
	}
}

// handle runs src's code and answers: one reply per source message, updated
// in place on re-runs; ⏳ on the message while it waits, then ✅ or ❌.
func (b *Bot) handle(ctx context.Context, src source) {
	log := b.log.With("trigger", src.what, "channel", src.channel, "ts", src.ts, "user", src.user)
	// The turn comes before anything that may block (the message's lock,
	// Slack calls), and passes on once the scheduler has the job.
	defer src.turn.Done()
	src.turn.Wait(ctx)
	if src.only != nil {
		b.notify(ctx, log, src, formatting.RenderNotice(formatting.Slack, *src.only))
		return
	}
	key := src.key()
	var rec *record
	if key != "" {
		unlock := b.sources.lock(key)
		defer unlock()
		rec = b.recall(ctx, log, src.channel, src.ts, src.thread, !src.first || src.retry)
		if rec != nil && src.first {
			log.Info("already answered; a redelivered event is not run again", "reply", rec.ts)
			return
		}
	}
	ext := formatting.Extract(src.text, formatting.ExtractOptions{Platform: formatting.Slack, Triggered: src.triggered, Raw: src.raw})
	if !ext.Found {
		text := formatting.RenderNotice(formatting.Slack, ext.Notice())
		switch {
		case rec != nil: // edited into something that does not run: say so in place
			if _, err := b.reply(ctx, src, rec.ts, text, tag{}.of(rec)); err != nil {
				log.Error("updating the reply", "err", err)
			}
			b.unreact(ctx, log, src, rec.reaction)
			rec.reaction = ""
			b.replies.Put(key, rec)
		case !src.quiet:
			b.notify(ctx, log, src, text)
		}
		return
	}

	running := formatting.RunningReaction(formatting.Slack)
	if rec != nil {
		b.unreact(ctx, log, src, rec.reaction)
	}
	b.react(ctx, log, src, running)
	replyTS := ""
	if rec != nil {
		replyTS = rec.ts
	}
	prog := progress.Watch(ctx, log, progress.Chat{
		Post: func(ctx context.Context, text string) (string, error) { return b.reply(ctx, src, "", text, tag{}) },
		Edit: func(ctx context.Context, ts, text string) error {
			_, err := b.reply(ctx, src, ts, text, tag{})
			return err
		},
		Render: func(pr executor.Progress) string { return formatting.RenderProgress(formatting.Slack, pr) },
	}, replyTS == "")
	defer prog.Stop() // Stop is idempotent; this one covers a panicking runner
	res, err := src.turn.Submit(ctx, b.runner, executor.Job{
		User:     src.userKey(),
		Request:  executor.Request{Code: ext.Code, Stdin: ext.Stdin},
		Progress: prog.Update,
	})
	if ts := prog.Stop(); ts != "" {
		replyTS = ts
	}
	b.unreact(ctx, log, src, running)
	if err != nil {
		b.rejected(ctx, log, src, key, rec, replyTS, err)
		return
	}

	rep := formatting.RenderRun(formatting.Slack, ext, res, b.cfg.Render)
	done := tag{reaction: rep.Reaction(formatting.Slack)}
	ts, err := b.reply(ctx, src, replyTS, rep.Text, done) // the earlier files go below
	if err != nil && src.responseURL != "" && replyTS == "" {
		// /run in a channel the bot is not a member of: the response_url
		// still reaches it (without a thread for the full output).
		log.Info("posting the reply through the response_url", "err", err)
		err = postResponseURL(ctx, src.responseURL, slack.ResponseTypeInChannel, rep.Text)
		if err == nil {
			b.replied()
			return
		}
	}
	if err != nil {
		log.Error("posting the reply", "err", err)
		return
	}
	b.replied()
	log.Info("answered", "outcome", res.Outcome(), "duration", res.Duration)
	if rec == nil {
		rec = &record{channel: src.channel, ts: ts, created: b.now()}
	}
	for _, id := range rec.files {
		if err := b.api.DeleteFileContext(ctx, id); err != nil {
			log.Warn("deleting the earlier output file", "file", id, "err", err)
		}
	}
	rec.files = nil
	if rep.Full != "" {
		thread := src.thread
		if thread == "" {
			thread = ts
		}
		f, err := b.api.UploadFileContext(ctx, slack.UploadFileParameters{
			Filename: "output.txt", Title: "Full output", Content: rep.Full, FileSize: len(rep.Full),
			Channel: src.channel, ThreadTimestamp: thread,
		})
		if err != nil {
			log.Error("uploading the full output", "err", err)
		} else {
			rec.files = append(rec.files, f.ID)
		}
	}
	if len(rec.files) > 0 && key != "" {
		// The reply's metadata names the file too, for a later process.
		if _, err := b.reply(ctx, src, ts, rep.Text, done.of(rec)); err != nil {
			log.Warn("tagging the reply with its output file", "err", err)
		}
	}
	rec.reaction = done.reaction
	b.react(ctx, log, src, rec.reaction)
	if key != "" {
		b.replies.Put(key, rec)
	}
}

// rejected answers a run the scheduler did not take or could not finish:
// runerror decides what is logged and what the user sees. Busy,
// rate-limited and too-large are the user's business: an ephemeral line.
// Other failures answer in the thread.
func (b *Bot) rejected(ctx context.Context, log *slog.Logger, src source, key string, rec *record, replyTS string, err error) {
	text, private := runerror.Report(ctx, log, formatting.Slack, err)
	if ctx.Err() != nil {
		return
	}
	if replyTS == "" && private {
		b.notify(ctx, log, src, text)
		return
	}
	ts, perr := b.reply(ctx, src, replyTS, text, tag{}.of(rec))
	if perr != nil {
		log.Error("posting the reply", "err", perr)
		return
	}
	b.replied()
	if rec == nil {
		rec = &record{channel: src.channel, ts: ts, created: b.now()}
	}
	rec.reaction = ""
	if key != "" {
		b.replies.Put(key, rec)
	}
}

func (b *Bot) replied() {
	b.cfg.Metrics.MessageReplied(Platform)
}

// msgOptions are the options of every message the bot writes: the text is
// already escaped by formatting, nothing is parsed or linked, nothing unfurls.
func msgOptions(text string) []slack.MsgOption {
	return []slack.MsgOption{
		slack.MsgOptionText(text, false),
		slack.MsgOptionParse(false),
		slack.MsgOptionLinkNames(false),
		slack.MsgOptionDisableLinkUnfurl(),
		slack.MsgOptionDisableMediaUnfurl(),
	}
}

// postResponseURL posts text to a response_url with the options of
// msgOptions, which slack-go's response_url path leaves out: nothing is
// parsed or linked (so nothing pings), nothing unfurls.
func postResponseURL(ctx context.Context, url, responseType, text string) error {
	body, err := json.Marshal(map[string]any{
		"text": text, "response_type": responseType, "replace_original": false,
		"parse": "none", "link_names": false, "unfurl_links": false, "unfurl_media": false,
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := responseURLClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 4096)); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("response_url: %s", resp.Status)
	}
	return nil
}

// responseURLClient bounds each post to a response_url.
var responseURLClient = &http.Client{Timeout: 30 * time.Second}

// reply updates the reply ts in place, or posts a new one in src's thread,
// and returns the reply's ts. A reply to a message carries metadata naming
// it, with t.
func (b *Bot) reply(ctx context.Context, src source, ts, text string, t tag) (string, error) {
	opts := msgOptions(text)
	if src.ts != "" {
		opts = append(opts, metadata(src, t))
	}
	if ts != "" {
		_, _, _, err := b.api.UpdateMessageContext(ctx, src.channel, ts, opts...)
		return ts, err
	}
	if src.thread != "" {
		opts = append(opts, slack.MsgOptionTS(src.thread))
	}
	_, ts, err := b.api.PostMessageContext(ctx, src.channel, opts...)
	return ts, err
}

// notify sends text only to the user who asked: through the response_url
// of /run and the shortcut, else as an ephemeral message in the thread.
func (b *Bot) notify(ctx context.Context, log *slog.Logger, src source, text string) {
	var err error
	switch {
	case src.responseURL != "":
		err = postResponseURL(ctx, src.responseURL, slack.ResponseTypeEphemeral, text)
	case src.user != "":
		opts := msgOptions(text)
		if src.thread != "" {
			opts = append(opts, slack.MsgOptionTS(src.thread))
		}
		_, err = b.api.PostEphemeralContext(ctx, src.channel, src.user, opts...)
	default:
		return
	}
	if err != nil {
		log.Warn("sending a notice", "err", err)
		return
	}
	b.replied()
}

func (b *Bot) react(ctx context.Context, log *slog.Logger, src source, name string) {
	if src.ts == "" || name == "" {
		return
	}
	err := b.api.AddReactionContext(ctx, name, slack.ItemRef{Channel: src.channel, Timestamp: src.ts})
	if err != nil && err.Error() != "already_reacted" {
		log.Warn("adding a reaction", "reaction", name, "err", err)
	}
}

func (b *Bot) unreact(ctx context.Context, log *slog.Logger, src source, name string) {
	if src.ts == "" || name == "" {
		return
	}
	err := b.api.RemoveReactionContext(ctx, name, slack.ItemRef{Channel: src.channel, Timestamp: src.ts})
	if err != nil && err.Error() != "no_reaction" {
		log.Warn("removing a reaction", "reaction", name, "err", err)
	}
}

// deleteReply deletes the reply (and its output file) to a deleted message.
// thread is where its reply would be.
func (b *Bot) deleteReply(ctx context.Context, channel, ts, thread string) {
	key := channel + "/" + ts
	unlock := b.sources.lock(key)
	defer unlock()
	log := b.log.With("channel", channel, "ts", ts)
	rec := b.recall(ctx, log, channel, ts, thread, true)
	if rec == nil {
		return
	}
	b.replies.Remove(key)
	if _, _, err := b.api.DeleteMessageContext(ctx, rec.channel, rec.ts); err != nil {
		log.Warn("deleting the reply to a deleted message", "err", err)
	}
	for _, id := range rec.files {
		if err := b.api.DeleteFileContext(ctx, id); err != nil {
			log.Warn("deleting the output file of a deleted message", "file", id, "err", err)
		}
	}
}
