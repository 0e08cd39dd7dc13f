package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/mcp"
)

// TestCrossSiteRequestsRefused: what a page of another site can make a
// browser send without a preflight (a text/plain or form body, any
// Origin, a rebound DNS name) runs nothing and changes nothing, on every
// endpoint that runs code or changes state, with or without a token; the
// service's own origin, the origins the setting lists and clients that
// send JSON are served. Real HTTP requests on 127.0.0.1.
func TestCrossSiteRequestsRefused(t *testing.T) {
	const token = "a-token-for-the-test-1234"
	var runs atomic.Int32
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		runs.Add(1)
		return executor.Result{Success: true, Stdout: "ran\n"}, nil
	})
	mc := &mcp.Config{Limits: wire.Limits{Timeout: 2 * time.Second, MemoryBytes: 256 << 20}}
	noToken := open(t, r, executor.Config{Concurrency: 1}, api.Config{Origins: []string{"https://notebook.example"}, MCP: mc})
	withToken := open(t, r, executor.Config{Concurrency: 1}, api.Config{Tokens: []string{token}, MCP: mc})
	run := `{"code":"print(1)"}`
	snek := `{"input":"print(1)"}`
	piston := `{"language":"python","version":"*","files":[{"content":"print(1)"}]}`
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	mcpAccept := []string{"Accept", "application/json, text/event-stream"}
	auth := []string{"Authorization", "Bearer " + token}
	own := func(s *service) string { return s.url }
	for _, tc := range []struct {
		name         string
		s            *service
		method, path string
		body         string
		host         string // sent as Host; "" the listener's address
		origin       func(*service) string
		headers      []string
		status       int
		code         string // the native error code, if refused
	}{
		// The browser's case: a simple request from a page of another site.
		{"text/plain from evil", noToken, "POST", "/v1/run", run, "", func(*service) string { return "http://evil.example" }, []string{"Content-Type", "text/plain"}, 403, "forbidden"},
		{"form to /eval from evil", noToken, "POST", "/eval", snek, "", func(*service) string { return "http://evil.example" }, []string{"Content-Type", "application/x-www-form-urlencoded"}, 403, ""},
		{"json to piston from evil", noToken, "POST", "/api/v2/execute", piston, "", func(*service) string { return "http://evil.example" }, []string{"Content-Type", "application/json"}, 403, ""},
		{"null origin", noToken, "POST", "/v1/run", run, "", func(*service) string { return "null" }, []string{"Content-Type", "application/json"}, 403, "forbidden"},
		{"delete from evil", noToken, "DELETE", "/v1/sessions/s1", "", "", func(*service) string { return "http://evil.example" }, nil, 403, "forbidden"},
		{"text/plain without origin", noToken, "POST", "/v1/run", run, "", nil, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"multipart to /eval", noToken, "POST", "/eval", snek, "", nil, []string{"Content-Type", "multipart/form-data; boundary=x"}, 415, ""},
		{"own origin with no type", noToken, "POST", "/v1/run", run, "", own, nil, 415, "unsupported_media_type"},
		{"dns rebinding", noToken, "POST", "/v1/run", run, "evil.example", nil, []string{"Content-Type", "application/json"}, 403, "forbidden"},
		{"rebinding on mcp", noToken, "POST", "/mcp", initialize, "evil.example:80", nil, append([]string{"Content-Type", "application/json"}, mcpAccept...), 403, "forbidden"},
		{"mcp evil with token", withToken, "POST", "/mcp", initialize, "", func(*service) string { return "http://evil.example" }, append(append([]string{"Content-Type", "application/json"}, mcpAccept...), auth...), 403, "forbidden"},
		{"mcp null with token", withToken, "POST", "/mcp", initialize, "", func(*service) string { return "null" }, append(append([]string{"Content-Type", "application/json"}, mcpAccept...), auth...), 403, "forbidden"},
		{"mcp text/plain with token", withToken, "POST", "/mcp", initialize, "", nil, append(append([]string{"Content-Type", "text/plain"}, mcpAccept...), auth...), 415, "unsupported_media_type"},
		{"run evil with token", withToken, "POST", "/v1/run", run, "", func(*service) string { return "https://evil.example" }, append([]string{"Content-Type", "application/json"}, auth...), 403, "forbidden"},
		// Served.
		{"json with charset", noToken, "POST", "/v1/run", run, "", nil, []string{"Content-Type", "application/json; charset=utf-8"}, 200, ""},
		{"own origin", noToken, "POST", "/v1/run", run, "", own, []string{"Content-Type", "application/json"}, 200, ""},
		{"listed origin", noToken, "POST", "/eval", snek, "", func(*service) string { return "https://notebook.example" }, []string{"Content-Type", "application/json"}, 200, ""},
		{"localhost by name", noToken, "POST", "/v1/run", run, "localhost", nil, []string{"Content-Type", "application/json"}, 200, ""},
		{"a script with no type", noToken, "POST", "/api/v2/execute", piston, "", nil, nil, 200, ""},
		{"mcp with token", withToken, "POST", "/mcp", initialize, "", nil, append(append([]string{"Content-Type", "application/json"}, mcpAccept...), auth...), 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runs.Load()
			req, err := http.NewRequest(tc.method, tc.s.url+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(tc.headers); i += 2 {
				req.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			if tc.origin != nil {
				req.Header.Set("Origin", tc.origin(tc.s))
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp := send(t, req)
			if resp.status != tc.status {
				t.Fatalf("status %d %s, want %d", resp.status, resp.body, tc.status)
			}
			if tc.status < 400 {
				return
			}
			if ct := resp.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want a JSON error", ct)
			}
			m := resp.json(t)
			if tc.code != "" && m["code"] != tc.code {
				t.Errorf("code %v, want %q: %s", m["code"], tc.code, resp.body)
			}
			if !strings.Contains(string(resp.body), "Origin") && !strings.Contains(string(resp.body), "Host") && !strings.Contains(string(resp.body), "Content-Type") {
				t.Errorf("the error does not say what was refused: %s", resp.body)
			}
			if n := runs.Load() - before; n != 0 {
				t.Errorf("a refused request ran %d snippets", n)
			}
			if !strings.Contains(tc.s.log.String(), "api request refused") {
				t.Errorf("the refusal is not logged:\n%s", tc.s.log.String())
			}
		})
	}
}
