package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/mcp"
)

// mcpUser is the stdio client's place in the fair queue: one assistant.
const mcpUser = "mcp:stdio"

// runMCP is `runblock mcp`: MCPMain until the assistant closes standard
// input, or a signal.
func runMCP(ctx context.Context, c *invocation, args []string) int {
	if !c.noArguments("mcp", args) {
		return 2
	}
	m := &MCPMain{Version: c.version, Config: c.cfg, Logger: c.logger, Stdin: c.stdin, Stdout: c.stdout}
	return runService(ctx, m, c.logger, config.DefaultDrainTimeout)
}

// MCPMain owns `runblock mcp`'s parts: the sandbox, its sessions and
// scheduler, and the MCP server's connection on standard input and output
// (newline-delimited JSON-RPC), serving the tool run_python to an LLM
// assistant that launched runblock; logs go to standard error.
type MCPMain struct {
	Version string // the build's, for the tool's description
	Config  config.Config
	Logger  *slog.Logger
	Stdin   io.Reader
	Stdout  io.Writer

	exec      *sandbox.Executor
	sessions  *session.Manager // nil: sessions are off
	scheduler *executor.Scheduler
	conn      *sdk.ServerSession
	ended     chan error // the connection's end: its error, for Wait
}

// Run starts every part and returns once the server reads its input; it
// fails fast (and closes what it started) when one cannot start.
func (m *MCPMain) Run(ctx context.Context) (err error) {
	if m.Logger == nil {
		m.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, logger := m.Config, m.Logger
	ec := cfg.Executor
	ec.Logger = logger.With("component", "executor")
	ec.ListPackages = true // for the tool's description
	if m.exec, err = sandbox.New(ctx, ec); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			closeFailedStart(m.Close, m.Logger)
		}
	}()
	var runner executor.Runner = m.exec
	if m.sessions = newSessions(cfg, m.exec, nil, logger); m.sessions != nil {
		runner = m.sessions
	}
	m.scheduler = executor.NewScheduler(runner, clientScheduler(cfg, logger))
	mc := mcpConfig(ctx, cfg, m.Version, logger, m.exec)
	mc.Scheduler = m.scheduler
	if m.sessions != nil {
		mc.Sessions = m.sessions
	}
	t := mcp.Ordered(&sdk.IOTransport{Reader: io.NopCloser(m.Stdin), Writer: nopWriteCloser{m.Stdout}})
	if m.conn, err = mcp.NewServer(mc, mcpUser).Connect(ctx, t, nil); err != nil {
		return err
	}
	m.ended = make(chan error, 1)
	// Ends with the connection, which Close closes; never blocks (the
	// buffer holds the end Wait may not take).
	go func() { m.ended <- m.conn.Wait() }()
	logger.Info("serving MCP on standard input and output", "tool", mcp.ToolRun, "python", mc.PythonVersion, "tier", m.exec.Isolation().Tier)
	return nil
}

// Wait returns at a signal (ctx), or once the input has ended and every
// request read has been answered; its error is the connection's.
func (m *MCPMain) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		m.Logger.Info("signal received")
		return nil
	case err := <-m.ended:
		return err
	}
}

// Close ends the connection (ServerSession.Close returns once it has
// ended), lets the runs in flight finish until ctx ends, then stops the
// sessions and the sandbox.
func (m *MCPMain) Close(ctx context.Context) error {
	var err error
	if m.conn != nil {
		err = m.conn.Close()
	}
	return errors.Join(err, closeRunners(ctx, m.scheduler, m.sessions, m.exec))
}

// mcpConfig is the MCP server's configuration but its Scheduler: the run
// limits of cfg, and the interpreter's version and packages for the
// tool's description.
func mcpConfig(ctx context.Context, cfg config.Config, version string, logger *slog.Logger, ex *sandbox.Executor) mcp.Config {
	mc := mcp.Config{
		Limits: frontLimits(cfg), MaxFiles: cfg.Executor.MaxFiles, MaxFilesBytes: cfg.Executor.MaxFilesBytes,
		PythonVersion: pythonVersion.FindString(ex.Isolation().Python), Version: version,
		Logger: logger.With("component", "mcp"),
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pkgs, err := ex.Packages(ctx)
	if err != nil {
		logger.Warn("the MCP tool's description names no packages", "err", err)
	}
	for _, p := range pkgs {
		mc.Packages = append(mc.Packages, p.Name+" "+p.Version)
	}
	return mc
}

// pythonVersion finds "3.13.5" in the sandbox report's python line.
var pythonVersion = regexp.MustCompile(`3\.[0-9]+\.[0-9]+`)

// nopWriteCloser leaves standard output open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
