// Package api is the execute API of `runblock executor`: a native endpoint
// (POST /v1/run), a snekbox-compatible one (POST /eval) and a
// Piston-compatible one (POST /api/v2/execute, GET /api/v2/runtimes), every
// run going through the executor's Scheduler, one client one "user" of its
// fairness order.
package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/mcp"
)

// Config configures the Handler.
type Config struct {
	Scheduler executor.Submitter
	// Tokens are the accepted bearer tokens (RUNBLOCK_API_TOKEN, a comma
	// list); each is one client of the fairness order. None: no
	// authentication, for a loopback-only listener (see CheckListener).
	Tokens []string
	// Limits are what a request may ask for, as in every front: MCP's
	// at /mcp too. The body cap is theirs (Limits.BodyBytes).
	wire.Limits
	// Origins are the web origins, besides the service's own, whose
	// pages may call the API (RUNBLOCK_API_ORIGINS), such as
	// "https://app.example.com"; see admit.
	Origins []string
	// PythonVersion is the interpreter's version, such as "3.13.5".
	PythonVersion string
	// Sessions, when set, keeps the sessions of /v1/run's "session" field
	// (the Scheduler's Runner is then that manager) and ends them for
	// DELETE /v1/sessions/{id}; nil: sessions are off, and a run that
	// names one runs alone.
	Sessions Sessions
	// MCP, when set, serves the tool run_python over MCP's streamable HTTP
	// transport at /mcp behind the same tokens; its Scheduler and Limits
	// (and PythonVersion, when unset) are the Handler's.
	MCP *mcp.Config
	// Draining reports that the service is shutting down (503).
	Draining func() bool
	// Answers bound what clients that read slowly, or never, can pin:
	// an answer must be written within AnswerGrace plus its size at
	// AnswerRate bytes a second, or its connection is closed and the
	// answer freed; and at most AnswerBytes of answers are being written
	// at once (a larger one goes alone), the others wait for room until
	// their own deadline. Zero: DefaultAnswerGrace, DefaultAnswerRate,
	// DefaultAnswerBytes.
	AnswerGrace time.Duration
	AnswerRate  int64
	AnswerBytes int64
	// Answers, when set, is that budget, shared with the gate in front of
	// the Scheduler's runner (Answers.Gate); AnswerBytes is then unused.
	Answers *Answers
	Logger  *slog.Logger
}

// Defaults of Config's answer bounds.
const (
	DefaultAnswerGrace = 10 * time.Second
	DefaultAnswerRate  = 256 << 10
	DefaultAnswerBytes = 64 << 20
)

// Handler serves the execute API.
type Handler struct {
	cfg     Config
	log     *slog.Logger
	tokens  []token
	mux     *http.ServeMux
	answers *budget // bytes of answers being written
}

type token struct {
	hash [sha256.Size]byte
	id   string // client key: a hash prefix, never the token
}

// New returns the API's handler.
func New(cfg Config) *Handler {
	h := &Handler{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.cfg.Draining == nil {
		h.cfg.Draining = func() bool { return false }
	}
	if h.cfg.AnswerGrace <= 0 {
		h.cfg.AnswerGrace = DefaultAnswerGrace
	}
	if h.cfg.AnswerRate <= 0 {
		h.cfg.AnswerRate = DefaultAnswerRate
	}
	if h.cfg.AnswerBytes <= 0 {
		h.cfg.AnswerBytes = DefaultAnswerBytes
	}
	if h.cfg.Answers == nil {
		h.cfg.Answers = NewAnswers(h.cfg.AnswerBytes)
	}
	h.answers = h.cfg.Answers.b
	for _, t := range cfg.Tokens {
		sum := sha256.Sum256([]byte(t))
		h.tokens = append(h.tokens, token{hash: sum, id: "token:" + hex.EncodeToString(sum[:4])})
	}
	h.mux.Handle("POST /v1/run", h.endpoint(nativeErrors, h.native))
	h.mux.Handle("DELETE /v1/sessions/{id}", h.endpoint(nativeErrors, h.endSession))
	if cfg.MCP != nil {
		h.mux.Handle("/mcp", h.mcpHandler(*cfg.MCP))
	}
	h.mux.Handle("POST /eval", h.endpoint(snekboxErrors, h.snekbox))
	for _, prefix := range []string{"/api/v2", "/api/v2/piston"} {
		h.mux.Handle("POST "+prefix+"/execute", h.endpoint(pistonErrors, h.piston))
		h.mux.Handle("GET "+prefix+"/runtimes", h.endpoint(pistonErrors, h.runtimes))
	}
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// CheckListener refuses to serve without a token on anything but a
// loopback address: anyone who reaches the port could run code.
func CheckListener(addr string, tokens []string) error {
	if len(tokens) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to serve the execute API on %q without RUNBLOCK_API_TOKEN: set a token, or listen on 127.0.0.1 only", addr)
}

// apiError is an error answered with an HTTP status.
type apiError struct {
	status     int
	message    string
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.message }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, args...)}
}

// errorWriter writes an error in an endpoint's own format.
type errorWriter func(w *answer, status int, message string)

// handlerFunc is an endpoint: it answers, or returns the error to answer.
type handlerFunc func(w *answer, r *http.Request, client string) error

// endpoint wraps fn with authentication, draining, the body cap and error
// answers in the endpoint's format.
func (h *Handler) endpoint(writeErr errorWriter, fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := &answer{ResponseWriter: rw, h: h, r: r}
		if ae := h.admit(r); ae != nil {
			h.refused(r, ae)
			writeErr(w, ae.status, ae.message)
			return
		}
		client, ok := h.client(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="runblock"`)
			writeErr(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer TOKEN)")
			return
		}
		if h.cfg.Draining() {
			w.Header().Set("Retry-After", "1")
			writeErr(w, http.StatusServiceUnavailable, "the executor is shutting down, try another one")
			return
		}
		// A run may wait in the queue: the server's WriteTimeout must not
		// cut it. The answer gets a deadline of its own (answer.write).
		if err := http.NewResponseController(rw).SetWriteDeadline(time.Time{}); err != nil {
			h.log.Debug("clearing write deadline", "err", err)
		}
		if n := h.cfg.BodyBytes(); n > 0 {
			r.Body = http.MaxBytesReader(rw, r.Body, n)
		}
		// The room the gate takes for the run's result, which the answer
		// takes over; what it did not is given back here.
		held := new(atomic.Int64)
		defer func() { h.answers.give(held.Swap(0)) }()
		r = r.WithContext(context.WithValue(r.Context(), heldKey{}, held))
		w.r = r
		err := fn(w, r, client)
		if err == nil {
			return
		}
		f := h.failure(r, client, err)
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
		}
		writeErr(w, f.Status, f.Message)
	})
}

// refused logs a request that admit refused.
func (h *Handler) refused(r *http.Request, ae *apiError) {
	h.log.Warn("api request refused", "path", r.URL.Path, "remote", r.RemoteAddr, "status", ae.status, "err", ae.message)
}

// failure is what a request that failed with err answers (an *apiError
// of the endpoint's own, else wire.FailureOf), logged at its level.
func (h *Handler) failure(r *http.Request, client string, err error) wire.Failure {
	var ae *apiError
	f := wire.FailureOf(err)
	if errors.As(err, &ae) {
		f = wire.Failure{Status: ae.status, Message: ae.message, Level: slog.LevelDebug, RetryAfter: ae.retryAfter}
	}
	h.log.Log(r.Context(), f.Level, "api request failed", "path", r.URL.Path, "client", client, "status", f.Status, "err", err)
	return f
}

// client authenticates r and returns its key in the fairness order: the
// token's identity, or the remote address when no token is configured.
func (h *Handler) client(r *http.Request) (string, bool) {
	if len(h.tokens) == 0 {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		return "addr:" + host, true
	}
	auth := r.Header.Get("Authorization")
	if scheme, rest, ok := strings.Cut(auth, " "); ok && strings.EqualFold(scheme, "Bearer") {
		auth = rest
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(auth)))
	for _, t := range h.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.hash[:]) == 1 {
			return t.id, true
		}
	}
	return "", false
}

// decode reads r's JSON body into v, whatever its Content-Type (some
// clients send none). strict rejects unknown fields. A key given twice in
// one object is refused rather than read as its last value, so that a
// proxy or log that reads the first sees what runs.
func decode(r *http.Request, v any, strict bool) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyError(err)
	}
	if key, ok := duplicateKey(body); ok {
		return badRequest("the key %q is given twice in one object: give each field once", key)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	err = dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return badRequest("the body must be one JSON object, with nothing after it")
		}
		return nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("the body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("the body is not valid JSON: it ends early")
	case errors.As(err, &syntax):
		return badRequest("the body is not valid JSON (at byte %d): %v", syntax.Offset, err)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return badRequest("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
		}
		return badRequest("the body must be a JSON object, not %s", typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return badRequest("the body is not a valid request: %v", err)
}

// bodyError is the answer to a body that could not be read: over the
// size limit (413), not sent in time (408: the server's read deadline
// passed), or cut off by the client (400).
func bodyError(err error) *apiError {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &apiError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the body is over the limit of %d bytes", tooLarge.Limit)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apiError{status: http.StatusRequestTimeout, message: "the body did not arrive in time: send it at once"}
	}
	return badRequest("the body could not be read: %v", err)
}

// duplicateKey returns the first key that occurs twice in one object of
// the JSON text data. Invalid JSON has none here: decoding it says why.
func duplicateKey(data []byte) (string, bool) {
	type level struct {
		keys    map[string]bool // nil in an array
		wantKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.keys != nil {
			if top.wantKey {
				key, _ := tok.(string)
				if top.keys[key] {
					return key, true
				}
				top.keys[key] = true
				top.wantKey = false
				continue
			}
			top.wantKey = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		}
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "bool":
		return "true or false"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number"
	}
	return "a number"
}

// run checks p against the server's limits and runs it as client's job
// through the scheduler, as a script: the snekbox and Piston clients
// expect exactly what it writes, no notebook value or display().
func (h *Handler) run(r *http.Request, client string, p wire.Program) (executor.Result, error) {
	p.Script = true
	req, err := h.cfg.Limits.Request(p)
	if err != nil {
		return executor.Result{}, err
	}
	return h.cfg.Scheduler.Submit(r.Context(), executor.Job{User: client, Request: req})
}

func writeJSON(w *answer, status int, v any) { w.write(status, v) }
