// Package fakerunner is the scheduler stand-in of the adapters' tests.
package fakerunner

import (
	"context"
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
