package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/httpserver"
)

// DefaultCanaryInterval is how often the Service checks that the sandbox
// still runs Python correctly.
const DefaultCanaryInterval = 30 * time.Second

// ServiceConfig configures the Service of `runblock executor`.
type ServiceConfig struct {
	Addr string // RUNBLOCK_HTTP_ADDR
	// Runner is the sandbox the canary runs in, straight (not queued).
	Runner executor.Runner
	// Scheduler is the queue in front of Runner that the API's runs take.
	Scheduler *executor.Scheduler
	// Load reports the scheduler's capacity and queue for /readyz.
	Load func() httpserver.Load
	// API configures the handler; its Scheduler, PythonVersion and Draining
	// are the Service's.
	API Config
	// Ready, when set, is nil while the sandbox serves runs as configured;
	// while it says why not (the sandbox's fork server down and being
	// started again), /readyz is not ready, so balancers and remote
	// runners prefer other executors. Runs are still taken.
	Ready func() error
	// Isolation is the sandbox's tier, reported by /readyz.
	Isolation      string
	Metrics        http.Handler
	CanaryInterval time.Duration // default DefaultCanaryInterval
	Logger         *slog.Logger
}

// Service is `runblock executor`: the execute API, /healthz, /readyz and
// /metrics on one listener. It is ready while the canary holds and it is
// not draining.
type Service struct {
	cfg      ServiceConfig
	log      *slog.Logger
	http     *httpserver.Server
	healthy  atomic.Bool
	draining atomic.Bool
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

// NewService returns a Service; it serves nothing until Open.
func NewService(cfg ServiceConfig) *Service {
	if cfg.CanaryInterval <= 0 {
		cfg.CanaryInterval = DefaultCanaryInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: cfg.Logger}
}

// canaryCode prints the interpreter's version: a run that proves the
// sandbox works end to end, and tells /api/v2/runtimes what it serves.
const canaryCode = `import sys; print("%d.%d.%d" % sys.version_info[:3])`

var versionLine = regexp.MustCompile(`^3\.[0-9]+\.[0-9]+$`)

// canary runs canaryCode and returns the version it printed.
func (s *Service) canary(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.cfg.Runner.Run(ctx, executor.Request{Code: canaryCode})
	if err != nil {
		return "", fmt.Errorf("canary run: %w", err)
	}
	v := strings.TrimSpace(res.Stdout)
	if !res.Success || !versionLine.MatchString(v) {
		return "", fmt.Errorf("canary run: unexpected result (outcome %s, error %q, stdout %q)", res.Outcome(), res.Error, res.Stdout)
	}
	return v, nil
}

// Open runs the canary once (failing fast when the sandbox cannot run
// Python), checks that the listener is safe without a token, starts the
// periodic canary and serves.
func (s *Service) Open(ctx context.Context) error {
	if err := CheckListener(s.cfg.Addr, s.cfg.API.Tokens); err != nil {
		return err
	}
	version, err := s.canary(ctx)
	if err != nil {
		return err
	}
	s.healthy.Store(true)
	ac := s.cfg.API
	ac.Scheduler = s.cfg.Scheduler
	ac.PythonVersion = version
	ac.Draining = s.draining.Load
	ac.Logger = s.log
	s.http = httpserver.New(httpserver.Config{
		Addr:      s.cfg.Addr,
		Metrics:   s.cfg.Metrics,
		Readiness: s.readiness,
		API:       New(ac),
		Logger:    s.log,
	})
	if err := s.http.Open(); err != nil {
		s.http = nil
		return err
	}
	loop, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.wg.Go(func() { s.watch(loop) })
	s.log.Info("executor service ready", "addr", s.http.Addr(), "python", version, "auth", len(ac.Tokens) > 0)
	return nil
}

// Addr is the address the service listens on, once open.
func (s *Service) Addr() string {
	if s.http == nil {
		return ""
	}
	return s.http.Addr()
}

// watch re-runs the canary until ctx ends.
func (s *Service) watch(ctx context.Context) {
	t := time.NewTicker(s.cfg.CanaryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := s.canary(ctx)
		if ctx.Err() != nil {
			return
		}
		was := s.healthy.Swap(err == nil)
		switch {
		case err != nil && was:
			s.log.Error("canary failed: not ready", "err", err)
		case err == nil && !was:
			s.log.Info("canary holds again: ready")
		}
	}
}

func (s *Service) readiness() httpserver.Readiness {
	draining := s.draining.Load()
	sandboxReady := s.cfg.Ready == nil || s.cfg.Ready() == nil
	rd := httpserver.Readiness{
		Ready:     s.healthy.Load() && !draining && sandboxReady,
		Isolation: s.cfg.Isolation,
		Draining:  draining,
	}
	if s.cfg.Load != nil {
		l := s.cfg.Load()
		if s.cfg.API.Sessions != nil {
			l.Sessions = s.cfg.API.Sessions.Live()
		}
		rd.Load = &l
	}
	return rd
}

// Drain makes /readyz and new runs answer 503, so that balancers and remote
// runners go elsewhere; runs already accepted go on.
func (s *Service) Drain() { s.draining.Store(true) }

// Close drains, stops the canary and the listener, letting open requests
// finish until ctx ends. Close the Scheduler first so they can.
func (s *Service) Close(ctx context.Context) error {
	s.Drain()
	if s.stop != nil {
		s.stop()
		s.wg.Wait()
	}
	if s.http == nil {
		return nil
	}
	return s.http.Close(ctx)
}
