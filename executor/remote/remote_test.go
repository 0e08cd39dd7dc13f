package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/httpserver"
)

// TestMain checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fake is a fake executor: /readyz reports load, /v1/run calls run.
type fake struct {
	srv   *httptest.Server
	runs  atomic.Int32
	mu    sync.Mutex
	ready bool
	load  httpserver.Load
	run   func(w http.ResponseWriter, r *http.Request, req wire.RunRequest)
	ended []string // the sessions DELETE asked it to end
}

func newFake(t *testing.T, capacity int, run func(w http.ResponseWriter, r *http.Request, req wire.RunRequest)) *fake {
	t.Helper()
	return newFakeAt(t, "127.0.0.1:0", capacity, run)
}

func newFakeAt(t *testing.T, addr string, capacity int, run func(w http.ResponseWriter, r *http.Request, req wire.RunRequest)) *fake {
	t.Helper()
	f := &fake{ready: true, load: httpserver.Load{Capacity: capacity, QueueSize: 10}, run: run}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		rd := httpserver.Readiness{Ready: f.ready, Load: &f.load}
		f.mu.Unlock()
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rd)
	})
	mux.HandleFunc("POST /v1/run", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var req wire.RunRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("bad run body: %v", err)
		}
		f.runs.Add(1)
		f.run(w, r, req)
	})
	mux.HandleFunc("DELETE /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.ended = append(f.ended, r.PathValue("id"))
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(wire.ErrorResponse{Error: "no session", Code: "not_found"})
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) set(ready bool, queued int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready, f.load.Queued = ready, queued
}

// echo answers the run with its code as stdout.
func echo(name string) func(w http.ResponseWriter, r *http.Request, req wire.RunRequest) {
	return func(w http.ResponseWriter, _ *http.Request, req wire.RunRequest) {
		_ = json.NewEncoder(w).Encode(wire.RunResponse{Result: executor.Result{Success: true, Stdout: name + ":" + req.Code, DurationMS: 12}, TimeoutLimitMS: 3000})
	}
}

func status(code int) func(w http.ResponseWriter, r *http.Request, req wire.RunRequest) {
	return func(w http.ResponseWriter, _ *http.Request, _ wire.RunRequest) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(wire.ErrorResponse{Error: http.StatusText(code)})
	}
}

// die drops the connection mid-run, as a killed executor does.
func die(w http.ResponseWriter, _ *http.Request, _ wire.RunRequest) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

func open(t *testing.T, cfg remote.Config) *remote.Runner {
	t.Helper()
	cfg.Token = "tok"
	if cfg.Refresh == 0 {
		cfg.Refresh = time.Hour // tests refresh by hand
	}
	r, err := remote.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func run(t *testing.T, r *remote.Runner, code string) (executor.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Run(ctx, executor.Request{Code: code, Timeout: 2 * time.Second})
}

func TestLeastLoadedAndCapacity(t *testing.T) {
	a := newFake(t, 2, echo("a"))
	b := newFake(t, 4, echo("b"))
	a.set(true, 5)
	r := open(t, remote.Config{URLs: []string{a.srv.URL, b.srv.URL}})
	if got := r.Capacity(); got != 6 {
		t.Errorf("capacity %d, want 6", got)
	}
	for range 3 {
		res, err := run(t, r, "x")
		if err != nil || res.Stdout != "b:x" {
			t.Fatalf("run = %+v, %v; want it on b, the one with no queue", res, err)
		}
		if res.Duration != 12*time.Millisecond || res.TimeoutLimit != 3*time.Second {
			t.Errorf("durations not carried over: %v %v", res.Duration, res.TimeoutLimit)
		}
	}
	// Not ready: out of the capacity and of the choice.
	var reported []int
	r.OnCapacity(func(n int) { reported = append(reported, n) })
	b.set(false, 0)
	r.Refresh(context.Background())
	if got := r.Capacity(); got != 2 {
		t.Errorf("capacity %d, want 2", got)
	}
	b.set(true, 0)
	r.Refresh(context.Background())
	r.Refresh(context.Background())
	if !slices.Equal(reported, []int{2, 6}) {
		t.Errorf("capacity reported %v, want [2 6]", reported)
	}
	b.set(false, 0)
	r.Refresh(context.Background())
	if res, err := run(t, r, "y"); err != nil || res.Stdout != "a:y" {
		t.Fatalf("run = %+v, %v; want it on a", res, err)
	}
}

func TestFullAndDrainingAreSkipped(t *testing.T) {
	full := newFake(t, 1, status(http.StatusTooManyRequests))
	draining := newFake(t, 1, status(http.StatusServiceUnavailable))
	ok := newFake(t, 1, echo("ok"))
	ok.set(true, 9) // the busiest by its report: tried last
	r := open(t, remote.Config{URLs: []string{full.srv.URL, draining.srv.URL, ok.srv.URL}})
	res, err := run(t, r, "x")
	if err != nil || res.Stdout != "ok:x" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	// Only full executors left: busy, with the Retry-After they gave.
	r2 := open(t, remote.Config{URLs: []string{full.srv.URL}})
	_, err = run(t, r2, "x")
	var e *executor.Error
	if !errors.As(err, &e) || e.Code != executor.ErrBusy || e.RetryAfter != 3*time.Second {
		t.Fatalf("err = %v, want busy with RetryAfter 3s", err)
	}
}

func TestDeathMidRunRetriesOnce(t *testing.T) {
	dead := newFake(t, 8, die)
	ok := newFake(t, 1, echo("ok"))
	ok.set(true, 9)
	r := open(t, remote.Config{URLs: []string{dead.srv.URL, ok.srv.URL}})
	res, err := run(t, r, "x")
	if err != nil || res.Stdout != "ok:x" {
		t.Fatalf("run = %+v, %v; want the retry on ok", res, err)
	}
	if dead.runs.Load() != 1 {
		t.Errorf("dead executor got %d runs", dead.runs.Load())
	}
	// The dead one is out of the choice now.
	if _, err := run(t, r, "y"); err != nil || dead.runs.Load() != 1 {
		t.Errorf("the dead executor was tried again: %d runs, %v", dead.runs.Load(), err)
	}

	// A proxy's 502 in front of an executor that went away costs the
	// retry too.
	broken := newFake(t, 8, status(http.StatusBadGateway))
	r3 := open(t, remote.Config{URLs: []string{broken.srv.URL, ok.srv.URL}})
	if res, err := run(t, r3, "z"); err != nil || res.Stdout != "ok:z" || broken.runs.Load() != 1 {
		t.Fatalf("run = %+v, %v; broken got %d runs", res, err, broken.runs.Load())
	}

	// Two deaths: one retry only, then a clear error.
	d1, d2, d3 := newFake(t, 1, die), newFake(t, 1, die), newFake(t, 1, die)
	r2 := open(t, remote.Config{URLs: []string{d1.srv.URL, d2.srv.URL, d3.srv.URL}})
	_, err = run(t, r2, "x")
	if executor.ErrorCode(err) != executor.ErrUnavailable || !strings.Contains(err.Error(), "executor unavailable, try again") {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if got := formatting.RenderError(formatting.Slack, err); !strings.Contains(got, "no executor could take the run; try again in") {
		t.Errorf("the chat line is %q", got)
	}
	if n := d1.runs.Load() + d2.runs.Load() + d3.runs.Load(); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
}

// TestExecutorsOwnErrorIsNotRetried: an executor that answered a run with
// an error of its own (500, code "internal") is alive: the run is not
// sent to a second one (a snippet that fails one would fail it too) and
// the executor stays in the choice.
func TestExecutorsOwnErrorIsNotRetried(t *testing.T) {
	failing := newFake(t, 8, func(w http.ResponseWriter, _ *http.Request, _ wire.RunRequest) {
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(wire.ErrorResponse{Error: "internal error", Code: "internal"})
	})
	other := newFake(t, 8, echo("other"))
	other.set(true, 9) // the busiest by its report: picked last
	r := open(t, remote.Config{URLs: []string{failing.srv.URL, other.srv.URL}})
	for i := range 2 {
		_, err := run(t, r, "x")
		if executor.ErrorCode(err) != executor.ErrInternal || other.runs.Load() != 0 || failing.runs.Load() != int32(i+1) {
			t.Fatalf("run %d: err = %v, runs %d and %d: want internal, on the failing executor only", i, err, failing.runs.Load(), other.runs.Load())
		}
	}
	if r.Capacity() != 16 {
		t.Errorf("capacity %d after the executor's own errors: want both executors still counted", r.Capacity())
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ok := newFake(t, 1, echo("ok"))
	r := open(t, remote.Config{URLs: []string{"http://" + addr, ok.srv.URL}})
	if res, err := run(t, r, "x"); err != nil || res.Stdout != "ok:x" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	r2 := open(t, remote.Config{URLs: []string{"http://" + addr}})
	if _, err := run(t, r2, "x"); executor.ErrorCode(err) != executor.ErrUnavailable {
		t.Fatalf("err = %v, want unavailable", err)
	}
}

func TestRefusedIsNotRetried(t *testing.T) {
	big := newFake(t, 1, status(http.StatusRequestEntityTooLarge))
	other := newFake(t, 1, echo("other"))
	other.set(true, 9)
	r := open(t, remote.Config{URLs: []string{big.srv.URL, other.srv.URL}})
	if _, err := run(t, r, "x"); executor.ErrorCode(err) != executor.ErrTooLarge || other.runs.Load() != 0 {
		t.Fatalf("err = %v, other runs %d: want too_large, no retry", err, other.runs.Load())
	}
}

// TestResolve expands one name into an executor per address and follows
// the name's changes on refresh.
func TestResolve(t *testing.T) {
	a := newFake(t, 1, echo("a"))
	_, port, _ := net.SplitHostPort(a.srv.Listener.Addr().String())
	b := newFakeAt(t, "127.0.0.2:"+port, 2, echo("b"))
	var mu sync.Mutex
	addrs := []string{"127.0.0.1"}
	resolve := func(_ context.Context, host string) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		if host != "executors.test" || addrs == nil {
			return nil, errors.New("no such host")
		}
		return addrs, nil
	}
	setAddrs := func(v []string) {
		mu.Lock()
		defer mu.Unlock()
		addrs = v
	}
	r := open(t, remote.Config{URLs: []string{"http://executors.test:" + port}, Resolve: resolve})
	if r.Capacity() != 1 {
		t.Fatalf("capacity %d, want 1", r.Capacity())
	}
	setAddrs([]string{"127.0.0.1", "127.0.0.2"})
	r.Refresh(context.Background())
	if r.Capacity() != 3 {
		t.Fatalf("capacity %d after the name grew, want 3", r.Capacity())
	}
	for range 4 {
		if _, err := run(t, r, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if a.runs.Load() == 0 || b.runs.Load() == 0 {
		t.Errorf("runs a=%d b=%d: want both used", a.runs.Load(), b.runs.Load())
	}
	// A failed lookup keeps the executors known.
	setAddrs(nil)
	r.Refresh(context.Background())
	if r.Capacity() != 3 {
		t.Fatalf("capacity %d after a failed lookup, want 3", r.Capacity())
	}
	setAddrs([]string{"127.0.0.2"})
	r.Refresh(context.Background())
	if res, err := run(t, r, "y"); err != nil || res.Stdout != "b:y" || r.Capacity() != 2 {
		t.Fatalf("after a left the name: %+v, %v, capacity %d", res, err, r.Capacity())
	}
}

func TestBadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "localhost:8080", "http://"} {
		if _, err := remote.New(context.Background(), remote.Config{URLs: []string{u}}); err == nil {
			t.Errorf("New(%q) accepted it", u)
		}
	}
}

// TestForwardsArgsAndFiles: the request's fields reach the executor's
// /v1/run, its colour included.
func TestForwardsArgsAndFiles(t *testing.T) {
	got := make(chan wire.RunRequest, 1)
	f := newFake(t, 1, func(w http.ResponseWriter, r *http.Request, req wire.RunRequest) {
		got <- req
		echo("f")(w, r, req)
	})
	r := open(t, remote.Config{URLs: []string{f.srv.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := r.Run(ctx, executor.Request{Code: "c", Stdin: "in", Args: []string{"a"}, MemoryBytes: 64 << 20, Timeout: 1500 * time.Millisecond,
		Files: []executor.File{{Path: "d/x.bin", Content: []byte{0, 1}}}, Colour: true, Script: true})
	if err != nil {
		t.Fatal(err)
	}
	req := <-got
	if req.Code != "c" || req.Stdin != "in" || len(req.Args) != 1 || req.Args[0] != "a" || req.Memory != 64<<20 || time.Duration(req.Timeout) != 1500*time.Millisecond || !req.Colour || !req.Script {
		t.Errorf("executor got %+v", req)
	}
	if len(req.Files) != 1 || req.Files[0].Path != "d/x.bin" || req.Files[0].Encoding != "base64" || req.Files[0].Content != "AAE=" {
		t.Errorf("files %+v", req.Files)
	}
}

// TestLaunchedIsRefused: a launched program (executor.Request.Launch: a
// file, a module, code with python's argv) is refused as the client's
// mistake before any executor sees it: /v1/run takes snippets, and sent
// as one its code would run as a snippet (a file's path as Python).
func TestLaunchedIsRefused(t *testing.T) {
	f := newFake(t, 1, echo("a"))
	r := open(t, remote.Config{URLs: []string{f.srv.URL}})
	_, err := r.Run(context.Background(), executor.Request{Launch: executor.LaunchFile, Code: "main.py",
		Files: []executor.File{{Path: "main.py", Content: []byte("print(1)")}}})
	if executor.ErrorCode(err) != executor.ErrInvalid || !strings.Contains(err.Error(), "remote executor") {
		t.Fatalf("err %v, want ErrInvalid saying a remote executor takes no launched program", err)
	}
	if n := f.runs.Load(); n != 0 {
		t.Errorf("%d runs reached the executor", n)
	}
}

// TestSendsItsOwnTimeout: a run and a replayed cell that name no timeout
// are sent with the runner's (the bot's RUNBLOCK_TIMEOUT), not left to
// the executor's default; one that names its own keeps it.
func TestSendsItsOwnTimeout(t *testing.T) {
	got := make(chan wire.RunRequest, 3)
	f := newFake(t, 1, func(w http.ResponseWriter, r *http.Request, req wire.RunRequest) {
		got <- req
		echo("f")(w, r, req)
	})
	r := open(t, remote.Config{URLs: []string{f.srv.URL}, Timeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		req  executor.Request
		want time.Duration
	}{
		{executor.Request{Code: "a"}, 2 * time.Second},
		{executor.Request{Code: "b", Timeout: 1500 * time.Millisecond}, 1500 * time.Millisecond},
		{executor.Request{Code: "c", Session: &executor.Session{ID: "s", Replay: []executor.Request{{Code: "a"}}}}, 2 * time.Second},
	} {
		if _, err := r.Run(ctx, tc.req); err != nil {
			t.Fatal(err)
		}
		req := <-got
		if time.Duration(req.Timeout) != tc.want {
			t.Errorf("run %q sent with timeout %s, want %s", tc.req.Code, time.Duration(req.Timeout), tc.want)
		}
		for _, c := range req.Replay {
			if time.Duration(c.Timeout) != 2*time.Second {
				t.Errorf("replayed cell %q sent with timeout %s, want 2s", c.Code, time.Duration(c.Timeout))
			}
		}
	}
}

// TestCancelKeepsTheExecutor: a run its caller cancels does not mark the
// executor down.
func TestCancelKeepsTheExecutor(t *testing.T) {
	started := make(chan struct{})
	f := newFake(t, 1, func(w http.ResponseWriter, r *http.Request, req wire.RunRequest) {
		if req.Code == "slow" {
			close(started)
			<-r.Context().Done()
			return
		}
		echo("f")(w, r, req)
	})
	r := open(t, remote.Config{URLs: []string{f.srv.URL}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, executor.Request{Code: "slow"})
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; executor.ErrorCode(err) != executor.ErrCanceled {
		t.Fatalf("err = %v, want canceled", err)
	}
	if res, err := run(t, r, "next"); err != nil || res.Stdout != "f:next" {
		t.Fatalf("after a cancel: %+v, %v", res, err)
	}
}

// tokenExecutor serves an execute API that takes only token (401
// otherwise, as the real one answers), with a ready /readyz: what New
// checks the token against.
func tokenExecutor(t *testing.T, token string) string {
	t.Helper()
	srv := httpserver.New(httpserver.Config{
		Addr: "127.0.0.1:0",
		API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				w.WriteHeader(http.StatusUnauthorized)
				_ = json.NewEncoder(w).Encode(wire.ErrorResponse{Error: "missing or wrong bearer token", Code: wire.ErrorCode(http.StatusUnauthorized)})
				return
			}
			_, _ = w.Write([]byte(`[{"language":"python","version":"3.11.2","aliases":[]}]`))
		}),
		Readiness: func() httpserver.Readiness {
			return httpserver.Readiness{Ready: true, Load: &httpserver.Load{Capacity: 1}}
		},
	})
	if err := srv.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	return "http://" + srv.Addr()
}

// TestNewChecksTheToken: a runner whose token an executor refuses fails
// New with an error naming RUNBLOCK_API_TOKEN (never the token), instead
// of starting and failing every run; the right token, and an executor not
// up yet, start as before.
func TestNewChecksTheToken(t *testing.T) {
	const right, wrong = "right-token-0123456789", "wrong-token-0123456789"
	good, bad := tokenExecutor(t, right), tokenExecutor(t, wrong)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()

	tests := []struct {
		name  string
		urls  []string
		token string
		want  string // in the error; "" for none
	}{
		{"right token", []string{good}, right, ""},
		{"right token, one executor not up yet", []string{good, down}, right, ""},
		{"wrong token", []string{bad}, right, "executor " + bad + " refuses RUNBLOCK_API_TOKEN (answered 401)"},
		{"one of two refuses", []string{good, bad}, right, bad + " refuses RUNBLOCK_API_TOKEN"},
		{"no token", []string{good}, "", "RUNBLOCK_API_TOKEN is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := remote.New(context.Background(), remote.Config{URLs: tt.urls, Token: tt.token, Refresh: time.Hour})
			if err == nil {
				defer r.Close()
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: %v, want an error with %q", err, tt.want)
			case err != nil && (strings.Contains(err.Error(), right) || strings.Contains(err.Error(), wrong)):
				t.Fatalf("the error shows a token: %v", err)
			}
			var te *remote.TokenError
			if tt.want != "" && !errors.As(err, &te) {
				t.Errorf("error %T, want a *remote.TokenError", err)
			}
		})
	}
}

// TestResultsPassThrough: a cell's rich output comes back from the
// executor as it sent it.
func TestResultsPassThrough(t *testing.T) {
	results := []executor.Display{{Data: map[string]string{"text/plain": "'a'", "image/png": "iVBORw0K"}, At: 3},
		{Data: map[string]string{"text/plain": "42"}, Value: true, At: 3}}
	f := newFake(t, 1, func(w http.ResponseWriter, _ *http.Request, req wire.RunRequest) {
		_ = json.NewEncoder(w).Encode(wire.RunResponse{Result: executor.Result{Success: true, Stdout: "hi\n", Results: results}})
	})
	r := open(t, remote.Config{URLs: []string{f.srv.URL}})
	res, err := run(t, r, "x")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Results, results) {
		t.Errorf("results %+v, want %+v", res.Results, results)
	}
}
