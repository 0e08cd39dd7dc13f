package cli

import (
	"context"
	"fmt"

	"github.com/runblock/runblock/bots/slack"
)

// runManifest is `runblock manifest slack`.
func runManifest(_ context.Context, c *invocation, args []string) int {
	if len(args) != 1 || args[0] != "slack" {
		fmt.Fprintf(c.stderr, "runblock manifest: name the platform: runblock manifest slack\n")
		return 2
	}
	c.stdout.Write(slack.Manifest)
	return 0
}
