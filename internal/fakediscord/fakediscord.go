// Package fakediscord is an in-process Discord for tests: a REST API and a
// gateway WebSocket on 127.0.0.1 that speak enough of the real wire protocol
// for an unmodified discordgo client. Every REST request is recorded with its
// decoded JSON (also out of multipart payload_json) and files, so tests can
// wait for "the reply in channel X" and inspect exactly what went over the
// wire. The gateway sends HELLO, checks IDENTIFY (token, the privileged
// Message Content intent, the shard array of a sharded account), answers
// READY, heartbeats and RESUME, and lets a test dispatch events (to the
// guild's shard), ask for a reconnect (op 7), invalidate the session (op 9)
// or drop the socket. REST responses can be scripted to 429.
//
// An application has flags (GET /applications/@me) that grant the Message
// Content intent unless DenyMessageContent: then IDENTIFY asking for it
// closes with 4014, and a session without it gets guild messages without
// their content unless they mention the bot, as Discord sends them. The
// commands a bot registers are kept, and Invoke uses one only where
// Discord's client would offer it: its contexts (server, the bot's DM,
// private channels), its integration types (the server's install, a
// person's) and its default member permissions, with the context and
// authorizing_integration_owners Discord sends. NoAccess makes a channel
// one no bot may call, such as a DM where a user-installed app is used.
// An interaction's webhook edits, deletes and follows up its response;
// a component's deferred update (type 6) makes the message the component
// is on the response; Expire ends the token's 15 minutes.
//
// discordgo builds its URLs from package variables: a session reaches the
// fake through an http.Client whose transport rewrites the host (Client, or
// discord.Config.APIURL set to URL), so tests run in parallel, each with its
// own bot token and channel ids. Install, which rewrites the package
// variables instead, is for a session that cannot be given such a client.
package fakediscord

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
	"github.com/runblock/runblock/internal/watch"
)

// DefaultHeartbeatInterval is the HELLO heartbeat interval. discordgo gives
// up on a connection after five intervals without an ACK, so it stays well
// above scheduling noise under -race.
const DefaultHeartbeatInterval = time.Second

// Options configures a Server.
type Options struct {
	HeartbeatInterval time.Duration // 0: DefaultHeartbeatInterval
}

// Server is a fake Discord.
type Server struct {
	opts Options
	http *httptest.Server

	mu           sync.Mutex
	changes      watch.Changes // wakes waiters whenever state changes
	bots         map[string]*Bot
	requests     []Request
	limits       []*rateLimit
	messages     map[string]*discordgo.Message              // by message id
	interactions map[string]*interaction                    // by interaction token
	files        map[string][]byte                          // attachment contents, by attachment id
	downloads    map[string]int                             // attachment downloads, by attachment id
	descriptions map[string]string                          // attachment descriptions (alt text), by attachment id
	commands     map[string][]*discordgo.ApplicationCommand // by application id + "/" + guild id ("" global)
	noAccess     map[string]bool                            // channels the bots cannot see
	components   map[string]json.RawMessage                 // message components as the bot sent them, by message id
	nextID       int64
	closed       bool

	conns sync.WaitGroup // gateway connection goroutines
	live  map[*websocket.Conn]struct{}
}

// New starts a fake Discord on 127.0.0.1.
func New(opts Options) *Server {
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	s := &Server{
		opts:         opts,
		bots:         make(map[string]*Bot),
		messages:     make(map[string]*discordgo.Message),
		interactions: make(map[string]*interaction),
		files:        make(map[string][]byte),
		downloads:    make(map[string]int),
		descriptions: make(map[string]string),
		commands:     make(map[string][]*discordgo.ApplicationCommand),
		noAccess:     make(map[string]bool),
		components:   make(map[string]json.RawMessage),
		live:         make(map[*websocket.Conn]struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v"+discordgo.APIVersion+"/", s.serveREST)
	mux.HandleFunc("/ws/", s.serveGateway)
	mux.HandleFunc("GET /attachments/{id}/{name}", s.serveAttachment)
	s.http = httptest.NewServer(mux)
	return s
}

// Attachment stores a file a user attaches to a message and returns the
// attachment to put into the message (MessageCreate); its URL serves data,
// as Discord's CDN does. size, when >= 0, is the size the attachment
// announces instead of len(data).
func (s *Server) Attachment(name, contentType string, data []byte, size int) *discordgo.MessageAttachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.storeLocked(name, contentType, data)
	if size >= 0 {
		a.Size = size
	}
	return a
}

// AttachmentData returns the content of the attachment at url (one the
// fake stored), and whether there is one.
func (s *Server) AttachmentData(rawURL string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.attachmentIDLocked(rawURL)
	if !ok {
		return nil, false
	}
	return s.files[id], true
}

// Components returns the components (action rows of buttons) of the
// message id as the bot last sent them; nil for none.
func (s *Server) Components(id string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.components[id]
}

// AttachmentDescription returns the description (alt text) the attachment
// id was uploaded with.
func (s *Server) AttachmentDescription(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.descriptions[id]
}

// Downloads returns how often the attachment at url was downloaded.
func (s *Server) Downloads(rawURL string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := s.attachmentIDLocked(rawURL)
	return s.downloads[id]
}

func (s *Server) attachmentIDLocked(rawURL string) (string, bool) {
	rest, ok := strings.CutPrefix(rawURL, s.http.URL+"/attachments/")
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, "/")
	_, ok = s.files[id]
	return id, ok
}

func (s *Server) storeLocked(name, contentType string, data []byte) *discordgo.MessageAttachment {
	id := s.newIDLocked()
	s.files[id] = data
	u := s.http.URL + "/attachments/" + id + "/" + url.PathEscape(name)
	return &discordgo.MessageAttachment{ID: id, Filename: name, ContentType: contentType, Size: len(data), URL: u, ProxyURL: u}
}

func (s *Server) serveAttachment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[r.PathValue("id")]
	if ok {
		s.downloads[r.PathValue("id")]++
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// URL is the base URL of the fake, to use instead of "https://discord.com/"
// (discord.Config.APIURL).
func (s *Server) URL() string { return s.http.URL + "/" }

// Client is an http.Client for a discordgo session (Session.Client) that
// sends every request to the fake, whatever host discordgo put in its URL.
func (s *Server) Client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: toFake{s.http.URL}}
}

// toFake is a RoundTripper that rewrites every request to the fake's host.
type toFake struct{ base string }

func (t toFake) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = "http", strings.TrimPrefix(t.base, "http://"), ""
	return http.DefaultTransport.RoundTrip(r)
}

// GatewayURL is the WebSocket URL that GET /gateway hands out.
func (s *Server) GatewayURL() string {
	return "ws" + strings.TrimPrefix(s.http.URL, "http") + "/ws"
}

// Install points discordgo's endpoint variables at s, for a client that
// cannot be given URL (a session made elsewhere). They are package globals,
// so call it once per test binary, before any session is created.
func (s *Server) Install() {
	base := s.http.URL + "/"
	discordgo.EndpointDiscord = base
	discordgo.EndpointAPI = base + "api/v" + discordgo.APIVersion + "/"
	discordgo.EndpointGuilds = discordgo.EndpointAPI + "guilds/"
	discordgo.EndpointChannels = discordgo.EndpointAPI + "channels/"
	discordgo.EndpointUsers = discordgo.EndpointAPI + "users/"
	discordgo.EndpointGateway = discordgo.EndpointAPI + "gateway"
	discordgo.EndpointGatewayBot = discordgo.EndpointGateway + "/bot"
	discordgo.EndpointWebhooks = discordgo.EndpointAPI + "webhooks/"
	discordgo.EndpointStickers = discordgo.EndpointAPI + "stickers/"
	discordgo.EndpointStageInstances = discordgo.EndpointAPI + "stage-instances"
	discordgo.EndpointSKUs = discordgo.EndpointAPI + "skus"
	discordgo.EndpointVoice = discordgo.EndpointAPI + "/voice/"
	discordgo.EndpointVoiceRegions = discordgo.EndpointVoice + "regions"
	discordgo.EndpointGuildCreate = discordgo.EndpointAPI + "guilds"
	discordgo.EndpointApplications = discordgo.EndpointAPI + "applications"
	discordgo.EndpointOAuth2 = discordgo.EndpointAPI + "oauth2/"
	discordgo.EndpointOAuth2Applications = discordgo.EndpointOAuth2 + "applications"
	discordgo.EndpointOauth2 = discordgo.EndpointOAuth2
	discordgo.EndpointOauth2Applications = discordgo.EndpointOAuth2Applications
	discordgo.EndpointNitroStickersPacks = discordgo.EndpointAPI + "/sticker-packs"
}

// Close drops every gateway connection, waits for their goroutines and stops
// the HTTP server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.live {
		c.Close()
	}
	s.mu.Unlock()
	s.conns.Wait()
	s.http.Close()
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	s.changes.NotifyLocked()
}

// waitFor calls check under s.mu until it reports true or ctx ends.
func (s *Server) waitFor(ctx context.Context, what string, check func() bool) error {
	if err := s.changes.Wait(ctx, &s.mu, check); err != nil {
		return fmt.Errorf("fakediscord: waiting for %s: %w", what, err)
	}
	return nil
}

// newIDLocked returns a fresh snowflake: the milliseconds since Discord's
// epoch in the top bits, as discordgo.SnowflakeTimestamp reads them, and
// each one greater than the last; s.mu must be held.
func (s *Server) newIDLocked() string {
	s.nextID = max(s.nextID+1, (time.Now().UnixMilli()-discordEpoch)<<22)
	return strconv.FormatInt(s.nextID, 10)
}

// discordEpoch is the first millisecond of 2015, in Unix ms.
const discordEpoch = 1420070400000

// NewID returns a fresh snowflake-like id, for channels, users and messages
// that a test invents.
func (s *Server) NewID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newIDLocked()
}

// PutMessage stores m so that GET /channels/{c}/messages/{m} finds it; it
// gets an id when it has none. The stored copy is returned.
func (s *Server) PutMessage(m discordgo.Message) *discordgo.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ID == "" {
		m.ID = s.newIDLocked()
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now().UTC()
	}
	s.messages[m.ID] = &m
	cp := m
	return &cp
}

// NoAccess makes channelID one no bot is in, such as a DM between two
// people where a user-installed app is used: REST calls on it by a bot
// token answer 403 Missing Access (50001). Interaction responses still go.
func (s *Server) NoAccess(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAccess[channelID] = true
}

// Message returns the stored message with id, as last posted or edited.
func (s *Server) Message(id string) (discordgo.Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return discordgo.Message{}, false
	}
	return *m, true
}

func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakediscord: marshal %T: %v", v, err))
	}
	return b
}
