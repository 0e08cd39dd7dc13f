package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/config"
)

// Well-formed fake credentials: they must never appear in any output.
const (
	testBotToken = "xoxb-1111-2222-SECRETBOT"
	testAppToken = "xapp-1-A111-3333-SECRETAPP"
)

func TestMain(m *testing.M) {
	if os.Getenv(withoutLandlockEnv) == "1" {
		os.Exit(doctorWithoutLandlock())
	}
	goleak.VerifyTestMain(m)
}

// run is Run for a dev build.
func run(ctx context.Context, args []string, env config.Env, stdin io.Reader, stdout, stderr io.Writer) int {
	return Run(ctx, "dev", args, env, nil, stdin, stdout, stderr)
}

const fence = "```"

const pipedExample = "please run\n" + fence + "python\nprint(1+1)\n" + fence + "\n"

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
		{name: "manifest of a distributed app", args: []string{"manifest", "slack", "--url", "https://runblock.example.com"}, stdout: "    - https://runblock.example.com/slack/oauth_redirect"},
		{name: "manifest url not https", args: []string{"manifest", "slack", "--url", "http://runblock.example.com"}, code: 2, stderr: "not an https base URL"},
		{name: "manifest stray argument", args: []string{"manifest", "slack", "discord"}, code: 2, stderr: "runblock manifest slack [--url"},
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

// refusingWriter is a standard output that refuses every write, as a
// closed pipe does.
type refusingWriter struct{}

func (refusingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestManifestWriteFailureExits1 proves runblock manifest slack exits 1,
// naming the error, when standard output refuses the manifest, for both
// manifests.
func TestManifestWriteFailureExits1(t *testing.T) {
	for _, args := range [][]string{{"manifest", "slack"}, {"manifest", "slack", "--url", "https://runblock.example.com"}} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, nil, strings.NewReader(""), refusingWriter{}, &stderr); code != 1 {
			t.Errorf("%q: exit %d, want 1", args, code)
		}
		if !strings.Contains(stderr.String(), "broken pipe") {
			t.Errorf("%q: stderr %q, want the write's error", args, stderr.String())
		}
	}
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
}

// TestREADMECommands keeps README.md's Commands block (the first fenced
// block under its "## Commands" heading) the same as the command table.
func TestREADMECommands(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Commands\n")
	if !ok {
		t.Fatal(`README.md has no "## Commands" section`)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	_, block, ok := strings.Cut(section, "```\n")
	if ok {
		block, _, ok = strings.Cut(block, "```\n")
	}
	if !ok {
		t.Fatal("README.md's Commands section has no fenced block")
	}
	if want := commandList(); block != want {
		t.Errorf("README.md's Commands block is not the command table; make it:\n```\n%s```\ngot:\n```\n%s```", want, block)
	}
}

// TestNoPythonOnPath: without python3 on PATH and without RUNBLOCK_PYTHON,
// every command that runs the sandbox says in one line what to install or
// set, as for a bad RUNBLOCK_PYTHON; a bot whose runs go to remote
// executors needs no python.
func TestNoPythonOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, args := range [][]string{{"serve"}, {"exec", "-"}, {"doctor"}, {"executor"}, {"bench"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, nil, strings.NewReader("print(1)\n"), &stdout, &stderr)
		line := stderr.String()
		if code != 2 || !strings.Contains(line, "RUNBLOCK_PYTHON") || !strings.Contains(line, "install Python 3") ||
			strings.Count(strings.TrimRight(line, "\n"), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line on installing python3 or setting RUNBLOCK_PYTHON", args, code, line)
		}
	}
	var stdout, stderr bytes.Buffer
	env := config.Env{"RUNBLOCK_EXECUTOR_URL": "http://127.0.0.1:1"}
	if code := run(context.Background(), []string{"serve"}, env, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Errorf("serve with remote executors: exit %d, stderr %q; want 0", code, stderr.String())
	}
}
