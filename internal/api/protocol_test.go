package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/eventually"
)

// TestReadyzFollowsTheSandbox: while the sandbox says it is not ready (its
// fork server down), /readyz answers 503; once it is again, 200.
func TestReadyzFollowsTheSandbox(t *testing.T) {
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		return executor.Result{Success: true}, nil
	})
	var down atomic.Bool
	sched := executor.NewScheduler(r, executor.Config{})
	s := api.NewService(api.ServiceConfig{Addr: "127.0.0.1:0", Runner: r, Scheduler: sched, Ready: func() error {
		if down.Load() {
			return errors.New("the fork server is down")
		}
		return nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sched.Close(ctx)
		_ = s.Close(ctx)
	})
	url := "http://" + s.Addr() + "/readyz"
	for _, tt := range []struct {
		down bool
		want int
	}{{false, http.StatusOK}, {true, http.StatusServiceUnavailable}, {false, http.StatusOK}} {
		down.Store(tt.down)
		if got := do(t, http.MethodGet, url, "").status; got != tt.want {
			t.Errorf("sandbox down %v: /readyz %d, want %d", tt.down, got, tt.want)
		}
	}
}

// TestInputPathsAreClientErrors: an input file path the sandbox refuses is
// a 400 naming the field on all three APIs, logged at most as debug, and
// nothing runs.
func TestInputPathsAreClientErrors(t *testing.T) {
	var runs atomic.Int32
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		runs.Add(1)
		return executor.Result{Success: true}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{})
	quote := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	bad := [][]string{
		{"a\tb"}, {`a\b`}, {" lead"}, {strings.Repeat("n", 300)}, {"1/2/3/4/5/6/7/8/9"},
		{"a", "a"}, {"a", "a/b"}, {"/abs"}, {"../up"},
	}
	for _, paths := range bad {
		var native, snekbox, piston []string
		piston = append(piston, `{"content":"1"}`)
		for _, p := range paths {
			native = append(native, `{"path":`+quote(p)+`,"content":"x"}`)
			snekbox = append(snekbox, `{"path":`+quote(p)+`,"content":"eA=="}`)
			piston = append(piston, `{"name":`+quote(p)+`,"content":"x"}`)
		}
		at := len(paths) - 1 // the bad one is the last
		for _, c := range []struct{ url, body, field string }{
			{"/v1/run", `{"code":"1","files":[` + strings.Join(native, ",") + `]}`, fmt.Sprintf("files[%d].path", at)},
			{"/eval", `{"input":"1","files":[` + strings.Join(snekbox, ",") + `]}`, fmt.Sprintf("files[%d].path", at)},
			{"/api/v2/execute", `{"language":"python","version":"*","files":[` + strings.Join(piston, ",") + `]}`, fmt.Sprintf("files[%d].name", at+1)},
		} {
			resp := post(t, s.url+c.url, c.body)
			if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), c.field) {
				t.Errorf("%s with files %q: %d %s, want 400 naming %s", c.url, paths, resp.status, resp.body, c.field)
			}
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("%d runs of requests with bad input paths", n)
	}
	if strings.Contains(s.log.String(), "level=ERROR") {
		t.Errorf("client errors logged as errors:\n%s", s.log.String())
	}
}

// TestUnreadAnswersAreFreed: clients that never read their answer do not
// pin it: each answer has a write deadline (short here), past which its
// connection is closed and its memory freed, and what the answers pin
// stays within their budget meanwhile (the default 64 MiB): the results
// waiting for room count, as no run starts while the budget is full, and
// the files go out in base64 as they are written, not encoded in memory.
// Sixteen real TCP clients on 127.0.0.1 send a run that writes an 8 MiB
// file and never read; without the gate and the streamed files the heap
// grew by 157 MiB.
func TestUnreadAnswersAreFreed(t *testing.T) {
	const clients, size = 16, 8 << 20
	r := canaryOK(func(_ context.Context, req executor.Request) (executor.Result, error) {
		if req.Code == "1" {
			return executor.Result{Success: true}, nil
		}
		content := make([]byte, size) // a file of its own, as a run's
		for i := range content {
			content[i] = byte(i)
		}
		return executor.Result{Success: true, Files: []executor.File{{Path: "big.bin", Size: size, Content: content}}}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 2, QueueSize: 4 * clients},
		api.Config{AnswerGrace: 300 * time.Millisecond, AnswerRate: 1 << 40})
	heap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	before := heap()
	addr := strings.TrimPrefix(s.url, "http://")
	body := `{"code":"open('big.bin', 'wb').write(bytes(8388608))"}`
	for range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// A small receive buffer: the answer stays in the server.
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4 << 10)
		}
		fmt.Fprintf(c, "POST /v1/run HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	}
	var peak, now int64
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// Sampled every 20 ms: each sample is a whole garbage collection.
	if !eventually.Every(ctx, 20*time.Millisecond, func() bool {
		now = heap()
		peak = max(peak, now)
		return strings.Count(s.log.String(), "the client did not take its answer")+strings.Count(s.log.String(), "found no room") == clients &&
			now-before < 16<<20
	}) {
		t.Fatalf("the heap stayed at %d MiB (from %d MiB) with %d clients not reading", now>>20, before>>20, clients)
	}
	t.Logf("heap: %d MiB before, %d MiB at most, %d MiB once the deadlines passed", before>>20, peak>>20, heap()>>20)
	if peak-before >= 100<<20 {
		t.Errorf("the heap grew by %d MiB with 64 MiB of answers allowed in flight", (peak-before)>>20)
	}
	if resp := post(t, s.url+"/v1/run", `{"code":"1"}`); resp.status != http.StatusOK {
		t.Errorf("a client that reads: %d", resp.status)
	}
	// The server's own write timeout is lifted for the wait in the queue,
	// and the answer's deadline set, on the connection itself.
	for _, failed := range []string{"clearing write deadline", "setting the answer's write deadline"} {
		if strings.Contains(s.log.String(), failed) {
			t.Errorf("%s failed:\n%s", failed, s.log.String())
		}
	}
}

// TestLimitIsWhatItSays: a request within the API's MaxCodeBytes (code,
// stdin and files) runs on an executor whose own limit is the same: the
// launcher is the sandbox's own and counts for nothing, and files and
// arguments go to the sandbox once, not twice.
func TestLimitIsWhatItSays(t *testing.T) {
	const limit = 64 << 10
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Timeout: 5 * time.Second, MaxCodeBytes: limit, AllowUnisolated: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	s := open(t, ex, executor.Config{Concurrency: 1}, api.Config{Limits: wire.Limits{Timeout: 5 * time.Second, MaxCodeBytes: limit}})
	code := "import sys\nprint(sys.argv, len(open('data/in.txt').read()))\n#" + strings.Repeat("c", 30<<10)
	body, _ := json.Marshal(wire.RunRequest{Code: code, Args: []string{"a", "b"},
		Files: []wire.File{{Path: "data/in.txt", Content: strings.Repeat("d", limit-len(code)-100)}}, Stdin: strings.Repeat("s", 99)})
	m := post(t, s.url+"/v1/run", string(body)).json(t)
	want := fmt.Sprintf("['-c', 'a', 'b'] %d\n", limit-len(code)-100)
	if m["success"] != true || m["stdout"] != want {
		t.Fatalf("a request within the limit: %v, want stdout %q", m, want)
	}
	files, _ := m["files"].([]any)
	if len(files) != 0 {
		t.Errorf("the input file came back as written: %v", files)
	}
}
