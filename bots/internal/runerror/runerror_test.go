package runerror

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// TestReport proves each scheduler error is logged exactly once, at Error
// only for the service's own faults (internal, unavailable) and at Info
// for a refusal or a shutdown; that the chat line is the platform's
// friendly one and never carries the internal detail; and that only busy,
// rate-limited and too-large answers are private to the asker.
func TestReport(t *testing.T) {
	const secret = "dial unix /run/secret.sock: connection refused"
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name       string
		ctx        context.Context
		err        error
		level      string
		msg        string
		private    bool
		wantInChat string
	}{
		{"internal", context.Background(), fmt.Errorf("starting: %w", errors.New(secret)), "ERROR", "run failed", false, "Something went wrong"},
		{"unavailable", context.Background(), &executor.Error{Code: executor.ErrUnavailable, Err: errors.New(secret)}, "ERROR", "run failed", false, "Unavailable"},
		{"busy", context.Background(), executor.Errorf(executor.ErrBusy, "the queue is full (9 waiting)"), "INFO", "run refused", true, "Busy"},
		{"rate limited", context.Background(), executor.Errorf(executor.ErrRateLimited, "3 runs a minute"), "INFO", "run refused", true, "Slow down"},
		{"too large", context.Background(), executor.Errorf(executor.ErrTooLarge, "snippet of 2 MiB"), "INFO", "run refused", true, "Too large"},
		{"shutdown", context.Background(), executor.Errorf(executor.ErrShutdown, "closing"), "INFO", "run refused", false, "Restarting"},
		{"abandoned at shutdown", canceled, &executor.Error{Code: executor.ErrInternal, Err: errors.New(secret)}, "INFO", "run abandoned at shutdown", false, "Something went wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range []formatting.Platform{formatting.Console, formatting.Slack, formatting.Discord} {
				var logs bytes.Buffer
				log := slog.New(slog.NewJSONHandler(&logs, nil))
				text, private := Report(tt.ctx, log, p, tt.err)
				if private != tt.private {
					t.Errorf("%s: private = %v, want %v", p, private, tt.private)
				}
				if want := formatting.RenderError(p, tt.err); text != want {
					t.Errorf("%s: text = %q, want the platform's line %q", p, text, want)
				}
				if !strings.Contains(text, tt.wantInChat) {
					t.Errorf("%s: text = %q, want it to say %q", p, text, tt.wantInChat)
				}
				if strings.Contains(text, "secret.sock") {
					t.Errorf("%s: text %q echoes the internal detail to the chat", p, text)
				}
				records := strings.Split(strings.TrimSpace(logs.String()), "\n")
				if len(records) != 1 {
					t.Fatalf("%s: %d log records, want one:\n%s", p, len(records), logs.String())
				}
				var rec struct {
					Level, Msg, Err string
				}
				if err := json.Unmarshal([]byte(records[0]), &rec); err != nil {
					t.Fatal(err)
				}
				if rec.Level != tt.level || rec.Msg != tt.msg {
					t.Errorf("%s: logged %s %q, want %s %q", p, rec.Level, rec.Msg, tt.level, tt.msg)
				}
				if rec.Err != tt.err.Error() {
					t.Errorf("%s: logged err %q, want the whole error %q for operators", p, rec.Err, tt.err.Error())
				}
			}
		})
	}
}
