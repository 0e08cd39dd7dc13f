// Package turns keeps each user's submissions in the order their messages
// arrived. Adapters handle messages in goroutines, so without it the
// scheduler would see a burst from one user in whatever order the
// goroutines happen to reach it, and run a later message instead of the
// first.
//
// An adapter takes a Turn where its events arrive in order (the event loop),
// and the handler waits for it before anything else that could block; the
// turn passes on once the scheduler has admitted or refused the job.
package turns

import (
	"context"
	"sync"

	"github.com/runblock/runblock/executor"
)

// Turns hands out turns per user key, in the order they are taken.
type Turns struct {
	mu   sync.Mutex
	last map[string]*Turn // the latest turn of each key with one pending
}

// New returns an empty Turns.
func New() *Turns {
	return &Turns{last: make(map[string]*Turn)}
}

// Take returns key's next turn: it comes once every turn taken before it
// for key is done.
func (q *Turns) Take(key string) *Turn {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &Turn{q: q, key: key, done: make(chan struct{})}
	if prev, ok := q.last[key]; ok {
		t.prev = prev.done
	}
	q.last[key] = t
	return t
}

// Turn is one handler's place in its user's order. A nil *Turn has no
// place: it never waits.
type Turn struct {
	q    *Turns
	key  string
	prev <-chan struct{} // nil: first in line
	done chan struct{}
	once sync.Once
}

// Wait waits for the turns taken before t to be done, or for ctx to end.
func (t *Turn) Wait(ctx context.Context) {
	if t == nil || t.prev == nil {
		return
	}
	select {
	case <-t.prev:
	case <-ctx.Done():
	}
}

// Done passes the turn on; it may be called more than once.
func (t *Turn) Done() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		close(t.done)
		t.q.mu.Lock()
		defer t.q.mu.Unlock()
		if t.q.last[t.key] == t {
			delete(t.q.last, t.key)
		}
	})
}

// Submit waits for t, submits job to r and passes the turn on as soon as
// the scheduler has taken the job (its first progress report: the
// scheduler reports a job queued or running once it has admitted it) or
// refused it (Submit returned).
func (t *Turn) Submit(ctx context.Context, r executor.Submitter, job executor.Job) (executor.Result, error) {
	if t == nil {
		return r.Submit(ctx, job)
	}
	t.Wait(ctx)
	defer t.Done()
	progress := job.Progress
	job.Progress = func(p executor.Progress) {
		t.Done()
		if progress != nil {
			progress(p)
		}
	}
	return r.Submit(ctx, job)
}
