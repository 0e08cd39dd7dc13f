// Package cli holds runblock's commands: the command table and usage in
// this file, each command in a file of its own. main wires the process
// (signals, the environment) to Run.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"

	"github.com/runblock/runblock/internal/config"
)

// command is one of runblock's commands: its line of the usage text and
// its body. The settings it reads (only those are validated) are its
// config.Commands entry.
type command struct {
	name    string
	args    string // what follows the name in the usage line
	summary string
	run     func(ctx context.Context, c *invocation, args []string) int
}

// commands is runblock's command table; the first is the default.
func commands() []command {
	return []command{
		{"serve", "", "the default: run every configured chat adapter (the console when no token is set)", runServe},
		{"exec", "[--json] [--timeout 5s] [--memory 256MiB] [--stdin FILE] [--file PATH]... [--out DIR] FILE|-", "run one snippet, print its whole output and save the files it made", runExec},
		{"doctor", "[--json]", "report the isolation layers and the python found", runDoctor},
		{"executor", "", "serve the execute API (native, snekbox and Piston) on RUNBLOCK_HTTP_ADDR for remote bots and clients", runExecutor},
		{"bench", "[--quick] [--json]", "measure bare python, the original and the executor side by side", runBench},
		{"mcp", "", "serve the tool run_python to an LLM assistant over MCP on standard input and output", runMCP},
		{"health", "[--url URL]", "exit 0 when the service on RUNBLOCK_HTTP_ADDR answers /readyz with 200 (a container's health check)", runHealth},
		{"manifest", "slack [--url https://your.host]", "print the Slack app manifest, ready to paste (with --url: of a distributed app)", runManifest},
		{"version", "", "print the version", runVersion},
	}
}

func usage() string {
	var b strings.Builder
	b.WriteString("usage: runblock [command]\n\ncommands:\n")
	for line := range strings.Lines(commandList()) {
		b.WriteString("  " + line)
	}
	b.WriteString("\nSettings come from the environment and .env; see .env.example.\n")
	return b.String()
}

// commandList is the command table as usage shows it, and as README.md's
// Commands block repeats it (a test keeps the two the same).
func commandList() string {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "%-9s%s\n", c.name, c.summary)
		if c.args != "" {
			fmt.Fprintf(&b, "%-9s  runblock %s %s\n", "", c.name, c.args)
		}
	}
	return b.String()
}

// invocation is what a command runs with: the build's version, its
// settings, logger and streams.
type invocation struct {
	version string
	cfg     config.Config
	logger  *slog.Logger
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

// noArguments reports whether command, which takes none, was given none,
// and says so with the usage when it was.
func (c *invocation) noArguments(command string, args []string) bool {
	if len(args) > 0 {
		fmt.Fprintf(c.stderr, "runblock: %s takes no arguments\n\n%s", command, usage())
		return false
	}
	return true
}

// Run is the whole program behind main's signal handling and environment
// loading: it runs the command args name (serve when none) of the build
// version with the settings of env (those of dotenv came from its file)
// and returns the exit status.
func Run(ctx context.Context, version string, args []string, env config.Env, dotenv config.Dotenv, stdin io.Reader, stdout, stderr io.Writer) int {
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
	uses := config.PartsOf(cmd.name)
	cfg, err := config.Parse(env, uses)
	if err == nil && uses&config.Sandbox != 0 && len(cfg.ExecutorURLs) == 0 {
		err = findPython(cfg.Executor.Python)
	}
	if err != nil {
		fmt.Fprintf(stderr, "runblock: %v\n", dotenv.Explain(err))
		return 2
	}
	if name == "serve" && !cfg.SlackEnabled() && !cfg.DiscordEnabled() && classify(stdin) == inputTerminal && !cfg.LogLevelSet {
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
	return cmd.run(ctx, &invocation{version: version, cfg: cfg, logger: logger, stdin: stdin, stdout: stdout, stderr: stderr}, args)
}

// findPython checks that a command that runs the sandbox has a python:
// RUNBLOCK_PYTHON (which config has checked) or python3 on PATH, saying
// what to install or set when there is neither, as config does for a bad
// RUNBLOCK_PYTHON.
func findPython(python string) error {
	if python != "" {
		return nil
	}
	if _, err := exec.LookPath("python3"); err != nil {
		return &config.Error{Var: "RUNBLOCK_PYTHON", Problem: "unset, and there is no python3 on PATH",
			Fix: "install Python 3 (such as apt-get install python3) or set RUNBLOCK_PYTHON to an interpreter such as /usr/bin/python3"}
	}
	return nil
}
