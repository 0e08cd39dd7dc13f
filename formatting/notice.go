package formatting

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/runblock/runblock/executor"
)

// Notice is a reply that is not a run.
type Notice int

// Notices.
const (
	NoticeNoCode Notice = iota
	NoticeNotPython
	NoticeChannelNotAllowed
)

// RenderNotice renders a notice ("only Python is supported", ...).
func RenderNotice(p Platform, n Notice) string {
	r := result{p: p}
	switch n {
	case NoticeNotPython:
		return r.bold("Only Python is supported") + " · tag the code block python, or leave the tag off."
	case NoticeChannelNotAllowed:
		return r.bold("Not in this channel") + " · I run code only in the channels I am set up for; a direct message works too."
	default:
		return r.bold("No code found") + " · put the Python code in a block fenced by three backticks."
	}
}

// RenderError renders a rejection or failure for chat: busy, rate limited
// ("try again in 12 s"), too large, shutting down; anything else becomes a
// generic line (details belong in the log, not the chat).
func RenderError(p Platform, err error) string {
	r := result{p: p}
	var e *executor.Error
	var retry time.Duration
	if errors.As(err, &e) {
		retry = e.RetryAfter
	}
	switch executor.ErrorCode(err) {
	case executor.ErrBusy:
		return r.bold("Busy") + " · too many snippets are waiting; " + retryText(retry) + "."
	case executor.ErrRateLimited:
		return r.bold("Slow down") + " · you are running snippets faster than allowed; " + retryText(retry) + "."
	case executor.ErrTooLarge:
		return r.bold("Too large") + " · the snippet or its input is over the size limit."
	case executor.ErrShutdown:
		return r.bold("Restarting") + " · the runner is shutting down; try again in a minute."
	case executor.ErrCanceled:
		return r.bold("Canceled") + " · the run was canceled."
	case executor.ErrUnavailable:
		if retry > 0 {
			// Remote executors down or unreachable: it passes.
			return r.bold("Unavailable") + " · no executor could take the run; " + retryText(retry) + "."
		}
		return r.bold("Unavailable") + " · running code is switched off here for now."
	default:
		return r.bold("Something went wrong") + " · the run failed on our side; it has been logged."
	}
}

// retryText says when to try again, rounding up to whole seconds (minutes
// from 90 s).
func retryText(d time.Duration) string {
	if d <= 0 {
		return "try again in a moment"
	}
	s := int64(math.Ceil(d.Seconds()))
	if s < 90 {
		return "try again in " + strconv.FormatInt(s, 10) + " s"
	}
	return "try again in " + strconv.FormatInt((s+59)/60, 10) + " min"
}

// RenderProgress renders "queued (2 ahead)" / "running".
func RenderProgress(p Platform, pr executor.Progress) string {
	r := result{p: p}
	switch {
	case pr.State == executor.StateRunning:
		return r.note("Running…")
	case pr.Ahead <= 0:
		return r.note("Queued, next up…")
	default:
		return r.note("Queued, " + strconv.Itoa(pr.Ahead) + " ahead…")
	}
}
