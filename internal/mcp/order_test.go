package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/mcp"
)

// sessionsFunc is a fake session manager.
type sessionsFunc func(ctx context.Context, id string) (bool, error)

func (f sessionsFunc) EndSession(ctx context.Context, id string) (bool, error) { return f(ctx, id) }

// sentTransport tells when its connection has written a call of a given
// JSON-RPC id: the client's side of a pipe, so that the test knows a call
// was sent before it sends the next one.
type sentTransport struct {
	sdk.Transport
	sent func(jsonrpc.ID)
}

func (t sentTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return sentConn{c, t.sent}, err
}

type sentConn struct {
	sdk.Connection
	sent func(jsonrpc.ID)
}

func (c sentConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.sent(req.ID)
	}
	return err
}

// TestPipelinedCallsOfASessionRunInOrder: a client that sends
// reset_session and then run_python for one session without waiting for
// the first answer (the SDK's own client, calls on two goroutines) gets
// them run in that order: the run starts only once the reset is done,
// while a call of another session runs meanwhile.
func TestPipelinedCallsOfASessionRunInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var mu sync.Mutex
	var events []string
	event := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	resetting, release := make(chan struct{}), make(chan struct{})
	otherRan := make(chan struct{})
	sessions := sessionsFunc(func(ctx context.Context, id string) (bool, error) {
		event("reset " + id)
		close(resetting)
		select {
		case <-release:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		event("reset done")
		return true, nil
	})
	sched := submitFunc(func(_ context.Context, job executor.Job) (executor.Result, error) {
		event("run " + job.Request.Session.ID + ": " + job.Request.Code)
		if strings.HasSuffix(job.Request.Session.ID, ":other") {
			close(otherRan)
		}
		return executor.Result{Success: true}, nil
	})
	st, ct := sdk.NewInMemoryTransports()
	srv := mcp.NewServer(mcp.Config{Limits: wire.Limits{Timeout: 10e9, MemoryBytes: 256 << 20}, Scheduler: sched, Sessions: sessions}, "u")
	ss, err := srv.Connect(ctx, mcp.Ordered(st), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ss.Close() }()
	sent := make(chan jsonrpc.ID, 8)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, sentTransport{ct, func(id jsonrpc.ID) { sent <- id }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	<-sent // initialize

	var wg sync.WaitGroup
	callAsync := func(name string, args map[string]any) {
		wg.Go(func() {
			if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args}); err != nil || res.IsError {
				t.Errorf("%s %v: %v %+v", name, args, err, res)
			}
		})
		<-sent
	}
	callAsync(mcp.ToolReset, map[string]any{"session": "nb"})
	<-resetting
	callAsync(mcp.ToolRun, map[string]any{"code": "print(x)", "session": "nb"})
	// A call of another session is not held behind the reset; once it has
	// run, the run of nb, sent before it, was read too.
	callAsync(mcp.ToolRun, map[string]any{"code": "1", "session": "other"})
	<-otherRan
	close(release)
	wg.Wait()
	want := []string{"reset mcp:u:nb", "run mcp:u:other: 1", "reset done", "run mcp:u:nb: print(x)"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(events, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

// TestRunPythonAnnotations: run_python runs arbitrary code and changes a
// session's state: not read-only, destructive, in a closed world (no
// network); a client that auto-approves read-only tools must ask first.
func TestRunPythonAnnotations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	st, ct := sdk.NewInMemoryTransports()
	srv := mcp.NewServer(mcp.Config{Limits: wire.Limits{Timeout: 10e9, MemoryBytes: 256 << 20}, Scheduler: submitFunc(nil)}, "u")
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ss.Close() }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != mcp.ToolRun {
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("run_python's annotations %s", fmt.Sprintf("%+v", a))
		}
		return
	}
	t.Fatal("no run_python")
}

// TestParallelHTTPCallsOfASessionRunInOrder: over streamable HTTP, where
// each call is a POST of its own, a run_python that arrives while a
// reset_session of its session is running waits for it; another
// session's call does not.
func TestParallelHTTPCallsOfASessionRunInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var mu sync.Mutex
	var events []string
	event := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	resetting, release := make(chan struct{}), make(chan struct{})
	sessions := sessionsFunc(func(ctx context.Context, id string) (bool, error) {
		event("reset " + id)
		close(resetting)
		select {
		case <-release:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		event("reset done")
		return true, nil
	})
	sched := submitFunc(func(_ context.Context, job executor.Job) (executor.Result, error) {
		event("run " + job.Request.Session.ID)
		return executor.Result{Success: true}, nil
	})
	// The server tells when the run of nb has arrived.
	arrived := make(chan struct{})
	h := mcp.HTTPHandler(mcp.Config{Limits: wire.Limits{Timeout: 10e9, MemoryBytes: 256 << 20}, Scheduler: sched, Sessions: sessions}, func(*http.Request) string { return "token:a" })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if strings.Contains(string(body), `"print(x)"`) {
			close(arrived)
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	var wg sync.WaitGroup
	ran := make(chan string, 2)
	callAsync := func(name string, args map[string]any) {
		wg.Go(func() {
			if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args}); err != nil || res.IsError {
				t.Errorf("%s %v: %v %+v", name, args, err, res)
			}
			ran <- fmt.Sprint(args["session"])
		})
	}
	callAsync(mcp.ToolReset, map[string]any{"session": "nb"})
	<-resetting
	callAsync(mcp.ToolRun, map[string]any{"code": "print(x)", "session": "nb"})
	<-arrived
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolRun, Arguments: map[string]any{"code": "1", "session": "other"}}); err != nil {
		t.Fatal(err)
	}
	// nb's run, arrived before other's call, has had other's whole call
	// to run if nothing held it.
	select {
	case s := <-ran:
		t.Errorf("the call of %s finished while the reset of nb ran", s)
	default:
	}
	close(release)
	wg.Wait()
	want := []string{"reset mcp:token:a:nb", "run mcp:token:a:other", "reset done", "run mcp:token:a:nb"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(events, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}
