package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Ordered wraps a transport of one client (such as standard input and
// output) so that
//
//   - the calls of run_python and reset_session that name one session run
//     in the order they were read, one after another, however many the
//     client sends without waiting (the SDK handles calls concurrently, so
//     a reset_session followed at once by a run_python could otherwise run
//     second); each waits, before the SDK sees it, for the answer to the
//     one before it; calls of other sessions, and other requests, pass;
//   - at the end of the input, every request read is answered before the
//     connection ends (the SDK closes it at once, losing answers still
//     being computed).
func Ordered(t sdk.Transport) sdk.Transport { return orderedTransport{t} }

type orderedTransport struct{ sdk.Transport }

func (t orderedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(context.Background())
	o := &orderedConn{Connection: c, in: make(chan readResult), stop: stop, done: rctx.Done(),
		answered: make(chan struct{}), pending: map[jsonrpc.ID]string{}, busy: map[string]bool{}}
	o.reading.Go(func() { o.readLoop(rctx) })
	return o, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// orderedConn is the connection of Ordered. Its reader goroutine reads
// the wrapped connection ahead, so that a held call goes on as soon as
// the one before it is answered, whether more input comes or not; Close
// stops it.
type orderedConn struct {
	sdk.Connection
	in      chan readResult
	stop    context.CancelFunc // ends the reader and Read
	done    <-chan struct{}    // closed by stop
	reading sync.WaitGroup

	mu sync.Mutex
	// answered is closed, and replaced, whenever a request is answered.
	answered chan struct{}
	// pending are the requests read and not yet answered, each with its
	// session ("" for none); busy are the sessions with a call running;
	// held are the calls waiting for their session, in the order read.
	pending map[jsonrpc.ID]string
	busy    map[string]bool
	held    []*jsonrpc.Request
	end     error // the wrapped connection's read error, once it came
}

func (o *orderedConn) readLoop(ctx context.Context) {
	for {
		msg, err := o.Connection.Read(ctx)
		select {
		case o.in <- readResult{msg, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// Read returns the next message the server may handle: a held call whose
// session is free, else the next message read. At the end of the input
// it returns the end only once every request read has been answered.
func (o *orderedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		o.mu.Lock()
		if req := o.nextHeld(); req != nil {
			o.mu.Unlock()
			return req, nil
		}
		end, answered := o.end, o.answered
		if end != nil && len(o.pending) == 0 {
			o.mu.Unlock()
			return nil, end
		}
		o.mu.Unlock()
		in := o.in
		if end != nil {
			in = nil
		}
		select {
		case r := <-in:
			if r.err != nil {
				o.mu.Lock()
				o.end = r.err
				o.mu.Unlock()
				continue
			}
			if msg := o.admit(r.msg); msg != nil {
				return msg, nil
			}
		case <-answered:
		case <-o.done:
			return nil, sdk.ErrConnectionClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// admit notes a message read: a request is pending until answered; a
// call of a busy session is held (nil).
func (o *orderedConn) admit(msg jsonrpc.Message) jsonrpc.Message {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return msg
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, dup := o.pending[req.ID]; dup {
		return msg // an id given twice: the SDK answers it; not ordered
	}
	session := sessionOf(req)
	o.pending[req.ID] = session
	if session == "" {
		return msg
	}
	if o.busy[session] || o.heldFor(session) {
		o.held = append(o.held, req)
		return nil
	}
	o.busy[session] = true
	return msg
}

// nextHeld takes the first held call whose session is free.
func (o *orderedConn) nextHeld() *jsonrpc.Request {
	for i, req := range o.held {
		session := o.pending[req.ID]
		if o.busy[session] {
			continue
		}
		o.busy[session] = true
		o.held = append(o.held[:i], o.held[i+1:]...)
		return req
	}
	return nil
}

func (o *orderedConn) heldFor(session string) bool {
	for _, req := range o.held {
		if o.pending[req.ID] == session {
			return true
		}
	}
	return false
}

// Write writes msg; an answer frees its request's session.
func (o *orderedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := o.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		o.mu.Lock()
		if session, ok := o.pending[resp.ID]; ok {
			delete(o.pending, resp.ID)
			delete(o.busy, session)
			close(o.answered)
			o.answered = make(chan struct{})
		}
		o.mu.Unlock()
	}
	return err
}

// Close closes the wrapped connection and stops the reader.
func (o *orderedConn) Close() error {
	err := o.Connection.Close()
	o.stop()
	o.reading.Wait()
	return err
}

// sessionOf is the session a call of run_python or reset_session names,
// or "".
func sessionOf(req *jsonrpc.Request) string {
	if req.Method != "tools/call" {
		return ""
	}
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Session string `json:"session"`
		} `json:"arguments"`
	}
	if json.Unmarshal(req.Params, &p) != nil || (p.Name != ToolRun && p.Name != ToolReset) {
		return ""
	}
	return p.Arguments.Session
}

// inOrder serves the POSTs that call run_python or reset_session for one
// client's session one after another, in the order they arrive, with
// next; other requests go straight to next. The body is read here (up to
// limit, the SDK's own bound; 0: its default) and given to next as read.
func inOrder(next http.Handler, limit int64, userOf func(*http.Request) string) http.Handler {
	if limit <= 0 {
		limit = sdk.DefaultMaxRequestBodyBytes
	}
	q := &fifo{tail: map[string]chan struct{}{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok {
			next.ServeHTTP(w, r)
			return
		}
		if session := sessionOf(req); session != "" {
			defer q.enter(userOf(r) + "\x00" + session)()
		}
		next.ServeHTTP(w, r)
	})
}

// fifo lets the holders of one key through one at a time, in the order
// they entered.
type fifo struct {
	mu   sync.Mutex
	tail map[string]chan struct{} // closed when the last to enter leaves
}

// enter waits for those who entered with key before, and returns the
// leave of this one.
func (q *fifo) enter(key string) (leave func()) {
	done := make(chan struct{})
	q.mu.Lock()
	prev := q.tail[key]
	q.tail[key] = done
	q.mu.Unlock()
	if prev != nil {
		<-prev // bounded: the one before runs under the run's time limit
	}
	return func() {
		q.mu.Lock()
		if q.tail[key] == done {
			delete(q.tail, key)
		}
		q.mu.Unlock()
		close(done)
	}
}
