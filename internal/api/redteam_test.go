package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
)

// TestTokenInQueryStringRefused: a token is accepted only in the
// Authorization header, never from the URL (where proxies and access logs
// keep it), on every API, and never reaches the log.
func TestTokenInQueryStringRefused(t *testing.T) {
	const secret = "s3cret-query-token"
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		t.Error("a request with its token in the URL reached the runner")
		return executor.Result{}, nil
	})
	s := open(t, r, executor.Config{Concurrency: 1}, api.Config{Tokens: []string{secret}})
	for _, url := range []string{
		"/v1/run?token=" + secret,
		"/v1/run?access_token=" + secret,
		"/v1/run?api_key=" + secret + "&token=" + secret,
		"/eval?token=" + secret,
		"/api/v2/execute?access_token=" + secret,
	} {
		resp := post(t, s.url+url, `{"code":"1"}`, "Authorization", "Bearer ?token="+secret[:4])
		if resp.status != http.StatusUnauthorized || strings.Contains(string(resp.body), secret) {
			t.Errorf("POST %s: %d %s, want 401 that does not echo the token", url, resp.status, resp.body)
		}
	}
	if strings.Contains(s.log.String(), secret) {
		t.Errorf("the token appears in the log:\n%s", s.log.String())
	}
}

// A body that does not arrive before the server's read deadline is the
// client's delay, answered 408, not a malformed request (400).
func TestSlowBodyIsRequestTimeout(t *testing.T) {
	sched := executor.NewScheduler(canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		t.Error("a request whose body never came reached the runner")
		return executor.Result{}, nil
	}), executor.Config{Concurrency: 1})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := sched.Close(ctx); err != nil {
			t.Errorf("scheduler close: %v", err)
		}
	})
	h := api.New(api.Config{Limits: wire.Limits{Timeout: time.Second, MemoryBytes: 64 << 20, MaxCodeBytes: 1 << 10}, Scheduler: sched})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Headers promise 100 bytes of body; 10 come, and then nothing.
	fmt.Fprintf(conn, "POST /v1/run HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"code\":\"1")
	if err := conn.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "did not arrive in time") {
		t.Errorf("a body cut off by the read deadline got %d %s, want 408", resp.StatusCode, body)
	}
}
