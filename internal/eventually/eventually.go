// Package eventually is the tests' one wait for a condition that has no
// channel to wait on: a count in a scheduler, a process in /proc, a line
// in a log. It polls; the bound is a guard against a hang, not a timing
// claim.
package eventually

import (
	"context"
	"testing"
	"time"
)

// Interval is how often a condition is checked.
const Interval = 5 * time.Millisecond

// Hang bounds True's wait: a condition not met by then is taken as never
// met.
const Hang = 30 * time.Second

// Poll checks cond every Interval until it holds or ctx ends, and reports
// whether it held.
func Poll(ctx context.Context, cond func() bool) bool {
	return Every(ctx, Interval, cond)
}

// Every is Poll for a condition that is costly to check, every d.
func Every(ctx context.Context, d time.Duration, cond func() bool) bool {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return cond()
		}
	}
	return true
}

// True waits until cond holds; after Hang it fails t with the message
// format and args say.
func True(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Hang)
	defer cancel()
	if !Poll(ctx, cond) {
		t.Fatalf(format, args...)
	}
}
