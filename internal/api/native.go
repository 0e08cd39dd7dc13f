package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/session"
)

// RunRequest is the body of POST /v1/run.
type RunRequest struct {
	Code  string `json:"code"`
	Stdin string `json:"stdin,omitempty"`
	// Args are the snippet's sys.argv[1:].
	Args  []string  `json:"args,omitempty"`
	Files []RunFile `json:"files,omitempty"`
	// Timeout is in seconds (a number) or a duration such as "2.5s"; 0 or
	// absent is the server's limit, and more is capped to it.
	Timeout Duration `json:"timeout,omitzero"`
	// Memory is in bytes; 0 or absent is the server's limit, and more is
	// capped to it.
	Memory int64 `json:"memory,omitempty"`
	// Session makes the run a cell of the client's session of that id
	// (1 to 128 letters, digits and . _ : @ -): runs with
	// the same id share variables, imports and files. Sessions are the
	// client's own: another token's same id is another session.
	Session string `json:"session,omitempty"`
	// Replay is for runblock's own bots: the session's earlier successful
	// cells, oldest first, which the executor replays (output discarded)
	// when no live process holds exactly their state. Other clients leave
	// it out: the executor keeps its own record. An empty list (not
	// absent) says the session has no earlier cells.
	Replay []RunRequest `json:"replay,omitzero"`
	// Colour says the client renders ANSI colour (executor.Request.Colour):
	// an executor whose python is 3.13 or later writes the traceback of an
	// uncaught exception with SGR escape sequences. Absent or false: plain.
	Colour bool `json:"colour,omitempty"`
	// Script runs the code as a script (executor.Request.Script): no
	// results, no display(). Absent or false: a notebook cell.
	Script bool `json:"script,omitempty"`
}

// sessionKey is the session manager's key of a client's session id.
func sessionKey(client, id string) string { return "api:" + client + ":" + id }

func checkSessionID(id string) error {
	if !session.ValidID(id) {
		return badRequest("session id %q: use 1 to %d characters, %s", id, session.MaxIDLength, session.IDChars)
	}
	return nil
}

// Sessions is what the API needs of the session manager.
type Sessions interface {
	// EndSession ends a session, reporting whether there was one.
	EndSession(ctx context.Context, id string) (bool, error)
	// Live counts the sessions with a live process, for /readyz.
	Live() int
}

// EndResponse is the answer of DELETE /v1/sessions/{id}.
type EndResponse struct {
	Session string `json:"session"`
	Ended   bool   `json:"ended"`
}

// RunFile is an input file written into the work dir before the run.
type RunFile struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"` // "utf8" (default) or "base64"
}

// RunResponse is the answer of POST /v1/run: the Result, as `runblock exec
// --json` prints it, plus the time limit the run had.
type RunResponse struct {
	executor.Result
	TimeoutLimitMS int64 `json:"timeout_limit_ms"`
}

// ErrorResponse is the body of a native API error, as `runblock exec
// --json` prints a run that could not be made: a message and a code
// ("bad_request", "unauthorized", "forbidden", "not_found",
// "unsupported_media_type", "too_large", "busy", "unavailable",
// "internal").
type ErrorResponse struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// Duration is a JSON number of seconds or a duration string.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Seconds())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case float64:
		if v < 0 || v > 1e6 {
			return fmt.Errorf("timeout %v: give seconds between 0 and 1000000", v)
		}
		*d = Duration(v * float64(time.Second))
	case string:
		p, err := time.ParseDuration(v)
		if err != nil || p < 0 {
			return fmt.Errorf("timeout %q: give seconds or a duration such as \"2.5s\"", v)
		}
		*d = Duration(p)
	case nil:
		*d = 0
	default:
		return fmt.Errorf("timeout: give seconds or a duration such as \"2.5s\"")
	}
	return nil
}

// errorCodes are ErrorResponse's codes by HTTP status; any other status
// is "internal".
var errorCodes = map[int]string{
	http.StatusBadRequest:            "bad_request",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not_found",
	http.StatusUnsupportedMediaType:  "unsupported_media_type",
	http.StatusRequestEntityTooLarge: string(executor.ErrTooLarge),
	http.StatusTooManyRequests:       string(executor.ErrBusy),
	http.StatusServiceUnavailable:    string(executor.ErrUnavailable),
}

// ErrorStatus is the HTTP status an ErrorResponse's code stands for: what
// a stream's last line, which came after a 200, would have been answered
// with.
func ErrorStatus(code string) int {
	for status, c := range errorCodes {
		if c == code {
			return status
		}
	}
	return http.StatusInternalServerError
}

func nativeErrors(w *answer, status int, message string) {
	code, ok := errorCodes[status]
	if !ok {
		code = "internal"
	}
	writeJSON(w, status, ErrorResponse{Error: message, Code: code})
}

func (h *Handler) native(w *answer, r *http.Request, client string) error {
	var body RunRequest
	if err := decode(r, &body, true); err != nil {
		return err
	}
	req, err := h.nativeRequest(body, "")
	if err != nil {
		return err
	}
	switch {
	case body.Session == "" && body.Replay != nil:
		return badRequest("field \"replay\" needs a \"session\"")
	case body.Session == "":
	case h.cfg.Sessions == nil:
		// Sessions are off here: the run goes alone, and its answer
		// says nothing of a session.
	default:
		if err := checkSessionID(body.Session); err != nil {
			return err
		}
		req.Session = &executor.Session{ID: sessionKey(client, body.Session)}
		if body.Replay != nil {
			req.Session.Replay = make([]executor.Request, len(body.Replay))
		}
		for i, cell := range body.Replay {
			field := fmt.Sprintf("replay[%d].", i)
			if cell.Session != "" || cell.Replay != nil {
				return badRequest("%s: a replayed cell has no session or replay of its own", strings.TrimSuffix(field, "."))
			}
			if req.Session.Replay[i], err = h.nativeRequest(cell, field); err != nil {
				return err
			}
		}
	}
	job := executor.Job{User: client, Request: req}
	ctx, stop := w.streamRun(r.Context(), &job)
	res, err := h.cfg.Scheduler.Submit(ctx, job)
	stop()
	if err != nil {
		return err
	}
	if res.Session != nil {
		info := *res.Session
		info.ID = body.Session
		res.Session = &info
	}
	writeJSON(w, http.StatusOK, RunResponse{Result: res, TimeoutLimitMS: res.TimeoutLimit.Milliseconds()})
	return nil
}

// nativeRequest checks body (a replayed cell's fields named after field,
// such as "replay[2].") and turns it into an executor.Request.
func (h *Handler) nativeRequest(body RunRequest, field string) (executor.Request, error) {
	if body.Memory < 0 {
		return executor.Request{}, badRequest("field \"%smemory\" must be a number of bytes, 0 for the server's limit", field)
	}
	p := program{mode: "code", target: body.Code, argv: append([]string{"-c"}, body.Args...), stdin: body.Stdin,
		timeout: time.Duration(body.Timeout), memory: body.Memory}
	paths := make([]string, len(body.Files))
	for i, f := range body.Files {
		paths[i] = f.Path
	}
	if err := p.addFiles(field+"files[%d].path", paths, func(i int) ([]byte, error) {
		return content(body.Files[i].Content, body.Files[i].Encoding)
	}); err != nil {
		return executor.Request{}, err
	}
	req, err := p.request(h.lim)
	req.Colour, req.Script = body.Colour, body.Script
	return req, err
}

// endSession is DELETE /v1/sessions/{id}: it ends the client's session id.
func (h *Handler) endSession(w *answer, r *http.Request, client string) error {
	id := r.PathValue("id")
	if err := checkSessionID(id); err != nil {
		return err
	}
	if h.cfg.Sessions == nil {
		return &apiError{status: http.StatusNotFound, message: fmt.Sprintf("no session %q: sessions are off on this executor", id)}
	}
	found, err := h.cfg.Sessions.EndSession(r.Context(), sessionKey(client, id))
	if err != nil {
		return err
	}
	if !found {
		return &apiError{status: http.StatusNotFound, message: fmt.Sprintf("no session %q", id)}
	}
	writeJSON(w, http.StatusOK, EndResponse{Session: id, Ended: true})
	return nil
}

// content decodes a file's content in the given encoding.
func content(s, encoding string) ([]byte, error) {
	switch encoding {
	case "", "utf8", "utf-8":
		return []byte(s), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("content is not valid base64: %v", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("encoding %q is not supported: use \"utf8\" or \"base64\"", encoding)
}
