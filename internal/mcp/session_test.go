package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/mcp"
)

// sessionServer serves run_python and reset_session over HTTP with a
// session manager in front of a real sandbox.
func sessionServer(t *testing.T) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	m := session.New(ex, ex, session.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	sched := executor.NewScheduler(m, executor.Config{Concurrency: 2})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = sched.Close(ctx)
	})
	return serveHTTP(t, mcp.Config{Limits: wire.Limits{Timeout: 10 * time.Second, MemoryBytes: 256 << 20}, Scheduler: sched, Sessions: m}, "tok-abcdefghijklmnop")
}

func TestRunPythonKeepsASessionAcrossCalls(t *testing.T) {
	cs := sessionServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == mcp.ToolRun && !strings.Contains(tool.Description, "same session id") {
			t.Errorf("run_python's description does not explain sessions: %s", tool.Description)
		}
	}
	if strings.Join(names, ",") != "reset_session,run_python" && strings.Join(names, ",") != "run_python,reset_session" {
		t.Errorf("tools %v", names)
	}

	call(t, cs, map[string]any{"code": "import math\nr = 2", "session": "nb"})
	res := call(t, cs, map[string]any{"code": "print(round(math.pi * r * r, 2))", "session": "nb"})
	out := structured(t, res)
	if res.IsError || out.Stdout != "12.57\n" || out.Session == nil || out.Session.Cell != 2 || out.Session.ID != "nb" {
		t.Fatalf("second call: isError %v, %+v (session %+v)", res.IsError, out, out.Session)
	}
	if got := text(t, res); !strings.Contains(got, "Session nb, call 2.") {
		t.Errorf("the text does not say the call's place: %q", got)
	}
	alone := structured(t, call(t, cs, map[string]any{"code": "print('r' in globals())"}))
	if alone.Stdout != "False\n" || alone.Session != nil {
		t.Errorf("a call without a session saw %q (%+v)", alone.Stdout, alone.Session)
	}

	reset, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolReset, Arguments: map[string]any{"session": "nb"}})
	if err != nil || reset.IsError {
		t.Fatalf("reset_session: %v, %+v", err, reset)
	}
	raw, _ := json.Marshal(reset.StructuredContent)
	if !strings.Contains(string(raw), `"ended":true`) {
		t.Errorf("reset_session's result %s", raw)
	}
	res = call(t, cs, map[string]any{"code": "print('r' in globals())", "session": "nb"})
	if out := structured(t, res); out.Stdout != "False\n" || out.Session.Cell != 1 {
		t.Errorf("after reset: %q, %+v", out.Stdout, out.Session)
	}
	again, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolReset, Arguments: map[string]any{"session": "never"}})
	if err != nil || !strings.Contains(text(t, again), "no session never") {
		t.Errorf("reset of an unknown session: %v, %+v", err, again)
	}
	bad := call(t, cs, map[string]any{"code": "print(1)", "session": "a b"})
	if !bad.IsError || !strings.Contains(text(t, bad), "session") {
		t.Errorf("a bad session id: %+v", bad)
	}
	if res := call(t, cs, map[string]any{"code": "print(1)", "session": "nb"}); res.IsError {
		t.Errorf("the server stopped serving after a bad call: %+v", res)
	}
}
