package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/fakediscord"
	"github.com/runblock/runblock/internal/fakeslack"
	"github.com/runblock/runblock/internal/httpserver"

	"go.uber.org/goleak"
)

// runMainEnv makes the test binary run main() instead of the tests, for
// tests of the real process: signals, exit status.
const runMainEnv = "GO_TEST_RUN_RUNBLOCK_MAIN"

// Well-formed fake credentials: they must never appear in any output.
const (
	testBotToken = "xoxb-1111-2222-SECRETBOT"
	testAppToken = "xapp-1-A111-3333-SECRETAPP"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

const fence = "```"

const pipedExample = "please run\n" + fence + "python\nprint(1+1)\n" + fence + "\n"

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runnerFunc is a fake executor.
type runnerFunc func(ctx context.Context, req executor.Request) (executor.Result, error)

func (f runnerFunc) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	return f(ctx, req)
}

// gate holds fake runs until released.
type gate struct {
	started chan executor.Request
	release chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan executor.Request, 8), release: make(chan struct{})}
}

func (g *gate) run(ctx context.Context, req executor.Request) (executor.Result, error) {
	g.started <- req
	select {
	case <-g.release:
		return executor.Result{Success: true, Stdout: "finished " + strings.TrimSpace(req.Code) + "\n", Duration: time.Millisecond}, nil
	case <-ctx.Done():
		return executor.Result{}, ctx.Err()
	}
}

func defaultConfig(t *testing.T, env config.Env) config.Config {
	t.Helper()
	cfg, err := config.Parse(env, config.All)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestShutdownLetsTheRunInFlightFinish drives Main with the console adapter
// over a pipe: a run is in flight when Close starts; Close stops reading,
// waits for the run, and the reply is printed before Close returns.
func TestShutdownLetsTheRunInFlightFinish(t *testing.T) {
	g := newGate()
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &syncBuffer{}
	m := &Main{
		Config: defaultConfig(t, config.Env{"RUNBLOCK_HTTP_ADDR": "127.0.0.1:0"}),
		Logger: testLogger(t),
		Stdin:  pr,
		Stdout: out,
		Runner: runnerFunc(g.run),
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(pw, fence+"python\nslow()\n"+fence+"\n\n"); err != nil {
		t.Fatal(err)
	}
	<-g.started

	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		closed <- m.Close(ctx)
	}()
	// The console is busy with the run, so this write blocks until Close
	// closes its input: from then on Main is draining.
	if _, err := io.WriteString(pw, fence+"python\nnever()\n"+fence+"\n\n"); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write while closing = %v, want io.ErrClosedPipe", err)
	}
	if r := m.readiness(); r.Ready || !r.Draining {
		t.Errorf("readiness while draining = %+v, want not ready and draining", r)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a run was in flight", err)
	default:
	}
	close(g.release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := out.String(); !strings.Contains(got, "finished slow()") || strings.Contains(got, "never") {
		t.Errorf("output %q: want the reply to the run in flight and nothing else", got)
	}
	// Close closed the pipe, so the console's reader ends too.
	select {
	case <-m.Done():
	case <-time.After(30 * time.Second):
		t.Error("console not done after Close")
	}
}

// TestServeExitsAtEndOfInput is the console path of `go run .` with a fake
// runner: exit 0 once the piped message has been answered.
func TestServeExitsAtEndOfInput(t *testing.T) {
	out := &syncBuffer{}
	m := &Main{
		Config: defaultConfig(t, nil),
		Logger: testLogger(t),
		Stdin:  strings.NewReader(pipedExample),
		Stdout: out,
		Runner: runnerFunc(func(_ context.Context, req executor.Request) (executor.Result, error) {
			return executor.Result{Success: true, Stdout: "2\n"}, nil
		}),
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Main not done at end of input")
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2") {
		t.Errorf("output %q lacks 2", out.String())
	}
}

func TestHTTPEndpoints(t *testing.T) {
	g := newGate()
	close(g.release)
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &syncBuffer{}
	m := &Main{
		Config: defaultConfig(t, config.Env{"RUNBLOCK_HTTP_ADDR": "127.0.0.1:0"}),
		Logger: testLogger(t),
		Stdin:  pr,
		Stdout: out,
		Runner: runnerFunc(g.run),
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	base := "http://" + m.http.Addr()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}

	if code, body := get("/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	code, body := get("/readyz")
	var rd httpserver.Readiness
	if err := json.Unmarshal([]byte(body), &rd); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	if code != 200 || !rd.Ready || !rd.Adapters["console"] || rd.Isolation == "" {
		t.Errorf("/readyz = %d %+v", code, rd)
	}

	if _, err := io.WriteString(pw, pipedExample+"\n"); err != nil {
		t.Fatal(err)
	}
	<-g.started
	// At end of input the console finishes once the reply is out and counted.
	pw.Close()
	<-m.Done()
	if !strings.Contains(out.String(), "finished") {
		t.Errorf("output %q lacks the reply", out.String())
	}
	_, metricsBody := get("/metrics")
	for _, want := range []string{
		`runblock_runs_total{outcome="ok"} 1`,
		`runblock_messages_received_total{platform="console"} 1`,
		`runblock_messages_replied_total{platform="console"} 1`,
		`runblock_queue_depth 0`,
	} {
		if !strings.Contains(metricsBody, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, _ := get("/slack/events"); code != http.StatusNotFound {
		t.Errorf("/slack/ served without SLACK_SIGNING_SECRET: %d", code)
	}

	m.draining.Store(true)
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining = %d, want 503", code)
	}
}

func TestRunFailsFastOnABusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	m := &Main{
		Config: defaultConfig(t, config.Env{"RUNBLOCK_HTTP_ADDR": ln.Addr().String()}),
		Logger: testLogger(t),
		Stdin:  pr,
		Stdout: io.Discard,
		Runner: runnerFunc(func(context.Context, executor.Request) (executor.Result, error) { return executor.Result{}, nil }),
	}
	err = m.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		m.Close(context.Background())
		t.Fatalf("Run = %v, want a listen error naming the address", err)
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      config.Env
		code     int
		stdout   string
		stderr   string
		oneLiner bool
	}{
		{name: "version", args: []string{"version"}, stdout: "runblock dev"},
		{name: "help", args: []string{"help"}, stdout: "usage: runblock"},
		{name: "help flag", args: []string{"--help"}, stdout: "usage: runblock"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{name: "bad setting", args: []string{"serve"}, env: config.Env{"RUNBLOCK_TIMEOUT": "soon"}, code: 2, stderr: "RUNBLOCK_TIMEOUT", oneLiner: true},
		{name: "wrong token kind", env: config.Env{"SLACK_BOT_TOKEN": testBotToken, "SLACK_APP_TOKEN": testBotToken}, code: 2, stderr: "SLACK_APP_TOKEN", oneLiner: true},
		{name: "serve arguments", args: []string{"serve", "extra"}, code: 2, stderr: "no arguments"},
		{name: "exec without file", args: []string{"exec"}, code: 2, stderr: "give one FILE"},
		{name: "exec bad memory", args: []string{"exec", "--memory", "lots", "x.py"}, code: 2, stderr: "--memory"},
		{name: "exec bad flag", args: []string{"exec", "--frob", "x.py"}, code: 2, stderr: "frob"},
		{name: "manifest", args: []string{"manifest", "slack"}, stdout: "socket_mode_enabled: true"},
		{name: "manifest without platform", args: []string{"manifest"}, code: 2, stderr: "runblock manifest slack"},
		{name: "help lists every command", args: []string{"help"}, stdout: "manifest"},
		{name: "bad python named", args: []string{"doctor"}, env: config.Env{"RUNBLOCK_PYTHON": "/nonexistent"}, code: 2, stderr: "RUNBLOCK_PYTHON=\"/nonexistent\"", oneLiner: true},
		{name: "version ignores bad settings", args: []string{"version"}, env: config.Env{"RUNBLOCK_TIMEOUT": "soon"}, stdout: "runblock dev"},
		// An adapter setting without what it needs (an Events API secret
		// and no HTTP address) is serve's business, not doctor's.
		{name: "doctor ignores adapter settings", args: []string{"doctor", "--json"}, env: config.Env{"SLACK_SIGNING_SECRET": "0123456789abcdef"}, stdout: `"tier"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, tt.env, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stdout %q, stderr %q; want %q and %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
			if tt.oneLiner && strings.Count(strings.TrimRight(stderr.String(), "\n"), "\n") != 0 {
				t.Errorf("stderr is more than one line: %q", stderr.String())
			}
			for _, s := range []string{testBotToken, testAppToken} {
				if strings.Contains(stderr.String(), s) {
					t.Errorf("stderr shows a token: %q", stderr.String())
				}
			}
		})
	}
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
}

// TestPipedConsoleExample is the README's first command end to end: the real
// executor, scheduler and formatting answer the piped message with 2.
func TestPipedConsoleExample(t *testing.T) {
	requirePython(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), nil, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}, strings.NewReader(pipedExample), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "2") {
		t.Errorf("stdout %q lacks 2; stderr:\n%s", stdout.String(), stderr.String())
	}
}

func TestExecCommand(t *testing.T) {
	requirePython(t)
	dir := t.TempDir()
	write := func(name, code string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(code), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.py", "print('hello')\n")
	fails := write("fails.py", "1/0\n")
	slow := write("slow.py", "import time\nprint('before', flush=True)\ntime.sleep(30)\n")
	env := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}

	t.Run("json", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", ok, "--json"}, env, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var res map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("not one JSON object: %q: %v", stdout.String(), err)
		}
		for _, k := range []string{"success", "stdout", "stderr", "error", "timeout", "memory_exceeded", "output_truncated", "exit_code", "signal", "duration_ms"} {
			if _, has := res[k]; !has {
				t.Errorf("JSON lacks %q", k)
			}
		}
		if res["success"] != true || res["stdout"] != "hello\n" {
			t.Errorf("result %v", res)
		}
	})
	t.Run("failing snippet exits 0", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", fails}, env, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "ZeroDivisionError") {
			t.Errorf("stdout %q lacks the error line", stdout.String())
		}
	})
	t.Run("stdin and timeout flag", func(t *testing.T) {
		code, err := os.ReadFile(slow)
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", "--json", "--timeout", "300ms", "-"}, env, bytes.NewReader(code), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var res executor.Result
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		if !res.Timeout || !strings.Contains(res.Stdout, "before") {
			t.Errorf("result %+v: want a timeout with the partial output", res)
		}
	})
	t.Run("json on refusal", func(t *testing.T) {
		big := write("big.py", strings.Repeat("x = 1\n", 200))
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", "--json", big}, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "RUNBLOCK_MAX_CODE_BYTES": "100"}, nil, &stdout, &stderr); code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		var res map[string]string
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("not one JSON object: %q: %v", stdout.String(), err)
		}
		if res["code"] != "too_large" || res["error"] == "" {
			t.Errorf("refusal %v, want code too_large and an error", res)
		}
	})
	t.Run("json on usage error", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", "--json"}, env, nil, &stdout, &stderr); code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
		var res map[string]string
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res["code"] != "usage" {
			t.Errorf("stdout %q: want one JSON object with code usage (%v)", stdout.String(), err)
		}
	})
	t.Run("stdin file", func(t *testing.T) {
		in := write("in.txt", "41\n")
		echo := write("echo.py", "print(int(input()) + 1)\n")
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", "--stdin", in, echo}, env, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.HasSuffix(stdout.String(), "\n42\n") {
			t.Errorf("stdout %q, want 42", stdout.String())
		}
	})
	t.Run("whole output", func(t *testing.T) {
		many := write("many.py", "for i in range(100): print(i)\n")
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", many}, env, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if !strings.Contains(stdout.String(), "\n99") || !strings.Contains(stdout.String(), "\n50\n") {
			t.Errorf("plain exec cut the output: %q", stdout.String())
		}
	})
	t.Run("chat settings do not stop exec", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		chat := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "SLACK_SIGNING_SECRET": "8f14e45fceea167a5a36dedd4bea2543", "DISCORD_BOT_TOKEN": "garbage"}
		if code := run(context.Background(), []string{"exec", ok}, chat, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	})
	t.Run("missing file", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"exec", filepath.Join(dir, "nope.py")}, env, nil, &stdout, &stderr); code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
	})
}

func TestDoctorCommand(t *testing.T) {
	requirePython(t)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"doctor", "--json"}, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep sandbox.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%q: %v", stdout.String(), err)
	}
	if rep.Tier == "" || rep.Python == "" || len(rep.Layers) == 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(stdout.String(), `"fork_server":{"active":`) {
		t.Errorf("the JSON report lacks the fork server: %s", stdout.String())
	}

	stdout.Reset()
	off := config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "RUNBLOCK_FORKSERVER": "off"}
	if code := run(context.Background(), []string{"doctor"}, off, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "\nfork server: off (RUNBLOCK_FORKSERVER=off)") {
		t.Errorf("doctor with RUNBLOCK_FORKSERVER=off says:\n%s", stdout.String())
	}
}

func TestForkServerLine(t *testing.T) {
	tests := []struct {
		name     string
		rep      sandbox.ForkServerReport
		disabled bool
		want     string
	}{
		{"active", sandbox.ForkServerReport{Active: true}, false, "fork server: on (each run is a fork of it)"},
		{"active with detail", sandbox.ForkServerReport{Active: true, Detail: "each run is a fork; preloaded: numpy"}, false, "fork server: on (each run is a fork; preloaded: numpy)"},
		{"turned off", sandbox.ForkServerReport{Detail: "off (RUNBLOCK_FORKSERVER=off): each run starts python from scratch"}, true, "fork server: off (RUNBLOCK_FORKSERVER=off): each run starts python from scratch"},
		{"failed", sandbox.ForkServerReport{Detail: "unavailable, each run starts python from scratch: no user namespaces"}, false, "fork server: unavailable, each run starts python from scratch: no user namespaces"},
		{"turned off, unexplained", sandbox.ForkServerReport{}, true, "fork server: off (RUNBLOCK_FORKSERVER=off): each run starts a sandbox from scratch"},
		{"unexplained", sandbox.ForkServerReport{}, false, "fork server: unavailable, each run starts a sandbox from scratch"},
	}
	for _, tt := range tests {
		if got := forkServerLine(tt.rep, tt.disabled); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSIGTERMFinishesTheRunInFlight runs the real binary (this test binary
// running main) with the console over a pipe, sends SIGTERM while a snippet
// runs, and expects its reply on stdout and exit status 0.
func TestSIGTERMFinishesTheRunInFlight(t *testing.T) {
	requirePython(t)
	cmd := exec.Command(os.Args[0])
	cmd.Dir = t.TempDir() // no .env
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "RUNBLOCK_") && !strings.HasPrefix(k, "SLACK_") && !strings.HasPrefix(k, "DISCORD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, runMainEnv+"=1", "RUNBLOCK_ALLOW_UNISOLATED=1", "RUNBLOCK_POOL=0", "LOG_LEVEL=debug", "LOG_FORMAT=json")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout syncBuffer
	cmd.Stdout = &stdout
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })

	snippet := "import time\ntime.sleep(1)\nprint('survived the signal')\n"
	if _, err := io.WriteString(stdin, fence+"python\n"+snippet+fence+"\n\n"); err != nil {
		t.Fatal(err)
	}
	// Wait for the console to submit the run, then signal.
	var logs bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(stderr, &logs))
	submitted := false
	for !submitted && sc.Scan() {
		submitted = strings.Contains(sc.Text(), `"msg":"run submitted"`)
	}
	if !submitted {
		t.Fatalf("no run submitted; logs:\n%s", logs.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(stderr)
	logs.Write(rest)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; logs:\n%s", err, logs.String())
	}
	if !strings.Contains(stdout.String(), "survived the signal") {
		t.Errorf("stdout %q lacks the reply of the run in flight; logs:\n%s", stdout.String(), logs.String())
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("logs do not show the signal being handled:\n%s", logs.String())
	}
}

// TestBothAdaptersThroughMain runs Slack and Discord at once through Main
// against their fakes: both are reported ready, each answers a message, and
// both runs reach the one runner behind the shared scheduler. The service's
// own logger, at debug level, never shows a token.
func TestBothAdaptersThroughMain(t *testing.T) {
	slackFake := fakeslack.New(fakeslack.Options{PingInterval: 200 * time.Millisecond})
	t.Cleanup(slackFake.Close)
	discordFake := fakediscord.New(fakediscord.Options{HeartbeatInterval: 200 * time.Millisecond})
	t.Cleanup(discordFake.Close)
	discordFake.Install()
	fbot := discordFake.NewBot("runblock")

	cfg := defaultConfig(t, config.Env{
		"SLACK_BOT_TOKEN":    fakeslack.BotToken,
		"SLACK_APP_TOKEN":    fakeslack.AppToken,
		"DISCORD_BOT_TOKEN":  fbot.Token,
		"RUNBLOCK_HTTP_ADDR": "127.0.0.1:0",
		"LOG_LEVEL":          "debug",
	})
	cfg.Slack.APIURL = slackFake.APIURL()
	g := newGate()
	close(g.release)
	logs := &syncBuffer{}
	m := &Main{Config: cfg, Logger: config.NewLogger(logs, cfg), Runner: runnerFunc(g.run)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
		out := logs.String()
		for _, tok := range []string{fakeslack.BotToken, fakeslack.AppToken, fbot.Token} {
			if strings.Contains(out, tok) {
				t.Errorf("the log shows a token:\n%s", out)
			}
		}
		if !strings.Contains(out, "adapter open") {
			t.Errorf("the log lacks the start-up lines:\n%s", out)
		}
	})
	if err := slackFake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := fbot.WaitSessions(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r := m.readiness()
	if !r.Ready || !r.Adapters["slack"] || !r.Adapters["discord"] || r.Adapters["console"] {
		t.Errorf("readiness %+v, want slack and discord ready and no console", r)
	}

	channel, user := slackFake.NewID("C"), slackFake.NewID("U")
	msg := slackFake.PutMessage(fakeslack.Message{Channel: channel, User: user,
		Text: "<@" + fakeslack.BotUserID + "> ```python\nfrom_slack()\n```"})
	slackFake.SendEvent(map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": msg.Text, "ts": msg.TS, "event_ts": msg.TS})
	if _, err := slackFake.WaitMessage(ctx, channel, func(x fakeslack.Message) bool {
		return x.ThreadTS == msg.TS && strings.Contains(x.Text, "finished from_slack()")
	}); err != nil {
		t.Fatalf("no Slack reply: %v", err)
	}

	dchannel, guild := discordFake.NewID(), discordFake.NewID()
	dmsg := fbot.MessageCreate(discordgo.Message{ChannelID: dchannel, GuildID: guild,
		Author:  &discordgo.User{ID: discordFake.NewID(), Username: "ada"},
		Content: "!run ```python\nfrom_discord()\n```"})
	if _, err := discordFake.WaitRequest(ctx, func(r fakediscord.Request) bool {
		return r.Method == "POST" && r.Path == "/channels/"+dchannel+"/messages" && strings.Contains(r.Content(), "finished from_discord()")
	}); err != nil {
		t.Fatalf("no Discord reply to %s: %v", dmsg.ID, err)
	}

	if got := len(g.started); got != 2 {
		t.Errorf("%d runs reached the runner, want 2", got)
	}
}

// signalHandler is a slog handler that closes a channel at the first record
// whose message starts with prefix, and logs everything to the test.
type signalHandler struct {
	slog.Handler
	prefix string
	seen   chan struct{}
	once   *sync.Once
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		h.once.Do(func() { close(h.seen) })
	}
	return h.Handler.Handle(ctx, r)
}

func (h signalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return signalHandler{h.Handler.WithAttrs(as), h.prefix, h.seen, h.once}
}

func (h signalHandler) WithGroup(name string) slog.Handler {
	return signalHandler{h.Handler.WithGroup(name), h.prefix, h.seen, h.once}
}

// TestSlackThroughMain wires the real Slack adapter against the fake Slack
// through Main: /readyz reports it connected, a mention is answered in its
// thread, and a run in flight when shutdown starts still gets its reply
// before Close returns.
func TestSlackThroughMain(t *testing.T) {
	fake := fakeslack.New(fakeslack.Options{PingInterval: 200 * time.Millisecond})
	t.Cleanup(fake.Close)
	cfg := defaultConfig(t, config.Env{
		"SLACK_BOT_TOKEN":    fakeslack.BotToken,
		"SLACK_APP_TOKEN":    fakeslack.AppToken,
		"RUNBLOCK_HTTP_ADDR": "127.0.0.1:0",
	})
	cfg.Slack.APIURL = fake.APIURL()

	g := newGate()
	closing := make(chan struct{})
	logger := slog.New(signalHandler{testLogger(t).Handler(), "shutting down", closing, &sync.Once{}})
	m := &Main{Config: cfg, Logger: logger, Runner: runnerFunc(g.run)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			m.Close(context.Background())
		}
	})
	if m.Done() != nil {
		t.Error("Main with a chat adapter has a console Done channel")
	}
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if r := m.readiness(); !r.Ready || !r.Adapters["slack"] || len(r.Adapters) != 1 {
		t.Errorf("readiness %+v, want ready with slack only", r)
	}

	channel, user := fake.NewID("C"), fake.NewID("U")
	msg := fake.PutMessage(fakeslack.Message{Channel: channel, User: user,
		Text: "<@" + fakeslack.BotUserID + "> ```python\nslow()\n```"})
	fake.SendEvent(map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": msg.Text, "ts": msg.TS, "event_ts": msg.TS})
	req := <-g.started
	if strings.TrimSpace(req.Code) != "slow()" {
		t.Errorf("code %q, want slow()", req.Code)
	}

	// Release the run only once shutdown has begun.
	go func() {
		<-closing
		close(g.release)
	}()
	closeCtx, cancelClose := context.WithTimeout(context.Background(), time.Minute)
	defer cancelClose()
	closed = true
	if err := m.Close(closeCtx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	replies := fake.BotReplies(channel, msg.TS)
	if len(replies) != 1 || !strings.Contains(replies[0].Text, "finished slow()") {
		t.Errorf("replies in the thread after Close: %+v, want the one reply of the run in flight", replies)
	}
}

// TestSlackEventsAPIMountedUnderSlash checks the Events API wiring: with a
// signing secret, Main serves the adapter's handler under /slack/ on
// RUNBLOCK_HTTP_ADDR, and signatures are checked there.
func TestSlackEventsAPIMountedUnderSlash(t *testing.T) {
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	const secret = "0123456789abcdef0123456789abcdef"
	cfg := defaultConfig(t, config.Env{
		"SLACK_BOT_TOKEN":      fakeslack.BotToken,
		"SLACK_SIGNING_SECRET": secret,
		"RUNBLOCK_HTTP_ADDR":   "127.0.0.1:0",
	})
	cfg.Slack.APIURL = fake.APIURL()
	m := &Main{Config: cfg, Logger: testLogger(t), Runner: runnerFunc(newGate().run)}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})

	post := func(sign string) (int, string) {
		t.Helper()
		body := `{"type":"url_verification","challenge":"c-42","token":"x"}`
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(sign))
		mac.Write([]byte("v0:" + ts + ":" + body))
		req, err := http.NewRequest("POST", "http://"+m.http.Addr()+"/slack/events", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, body := post(secret); code != 200 || body != "c-42" {
		t.Errorf("signed url_verification = %d %q, want 200 c-42", code, body)
	}
	if code, _ := post("not-the-secret"); code != http.StatusUnauthorized {
		t.Errorf("badly signed request = %d, want 401", code)
	}
	if r := m.readiness(); !r.Adapters["slack"] {
		t.Errorf("readiness %+v: slack (Events API) not ready", r)
	}
}

// runblockBinary builds runblock without -race, so that the executors'
// sandboxes start as fast as in production; when go is not at hand it
// returns the test binary itself, which runs main() under runMainEnv.
func runblockBinary(t *testing.T) (path string, env []string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "runblock")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Logf("go build failed, the executors run the test binary: %v\n%s", err, out)
		return os.Args[0], []string{runMainEnv + "=1"}
	}
	return bin, nil
}

// executorProcess is a `runblock executor` process.
type executorProcess struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuffer
}

// startExecutor starts `runblock executor` from bin on a free port of
// 127.0.0.1 and returns once it serves; it is killed at cleanup.
func startExecutor(t *testing.T, ctx context.Context, bin string, env ...string) *executorProcess {
	t.Helper()
	cmd := exec.Command(bin, "executor")
	cmd.Dir = t.TempDir() // no .env
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "RUNBLOCK_") && !strings.HasPrefix(k, "SLACK_") && !strings.HasPrefix(k, "DISCORD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "RUNBLOCK_HTTP_ADDR=127.0.0.1:0", "RUNBLOCK_ALLOW_UNISOLATED=1", "LOG_FORMAT=json")
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &executorProcess{cmd: cmd, logs: &syncBuffer{}}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.logs.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "executor service ready" {
				addr <- line.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-exited:
		t.Fatalf("executor exited before serving:\n%s", p.logs.String())
	case <-ctx.Done():
		t.Fatalf("executor not serving in time:\n%s", p.logs.String())
	}
	return p
}

// recorder notes the order in which the scheduler dispatches runs, and
// holds them until hold is closed.
type recorder struct {
	executor.Runner
	hold chan struct{}
	mu   sync.Mutex
	runs []string // the runs' code
}

func (r *recorder) Run(ctx context.Context, req executor.Request) (executor.Result, error) {
	r.mu.Lock()
	r.runs = append(r.runs, req.Code)
	r.mu.Unlock()
	select {
	case <-r.hold:
	case <-ctx.Done():
		return executor.Result{}, ctx.Err()
	}
	return r.Runner.Run(ctx, req)
}

// TestFailoverAcrossExecutors is the proof on one machine: three `runblock
// executor` processes on 127.0.0.1 and a bot against them through the fake
// Slack. 300 messages from 30 users, each user's ten sent in a burst, all
// get exactly one reply with their output although one executor is killed
// mid-flood, and the bot's scheduler hands the runs out in fair rounds.
func TestFailoverAcrossExecutors(t *testing.T) {
	requirePython(t)
	if testing.Short() {
		t.Skip("starts three executor processes and runs 300 snippets")
	}
	const users, perUser = 30, 10
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const token = "0123456789abcdef-test-token"
	bin, binEnv := runblockBinary(t)
	var urls []string
	var executors []*executorProcess
	for range 3 {
		p := startExecutor(t, ctx, bin, append(binEnv, "RUNBLOCK_CONCURRENCY=2", "RUNBLOCK_POOL=2", "RUNBLOCK_API_TOKEN="+token)...)
		executors = append(executors, p)
		urls = append(urls, p.url)
	}
	env := config.Env{
		"RUNBLOCK_EXECUTOR_URL":  strings.Join(urls, ","),
		"RUNBLOCK_API_TOKEN":     token,
		"RUNBLOCK_USER_RATE":     "off",
		"RUNBLOCK_USER_MAX_JOBS": strconv.Itoa(perUser),
		"RUNBLOCK_QUEUE":         strconv.Itoa(users * perUser),
	}

	// Main wires RUNBLOCK_EXECUTOR_URL: runs go to the executors, and as
	// many at once as they take together.
	console := &Main{Config: defaultConfig(t, env), Logger: testLogger(t), Stdin: strings.NewReader("```python\nprint(6*7)\n```\n"), Stdout: &syncBuffer{}}
	if err := console.Run(ctx); err != nil {
		t.Fatal(err)
	}
	<-console.Done()
	if rd := console.readiness(); rd.Load == nil || rd.Load.Capacity != 6 || rd.Isolation != "remote" {
		t.Errorf("the bot's readiness %+v does not report the executors' capacity", rd)
	}
	if err := console.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if out := console.Stdout.(*syncBuffer).String(); !strings.Contains(out, "42") || console.isolation != "remote" || console.remote.Capacity() != 6 {
		t.Fatalf("console through the executors: output %q, isolation %q, capacity %d", out, console.isolation, console.remote.Capacity())
	}

	fake := fakeslack.New(fakeslack.Options{PingInterval: time.Second})
	t.Cleanup(fake.Close)
	env["SLACK_BOT_TOKEN"], env["SLACK_APP_TOKEN"] = fakeslack.BotToken, fakeslack.AppToken
	cfg := defaultConfig(t, env)
	cfg.Slack.APIURL = fake.APIURL()
	cfg.Scheduler.Concurrency = 6
	logs := &syncBuffer{}
	rr, err := remote.New(ctx, remote.Config{URLs: urls, Token: token, Refresh: 500 * time.Millisecond, Logger: config.NewLogger(logs, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rr.Close() })
	rec := &recorder{Runner: rr, hold: make(chan struct{})}
	m := &Main{Config: cfg, Logger: config.NewLogger(logs, cfg), Runner: rec}
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Error(err)
		}
		if strings.Contains(logs.String(), token) {
			t.Error("the bot's log shows the API token")
		}
		if t.Failed() {
			t.Logf("bot log:\n%s", logs.String())
		}
	})
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}

	channel := fake.NewID("C")
	type sent struct {
		ts, user, code string
		k              int
	}
	var msgs []sent
	for range users {
		user := fake.NewID("U")
		for k := range perUser {
			code := fmt.Sprintf("print('run %s-%d')", user, k)
			msg := fake.PutMessage(fakeslack.Message{Channel: channel, User: user,
				Text: "<@" + fakeslack.BotUserID + "> ```python\n" + code + "\n```"})
			fake.SendEvent(map[string]any{"type": "app_mention", "channel": channel, "user": user, "text": msg.Text, "ts": msg.TS, "event_ts": msg.TS})
			msgs = append(msgs, sent{msg.TS, user, code, k})
		}
	}
	// The first runs wait until every message is in: from then on the
	// order is the scheduler's alone, whatever the pace of the events.
	for st := m.scheduler.Stats(); st.Queued+st.Running < len(msgs); st = m.scheduler.Stats() {
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d messages reached the scheduler", st.Queued+st.Running, len(msgs))
		}
		time.Sleep(time.Millisecond)
	}
	close(rec.hold)

	for i, s := range msgs {
		if i == len(msgs)/3 {
			// Mid-flood: one executor dies with runs in flight and queued.
			if err := executors[1].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		want := fmt.Sprintf("run %s-%d\n", s.user, s.k)
		r, err := fake.WaitMessage(ctx, channel, func(x fakeslack.Message) bool {
			return x.ThreadTS == s.ts && (strings.Contains(x.Text, want) || strings.Contains(x.Text, "unavailable"))
		})
		if err != nil {
			t.Fatalf("message %d (%s-%d) got no reply: %v; replies: %+v", i, s.user, s.k, err, fake.BotReplies(channel, s.ts))
		}
		if !strings.Contains(r.Text, want) {
			t.Errorf("message %d (%s-%d) got %q", i, s.user, s.k, r.Text)
		}
	}
	t.Logf("%d runs retried on another executor after the kill", strings.Count(logs.String(), "executor failed mid-run"))
	for _, s := range msgs {
		if n := len(fake.BotReplies(channel, s.ts)); n != 1 {
			t.Errorf("message %s-%d has %d replies, want exactly 1", s.user, s.k, n)
		}
	}

	// Fairness: the runs that took the free slots at once aside, each user
	// gets one run per round: a user's j-th run (in dispatch order; the
	// adapter handles a burst's messages concurrently) is dispatched among
	// the first j+1 rounds. In arrival order the last user's first run would
	// come after every run of the users before it.
	rec.mu.Lock()
	runs := rec.runs
	rec.mu.Unlock()
	if len(runs) != users*perUser {
		t.Fatalf("%d runs dispatched, want %d", len(runs), users*perUser)
	}
	userOf := map[string]string{}
	for _, s := range msgs {
		userOf[s.code] = s.user
	}
	const slots = 6
	dispatched := map[string]int{}
	for i, code := range runs {
		u := userOf[code]
		if limit := (dispatched[u]+1)*users + slots; i >= limit {
			t.Errorf("%s's run %d was dispatched %dth, past %d: not fair rounds", u, dispatched[u], i+1, limit)
		}
		dispatched[u]++
	}
}

func TestExecutorRefusesAPublicAddressWithoutToken(t *testing.T) {
	var stdout, stderr syncBuffer
	code := run(context.Background(), []string{"executor"}, config.Env{"RUNBLOCK_HTTP_ADDR": ":0"}, strings.NewReader(""), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "RUNBLOCK_API_TOKEN") {
		t.Fatalf("exit %d, stderr %q: want 2 and a word on RUNBLOCK_API_TOKEN", code, stderr.String())
	}
}

// TestExecutorDrainsOnSIGTERM: a stopping executor finishes the run it
// accepted, while /readyz and new runs answer 503 so that bots go
// elsewhere.
func TestExecutorDrainsOnSIGTERM(t *testing.T) {
	requirePython(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startExecutor(t, ctx, os.Args[0], runMainEnv+"=1", "RUNBLOCK_CONCURRENCY=1", "RUNBLOCK_POOL=0", "RUNBLOCK_DRAIN_TIMEOUT=30s")
	type answer struct {
		status int
		body   string
		err    error
	}
	post := func(code string) answer {
		resp, err := http.Post(p.url+"/v1/run", "application/json", strings.NewReader(`{"code":`+strconv.Quote(code)+`}`))
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), err}
	}
	first := make(chan answer, 1)
	go func() {
		first <- post("import sys, time\nprint('started', flush=True)\nsys.stdin.read()\ntime.sleep(1)\nprint('finished')")
	}()
	// Wait until the run holds the only slot.
	for {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		var rd struct{ Load struct{ Running int } }
		_ = json.NewDecoder(resp.Body).Decode(&rd)
		resp.Body.Close()
		if rd.Load.Running == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the run never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("/readyz stayed ready after SIGTERM")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if a := post("print(1)"); a.err != nil || a.status != http.StatusServiceUnavailable {
		t.Errorf("a run while draining: %d %q %v, want 503", a.status, a.body, a.err)
	}
	a := <-first
	if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `finished`) {
		t.Fatalf("the accepted run: %d %q %v; logs:\n%s", a.status, a.body, a.err, p.logs.String())
	}
}

// TestSaveFilesEscapesNames: exec's listing of a run's files cannot be
// forged by a name (a newline, an escape sequence), and the files keep
// their real names on disk.
func TestSaveFilesEscapesNames(t *testing.T) {
	dir := t.TempDir()
	name := "a.txt (text/plain, 1 bytes)\n  /etc/passwd\x1b[2J"
	var out bytes.Buffer
	err := saveFiles(&out, dir, executor.Result{Files: []executor.File{{Path: name, MIME: "text/plain", Size: 1, Content: []byte("a")}},
		FilesOmitted: []executor.OmittedFile{{Path: "b\nforged", Reason: executor.OmitCount}}})
	if err != nil {
		t.Fatal(err)
	}
	want := "files saved in " + dir + ":\n" +
		`  a.txt (text/plain, 1 bytes)\n  /etc/passwd\x1b[2J (text/plain, 1 bytes)` + "\n" +
		`  not returned: b\nforged (over the file count limit)` + "\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
	if data, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(data) != "a" {
		t.Errorf("the file under its real name: %q, %v", data, err)
	}
}
