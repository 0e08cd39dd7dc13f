package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/bots/console"
	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/slack"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/httpserver"
	"github.com/runblock/runblock/internal/metrics"
	"github.com/runblock/runblock/internal/store"
)

// storeOpenTimeout bounds reaching the store at start-up.
const storeOpenTimeout = 30 * time.Second

// openStore opens RUNBLOCK_STORE with RUNBLOCK_STORE_KEY; an error names
// the setting to look at, never the password.
func openStore(ctx context.Context, cfg config.Config) (store.Store, error) {
	loc, err := store.ParseLocation(cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("RUNBLOCK_STORE: %w", err)
	}
	var key *store.Key
	if cfg.StoreKey != "" {
		if key, err = store.ParseKey(cfg.StoreKey); err != nil {
			return nil, fmt.Errorf("RUNBLOCK_STORE_KEY: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	s, err := store.Open(ctx, loc, store.Options{Key: key})
	switch {
	case errors.Is(err, store.ErrWrongKey):
		return nil, fmt.Errorf("RUNBLOCK_STORE_KEY does not open the tokens in RUNBLOCK_STORE (%s): set the key they were stored with; a lost key means every workspace installs again into a new store", loc.Redacted())
	case errors.Is(err, store.ErrNoKey):
		return nil, fmt.Errorf("RUNBLOCK_STORE_KEY is missing: RUNBLOCK_STORE (%s) holds tokens encrypted with a key: %w", loc.Redacted(), err)
	case err != nil:
		return nil, fmt.Errorf("RUNBLOCK_STORE: cannot open the store: %w", err)
	}
	return s, nil
}

// storeName is the store's location without its password.
func storeName(s string) string {
	loc, err := store.ParseLocation(s)
	if err != nil {
		return "[invalid]"
	}
	return loc.Redacted()
}

// runServe runs Main until a signal or, for the console, the end of input.
func runServe(ctx context.Context, c *invocation, args []string) int {
	if !c.noArguments("serve", args) {
		return 2
	}
	cfg, logger := c.cfg, c.logger
	in := classify(c.stdin)
	if !cfg.SlackEnabled() && !cfg.DiscordEnabled() && in == inputNone {
		// A container without tokens: the console would read nothing and
		// exit 0, which a restart policy turns into a silent loop.
		fmt.Fprintln(c.stderr, "runblock: no chat token is set (SLACK_BOT_TOKEN and SLACK_APP_TOKEN, or DISCORD_BOT_TOKEN) and standard input is neither a terminal nor a pipe, so the console would read nothing: set a token, or pipe messages in")
		return 2
	}
	m := &Main{Version: c.version, Config: cfg, Logger: logger, Stdin: c.stdin, Stdout: c.stdout, Interactive: in == inputTerminal}
	if err := m.Run(ctx); err != nil {
		logger.Error("start-up failed", "err", err)
		return 1
	}
	select {
	case <-ctx.Done():
		logger.Info("signal received")
		// At a terminal, a first Ctrl-C cancels the snippet running and the
		// console goes on; main restored the default action, so a second
		// one exits.
		if m.Interactive && m.console != nil && m.console.Interrupt() {
			fmt.Fprintln(c.stderr, "runblock: run cancelled; Ctrl-C again quits, Ctrl-D ends the input")
			<-m.Done()
		}
	case <-m.Done():
	}
	drain, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	if err := m.Close(drain); err != nil {
		// Past the drain timeout runs are cancelled: that is the bound doing
		// its job, so the exit status stays 0.
		logger.Error("shutdown incomplete", "err", err)
	}
	return 0
}

// botRunner is what the bots submit their runs to: the scheduler.
type botRunner interface {
	Submit(ctx context.Context, job executor.Job) (executor.Result, error)
}

// endingQueue is the scheduler with End of the sessions behind it, so that
// a bot's reset ends the session's live process at once rather than
// leaving it to idle out.
type endingQueue struct {
	*executor.Scheduler
	sessions interface {
		End(ctx context.Context, id string) error
	}
}

func (q endingQueue) End(ctx context.Context, id string) error { return q.sessions.End(ctx, id) }

// adapter is a chat connection Main owns.
type adapter interface {
	Open(ctx context.Context) error
	Close(ctx context.Context) error
	Ready() bool
}

type namedAdapter struct {
	name string
	adapter
}

// Main owns runblock's parts: the executor, the scheduler, the chat adapters
// and the HTTP server.
type Main struct {
	Version     string // the build's, for the start-up log
	Config      config.Config
	Logger      *slog.Logger
	Stdin       io.Reader // the console adapter's input
	Stdout      io.Writer // the console adapter's output
	Interactive bool      // Stdin is a terminal
	// Runner, when set, runs snippets instead of a real executor (tests).
	Runner executor.Runner

	exec      *sandbox.Executor
	sessions  *session.Manager // nil: sessions off, or runs go to remote executors
	remote    *remote.Runner
	isolation string
	metrics   *metrics.Registry
	scheduler *executor.Scheduler
	adapters  []namedAdapter
	console   *console.Bot
	store     store.Store
	http      *httpserver.Server
	draining  atomic.Bool
}

// Run starts every part and returns once they are up; it fails fast (and
// closes what it started) when one cannot start.
func (m *Main) Run(ctx context.Context) (err error) {
	if m.Logger == nil {
		m.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := m.Config
	m.metrics = metrics.New()
	m.Logger.Info("starting runblock", "version", m.Version, "config", cfg)

	runner := m.Runner
	m.isolation = "none (test runner)"
	sc := cfg.Scheduler
	switch {
	case runner != nil:
	case len(cfg.ExecutorURLs) > 0:
		rc := remote.Config{URLs: cfg.ExecutorURLs, Timeout: cfg.Executor.Timeout, Logger: m.Logger.With("component", "remote")}
		if len(cfg.APITokens) > 0 {
			rc.Token = cfg.APITokens[0]
		}
		rr, err := remote.New(ctx, rc)
		if err != nil {
			return err
		}
		m.remote, runner = rr, rr
		m.isolation = "remote"
		// The executors queue and run; the bot keeps its users' order and
		// limits, and runs as many at once as the executors take.
		if n := rr.Capacity(); n > 0 {
			sc.Concurrency = n
		} else {
			m.Logger.Warn("no remote executor ready yet; runs wait for one", "concurrency", sc.Concurrency, "urls", cfg.ExecutorURLs)
		}
	default:
		ec := cfg.Executor
		ec.Logger = m.Logger.With("component", "executor")
		ex, err := sandbox.New(ctx, ec)
		if err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		m.exec, runner = ex, ex
		m.isolation = ex.Isolation().Tier
		if m.sessions = newSessions(cfg, ex, m.metrics, m.Logger); m.sessions != nil {
			runner = m.sessions
		}
	}
	defer func() {
		if err != nil {
			m.closeAfterFailedStart()
		}
	}()

	if !cfg.SlackEnabled() && !cfg.DiscordEnabled() {
		// The console is one local user, whose messages run one after
		// another: the per-user rate is for chat users, and would answer
		// the sixth message of a piped file "Slow down".
		sc.UserRate = 0
	}
	sc.RunTimeout = cfg.Executor.Timeout
	sc.Logger = m.Logger.With("component", "scheduler")
	sc.Metrics = m.metrics
	m.scheduler = executor.NewScheduler(runner, sc)
	if m.remote != nil {
		m.remote.OnCapacity(m.scheduler.SetConcurrency)
	}
	var queue botRunner = m.scheduler
	switch {
	case m.sessions != nil:
		queue = endingQueue{m.scheduler, m.sessions}
	case m.remote != nil && !cfg.Sessions.Disabled:
		queue = endingQueue{m.scheduler, m.remote}
	}

	if cfg.Store != "" {
		if m.store, err = openStore(ctx, cfg); err != nil {
			return err
		}
		m.Logger.Info("store open", "store", storeName(cfg.Store))
	}

	var slackBot *slack.Bot
	if cfg.SlackEnabled() {
		c := cfg.Slack
		c.Metrics = m.metrics
		c.MaxFiles, c.MaxFilesBytes = cfg.Executor.MaxFiles, cfg.Executor.MaxFilesBytes
		c.NoSessions = cfg.Sessions.Disabled
		c.UserRate, c.UserBurst = sc.UserRate, sc.UserBurst
		c.Store = m.store
		c.Limits = slack.Limits{
			Timeout: cfg.Executor.Timeout, MemoryBytes: cfg.Executor.MemoryBytes,
			MaxOutputBytes: cfg.Executor.MaxOutputBytes, MaxCodeBytes: cfg.Executor.MaxCodeBytes, MaxFiles: cfg.Executor.MaxFiles,
		}
		slackBot = slack.New(c, queue, m.Logger.With("adapter", "slack"))
		m.adapters = append(m.adapters, namedAdapter{"slack", slackBot})
	}
	if cfg.DiscordEnabled() {
		c := cfg.Discord
		c.Metrics = m.metrics
		c.UserRate, c.UserBurst = sc.UserRate, sc.UserBurst
		if m.store != nil {
			c.Settings = m.store // else /runblock settings are kept in memory
		}
		c.MaxFiles, c.MaxFilesBytes = cfg.Executor.MaxFiles, cfg.Executor.MaxFilesBytes
		c.NoSessions = cfg.Sessions.Disabled
		m.adapters = append(m.adapters, namedAdapter{"discord", discord.New(c, queue, m.Logger.With("adapter", "discord"))})
	}
	if len(m.adapters) == 0 {
		m.console = console.New(console.Config{
			In:              m.Stdin,
			Out:             m.Stdout,
			Interactive:     m.Interactive,
			MaxMessageBytes: int(2*cfg.Executor.MaxCodeBytes + 64<<10),
			Render:          cfg.Render,
			Metrics:         m.metrics,
			NoSessions:      cfg.Sessions.Disabled,
		}, queue, m.Logger)
		m.adapters = append(m.adapters, namedAdapter{"console", m.console})
	}

	if cfg.HTTPAddr != "" {
		hc := httpserver.Config{
			Addr:      cfg.HTTPAddr,
			Metrics:   m.metrics.Handler(),
			Readiness: m.readiness,
			Logger:    m.Logger.With("component", "http"),
		}
		if slackBot != nil && (cfg.Slack.SigningSecret != "" || cfg.Slack.ClientID != "") {
			hc.Slack = slackBot.Handler()
		}
		m.http = httpserver.New(hc)
		if err := m.http.Open(); err != nil {
			m.http = nil
			return listenError(err, cfg.HTTPAddr, true)
		}
	}

	for i, a := range m.adapters {
		if err := a.Open(ctx); err != nil {
			m.adapters = m.adapters[:i]
			return fmt.Errorf("%s: %w", a.name, err)
		}
		m.Logger.Info("adapter open", "adapter", a.name)
	}
	return nil
}

// closeAfterFailedStart closes what Run opened before it failed.
func (m *Main) closeAfterFailedStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		m.Logger.Debug("closing after failed start", "err", err)
	}
}

// Done is closed when the console's input has ended and every message of it
// has been answered; it is nil (never ready) for the chat adapters, which
// run until a signal.
func (m *Main) Done() <-chan struct{} {
	if m.console == nil {
		return nil
	}
	return m.console.Done()
}

func (m *Main) readiness() httpserver.Readiness {
	r := httpserver.Readiness{
		Ready:     !m.draining.Load(),
		Isolation: m.isolation,
		Adapters:  map[string]bool{},
		Draining:  m.draining.Load(),
	}
	for _, a := range m.adapters {
		ok := a.Ready()
		r.Adapters[a.name] = ok
		r.Ready = r.Ready && ok
	}
	if m.remote != nil {
		// What the remote executors take, and the bot's own queue.
		st := m.scheduler.Stats()
		r.Load = &httpserver.Load{Capacity: m.remote.Capacity(), Running: st.Running, Queued: st.Queued, QueueSize: m.Config.Scheduler.QueueSize}
	}
	return r
}

// Close stops taking messages, lets the runs in flight finish and be
// answered until ctx ends, then stops the scheduler, the executor and the
// HTTP server.
func (m *Main) Close(ctx context.Context) error {
	m.draining.Store(true)
	if m.Logger == nil {
		m.Logger = slog.New(slog.DiscardHandler)
	}
	if dl, ok := ctx.Deadline(); ok {
		m.Logger.Info("shutting down: finishing runs in flight", "within", time.Until(dl).Round(time.Second))
	} else {
		m.Logger.Info("shutting down: finishing runs in flight")
	}
	errs := make([]error, len(m.adapters))
	var wg sync.WaitGroup
	for i, a := range m.adapters {
		wg.Go(func() {
			if err := a.Close(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", a.name, err)
			}
		})
	}
	wg.Wait()
	if m.scheduler != nil {
		if err := m.scheduler.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("scheduler: %w", err))
		}
	}
	errs = append(errs, closeSandbox(ctx, m.sessions, m.exec)...)
	if m.remote != nil {
		if err := m.remote.Close(); err != nil {
			errs = append(errs, fmt.Errorf("remote executors: %w", err))
		}
	}
	if m.http != nil {
		if err := m.http.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store: %w", err))
		}
	}
	return errors.Join(errs...)
}
