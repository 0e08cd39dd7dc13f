package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
)

const (
	tokenA = "token-a-0123456789abcdef"
	tokenB = "token-b-0123456789abcdef"
)

// sessions opens a Service whose scheduler runs on a session manager in
// front of a real sandbox, with two client tokens.
func sessions(t *testing.T, cfg session.Config) (*service, *session.Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Timeout: 2 * time.Second, MaxCodeBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("executor: %v", err)
	}
	t.Cleanup(func() { ex.Close() })
	m := session.New(ex, ex, session.Options{Config: cfg, SessionBytes: sandbox.DefaultMemoryBytes})
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("closing the sessions: %v", err)
		}
	})
	s := open(t, m, executor.Config{Concurrency: 2}, api.Config{Limits: wire.Limits{Timeout: 2 * time.Second, MaxCodeBytes: 256 << 10}, Tokens: []string{tokenA, tokenB}, Sessions: m})
	return s, m
}

type cellAnswer struct {
	Success bool   `json:"success"`
	Stdout  string `json:"stdout"`
	Error   string `json:"error"`
	Session *struct {
		ID       string `json:"id"`
		Cell     int    `json:"cell"`
		Restored int    `json:"restored"`
		Fresh    bool   `json:"fresh"`
		Ended    bool   `json:"ended"`
	} `json:"session"`
}

// runCell posts code as a cell of session id with token.
func runCell(t *testing.T, s *service, token, id, code string) cellAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"code": code, "session": id})
	r := post(t, s.url+"/v1/run", string(body), "Authorization", "Bearer "+token)
	if r.status != http.StatusOK {
		t.Fatalf("cell %q: status %d: %s", code, r.status, r.body)
	}
	var a cellAnswer
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatal(err)
	}
	if a.Session == nil || a.Session.ID != id {
		t.Fatalf("cell %q: the answer's session is %+v, want id %q: %s", code, a.Session, id, r.body)
	}
	return a
}

func TestAPISessionsShareStateAndProcessPerClient(t *testing.T) {
	s, m := sessions(t, session.Config{})
	first := runCell(t, s, tokenA, "nb-1", "import os\nx = 41\nprint(os.getpid())")
	second := runCell(t, s, tokenA, "nb-1", "x += 1\nprint(x, os.getpid())")
	if second.Stdout != "42 "+first.Stdout || second.Session.Cell != 2 || second.Session.Restored != 0 {
		t.Errorf("second cell: %q, %+v; want 42 and the first cell's pid %q", second.Stdout, *second.Session, first.Stdout)
	}
	other := runCell(t, s, tokenA, "nb-2", "print(globals().get('x'))")
	if other.Stdout != "None\n" || other.Session.Cell != 1 {
		t.Errorf("another session saw %q (%+v)", other.Stdout, *other.Session)
	}
	stranger := runCell(t, s, tokenB, "nb-1", "print(globals().get('x'))")
	if stranger.Stdout != "None\n" || stranger.Session.Cell != 1 {
		t.Errorf("another token's nb-1 saw %q (%+v)", stranger.Stdout, *stranger.Session)
	}
	if m.Live() != 3 {
		t.Errorf("%d live sessions, want 3", m.Live())
	}
	rd := do(t, http.MethodGet, s.url+"/readyz", "")
	if !strings.Contains(string(rd.body), `"sessions":3`) {
		t.Errorf("/readyz does not report the live sessions: %s", rd.body)
	}
	// A run without a session is alone, as ever.
	alone := post(t, s.url+"/v1/run", `{"code": "print(globals().get('x'))"}`, "Authorization", "Bearer "+tokenA)
	if !strings.Contains(string(alone.body), `"stdout":"None\n"`) || strings.Contains(string(alone.body), `"session"`) {
		t.Errorf("a run without a session: %s", alone.body)
	}
}

func TestAPIDeleteEndsASession(t *testing.T) {
	s, m := sessions(t, session.Config{})
	runCell(t, s, tokenA, "nb", "x = 1")
	if r := do(t, http.MethodDelete, s.url+"/v1/sessions/nb", "", "Authorization", "Bearer "+tokenB); r.status != http.StatusNotFound {
		t.Errorf("another token's DELETE: status %d: %s", r.status, r.body)
	}
	r := do(t, http.MethodDelete, s.url+"/v1/sessions/nb", "", "Authorization", "Bearer "+tokenA)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"ended":true`) {
		t.Fatalf("DELETE: status %d: %s", r.status, r.body)
	}
	if m.Live() != 0 {
		t.Errorf("%d live sessions after DELETE", m.Live())
	}
	a := runCell(t, s, tokenA, "nb", "print(globals().get('x'))")
	if a.Stdout != "None\n" || a.Session.Cell != 1 || a.Session.Restored != 0 {
		t.Errorf("after DELETE: %q, %+v", a.Stdout, *a.Session)
	}
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/sessions/never", http.StatusNotFound, `"code":"not_found"`},
		{"/v1/sessions/" + strings.Repeat("x", 129), http.StatusBadRequest, "1 to 128 characters"},
		{"/v1/sessions/a%20b", http.StatusBadRequest, "bad_request"},
	} {
		r := do(t, http.MethodDelete, s.url+tc.path, "", "Authorization", "Bearer "+tokenA)
		if r.status != tc.status || !strings.Contains(string(r.body), tc.code) {
			t.Errorf("DELETE %s: status %d: %s; want %d with %s", tc.path, r.status, r.body, tc.status, tc.code)
		}
	}
}

func TestAPIEvictedSessionIsReplayed(t *testing.T) {
	s, m := sessions(t, session.Config{MaxLive: 1})
	runCell(t, s, tokenA, "a", "x = 40")
	runCell(t, s, tokenA, "a", "raise ValueError('not replayed')")
	runCell(t, s, tokenA, "a", "x += 2")
	runCell(t, s, tokenA, "b", "y = 1") // evicts a
	if m.Live() != 1 {
		t.Errorf("%d live sessions, want 1", m.Live())
	}
	a := runCell(t, s, tokenA, "a", "print(x)")
	if a.Stdout != "42\n" || a.Session.Restored != 2 || a.Session.Cell != 4 {
		t.Errorf("after eviction: %q, %+v; want 42 restored from 2 cells as cell 4", a.Stdout, *a.Session)
	}
}

func TestAPITimeoutEndsTheSessionAndTheNextCellReplays(t *testing.T) {
	s, _ := sessions(t, session.Config{})
	runCell(t, s, tokenA, "a", "x = 7")
	body := `{"code": "while True: pass", "session": "a", "timeout": 0.5}`
	r := post(t, s.url+"/v1/run", body, "Authorization", "Bearer "+tokenA)
	if !strings.Contains(string(r.body), `"timeout":true`) || !strings.Contains(string(r.body), `"ended":true`) {
		t.Fatalf("a cell past its timeout: %s", r.body)
	}
	a := runCell(t, s, tokenA, "a", "print(x)")
	if a.Stdout != "7\n" || a.Session.Restored != 1 {
		t.Errorf("after the timeout: %q, %+v", a.Stdout, *a.Session)
	}
}

func TestAPIReplayFromTheBot(t *testing.T) {
	s, _ := sessions(t, session.Config{})
	body := `{"code": "print(x * y)", "session": "slack:T1:C1:1.2", "replay": [{"code": "x = 6"}, {"code": "y = int(input())", "stdin": "7"}]}`
	r := post(t, s.url+"/v1/run", body, "Authorization", "Bearer "+tokenA)
	if !strings.Contains(string(r.body), `"stdout":"42\n"`) || !strings.Contains(string(r.body), `"restored":2`) {
		t.Errorf("a cell with the bot's replay: %s", r.body)
	}
}

func TestAPISessionBadRequests(t *testing.T) {
	s, _ := sessions(t, session.Config{})
	for _, tc := range []struct{ body, want string }{
		{`{"code": "1", "session": "a b"}`, "session id"},
		{`{"code": "1", "session": 5}`, `field \"session\" must be a string`},
		{`{"code": "1", "replay": [{"code": "x = 1"}]}`, `needs a \"session\"`},
		{`{"code": "1", "session": "a", "replay": [{"code": "x = 1", "session": "b"}]}`, "replay[0]"},
		{`{"code": "1", "session": "a", "replay": [{"code": "x", "files": [{"path": "../up", "content": ""}]}]}`, "replay[0].files[0].path"},
	} {
		r := post(t, s.url+"/v1/run", tc.body, "Authorization", "Bearer "+tokenA)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: status %d: %s; want 400 with %s", tc.body, r.status, r.body, tc.want)
		}
	}
}
