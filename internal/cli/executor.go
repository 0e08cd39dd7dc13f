package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/executor/wire"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/httpserver"
	"github.com/runblock/runblock/internal/metrics"
)

// DefaultExecutorAddr is where `runblock executor` listens without
// RUNBLOCK_HTTP_ADDR: loopback, where it needs no token.
const DefaultExecutorAddr = "127.0.0.1:8080"

// runExecutor is `runblock executor`: ExecutorMain until a signal; then it
// drains (not ready, new runs refused with 503) and finishes the runs it
// accepted.
func runExecutor(ctx context.Context, c *invocation, args []string) int {
	if !c.noArguments("executor", args) {
		return 2
	}
	cfg, logger := c.cfg, c.logger
	if err := api.CheckListener(executorAddr(cfg), cfg.APITokens); err != nil {
		fmt.Fprintf(c.stderr, "runblock executor: %v\n", err)
		return 2
	}
	return runService(ctx, &ExecutorMain{Version: c.version, Config: cfg, Logger: logger}, logger, cfg.DrainTimeout)
}

func executorAddr(cfg config.Config) string {
	if cfg.HTTPAddr == "" {
		return DefaultExecutorAddr
	}
	return cfg.HTTPAddr
}

// ExecutorMain owns `runblock executor`'s parts: the sandbox, its
// scheduler and the execute API's service.
type ExecutorMain struct {
	Version string // the build's, for the start-up log
	Config  config.Config
	Logger  *slog.Logger

	exec      *sandbox.Executor
	sessions  *session.Manager // nil: sessions are off
	scheduler *executor.Scheduler
	service   *api.Service
}

// Run starts every part and returns once the service serves; it fails fast
// (and closes what it started) when one cannot start.
func (m *ExecutorMain) Run(ctx context.Context) (err error) {
	if m.Logger == nil {
		m.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, logger := m.Config, m.Logger
	logger.Info("starting runblock executor", "version", m.Version, "config", cfg)
	ec := cfg.Executor
	ec.Logger = logger.With("component", "executor")
	ec.ListPackages = true // for the MCP tool's description
	if m.exec, err = sandbox.New(ctx, ec); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			closeFailedStart(m.Close, m.Logger)
		}
	}()
	reg := metrics.New()
	sc := clientScheduler(cfg, logger)
	sc.Metrics = reg
	var runner executor.Runner = m.exec
	var sessions api.Sessions
	if m.sessions = newSessions(cfg, m.exec, reg, logger); m.sessions != nil {
		runner, sessions = m.sessions, m.sessions
	}
	answers := api.NewAnswers(0)
	m.scheduler = executor.NewScheduler(answers.Gate(runner), sc)
	svc := api.NewService(api.ServiceConfig{
		Addr:      executorAddr(cfg),
		Runner:    m.exec,
		Scheduler: m.scheduler,
		Load: func() httpserver.Load {
			st := m.scheduler.Stats()
			return httpserver.Load{Capacity: sc.Concurrency, Running: st.Running, Queued: st.Queued, QueueSize: sc.QueueSize}
		},
		API: api.Config{
			Limits:   frontLimits(cfg),
			Tokens:   cfg.APITokens,
			Origins:  cfg.APIOrigins,
			Answers:  answers,
			Sessions: sessions,
			MCP:      new(mcpConfig(ctx, cfg, m.Version, logger, m.exec)),
		},
		Ready:     m.exec.Ready,
		Isolation: m.exec.Isolation().Tier,
		Metrics:   reg.Handler(),
		Logger:    logger.With("component", "api"),
	})
	if err := svc.Open(ctx); err != nil {
		return listenError(err, executorAddr(cfg), cfg.HTTPAddr != "")
	}
	m.service = svc
	return nil
}

// Addr is the address the service listens on, once it runs.
func (m *ExecutorMain) Addr() string {
	if m.service == nil {
		return ""
	}
	return m.service.Addr()
}

// Wait returns at a signal (ctx); nothing else stops the service.
func (m *ExecutorMain) Wait(ctx context.Context) error {
	<-ctx.Done()
	m.Logger.Info("signal received: draining")
	return nil
}

// Close drains (/readyz and new runs answer 503, so that balancers and
// bots go elsewhere), lets the runs accepted finish until ctx ends, then
// stops the service, the sessions and the sandbox.
func (m *ExecutorMain) Close(ctx context.Context) error {
	if m.service != nil {
		m.service.Drain()
	}
	err := closeRunners(ctx, m.scheduler, nil, nil)
	if m.service != nil {
		// Before the sandbox, which its canary runs in.
		err = errors.Join(err, m.service.Close(ctx))
	}
	return errors.Join(err, closeRunners(ctx, nil, m.sessions, m.exec))
}

// closeRunners closes, each when there is one (not nil), what runs the
// snippets in this process, in the one order every command stops them: the
// scheduler (the runs in flight finish until ctx ends), the live sessions,
// then the sandbox they and the runs use. Its error names each part that
// failed.
func closeRunners(ctx context.Context, sched *executor.Scheduler, sessions *session.Manager, ex *sandbox.Executor) error {
	var errs []error
	if sched != nil {
		if err := sched.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("scheduler: %w", err))
		}
	}
	if sessions != nil {
		if err := sessions.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("sessions: %w", err))
		}
	}
	if ex != nil {
		ex.Close()
	}
	return errors.Join(errs...)
}

// listenError names RUNBLOCK_HTTP_ADDR in err when err is a failure to
// listen on addr (a busy port, an address not of this machine); set says
// whether the setting gave addr or it is the default.
func listenError(err error, addr string, set bool) error {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "listen" {
		return err
	}
	const fix = "stop what holds it or set RUNBLOCK_HTTP_ADDR to a free address"
	if !set {
		return fmt.Errorf("cannot listen on %s (the default without RUNBLOCK_HTTP_ADDR): %w; %s", addr, op.Err, fix)
	}
	return fmt.Errorf("RUNBLOCK_HTTP_ADDR=%s: cannot listen: %w; %s", addr, op.Err, fix)
}

// newSessions is the session manager in front of ex, or nil when
// RUNBLOCK_SESSIONS is off; metrics may be nil.
func newSessions(cfg config.Config, ex *sandbox.Executor, metrics *metrics.Registry, logger *slog.Logger) *session.Manager {
	if cfg.Sessions.Disabled {
		return nil
	}
	opts := session.Options{Config: cfg.Sessions, SessionBytes: cfg.Executor.MemoryBytes, Logger: logger.With("component", "sessions")}
	if metrics != nil {
		opts.Metrics = metrics
	}
	return session.New(ex, ex, opts)
}

// frontLimits are what a request to the execute API or MCP may ask for:
// the executor's settings, the same in every front.
func frontLimits(cfg config.Config) wire.Limits {
	return wire.Limits{Timeout: cfg.Executor.Timeout, MemoryBytes: cfg.Executor.MemoryBytes, MaxCodeBytes: cfg.Executor.MaxCodeBytes}
}

// clientScheduler is the scheduler's configuration where its users are
// clients rather than chat users (the execute API's tokens, an MCP
// assistant): a client sends many runs at once, which wait their turn in
// the queue rather than meet a chat user's rate or job limit (a bot keeps
// its own per-user limits).
func clientScheduler(cfg config.Config, logger *slog.Logger) executor.Config {
	sc := cfg.Scheduler
	sc.MaxPerUser = sc.Concurrency + sc.QueueSize
	sc.UserRate = 0
	sc.Logger = logger.With("component", "scheduler")
	return sc
}
