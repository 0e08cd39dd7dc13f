package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
	"github.com/runblock/runblock/formatting"
)

// runDoctor is `runblock doctor`: which isolation layers work here, and,
// with a Discord token, which of the bot's triggers work.
func runDoctor(ctx context.Context, c *invocation, args []string) int {
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
	writeReport(stdout, rep, ec.DisableForkServer)
	if probeErr == nil {
		if line := stackLine(rep.Packages); line != "" {
			fmt.Fprintln(stdout, line)
		}
	}
	fmt.Fprint(stdout, sessionsText(cfg.Sessions, cfg.Executor.MemoryBytes))
	if cfg.DiscordEnabled() {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		a, err := discord.CheckAccess(dctx, cfg.Discord)
		fmt.Fprintln(stdout, discordLine(a, err, cfg.Discord.Prefix))
	}
	return status
}

// scientificStack is what the README's examples import: without it,
// plots and tables fail.
var scientificStack = []string{"numpy", "pandas", "matplotlib"}

// stackLine is doctor's line on the scientific stack when the python
// cannot import part of it (pkgs are the packages it can): what fails
// and how to fix it; "" when it has all of it.
func stackLine(pkgs []sandbox.Package) string {
	var missing []string
	for _, name := range scientificStack {
		if !slices.ContainsFunc(pkgs, func(p sandbox.Package) bool { return p.Name == name }) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "scientific stack: this python cannot import " + strings.Join(missing, ", ") +
		", so snippets that use them (plots, tables) fail with ModuleNotFoundError; install them for it" +
		" (Debian, Ubuntu: apt-get install python3-numpy python3-pandas python3-matplotlib) or set RUNBLOCK_PYTHON" +
		" to a python that has them (python3 -m venv ~/rb && ~/rb/bin/pip install numpy pandas matplotlib, then RUNBLOCK_PYTHON=$HOME/rb/bin/python)"
}

// discordLine is doctor's line on the Discord bot: whether its application
// has the Message Content intent, and which triggers are off without it.
func discordLine(a discord.Access, err error, prefix string) string {
	if err != nil {
		return "discord: cannot tell whether the Message Content intent is granted: " + err.Error()
	}
	return "discord: " + a.Report(prefix)
}

// sessionsText is doctor's paragraph on sessions: how they work, their
// limits and what they cost; memory is the limit of one run (and of one
// session).
func sessionsText(c session.Config, memory int64) string {
	if c.Disabled {
		return "sessions: off (RUNBLOCK_SESSIONS=off): every message runs alone, from nothing\n"
	}
	c.Idle = cmp.Or(c.Idle, session.DefaultIdle)
	c.MaxLive = cmp.Or(c.MaxLive, session.DefaultMaxLive)
	c.MemoryBytes = cmp.Or(c.MemoryBytes, session.DefaultMemoryBytes)
	return fmt.Sprintf(`sessions: on: the cells of a thread (or of an API or MCP session id) share one live Python
  limits: %s for a whole session, each cell its own timeout; at most %d live (RUNBLOCK_SESSION_MAX) and %s together (RUNBLOCK_SESSION_MEMORY), the least recently used evicted past either
  memory: a live session counts at what its sandbox holds, read after each cell (an idle one about 6 MiB: %d idle fit); one whose sandbox cannot be read counts at its %s limit, so %s holds at least %d
  idle: a session's process ends after %s without a cell (RUNBLOCK_SESSION_IDLE)
  between cells: the session's processes are stopped (SIGSTOP; continued with the next cell), so what a cell left running uses no CPU until then
  cost: no CPU while idle, before its first cell and between cells (its processes stopped, the sandbox's init blocked until the next cell); a few MiB of its own for a bare interpreter, 20-100 MiB once pandas or matplotlib are loaded with data
  after an eviction, an idle end, a timeout or the memory limit, the next cell replays the earlier successful cells (within %s) and says so
`, formatting.SizeText(memory), c.MaxLive, formatting.SizeText(c.MemoryBytes),
		min(int64(c.MaxLive), c.MemoryBytes/idleSessionBytes), formatting.SizeText(memory), formatting.SizeText(c.MemoryBytes), min(int64(c.MaxLive), max(c.MemoryBytes/max(memory, 1), 1)),
		formatting.SettingDuration(c.Idle), formatting.DurationText(session.DefaultReplayBudget))
}

// idleSessionBytes is about what an idle session's sandbox holds, forked
// or cold (measured: 6 to 7 MiB, its init's included).
const idleSessionBytes = 6 << 20

// writeReport is doctor's report as text; forkServerOff is
// RUNBLOCK_FORKSERVER=off.
func writeReport(w io.Writer, rep sandbox.Report, forkServerOff bool) {
	fmt.Fprintf(w, "python: %s\ntier:   %s\n", rep.Python, rep.Tier)
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
		fmt.Fprintln(w, line)
	}
	if len(rep.FailedTiers) > 0 {
		fmt.Fprintln(w, "stronger tiers tried first, and why they do not work here:")
		for _, f := range rep.FailedTiers {
			fmt.Fprintf(w, "  %s: %s\n", f.Layers, f.Reason)
		}
	}
	if len(rep.Packages) > 0 {
		fmt.Fprintln(w, "packages:")
		for _, p := range rep.Packages {
			fmt.Fprintf(w, "  %-20s %s\n", p.Name, p.Version)
		}
	}
	if rep.FontCache != "" {
		fmt.Fprintf(w, "matplotlib font cache: %s\n", rep.FontCache)
	}
	fmt.Fprintln(w, forkServerLine(rep.ForkServer, forkServerOff))
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
