package wire

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/runblock/runblock/executor"
)

// Failure is what every front answers for a request that failed: the
// HTTP status (or its equal in the front's own protocol), the message the
// client is shown, and the level it is logged at.
type Failure struct {
	Status     int
	Message    string
	Level      slog.Level
	RetryAfter time.Duration
}

// InternalMessage is what a client is shown of a failure on the server's
// side; the error itself is logged.
const InternalMessage = "internal error"

// FailureOf decides, in one place for every front, what a failed
// request's client is shown and what is logged: a client's mistake
// (ErrInvalid, ErrTooLarge, a busy queue, a cancelled request) is shown
// in full and logged at Debug; a server that cannot run it now
// (ErrUnavailable, ErrShutdown) is shown as such and logged at Warn; any
// other error is internal: logged at Error and shown as InternalMessage.
func FailureOf(err error) Failure {
	var e *executor.Error
	if !errors.As(err, &e) {
		return Failure{Status: http.StatusInternalServerError, Message: InternalMessage, Level: slog.LevelError}
	}
	f, ok := failures[e.Code]
	if !ok {
		return Failure{Status: http.StatusInternalServerError, Message: InternalMessage, Level: slog.LevelError}
	}
	if e.Message != "" && e.Code != executor.ErrCanceled {
		f.Message = e.Message
	}
	if f.RetryAfter > 0 {
		f.RetryAfter = max(e.RetryAfter, f.RetryAfter)
	}
	return f
}

// failures are FailureOf's answers by code, each with the message shown
// when the error has none of its own and the least RetryAfter.
var failures = map[executor.Code]Failure{
	executor.ErrBusy:        {Status: http.StatusTooManyRequests, Message: "too many snippets are waiting", Level: slog.LevelDebug, RetryAfter: time.Second},
	executor.ErrRateLimited: {Status: http.StatusTooManyRequests, Message: "too many snippets", Level: slog.LevelDebug, RetryAfter: time.Second},
	executor.ErrTooLarge:    {Status: http.StatusRequestEntityTooLarge, Message: "the request is over the size limit", Level: slog.LevelDebug},
	executor.ErrInvalid:     {Status: http.StatusBadRequest, Message: "the request is not valid", Level: slog.LevelDebug},
	executor.ErrCanceled:    {Status: 499, Message: "the request was cancelled", Level: slog.LevelDebug},
	executor.ErrShutdown:    {Status: http.StatusServiceUnavailable, Message: "the executor is shutting down, try another one", Level: slog.LevelWarn, RetryAfter: time.Second},
	executor.ErrUnavailable: {Status: http.StatusServiceUnavailable, Message: "executor unavailable, try again", Level: slog.LevelWarn, RetryAfter: time.Second},
}

// RetryText is f's message with when to try again, for a front that has
// no Retry-After header to say it.
func (f Failure) RetryText() string {
	if f.RetryAfter <= 0 {
		return f.Message
	}
	return fmt.Sprintf("%s (try again in %d s)", f.Message, int64(math.Ceil(f.RetryAfter.Seconds())))
}
