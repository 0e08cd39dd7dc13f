package fakeslack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Envelope identifies a Socket Mode envelope the fake sent.
type Envelope struct {
	ID      string
	EventID string // events_api only
}

// Ack is a client's acknowledgement of an envelope.
type Ack struct {
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

type envelope struct {
	EnvelopeID             string `json:"envelope_id,omitempty"`
	Type                   string `json:"type"`
	Payload                any    `json:"payload,omitempty"`
	AcceptsResponsePayload bool   `json:"accepts_response_payload"`
	RetryAttempt           int    `json:"retry_attempt"`
	RetryReason            string `json:"retry_reason"`
	Reason                 string `json:"reason,omitempty"`
	eventID                string
}

type sockConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	done chan struct{}
}

func (c *sockConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	return c.ws.WriteJSON(v)
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &sockConn{ws: ws, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.live[c] = struct{}{}
	s.sockets.Add(2)
	s.mu.Unlock()
	go s.ping(c)
	defer s.sockets.Done()
	defer close(c.done)

	hello := map[string]any{"type": "hello", "num_connections": 1,
		"debug_info":      map[string]any{"host": "fakeslack", "approximate_connection_time": 3600},
		"connection_info": map[string]any{"app_id": AppID}}
	// hello and the connection going live are one step: a client that has
	// seen hello finds the connection live (Disconnect, Drop).
	s.mu.Lock()
	if c.write(hello) != nil {
		s.mu.Unlock()
		s.drop(c)
		return
	}
	s.conn = c
	s.conns++
	pending := s.pending
	s.pending = nil
	for _, e := range pending {
		s.sendLocked(e)
	}
	s.notifyLocked()
	s.mu.Unlock()

	for {
		var a Ack
		if err := ws.ReadJSON(&a); err != nil {
			s.drop(c)
			return
		}
		s.mu.Lock()
		s.acks[a.EnvelopeID] = a
		delete(s.unacked, a.EnvelopeID)
		if t := s.redeliver[a.EnvelopeID]; t != nil {
			t.Stop()
			delete(s.redeliver, a.EnvelopeID)
		}
		s.notifyLocked()
		s.mu.Unlock()
	}
}

func (s *Server) ping(c *sockConn) {
	defer s.sockets.Done()
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			c.wmu.Lock()
			err := c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(5*time.Second))
			c.wmu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// drop closes c. Like Slack, the fake then redelivers the events_api
// envelopes still unacked, with retry_attempt+1, on the next connection.
func (s *Server) drop(c *sockConn) {
	c.ws.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live[c]; !ok {
		return
	}
	delete(s.live, c)
	if s.conn == c {
		s.conn = nil
	}
	for _, e := range s.unacked {
		if !slices.Contains(s.pending, e) {
			e.RetryAttempt++
			e.RetryReason = "connection_closed"
			s.pending = append(s.pending, e)
		}
	}
	s.notifyLocked()
}

// sendLocked writes e to the live connection or queues it until one is up.
// The ack timeout of an events_api envelope runs from its delivery, like
// Slack's: an envelope waiting for a connection is not redelivered (that
// spent the retries before the client could see one).
func (s *Server) sendLocked(e *envelope) {
	if e.Type == "events_api" {
		s.events[e.EnvelopeID] = e
		s.unacked[e.EnvelopeID] = e
	}
	if s.conn == nil || s.conn.write(e) != nil {
		if !slices.Contains(s.pending, e) {
			s.pending = append(s.pending, e)
		}
		return
	}
	if e.Type == "events_api" && s.opts.AckTimeout > 0 {
		s.armRedeliveryLocked(e)
	}
}

func (s *Server) armRedeliveryLocked(e *envelope) {
	if old := s.redeliver[e.EnvelopeID]; old != nil {
		old.Stop()
	}
	s.redeliver[e.EnvelopeID] = time.AfterFunc(s.opts.AckTimeout, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		// Without a live connection, drop has queued the envelope for the
		// next one already.
		if s.closed || s.conn == nil || s.unacked[e.EnvelopeID] == nil || e.RetryAttempt >= 3 {
			return
		}
		e.RetryAttempt++
		e.RetryReason = "timeout"
		s.sendLocked(e)
	})
}

func (s *Server) send(e *envelope) Envelope {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.EnvelopeID = s.newIDLocked("env-")
	s.sendLocked(e)
	return Envelope{ID: e.EnvelopeID, EventID: e.eventID}
}

// EventCallback wraps an inner event the way the Events API delivers it
// (type event_callback, with team, app and a fresh event id).
func (s *Server) EventCallback(event any) (payload map[string]any, eventID string) {
	s.mu.Lock()
	eventID = s.newIDLocked("Ev")
	s.mu.Unlock()
	return map[string]any{
		"token": "verification-token", "team_id": TeamID, "api_app_id": AppID,
		"event": event, "type": "event_callback", "event_id": eventID,
		"event_time": time.Now().Unix(), "authorizations": []map[string]any{{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}},
	}, eventID
}

// SendEvent sends an events_api envelope carrying event (a map or a struct
// marshalling to the inner event JSON).
func (s *Server) SendEvent(event any) Envelope {
	p, id := s.EventCallback(event)
	return s.send(&envelope{Type: "events_api", Payload: p, eventID: id})
}

// SendSlashCommand sends a slash_commands envelope; fields are the form
// fields Slack sends (command, text, user_id, channel_id, trigger_id, ...).
func (s *Server) SendSlashCommand(fields map[string]string) Envelope {
	p := map[string]string{"token": "verification-token", "team_id": TeamID, "api_app_id": AppID}
	for k, v := range fields {
		p[k] = v
	}
	return s.send(&envelope{Type: "slash_commands", Payload: p, AcceptsResponsePayload: true})
}

// SendInteractive sends an interactive envelope (shortcuts, view
// submissions).
func (s *Server) SendInteractive(payload map[string]any) Envelope {
	p := map[string]any{"token": "verification-token", "api_app_id": AppID, "team": map[string]any{"id": TeamID}}
	for k, v := range payload {
		p[k] = v
	}
	return s.send(&envelope{Type: "interactive", Payload: p, AcceptsResponsePayload: true})
}

// Redeliver sends an events_api envelope again with retry_attempt+1, as
// Slack does when it thinks the first delivery was lost.
func (s *Server) Redeliver(env Envelope) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events[env.ID]
	if e == nil {
		return fmt.Errorf("fakeslack: no events_api envelope %s", env.ID)
	}
	e.RetryAttempt++
	e.RetryReason = "timeout"
	s.sendLocked(e)
	return nil
}

// Disconnect sends a disconnect envelope (reason "refresh_requested" or
// "warning"...) on the live connection; envelopes sent after it wait for the
// client's next connection.
func (s *Server) Disconnect(reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return fmt.Errorf("fakeslack: no live socket")
	}
	c := s.conn
	s.conn = nil
	return c.write(envelope{Type: "disconnect", Reason: reason})
}

// Drop closes the live socket without a goodbye, like a network failure.
func (s *Server) Drop() error {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("fakeslack: no live socket")
	}
	s.drop(c)
	return nil
}

// WaitConnections waits until n sockets got hello and one is live.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	return s.waitFor(ctx, strconv.Itoa(n)+" socket connections", func() bool { return s.conns >= n && s.conn != nil })
}

// WaitAck waits for the acknowledgement of an envelope.
func (s *Server) WaitAck(ctx context.Context, env Envelope) (Ack, error) {
	var a Ack
	err := s.waitFor(ctx, "ack of "+env.ID, func() bool {
		var ok bool
		a, ok = s.acks[env.ID]
		return ok
	})
	return a, err
}

// Sign returns the X-Slack-Signature of body sent at ts with secret.
func Sign(secret string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:%s", ts.Unix(), body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}
