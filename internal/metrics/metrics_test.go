package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/bots/console"
	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/slack"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/internal/metrics"
)

var (
	_ executor.Metrics = (*metrics.Registry)(nil)
	_ slack.Metrics    = (*metrics.Registry)(nil)
	_ discord.Metrics  = (*metrics.Registry)(nil)
	_ console.Metrics  = (*metrics.Registry)(nil)
	_ session.Metrics  = (*metrics.Registry)(nil)
)

func scrape(t *testing.T, r *metrics.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: status %d", rec.Code)
	}
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func TestRegistryExposesObservations(t *testing.T) {
	r := metrics.New()
	r.RunFinished("ok", 30*time.Millisecond)
	r.RunFinished("ok", 40*time.Millisecond)
	r.RunFinished("timeout", 5*time.Second)
	r.RunFinished("rejected", 0)
	r.QueueDepth(3)
	r.RateLimited()
	r.MessageReceived("slack")
	r.MessageReceived("slack")
	r.MessageReplied("slack")
	r.Reconnected("discord")
	r.SessionsLive(2)
	r.SessionCell()
	r.SessionReplay("restored", 4)
	r.SessionReplay("fresh", 3)
	r.SessionEvicted("memory")

	body := scrape(t, r)
	for _, want := range []string{
		`runblock_runs_total{outcome="ok"} 2`,
		`runblock_runs_total{outcome="timeout"} 1`,
		`runblock_runs_total{outcome="rejected"} 1`,
		`runblock_runs_total{outcome="memory"} 0`,
		`runblock_runs_total{outcome="output_limit"} 0`,
		`runblock_runs_total{outcome="error"} 0`,
		`runblock_run_duration_seconds_count{outcome="ok"} 2`,
		`runblock_run_duration_seconds_count{outcome="timeout"} 1`,
		`runblock_run_duration_seconds_bucket{outcome="ok",le="0.05"} 2`,
		`runblock_queue_depth 3`,
		`runblock_rate_limited_total 1`,
		`runblock_messages_received_total{platform="slack"} 2`,
		`runblock_messages_replied_total{platform="slack"} 1`,
		`runblock_messages_received_total{platform="console"} 0`,
		`runblock_reconnects_total{platform="discord"} 1`,
		`runblock_sessions_live 2`,
		`runblock_session_cells_total 1`,
		`runblock_session_replays_total{outcome="restored"} 1`,
		`runblock_session_replays_total{outcome="fresh"} 1`,
		`runblock_session_replayed_cells_total 7`,
		`runblock_session_evictions_total{reason="memory"} 1`,
		`runblock_session_evictions_total{reason="idle"} 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !strings.Contains(body, "\ngo_goroutines ") {
		t.Error("metrics lack the Go runtime collector")
	}
	if strings.Contains(body, `runblock_run_duration_seconds_count{outcome="rejected"}`) {
		t.Error("rejections must not be observed in the duration histogram")
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := metrics.New(), metrics.New()
	a.RateLimited()
	if body := scrape(t, b); !strings.Contains(body, "runblock_rate_limited_total 0\n") {
		t.Errorf("second registry saw the first one's count:\n%s", body)
	}
}
