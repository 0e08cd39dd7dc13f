package cli

import (
	"context"
	"log/slog"
	"time"
)

// service is the one shape of the long-running commands (serve,
// executor, mcp): Run starts every part and returns once they are up,
// closing what it started when one cannot start; Wait returns when the
// service is to stop (a signal, ctx, or the end of its input), with the
// error that stopped it, if one did; Close drains and stops every part
// within ctx.
type service interface {
	Run(ctx context.Context) error
	Wait(ctx context.Context) error
	Close(ctx context.Context) error
}

// runService runs s until Wait returns, then closes it within drain, and
// returns the command's exit status: 1 when it could not start or Wait
// says it failed.
func runService(ctx context.Context, s service, logger *slog.Logger, drain time.Duration) int {
	if err := s.Run(ctx); err != nil {
		logger.Error("start-up failed", "err", err)
		return 1
	}
	status := 0
	if err := s.Wait(ctx); err != nil {
		logger.Error("stopped by an error", "err", err)
		status = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		// Past the drain timeout runs are cancelled: that is the bound
		// doing its job, so the exit status stays as it was.
		logger.Error("shutdown incomplete", "err", err)
	}
	return status
}

// failedStartTimeout bounds closing what a Run started before it failed.
const failedStartTimeout = 5 * time.Second

// closeFailedStart closes, with close, what a service's Run started
// before it failed.
func closeFailedStart(close func(context.Context) error, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), failedStartTimeout)
	defer cancel()
	if err := close(ctx); err != nil {
		logger.Debug("closing after failed start", "err", err)
	}
}
