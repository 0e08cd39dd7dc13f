// Package netretry tells a failure to reach a chat platform (DNS, dial,
// timeout, a dropped connection) from an answer it gave (a rejected token),
// and retries the first with a bounded backoff, so that an adapter started
// before the network is up waits for it instead of exiting with a message
// that reads like a bad token.
package netretry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Defaults of a zero Backoff: about a minute of tries.
const (
	DefaultInitial  = time.Second
	DefaultMax      = 15 * time.Second
	DefaultAttempts = 7
)

// Error is a failure to reach the platform, after the retries.
type Error struct {
	Platform string // "Slack", "Discord"
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	return "cannot reach " + e.Platform + " (network: DNS, connection or timeout; the token was not checked) after " +
		strconv.Itoa(e.Attempts) + " tries: " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// IsNetwork reports whether err is a failure to reach the other end rather
// than its answer: a DNS failure, a refused, reset or dropped connection, a
// timeout.
func IsNetwork(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var dns *net.DNSError
	var op *net.OpError
	var ne net.Error
	return errors.As(err, &dns) || errors.As(err, &op) ||
		errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// Backoff retries network failures: Attempts tries in all, waiting Initial,
// then twice as long each time up to Max. The zero value uses the defaults.
type Backoff struct {
	Initial  time.Duration
	Max      time.Duration
	Attempts int
	// Sleep waits d or until ctx ends; nil is a timer. Tests inject one.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Do calls fn until it succeeds, fails with anything but a network error,
// or the tries are used up (then the error is an *Error); it stops early
// when ctx ends. log gets a line for each retry.
func (b Backoff) Do(ctx context.Context, log *slog.Logger, platform string, fn func(ctx context.Context) error) error {
	initial, most, attempts, sleep := b.Initial, b.Max, b.Attempts, b.Sleep
	if initial <= 0 {
		initial = DefaultInitial
	}
	if most <= 0 {
		most = DefaultMax
	}
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	if sleep == nil {
		sleep = timerSleep
	}
	wait := initial
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if !IsNetwork(err) || ctx.Err() != nil {
			return err
		}
		if attempt == attempts {
			return &Error{Platform: platform, Attempts: attempts, Err: err}
		}
		log.Warn("cannot reach "+platform+"; retrying (a network problem, not the token)", "retry_in_ms", wait.Milliseconds(), "attempt", attempt, "err", err)
		if serr := sleep(ctx, wait); serr != nil {
			return &Error{Platform: platform, Attempts: attempt, Err: err}
		}
		wait = min(2*wait, most)
	}
}

func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
