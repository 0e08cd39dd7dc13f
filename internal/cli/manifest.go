package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"

	"github.com/runblock/runblock/bots/slack"
)

// runManifest is `runblock manifest slack [--url BASE]`: without --url the
// manifest of one workspace over Socket Mode, with it the manifest of a
// distributed app served at BASE.
func runManifest(_ context.Context, c *invocation, args []string) int {
	const use = "runblock manifest: name the platform: runblock manifest slack [--url https://your.host]\n"
	if len(args) == 0 || args[0] != "slack" {
		fmt.Fprint(c.stderr, use)
		return 2
	}
	fs := flag.NewFlagSet("manifest slack", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("url", "", "the public base URL of a distributed app")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		fmt.Fprint(c.stderr, use)
		return 2
	}
	if *base == "" {
		return c.writeOut("manifest", slack.Manifest)
	}
	u, err := url.Parse(*base)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		fmt.Fprintf(c.stderr, "runblock manifest: --url %q is not an https base URL: Slack sends events and installs only to https, such as --url https://runblock.example.com\n", *base)
		return 2
	}
	m, err := slack.DistributionManifest(*base)
	if err != nil {
		fmt.Fprintf(c.stderr, "runblock manifest: %v\n", err)
		return 1
	}
	return c.writeOut("manifest", m)
}

// writeOut writes b on standard output, and returns the command's exit
// status: 1, with the error on standard error, when the write failed.
func (c *invocation) writeOut(command string, b []byte) int {
	if _, err := c.stdout.Write(b); err != nil {
		fmt.Fprintf(c.stderr, "runblock %s: writing to standard output: %v\n", command, err)
		return 1
	}
	return 0
}
