package fakerunner

import (
	"context"
	"sync"
	"time"

	"github.com/runblock/runblock/executor"
)

// Clock is the clock of the live output's tests (answer.Clock): it stands
// still until Advance, which fires the waits it passes. NewClock's starts
// on 2026-12-03 at 10:00 UTC.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	waiters map[chan time.Time]time.Time
}

// NewClock returns a Clock at 2026-12-03 10:00 UTC.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), waiters: make(map[chan time.Time]time.Time)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// At fires once the clock has reached t (at once if it has).
func (c *Clock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters[ch] = t
	return ch
}

// Advance moves the clock on by d and fires the waits it passed.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for ch, at := range c.waiters {
		if !at.After(c.now) {
			ch <- c.now
			delete(c.waiters, ch)
		}
	}
}

// Scripted returns a Runner whose run hands each string the test sends on
// outputs to the context's OutputFunc as its output so far, then says so
// on written; it ends when the test closes end, successful, with the last
// output as its stdout and took as its duration (or with its context).
func Scripted(took time.Duration) (r *Runner, outputs chan<- string, written <-chan struct{}, end chan struct{}) {
	out, wrote := make(chan string), make(chan struct{})
	end = make(chan struct{})
	r = &Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		all := ""
		for {
			select {
			case all = <-out:
				if live := executor.OutputOf(ctx); live != nil {
					live(all, "")
				}
				wrote <- struct{}{}
			case <-end:
				return executor.Result{Success: true, Stdout: all, Duration: took}, nil
			case <-ctx.Done():
				return executor.Result{}, ctx.Err()
			}
		}
	}}
	return r, out, wrote, end
}
