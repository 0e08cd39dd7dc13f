// Package watch lets the in-repo fake servers' tests wait for a change of the
// fake's state without sleeping or polling.
package watch

import (
	"context"
	"sync"
)

// Changes wakes waiters whenever state guarded by the owner's mutex changes.
// The zero value is ready to use.
type Changes struct {
	ch chan struct{}
}

// NotifyLocked wakes every waiter; the owner's mutex must be held.
func (c *Changes) NotifyLocked() {
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// Wait calls check with mu held until it reports true or ctx ends.
func (c *Changes) Wait(ctx context.Context, mu sync.Locker, check func() bool) error {
	for {
		mu.Lock()
		ok := check()
		if c.ch == nil {
			c.ch = make(chan struct{})
		}
		ch := c.ch
		mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
