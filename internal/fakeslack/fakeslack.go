// Package fakeslack is an in-process Slack for tests: a Web API under
// /api/{method} and a Socket Mode WebSocket on 127.0.0.1 that speak enough of
// the real wire protocol for an unmodified slack-go client (point it there
// with slack.OptionAPIURL(s.APIURL())).
//
// Every Web API call is recorded with its form or JSON body, so tests can
// wait for "the reply in thread X" and inspect what went over the wire. The
// fake keeps the messages of each channel (posted by the bot or put there by
// the test), their reactions and shared files, answers
// conversations.history/replies from them, and lets a test script per-method
// responses (HTTP 429 with Retry-After, ok:false errors).
//
// The Socket Mode side hands out ws:// URLs from apps.connections.open, says
// hello, pings, sends events_api, slash_commands, interactive and disconnect
// envelopes, collects acks, queues envelopes while no connection is up, and
// redelivers an unacked events_api envelope with retry_attempt set.
//
// As a distributed app's Slack (oauth.go) it trades the codes of
// Authorize for per-workspace bot tokens with oauth.v2.access (rotating
// ones refreshed there too), answers auth.test and every method for the
// workspace of the call's token, revokes tokens (Revoke, Uninstall), and
// takes views.publish and users.info for the App Home.
package fakeslack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runblock/runblock/internal/watch"
)

// Identities the fake answers with.
const (
	BotToken  = "xoxb-fake-bot-token"
	AppToken  = "xapp-fake-app-token"
	TeamID    = "T0FAKE"
	AppID     = "A0FAKE"
	BotUserID = "U0BOT"
	BotID     = "B0BOT"
)

// Options configures a Server.
type Options struct {
	// PingInterval is how often the socket pings the client; 0 means 2 s.
	PingInterval time.Duration
	// AckTimeout is how long an events_api envelope may stay unacked before
	// it is redelivered with retry_attempt+1 (at most three times), like
	// Slack does; 0 means never.
	AckTimeout time.Duration
	// FileHost, when set, is the base of the URLs of users' files
	// ("https://files.slack.com", as Slack's are), for a client whose
	// transport takes that host to the fake; "" uses the fake's own URL.
	FileHost string
}

// Server is a fake Slack.
type Server struct {
	opts Options
	http *httptest.Server

	mu        sync.Mutex
	changes   watch.Changes // wakes waiters whenever state changes
	calls     []Call
	scripts   map[string][]Response
	channels  map[string][]*Message // by channel id, in ts order
	files     map[string]*File      // by file id
	shared    int64                 // files shared so far, for their order
	userFiles map[string]UserFile   // files users attached, by id
	posted    []Posted              // response_url posts
	bound     map[string]Message    // response_urls by id: where they post, what they delete
	nextTS    int64
	nextID    int64
	closed    bool

	// OAuth (oauth.go).
	tokens  map[string]Identity // every bot token issued, BotToken's too
	current map[string]string   // a workspace's (or org's) token now
	revoked map[string]bool
	codes   map[string]grant // codes not traded yet
	refresh map[string]grant // refresh tokens
	admins  map[string]bool  // users.info is_admin

	// Socket Mode.
	conn      *sockConn            // the live connection, if any
	conns     int                  // connections that got hello
	pending   []*envelope          // waiting for a connection
	events    map[string]*envelope // every events_api envelope, by id
	unacked   map[string]*envelope // by envelope id
	acks      map[string]Ack       // by envelope id
	sockets   sync.WaitGroup       // connection goroutines
	live      map[*sockConn]struct{}
	redeliver map[string]*time.Timer
}

// New starts a fake Slack on 127.0.0.1.
func New(opts Options) *Server {
	if opts.PingInterval <= 0 {
		opts.PingInterval = 2 * time.Second
	}
	s := &Server{
		opts:      opts,
		scripts:   make(map[string][]Response),
		channels:  make(map[string][]*Message),
		files:     make(map[string]*File),
		userFiles: make(map[string]UserFile),
		nextTS:    time.Now().UnixMicro(),
		events:    make(map[string]*envelope),
		unacked:   make(map[string]*envelope),
		acks:      make(map[string]Ack),
		live:      make(map[*sockConn]struct{}),
		redeliver: make(map[string]*time.Timer),
		tokens:    map[string]Identity{BotToken: {TeamID: TeamID, BotUserID: BotUserID, BotID: BotID}},
		current:   map[string]string{TeamID: BotToken},
		revoked:   make(map[string]bool),
		codes:     make(map[string]grant),
		refresh:   make(map[string]grant),
		admins:    make(map[string]bool),
		bound:     make(map[string]Message),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/{method}", s.serveAPI)
	mux.HandleFunc("POST /upload/{id}", s.serveUpload)
	mux.HandleFunc("GET /files-pri/{id}/{name}", s.serveUserFile)
	mux.HandleFunc("POST /response/{id}", s.serveResponseURL)
	mux.HandleFunc("/socket", s.serveSocket)
	s.http = httptest.NewServer(mux)
	return s
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.http.URL }

// APIURL is the value for slack.OptionAPIURL; it ends in "/".
func (s *Server) APIURL() string { return s.http.URL + "/api/" }

// Close drops the socket, stops redelivery timers, waits for the connection
// goroutines and stops the HTTP server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.live {
		c.ws.Close()
	}
	for _, t := range s.redeliver {
		t.Stop()
	}
	s.mu.Unlock()
	s.sockets.Wait()
	s.http.Close()
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	s.changes.NotifyLocked()
}

// waitFor calls check under s.mu until it reports true or ctx ends.
func (s *Server) waitFor(ctx context.Context, what string, check func() bool) error {
	if err := s.changes.Wait(ctx, &s.mu, check); err != nil {
		return fmt.Errorf("fakeslack: waiting for %s: %w", what, err)
	}
	return nil
}

// newTSLocked returns a fresh message timestamp ("1700000000.000101"):
// the time now, or just after the last one.
func (s *Server) newTSLocked() string {
	s.nextTS = max(s.nextTS+1, time.Now().UnixMicro())
	return fmt.Sprintf("%d.%06d", s.nextTS/1_000_000, s.nextTS%1_000_000)
}

// newIDLocked returns a fresh id with the given prefix.
func (s *Server) newIDLocked(prefix string) string {
	s.nextID++
	return prefix + strconv.FormatInt(s.nextID, 10)
}

// NewID returns a fresh id with the given prefix ("C" for a channel, "U" for
// a user), so tests running in parallel keep apart.
func (s *Server) NewID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newIDLocked(prefix)
}

// Message is a message in a channel.
type Message struct {
	Channel  string `json:"-"`
	TS       string `json:"ts"`
	ThreadTS string `json:"thread_ts,omitempty"`
	User     string `json:"user,omitempty"`
	BotID    string `json:"bot_id,omitempty"`
	SubType  string `json:"subtype,omitempty"`
	Text     string `json:"text"`
	// Files are the files a user attached (UserFile.Object).
	Files []map[string]any `json:"files,omitempty"`
	// Metadata is the message metadata its app attached (chat.postMessage
	// or chat.update "metadata"); conversations.history and .replies return
	// it only with include_all_metadata.
	Metadata  *Metadata `json:"metadata,omitempty"`
	Reactions []string  `json:"-"`
	// Attachments are the message's attachments as the app sent them
	// (JSON), Block Kit buttons among them; chat.update replaces them
	// only when it sends some ("[]" removes them).
	Attachments string `json:"-"`
	// Edits counts chat.update calls on this message.
	Edits int `json:"-"`
}

// Metadata is Slack's message metadata.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// PutMessage stores a message the way Slack would have after a user (or
// another bot) posted it, giving it a fresh ts when it has none, and returns
// the stored copy. Send the matching event yourself.
func (s *Server) PutMessage(m Message) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.TS == "" {
		m.TS = s.newTSLocked()
	}
	s.putLocked(&m)
	return m
}

// Edit changes the text of the message ts in channel, as a user's edit
// would, and returns the stored copy.
func (s *Server) Edit(channel, ts, text string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findLocked(channel, ts)
	if m == nil {
		return Message{}, false
	}
	m.Text = text
	s.notifyLocked()
	c := *m
	c.Reactions = slices.Clone(m.Reactions)
	return c, true
}

func (s *Server) putLocked(m *Message) {
	msgs := s.channels[m.Channel]
	i, _ := slices.BinarySearchFunc(msgs, m.TS, func(a *Message, ts string) int { return strings.Compare(a.TS, ts) })
	s.channels[m.Channel] = slices.Insert(msgs, i, m)
	s.notifyLocked()
}

func (s *Server) findLocked(channel, ts string) *Message {
	for _, m := range s.channels[channel] {
		if m.TS == ts {
			return m
		}
	}
	return nil
}

// Get returns the message with ts in channel as it is now.
func (s *Server) Get(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findLocked(channel, ts)
	if m == nil {
		return Message{}, false
	}
	c := *m
	c.Reactions = slices.Clone(m.Reactions)
	return c, true
}

// BotReplies returns the bot's messages in the thread of ts in channel.
func (s *Server) BotReplies(channel, threadTS string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.botRepliesLocked(channel, threadTS)
}

func (s *Server) botRepliesLocked(channel, threadTS string) []Message {
	var out []Message
	for _, m := range s.channels[channel] {
		if m.ThreadTS == threadTS && m.TS != threadTS && m.BotID == BotID {
			c := *m
			c.Reactions = slices.Clone(m.Reactions)
			out = append(out, c)
		}
	}
	return out
}

// BotMessages returns every message the bot posted in channel.
func (s *Server) BotMessages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.channels[channel] {
		if m.BotID == BotID {
			out = append(out, *m)
		}
	}
	return out
}

// WaitMessage waits until a message in channel satisfies ok and returns it.
func (s *Server) WaitMessage(ctx context.Context, channel string, ok func(Message) bool) (Message, error) {
	var found Message
	err := s.waitFor(ctx, "a message in "+channel, func() bool {
		for _, m := range s.channels[channel] {
			c := *m
			c.Reactions = slices.Clone(m.Reactions)
			if ok(c) {
				found = c
				return true
			}
		}
		return false
	})
	return found, err
}

// WaitReaction waits until the message ts in channel carries reaction name.
func (s *Server) WaitReaction(ctx context.Context, channel, ts, name string) error {
	return s.waitFor(ctx, "reaction "+name+" on "+ts, func() bool {
		m := s.findLocked(channel, ts)
		return m != nil && slices.Contains(m.Reactions, name)
	})
}

// WaitGone waits until the message ts in channel is deleted.
func (s *Server) WaitGone(ctx context.Context, channel, ts string) error {
	return s.waitFor(ctx, "deletion of "+ts, func() bool { return s.findLocked(channel, ts) == nil })
}

// File is a file shared through the files v2 upload.
type File struct {
	ID       string
	Filename string
	Title    string
	AltText  string // alt_txt of files.getUploadURLExternal
	Length   int    // as announced in files.getUploadURLExternal
	Content  []byte
	Channel  string // set by files.completeUploadExternal
	ThreadTS string
	Comment  string
	seq      int64 // order of sharing
}

// UserFile is a file a user attached to a message, served at its
// url_private_download to the bot token only (anything else gets Slack's
// HTML sign-in page, with status 200, as Slack does).
type UserFile struct {
	ID, Name, Mimetype string
	Content            []byte
	// Size is what the file object announces; -1 announces len(Content).
	Size int64
	// Downloads counts the authorized downloads.
	Downloads int
}

// AddUserFile stores f (a fresh id when it has none) and returns the file
// object to put into a message's "files" (Message.Files and its events).
func (s *Server) AddUserFile(f UserFile) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.ID == "" {
		f.ID = s.newIDLocked("F")
	}
	if f.Size < 0 {
		f.Size = int64(len(f.Content))
	}
	s.userFiles[f.ID] = f
	return s.fileObjectLocked(f)
}

// fileObjectLocked is the file object of f, as messages and files.info
// carry it.
func (s *Server) fileObjectLocked(f UserFile) map[string]any {
	base := s.http.URL
	if s.opts.FileHost != "" {
		base = s.opts.FileHost
	}
	u := base + "/files-pri/" + f.ID + "/" + url.PathEscape(f.Name)
	return map[string]any{
		"id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.Mimetype, "filetype": strings.TrimPrefix(path.Ext(f.Name), "."),
		"size": f.Size, "mode": "hosted", "is_external": false, "url_private": u, "url_private_download": u + "?download=1",
	}
}

// ConnectStub returns the stub of a file object from AddUserFile as Slack
// sends it for a file shared from another organisation (Slack Connect):
// its id and "file_access": "check_file_info", no name or URL; files.info
// returns the whole object.
func ConnectStub(file map[string]any) map[string]any {
	return map[string]any{"id": file["id"], "mode": "file_access", "file_access": "check_file_info"}
}

// UserFileDownloads returns how often the user file id was downloaded.
func (s *Server) UserFileDownloads(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userFiles[id].Downloads
}

func (s *Server) serveUserFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.userFiles[r.PathValue("id")]
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	_, problem := s.identityLocked(Call{Token: tok})
	authorized := problem == ""
	if ok && authorized {
		f.Downloads++
		s.userFiles[f.ID] = f
	}
	s.mu.Unlock()
	switch {
	case !ok:
		http.NotFound(w, r)
	case !authorized:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to your workspace</body></html>")
	default:
		w.Header().Set("Content-Type", f.Mimetype)
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Content)))
		_, _ = w.Write(f.Content)
	}
}

// Files returns the files shared into the thread of threadTS in channel,
// in the order they were shared.
func (s *Server) Files(channel, threadTS string) []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.filesLocked(channel, threadTS)
}

// WaitFiles waits until the files in the thread of threadTS satisfy ok and
// returns them.
func (s *Server) WaitFiles(ctx context.Context, channel, threadTS string, ok func([]File) bool) ([]File, error) {
	var out []File
	err := s.waitFor(ctx, "files in "+threadTS, func() bool {
		out = s.filesLocked(channel, threadTS)
		return ok(out)
	})
	return out, err
}

func (s *Server) filesLocked(channel, threadTS string) []File {
	var out []File
	for _, f := range s.files {
		if f.Channel == channel && f.ThreadTS == threadTS {
			out = append(out, *f)
		}
	}
	slices.SortFunc(out, func(a, b File) int { return int(a.seq - b.seq) })
	return out
}

// WaitFile waits until a file is shared into the thread of threadTS.
func (s *Server) WaitFile(ctx context.Context, channel, threadTS string) (File, error) {
	var f File
	err := s.waitFor(ctx, "a file in "+threadTS, func() bool {
		for _, x := range s.files {
			if x.Channel == channel && x.ThreadTS == threadTS {
				f = *x
				return true
			}
		}
		return false
	})
	return f, err
}

// BlockActions is the interactive payload of a click on the button
// actionID of the bot's message m by user, as Slack sends it, with a
// response_url (ClickURL or ResponseURL) for the app's answers, and the
// block_id of the block of m's attachments that holds the button.
func (s *Server) BlockActions(m Message, user, actionID, responseURL string) map[string]any {
	msg := map[string]any{"type": "message", "ts": m.TS, "user": m.User, "bot_id": m.BotID, "text": m.Text}
	container := map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false}
	if m.ThreadTS != "" {
		msg["thread_ts"] = m.ThreadTS
		container["thread_ts"] = m.ThreadTS
	}
	return map[string]any{
		"type": "block_actions", "trigger_id": s.NewID("T"), "api_app_id": "A1",
		"team": map[string]any{"id": TeamID}, "user": map[string]any{"id": user, "team_id": TeamID},
		"channel": map[string]any{"id": m.Channel}, "container": container, "message": msg,
		"response_url": responseURL,
		"actions": []any{map[string]any{"type": "button", "action_id": actionID, "block_id": blockOf(m, actionID),
			"text": map[string]any{"type": "plain_text", "text": "button"}, "action_ts": s.NewID("")}},
	}
}

// blockOf returns the block_id of the block of m's attachments that holds
// the element actionID; "" when none does.
func blockOf(m Message, actionID string) string {
	var atts []struct {
		Blocks []struct {
			BlockID  string `json:"block_id"`
			Elements []struct {
				ActionID string `json:"action_id"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if json.Unmarshal([]byte(m.Attachments), &atts) != nil {
		return ""
	}
	for _, a := range atts {
		for _, b := range a.Blocks {
			for _, e := range b.Elements {
				if e.ActionID == actionID {
					return b.BlockID
				}
			}
		}
	}
	return ""
}

// Posted is a message posted to a response_url.
type Posted struct {
	ID   string
	Body map[string]any
	// Attachments are the post's "attachments" as JSON (its Block Kit
	// buttons among them), "" when it has none.
	Attachments string
}

// ResponseURL returns a fresh response_url for a slash command or shortcut
// that posts nowhere: its posts are only recorded (Posted).
func (s *Server) ResponseURL() string {
	return s.URL() + "/response/" + s.NewID("R")
}

// ResponseURLIn returns a fresh response_url of a slash command run in
// channel: an "in_channel" post to it becomes a message of the app there,
// as Slack shows it, whether or not the bot is a member.
func (s *Server) ResponseURLIn(channel string) string {
	return s.boundURL(Message{Channel: channel})
}

// ClickURL returns a fresh response_url of a click on the app's message m:
// {"delete_original": true} deletes m, and an "in_channel" post becomes a
// new message of the app in m's channel.
func (s *Server) ClickURL(m Message) string {
	return s.boundURL(Message{Channel: m.Channel, TS: m.TS})
}

func (s *Server) boundURL(m Message) string {
	id := s.NewID("R")
	s.mu.Lock()
	s.bound[id] = m
	s.mu.Unlock()
	return s.URL() + "/response/" + id
}

// WaitPosted waits for a post to the response_url with id.
func (s *Server) WaitPosted(ctx context.Context, id string) (Posted, error) {
	var p Posted
	err := s.waitFor(ctx, "a post to response_url "+id, func() bool {
		for _, x := range s.posted {
			if x.ID == id {
				p = x
				return true
			}
		}
		return false
	})
	return p, err
}

func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p := Posted{ID: r.PathValue("id"), Body: body}
	if a, ok := body["attachments"]; ok {
		j, err := json.Marshal(a)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.Attachments = string(j)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posted = append(s.posted, p)
	s.notifyLocked()
	b, ok := s.bound[p.ID]
	switch {
	case ok && b.TS != "" && body["delete_original"] == true:
		m := s.findLocked(b.Channel, b.TS)
		if m == nil {
			http.Error(w, "message_not_found", http.StatusNotFound)
			return
		}
		s.channels[b.Channel] = slices.DeleteFunc(s.channels[b.Channel], func(x *Message) bool { return x == m })
	case ok && body["response_type"] == "in_channel" && body["replace_original"] != true:
		text, _ := body["text"].(string)
		s.putLocked(&Message{Channel: b.Channel, TS: s.newTSLocked(), User: BotUserID, BotID: BotID, Text: text, Attachments: p.Attachments})
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"ok":true}`)
}
