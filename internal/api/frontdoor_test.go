package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/mcp"
)

// frontLimits are the limits of every front in the front-door tests.
var frontLimits = wire.Limits{Timeout: 2 * time.Second, MemoryBytes: 256 << 20, MaxCodeBytes: 1000}

// front is one way in: it sends a run of code with files, or raw (for
// MCP, any raw sends arguments of the wrong type), and says what the
// client got: the status (0 for MCP, which has none), the message shown,
// the run's stdout, and whether it failed.
type front struct {
	name string
	run  func(t *testing.T, code string, files []wire.File, raw string) (status int, message, stdout string, failed bool)
}

// runFailures are the failures of runnerErrors, by the source that asks
// for each.
var runFailures = map[string]error{
	"busy":        &executor.Error{Code: executor.ErrBusy, Message: "the queue is full (3 waiting)", RetryAfter: 2 * time.Second},
	"unavailable": &executor.Error{Code: executor.ErrUnavailable, Message: "no usable python"},
	"shutdown":    &executor.Error{Code: executor.ErrShutdown, Message: "the executor is shutting down"},
	"internal":    errors.New("fork /secret/path: no memory"),
}

// runnerErrors is a runner that fails a snippet whose source names a
// failure (runFailures), as a sandbox or a scheduler would, and otherwise
// answers with the files it got.
func runnerErrors() runnerFunc {
	return canaryOK(func(_ context.Context, req executor.Request) (executor.Result, error) {
		src := req.Code
		if req.Launch == executor.LaunchFile {
			src = string(req.Files[0].Content)
		}
		if err, ok := runFailures[src]; ok {
			return executor.Result{}, err
		}
		var out strings.Builder
		for _, f := range req.Files {
			fmt.Fprintf(&out, "%s=%s;", f.Path, f.Content)
		}
		return executor.Result{Success: true, Stdout: out.String()}, nil
	})
}

// fronts opens one service with MCP at /mcp and an MCP server as `runblock
// mcp` serves it (in memory in place of standard input and output), on
// one scheduler, and returns every front.
func fronts(t *testing.T) []front {
	s := open(t, runnerErrors(), executor.Config{Concurrency: 1}, api.Config{Limits: frontLimits, MCP: &mcp.Config{}})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil)
	overHTTP, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = overHTTP.Close() })
	sched := executor.NewScheduler(runnerErrors(), executor.Config{Concurrency: 1, MaxPerUser: 100})
	t.Cleanup(func() { _ = sched.Close(context.Background()) })
	st, ct := sdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(mcp.Config{Scheduler: sched, Limits: frontLimits}, "mcp:stdio").Connect(ctx, mcp.Ordered(st), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	overStdio, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = overStdio.Close() })

	httpFront := func(path string, body func(code string, files []wire.File) any, message func(map[string]any) string) func(*testing.T, string, []wire.File, string) (int, string, string, bool) {
		return func(t *testing.T, code string, files []wire.File, raw string) (int, string, string, bool) {
			if raw == "" {
				b, _ := json.Marshal(body(code, files))
				raw = string(b)
			}
			resp := post(t, s.url+path, raw, "Content-Type", "application/json")
			m := resp.json(t)
			out, _ := m["stdout"].(string)
			if run, ok := m["run"].(map[string]any); ok {
				out, _ = run["stdout"].(string)
			}
			return resp.status, message(m), out, resp.status != http.StatusOK
		}
	}
	mcpFront := func(cs *sdk.ClientSession) func(*testing.T, string, []wire.File, string) (int, string, string, bool) {
		return func(t *testing.T, code string, files []wire.File, raw string) (int, string, string, bool) {
			args := map[string]any{"code": code}
			var fs []map[string]any
			for _, f := range files {
				fs = append(fs, map[string]any{"name": f.Path, "content": f.Content, "encoding": f.Encoding})
			}
			if fs != nil {
				args["files"] = fs
			}
			if raw != "" {
				args = map[string]any{"code": 5}
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolRun, Arguments: args})
			if err != nil {
				return 0, err.Error(), "", true
			}
			var text []string
			for _, c := range res.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					text = append(text, tc.Text)
				}
			}
			var out struct {
				Stdout string `json:"stdout"`
			}
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				_ = json.Unmarshal(b, &out)
			}
			return 0, strings.Join(text, "\n"), out.Stdout, res.IsError
		}
	}
	return []front{
		{"native", httpFront("/v1/run", func(code string, files []wire.File) any {
			return wire.RunRequest{Code: code, Files: files}
		}, func(m map[string]any) string { s, _ := m["error"].(string); return s })},
		{"snekbox", httpFront("/eval", func(code string, files []wire.File) any {
			return map[string]any{"input": code, "files": files}
		}, func(m map[string]any) string { s, _ := m["description"].(string); return s })},
		{"piston", httpFront("/api/v2/execute", func(code string, files []wire.File) any {
			fs := []map[string]string{{"name": "main.py", "content": code}}
			for _, f := range files {
				fs = append(fs, map[string]string{"name": f.Path, "content": f.Content, "encoding": f.Encoding})
			}
			return map[string]any{"language": "python", "version": "3", "files": fs}
		}, func(m map[string]any) string { s, _ := m["message"].(string); return s })},
		{"mcp over http", mcpFront(overHTTP)},
		{"mcp over stdio", mcpFront(overStdio)},
	}
}

// TestFrontsAnswerAlike: the same failure answers alike in every front
// (native, snekbox, Piston, MCP over HTTP and over standard input and
// output): the same status where there is one, and the message of
// wire.FailureOf, with when to try again where no header says it.
func TestFrontsAnswerAlike(t *testing.T) {
	manyFiles := make([]wire.File, wire.MaxInputFiles+1)
	for i := range manyFiles {
		manyFiles[i] = wire.File{Path: fmt.Sprintf("f%d", i)}
	}
	big := strings.Repeat("#", int(frontLimits.MaxCodeBytes)+1)
	for _, tc := range []struct {
		name   string
		code   string
		files  []wire.File
		raw    map[string]string // by front, a body that is not a run of code; "" for MCP's arguments of the wrong type
		status int
		// message is what is shown: a client's mistake in full; "" where
		// a front's protocol says it in its own words. A runner's
		// failure (runFailures) is shown as wire.FailureOf words it.
		message string
	}{
		{"not a request", "", nil, map[string]string{"native": `{"code": 5}`, "snekbox": `{"input": 5}`, "piston": `{"language": 5}`, "mcp over http": "", "mcp over stdio": ""},
			http.StatusBadRequest, ""},
		{"unknown language or version", "", nil, map[string]string{"snekbox": `{"input": "1", "executable_path": "/usr/bin/ruby"}`,
			"piston": `{"language": "python", "version": "2.7", "files": [{"content": "1"}]}`}, http.StatusBadRequest, ""},
		{"code too big", big, nil, nil, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("code, stdin and files are %d bytes, over the limit of %d bytes", len(big), frontLimits.MaxCodeBytes)},
		{"too many files", "1", manyFiles, nil, http.StatusBadRequest, fmt.Sprintf("%d files, over the limit of %d", len(manyFiles), wire.MaxInputFiles)},
		{"bad base64", "1", []wire.File{{Path: "a.bin", Content: "!!!", Encoding: "base64"}}, nil, http.StatusBadRequest, "files[0].content: not valid base64"},
		{"busy", "busy", nil, nil, http.StatusTooManyRequests, ""},
		{"unavailable", "unavailable", nil, nil, http.StatusServiceUnavailable, ""},
		{"shutdown", "shutdown", nil, nil, http.StatusServiceUnavailable, ""},
		{"internal", "internal", nil, nil, http.StatusInternalServerError, ""},
	} {
		for _, f := range fronts(t) {
			raw, ok := tc.raw[f.name]
			if tc.raw != nil && !ok {
				continue // not a failure this front can meet
			}
			if ok && raw == "" {
				raw = "wrong type"
			}
			status, message, _, failed := f.run(t, tc.code, tc.files, raw)
			if !failed {
				t.Errorf("%s, %s: did not fail", tc.name, f.name)
				continue
			}
			if status != 0 && status != tc.status {
				t.Errorf("%s, %s: status %d, want %d", tc.name, f.name, status, tc.status)
			}
			want := tc.message
			if err, ok := runFailures[tc.code]; ok {
				if want = wire.FailureOf(err).Message; status == 0 {
					want = wire.FailureOf(err).RetryText()
				}
			}
			if want == "" {
				continue
			}
			if f.name == "piston" {
				// Piston's first file is the program.
				want = strings.Replace(want, "files[0]", "files[1]", 1)
				want = strings.Replace(want, fmt.Sprintf("%d files", len(manyFiles)), fmt.Sprintf("%d files", len(manyFiles)+1), 1)
			}
			if message != want {
				t.Errorf("%s, %s: message %q, want %q", tc.name, f.name, message, want)
			}
		}
	}
}

// TestFrontsTakeTextFiles: every front takes a file given as text, and
// snekbox's base64 by default.
func TestFrontsTakeTextFiles(t *testing.T) {
	for _, f := range fronts(t) {
		for _, file := range []wire.File{
			{Path: "a.txt", Content: "héllo", Encoding: "text"},
			{Path: "a.txt", Content: base64.StdEncoding.EncodeToString([]byte("héllo")), Encoding: "base64"},
		} {
			_, message, stdout, failed := f.run(t, "print(1)", []wire.File{file}, "")
			if failed || !strings.Contains(stdout, "a.txt=héllo;") {
				t.Errorf("%s, a %s file: failed %v, stdout %q, message %q", f.name, file.Encoding, failed, stdout, message)
			}
		}
	}
}

// TestBodyCapIsTheLimits: the HTTP body cap of every endpoint, MCP's
// too, is the Limits' (Limits.BodyBytes): a body one byte over it is
// refused, one at it is read.
func TestBodyCapIsTheLimits(t *testing.T) {
	s := open(t, runnerErrors(), executor.Config{Concurrency: 1}, api.Config{Limits: frontLimits, MCP: &mcp.Config{}})
	capBytes := frontLimits.BodyBytes()
	pad := func(n int64) string {
		// A JSON object of exactly n bytes: {"code":"1","x":"###"}.
		head := `{"code":"1","x":"`
		return head + strings.Repeat("#", int(n)-len(head)-2) + `"}`
	}
	for _, path := range []string{"/v1/run", "/eval", "/api/v2/execute"} {
		resp := post(t, s.url+path, pad(capBytes+1), "Content-Type", "application/json")
		if resp.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(resp.body), fmt.Sprint(capBytes)) {
			t.Errorf("%s: a body over %d bytes: status %d %s", path, capBytes, resp.status, resp.body)
		}
		if resp := post(t, s.url+path, pad(capBytes), "Content-Type", "application/json"); resp.status == http.StatusRequestEntityTooLarge {
			t.Errorf("%s: a body of %d bytes refused as too large: %s", path, capBytes, resp.body)
		}
	}
	mcpPost := func(n int64) response {
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"1"}},"x":"`
		return post(t, s.url+"/mcp", call+strings.Repeat("#", int(n)-len(call)-2)+`"}`,
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-06-18")
	}
	if resp := mcpPost(capBytes + 1); resp.status != http.StatusRequestEntityTooLarge {
		t.Errorf("/mcp: a body over %d bytes: status %d %s", capBytes, resp.status, resp.body)
	}
	if resp := mcpPost(capBytes); resp.status == http.StatusRequestEntityTooLarge {
		t.Errorf("/mcp: a body of %d bytes refused as too large: %s", capBytes, resp.body)
	}
}
