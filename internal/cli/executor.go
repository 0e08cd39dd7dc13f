package cli

import (
	"context"
	"fmt"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/httpserver"
	"github.com/runblock/runblock/internal/metrics"
)

// DefaultExecutorAddr is where `runblock executor` listens without
// RUNBLOCK_HTTP_ADDR: loopback, where it needs no token.
const DefaultExecutorAddr = "127.0.0.1:8080"

// runExecutor is `runblock executor`: the sandbox and its scheduler behind
// the execute API, until a signal; then it drains (not ready, new runs
// refused with 503) and finishes the runs it accepted.
func runExecutor(ctx context.Context, c *invocation, args []string) int {
	if len(args) > 0 {
		fmt.Fprintf(c.stderr, "runblock: executor takes no arguments\n\n%s", usage())
		return 2
	}
	cfg, logger := c.cfg, c.logger
	addr := cfg.HTTPAddr
	if addr == "" {
		addr = DefaultExecutorAddr
	}
	if err := api.CheckListener(addr, cfg.APITokens); err != nil {
		fmt.Fprintf(c.stderr, "runblock executor: %v\n", err)
		return 2
	}
	logger.Info("starting runblock executor", "version", c.version, "config", cfg)
	ec := cfg.Executor
	ec.Logger = logger.With("component", "executor")
	// The API caps code, stdin and files at RUNBLOCK_MAX_CODE_BYTES itself;
	// files and argv travel to the sandbox inside a launcher too, in base64.
	ec.MaxCodeBytes = 3*cfg.Executor.MaxCodeBytes + 64<<10
	ex, err := sandbox.New(ctx, ec)
	if err != nil {
		logger.Error("start-up failed", "err", err)
		return 1
	}
	defer ex.Close()
	reg := metrics.New()
	sc := cfg.Scheduler
	// Clients are the users of the fairness order; a bot is one client
	// sending many runs at once, and keeps its own per-user limits.
	sc.MaxPerUser = sc.Concurrency + sc.QueueSize
	sc.UserRate = 0
	sc.Logger = logger.With("component", "scheduler")
	sc.Metrics = reg
	sched := executor.NewScheduler(ex, sc)
	svc := api.NewService(api.ServiceConfig{
		Addr:      addr,
		Runner:    ex,
		Scheduler: sched,
		Load: func() httpserver.Load {
			st := sched.Stats()
			return httpserver.Load{Capacity: sc.Concurrency, Running: st.Running, Queued: st.Queued, QueueSize: sc.QueueSize}
		},
		API: api.Config{
			Tokens:       cfg.APITokens,
			Timeout:      cfg.Executor.Timeout,
			MemoryBytes:  cfg.Executor.MemoryBytes,
			MaxCodeBytes: cfg.Executor.MaxCodeBytes,
		},
		Isolation: ex.Isolation().Tier,
		Metrics:   reg.Handler(),
		Logger:    logger.With("component", "api"),
	})
	if err := svc.Open(ctx); err != nil {
		logger.Error("start-up failed", "err", err)
		_ = sched.Close(context.Background())
		return 1
	}
	<-ctx.Done()
	logger.Info("signal received: draining")
	svc.Drain()
	drain, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	if err := sched.Close(drain); err != nil {
		logger.Error("shutdown incomplete", "err", err)
	}
	if err := svc.Close(drain); err != nil {
		logger.Error("shutdown incomplete", "err", err)
	}
	return 0
}
