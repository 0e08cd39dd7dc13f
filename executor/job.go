package executor

import (
	"context"
	"time"
)

// Submitter is what a caller needs of the Scheduler: the chat adapters,
// the execute API and the MCP server each submit their jobs through it,
// so a fake or a wrapper (a per-workspace rate) stands in for it.
type Submitter interface {
	Submit(ctx context.Context, job Job) (Result, error)
}

// Job is one submission to the Scheduler.
type Job struct {
	// User is the rate-limit key, platform-qualified: "slack:T123:U456".
	User    string
	Request Request
	// Progress, if set, is called when the job's queue position changes and
	// when it starts running. It must return quickly.
	Progress func(Progress)
}

// State is where a job is.
type State int

// Job states.
const (
	StateQueued State = iota
	StateRunning
)

// Progress reports a job's place in the queue.
type Progress struct {
	State State
	// Ahead counts jobs that will start before this one.
	Ahead int
	// Wait is how long the job has waited so far.
	Wait time.Duration
}
