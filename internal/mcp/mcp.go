// Package mcp serves runblock to LLM assistants over the Model Context
// Protocol, through the official Go SDK: `runblock mcp` on standard input
// and output, and `runblock executor` at /mcp (streamable HTTP, behind the
// execute API's bearer token). Its tool run_python runs code through the
// same Scheduler as every other client, one MCP client one user of its
// fair queue, and answers with the output as text, the plots as images
// and the other files as embedded resources.
package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/formatting"
)

// Config configures a Server. Scheduler, Timeout and MemoryBytes are
// required; the zero value of the rest is usable.
type Config struct {
	Scheduler executor.Submitter
	// Limits are what a call may ask for, as in the execute API's every
	// front; over HTTP, the body cap is theirs (Limits.BodyBytes).
	wire.Limits
	// MaxFiles and MaxFilesBytes are what comes back, for the description.
	MaxFiles      int
	MaxFilesBytes int64
	// PythonVersion ("3.13.5") and Packages ("numpy 2.2.4") tell the model
	// what it is writing for.
	PythonVersion string
	Packages      []string
	// Version is runblock's, reported to clients.
	Version string
	// Sessions, when set, keeps the sessions of run_python's "session"
	// argument (the Scheduler's Runner is then that manager) and ends them
	// for reset_session; nil: sessions are off, and every call runs alone.
	Sessions Sessions
	Logger   *slog.Logger
}

// Sessions is what the server needs of the session manager.
type Sessions interface {
	// EndSession ends a session, reporting whether there was one.
	EndSession(ctx context.Context, id string) (bool, error)
}

// Tool names.
const (
	ToolRun   = "run_python"
	ToolReset = "reset_session"
)

// NewServer returns an MCP server whose runs are jobs of user in the
// Scheduler's fair queue.
func NewServer(cfg Config, user string) *sdk.Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{cfg: cfg, user: user}
	s := sdk.NewServer(&sdk.Implementation{Name: "runblock", Title: "runblock", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "runblock runs Python in a fresh, kernel-isolated sandbox with no network. " +
			"Use run_python to check code before you answer with it.",
		Logger:       cfg.Logger,
		Capabilities: &sdk.ServerCapabilities{},
	})
	sdk.AddTool(s, &sdk.Tool{
		Name:        ToolRun,
		Title:       "Run Python",
		Description: h.describe(),
		// It runs arbitrary code, which may change or delete a session's
		// variables and files: not read-only, destructive, so that a
		// client asks its user first; no network: a closed world.
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: new(true), IdempotentHint: false, OpenWorldHint: new(false)},
	}, h.run)
	if cfg.Sessions != nil {
		sdk.AddTool(s, &sdk.Tool{
			Name:  ToolReset,
			Title: "Reset a Python session",
			Description: "End a session of run_python: its variables, imports and files are gone, and the next run_python call with that session id starts from nothing. " +
				"Use it to start over after a bad state, or when you are done with a session.",
			Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
		}, h.reset)
	}
	return s
}

// HTTPHandler serves MCP's streamable HTTP transport; userOf names the
// client of a request (the API's token id), each client one user of the
// fair queue. It is stateless (the tool keeps nothing between calls, so
// the server holds no session a client could pile up) and answers with
// plain JSON. Authentication is the caller's: wrap it.
//
// The calls of one client that name one session run in the order they
// arrive (see inOrder): a client's parallel tool calls, each its own POST,
// are run one after another as the SDK's handler would not.
func HTTPHandler(cfg Config, userOf func(*http.Request) string) http.Handler {
	next := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		return NewServer(cfg, userOf(r))
	}, &sdk.StreamableHTTPOptions{Logger: cfg.Logger, MaxRequestBodyBytes: cfg.BodyBytes(), Stateless: true, JSONResponse: true})
	return inOrder(next, cfg.BodyBytes(), userOf)
}

// RunInput is run_python's arguments.
type RunInput struct {
	Code    string      `json:"code" jsonschema:"the Python source to run, as a script"`
	Stdin   string      `json:"stdin,omitempty" jsonschema:"the program's standard input; empty means EOF at once"`
	Files   []FileInput `json:"files,omitempty" jsonschema:"files placed in the work dir before the code runs"`
	Timeout float64     `json:"timeout,omitempty" jsonschema:"wall-clock limit in seconds; capped by the server's limit, which is also the default"`
	Session string      `json:"session,omitempty" jsonschema:"a session id of your choice (1 to 128 letters, digits and . _ : @ -): calls with the same id share variables, imports and files, like notebook cells; leave it out to run alone"`
}

// ResetInput is reset_session's arguments.
type ResetInput struct {
	Session string `json:"session" jsonschema:"the id of the session to end"`
}

// ResetOutput is reset_session's structured result.
type ResetOutput struct {
	Session string `json:"session"`
	// Ended: there was such a session, and it is gone.
	Ended bool `json:"ended"`
}

// FileInput is a file given to run_python.
type FileInput struct {
	Name     string `json:"name" jsonschema:"path relative to the work dir, such as data.csv"`
	Content  string `json:"content" jsonschema:"the file's content"`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (the default) or base64"`
}

// RunOutput is run_python's structured result: the fields of /v1/run's
// answer that say how the run ended, and its results (what it passed to
// display() and its last value, as /v1/run's) without their images,
// which come as image content.
type RunOutput struct {
	Success        bool               `json:"success"`
	ExitCode       int                `json:"exit_code"`
	Timeout        bool               `json:"timeout"`
	MemoryExceeded bool               `json:"memory_exceeded"`
	OutputLimit    bool               `json:"output_limit"`
	DurationMS     int64              `json:"duration_ms"`
	Error          string             `json:"error,omitempty"`
	Stdout         string             `json:"stdout"`
	Stderr         string             `json:"stderr"`
	Results        []executor.Display `json:"results,omitempty"`
	// Session is where the call ran, for a call with a session.
	Session *executor.SessionInfo `json:"session,omitempty"`
}

type handler struct {
	cfg  Config
	user string
}

// describe is run_python's description: what the model needs to write code
// that fits.
func (h *handler) describe() string {
	var b strings.Builder
	b.WriteString("Run a Python program in a fresh, isolated sandbox and get its output (stdout, then stderr, then the error line), ")
	b.WriteString("the figures it draws (matplotlib's plt.show() or open figures at the end) as PNG images, and the files it writes in its work dir. ")
	if h.cfg.Sessions != nil {
		b.WriteString("Each call starts from nothing, unless it names a session: calls with the same session id run one after another in one live Python, sharing variables, imports, functions and files, like the cells of a notebook. ")
		b.WriteString("A session's state is rebuilt (by re-running its earlier successful calls) if its process ended: after a timeout, the memory limit, an exit or a long idle time; the answer says so. reset_session ends one. ")
	} else {
		b.WriteString("Each call starts from nothing. ")
	}
	b.WriteString("No network; no pip install. ")
	fmt.Fprintf(&b, "Limits: %s wall clock per call (the timeout argument may lower it), %s of memory for the whole run",
		formatting.DurationText(h.cfg.Timeout), formatting.SizeText(h.cfg.MemoryBytes))
	if h.cfg.MaxFiles > 0 {
		fmt.Fprintf(&b, ", at most %d files and %s back", h.cfg.MaxFiles, formatting.SizeText(h.cfg.MaxFilesBytes))
	}
	b.WriteString(".")
	if h.cfg.PythonVersion != "" {
		fmt.Fprintf(&b, " Python %s", h.cfg.PythonVersion)
		if len(h.cfg.Packages) > 0 {
			fmt.Fprintf(&b, " with the standard library and %s", strings.Join(h.cfg.Packages, ", "))
		}
		b.WriteString(".")
	}
	return b.String()
}

// run is run_python.
func (h *handler) run(ctx context.Context, _ *sdk.CallToolRequest, in RunInput) (*sdk.CallToolResult, RunOutput, error) {
	req, err := h.request(in)
	if err != nil {
		return nil, RunOutput{}, h.failure(ctx, "run refused", err)
	}
	res, err := h.cfg.Scheduler.Submit(ctx, executor.Job{User: h.user, Request: req})
	if err != nil {
		return nil, RunOutput{}, h.failure(ctx, "run failed", err)
	}
	if res.Session != nil {
		info := *res.Session
		info.ID = in.Session
		res.Session = &info
	}
	out := RunOutput{
		Success: res.Success, ExitCode: res.ExitCode, Timeout: res.Timeout,
		MemoryExceeded: res.MemoryExceeded, OutputLimit: res.OutputLimit,
		DurationMS: res.Duration.Milliseconds(), Error: res.Error,
		Stdout: res.Stdout, Stderr: res.Stderr, Session: res.Session, Results: textResults(res.Results),
	}
	if out.DurationMS == 0 {
		out.DurationMS = res.DurationMS
	}
	return &sdk.CallToolResult{Content: content(res), IsError: res.Outcome() != "ok"}, out, nil
}

// reset is reset_session.
func (h *handler) reset(ctx context.Context, _ *sdk.CallToolRequest, in ResetInput) (*sdk.CallToolResult, ResetOutput, error) {
	if !session.ValidID(in.Session) {
		return nil, ResetOutput{}, fmt.Errorf("session: use 1 to %d characters, %s", session.MaxIDLength, session.IDChars)
	}
	ended, err := h.cfg.Sessions.EndSession(ctx, h.sessionKey(in.Session))
	if err != nil {
		return nil, ResetOutput{}, h.failure(ctx, "ending a session failed", err)
	}
	msg := fmt.Sprintf("Session %s ended: its next call starts from nothing.", in.Session)
	if !ended {
		msg = fmt.Sprintf("There is no session %s (never used, or already ended): its next call starts from nothing.", in.Session)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}}, ResetOutput{Session: in.Session, Ended: ended}, nil
}

// sessionKey is the session manager's key of the client's session id.
func (h *handler) sessionKey(id string) string { return "mcp:" + h.user + ":" + id }

// failure is the tool error of a call that failed with err: what every
// front shows of it (wire.FailureOf), with when to try again, logged at
// its level.
func (h *handler) failure(ctx context.Context, what string, err error) error {
	f := wire.FailureOf(err)
	h.cfg.Logger.Log(ctx, f.Level, what, "user", h.user, "err", err)
	return errors.New(f.RetryText())
}

// request checks in against the server's limits and turns it into a
// Request, as every front does (wire.Limits.Request).
func (h *handler) request(in RunInput) (executor.Request, error) {
	if strings.TrimSpace(in.Code) == "" {
		return executor.Request{}, executor.Errorf(executor.ErrInvalid, "code is empty: give the Python source to run")
	}
	p := wire.Program{Code: in.Code, Stdin: in.Stdin, Timeout: wire.Seconds(in.Timeout), FilePath: "name"}
	for _, f := range in.Files {
		p.Files = append(p.Files, wire.File{Path: f.Name, Content: f.Content, Encoding: f.Encoding})
	}
	req, err := h.cfg.Limits.Request(p)
	if err != nil || in.Session == "" {
		return req, err
	}
	if !session.ValidID(in.Session) {
		return req, executor.Errorf(executor.ErrInvalid, "session: use 1 to %d characters, %s", session.MaxIDLength, session.IDChars)
	}
	if h.cfg.Sessions != nil {
		req.Session = &executor.Session{ID: h.sessionKey(in.Session)}
	}
	return req, nil
}

// textResults is results without their images (they come as image
// content), for the structured result.
func textResults(results []executor.Display) []executor.Display {
	var out []executor.Display
	for _, d := range results {
		data := make(map[string]string, len(d.Data))
		for mt, v := range d.Data {
			if !strings.HasPrefix(mt, "image/") {
				data[mt] = v
			}
		}
		d.Data = data
		out = append(out, d)
	}
	return out
}

// content is a run's answer for the model: its stdout, with each of its
// displays and its last value where it was shown (an image as image
// content, the rest as text: markdown, else text/plain), then the rest of
// stdout, stderr and the status line in one text block, as the console
// renders it; every PNG file as an image and every other file as an
// embedded resource.
func content(res executor.Result) []sdk.Content {
	var out []sdk.Content
	var text strings.Builder
	from := 0
	for _, d := range res.Results {
		at := min(int(max(d.At, 0)), len(res.Stdout))
		for at > from && at < len(res.Stdout) && !utf8.RuneStart(res.Stdout[at]) {
			at--
		}
		if at > from {
			text.WriteString(res.Stdout[from:at])
			from = at
		}
		if text.Len() > 0 {
			out = append(out, &sdk.TextContent{Text: text.String()})
			text.Reset()
		}
		out = append(out, displayContent(d)...)
	}
	for _, s := range []string{res.Stdout[from:], res.Stderr} {
		if s == "" {
			continue
		}
		text.WriteString(s)
		if !strings.HasSuffix(s, "\n") {
			text.WriteByte('\n')
		}
	}
	text.WriteString(plain(formatting.Status(formatting.Console, res)))
	if note := sessionNote(res.Session); note != "" {
		text.WriteString("\n" + note)
	}
	if note := formatting.FilesNote(formatting.Console, nil, res.FilesOmitted); note != "" {
		text.WriteString("\n" + plain(note))
	}
	out = append(out, &sdk.TextContent{Text: text.String()})
	for _, f := range res.Files {
		mt := f.MIME
		if mt == "" {
			mt = mime.TypeByExtension(path.Ext(f.Path))
		}
		base, _, _ := mime.ParseMediaType(mt)
		if strings.HasPrefix(base, "image/") && slices.Contains([]string{"image/png", "image/jpeg", "image/gif", "image/webp"}, base) {
			out = append(out, &sdk.ImageContent{Data: f.Content, MIMEType: base})
			continue
		}
		rc := &sdk.ResourceContents{URI: "file:///" + escapePath(f.Path), MIMEType: mt}
		if utf8.Valid(f.Content) && (strings.HasPrefix(base, "text/") || base == "application/json" || base == "") {
			rc.Text = string(f.Content)
		} else {
			rc.Blob = f.Content
		}
		out = append(out, &sdk.EmbeddedResource{Resource: rc})
	}
	return out
}

// displayContent is one display for the model: its PNG or JPEG as an
// image, its markdown as text, else its text/plain unless it had an image.
func displayContent(d executor.Display) []sdk.Content {
	var out []sdk.Content
	for _, mt := range []string{"image/png", "image/jpeg"} {
		if b, err := base64.StdEncoding.DecodeString(d.Data[mt]); err == nil && len(b) > 0 {
			out = append(out, &sdk.ImageContent{Data: b, MIMEType: mt})
			break
		}
	}
	t, ok := d.Data["text/markdown"]
	if !ok && len(out) == 0 {
		t = d.Data["text/plain"]
	}
	if t != "" {
		if !strings.HasSuffix(t, "\n") {
			t += "\n"
		}
		out = append(out, &sdk.TextContent{Text: t})
	}
	return out
}

// sessionNote says what became of the session's state, if anything did.
func sessionNote(s *executor.SessionInfo) string {
	if s == nil {
		return ""
	}
	notes := []string{fmt.Sprintf("Session %s, call %d.", s.ID, s.Cell)}
	switch {
	case s.Fresh:
		notes = append(notes, "The session's earlier state could not be rebuilt: this call ran in a fresh session.")
	case s.Restored > 0:
		notes = append(notes, fmt.Sprintf("The session's state was rebuilt by re-running %d earlier calls.", s.Restored))
	}
	if s.Ended {
		notes = append(notes, "This call ended the session's process: the next call rebuilds its state from the earlier successful calls.")
	}
	return strings.Join(notes, " ")
}

// plain drops the console rendering's trailing newline.
func plain(s string) string { return strings.TrimRight(s, "\n") }

// escapePath makes a work-dir path a URI path.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
