package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/config"
	"github.com/runblock/runblock/internal/mcp"
)

// mcpUser is the stdio client's place in the fair queue: one assistant.
const mcpUser = "mcp:stdio"

// runMCP is `runblock mcp`: the tool run_python for an LLM assistant that
// launches runblock, over MCP on standard input and output
// (newline-delimited JSON-RPC); logs go to standard error. It ends when
// the assistant closes standard input.
func runMCP(ctx context.Context, c *invocation, args []string) int {
	if !c.noArguments("mcp", args) {
		return 2
	}
	cfg, logger := c.cfg, c.logger
	ec := cfg.Executor
	ec.Logger = logger.With("component", "executor")
	ec.ListPackages = true // for the tool's description
	ex, err := sandbox.New(ctx, ec)
	if err != nil {
		fmt.Fprintf(c.stderr, "runblock mcp: %v\n", err)
		return 1
	}
	var runner executor.Runner = ex
	sessions := newSessions(cfg, ex, nil, logger)
	if sessions != nil {
		runner = sessions
	}
	sched := executor.NewScheduler(runner, clientScheduler(cfg, logger))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), config.DefaultDrainTimeout)
		defer cancel()
		if err := closeRunners(ctx, sched, sessions, ex); err != nil {
			logger.Error("shutdown incomplete", "err", err)
		}
	}()
	mc := mcpConfig(ctx, cfg, c.version, logger, ex)
	mc.Scheduler = sched
	if sessions != nil {
		mc.Sessions = sessions
	}
	logger.Info("serving MCP on standard input and output", "tool", mcp.ToolRun, "python", mc.PythonVersion, "tier", ex.Isolation().Tier)
	t := mcp.Ordered(&sdk.IOTransport{Reader: io.NopCloser(c.stdin), Writer: nopWriteCloser{c.stdout}})
	if err := mcp.NewServer(mc, mcpUser).Run(ctx, t); err != nil && ctx.Err() == nil {
		fmt.Fprintf(c.stderr, "runblock mcp: %v\n", err)
		return 1
	}
	return 0
}

// mcpConfig is the MCP server's configuration but its Scheduler: the run
// limits of cfg, and the interpreter's version and packages for the
// tool's description.
func mcpConfig(ctx context.Context, cfg config.Config, version string, logger *slog.Logger, ex *sandbox.Executor) mcp.Config {
	mc := mcp.Config{
		Timeout: cfg.Executor.Timeout, MemoryBytes: cfg.Executor.MemoryBytes,
		MaxCodeBytes: cfg.Executor.MaxCodeBytes, MaxFiles: cfg.Executor.MaxFiles, MaxFilesBytes: cfg.Executor.MaxFilesBytes,
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
