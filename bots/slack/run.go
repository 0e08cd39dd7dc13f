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
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/runblock/runblock/bots/internal/answer"
	"github.com/runblock/runblock/bots/internal/attach"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

var errNotFound = errors.New("message not found")

// source is one request to run code, whatever triggered it.
type source struct {
	ws                  *workspace // where it came from, and how to answer there
	what                string     // trigger, for logs: mention, dm, channel, edit, reaction, shortcut, slash, modal
	team, user, channel string
	// ts is the message holding the code ("" for /run and the modal); its
	// reactions show progress and its reply is remembered for edits.
	ts string
	// thread is where replies go; "" posts at the top level.
	thread string
	text   string
	// files are the message's attachments, which go into the run.
	files []slack.File
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
	// reset: the message asks for its session to start fresh; export:
	// for it as a notebook.
	reset, export bool
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

// request is the flow's view of src.
func (b *Bot) request(src source) answer.Request[source] {
	at, _ := tsTime(src.ts)
	files := make([]attach.Source, len(src.files))
	header := http.Header{"Authorization": {"Bearer " + src.ws.token}}
	for i, f := range src.files {
		files[i] = fileSource(f, header)
		if f.URLPrivateDownload == "" && f.ID != "" {
			// A file shared from another organisation (Slack Connect)
			// comes as a stub, "file_access": "check_file_info":
			// files.info has the rest.
			id, ws := f.ID, src.ws
			files[i].Resolve = func(ctx context.Context) (attach.Source, error) {
				full, _, _, err := ws.api.GetFileInfoContext(ctx, id, 0, 0)
				if err != nil {
					return attach.Source{}, fmt.Errorf("files.info %s: %w", id, err)
				}
				return fileSource(*full, header), nil
			}
		}
	}
	return answer.Request[source]{
		Src: src, What: src.what, Log: b.log.With("channel", src.channel, "ts", src.ts, "user", src.user),
		Key: src.key(), User: src.userKey(), Text: src.text,
		Extract: formatting.ExtractOptions{Triggered: src.triggered, Raw: src.raw},
		Files:   files, At: at, Quiet: src.quiet,
		// A first delivery that has a reply is a redelivery; only a
		// retried one (or any other trigger) may have been answered by
		// an earlier process.
		Once: src.first, Look: !src.first || src.retry,
		Notice:  src.only,
		Session: b.session(src), Starts: src.first && src.ts == src.thread, Reset: src.reset, Export: src.export,
	}
}

// fileSource is a file of a message as attach takes it, downloaded with
// header (the token of the workspace it came from).
func fileSource(f slack.File, header http.Header) attach.Source {
	src := attach.Source{Name: f.Name, Size: int64(f.Size), MIME: f.Mimetype, URL: f.URLPrivateDownload, Header: header}
	if f.Name == "" {
		src.Name = f.Title
	}
	return src
}

// start answers src in a handler, in its turn among the user's events.
func (b *Bot) start(src source) {
	req := b.request(src)
	b.flow.Take(&req)
	if !b.spawn(src.what, func(ctx context.Context) { b.flow.Answer(ctx, req) }) {
		b.flow.Drop(req)
	}
}

// platform is how the answer flow writes to Slack: one reply per source
// message in its thread, updated in place by re-runs, with the run's files
// uploaded beside it; ⏳ on the message while it waits, then ✅ or ❌.
type platform struct{ b *Bot }

// Send posts r in src's thread, or updates the reply of to with it; a
// private line with no reply to update goes to the asker alone.
func (p platform) Send(ctx context.Context, src source, to answer.Record[source], r answer.Reply) (answer.Sent, error) {
	if r.Private && to.Reply == "" {
		return answer.Sent{}, p.b.notify(ctx, src, r.Text)
	}
	return p.send(ctx, src, to.Reply, to.Files, r)
}

// send posts r in src's thread, or updates the reply ts with it; the
// earlier files go and r's are uploaded in the thread.
func (p platform) send(ctx context.Context, src source, ts string, earlier []string, r answer.Reply) (answer.Sent, error) {
	b := p.b
	log := b.log.With("channel", src.channel, "ts", src.ts)
	post := ts == ""
	if src.ws.dropped() {
		return answer.Sent{}, answer.ErrDropped
	}
	t := tag{reaction: r.Reaction} // the files go below
	ts, err := b.reply(ctx, src, ts, r.Text, t, attachmentsOption(r.Tables, r.Buttons))
	if err != nil && !errors.Is(err, answer.ErrDropped) && src.responseURL != "" && post {
		// A channel the bot is not a member of: the response_url still
		// reaches it.
		switch {
		case r.Reaction == "" && r.Full != "":
			// Full output of a reply there: no file; the text, to the
			// clicker alone.
			log.Info("sending the full output through the response_url", "err", err)
			return answer.Sent{}, postResponseURL(ctx, src.responseURL, slack.ResponseTypeEphemeral, fullText(r.Text, r.Full))
		case r.Reaction != "":
			// /run (or a Run again) there: without a thread for the full
			// output, with the reply's buttons, which a click deletes
			// through its own response_url (onButtons).
			log.Info("posting the reply through the response_url", "err", err)
			var atts []slack.Attachment
			if len(r.Buttons) > 0 {
				atts = append(atts, buttonsAttachment(urlButtonsBlockID, r.Buttons))
			}
			if err := postResponseURL(ctx, src.responseURL, slack.ResponseTypeInChannel, r.Text, atts...); err != nil {
				return answer.Sent{}, err
			}
			return answer.Sent{ID: viaResponseURL}, nil
		}
	}
	if err != nil {
		return answer.Sent{}, err
	}
	b.deleteFiles(ctx, src.ws, log, earlier)
	thread := src.thread
	if thread == "" {
		thread = ts
	}
	files, failed := b.upload(ctx, src.ws, log, src.channel, thread, outputs(r.Full, r.Files, r.Tables))
	text := r.Text
	if len(failed) > 0 {
		text += "\n" + formatting.FilesNote(formatting.Slack, nil, failed)
	}
	if len(failed) > 0 || (len(earlier) > 0 || len(files) > 0) && src.ts != "" {
		// The reply's metadata names the files too, for a later process.
		t.files = files
		if _, err := b.reply(ctx, src, ts, text, t, attachmentsOption(r.Tables, r.Buttons)); err != nil {
			log.Warn("tagging the reply with its output file", "err", err)
		}
	}
	full := r.Full != "" && !slices.ContainsFunc(failed, func(f executor.OmittedFile) bool { return f.Path == fullOutputName })
	return answer.Sent{ID: ts, Files: files, Full: full}, nil
}

// Delete deletes the reply of rec and its files.
func (p platform) Delete(ctx context.Context, rec answer.Record[source]) error {
	ws := rec.Src.ws
	if ws.dropped() {
		return answer.ErrDropped
	}
	_, _, err := ws.api.DeleteMessageContext(ctx, rec.Src.channel, rec.Reply)
	p.b.deleteFiles(ctx, ws, p.b.log.With("channel", rec.Src.channel, "ts", rec.Src.ts), rec.Files)
	if err != nil && err.Error() == "message_not_found" {
		return fmt.Errorf("chat.delete %s: %w", rec.Reply, answer.ErrGone)
	}
	return p.b.gone(ws, err)
}

// React adds or removes the reaction name on src's message; one that is
// there already, or gone already, is no failure.
func (p platform) React(ctx context.Context, src source, name string, add bool) {
	if src.ts == "" || name == "" || src.ws.dropped() {
		return
	}
	item := slack.ItemRef{Channel: src.channel, Timestamp: src.ts}
	var err error
	if add {
		if err = src.ws.api.AddReactionContext(ctx, name, item); err != nil && err.Error() == "already_reacted" {
			err = nil
		}
	} else {
		if err = src.ws.api.RemoveReactionContext(ctx, name, item); err != nil && err.Error() == "no_reaction" {
			err = nil
		}
	}
	if err = p.b.gone(src.ws, err); err != nil && !errors.Is(err, answer.ErrDropped) {
		p.b.log.Warn("reacting", "channel", src.channel, "ts", src.ts, "reaction", name, "add", add, "err", err)
	}
}

// Indicate puts ⏳ on the message until the result is ready, and the
// result's reaction once it is sent.
func (p platform) Indicate(ctx context.Context, src source) func() func(string) {
	running := formatting.RunningReaction(formatting.Slack)
	p.React(ctx, src, running, true)
	return func() func(string) {
		p.React(ctx, src, running, false)
		return func(reaction string) { p.React(ctx, src, reaction, true) }
	}
}

// Find finds the reply to src in its thread by its metadata.
func (p platform) Find(ctx context.Context, src source) (*answer.Record[source], error) {
	return p.b.lookup(ctx, src)
}

// output is a file of a reply, with its title in Slack.
type output struct {
	executor.File
	title string
}

// fullOutputName is the name of the file with a cut reply's whole output.
const fullOutputName = "output.txt"

// outputs are the files of a reply: the whole output when the text had to
// be cut, the rows of a native table that does not show them all as
// table.csv, then the run's files in the order the snippet made them.
func outputs(full string, files []executor.File, tables []formatting.Table) []output {
	var out []output
	if len(tables) > 0 && tables[0].Slack().Cut() {
		csv := tables[0].CSV()
		out = append(out, output{executor.File{Path: "table.csv", Size: int64(len(csv)), MIME: "text/csv", Content: []byte(csv)}, "The table's rows"})
	}
	if full != "" {
		out = append(out, output{executor.File{Path: fullOutputName, Size: int64(len(full)), MIME: "text/plain", Content: []byte(full)}, "Full output"})
	}
	for _, f := range files {
		out = append(out, output{f, f.Path})
	}
	return out
}

// Why a file of the run is not in the thread.
const (
	omitEmpty  = "empty: Slack takes no empty files"
	omitUpload = "the upload failed"
)

// upload shares files in the thread (files upload v2), images with alt
// text (a plot's names its title and axes) so that they show inline. It returns the ids of the files shared
// and the files that could not be, to name in the reply.
func (b *Bot) upload(ctx context.Context, ws *workspace, log *slog.Logger, channel, thread string, files []output) ([]string, []executor.OmittedFile) {
	var ids []string
	var failed []executor.OmittedFile
	for _, f := range files {
		if len(f.Content) == 0 {
			failed = append(failed, executor.OmittedFile{Path: f.Path, Reason: omitEmpty})
			continue
		}
		p := slack.UploadFileParameters{
			Filename: path.Base(f.Path), Title: f.title, Reader: bytes.NewReader(f.Content), FileSize: len(f.Content),
			Channel: channel, ThreadTimestamp: thread,
		}
		p.AltTxt = formatting.AltText(f.File)
		up, err := ws.api.UploadFileContext(ctx, p)
		if err != nil {
			log.Error("uploading an output file", "file", f.Path, "err", err)
			failed = append(failed, executor.OmittedFile{Path: f.Path, Size: f.Size, Reason: omitUpload})
			continue
		}
		ids = append(ids, up.ID)
	}
	return ids, failed
}

// deleteFiles deletes the files uploaded for an earlier run.
func (b *Bot) deleteFiles(ctx context.Context, ws *workspace, log *slog.Logger, ids []string) {
	for _, id := range ids {
		if err := ws.api.DeleteFileContext(ctx, id); err != nil && err.Error() != "file_not_found" {
			log.Warn("deleting an earlier output file", "file", id, "err", err)
		}
	}
}

// slackFileHosts are where Slack keeps the files of messages. With
// SLACK_API_URL set to an egress proxy, the Web API's host is the proxy's,
// yet the files' URLs stay on these hosts.
var slackFileHosts = []string{"files.slack.com", "files.slack-gov.com"}

// slackHost reports whether the bot token may go with a download from u:
// on the Web API's host or beneath it (files.slack.com for slack.com), or,
// over https, on Slack's own file hosts. Nowhere else.
func (b *Bot) slackHost(u *url.URL) bool {
	if u.Scheme == "https" && u.Port() == "" && slices.Contains(slackFileHosts, strings.ToLower(u.Hostname())) {
		return true
	}
	api := "https://slack.com/api/"
	if b.cfg.APIURL != "" {
		api = b.cfg.APIURL
	}
	a, err := url.Parse(api)
	if err != nil || a.Host == "" {
		return false
	}
	return u.Scheme == a.Scheme && (u.Host == a.Host || strings.HasSuffix(u.Hostname(), "."+a.Hostname()))
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

// fullText is the message of a Full output sent as text: the line text,
// then full as a run's output, as much as Slack takes.
func fullText(text, full string) string {
	return formatting.Render(formatting.Slack, executor.Result{Success: true, Stdout: full},
		formatting.RenderOptions{MaxLines: formatting.SlackMaxText, MaxChars: formatting.SlackMaxText, Header: text, NoStatus: true}).Text
}

// viaResponseURL is the id of a reply posted through a response_url, which
// has no ts the bot could edit or delete.
const viaResponseURL = "response_url"

// postResponseURL posts text to a response_url with the options of
// msgOptions, which slack-go's response_url path leaves out: nothing is
// parsed or linked (so nothing pings), nothing unfurls; atts go below it
// (a reply's buttons).
func postResponseURL(ctx context.Context, url, responseType, text string, atts ...slack.Attachment) error {
	body := map[string]any{
		"text": text, "response_type": responseType, "replace_original": false,
		"parse": "none", "link_names": false, "unfurl_links": false, "unfurl_media": false,
	}
	if len(atts) > 0 {
		body["attachments"] = atts
	}
	return sendResponseURL(ctx, url, body)
}

// deleteResponseURL deletes the message a click's response_url belongs to:
// Slack's way for a message posted through a response_url.
func deleteResponseURL(ctx context.Context, url string) error {
	return sendResponseURL(ctx, url, map[string]any{"delete_original": true})
}

func sendResponseURL(ctx context.Context, url string, body map[string]any) error {
	j, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(j))
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
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound: // the message is gone
		return fmt.Errorf("response_url: %s: %w", resp.Status, answer.ErrGone)
	}
	return fmt.Errorf("response_url: %s", resp.Status)
}

// responseURLClient bounds each post to a response_url.
var responseURLClient = &http.Client{Timeout: 30 * time.Second}

// reply updates the reply ts in place, or posts a new one in src's thread,
// and returns the reply's ts. A reply to a message carries metadata naming
// it, with t; more are further options (its buttons).
func (b *Bot) reply(ctx context.Context, src source, ts, text string, t tag, more ...slack.MsgOption) (string, error) {
	opts := append(msgOptions(text), more...)
	if src.ts != "" {
		opts = append(opts, metadata(src, t))
	}
	if ts != "" {
		_, _, _, err := src.ws.api.UpdateMessageContext(ctx, src.channel, ts, opts...)
		return ts, b.gone(src.ws, err)
	}
	if src.thread != "" {
		opts = append(opts, slack.MsgOptionTS(src.thread))
	}
	_, ts, err := src.ws.api.PostMessageContext(ctx, src.channel, opts...)
	return ts, b.gone(src.ws, err)
}

// notify sends text only to the user who asked: through the response_url
// of /run and the shortcut, else as an ephemeral message in the thread.
func (b *Bot) notify(ctx context.Context, src source, text string) error {
	switch {
	case src.responseURL != "":
		return postResponseURL(ctx, src.responseURL, slack.ResponseTypeEphemeral, text)
	case src.user != "":
		opts := msgOptions(text)
		if src.thread != "" {
			opts = append(opts, slack.MsgOptionTS(src.thread))
		}
		_, err := src.ws.api.PostEphemeralContext(ctx, src.channel, src.user, opts...)
		return b.gone(src.ws, err)
	}
	return nil
}
