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

// storeOpenTimeout bounds reaching the store at start-up, storePingTimeout
// asking it for /readyz.
const (
	storeOpenTimeout = 30 * time.Second
	storePingTimeout = 2 * time.Second
)

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
	cfg := c.cfg
	in := classify(c.stdin)
	if !cfg.SlackEnabled() && !cfg.DiscordEnabled() && in == inputNone {
		// A container without tokens: the console would read nothing and
		// exit 0, which a restart policy turns into a silent loop.
		fmt.Fprintln(c.stderr, "runblock: no chat token is set (SLACK_BOT_TOKEN and SLACK_APP_TOKEN, or DISCORD_BOT_TOKEN) and standard input is neither a terminal nor a pipe, so the console would read nothing: set a token, or pipe messages in")
		return 2
	}
	m := &Main{Version: c.version, Config: cfg, Logger: c.logger, Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr, Interactive: in == inputTerminal}
	return runService(ctx, m, c.logger, cfg.DrainTimeout)
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
	Stderr      io.Writer // where Wait says that a signal cancelled a console run
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
	sc := cfg.Scheduler
	runner, err := m.startRunner(ctx, &sc)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			closeFailedStart(m.Close, m.Logger)
		}
	}()
	if !cfg.SlackEnabled() && !cfg.DiscordEnabled() {
		sc = console.Scheduler(sc)
	}
	queue := m.startScheduler(runner, sc)
	if cfg.Store != "" {
		if m.store, err = openStore(ctx, cfg); err != nil {
			return err
		}
		m.Logger.Info("store open", "store", storeName(cfg.Store))
	}
	slackBot := m.addAdapters(queue, sc)
	if err := m.openHTTP(slackBot); err != nil {
		return err
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

// startRunner starts what runs the snippets: Main's Runner (tests), the
// remote executors (whose capacity becomes sc's concurrency), or the
// sandbox with its sessions.
func (m *Main) startRunner(ctx context.Context, sc *executor.Config) (executor.Runner, error) {
	cfg := m.Config
	m.isolation = "none (test runner)"
	switch {
	case m.Runner != nil:
		return m.Runner, nil
	case len(cfg.ExecutorURLs) > 0:
		rc := remote.Config{URLs: cfg.ExecutorURLs, Timeout: cfg.Executor.Timeout, Logger: m.Logger.With("component", "remote")}
		if len(cfg.APITokens) > 0 {
			rc.Token = cfg.APITokens[0]
		}
		rr, err := remote.New(ctx, rc)
		if err != nil {
			return nil, err
		}
		m.remote, m.isolation = rr, "remote"
		// The executors queue and run; the bot keeps its users' order and
		// limits, and runs as many at once as the executors take.
		if n := rr.Capacity(); n > 0 {
			sc.Concurrency = n
		} else {
			m.Logger.Warn("no remote executor ready yet; runs wait for one", "concurrency", sc.Concurrency, "urls", cfg.ExecutorURLs)
		}
		return rr, nil
	}
	ec := cfg.Executor
	ec.Logger = m.Logger.With("component", "executor")
	ex, err := sandbox.New(ctx, ec)
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	m.exec, m.isolation = ex, ex.Isolation().Tier
	if m.sessions = newSessions(cfg, ex, m.metrics, m.Logger); m.sessions != nil {
		return m.sessions, nil
	}
	return ex, nil
}

// startScheduler starts the scheduler of sc in front of runner, and
// returns the queue the adapters submit to: the scheduler, with End of
// the sessions behind it when there are sessions.
func (m *Main) startScheduler(runner executor.Runner, sc executor.Config) executor.Submitter {
	sc.RunTimeout = m.Config.Executor.Timeout
	sc.Logger = m.Logger.With("component", "scheduler")
	sc.Metrics = m.metrics
	m.scheduler = executor.NewScheduler(runner, sc)
	if m.remote != nil {
		m.remote.OnCapacity(m.scheduler.SetConcurrency)
	}
	switch {
	case m.sessions != nil:
		return endingQueue{m.scheduler, m.sessions}
	case m.remote != nil && !m.Config.Sessions.Disabled:
		return endingQueue{m.scheduler, m.remote}
	}
	return m.scheduler
}

// addAdapters makes the chat adapters that are configured, or the console
// when none is, on queue; it returns the Slack bot, nil without one.
func (m *Main) addAdapters(queue executor.Submitter, sc executor.Config) *slack.Bot {
	cfg := m.Config
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
			MaxMessageBytes: console.MessageBytes(cfg.Executor.MaxCodeBytes),
			Render:          cfg.Render,
			Metrics:         m.metrics,
			NoSessions:      cfg.Sessions.Disabled,
		}, queue, m.Logger)
		m.adapters = append(m.adapters, namedAdapter{"console", m.console})
	}
	return slackBot
}

// openHTTP starts the HTTP server when RUNBLOCK_HTTP_ADDR is set, with the
// Slack bot's Events API and install pages when it takes events over HTTP.
func (m *Main) openHTTP(slackBot *slack.Bot) error {
	cfg := m.Config
	if cfg.HTTPAddr == "" {
		return nil
	}
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
	return nil
}

// Wait returns at a signal (ctx), or once the console's input has ended
// and been answered. At a terminal, a first Ctrl-C cancels the snippet
// running and the console goes on; main restored the default action, so
// a second one exits.
func (m *Main) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		m.Logger.Info("signal received")
		if m.Interactive && m.console != nil && m.console.Interrupt() {
			if m.Stderr != nil {
				fmt.Fprintln(m.Stderr, "runblock: run cancelled; Ctrl-C again quits, Ctrl-D ends the input")
			}
			<-m.Done()
		}
	case <-m.Done():
	}
	return nil
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
	if m.store != nil {
		// Events and installs need the store: a balancer sends them to a
		// replica that has it.
		ctx, cancel := context.WithTimeout(context.Background(), storePingTimeout)
		err := m.store.Ping(ctx)
		cancel()
		r.Store = new(err == nil)
		r.Ready = r.Ready && err == nil
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
	errs = append(errs, closeRunners(ctx, m.scheduler, m.sessions, m.exec))
	if m.remote != nil {
		m.remote.Close()
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
