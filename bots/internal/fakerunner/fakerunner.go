// Package fakerunner is the scheduler stand-in of the adapters' tests.
package fakerunner

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/runblock/runblock/executor"
)

// Func is a Runner whose Submit is a func.
type Func func(ctx context.Context, job executor.Job) (executor.Result, error)

// Submit calls f.
func (f Func) Submit(ctx context.Context, job executor.Job) (executor.Result, error) {
	return f(ctx, job)
}

// Echo answers every job with prefix, its code and a newline as stdout.
func Echo(prefix string) Func {
	return func(_ context.Context, job executor.Job) (executor.Result, error) {
		return executor.Result{Success: true, Stdout: prefix + job.Request.Code + "\n"}, nil
	}
}

// Runner records the jobs it gets and answers them with Func, or with
// Echo("ran: ") when Func is nil. Like the scheduler, it reports a job as
// running (Progress) once it has taken it. Set Func before the adapter can
// call it.
type Runner struct {
	Func Func

	mu   sync.Mutex
	jobs []executor.Job
}

// Submit records job and answers it.
func (r *Runner) Submit(ctx context.Context, job executor.Job) (executor.Result, error) {
	r.mu.Lock()
	r.jobs = append(r.jobs, job)
	f := r.Func
	r.mu.Unlock()
	if f == nil {
		f = Echo("ran: ")
	}
	if job.Progress != nil {
		job.Progress(executor.Progress{State: executor.StateRunning})
	}
	return f(ctx, job)
}

// Jobs returns the jobs submitted so far.
func (r *Runner) Jobs() []executor.Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]executor.Job(nil), r.jobs...)
}

// Gated returns a Runner that holds each run until release is closed;
// started gets a value as each run begins (buffered for 16).
func Gated() (r *Runner, started chan struct{}, release chan struct{}) {
	started, release = make(chan struct{}, 16), make(chan struct{})
	r = &Runner{Func: func(ctx context.Context, job executor.Job) (executor.Result, error) {
		started <- struct{}{}
		<-release
		return Echo("ran: ")(ctx, job)
	}}
	return r, started, release
}

// Sessions simulates the executor's sessions by their ID: a live process
// holds the codes of the cells it ran, and a cell whose Replay differs
// from them rebuilds it (SessionInfo.Restored). A cell whose code holds
// "raise" fails and keeps the process; one holding "timeout" times out
// and ends it. A successful cell prints "after <earlier codes>: <code>".
// A job without a session prints "alone: <code>". Its End ends a live
// process, and records the ID.
type Sessions struct {
	mu    sync.Mutex
	live  map[string][]string
	ended []string
}

// Run answers job as the session's next cell; it is a Func.
func (l *Sessions) Run(_ context.Context, job executor.Job) (executor.Result, error) {
	req := job.Request
	if req.Session == nil {
		return executor.Result{Success: true, Stdout: "alone: " + req.Code + "\n"}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live == nil {
		l.live = make(map[string][]string)
	}
	id := req.Session.ID
	var want []string
	for _, r := range req.Session.Replay {
		want = append(want, r.Code)
	}
	info := &executor.SessionInfo{ID: id}
	state, live := l.live[id]
	if !live || !slices.Equal(state, want) {
		state = slices.Clone(want)
		info.Restored = len(want)
	}
	info.Cell = len(state) + 1
	res := executor.Result{Session: info}
	switch {
	case strings.Contains(req.Code, "timeout"):
		res.Timeout, info.Ended = true, true
		delete(l.live, id)
		return res, nil
	case strings.Contains(req.Code, "raise"):
		res.Stderr, res.Error, res.ExitCode = "Error\n", "Error", 1
	default:
		res.Success = true
		res.Stdout = "after " + strings.Join(state, ",") + ": " + req.Code + "\n"
		state = append(state, req.Code)
	}
	l.live[id] = state
	return res, nil
}

// End ends session id's live process.
func (l *Sessions) End(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.live, id)
	l.ended = append(l.ended, id)
	return nil
}

// Ended returns the IDs End was called with, in order.
func (l *Sessions) Ended() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ended)
}

// SessionRunner is a Runner on Sessions that also ends sessions, as the
// executor's session manager does.
type SessionRunner struct {
	*Runner
	*Sessions
}

// NewSessions returns a SessionRunner on fresh Sessions.
func NewSessions() SessionRunner {
	s := &Sessions{}
	return SessionRunner{Runner: &Runner{Func: s.Run}, Sessions: s}
}

// Replays lists each job as "<code> <- [<codes of its replay>]".
func (r *Runner) Replays() []string {
	var out []string
	for _, j := range r.Jobs() {
		var rs []string
		if j.Request.Session != nil {
			for _, x := range j.Request.Session.Replay {
				rs = append(rs, x.Code)
			}
		}
		out = append(out, j.Request.Code+" <- ["+strings.Join(rs, " ")+"]")
	}
	return out
}
