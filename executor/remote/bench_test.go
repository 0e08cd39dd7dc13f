package remote_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/httpserver"
)

// startExecutor serves a real sandbox through the execute API on
// 127.0.0.1, as `runblock executor` does, with the given concurrency and,
// when sessions is set, the sessions of /v1/run.
func startExecutor(tb testing.TB, concurrency int, sessions bool) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := sandbox.New(ctx, sandbox.Config{Pool: concurrency, AllowUnisolated: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	ac := api.Config{Limits: wire.Limits{Timeout: 5 * time.Second, MemoryBytes: 256 << 20, MaxCodeBytes: 1 << 20}}
	var runner executor.Runner = ex
	var m *session.Manager
	if sessions {
		m = session.New(ex, ex, session.Options{SessionBytes: sandbox.DefaultMemoryBytes})
		runner, ac.Sessions = m, m
	}
	sc := executor.Config{Concurrency: concurrency, MaxPerUser: 1000}
	sched := executor.NewScheduler(runner, sc)
	svc := api.NewService(api.ServiceConfig{
		Addr:      "127.0.0.1:0",
		Runner:    ex,
		Scheduler: sched,
		Load: func() httpserver.Load {
			st := sched.Stats()
			return httpserver.Load{Capacity: concurrency, Running: st.Running, Queued: st.Queued, QueueSize: 100}
		},
		API: ac,
	})
	if err := svc.Open(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = sched.Close(context.Background())
		_ = svc.Close(context.Background())
		if m != nil {
			_ = m.Close(context.Background())
		}
		ex.Close()
	})
	return "http://" + svc.Addr()
}

// BenchmarkScaleOut reports runs/s of a sleep-bound snippet (1 s) through
// the remote runner for 1, 2 and 3 executors of concurrency 2 each, the
// runner kept full (as many runs at once as the executors take). A
// CPU-bound snippet would be capped by this machine's cores instead.
//
//	go test ./executor/remote -run '^$' -bench ScaleOut -benchtime 2x
func BenchmarkScaleOut(b *testing.B) {
	const concurrency, perSlot = 2, 3
	var urls []string
	for n := 1; n <= 3; n++ {
		urls = append(urls, startExecutor(b, concurrency, false))
		b.Run(fmt.Sprintf("executors=%d", n), func(b *testing.B) {
			r, err := remote.New(context.Background(), remote.Config{URLs: urls})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			slots := r.Capacity()
			if slots != n*concurrency {
				b.Fatalf("capacity %d, want %d", slots, n*concurrency)
			}
			req := executor.Request{Code: "import time\ntime.sleep(1)"}
			runs := 0
			start := time.Now()
			for b.Loop() {
				var wg sync.WaitGroup
				for range slots {
					wg.Go(func() {
						for range perSlot {
							if res, err := r.Run(context.Background(), req); err != nil || !res.Success {
								b.Errorf("run: %+v, %v", res, err)
							}
						}
					})
				}
				wg.Wait()
				runs += slots * perSlot
			}
			b.ReportMetric(float64(runs)/time.Since(start).Seconds(), "runs/s")
		})
	}
}
