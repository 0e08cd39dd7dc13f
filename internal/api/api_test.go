package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/eventually"
	"github.com/runblock/runblock/internal/httpserver"
	"github.com/runblock/runblock/internal/syncbuf"
)

// TestMain checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testTimeout = 60 * time.Second

// runnerFunc is a fake sandbox.
type runnerFunc func(ctx context.Context, req executor.Request) (executor.Result, error)

func (f runnerFunc) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	return f(ctx, req)
}

// canaryOK answers the service's canary run like python 3.12.1 would, and
// hands every other run to next.
func canaryOK(next runnerFunc) runnerFunc {
	return func(ctx context.Context, req executor.Request) (executor.Result, error) {
		if strings.Contains(req.Code, "sys.version_info[:3]") {
			return executor.Result{Success: true, Stdout: "3.12.1\n"}, nil
		}
		return next(ctx, req)
	}
}

type service struct {
	*api.Service
	url string
	log *syncbuf.Buffer
}

// open starts a Service on 127.0.0.1 in front of r, closed at cleanup.
func open(t testing.TB, r executor.Runner, sc executor.Config, ac api.Config) *service {
	t.Helper()
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if sc.MaxPerUser == 0 {
		sc.MaxPerUser = 1000
	}
	// As `runblock executor` wires it: the answers' budget gates the runs.
	if ac.Answers == nil {
		ac.Answers = api.NewAnswers(ac.AnswerBytes)
	}
	sched := executor.NewScheduler(ac.Answers.Gate(r), sc)
	if ac.Timeout == 0 {
		ac.Timeout = 2 * time.Second
	}
	if ac.MemoryBytes == 0 {
		ac.MemoryBytes = 256 << 20
	}
	if ac.MaxCodeBytes == 0 {
		ac.MaxCodeBytes = 64 << 10
	}
	s := api.NewService(api.ServiceConfig{
		Addr:      "127.0.0.1:0",
		Runner:    r,
		Scheduler: sched,
		Load: func() httpserver.Load {
			st := sched.Stats()
			return httpserver.Load{Capacity: sc.Concurrency, Running: st.Running, Queued: st.Queued, QueueSize: sc.QueueSize}
		},
		API:       ac,
		Isolation: "test",
		Logger:    log,
	})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := s.Open(ctx); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := sched.Close(ctx); err != nil {
			t.Errorf("scheduler close: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			t.Errorf("service close: %v", err)
		}
	})
	return &service{Service: s, url: "http://" + s.Addr(), log: logs}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body %q is not a JSON object: %v", r.status, r.body, err)
	}
	return m
}

// post sends body as it is, with no Content-Type unless headers say so.
func post(t *testing.T, url, body string, headers ...string) response {
	t.Helper()
	return do(t, http.MethodPost, url, body, headers...)
}

func do(t *testing.T, method, url, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return send(t, req)
}

// send sends req and reads its answer.
func send(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestNativeRequestReachesRunner checks the native body's mapping to the
// executor's request: limits capped by the server's, defaults when absent.
func TestNativeRequestReachesRunner(t *testing.T) {
	got := make(chan executor.Request, 1)
	r := canaryOK(func(_ context.Context, req executor.Request) (executor.Result, error) {
		got <- req
		return executor.Result{Success: true, Stdout: "hi\n", TimeoutLimit: req.Timeout}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{Limits: wire.Limits{Timeout: 2 * time.Second, MemoryBytes: 128 << 20}})
	for _, tc := range []struct {
		body    string
		timeout time.Duration
		memory  int64
		colour  bool
	}{
		{`{"code":"print('hi')","stdin":"x"}`, 0, 0, false},
		{`{"code":"print('hi')","stdin":"x","timeout":1.5,"memory":67108864}`, 1500 * time.Millisecond, 64 << 20, false},
		{`{"code":"print('hi')","stdin":"x","timeout":"500ms"}`, 500 * time.Millisecond, 0, false},
		{`{"code":"print('hi')","stdin":"x","timeout":60,"memory":1000000000000}`, 2 * time.Second, 128 << 20, false},
		{`{"code":"print('hi')","stdin":"x","colour":true}`, 0, 0, true},
	} {
		resp := post(t, s.url+"/v1/run", tc.body)
		if resp.status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", tc.body, resp.status, resp.body)
		}
		req := <-got
		if req.Code != "print('hi')" || req.Stdin != "x" || req.Timeout != tc.timeout || req.MemoryBytes != tc.memory || req.Colour != tc.colour {
			t.Errorf("%s: runner got %+v", tc.body, req)
		}
		m := resp.json(t)
		for _, field := range []string{"success", "stdout", "stderr", "error", "timeout", "memory_exceeded", "exit_code", "duration_ms", "timeout_limit_ms"} {
			if _, ok := m[field]; !ok {
				t.Errorf("%s: response lacks %q: %s", tc.body, field, resp.body)
			}
		}
		if m["stdout"] != "hi\n" || m["success"] != true {
			t.Errorf("%s: response %s", tc.body, resp.body)
		}
	}
}

func TestBadRequests(t *testing.T) {
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		t.Error("a bad request reached the runner")
		return executor.Result{}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{Limits: wire.Limits{MaxCodeBytes: 100}})
	for _, tc := range []struct {
		path, body string
		status     int
		message    string
	}{
		{"/v1/run", ``, 400, "empty"},
		{"/v1/run", `{"code":`, 400, "not valid JSON"},
		{"/v1/run", `[1]`, 400, "must be a JSON object"},
		{"/v1/run", `{"code":1}`, 400, `"code" must be a string`},
		{"/v1/run", `{"code":"1","cdoe":"2"}`, 400, `unknown field "cdoe"`},
		{"/v1/run", `{"code":"1"} {}`, 400, "one JSON object"},
		{"/v1/run", `{"code":"print(1)","code":"print(2)"}`, 400, `key "code" is given twice`},
		{"/v1/run", `{"code":"1","files":[{"path":"a","content":"","path":"b"}]}`, 400, `key "path" is given twice`},
		{"/eval", `{"input":"print(1)","input":"print(2)"}`, 400, `key "input" is given twice`},
		{"/v1/run", `{"code":"1","timeout":-1}`, 400, "timeout"},
		{"/v1/run", `{"code":"1","memory":-5}`, 400, "memory"},
		{"/v1/run", `{"code":"1","memory":1.5}`, 400, `"memory" must be a whole number`},
		{"/v1/run", `{"code":"1","files":[{"path":"../x","content":""}]}`, 400, "inside the work dir"},
		{"/v1/run", `{"code":"1","files":[{"path":"/etc/x","content":""}]}`, 400, "relative"},
		{"/v1/run", `{"code":"1","files":[{"path":"a","content":"!","encoding":"base64"}]}`, 400, "base64"},
		{"/v1/run", `{"code":"` + strings.Repeat("x", 101) + `"}`, 413, "over the limit of 100 bytes"},
		{"/v1/run", `{"code":"` + strings.Repeat("x", 1<<20) + `"}`, 413, "body is over the limit"},
		{"/eval", `{}`, 400, `give "input" or "args"`},
		{"/eval", `{"args":["-x"]}`, 400, "not supported"},
		{"/eval", `{"input":"1","executable_path":"/usr/bin/ruby"}`, 400, "not a python"},
		{"/api/v2/execute", `{"language":"ruby","version":"*","files":[{"content":"p 1"}]}`, 400, "ruby-* runtime is unknown"},
		{"/api/v2/execute", `{"language":"python","version":"2.7","files":[{"content":"print 1"}]}`, 400, "python-2.7 runtime is unknown"},
		{"/api/v2/execute", `{"language":"python","version":"3.10.0","files":[]}`, 400, "files is required"},
	} {
		resp := post(t, s.url+tc.path, tc.body)
		var msg struct{ Error, Description, Message string }
		_ = json.Unmarshal(resp.body, &msg)
		if resp.status != tc.status || !strings.Contains(msg.Error+msg.Description+msg.Message, tc.message) {
			t.Errorf("POST %s %.60s: got %d %s, want %d with %q", tc.path, tc.body, resp.status, resp.body, tc.status, tc.message)
		}
	}
	if m := post(t, s.url+"/v1/run", `{"code":1}`).json(t); m["code"] != "bad_request" {
		t.Errorf("native error %v lacks code bad_request", m)
	}
	// Each endpoint answers errors in its anchor's format.
	for path, field := range map[string]string{"/v1/run": "error", "/eval": "description", "/api/v2/execute": "message"} {
		m := post(t, s.url+path, `{`).json(t)
		if _, ok := m[field].(string); !ok {
			t.Errorf("%s error %v lacks %q", path, m, field)
		}
	}
}

func TestAuthentication(t *testing.T) {
	const secret = "s3cret-token-value"
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: "ok\n"}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{Tokens: []string{"other", secret}})
	body := `{"code":"print('ok')"}`
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Bearer " + secret + "x"}} {
		resp := post(t, s.url+"/v1/run", body, h...)
		if resp.status != http.StatusUnauthorized || resp.header.Get("WWW-Authenticate") == "" {
			t.Errorf("headers %q: status %d %s, want 401 with WWW-Authenticate", h, resp.status, resp.body)
		}
	}
	for _, auth := range []string{"Bearer " + secret, "bearer " + secret, secret} {
		if resp := post(t, s.url+"/v1/run", body, "Authorization", auth); resp.status != http.StatusOK {
			t.Errorf("Authorization %q: status %d %s", auth, resp.status, resp.body)
		}
	}
	// The operational endpoints stay open to probes.
	if resp := do(t, http.MethodGet, s.url+"/readyz", ""); resp.status != http.StatusOK {
		t.Errorf("/readyz: %d", resp.status)
	}
	if strings.Contains(s.log.String(), secret) {
		t.Errorf("the token appears in the log:\n%s", s.log.String())
	}
}

func TestCheckListener(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		tokens []string
		ok     bool
	}{
		{"127.0.0.1:8080", nil, true},
		{"[::1]:8080", nil, true},
		{"localhost:8080", nil, true},
		{":8080", nil, false},
		{"0.0.0.0:8080", nil, false},
		{"10.0.0.5:8080", nil, false},
		{":8080", []string{"t"}, true},
	} {
		err := api.CheckListener(tc.addr, tc.tokens)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListener(%q, %d tokens) = %v, want ok=%v", tc.addr, len(tc.tokens), err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "RUNBLOCK_API_TOKEN") {
			t.Errorf("error %q does not name RUNBLOCK_API_TOKEN", err)
		}
	}
}

// TestQueueFullAndDraining fills the one slot and the one queue place, so
// the next run is refused with 429 and Retry-After; a draining service
// answers 503 and is not ready.
func TestQueueFullAndDraining(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	r := canaryOK(func(ctx context.Context, _ executor.Request) (executor.Result, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return executor.Result{Success: true}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1, QueueSize: 1}, api.Config{})
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Go(func() { statuses <- post(t, s.url+"/v1/run", `{"code":"1"}`).status })
	}
	<-started
	ready := func() map[string]any { return do(t, http.MethodGet, s.url+"/readyz", "").json(t) }
	var load map[string]any
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if !eventually.Poll(ctx, func() bool {
		load, _ = ready()["load"].(map[string]any)
		return load["running"] == 1.0 && load["queued"] == 1.0
	}) {
		t.Fatalf("the second run never queued: load %v", load)
	}
	if load["capacity"] != 1.0 || load["queue_size"] != 1.0 {
		t.Errorf("load %v", load)
	}
	full := post(t, s.url+"/api/v2/execute", `{"language":"python","version":"*","files":[{"content":"1"}]}`)
	if full.status != http.StatusTooManyRequests || full.header.Get("Retry-After") == "" {
		t.Errorf("full queue: status %d Retry-After %q %s", full.status, full.header.Get("Retry-After"), full.body)
	}
	s.Drain()
	if resp := post(t, s.url+"/eval", `{"input":"1"}`); resp.status != http.StatusServiceUnavailable {
		t.Errorf("draining: status %d %s", resp.status, resp.body)
	}
	if resp := do(t, http.MethodGet, s.url+"/readyz", ""); resp.status != http.StatusServiceUnavailable {
		t.Errorf("draining /readyz: %d", resp.status)
	}
	close(release)
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusOK {
			t.Errorf("an accepted run answered %d", st)
		}
	}
}

func TestCanaryFailureFailsOpen(t *testing.T) {
	r := runnerFunc(func(context.Context, executor.Request) (executor.Result, error) {
		return executor.Result{Error: "Execution failed"}, nil
	})
	s := api.NewService(api.ServiceConfig{Addr: "127.0.0.1:0", Runner: r, Scheduler: executor.NewScheduler(r, executor.Config{})})
	err := s.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), "canary") {
		t.Fatalf("Open = %v, want a canary error", err)
	}
}

// TestSnekboxFilesOut returns the files a run wrote as snekbox does: path,
// size and base64 content.
func TestSnekboxFilesOut(t *testing.T) {
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		return executor.Result{Success: true, Files: []executor.File{{Path: "plot.png", Size: 3, MIME: "image/png", Content: []byte("png")}}}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{})
	m := post(t, s.url+"/eval", `{"input":"1"}`).json(t)
	files, _ := m["files"].([]any)
	if len(files) != 1 {
		t.Fatalf("files %v", m["files"])
	}
	f := files[0].(map[string]any)
	if f["path"] != "plot.png" || f["size"] != 3.0 || f["content"] != b64("png") {
		t.Errorf("file %v", f)
	}
}
