package httpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/runblock/runblock/internal/httpserver"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, cfg httpserver.Config) *httpserver.Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s := httpserver.New(cfg)
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
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

func TestEndpoints(t *testing.T) {
	ready := httpserver.Readiness{Ready: true, Isolation: "full", Adapters: map[string]bool{"slack": true}}
	s := open(t, httpserver.Config{
		Readiness: func() httpserver.Readiness { return ready },
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "metric 1\n")
		}),
		Slack: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "slack "+r.URL.Path)
		}),
	})
	base := "http://" + s.Addr()

	tests := []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok\n"},
		{"/metrics", 200, "metric 1\n"},
		{"/slack/events", 200, "slack /slack/events"},
		{"/slack/interactive", 200, "slack /slack/interactive"},
		{"/nothing", 404, ""},
	}
	for _, tt := range tests {
		code, body := get(t, base+tt.path)
		if code != tt.code || (tt.body != "" && body != tt.body) {
			t.Errorf("GET %s = %d %q, want %d %q", tt.path, code, body, tt.code, tt.body)
		}
	}

	code, body := get(t, base+"/readyz")
	var got httpserver.Readiness
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 || got.Isolation != "full" || !got.Adapters["slack"] {
		t.Errorf("/readyz = %d %q (%v)", code, body, err)
	}
	ready = httpserver.Readiness{Ready: false, Isolation: "full", Adapters: map[string]bool{"slack": false}}
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"slack":false`) {
		t.Errorf("/readyz when not ready = %d %q, want 503", code, body)
	}
}

func TestOptionalEndpointsOff(t *testing.T) {
	s := open(t, httpserver.Config{})
	base := "http://" + s.Addr()
	for _, p := range []string{"/metrics", "/slack/events"} {
		if code, _ := get(t, base+p); code != 404 {
			t.Errorf("GET %s = %d, want 404 when not configured", p, code)
		}
	}
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz without a readiness func = %d, want 200", code)
	}
}

func TestOpenFailsFastWhenTheAddressIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := httpserver.New(httpserver.Config{Addr: ln.Addr().String()})
	if err := s.Open(); err == nil {
		_ = s.Close(context.Background())
		t.Fatal("Open succeeded on a busy address")
	} else if !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("error %q does not name the address", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close after a failed Open: %v", err)
	}
}

func TestCloseStopsServing(t *testing.T) {
	s := httpserver.New(httpserver.Config{Addr: "127.0.0.1:0"})
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("server still answers after Close")
	}
}
