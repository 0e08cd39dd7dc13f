package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/runblock/runblock/bots/discord"
	"github.com/runblock/runblock/executor/sandbox"
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
	if cfg.DiscordEnabled() {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		a, err := discord.CheckAccess(dctx, cfg.Discord)
		fmt.Fprintln(stdout, discordLine(a, err, cfg.Discord.Prefix))
	}
	return status
}

// discordLine is doctor's line on the Discord bot: whether its application
// has the Message Content intent, and which triggers are off without it.
func discordLine(a discord.Access, err error, prefix string) string {
	if err != nil {
		return "discord: cannot tell whether the Message Content intent is granted: " + err.Error()
	}
	return "discord: " + a.Report(prefix)
}

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
