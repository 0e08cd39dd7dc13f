package bench

import (
	"context"
	"time"

	"github.com/runblock/runblock/internal/procstat"
)

// An idle run arrives on an idle machine: at least the idle gap after the
// last run ended, and once the machine's CPUs have been busy for at most
// quietShare of their time over quietWindow (one tick of /proc/stat's ten
// milliseconds on two CPUs; an idle 2-CPU VM here shows none or one in
// each such window). After a pool's run, its refill starts a whole
// sandbox: on a machine whose page faults are slow, that took longer than
// the gap, and the next row's run shared the CPUs with it. Past quietMax
// the run goes ahead all the same, and the phase notes it.
const (
	quietWindow = 100 * time.Millisecond
	quietShare  = 0.05
	quietPoll   = 10 * time.Millisecond
	quietMax    = 500 * time.Millisecond
)

// quietWait waits for a quiet machine (see quietWindow). Its zero value
// is not usable: cpu reads the machine's CPU times, now and sleep are the
// clock (time.Now and pause outside tests).
type quietWait struct {
	cpu   func() (procstat.CPUTimes, bool)
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) bool
}

// wait returns after gap, once the machine is quiet (quiet true), or
// quietMax after gap (quiet false); where the CPU times cannot be read,
// after gap alone, as quiet. alive is false when ctx ended first.
func (q quietWait) wait(ctx context.Context, gap time.Duration) (quiet, alive bool) {
	type sample struct {
		at  time.Time
		cpu procstat.CPUTimes
	}
	var seen []sample
	read := func() bool {
		c, ok := q.cpu()
		if ok {
			seen = append(seen, sample{q.now(), c})
		}
		return ok
	}
	if !read() {
		return true, q.sleep(ctx, gap)
	}
	if !q.sleep(ctx, gap) {
		return false, false
	}
	deadline := q.now().Add(quietMax)
	for {
		if !read() {
			return true, true
		}
		last := seen[len(seen)-1]
		// The newest sample at least quietWindow old; those before it no
		// longer matter.
		i := len(seen) - 1
		for i >= 0 && last.at.Sub(seen[i].at) < quietWindow {
			i--
		}
		if i >= 0 {
			seen = seen[i:]
			busy, all := last.cpu.Busy-seen[0].cpu.Busy, last.cpu.All-seen[0].cpu.All
			if all > 0 && float64(busy) <= quietShare*float64(all) {
				return true, true
			}
		}
		if !last.at.Before(deadline) {
			return false, true
		}
		if !q.sleep(ctx, quietPoll) {
			return false, false
		}
	}
}
