// Package runerror decides, once for every adapter, what becomes of an error
// from the scheduler: whether and how it is logged, and the line the chat
// user sees instead.
package runerror

import (
	"context"
	"log/slog"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/formatting"
)

// Report logs err once, at the level its code deserves (internal detail
// goes to operators only), and returns the friendly line for platform p.
// private reports whether the line is the asker's business alone (busy,
// rate-limited, too large), to be sent where only they see it when the
// platform can. A run abandoned at shutdown (ctx done) is logged at Info.
func Report(ctx context.Context, log *slog.Logger, p formatting.Platform, err error) (text string, private bool) {
	code := executor.ErrorCode(err)
	switch {
	case ctx.Err() != nil:
		log.Info("run abandoned at shutdown", "err", err)
	case code == executor.ErrInternal || code == executor.ErrUnavailable:
		log.Error("run failed", "err", err)
	default:
		log.Info("run refused", "code", string(code), "err", err)
	}
	private = code == executor.ErrBusy || code == executor.ErrRateLimited || code == executor.ErrTooLarge
	return formatting.RenderError(p, err), private
}
