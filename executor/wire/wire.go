// Package wire holds the JSON of runblock's execute API, shared by the
// server (internal/api, internal/mcp) and its client (executor/remote):
// the body of POST /v1/run and its answers, the lines of a streamed
// answer, and the one place that turns any front's decoded request into
// an executor.Request (Limits.Request) and any failure into what the
// client is shown and what is logged (FailureOf).
package wire

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/runblock/runblock/executor"
)

// RunRequest is the body of POST /v1/run.
type RunRequest struct {
	Code  string `json:"code"`
	Stdin string `json:"stdin,omitempty"`
	// Args are the snippet's sys.argv[1:].
	Args  []string `json:"args,omitempty"`
	Files []File   `json:"files,omitempty"`
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

// File is an input file written into the work dir before the run.
// Content is text ("utf8", the default, also "text") or "base64" (also
// "hex", which Piston's clients send) as Encoding says.
type File struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"`
}

// RunResponse is the answer of POST /v1/run: the Result, as `runblock exec
// --json` prints it, plus the time limit the run had.
type RunResponse struct {
	executor.Result
	TimeoutLimitMS int64 `json:"timeout_limit_ms"`
}

// EndResponse is the answer of DELETE /v1/sessions/{id}.
type EndResponse struct {
	Session string `json:"session"`
	Ended   bool   `json:"ended"`
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

// ErrorCode is the ErrorResponse code of an HTTP status.
func ErrorCode(status int) string {
	if code, ok := errorCodes[status]; ok {
		return code
	}
	return string(executor.ErrInternal)
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

// A client of POST /v1/run that accepts NDJSON gets its run's output as
// it comes: once the run starts, a 200 with Content-Type NDJSON, then an
// OutputEvent line whenever the output grew, then, as the last line,
// exactly the body the same request would have got without streaming:
// the RunResponse, or the ErrorResponse of a failure after the run
// started. Errors before it starts are answered as without streaming.
const (
	NDJSON = "application/x-ndjson"
	// OutputEventName is the "event" of an OutputEvent.
	OutputEventName = "output"
)

// OutputEvent is a line of a streamed answer before the last: the output
// the run wrote since the previous event, as the result will hold it (the
// events' stdout together are the start of the result's stdout, their
// stderr of its stderr). The last line has no "event".
type OutputEvent struct {
	Event  string `json:"event"`
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
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
