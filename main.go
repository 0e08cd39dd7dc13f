// Command runblock runs Python snippets from team chat: Slack and Discord
// adapters (or a console) pick up code blocks and reply with their output.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runblock/runblock/bots/console"
	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/bots/slack"
	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/remote"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/formatting"
	"github.com/runblock/runblock/internal/api"
	"github.com/runblock/runblock/internal/bench"
	"github.com/runblock/runblock/internal/config"
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
	env, err := config.LoadEnv(os.Environ(), ".env")
	if err != nil {
		fmt.Fprintf(os.Stderr, "runblock: %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(ctx, os.Args[1:], env, os.Stdin, os.Stdout, os.Stderr))
}

// command is one of runblock's commands: its line of the usage text, the
// settings it reads (only those are validated) and its body.
type command struct {
	name    string
	args    string // what follows the name in the usage line
	summary string
	uses    config.Part
	run     func(ctx context.Context, c *cli, args []string) int
}

// commands is runblock's command table; the first is the default.
func commands() []command {
	return []command{
		{"serve", "", "run every configured chat adapter (the console when no token is set)", config.All, runServe},
		{"exec", "[--json] [--timeout 5s] [--memory 256MiB] [--stdin FILE] [--file PATH]... [--out DIR] FILE|-", "run one snippet, print its whole output and save the files it made", config.Sandbox, runExec},
		{"doctor", "[--json]", "report the isolation layers and the python found", config.Sandbox, runDoctor},
		{"executor", "", "serve the execute API (native, snekbox and Piston) on RUNBLOCK_HTTP_ADDR for remote bots and clients", config.Sandbox | config.Scheduler | config.HTTP | config.Remote, runExecutor},
		{"bench", "[--json]", "measure bare python, the original and the executor side by side", config.Sandbox, runBench},
		{"manifest", "slack", "print the Slack app manifest, ready to paste", 0, runManifest},
		{"version", "", "print the version", 0, runVersion},
	}
}

func usage() string {
	var b strings.Builder
	b.WriteString("usage: runblock [command]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-9s%s\n", c.name, c.summary)
		if c.args != "" {
			fmt.Fprintf(&b, "  %-9s  runblock %s %s\n", "", c.name, c.args)
		}
	}
	b.WriteString("\nSettings come from the environment and .env; see .env.example.\n")
	return b.String()
}

// cli is what a command runs with: its settings, logger and streams.
type cli struct {
	cfg    config.Config
	logger *slog.Logger
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// run is the whole program behind main's signal handling and environment
// loading; it returns the exit status.
func run(ctx context.Context, args []string, env config.Env, stdin io.Reader, stdout, stderr io.Writer) int {
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" || (len(args) > 0 && (args[0] == "-h" || args[0] == "--help") && name == "serve") {
		fmt.Fprint(stdout, usage())
		return 0
	}
	i := slices.IndexFunc(commands(), func(c command) bool { return c.name == name })
	if i < 0 {
		fmt.Fprintf(stderr, "runblock: unknown command %q\n\n%s", name, usage())
		return 2
	}
	cmd := commands()[i]
	cfg, err := config.Parse(env, cmd.uses)
	if err != nil {
		fmt.Fprintf(stderr, "runblock: %v\n", err)
		return 2
	}
	if name == "serve" && !cfg.SlackEnabled() && !cfg.DiscordEnabled() && isTerminal(stdin) && !cfg.LogLevelSet {
		// Someone at a terminal: keep the console free of routine log lines.
		cfg.LogLevel = slog.LevelWarn
	}
	logger := config.NewLogger(stderr, cfg)
	for _, w := range cfg.Warnings {
		logger.Warn("unknown setting ignored (a typo?)", "variable", w)
	}
	for _, n := range cfg.Notes {
		logger.Info(n)
	}
	return cmd.run(ctx, &cli{cfg: cfg, logger: logger, stdin: stdin, stdout: stdout, stderr: stderr}, args)
}

func runVersion(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintf(c.stdout, "runblock %s (%s)\n", version, runtime.Version())
	return 0
}

// runManifest is `runblock manifest slack`.
func runManifest(_ context.Context, c *cli, args []string) int {
	if len(args) != 1 || args[0] != "slack" {
		fmt.Fprintf(c.stderr, "runblock manifest: name the platform: runblock manifest slack\n")
		return 2
	}
	c.stdout.Write(slack.Manifest)
	return 0
}

// runServe runs Main until a signal or, for the console, the end of input.
func runServe(ctx context.Context, c *cli, args []string) int {
	if len(args) > 0 {
		fmt.Fprintf(c.stderr, "runblock: serve takes no arguments\n\n%s", usage())
		return 2
	}
	cfg, logger := c.cfg, c.logger
	m := &Main{Config: cfg, Logger: logger, Stdin: c.stdin, Stdout: c.stdout, Interactive: isTerminal(c.stdin)}
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

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
	Config      config.Config
	Logger      *slog.Logger
	Stdin       io.Reader // the console adapter's input
	Stdout      io.Writer // the console adapter's output
	Interactive bool      // Stdin is a terminal
	// Runner, when set, runs snippets instead of a real executor (tests).
	Runner executor.Runner

	exec      *sandbox.Executor
	remote    *remote.Runner
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
	sc := cfg.Scheduler
	switch {
	case runner != nil:
	case len(cfg.ExecutorURLs) > 0:
		rc := remote.Config{URLs: cfg.ExecutorURLs, Logger: m.Logger.With("component", "remote")}
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
	}
	defer func() {
		if err != nil {
			m.closeAfterFailedStart()
		}
	}()

	sc.RunTimeout = cfg.Executor.Timeout
	sc.Logger = m.Logger.With("component", "scheduler")
	sc.Metrics = m.metrics
	m.scheduler = executor.NewScheduler(runner, sc)
	if m.remote != nil {
		m.remote.OnCapacity(m.scheduler.SetConcurrency)
	}

	var slackBot *slack.Bot
	if cfg.SlackEnabled() {
		c := cfg.Slack
		c.Metrics = m.metrics
		c.MaxFiles, c.MaxFilesBytes = cfg.Executor.MaxFiles, cfg.Executor.MaxFilesBytes
		slackBot = slack.New(c, m.scheduler, m.Logger.With("adapter", "slack"))
		m.adapters = append(m.adapters, namedAdapter{"slack", slackBot})
	}
	if cfg.DiscordEnabled() {
		c := cfg.Discord
		c.Metrics = m.metrics
		c.MaxFiles, c.MaxFilesBytes = cfg.Executor.MaxFiles, cfg.Executor.MaxFilesBytes
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
	if m.exec != nil {
		if err := m.exec.Close(); err != nil {
			errs = append(errs, fmt.Errorf("executor: %w", err))
		}
	}
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
	return errors.Join(errs...)
}

// runExec is `runblock exec`: one snippet, straight to the executor, its
// whole output printed. With --json it prints exactly one JSON object
// whatever happens: the result, or {"error", "code"} when the run was
// refused or could not start.
func runExec(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	jsonOut := fs.Bool("json", false, "print the outcome as one JSON object")
	timeout := fs.Duration("timeout", 0, "time limit such as 5s (default RUNBLOCK_TIMEOUT)")
	memory := fs.String("memory", "", "memory limit such as 256MiB; a bare number is MiB (default RUNBLOCK_MEMORY)")
	stdinFile := fs.String("stdin", "", "file whose content is the snippet's standard input")
	var inputs []string
	fs.Func("file", "put this file into the snippet's work dir under its base name (repeatable)", func(p string) error {
		inputs = append(inputs, p)
		return nil
	})
	outDir := fs.String("out", "", "save the files the snippet made here (default: a fresh directory, named on output)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	// fail reports an outcome that is not a run result, as JSON when asked.
	fail := func(status int, code executor.Code, err error) int {
		if *jsonOut {
			writeJSON(c.stdout, map[string]string{"error": err.Error(), "code": string(code)})
		} else {
			fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
		}
		return status
	}
	usageErr := func(msg string) int { return fail(2, "usage", errors.New(msg)) }
	if len(files) != 1 {
		return usageErr("give one FILE, or - for standard input")
	}
	if *timeout < 0 {
		return usageErr("--timeout must be positive, such as 5s")
	}
	req := executor.Request{Timeout: *timeout}
	if *memory != "" {
		n, err := config.ParseSize(*memory, 1<<20)
		if err != nil || n <= 0 {
			return usageErr(fmt.Sprintf("--memory %q: use a size such as 256MiB", *memory))
		}
		req.MemoryBytes = n
	}
	if req.Code, err = readLimited(files[0], c.stdin, c.cfg.Executor.MaxCodeBytes); err != nil {
		return fail(1, "input", err)
	}
	if *stdinFile != "" {
		if req.Stdin, err = readLimited(*stdinFile, c.stdin, c.cfg.Executor.MaxCodeBytes); err != nil {
			return fail(1, "input", err)
		}
	}
	for _, p := range inputs {
		content, err := readLimited(p, c.stdin, c.cfg.Executor.MaxFilesBytes)
		if err != nil {
			return fail(1, "input", err)
		}
		name, err := executor.CleanPath(filepath.Base(p))
		if err != nil {
			return fail(1, executor.ErrorCode(err), err)
		}
		req.Files = append(req.Files, executor.File{Path: name, Size: int64(len(content)), Content: []byte(content)})
	}

	ec := c.cfg.Executor
	ec.Pool = 0
	ec.Logger = c.logger
	ex, err := sandbox.New(ctx, ec)
	if err != nil {
		return fail(1, executor.ErrorCode(err), err)
	}
	defer func() {
		if err := ex.Close(); err != nil {
			c.logger.Warn("closing executor", "err", err)
		}
	}()
	res, err := ex.Run(ctx, req)
	if err != nil {
		return fail(1, executor.ErrorCode(err), err)
	}
	if *jsonOut {
		if err := writeJSON(c.stdout, res); err != nil {
			fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
			return 1
		}
		return 0
	}
	whole := formatting.RenderOptions{MaxLines: math.MaxInt, MaxChars: math.MaxInt}
	fmt.Fprintln(c.stdout, strings.TrimRight(formatting.Render(formatting.Console, res, whole).Text, "\n"))
	if err := saveFiles(c.stdout, *outDir, res); err != nil {
		fmt.Fprintf(c.stderr, "runblock exec: %v\n", err)
		return 1
	}
	return 0
}

// saveFiles writes the run's files under dir (a fresh directory when "")
// and lists them, with those that did not come back.
func saveFiles(w io.Writer, dir string, res executor.Result) error {
	if len(res.Files) == 0 && len(res.FilesOmitted) == 0 {
		return nil
	}
	if len(res.Files) > 0 {
		var err error
		if dir == "" {
			dir, err = os.MkdirTemp("", "runblock-files-")
		} else {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			return err
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer root.Close()
		fmt.Fprintf(w, "files saved in %s:\n", dir)
		for _, f := range res.Files {
			if d := filepath.Dir(f.Path); d != "." {
				if err := root.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if err := root.WriteFile(f.Path, f.Content, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(w, "  %s (%s, %d bytes)\n", f.Path, f.MIME, f.Size)
		}
	}
	for _, f := range res.FilesOmitted {
		fmt.Fprintf(w, "  not returned: %s (%s)\n", f.Path, f.Reason)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
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

// readLimited reads path ("-": r), reading at most one byte past max so
// that the executor can refuse an oversized snippet or input.
func readLimited(path string, r io.Reader, max int64) (string, error) {
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

// DefaultExecutorAddr is where `runblock executor` listens without
// RUNBLOCK_HTTP_ADDR: loopback, where it needs no token.
const DefaultExecutorAddr = "127.0.0.1:8080"

// runExecutor is `runblock executor`: the sandbox and its scheduler behind
// the execute API, until a signal; then it drains (not ready, new runs
// refused with 503) and finishes the runs it accepted.
func runExecutor(ctx context.Context, c *cli, args []string) int {
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
	logger.Info("starting runblock executor", "version", version, "config", cfg)
	ec := cfg.Executor
	ec.Logger = logger.With("component", "executor")
	// The API caps code, stdin and files at RUNBLOCK_MAX_CODE_BYTES itself;
	// a request that is more than a plain snippet goes with its launcher.
	ec.MaxCodeBytes = cfg.Executor.MaxCodeBytes + api.LauncherBytes
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
		Ready:     ex.Ready,
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

// runDoctor is `runblock doctor`: which isolation layers work here.
func runDoctor(ctx context.Context, c *cli, args []string) int {
	cfg, logger, stdout, stderr := c.cfg, c.logger, c.stdout, c.stderr
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
	if len(rep.Packages) > 0 {
		fmt.Fprintln(stdout, "packages:")
		for _, p := range rep.Packages {
			fmt.Fprintf(stdout, "  %-20s %s\n", p.Name, p.Version)
		}
	}
	if rep.FontCache != "" {
		fmt.Fprintf(stdout, "matplotlib font cache: %s\n", rep.FontCache)
	}
	fmt.Fprintln(stdout, forkServerLine(rep.ForkServer, ec.DisableForkServer))
	return status
}

// forkServerLine is doctor's line on the fork server: on and how, or the
// report's detail, which says off or unavailable and why (runs then start
// a sandbox from scratch).
func forkServerLine(fs sandbox.ForkServerReport, disabled bool) string {
	switch {
	case fs.Active:
		return "fork server: on (" + cmp.Or(fs.Detail, "each run is a fork of it") + ")"
	case fs.Detail != "":
		return "fork server: " + fs.Detail
	case disabled:
		return "fork server: off (RUNBLOCK_FORKSERVER=off): each run starts a sandbox from scratch"
	default:
		return "fork server: unavailable, each run starts a sandbox from scratch"
	}
}

// runBench is `runblock bench`: the side-by-side performance report.
func runBench(ctx context.Context, c *cli, args []string) int {
	cfg, logger, stdout, stderr := c.cfg, c.logger, c.stdout, c.stderr
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
	fs.BoolVar(&opts.SkipPlot, "skip-plot", false, "do not measure the numpy and matplotlib plot snippet")
	fs.IntVar(&opts.PlotRuns, "plot-runs", 0, "runs of the plot snippet per row (default 10)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := bench.Run(ctx, opts, stdout); err != nil {
		fmt.Fprintf(stderr, "runblock bench: %v\n", err)
		return 1
	}
	return 0
}
