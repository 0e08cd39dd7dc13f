package cli

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// fakeService records the calls runService makes.
type fakeService struct {
	runErr, waitErr error
	calls           []string
}

func (s *fakeService) Run(context.Context) error {
	s.calls = append(s.calls, "run")
	return s.runErr
}

func (s *fakeService) Wait(context.Context) error {
	s.calls = append(s.calls, "wait")
	return s.waitErr
}

func (s *fakeService) Close(context.Context) error {
	s.calls = append(s.calls, "close")
	return nil
}

// TestRunServiceStatus: every command runs, waits for and closes its
// service the one way, and its exit status says whether it failed to
// start (not waited for, not closed again: Run closes what it started) or
// was stopped by an error (closed all the same), such as `runblock mcp`'s
// connection failing.
func TestRunServiceStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      *fakeService
		status int
		calls  string
	}{
		{"clean", &fakeService{}, 0, "run wait close"},
		{"start fails", &fakeService{runErr: errors.New("no python")}, 1, "run"},
		{"stopped by an error", &fakeService{waitErr: errors.New("connection lost")}, 1, "run wait close"},
	} {
		status := runService(context.Background(), tc.s, slog.New(slog.DiscardHandler), time.Second)
		if got := strings.Join(tc.s.calls, " "); status != tc.status || got != tc.calls {
			t.Errorf("%s: status %d, calls %q; want %d, %q", tc.name, status, got, tc.status, tc.calls)
		}
	}
}
