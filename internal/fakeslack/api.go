package fakeslack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Call is one recorded Web API call.
type Call struct {
	Method string
	Token  string     // from the token form field or the Bearer header
	Form   url.Values // form bodies
	JSON   map[string]any
	// Status is the HTTP status the fake answered with; Error the ok:false
	// error, if any.
	Status int
	Error  string
}

// Get returns a parameter of the call, from the form or the JSON body.
func (c Call) Get(key string) string {
	if c.Form != nil {
		return c.Form.Get(key)
	}
	switch v := c.JSON[key].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// Response scripts the answer to one call of a method.
type Response struct {
	// Status is the HTTP status; 429 sends Retry-After.
	Status     int
	RetryAfter int // seconds, with Status 429
	// Error answers 200 {"ok":false,"error":Error}.
	Error string
}

// Script queues responses for the next calls of method, one per call;
// calls beyond them are answered normally.
func (s *Server) Script(method string, rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[method] = append(s.scripts[method], rs...)
}

// Calls returns the recorded calls of method ("" for all), in order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callsLocked(method, nil)
}

func (s *Server) callsLocked(method string, match func(Call) bool) []Call {
	var out []Call
	for _, c := range s.calls {
		if (method == "" || c.Method == method) && (match == nil || match(c)) {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits until n calls of method satisfy match (nil: any) and
// returns them.
func (s *Server) WaitCalls(ctx context.Context, method string, n int, match func(Call) bool) ([]Call, error) {
	var out []Call
	err := s.waitFor(ctx, fmt.Sprintf("%d calls of %s", n, method), func() bool {
		out = s.callsLocked(method, match)
		return len(out) >= n
	})
	return out, err
}

// WaitCall waits for a call of method that satisfies match (nil: any).
func (s *Server) WaitCall(ctx context.Context, method string, match func(Call) bool) (Call, error) {
	cs, err := s.WaitCalls(ctx, method, 1, match)
	if err != nil {
		return Call{}, err
	}
	return cs[0], nil
}

// Param matches calls whose parameter key is value.
func Param(key, value string) func(Call) bool {
	return func(c Call) bool { return c.Get(key) == value }
}

func readCall(r *http.Request) (Call, error) {
	c := Call{Method: r.PathValue("method")}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		c.Token = tok
	}
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			return c, err
		}
		c.JSON = map[string]any{}
		if len(body) > 0 && string(body) != "null" {
			if err := json.Unmarshal(body, &c.JSON); err != nil {
				return c, err
			}
		}
	case strings.HasPrefix(ct, "multipart/form-data"):
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			return c, err
		}
		c.Form = r.PostForm
	default:
		if err := r.ParseForm(); err != nil {
			return c, err
		}
		c.Form = r.Form
	}
	if t := c.Get("token"); t != "" {
		c.Token = t
	}
	return c, nil
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	c, err := readCall(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	status, body := s.answerLocked(c)
	c.Status = status
	if e, ok := body["error"].(string); ok {
		c.Error = e
	}
	s.calls = append(s.calls, c)
	s.notifyLocked()
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(body["retry_after"].(int))))
		writeJSON(w, status, map[string]any{"ok": false, "error": "ratelimited"})
		return
	}
	writeJSON(w, status, body)
}

func failed(code string) map[string]any { return map[string]any{"ok": false, "error": code} }

// answerLocked applies a call to the fake's state and returns its response.
func (s *Server) answerLocked(c Call) (int, map[string]any) {
	if q := s.scripts[c.Method]; len(q) > 0 {
		r := q[0]
		s.scripts[c.Method] = q[1:]
		switch {
		case r.Status == http.StatusTooManyRequests:
			return r.Status, map[string]any{"retry_after": r.RetryAfter}
		case r.Status != 0 && r.Status != http.StatusOK:
			return r.Status, map[string]any{"ok": false, "error": http.StatusText(r.Status)}
		case r.Error != "":
			return http.StatusOK, failed(r.Error)
		}
	}
	switch c.Method {
	case "oauth.v2.access":
		return s.oauthLocked(c)
	case "apps.connections.open":
		switch c.Token {
		case "":
			return http.StatusOK, failed("not_authed")
		case AppToken:
			return http.StatusOK, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(s.http.URL, "http") + "/socket?ticket=" + s.newIDLocked("")}
		}
		return http.StatusOK, failed("invalid_auth")
	}
	id, problem := s.identityLocked(c)
	if problem != "" {
		return http.StatusOK, failed(problem)
	}
	switch c.Method {
	case "auth.test":
		return s.authTestLocked(id)
	case "chat.postMessage":
		return s.postMessageLocked(c, id)
	case "views.publish":
		if c.Get("user_id") == "" || c.Get("view") == "" {
			return http.StatusOK, failed("invalid_arguments")
		}
		return http.StatusOK, map[string]any{"ok": true, "view": map[string]any{"id": s.newIDLocked("V"), "type": "home"}}
	case "users.info":
		u := c.Get("user")
		if u == "" {
			return http.StatusOK, failed("user_not_found")
		}
		return http.StatusOK, map[string]any{"ok": true, "user": map[string]any{"id": u, "team_id": id.TeamID, "name": strings.ToLower(u),
			"is_admin": s.admins[u], "is_owner": false}}
	case "chat.update":
		m := s.findLocked(c.Get("channel"), c.Get("ts"))
		if m == nil {
			return http.StatusOK, failed("message_not_found")
		}
		if m.BotID != BotID {
			return http.StatusOK, failed("cant_update_message")
		}
		meta, set, ok := metadataOf(c)
		if !ok {
			return http.StatusOK, failed("invalid_metadata_format")
		}
		if set {
			m.Metadata = meta
		}
		if !validTables(c.Get("attachments")) {
			return http.StatusOK, failed("invalid_blocks")
		}
		if a := c.Get("attachments"); a != "" {
			m.Attachments = a
		}
		m.Text = c.Get("text")
		m.Edits++
		return http.StatusOK, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text}
	case "chat.delete":
		ch := c.Get("channel")
		m := s.findLocked(ch, c.Get("ts"))
		if m == nil {
			return http.StatusOK, failed("message_not_found")
		}
		s.channels[ch] = slices.DeleteFunc(s.channels[ch], func(x *Message) bool { return x == m })
		return http.StatusOK, map[string]any{"ok": true, "channel": ch, "ts": m.TS}
	case "chat.postEphemeral":
		if c.Get("user") == "" || c.Get("channel") == "" {
			return http.StatusOK, failed("invalid_arguments")
		}
		return http.StatusOK, map[string]any{"ok": true, "message_ts": s.newTSLocked()}
	case "reactions.add", "reactions.remove":
		return s.reactLocked(c)
	case "views.open":
		if c.Get("trigger_id") == "" {
			return http.StatusOK, failed("invalid_trigger_id")
		}
		return http.StatusOK, map[string]any{"ok": true, "view": map[string]any{"id": s.newIDLocked("V")}}
	case "conversations.history":
		return s.historyLocked(c)
	case "conversations.replies":
		return s.repliesLocked(c)
	case "files.getUploadURLExternal":
		n, err := strconv.Atoi(c.Get("length"))
		if c.Get("filename") == "" || err != nil || n <= 0 {
			return http.StatusOK, failed("invalid_arguments")
		}
		id := s.newIDLocked("F")
		s.files[id] = &File{ID: id, Filename: c.Get("filename"), AltText: c.Get("alt_txt"), Length: n}
		return http.StatusOK, map[string]any{"ok": true, "upload_url": s.http.URL + "/upload/" + id, "file_id": id}
	case "files.completeUploadExternal":
		return s.completeUploadLocked(c)
	case "files.info":
		f, ok := s.userFiles[c.Get("file")]
		if !ok {
			return http.StatusOK, failed("file_not_found")
		}
		return http.StatusOK, map[string]any{"ok": true, "file": s.fileObjectLocked(f), "comments": []any{}}
	case "files.delete":
		if s.files[c.Get("file")] == nil {
			return http.StatusOK, failed("file_not_found")
		}
		delete(s.files, c.Get("file"))
		return http.StatusOK, map[string]any{"ok": true}
	}
	return http.StatusOK, failed("unknown_method")
}

func (s *Server) postMessageLocked(c Call, id Identity) (int, map[string]any) {
	ch := c.Get("channel")
	if ch == "" {
		return http.StatusOK, failed("channel_not_found")
	}
	if c.Get("text") == "" && c.Get("blocks") == "" {
		return http.StatusOK, failed("no_text")
	}
	meta, _, ok := metadataOf(c)
	if !ok {
		return http.StatusOK, failed("invalid_metadata_format")
	}
	if !validTables(c.Get("attachments")) {
		return http.StatusOK, failed("invalid_blocks")
	}
	m := &Message{Channel: ch, TS: s.newTSLocked(), ThreadTS: c.Get("thread_ts"), User: id.BotUserID, BotID: id.BotID, Text: c.Get("text"), Metadata: meta, Attachments: c.Get("attachments")}
	if m.ThreadTS != "" && s.findLocked(ch, m.ThreadTS) == nil {
		return http.StatusOK, failed("thread_not_found")
	}
	s.putLocked(m)
	return http.StatusOK, map[string]any{"ok": true, "channel": ch, "ts": m.TS, "message": m}
}

// metadataOf reads a call's "metadata": set reports whether it was sent
// (an empty object removes the metadata: meta is nil), ok whether it was
// well-formed (an event_type and an object payload).
func metadataOf(c Call) (meta *Metadata, set, ok bool) {
	raw := c.Get("metadata")
	if raw == "" {
		return nil, false, true
	}
	var m struct {
		EventType    *string         `json:"event_type"`
		EventPayload json.RawMessage `json:"event_payload"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, true, false
	}
	if m.EventType == nil && m.EventPayload == nil {
		return nil, true, true
	}
	meta = &Metadata{}
	if m.EventType == nil || *m.EventType == "" || json.Unmarshal(m.EventPayload, &meta.EventPayload) != nil || meta.EventPayload == nil {
		return nil, true, false
	}
	meta.EventType = *m.EventType
	return meta, true, true
}

// listed is msgs as conversations.history and .replies return them: their
// metadata only with include_all_metadata.
func listed(c Call, msgs []*Message) []*Message {
	if c.Get("include_all_metadata") == "1" || c.Get("include_all_metadata") == "true" {
		return msgs
	}
	out := make([]*Message, len(msgs))
	for i, m := range msgs {
		cp := *m
		cp.Metadata = nil
		out[i] = &cp
	}
	return out
}

func (s *Server) reactLocked(c Call) (int, map[string]any) {
	m := s.findLocked(c.Get("channel"), c.Get("timestamp"))
	if m == nil {
		return http.StatusOK, failed("message_not_found")
	}
	name := c.Get("name")
	has := slices.Contains(m.Reactions, name)
	switch {
	case c.Method == "reactions.add" && has:
		return http.StatusOK, failed("already_reacted")
	case c.Method == "reactions.add":
		m.Reactions = append(m.Reactions, name)
	case !has:
		return http.StatusOK, failed("no_reaction")
	default:
		m.Reactions = slices.DeleteFunc(m.Reactions, func(r string) bool { return r == name })
	}
	return http.StatusOK, map[string]any{"ok": true}
}

func (s *Server) historyLocked(c Call) (int, map[string]any) {
	msgs, ok := s.channels[c.Get("channel")]
	if !ok {
		return http.StatusOK, failed("channel_not_found")
	}
	latest, oldest, incl := c.Get("latest"), c.Get("oldest"), c.Get("inclusive") == "1"
	limit, _ := strconv.Atoi(c.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	var out []*Message
	for _, m := range slices.Backward(msgs) {
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			continue // replies live in conversations.replies
		}
		if latest != "" && (m.TS > latest || (!incl && m.TS == latest)) {
			continue
		}
		if oldest != "" && (m.TS < oldest || (!incl && m.TS == oldest)) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, m)
	}
	return http.StatusOK, map[string]any{"ok": true, "messages": listed(c, out), "has_more": false}
}

func (s *Server) repliesLocked(c Call) (int, map[string]any) {
	ch, ts := c.Get("channel"), c.Get("ts")
	m := s.findLocked(ch, ts)
	if m == nil {
		return http.StatusOK, failed("thread_not_found")
	}
	parent := m.TS
	if m.ThreadTS != "" {
		parent = m.ThreadTS
	}
	var out []*Message
	for _, x := range s.channels[ch] {
		if x.TS == parent || x.ThreadTS == parent {
			out = append(out, x)
		}
	}
	return http.StatusOK, map[string]any{"ok": true, "messages": listed(c, out), "has_more": false}
}

func (s *Server) completeUploadLocked(c Call) (int, map[string]any) {
	var sums []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(c.Get("files")), &sums); err != nil || len(sums) == 0 {
		return http.StatusOK, failed("invalid_arguments")
	}
	var out []map[string]any
	for _, sum := range sums {
		f := s.files[sum.ID]
		if f == nil || f.Content == nil {
			return http.StatusOK, failed("file_not_found")
		}
		if len(f.Content) != f.Length {
			return http.StatusOK, failed("invalid_upload")
		}
		s.shared++
		f.Title, f.Channel, f.ThreadTS, f.Comment, f.seq = sum.Title, c.Get("channel_id"), c.Get("thread_ts"), c.Get("initial_comment"), s.shared
		out = append(out, map[string]any{"id": f.ID, "title": f.Title})
	}
	return http.StatusOK, map[string]any{"ok": true, "files": out}
}

func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	_, problem := s.identityLocked(Call{Token: tok})
	s.mu.Unlock()
	if problem != "" {
		http.Error(w, problem, http.StatusUnauthorized)
		return
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	defer file.Close()
	content, err := io.ReadAll(io.LimitReader(file, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[r.PathValue("id")]
	if f == nil {
		http.Error(w, "file_not_found", http.StatusNotFound)
		return
	}
	f.Content = content
	s.notifyLocked()
	fmt.Fprintf(w, "OK - %d", len(content))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Limits of Slack's table block, which validTables holds a message to.
const (
	TableMaxRows    = 100 // the header row's included
	TableMaxColumns = 20  // cells a row, and column settings
)

// validTables reports whether the table blocks in a message's attachments
// keep to Slack's rules: one table a message, at most TableMaxRows rows of
// at most TableMaxColumns cells, each raw_text cell with text.
func validTables(attachments string) bool {
	if attachments == "" {
		return true
	}
	var atts []struct {
		Blocks []struct {
			Type           string             `json:"type"`
			Rows           [][]map[string]any `json:"rows"`
			ColumnSettings []json.RawMessage  `json:"column_settings"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(attachments), &atts); err != nil {
		return true // not blocks: not this check's business
	}
	tables := 0
	for _, a := range atts {
		for _, b := range a.Blocks {
			if b.Type != "table" {
				continue
			}
			tables++
			if tables > 1 || len(b.Rows) == 0 || len(b.Rows) > TableMaxRows || len(b.ColumnSettings) > TableMaxColumns {
				return false
			}
			for _, row := range b.Rows {
				if len(row) == 0 || len(row) > TableMaxColumns {
					return false
				}
				for _, cell := range row {
					if text, _ := cell["text"].(string); cell["type"] == "raw_text" && text == "" {
						return false
					}
				}
			}
		}
	}
	return true
}
