// Command runblock runs Python snippets from team chat: Slack and Discord
// adapters (or a console) pick up code blocks and reply with their output.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runblock/runblock/bots/console"
	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/slack"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/bench"
	"github.com/runblock/runblock/internal/httpserver"
	"github.com/runblock/runblock/internal/metrics"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	sandbox.Main()
	bench.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills the process at once.
	context.AfterFunc(ctx, stop)
	env, err := LoadEnv(os.Environ(), ".env")
	if err != nil {
		fmt.Fprintf(os.Stderr, "runblock: %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(ctx, os.Args[1:], env, os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage: runblock [command]

commands:
  serve    run every configured chat adapter (the default; the console when no token is set)
  exec     run one snippet: runblock exec [--json] [--timeout 5s] [--memory 256MiB] FILE|-
  doctor   report the isolation layers and the python found: runblock doctor [--json]
  bench    measure bare python, the original and the executor side by side: runblock bench [--json]
  version  print the version

Settings come from the environment and .env; see .env.example.
`

// run is the whole program behind main's signal handling and environment
// loading; it returns the exit status.
func run(ctx context.Context, args []string, env Env, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || args[0] == "-h" || args[0] == "--help") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "version":
		fmt.Fprintf(stdout, "runblock %s (%s)\n", version, runtime.Version())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve", "exec", "doctor", "bench":
	default:
		fmt.Fprintf(stderr, "runblock: unknown command %q\n\n%s", cmd, usage)
		return 2
	}

	cfg, err := ParseConfig(env)
	if err != nil {
		fmt.Fprintf(stderr, "runblock: %v\n", err)
		return 2
	}
	if cmd == "serve" && !cfg.SlackEnabled() && !cfg.DiscordEnabled() && isTerminal(stdin) && !cfg.LogLevelSet {
		// Someone at a terminal: keep the console free of routine log lines.
		cfg.LogLevel = slog.LevelWarn
	}
	logger := newLogger(stderr, cfg)
	for _, w := range cfg.Warnings {
		logger.Warn("unknown setting ignored (a typo?)", "variable", w)
	}
	switch cmd {
	case "exec":
		return runExec(ctx, cfg, logger, args, stdin, stdout, stderr)
	case "doctor":
		return runDoctor(ctx, cfg, logger, args, stdout, stderr)
	case "bench":
		return runBench(ctx, cfg, logger, args, stdout, stderr)
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "runblock: serve takes no arguments\n\n%s", usage)
		return 2
	}
	return serve(ctx, cfg, logger, stdin, stdout)
}

// serve runs Main until a signal or, for the console, the end of input.
func serve(ctx context.Context, cfg Config, logger *slog.Logger, stdin io.Reader, stdout io.Writer) int {
	m := &Main{Config: cfg, Logger: logger, Stdin: stdin, Stdout: stdout, Interactive: isTerminal(stdin)}
	if err := m.Run(ctx); err != nil {
		logger.Error("start-up failed", "err", err)
		return 1
	}
	select {
	case <-ctx.Done():
		logger.Info("signal received")
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

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newLogger returns the service's logger, writing text or JSON to w and
// redacting every credential of cfg from every message and attribute.
func newLogger(w io.Writer, cfg Config) *slog.Logger {
	secrets := cfg.Secrets()
	opts := &slog.HandlerOptions{
		Level: cfg.LogLevel,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if len(secrets) == 0 {
				return a
			}
			var s string
			switch a.Value.Kind() {
			case slog.KindString:
				s = a.Value.String()
			case slog.KindAny:
				s = fmt.Sprint(a.Value.Any())
			default:
				return a
			}
			redacted := s
			for _, secret := range secrets {
				redacted = strings.ReplaceAll(redacted, secret, "[redacted]")
			}
			if redacted == s {
				return a
			}
			return slog.String(a.Key, redacted)
		},
	}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

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
	Config      Config
	Logger      *slog.Logger
	Stdin       io.Reader // the console adapter's input
	Stdout      io.Writer // the console adapter's output
	Interactive bool      // Stdin is a terminal
	// Runner, when set, runs snippets instead of a real executor (tests).
	Runner executor.Runner

	exec      *sandbox.Executor
	isolation string
	metrics   *metrics.Registry
	scheduler *executor.Scheduler
	adapters  []namedAdapter
	console   *console.Bot
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
	m.Logger.Info("starting runblock", "version", version, "config", cfg)

	runner := m.Runner
	m.isolation = "none (test runner)"
	if runner == nil {
		ec := cfg.Executor
		ec.Logger = m.Logger.With("component", "executor")
		ex, err := sandbox.New(ctx, ec)
		if err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		m.exec, runner = ex, ex
		m.isolation = ex.Isolation().Tier
	}
	defer func() {
		if err != nil {
			m.closeAfterFailedStart()
		}
	}()

	sc := cfg.Scheduler
	sc.Logger = m.Logger.With("component", "scheduler")
	sc.Metrics = m.metrics
	m.scheduler = executor.NewScheduler(runner, sc)

	var slackBot *slack.Bot
	if cfg.SlackEnabled() {
		c := cfg.Slack
		c.Metrics = m.metrics
		slackBot = slack.New(c, m.scheduler, m.Logger.With("adapter", "slack"))
		m.adapters = append(m.adapters, namedAdapter{"slack", slackBot})
	}
	if cfg.DiscordEnabled() {
		c := cfg.Discord
		c.Metrics = m.metrics
		m.adapters = append(m.adapters, namedAdapter{"discord", discord.New(c, m.scheduler, m.Logger.With("adapter", "discord"))})
	}
	if len(m.adapters) == 0 {
		m.console = console.New(console.Config{
			In:              m.Stdin,
			Out:             m.Stdout,
			Interactive:     m.Interactive,
			MaxMessageBytes: int(2*cfg.Executor.MaxCodeBytes + 64<<10),
			Render:          cfg.Render,
			Metrics:         m.metrics,
		}, m.scheduler, m.Logger)
		m.adapters = append(m.adapters, namedAdapter{"console", m.console})
	}

	if cfg.HTTPAddr != "" {
		hc := httpserver.Config{
			Addr:      cfg.HTTPAddr,
			Metrics:   m.metrics.Handler(),
			Readiness: m.readiness,
			Logger:    m.Logger.With("component", "http"),
		}
		if slackBot != nil && cfg.Slack.SigningSecret != "" {
			hc.Slack = slackBot.Handler()
		}
		m.http = httpserver.New(hc)
		if err := m.http.Open(); err != nil {
			m.http = nil
			return err
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
	if m.exec != nil {
		if err := m.exec.Close(); err != nil {
			errs = append(errs, fmt.Errorf("executor: %w", err))
		}
	}
	if m.http != nil {
		if err := m.http.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runExec is `runblock exec`: one snippet, straight to the executor.
func runExec(ctx context.Context, cfg Config, logger *slog.Logger, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print the result as one JSON object")
	timeout := fs.Duration("timeout", 0, "time limit such as 5s (default RUNBLOCK_TIMEOUT)")
	memory := fs.String("memory", "", "memory limit such as 256MiB; a bare number is MiB (default RUNBLOCK_MEMORY_MB)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "runblock exec: give one FILE, or - for standard input")
		return 2
	}
	req := executor.Request{Timeout: *timeout}
	if *timeout < 0 {
		fmt.Fprintln(stderr, "runblock exec: --timeout must be positive, such as 5s")
		return 2
	}
	if *memory != "" {
		n, err := parseSize(*memory, 1<<20)
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "runblock exec: --memory %q: use a size such as 256MiB\n", *memory)
			return 2
		}
		req.MemoryBytes = n
	}
	code, err := readSnippet(files[0], stdin, cfg.Executor.MaxCodeBytes)
	if err != nil {
		fmt.Fprintf(stderr, "runblock exec: %v\n", err)
		return 1
	}
	req.Code = code

	ec := cfg.Executor
	ec.Pool = 0
	ec.Logger = logger
	ex, err := sandbox.New(ctx, ec)
	if err != nil {
		fmt.Fprintf(stderr, "runblock exec: %v\n", err)
		return 1
	}
	defer func() {
		if err := ex.Close(); err != nil {
			logger.Warn("closing executor", "err", err)
		}
	}()
	res, err := ex.Run(ctx, req)
	if err != nil {
		fmt.Fprintf(stderr, "runblock exec: %v\n", err)
		return 1
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "runblock exec: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(stdout, strings.TrimRight(formatting.Render(formatting.Console, res, cfg.Render).Text, "\n"))
	return 0
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// readSnippet reads the snippet from path ("-": r), reading at most one byte
// past max so that the executor can refuse an oversized snippet.
func readSnippet(path string, r io.Reader, max int64) (string, error) {
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return string(b), nil
}

// runDoctor is `runblock doctor`: which isolation layers work here.
func runDoctor(ctx context.Context, cfg Config, logger *slog.Logger, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ec := cfg.Executor
	ec.Pool = 0
	ec.Logger = logger
	rep, probeErr := sandbox.Doctor(ctx, ec)
	status := 0
	if probeErr != nil {
		fmt.Fprintf(stderr, "runblock doctor: %v\n", probeErr)
		status = 1
	}
	if *jsonOut {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return 1
		}
		return status
	}
	fmt.Fprintf(stdout, "python: %s\ntier:   %s\n", rep.Python, rep.Tier)
	for _, l := range rep.Layers {
		state := "off"
		switch {
		case l.Active && l.Verified:
			state = "on, verified"
		case l.Active:
			state = "on, not verified"
		}
		line := fmt.Sprintf("  %-20s %s", l.Name, state)
		if l.Detail != "" {
			line += " (" + l.Detail + ")"
		}
		fmt.Fprintln(stdout, line)
	}
	return status
}

// runBench is `runblock bench`: the side-by-side performance report.
func runBench(ctx context.Context, cfg Config, logger *slog.Logger, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := bench.Options{Executor: cfg.Executor, Logger: logger}
	fs.BoolVar(&opts.JSON, "json", false, "print the report as one JSON object")
	fs.IntVar(&opts.Concurrency, "concurrency", 0, "parallel level measured beside 1 (default NumCPU)")
	fs.IntVar(&opts.HelloRuns, "hello-runs", 0, "print('hello') runs per phase (default 200)")
	fs.IntVar(&opts.HumanEvalPrograms, "programs", 0, "HumanEval programs to run (default all)")
	fs.StringVar(&opts.SharedDir, "shared", "", "directory with reference/ and data/ (default ../shared)")
	fs.BoolVar(&opts.SkipOriginal, "skip-original", false, "do not run the original seed_bench.py")
	fs.BoolVar(&opts.SkipFlood, "skip-flood", false, "do not measure memory under an output flood")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := bench.Run(ctx, opts, stdout); err != nil {
		fmt.Fprintf(stderr, "runblock bench: %v\n", err)
		return 1
	}
	return 0
}
