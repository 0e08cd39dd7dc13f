package cli

import (
	"context"
	"fmt"
	"runtime"
)

// runVersion is `runblock version`.
func runVersion(_ context.Context, c *invocation, _ []string) int {
	fmt.Fprintf(c.stdout, "runblock %s (%s)\n", c.version, runtime.Version())
	return 0
}
