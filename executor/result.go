// Package executor is the domain of running snippets: the request, the
// result, the typed errors, and the Scheduler that runs jobs fairly behind a
// shared rate limiter on a Runner. The isolation that runs them lives in
// executor/sandbox. It knows nothing about chat.
package executor

import (
	"errors"
	"fmt"
	"time"
)

// MinMemoryBytes is the least memory limit a run gets: a Request's smaller
// MemoryBytes is raised to it, as below ~8 MiB the interpreter dies before
// the snippet starts, which would read as the executor's failure rather
// than the run's result.
const MinMemoryBytes = 32 << 20

// Request is one snippet to run.
type Request struct {
	// Code is the Python source of the snippet.
	Code string
	// Stdin is the snippet's standard input. Empty means /dev/null-like EOF.
	Stdin string
	// Timeout overrides the executor's default timeout when > 0.
	Timeout time.Duration
	// MemoryBytes overrides the executor's default memory limit when > 0
	// (at least MinMemoryBytes).
	MemoryBytes int64
	// Args are the snippet's command-line arguments, sys.argv[1:].
	Args []string
	// Files are placed in the run's work dir before the snippet starts;
	// Path is relative to it.
	Files []File
	// Session, when set, makes the request a cell of a session (see
	// Session); nil: the snippet runs alone, in a fresh sandbox.
	Session *Session
	// Colour says that the medium the result is shown in renders ANSI
	// colour (a Discord reply). If Colour is true and the interpreter
	// colours tracebacks (Python 3.13 and later), the traceback of an
	// uncaught exception or a syntax error is written to Stderr with SGR
	// escape sequences; Result.Error stays plain text. If Colour is false,
	// the zero value, nothing is coloured. The snippet's own output is
	// passed through as it is written either way.
	Colour bool
	// Script runs the snippet as a script (python file.py): nothing but
	// what it writes is shown. If Script is false, the zero value, it runs
	// as a notebook cell: the value of its last expression and what it
	// passes to display() come back in Result.Results.
	Script bool
	// Launch, when set, runs the request as `python -c CODE`, `python
	// FILE` or `python -m MODULE` would, not as a snippet: Code is then
	// the code, the path of one of Files or the module's name, and
	// sys.argv is what python's would be (Args after "-c", the file or
	// the module). The sandbox launches it itself; a launched cell, as a
	// snippet's, takes top-level await and shows its last expression's
	// value. Empty: a snippet.
	Launch Launch
}

// Launch is how a launched request names its program: see Request.Launch.
type Launch string

// Launch's values.
const (
	LaunchCode   Launch = "code"
	LaunchFile   Launch = "file"
	LaunchModule Launch = "module"
)

// File is a file that goes into a run's work dir or comes back out of it.
// Content is base64 in JSON.
type File struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	MIME    string `json:"mime"`
	Content []byte `json:"content"`
}

// OmittedFile names a file the snippet wrote that did not come back (over
// the count or size limits, or not a regular file) and why.
type OmittedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Reason string `json:"reason"`
	// Count, when over 1, is how many files the entry stands for: the one
	// entry (OmitNotNamed) that counts those not named one by one.
	Count int `json:"count,omitempty"`
}

// Files is how many files the entry stands for: Count, or 1.
func (f OmittedFile) Files() int { return max(f.Count, 1) }

// Result is how one run ended.
type Result struct {
	Success bool   `json:"success"`
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	// Error is the last line of the traceback ("ZeroDivisionError: division by zero"),
	// "Execution failed" when stderr is empty, or "" on success.
	Error          string `json:"error"`
	Timeout        bool   `json:"timeout"`
	MemoryExceeded bool   `json:"memory_exceeded"`
	// OutputTruncated: Stdout or Stderr holds only a prefix of what the snippet wrote.
	OutputTruncated bool `json:"output_truncated"`
	// OutputLimit: the run was stopped because it passed the hard output cap.
	OutputLimit bool `json:"output_limit"`
	// StdoutBytes and StderrBytes count every byte the snippet wrote, kept or not.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	ExitCode    int   `json:"exit_code"`
	// Signal names the signal that ended the run ("SIGKILL"), or "".
	Signal     string        `json:"signal"`
	Duration   time.Duration `json:"-"`
	DurationMS int64         `json:"duration_ms"`
	// TimeoutLimit and MemoryLimit are the limits the run had, for messages
	// such as "timed out after 5 s".
	TimeoutLimit time.Duration `json:"-"`
	MemoryLimit  int64         `json:"memory_limit_bytes"`
	// Files are the files the snippet created or changed in its work dir,
	// plots shown with plt.show() included, in the order they appeared.
	Files []File `json:"files"`
	// FilesOmitted are those that did not come back, named for the reply.
	FilesOmitted []OmittedFile `json:"files_omitted,omitempty"`
	// Session is where the cell ran, for a Request with a Session.
	Session *SessionInfo `json:"session,omitempty"`
	// Results are the rich outputs of the run, in the order they were
	// shown: each object passed to display(), then the value of the last
	// expression (Display.Value) when it is not None. Empty for a run in
	// script mode (Request.Script).
	Results []Display `json:"results,omitempty"`
}

// Display is one rich output, as Jupyter shows it: a display_data (an
// object passed to display()) or an execute_result (the value of a cell's
// last expression).
type Display struct {
	// Data is the object's representations by MIME type, a Jupyter MIME
	// bundle: "text/plain" always; binary types ("image/png") base64 as in
	// nbformat; JSON types ("application/json",
	// "application/vnd.dataresource+json") as their JSON text.
	Data map[string]string `json:"data"`
	// Value marks the last expression's value (execute_result).
	Value bool `json:"value,omitempty"`
	// At is how many bytes of Stdout the snippet had written when it was
	// shown, to place it among the printed output.
	At int64 `json:"stdout_offset"`
}

// Outcome is a short label for metrics and logs: ok, error, timeout, memory,
// output_limit.
func (r Result) Outcome() string {
	switch {
	case r.Timeout:
		return "timeout"
	case r.MemoryExceeded:
		return "memory"
	case r.OutputLimit:
		return "output_limit"
	case r.Success:
		return "ok"
	default:
		return "error"
	}
}

// Code classifies an Error.
type Code string

// Error codes. Adapters turn each into a friendly chat line.
const (
	ErrBusy        Code = "busy"         // queue full
	ErrRateLimited Code = "rate_limited" // per-user rate or per-user job limit
	ErrTooLarge    Code = "too_large"    // snippet, stdin or input files over the configured limit
	ErrInvalid     Code = "invalid"      // malformed request, such as an input file path that is not clean
	ErrShutdown    Code = "shutdown"     // service is shutting down
	ErrCanceled    Code = "canceled"     // caller's context ended
	ErrUnavailable Code = "unavailable"  // no isolation tier allowed to run code
	ErrInternal    Code = "internal"     // anything else: log it, do not echo it
)

// Error is the executor's typed error. Use errors.As to get at it.
type Error struct {
	Code    Code
	Message string
	// RetryAfter tells rate-limited and busy callers when to try again (0: unknown).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	msg := string(e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the Code of err, ErrInternal for a non-nil error that is
// not an *Error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ErrInternal
}
