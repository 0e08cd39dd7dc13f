package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/mcp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// debianPython is the interpreter with Debian's scientific stack (.ci/run
// installs python3-numpy, python3-pandas, python3-matplotlib).
const debianPython = "/usr/bin/python3"

const testTimeout = 2 * time.Minute

// scheduler is a real sandbox behind a Scheduler, on debianPython when it
// has matplotlib (plot reports whether it does), else on python3.
func scheduler(t *testing.T) (sched *executor.Scheduler, plot bool) {
	t.Helper()
	python := ""
	if err := exec.Command(debianPython, "-c", "import matplotlib").Run(); err == nil {
		python, plot = debianPython, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Python: python, Timeout: 30 * time.Second, MemoryBytes: 512 << 20, MaxFiles: 10, MaxFilesBytes: 8 << 20, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	sched = executor.NewScheduler(ex, executor.Config{Concurrency: 2})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = sched.Close(ctx)
	})
	return sched, plot
}

// recorder records the users of the jobs it passes on.
type recorder struct {
	next  executor.Submitter
	mu    sync.Mutex
	users []string
}

func (r *recorder) Submit(ctx context.Context, job executor.Job) (executor.Result, error) {
	r.mu.Lock()
	r.users = append(r.users, job.User)
	r.mu.Unlock()
	return r.next.Submit(ctx, job)
}

// serveHTTP serves cfg over streamable HTTP behind a bearer token, as the
// executor does, and returns a client session of the SDK's own client.
func serveHTTP(t *testing.T, cfg mcp.Config, token string) *sdk.ClientSession {
	t.Helper()
	h := mcp.HTTPHandler(cfg, func(r *http.Request) string { return "token:" + r.Header.Get("X-Client") })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: headers{"Authorization": "Bearer " + token, "X-Client": "a"}}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// headers adds fixed headers to every request.
type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func call(t *testing.T, cs *sdk.ClientSession, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolRun, Arguments: args})
	if err != nil {
		t.Fatalf("call %v: %v", args, err)
	}
	return res
}

func text(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content: %+v", res)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("first content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func structured(t *testing.T, res *sdk.CallToolResult) mcp.RunOutput {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out mcp.RunOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return out
}

func TestRunPythonOverHTTP(t *testing.T) {
	sched, plot := scheduler(t)
	rec := &recorder{next: sched}
	cfg := mcp.Config{Limits: wire.Limits{Timeout: 10 * time.Second, MemoryBytes: 512 << 20, MaxCodeBytes: 64 << 10}, Scheduler: rec, MaxFiles: 10, MaxFilesBytes: 8 << 20, PythonVersion: "3.11.2", Packages: []string{"numpy 1.24.2"}, Version: "test"}
	cs := serveHTTP(t, cfg, "sekrit-token-0123456789")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	t.Run("list", func(t *testing.T) {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools.Tools) != 1 || tools.Tools[0].Name != mcp.ToolRun {
			t.Fatalf("tools = %+v, want only %s", tools.Tools, mcp.ToolRun)
		}
		d := tools.Tools[0].Description
		for _, want := range []string{"10 s", "512 MiB", "Python 3.11.2", "numpy 1.24.2", "No network"} {
			if !strings.Contains(d, want) {
				t.Errorf("description %q lacks %q", d, want)
			}
		}
		if tools.Tools[0].OutputSchema == nil {
			t.Error("no output schema")
		}
	})

	t.Run("print", func(t *testing.T) {
		res := call(t, cs, map[string]any{"code": "import sys\nprint(input() * 2)\nprint('warn', file=sys.stderr)", "stdin": "ab\n"})
		got := text(t, res)
		if res.IsError || !strings.HasPrefix(got, "abab\nwarn\nOK · ") {
			t.Fatalf("isError %v, text %q: want abab, warn, then the OK line", res.IsError, got)
		}
		out := structured(t, res)
		if !out.Success || out.ExitCode != 0 || out.Timeout || out.Stdout != "abab\n" {
			t.Errorf("structured %+v", out)
		}
	})

	t.Run("files", func(t *testing.T) {
		res := call(t, cs, map[string]any{
			"code":  "print(open('in.txt').read(), open('b.bin','rb').read())\nopen('out.csv','w').write('a,b\\n1,2\\n')",
			"files": []map[string]string{{"name": "in.txt", "content": "hello"}, {"name": "b.bin", "content": "AAE=", "encoding": "base64"}},
		})
		if res.IsError || !strings.HasPrefix(text(t, res), "hello b'\\x00\\x01'\n") {
			t.Fatalf("isError %v, text %q", res.IsError, text(t, res))
		}
		var found bool
		for _, c := range res.Content[1:] {
			if er, ok := c.(*sdk.EmbeddedResource); ok && strings.HasSuffix(er.Resource.URI, "/out.csv") {
				found = er.Resource.Text == "a,b\n1,2\n" && strings.HasPrefix(er.Resource.MIMEType, "text/csv")
			}
		}
		if !found {
			t.Errorf("out.csv did not come back as a text resource: %+v", res.Content)
		}
	})

	t.Run("values and displays in order", func(t *testing.T) {
		code := "class P:\n    def _repr_png_(self):\n        return b'\\x89PNG\\r\\n\\x1a\\nfake'\nprint('a')\ndisplay(1)\nprint('b')\ndisplay(P())\n6 * 7"
		res := call(t, cs, map[string]any{"code": code})
		var got []string
		for _, c := range res.Content {
			switch c := c.(type) {
			case *sdk.TextContent:
				got = append(got, c.Text)
			case *sdk.ImageContent:
				got = append(got, c.MIMEType+" "+strconv.Quote(string(c.Data)))
			}
		}
		want := []string{"a\n", "1\n", "b\n", `image/png "\x89PNG\r\n\x1a\nfake"`, "42\n"}
		if res.IsError || len(got) != len(want)+1 || !slices.Equal(got[:len(want)], want) || !strings.HasPrefix(got[len(want)], "OK · ") {
			t.Fatalf("isError %v, content %q, want %q then the OK line", res.IsError, got, want)
		}
		// The structured result holds the results as /v1/run's answer
		// does, their images left to the image content.
		var forms []string
		for _, d := range structured(t, res).Results {
			forms = append(forms, fmt.Sprintf("%v %s@%d", d.Value, strings.Join(slices.Sorted(maps.Keys(d.Data)), ","), d.At))
		}
		if want := []string{"false text/plain@2", "false text/plain@4", "true text/plain@4"}; !slices.Equal(forms, want) {
			t.Errorf("structured results %q, want %q", forms, want)
		}
	})

	t.Run("exception", func(t *testing.T) {
		res := call(t, cs, map[string]any{"code": "print('before')\n1/0"})
		got := text(t, res)
		if !res.IsError || !strings.Contains(got, "before\n") || !strings.HasSuffix(got, "Error · ZeroDivisionError: division by zero") {
			t.Fatalf("isError %v, text %q", res.IsError, got)
		}
		if out := structured(t, res); out.Success || out.ExitCode != 1 {
			t.Errorf("structured %+v", out)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		res := call(t, cs, map[string]any{"code": "import time\nprint('start', flush=True)\ntime.sleep(60)", "timeout": 0.5})
		got := text(t, res)
		if !res.IsError || !strings.Contains(got, "Timed out after 500 ms") {
			t.Fatalf("isError %v, text %q", res.IsError, got)
		}
		if out := structured(t, res); !out.Timeout {
			t.Errorf("structured %+v, want timeout", out)
		}
	})

	t.Run("bad arguments, then the next call works", func(t *testing.T) {
		for _, args := range []map[string]any{
			{"code": "print(1)", "timeout": "soon"},
			{"code": 42},
			{},
			{"code": "   "},
			{"code": "print(1)", "timeout": -1},
			{"code": strings.Repeat("#", 70<<10)},
			{"code": "print(1)", "files": []map[string]string{{"name": "../../etc", "content": "x"}, {"name": "etc", "content": "y"}}},
			{"code": "print(1)", "files": []map[string]string{{"name": "a", "content": "!!", "encoding": "base64"}}},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolRun, Arguments: args})
			cancel()
			if err == nil && !res.IsError {
				t.Errorf("%.80v: accepted: %+v", args, res)
			}
			if err == nil && len(res.Content) > 0 && strings.Contains(text(t, res), "panic") {
				t.Errorf("%.80v: %q", args, text(t, res))
			}
		}
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
			t.Error("an unknown tool was served")
		}
		if res := call(t, cs, map[string]any{"code": "print(6*7)"}); res.IsError || !strings.HasPrefix(text(t, res), "42\n") {
			t.Fatalf("after bad calls: isError %v, text %q", res.IsError, text(t, res))
		}
	})

	t.Run("plot", func(t *testing.T) {
		if !plot {
			t.Skipf("needs %s with matplotlib (apt-get install python3-matplotlib)", debianPython)
		}
		res := call(t, cs, map[string]any{"code": "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\nplt.show()"})
		if res.IsError {
			t.Fatalf("plot failed: %q", text(t, res))
		}
		var img *sdk.ImageContent
		for _, c := range res.Content {
			if i, ok := c.(*sdk.ImageContent); ok {
				img = i
			}
		}
		if img == nil || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("no PNG image in %+v", res.Content)
		}
	})

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, u := range rec.users {
		if u != "token:a" {
			t.Fatalf("a run was a job of %q, want the client's token:a", u)
		}
	}
	if len(rec.users) == 0 {
		t.Fatal("no run went through the scheduler")
	}
}

// TestSchedulerErrorsAreToolErrors checks that a run the scheduler refuses
// (rate limits, a full queue) is a tool error that says what every front
// says (wire.FailureOf) and when to try again, and that the server keeps
// serving.
func TestSchedulerErrorsAreToolErrors(t *testing.T) {
	refuse := submitFunc(func(context.Context, executor.Job) (executor.Result, error) {
		return executor.Result{}, &executor.Error{Code: executor.ErrBusy, RetryAfter: 3 * time.Second}
	})
	cs := serveHTTP(t, mcp.Config{Limits: wire.Limits{Timeout: time.Second, MemoryBytes: 64 << 20}, Scheduler: refuse}, "tok-abcdefghijklmnop")
	for range 2 {
		res := call(t, cs, map[string]any{"code": "print(1)"})
		if got := text(t, res); !res.IsError || got != "too many snippets are waiting (try again in 3 s)" {
			t.Fatalf("isError %v, text %q", res.IsError, got)
		}
	}
}

type submitFunc func(context.Context, executor.Job) (executor.Result, error)

func (f submitFunc) Submit(ctx context.Context, job executor.Job) (executor.Result, error) {
	return f(ctx, job)
}
