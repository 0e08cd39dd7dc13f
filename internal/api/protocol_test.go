package api_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/api"
)

// TestReadyzFollowsTheSandbox: while the sandbox says it is not ready (its
// fork server down), /readyz answers 503; once it is again, 200.
func TestReadyzFollowsTheSandbox(t *testing.T) {
	r := canaryOK(func(context.Context, executor.Request) (executor.Result, error) {
		return executor.Result{Success: true}, nil
	})
	var down atomic.Bool
	sched := executor.NewScheduler(r, executor.Config{})
	s := api.NewService(api.ServiceConfig{Addr: "127.0.0.1:0", Runner: r, Scheduler: sched, Ready: func() error {
		if down.Load() {
			return errors.New("the fork server is down")
		}
		return nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sched.Close(ctx)
		s.Close(ctx)
	})
	url := "http://" + s.Addr() + "/readyz"
	for _, tt := range []struct {
		down bool
		want int
	}{{false, http.StatusOK}, {true, http.StatusServiceUnavailable}, {false, http.StatusOK}} {
		down.Store(tt.down)
		if got := do(t, http.MethodGet, url, "").status; got != tt.want {
			t.Errorf("sandbox down %v: /readyz %d, want %d", tt.down, got, tt.want)
		}
	}
}
