package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/syncbuf"

	"github.com/bwmarrin/discordgo"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/fakediscord"
	"github.com/runblock/runblock/internal/fakeslack"
	"github.com/runblock/runblock/internal/httpserver"
	"github.com/runblock/runblock/internal/store"
	"github.com/runblock/runblock/internal/store/storetest"
)

// TestShutdownLetsTheRunInFlightFinish drives Main with the console adapter
// over a pipe: a run is in flight when Close starts; Close stops reading,
// waits for the run, and the reply is printed before Close returns.
func TestShutdownLetsTheRunInFlightFinish(t *testing.T) {
	g := newGate()
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &syncbuf.Buffer{}
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
	out := &syncbuf.Buffer{}
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
	out := &syncbuf.Buffer{}
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
	if err == nil || !strings.Contains(err.Error(), "RUNBLOCK_HTTP_ADDR="+ln.Addr().String()) {
		_ = m.Close(context.Background())
		t.Fatalf("Run = %v, want a listen error naming RUNBLOCK_HTTP_ADDR and the address", err)
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
	logs := &syncbuf.Buffer{}
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
			_ = m.Close(context.Background())
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

// TestConsoleHasNoRateLimit: the console is one local user, exempt from
// the per-user rate of chat users: every message of a piped file past the
// burst (5 at the default 5/min) is answered, none with "Slow down".
func TestConsoleHasNoRateLimit(t *testing.T) {
	const n = 12
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "%spython\nprint(%d)\n%s\n\n", fence, i, fence)
	}
	out := &syncbuf.Buffer{}
	m := &Main{
		Config: defaultConfig(t, nil),
		Logger: testLogger(t),
		Stdin:  strings.NewReader(in.String()),
		Stdout: out,
		Runner: runnerFunc(func(_ context.Context, req executor.Request) (executor.Result, error) {
			return executor.Result{Success: true, Stdout: "ran " + strings.TrimSpace(req.Code) + "\n"}, nil
		}),
	}
	if m.Config.Scheduler.UserRate <= 0 || m.Config.Scheduler.UserBurst >= n {
		t.Fatalf("the default rate %v/s, burst %d would not limit %d messages", m.Config.Scheduler.UserRate, m.Config.Scheduler.UserBurst, n)
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
	for i := range n {
		if want := fmt.Sprintf("ran print(%d)\n", i); !strings.Contains(out.String(), want) {
			t.Errorf("message %d not run; output:\n%s", i, out.String())
		}
	}
	if strings.Contains(out.String(), "Slow down") {
		t.Errorf("the console was rate-limited:\n%s", out.String())
	}
}

// distributedEnv is the environment of a distributed Slack app on the
// store at loc.
func distributedEnv(loc, key string) config.Env {
	return config.Env{
		"SLACK_CLIENT_ID": fakeslack.ClientID, "SLACK_CLIENT_SECRET": fakeslack.ClientSecret,
		"SLACK_SIGNING_SECRET": "0123456789abcdef0123456789abcdef", "RUNBLOCK_HTTP_ADDR": "127.0.0.1:0",
		"RUNBLOCK_STORE": loc, "RUNBLOCK_STORE_KEY": key,
	}
}

const (
	storeKey      = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	otherStoreKey = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

// TestDistributedSlackThroughMain: with SLACK_CLIENT_ID and no bot token,
// serve opens the store and serves the install page under /slack/.
func TestDistributedSlackThroughMain(t *testing.T) {
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	cfg := defaultConfig(t, distributedEnv(storetest.SQLite(t), storeKey))
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
	resp, err := http.Get("http://" + m.http.Addr() + "/slack/install")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Add to Slack") {
		t.Errorf("/slack/install = %d %s", resp.StatusCode, body)
	}
	if r := m.readiness(); !r.Ready || !r.Adapters["slack"] {
		t.Errorf("readiness %+v", r)
	}
}

// TestStoreThatDoesNotOpenStopsStartUp: a store that cannot be reached, or
// whose tokens the key does not open, stops start-up with an error naming
// the setting, never the password.
func TestStoreThatDoesNotOpenStopsStartUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "postgres://runblock:SECRETpassword@" + ln.Addr().String() + "/runblock?sslmode=disable&connect_timeout=5"
	ln.Close()

	sqlite := storetest.SQLite(t)
	loc, _ := store.ParseLocation(sqlite)
	key, _ := store.ParseKey(storeKey)
	s, err := store.Open(context.Background(), loc, store.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveInstallation(context.Background(), store.Installation{TeamID: "T1", BotToken: "xoxb-SECRET"}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	for _, tc := range []struct {
		name, loc, key, want string
	}{
		{"down", down, storeKey, "RUNBLOCK_STORE: cannot open the store"},
		{"wrong key", sqlite, otherStoreKey, "RUNBLOCK_STORE_KEY does not open the tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Main{Config: defaultConfig(t, distributedEnv(tc.loc, tc.key)), Logger: testLogger(t), Runner: runnerFunc(newGate().run)}
			err := m.Run(context.Background())
			if err == nil {
				_ = m.Close(context.Background())
				t.Fatal("Run started")
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("Run = %v, want %q and no secret", err, tc.want)
			}
		})
	}
}

// TestRejectedSlackTokenSaysWhatToDo: a bot token Slack refuses stops
// start-up with one "slack:" prefix and the fix, never the token.
func TestRejectedSlackTokenSaysWhatToDo(t *testing.T) {
	fake := fakeslack.New(fakeslack.Options{})
	t.Cleanup(fake.Close)
	const wrong = "xoxb-1-2-WRONGTOKEN"
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"serve"}, config.Env{
		"SLACK_BOT_TOKEN": wrong, "SLACK_APP_TOKEN": fakeslack.AppToken, "SLACK_API_URL": fake.APIURL(),
	}, strings.NewReader(""), io.Discard, &stderr)
	out := stderr.String()
	if code != 1 || strings.Count(out, "slack:") != 1 || !strings.Contains(out, "OAuth & Permissions") || !strings.Contains(out, "invalid_auth") {
		t.Errorf("exit %d, stderr %q: want 1 and one slack: prefix, the cause and the fix", code, out)
	}
	if strings.Contains(out, wrong) {
		t.Errorf("stderr shows the token: %q", out)
	}
}

// TestConsoleTracebackNamesTheReplysCell: after a timeout ends the
// console's live python, the next cell rebuilds the state from the
// successful cells only, so python numbers it 2; its reply is [4], and
// its traceback names <cell 4>, as the reply does.
func TestConsoleTracebackNamesTheReplysCell(t *testing.T) {
	requirePython(t)
	cells := []string{"a = 1", "raise ValueError('kept')", "import time; time.sleep(30)", "def f():\n    return a / 0\nf()"}
	var in strings.Builder
	for _, c := range cells {
		in.WriteString(fence + "python\n" + c + "\n" + fence + "\n\n")
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), nil, config.Env{"RUNBLOCK_ALLOW_UNISOLATED": "1", "RUNBLOCK_TIMEOUT": "1s"}, strings.NewReader(in.String()), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	replies := strings.Split(strings.TrimSpace(stdout.String()), "\n\n")
	if len(replies) != len(cells) {
		t.Fatalf("%d replies, want %d:\n%s", len(replies), len(cells), stdout.String())
	}
	last := replies[3]
	if !strings.HasPrefix(last, "[4] · state rebuilt from 1 earlier cell") || !strings.Contains(last, `File "<cell 4>", line 3`) || !strings.Contains(last, `File "<cell 4>", line 2, in f`) {
		t.Errorf("the rebuilt cell's reply does not name <cell 4>:\n%s", last)
	}
}

// TestWiringIsShort: the start of each service reads as its phases, at
// most maxWiringLines lines: what grows goes into a named phase or into
// the package that owns it, not into Run.
func TestWiringIsShort(t *testing.T) {
	const maxWiringLines = 60
	fset := token.NewFileSet()
	for file, recv := range map[string]string{"serve.go": "Main", "executor.go": "ExecutorMain", "mcp.go": "MCPMain"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "Run" || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); !ok || star.X.(*ast.Ident).Name != recv {
				continue
			}
			found = true
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxWiringLines {
				t.Errorf("(*%s).Run is %d lines, over %d: move a phase into a method or the package that owns it", recv, n, maxWiringLines)
			}
		}
		if !found {
			t.Errorf("%s has no (*%s).Run", file, recv)
		}
	}
}
