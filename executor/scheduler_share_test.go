package executor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// TestSchedulerQueueShare: one user (an API client sending many runs)
// cannot fill the queue: past its share it is refused with a Retry-After,
// and another user's first job still gets in.
func TestSchedulerQueueShare(t *testing.T) {
	g := newGate()
	s := newScheduler(t, g, executor.Config{Concurrency: 1, QueueSize: 4, MaxPerUser: 100})
	first := submit(t, s, "a", "a0")
	c := g.next(t, "a0")
	var queued []*pending
	for i := range 2 { // half the queue
		p := submit(t, s, "a", fmt.Sprintf("a%d", i+1))
		p.queued(t, i)
		queued = append(queued, p)
	}
	e := wantCode(t, submitNow(s, "a", "over"), executor.ErrRateLimited)
	if e.RetryAfter < time.Second {
		t.Errorf("RetryAfter = %v, want at least 1s", e.RetryAfter)
	}
	other := submit(t, s, "b", "b0")
	other.queued(t, 0) // b's first job joins the current round
	c.finish()
	first.ok(t)
	for _, code := range []string{"b0", "a1", "a2"} {
		g.next(t, code).finish()
	}
	other.ok(t)
	for _, p := range queued {
		p.ok(t)
	}
}
