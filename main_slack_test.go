package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/fakeslack"
)

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
