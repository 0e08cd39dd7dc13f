package fakediscord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Request is one recorded REST call.
type Request struct {
	Seq    int
	Method string
	// Path is relative to the API root and decoded: "/channels/1/messages",
	// "/channels/1/messages/2/reactions/⏳/@me".
	Path   string
	Query  url.Values
	Header http.Header
	Token  string // bot token without the "Bot " prefix
	Body   []byte
	// JSON is the JSON payload: the body, or the payload_json part of a
	// multipart body. Nil when the request had none.
	JSON   json.RawMessage
	Files  []File
	Status int // what the fake answered
	// Response is the JSON body the fake answered, nil for none.
	Response json.RawMessage
}

// File is one files[n] part of a multipart request.
type File struct {
	Field       string // "files[0]"
	Name        string
	ContentType string
	Data        []byte
}

// Decode unmarshals r.JSON into v.
func (r Request) Decode(v any) error {
	if r.JSON == nil {
		return fmt.Errorf("fakediscord: %s %s has no JSON payload", r.Method, r.Path)
	}
	return json.Unmarshal(r.JSON, v)
}

// DecodeResponse unmarshals the fake's answer into v.
func (r Request) DecodeResponse(v any) error {
	if r.Response == nil {
		return fmt.Errorf("fakediscord: %s %s was answered without a body", r.Method, r.Path)
	}
	return json.Unmarshal(r.Response, v)
}

// Content returns the payload's "content" field.
func (r Request) Content() string {
	var p struct {
		Content string `json:"content"`
	}
	_ = r.Decode(&p)
	return p.Content
}

// AllowedMentions is the payload's allowed_mentions as sent.
type AllowedMentions struct {
	Present bool // the key was there and not null
	// ParseEmpty: "parse" was sent as an empty list (not missing, not null).
	ParseEmpty  bool
	Parse       []string
	Users       []string
	Roles       []string
	RepliedUser bool
}

// None reports whether the request allowed no mention at all: Discord pings
// nobody only when parse is an empty list and no user, role or replied user
// is allowed.
func (a AllowedMentions) None() bool {
	return a.Present && a.ParseEmpty && len(a.Users) == 0 && len(a.Roles) == 0 && !a.RepliedUser
}

// AllowedMentions decodes the payload's allowed_mentions.
func (r Request) AllowedMentions() AllowedMentions {
	var p struct {
		AM *struct {
			Parse       *[]string `json:"parse"`
			Users       []string  `json:"users"`
			Roles       []string  `json:"roles"`
			RepliedUser bool      `json:"replied_user"`
		} `json:"allowed_mentions"`
	}
	if r.Decode(&p) != nil || p.AM == nil {
		return AllowedMentions{}
	}
	a := AllowedMentions{Present: true, Users: p.AM.Users, Roles: p.AM.Roles, RepliedUser: p.AM.RepliedUser}
	if p.AM.Parse != nil {
		a.Parse = *p.AM.Parse
		a.ParseEmpty = len(a.Parse) == 0
	}
	return a
}

// Match returns a matcher for method and exact path.
func Match(method, path string) func(Request) bool {
	return func(r Request) bool { return r.Method == method && r.Path == path }
}

// MatchPrefix returns a matcher for method and a path prefix.
func MatchPrefix(method, prefix string) func(Request) bool {
	return func(r Request) bool { return r.Method == method && strings.HasPrefix(r.Path, prefix) }
}

// Requests returns every recorded request that match accepts (nil: all).
func (s *Server) Requests(match func(Request) bool) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if match == nil || match(r) {
			out = append(out, r)
		}
	}
	return out
}

// WaitRequest waits until a request that match accepts has been answered
// and returns the first such request.
func (s *Server) WaitRequest(ctx context.Context, match func(Request) bool) (Request, error) {
	rs, err := s.WaitRequests(ctx, 1, match)
	if err != nil {
		return Request{}, err
	}
	return rs[0], nil
}

// WaitRequests waits until n requests that match accepts have been answered
// and returns them in order.
func (s *Server) WaitRequests(ctx context.Context, n int, match func(Request) bool) ([]Request, error) {
	var out []Request
	err := s.waitFor(ctx, fmt.Sprintf("%d matching requests", n), func() bool {
		out = out[:0]
		for _, r := range s.requests {
			if match(r) {
				out = append(out, r)
			}
		}
		return len(out) >= n
	})
	return out, err
}

type rateLimit struct {
	match      func(Request) bool
	retryAfter time.Duration
	global     bool
	status     int // a scripted failure instead of a 429 when set
}

// FailNext answers the next request that match accepts with status and a
// Discord error body.
func (s *Server) FailNext(match func(Request) bool, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, &rateLimit{match: match, status: status})
}

// RateLimitNext answers the next request that match accepts with a 429 and
// the headers and body Discord sends (Retry-After, X-RateLimit-*, a JSON
// retry_after in seconds). global marks it as the global limit.
func (s *Server) RateLimitNext(match func(Request) bool, retryAfter time.Duration, global bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, &rateLimit{match: match, retryAfter: retryAfter, global: global})
}

type apiError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	req, err := readRequest(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Message: "400: Bad Request: " + err.Error(), Code: 50109})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	req.Seq = len(s.requests) + 1
	status, body, header := s.routeLocked(&req)
	req.Status = status
	if body != nil {
		req.Response = marshal(body)
	}
	s.requests = append(s.requests, req)
	for k, v := range header {
		w.Header()[k] = v
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(req.Response)
}

func readRequest(r *http.Request) (Request, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return Request{}, err
	}
	req := Request{
		Method: r.Method,
		Path:   strings.TrimPrefix(r.URL.Path, "/api/v"+discordgo.APIVersion),
		Query:  r.URL.Query(),
		Header: r.Header.Clone(),
		Token:  strings.TrimPrefix(r.Header.Get("Authorization"), "Bot "),
		Body:   body,
	}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case ct == "application/json" && len(body) > 0:
		if !json.Valid(body) {
			return Request{}, fmt.Errorf("invalid JSON body")
		}
		req.JSON = body
	case ct == "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return Request{}, fmt.Errorf("multipart: %w", err)
			}
			data, err := io.ReadAll(p)
			if err != nil {
				return Request{}, fmt.Errorf("multipart: %w", err)
			}
			if p.FormName() == "payload_json" {
				if !json.Valid(data) {
					return Request{}, fmt.Errorf("invalid payload_json")
				}
				req.JSON = data
				continue
			}
			req.Files = append(req.Files, File{Field: p.FormName(), Name: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: data})
		}
	}
	return req, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(marshal(v))
}

var (
	errUnauthorized = apiError{Message: "401: Unauthorized", Code: 0}
	errNotFound     = apiError{Message: "404: Not Found", Code: 0}
	errUnknownMsg   = apiError{Message: "Unknown Message", Code: 10008}
)

// routeLocked answers req; s.mu is held.
func (s *Server) routeLocked(req *Request) (int, any, http.Header) {
	for i, l := range s.limits {
		if l.match(*req) {
			s.limits = append(s.limits[:i], s.limits[i+1:]...)
			if l.status != 0 {
				return l.status, apiError{Message: http.StatusText(l.status), Code: 0}, nil
			}
			return rateLimited(l)
		}
	}
	seg := strings.Split(strings.Trim(req.Path, "/"), "/")
	switch {
	case req.Method == "GET" && req.Path == "/gateway":
		return 200, map[string]any{"url": s.GatewayURL()}, nil
	case seg[0] == "interactions" && len(seg) == 4 && seg[3] == "callback" && req.Method == "POST":
		return s.interactionCallbackLocked(req, seg[1], seg[2])
	case seg[0] == "webhooks" && len(seg) >= 3:
		return s.webhookLocked(req, seg[1], seg[2], seg[3:])
	}
	bot := s.bots[req.Token]
	if bot == nil || !strings.HasPrefix(req.Header.Get("Authorization"), "Bot ") {
		return 401, errUnauthorized, nil // bot tokens go with the "Bot " scheme
	}
	switch {
	case req.Method == "GET" && req.Path == "/gateway/bot":
		return 200, map[string]any{
			"url":    s.GatewayURL(),
			"shards": 1,
			"session_start_limit": map[string]int{
				"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1,
			},
		}, nil
	case req.Method == "GET" && req.Path == "/users/@me":
		return 200, bot.user(), nil
	case req.Method == "GET" && req.Path == "/applications/@me":
		return 200, map[string]any{"id": bot.AppID, "name": bot.Username, "flags": bot.flags, "bot": bot.user()}, nil
	case seg[0] == "channels" && len(seg) >= 3 && s.noAccess[seg[1]]:
		return 403, apiError{Message: "Missing Access", Code: discordgo.ErrCodeMissingAccess}, nil
	case seg[0] == "channels" && len(seg) >= 3:
		return s.channelLocked(bot, req, seg[1], seg[2:])
	case seg[0] == "applications" && req.Method == "PUT" && seg[len(seg)-1] == "commands" && seg[1] == bot.AppID:
		return s.commandsLocked(req, seg)
	}
	return 404, errNotFound, nil
}

func rateLimited(l *rateLimit) (int, any, http.Header) {
	secs := l.retryAfter.Seconds()
	h := http.Header{}
	h.Set("Retry-After", strconv.Itoa(int(secs+0.999)))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(time.Now().Add(l.retryAfter).UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", "fakebucket")
	h.Set("X-RateLimit-Scope", "user")
	if l.global {
		h.Set("X-RateLimit-Global", "true")
		h.Set("X-RateLimit-Scope", "global")
	}
	return 429, map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": l.global}, h
}

// channelLocked serves /channels/{c}/...; rest is what follows the channel id.
func (s *Server) channelLocked(bot *Bot, req *Request, channelID string, rest []string) (int, any, http.Header) {
	switch {
	case len(rest) == 1 && rest[0] == "typing" && req.Method == "POST":
		return 204, nil, nil
	case len(rest) == 1 && rest[0] == "messages" && req.Method == "POST":
		if status, body := uploadLimits(req); status != 0 {
			return status, body, nil
		}
		m, err := s.newMessageLocked(req, channelID, bot.user())
		if err != nil {
			return 400, apiError{Message: "Invalid Form Body: " + err.Error(), Code: 50035}, nil
		}
		return 200, m, nil
	case len(rest) == 1 && rest[0] == "messages" && req.Method == "GET":
		msgs, err := s.listMessagesLocked(channelID, req.Query)
		if err != nil {
			return 400, apiError{Message: "Invalid Form Body: " + err.Error(), Code: 50035}, nil
		}
		for i, m := range msgs {
			msgs[i] = bot.visibleLocked(m, bot.grantedLocked())
		}
		return 200, msgs, nil
	case len(rest) == 2 && rest[0] == "messages":
		m := s.messages[rest[1]]
		if m == nil || m.ChannelID != channelID {
			return 404, errUnknownMsg, nil
		}
		if req.Method == "GET" {
			return 200, bot.visibleLocked(m, bot.grantedLocked()), nil
		}
		return s.messageLocked(m, req)
	case len(rest) == 5 && rest[0] == "messages" && rest[2] == "reactions" && (req.Method == "PUT" || req.Method == "DELETE"):
		m := s.messages[rest[1]]
		if m == nil {
			return 404, errUnknownMsg, nil
		}
		if rest[4] == "@me" {
			react(m, rest[3], req.Method == "PUT")
		}
		return 204, nil, nil
	}
	return 404, errNotFound, nil
}

// react adds or removes the bot's reaction emoji on m, as messages then
// list it: Me set, counted once.
func react(m *discordgo.Message, emoji string, add bool) {
	i := slices.IndexFunc(m.Reactions, func(r *discordgo.MessageReactions) bool { return r.Emoji != nil && r.Emoji.Name == emoji })
	switch {
	case add && i < 0:
		m.Reactions = append(m.Reactions, &discordgo.MessageReactions{Count: 1, Me: true, Emoji: &discordgo.Emoji{Name: emoji}})
	case !add && i >= 0:
		m.Reactions = slices.Delete(m.Reactions, i, i+1)
	}
}

// listMessagesLocked answers GET /channels/{c}/messages: at most limit
// (1 to 100, default 50) messages before, after or around a message id, or
// the newest; newest first, as Discord returns them.
func (s *Server) listMessagesLocked(channelID string, q url.Values) ([]*discordgo.Message, error) {
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("limit: must be between 1 and 100")
		}
		limit = n
	}
	anchors := 0
	for _, k := range []string{"before", "after", "around"} {
		if q.Has(k) {
			anchors++
		}
	}
	if anchors > 1 {
		return nil, fmt.Errorf("only one of before, after and around")
	}
	var in []*discordgo.Message // oldest first
	for _, m := range s.messages {
		if m.ChannelID == channelID {
			in = append(in, m)
		}
	}
	slices.SortFunc(in, func(a, b *discordgo.Message) int { return cmpID(a.ID, b.ID) })
	var out []*discordgo.Message
	switch {
	case q.Has("after"):
		after := q.Get("after")
		i, _ := slices.BinarySearchFunc(in, after, func(m *discordgo.Message, id string) int { return cmpID(m.ID, id) })
		for i < len(in) && cmpID(in[i].ID, after) <= 0 {
			i++
		}
		out = in[i:min(len(in), i+limit)]
	case q.Has("before"):
		i, _ := slices.BinarySearchFunc(in, q.Get("before"), func(m *discordgo.Message, id string) int { return cmpID(m.ID, id) })
		out = in[max(0, i-limit):i]
	case q.Has("around"):
		i, _ := slices.BinarySearchFunc(in, q.Get("around"), func(m *discordgo.Message, id string) int { return cmpID(m.ID, id) })
		lo := max(0, i-limit/2)
		out = in[lo:min(len(in), lo+limit)]
	default:
		out = in[max(0, len(in)-limit):]
	}
	out = slices.Clone(out)
	slices.Reverse(out)
	return out, nil
}

// cmpID orders snowflakes numerically.
func cmpID(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// Discord's limits on the files of one message: 10 files, and 10 MiB a
// file in a guild without boosts.
const (
	MaxFiles       = 10
	MaxUploadBytes = 10 << 20
)

// uploadLimits answers a request over Discord's limits on files as Discord
// does (status 0 when within them).
func uploadLimits(req *Request) (int, any) {
	if len(req.Files) > MaxFiles {
		return 400, apiError{Message: "Invalid Form Body: files: Must be 10 or fewer in length.", Code: 50035}
	}
	for _, f := range req.Files {
		if len(f.Data) > MaxUploadBytes {
			return 413, apiError{Message: "Request entity too large", Code: 40005}
		}
	}
	return 0, nil
}

// payload is what the fake reads of a message create or edit.
type payload struct {
	Content     *string                     `json:"content"`
	Flags       discordgo.MessageFlags      `json:"flags"`
	Reference   *discordgo.MessageReference `json:"message_reference"`
	Attachments *[]attachmentRef            `json:"attachments"`
	Components  json.RawMessage             `json:"components"`
}

// attachmentRef is an entry of a payload's attachments: an attachment of
// the message to keep (its snowflake, a string), or the description of
// the upload files[N] (N, a number).
type attachmentRef struct {
	ID          json.RawMessage `json:"id"`
	Description string          `json:"description"`
}

// upload returns N when r describes the upload files[N].
func (r attachmentRef) upload() (int, bool) {
	n, err := strconv.Atoi(string(r.ID))
	return n, err == nil
}

// attachmentsLocked stores a request's files as attachments, with the
// descriptions refs give them.
func (s *Server) attachmentsLocked(files []File, refs *[]attachmentRef) []*discordgo.MessageAttachment {
	desc := map[string]string{}
	if refs != nil {
		for _, r := range *refs {
			if n, ok := r.upload(); ok {
				desc["files["+strconv.Itoa(n)+"]"] = r.Description
			}
		}
	}
	var out []*discordgo.MessageAttachment
	for _, f := range files {
		a := s.storeLocked(f.Name, f.ContentType, f.Data)
		if d := desc[f.Field]; d != "" {
			s.descriptions[a.ID] = d
		}
		out = append(out, a)
	}
	return out
}

func (s *Server) newMessageLocked(req *Request, channelID string, author *discordgo.User) (*discordgo.Message, error) {
	var p payload
	if err := req.Decode(&p); err != nil {
		return nil, err
	}
	if (p.Content == nil || *p.Content == "") && len(req.Files) == 0 {
		return nil, fmt.Errorf("cannot send an empty message")
	}
	if p.Content != nil && len([]rune(*p.Content)) > 2000 {
		return nil, fmt.Errorf("content: must be 2000 or fewer in length")
	}
	m := &discordgo.Message{
		ID: s.newIDLocked(), ChannelID: channelID, Author: author, Timestamp: time.Now().UTC(),
		Flags: p.Flags, MessageReference: p.Reference, Attachments: s.attachmentsLocked(req.Files, p.Attachments),
	}
	if p.Reference != nil {
		m.Type = discordgo.MessageTypeReply
	}
	if p.Content != nil {
		m.Content = *p.Content
	}
	s.messages[m.ID] = m
	s.setComponentsLocked(m.ID, p.Components)
	return m, nil
}

func (s *Server) editMessageLocked(m *discordgo.Message, req *Request) error {
	var p payload
	if err := req.Decode(&p); err != nil {
		return err
	}
	if p.Content != nil {
		if len([]rune(*p.Content)) > 2000 {
			return fmt.Errorf("content: must be 2000 or fewer in length")
		}
		m.Content = *p.Content
	}
	if p.Attachments != nil {
		// The attachments listed by id stay; the others go.
		var keep []*discordgo.MessageAttachment
		for _, r := range *p.Attachments {
			var id string
			if json.Unmarshal(r.ID, &id) != nil {
				continue
			}
			for _, a := range m.Attachments {
				if a.ID == id {
					keep = append(keep, a)
				}
			}
		}
		m.Attachments = keep
	}
	m.Attachments = append(m.Attachments, s.attachmentsLocked(req.Files, p.Attachments)...)
	if p.Components != nil {
		s.setComponentsLocked(m.ID, p.Components)
	}
	now := time.Now().UTC()
	m.EditedTimestamp = &now
	return nil
}

// setComponentsLocked keeps the components of message id; "[]" or null
// removes them.
func (s *Server) setComponentsLocked(id string, raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "[]" {
		delete(s.components, id)
		return
	}
	s.components[id] = raw
}

// interactionCallbackLocked serves POST /interactions/{id}/{token}/callback.
func (s *Server) interactionCallbackLocked(req *Request, id, token string) (int, any, http.Header) {
	in := s.interactions[token]
	if in == nil || in.id != id {
		return 404, apiError{Message: "Unknown interaction", Code: 10062}, nil
	}
	if in.responded {
		return 400, apiError{Message: "Interaction has already been acknowledged.", Code: 40060}, nil
	}
	var resp struct {
		Type discordgo.InteractionResponseType `json:"type"`
		Data *struct {
			Content string                 `json:"content"`
			Flags   discordgo.MessageFlags `json:"flags"`
		} `json:"data"`
	}
	if err := req.Decode(&resp); err != nil {
		return 400, apiError{Message: "Invalid Form Body", Code: 50035}, nil
	}
	in.responded = true
	switch resp.Type {
	case discordgo.InteractionResponseChannelMessageWithSource, discordgo.InteractionResponseDeferredChannelMessageWithSource:
		m := &discordgo.Message{ID: s.newIDLocked(), ChannelID: in.channelID, Author: in.bot.user(), Timestamp: time.Now().UTC(), WebhookID: in.bot.AppID}
		if resp.Data != nil {
			m.Content = resp.Data.Content
			m.Flags = resp.Data.Flags
		}
		s.messages[m.ID] = m
		in.original = m.ID
	case discordgo.InteractionResponseDeferredMessageUpdate:
		// A component's deferred update: the message the component is
		// on is the response, which the webhook edits or deletes.
		if s.messages[in.message] == nil {
			return 400, apiError{Message: "Invalid Form Body: not a component on a message", Code: 50035}, nil
		}
		in.original = in.message
	}
	return 204, nil, nil
}

// webhookLocked serves /webhooks/{app}/{token}[/messages/{id}].
func (s *Server) webhookLocked(req *Request, appID, token string, rest []string) (int, any, http.Header) {
	in := s.interactions[token]
	if in == nil || in.bot.AppID != appID {
		return 404, apiError{Message: "Unknown Webhook", Code: 10015}, nil
	}
	if in.expired {
		return 401, apiError{Message: "Invalid Webhook Token", Code: 50027}, nil
	}
	if len(rest) == 0 && req.Method == "POST" {
		m, err := s.newMessageLocked(req, in.channelID, in.bot.user())
		if err != nil {
			return 400, apiError{Message: "Invalid Form Body: " + err.Error(), Code: 50035}, nil
		}
		m.WebhookID = appID
		if req.Query.Get("wait") != "true" {
			return 204, nil, nil
		}
		return 200, m, nil
	}
	if len(rest) != 2 || rest[0] != "messages" {
		return 404, errNotFound, nil
	}
	id := rest[1]
	if id == "@original" {
		id = in.original
	}
	m := s.messages[id]
	if m == nil {
		return 404, errUnknownMsg, nil
	}
	return s.messageLocked(m, req)
}

// messageLocked answers GET, PATCH and DELETE of m, reached through its
// channel or through an interaction's webhook alike.
func (s *Server) messageLocked(m *discordgo.Message, req *Request) (int, any, http.Header) {
	switch req.Method {
	case "GET":
		return 200, m, nil
	case "PATCH":
		if status, body := uploadLimits(req); status != 0 {
			return status, body, nil
		}
		if err := s.editMessageLocked(m, req); err != nil {
			return 400, apiError{Message: "Invalid Form Body: " + err.Error(), Code: 50035}, nil
		}
		return 200, m, nil
	case "DELETE":
		delete(s.messages, m.ID)
		return 204, nil, nil
	}
	return 404, errNotFound, nil
}

// commandsLocked serves the bulk overwrite PUT of global and guild
// commands, which replaces the application's commands in that scope. A
// guild command's contexts and integration types are ignored, as Discord
// ignores them: it is for its guild's install only.
func (s *Server) commandsLocked(req *Request, seg []string) (int, any, http.Header) {
	var cmds []*discordgo.ApplicationCommand
	if err := req.Decode(&cmds); err != nil {
		return 400, apiError{Message: "Invalid Form Body", Code: 50035}, nil
	}
	guild := ""
	if len(seg) == 5 {
		guild = seg[3]
	}
	for _, c := range cmds {
		if c.Type == 0 {
			c.Type = discordgo.ChatApplicationCommand
		}
		c.ID = s.newIDLocked()
		c.ApplicationID = seg[1]
		c.GuildID = guild
	}
	s.commands[seg[1]+"/"+guild] = cmds
	return 200, cmds, nil
}
