package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runblock/runblock/internal/config"
)

// debianPython is the interpreter with Debian's scientific stack (.ci/run
// installs python3-matplotlib).
const debianPython = "/usr/bin/python3"

// TestMCPOverStdio drives `runblock mcp`, a subprocess of the built
// binary, with the SDK's own client over standard input and output: the
// tools, a print, a session kept across two calls and reset, a plot as
// an image, a timeout as a tool error, bad
// arguments refused while the server keeps serving, and a clean exit when
// the client closes standard input.
func TestMCPOverStdio(t *testing.T) {
	bin := runblockBinary(t)
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = t.TempDir() // no .env
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "RUNBLOCK_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	plot := exec.Command(debianPython, "-c", "import matplotlib").Run() == nil
	if plot {
		cmd.Env = append(cmd.Env, "RUNBLOCK_PYTHON="+debianPython)
	}
	cmd.Env = append(cmd.Env, "RUNBLOCK_ALLOW_UNISOLATED=1", "RUNBLOCK_TIMEOUT=20s", "RUNBLOCK_MEMORY=512MiB")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("runblock mcp ended with %v; stderr:\n%s", cmd.ProcessState, stderr.String())
		}
		if strings.Contains(stderr.String(), "level=ERROR") {
			t.Errorf("errors logged:\n%s", stderr.String())
		}
	}()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 2 {
		t.Fatalf("tools %+v, %v", tools, err)
	}
	i := slices.IndexFunc(tools.Tools, func(tool *sdk.Tool) bool { return tool.Name == "run_python" })
	if i < 0 || !slices.ContainsFunc(tools.Tools, func(tool *sdk.Tool) bool { return tool.Name == "reset_session" }) {
		t.Fatalf("tools %+v: want run_python and reset_session", tools.Tools)
	}
	if d := tools.Tools[i].Description; !strings.Contains(d, "20 s") || !strings.Contains(d, "512 MiB") || !strings.Contains(d, "Python 3.") || !strings.Contains(d, "session") {
		t.Errorf("description %q lacks the limits, the python or sessions", d)
	}
	callText := func(args map[string]any) (*sdk.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_python", Arguments: args})
		if err != nil {
			t.Fatalf("call %v: %v", args, err)
		}
		return res, res.Content[0].(*sdk.TextContent).Text
	}
	if res, text := callText(map[string]any{"code": "print(sum(range(10)))"}); res.IsError || !strings.HasPrefix(text, "45\nOK · ") {
		t.Errorf("print: isError %v, %q", res.IsError, text)
	}
	callText(map[string]any{"code": "x = 41", "session": "nb"})
	if res, text := callText(map[string]any{"code": "print(x + 1)", "session": "nb"}); res.IsError || !strings.HasPrefix(text, "42\nOK · ") || !strings.Contains(text, "Session nb, call 2.") {
		t.Errorf("the session's second call: isError %v, %q", res.IsError, text)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "reset_session", Arguments: map[string]any{"session": "nb"}}); err != nil || res.IsError {
		t.Errorf("reset_session: %+v, %v", res, err)
	}
	if res, text := callText(map[string]any{"code": "print('x' in globals())", "session": "nb"}); res.IsError || !strings.HasPrefix(text, "False\n") || !strings.Contains(text, "call 1.") {
		t.Errorf("after reset_session: isError %v, %q", res.IsError, text)
	}
	if res, text := callText(map[string]any{"code": "while True: pass", "timeout": 1}); !res.IsError || !strings.Contains(text, "Timed out after 1 s") {
		t.Errorf("timeout: isError %v, %q", res.IsError, text)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": []int{1}}}); err == nil && !res.IsError {
		t.Errorf("code as a list was accepted: %+v", res)
	}
	if res, text := callText(map[string]any{"code": "print('still here')"}); res.IsError || !strings.HasPrefix(text, "still here\n") {
		t.Errorf("after a bad call: isError %v, %q", res.IsError, text)
	}
	if !plot {
		t.Skipf("no plot: needs %s with matplotlib (apt-get install python3-matplotlib)", debianPython)
	}
	res, _ := callText(map[string]any{"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"})
	var png bool
	for _, c := range res.Content {
		if img, ok := c.(*sdk.ImageContent); ok {
			png = img.MIMEType == "image/png" && bytes.HasPrefix(img.Data, []byte("\x89PNG"))
		}
	}
	if res.IsError || !png {
		t.Errorf("plot: isError %v, no PNG image in %d contents", res.IsError, len(res.Content))
	}
}

// TestMCPOverHTTP drives `runblock executor`'s /mcp with the SDK's client
// over streamable HTTP: behind the API's token (a wrong one is refused), a
// run and a tool error, and the token never logged.
func TestMCPOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token = "mcp-test-token-0123456789abcdef"
	p := startExecutor(t, ctx, runblockBinary(t), "RUNBLOCK_CONCURRENCY=1", "RUNBLOCK_API_TOKEN="+token, "RUNBLOCK_TIMEOUT=10s")
	connect := func(tok string) (*sdk.ClientSession, error) {
		hc := &http.Client{Transport: bearer(tok)}
		return sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	}
	if cs, err := connect("wrong-token-0123456789abcdef"); err == nil {
		_ = cs.Close()
		t.Fatal("a wrong token connected")
	}
	cs, err := connect(token)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.logs.String())
	}
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(2**10)"}})
	if err != nil || res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, "1024\nOK · ") {
		t.Fatalf("run: %+v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "import sys; sys.exit(3)"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "exit code 3") {
		t.Fatalf("exit 3: %+v, %v", res, err)
	}
	if strings.Contains(p.logs.String(), token) {
		t.Error("the token reached the log")
	}
}

// bearer sends every request with a bearer token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPStdioAnswersEveryRequestAtTheEndOfInput: a client that writes its
// requests and closes standard input at once, without waiting, gets an
// answer to each (initialize and every tools/call) before `runblock mcp`
// exits; the calls of one session run in the order sent (reset_session
// between two cells).
func TestMCPStdioAnswersEveryRequestAtTheEndOfInput(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"x = 1","session":"s"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"reset_session","arguments":{"session":"s"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print('x' in globals())","session":"s"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(6 * 7)"}}}`,
	}, "\n") + "\n"
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if code := run(ctx, []string{"mcp"}, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "RUNBLOCK_POOL": "0"}, strings.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	answers := map[float64]string{}
	for line := range strings.Lines(stdout.String()) {
		var m struct {
			ID     float64         `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON-RPC: %q", line)
		}
		answers[m.ID] = string(m.Result) + string(m.Error)
	}
	for id, want := range map[float64]string{1: `"serverInfo"`, 2: `"success":true`, 3: `"ended":true`, 4: `"stdout":"False\n"`, 5: `"stdout":"42\n"`} {
		if !strings.Contains(answers[id], want) {
			t.Errorf("answer %v: %q, want %s; stderr:\n%s", id, answers[id], want, stderr.String())
		}
	}
}
