package api

import (
	"encoding/base64"
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
	Args  []string  `json:"args,omitempty"`
	Files []RunFile `json:"files,omitempty"`
	// Timeout is in seconds (a number) or a duration such as "2.5s"; 0 or
	// absent is the server's limit, and more is capped to it.
	Timeout Duration `json:"timeout,omitzero"`
	// Memory is in bytes; 0 or absent is the server's limit, and more is
	// capped to it.
	Memory int64 `json:"memory,omitempty"`
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
// ("bad_request", "unauthorized", "too_large", "busy", "unavailable",
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

func nativeErrors(w *answer, status int, message string) {
	code := "internal"
	switch status {
	case http.StatusBadRequest:
		code = "bad_request"
	case http.StatusUnauthorized:
		code = "unauthorized"
	case http.StatusRequestEntityTooLarge:
		code = string(executor.ErrTooLarge)
	case http.StatusTooManyRequests:
		code = string(executor.ErrBusy)
	case http.StatusServiceUnavailable:
		code = string(executor.ErrUnavailable)
	}
	writeJSON(w, status, ErrorResponse{Error: message, Code: code})
}

func (h *Handler) native(w *answer, r *http.Request, client string) error {
	var body RunRequest
	if err := decode(r, &body, true); err != nil {
		return err
	}
	if body.Memory < 0 {
		return badRequest("field \"memory\" must be a number of bytes, 0 for the server's limit")
	}
	p := program{mode: "code", target: body.Code, argv: append([]string{"-c"}, body.Args...), stdin: body.Stdin,
		timeout: time.Duration(body.Timeout), memory: body.Memory}
	paths := make([]string, len(body.Files))
	for i, f := range body.Files {
		paths[i] = f.Path
	}
	if err := p.addFiles("files[%d].path", paths, func(i int) ([]byte, error) {
		return content(body.Files[i].Content, body.Files[i].Encoding)
	}); err != nil {
		return err
	}
	res, err := h.run(r, client, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RunResponse{Result: res, TimeoutLimitMS: res.TimeoutLimit.Milliseconds()})
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
