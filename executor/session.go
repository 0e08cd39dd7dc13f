package executor

import "context"

// Session makes a Request a cell of a session: requests with the same ID
// share one live Python process (its variables, imports, functions and the
// files in its work dir), like the cells of a notebook, run one at a time
// in the order they come.
type Session struct {
	// ID is the session's key, scoped by the caller so that callers cannot
	// reach each other's sessions: "slack:T1:C1:1712.000100",
	// "api:<client>:<id>". At most MaxSessionIDBytes bytes.
	ID string
	// Replay, when non-nil, is the caller's record of the session's earlier
	// successful cells, oldest first (their own Session is ignored). When
	// no live process holds exactly that state, a fresh one is started and
	// runs them first, their output discarded, before this cell. nil: the
	// executor's own record of the session is used.
	Replay []Request
}

// MaxSessionIDBytes bounds Session.ID.
const MaxSessionIDBytes = 256

// SessionInfo is where a cell ran in its session.
type SessionInfo struct {
	// ID is the session's ID as the caller gave it.
	ID string `json:"id"`
	// Cell is this cell's number in the session, from 1.
	Cell int `json:"cell"`
	// Restored counts the earlier cells that were replayed to rebuild the
	// session's state before this cell ran (0: its live process went on).
	Restored int `json:"restored"`
	// Fresh: the state could not be rebuilt (the replay passed its budget,
	// or a replayed cell failed), so this cell ran in a fresh session.
	Fresh bool `json:"fresh,omitempty"`
	// Ended: the session's process ended with this cell (a timeout, the
	// memory limit, an exit); the next cell rebuilds the state by replay.
	Ended bool `json:"ended,omitempty"`
}

// SessionStarter starts live sessions: executor/sandbox's Executor.
type SessionStarter interface {
	// StartSession starts a sandbox that keeps its state between cells,
	// with the executor's default limits; its memory limit bounds the
	// whole session.
	StartSession(ctx context.Context) (LiveSession, error)
}

// LiveSession is one live session's sandbox.
type LiveSession interface {
	// Run runs one cell (the Request's Session is ignored) and returns
	// what that cell printed and the files it created or changed. As for
	// Runner.Run, a failing cell is a Result, and the error is the
	// service's failure. The Request's Timeout bounds this cell alone.
	Run(ctx context.Context, req Request) (Result, error)
	// Alive reports whether the process still holds the session's state:
	// false once a cell timed out, passed the memory limit or exited.
	Alive() bool
	// Close ends the session and releases everything it held.
	Close() error
}
