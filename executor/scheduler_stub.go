package executor

// STUB — replaced by the scheduler helper. Signatures are the contract.

import (
	"context"
	"log/slog"
	"time"
)

// Runner is what the Scheduler needs of the executor.
type Runner interface {
	Run(ctx context.Context, req Request) (Result, error)
}

// SchedulerConfig bounds the scheduler.
type SchedulerConfig struct {
	Concurrency int              // RUNBLOCK_CONCURRENCY, default NumCPU
	QueueSize   int              // RUNBLOCK_QUEUE
	UserRate    float64          // runs per second per user (RUNBLOCK_USER_RATE "5/min" -> 5/60)
	UserBurst   int              // RUNBLOCK_USER_BURST
	MaxPerUser  int              // queued-or-running jobs per user, default 1
	Clock       func() time.Time // nil = time.Now
	Logger      *slog.Logger
	Metrics     SchedulerMetrics // nil = none
}

// SchedulerMetrics receives the scheduler's observations.
type SchedulerMetrics interface {
	RunFinished(outcome string, d time.Duration) // outcome: Result.Outcome() or "rejected"
	QueueDepth(n int)
	RateLimited()
}

// Scheduler is the shared, fair, rate-limited front of the executor.
type Scheduler struct{}

// NewScheduler starts the scheduler's workers.
func NewScheduler(r Runner, cfg SchedulerConfig) *Scheduler { panic("stub") }

// Submit queues job and waits for its result. Rejections are *Error with
// ErrBusy, ErrRateLimited (RetryAfter set), ErrShutdown or ErrCanceled.
func (s *Scheduler) Submit(ctx context.Context, job Job) (Result, error) { panic("stub") }

// Close stops accepting jobs, lets queued and running ones finish until ctx
// ends, then cancels the rest.
func (s *Scheduler) Close(ctx context.Context) error { panic("stub") }
