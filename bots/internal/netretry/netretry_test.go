package netretry

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

// unreachable is a real dial error: nothing listens on a port just closed.
func unreachable(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = http.Get("http://" + addr + "/api/auth.test")
	if err == nil {
		t.Fatal("a closed port answered")
	}
	return err
}

func TestIsNetwork(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"refused", unreachable(t), true},
		{"dns", &net.DNSError{Err: "no such host", Name: "slack.com", IsNotFound: true}, true},
		{"timeout", &net.OpError{Op: "dial", Err: errors.New("i/o timeout")}, true},
		{"an answer", errors.New("invalid_auth"), false},
		{"cancelled", context.Canceled, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := IsNetwork(tt.err); got != tt.want {
			t.Errorf("%s: IsNetwork(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// sleeps records the waits instead of waiting.
type sleeps struct{ d []time.Duration }

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.d = append(s.d, d)
	return ctx.Err()
}

func TestDo(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	netErr := unreachable(t)
	t.Run("retries network errors, bounded, with backoff", func(t *testing.T) {
		var s sleeps
		calls := 0
		err := Backoff{Initial: time.Second, Max: 3 * time.Second, Attempts: 4, Sleep: s.sleep}.Do(context.Background(), log, "Slack", func(context.Context) error {
			calls++
			return netErr
		})
		var e *Error
		if !errors.As(err, &e) || e.Attempts != 4 || calls != 4 {
			t.Fatalf("err = %v after %d calls, want an *Error after 4", err, calls)
		}
		if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(s.d, want) {
			t.Fatalf("waits %v, want %v", s.d, want)
		}
	})
	t.Run("succeeds once the network is back", func(t *testing.T) {
		var s sleeps
		calls := 0
		err := Backoff{Sleep: s.sleep}.Do(context.Background(), log, "Slack", func(context.Context) error {
			calls++
			if calls < 3 {
				return netErr
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("err = %v after %d calls, want nil after 3", err, calls)
		}
	})
	t.Run("an answer is not retried", func(t *testing.T) {
		var s sleeps
		answer := errors.New("invalid_auth")
		err := Backoff{Sleep: s.sleep}.Do(context.Background(), log, "Slack", func(context.Context) error { return answer })
		if err != answer || len(s.d) != 0 {
			t.Fatalf("err = %v after %d waits, want the answer at once", err, len(s.d))
		}
	})
	t.Run("stops when ctx ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := Backoff{Sleep: func(ctx context.Context, d time.Duration) error {
			cancel()
			return ctx.Err()
		}}.Do(ctx, log, "Discord", func(context.Context) error {
			calls++
			return netErr
		})
		var e *Error
		if !errors.As(err, &e) || calls != 1 {
			t.Fatalf("err = %v after %d calls, want an *Error after 1", err, calls)
		}
	})
}
