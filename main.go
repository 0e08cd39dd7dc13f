// Command runblock runs Python snippets from team chat: Slack and Discord
// adapters (or a console) pick up code blocks and reply with their output.
// The commands live in internal/cli; main wires the process to them.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/runblock/runblock/internal/bench"
	"github.com/runblock/runblock/internal/cli"
	"github.com/runblock/runblock/internal/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	bench.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one kills the process at once.
	context.AfterFunc(ctx, stop)
	env, dotenv, err := config.LoadEnv(os.Environ(), ".env")
	if err != nil {
		fmt.Fprintf(os.Stderr, "runblock: %v\n", err)
		os.Exit(2)
	}
	os.Exit(cli.Run(ctx, version, os.Args[1:], env, dotenv, os.Stdin, os.Stdout, os.Stderr))
}
