package session

import "time"

// Defaults of Config.
const (
	// DefaultIdle is how long a session's process lives without a cell.
	DefaultIdle = 15 * time.Minute
	// DefaultMaxLive bounds the live sessions of one executor. An idle
	// session costs no CPU (its processes are stopped and its sandbox's
	// init blocks until its next cell) and a few MiB: a bare interpreter
	// forked from the preloaded fork server holds 4 to 6 MiB of its own,
	// so 170 to 256 of them fill DefaultMemoryBytes, and the count and the memory
	// bound bite at about the same place; sessions whose cells imported
	// pandas or built data (20 to 100 MiB) meet the memory bound first.
	// The bench's idle-sessions row measures what 500 idle sessions cost
	// (internal/bench/RESULTS.md).
	DefaultMaxLive = 256
	// DefaultMemoryBytes bounds the memory of all live sessions together.
	DefaultMemoryBytes = 1 << 30
	// DefaultReplayBudget is the longest a replay may take, its cells
	// together; past it the cell runs in a fresh session.
	DefaultReplayBudget = 30 * time.Second
)

// Bounds of the Manager's own record of each session's cells, which it
// replays for callers that send no Replay (API and MCP clients).
const (
	// MaxRecordBytes bounds one session's record (code, stdin, arguments
	// and input files); a session past it still runs, but once its process
	// is gone its next cell starts fresh.
	MaxRecordBytes = 4 << 20
	// MaxRecordsBytes bounds the records of all sessions together; past
	// it, those of the least recently used sessions without a live process
	// are forgotten.
	MaxRecordsBytes = 64 << 20
	// minRecords is the least number of sessions whose records are kept
	// (at least 4 × Config.MaxLive).
	minRecords = 1024
)

// Config is the sessions' settings (internal/config reads them from the
// environment).
type Config struct {
	// Disabled turns sessions off (RUNBLOCK_SESSIONS=off): every message
	// runs alone, as if it had no session.
	Disabled bool
	// Idle ends a session's process after this long without a cell
	// (RUNBLOCK_SESSION_IDLE); the next cell rebuilds its state by replay.
	Idle time.Duration
	// MaxLive bounds the live sessions (RUNBLOCK_SESSION_MAX); past it the
	// least recently used is evicted (its next cell replays).
	MaxLive int
	// MemoryBytes bounds the memory the live sessions hold together
	// (RUNBLOCK_SESSION_MEMORY); past it the least recently used are
	// evicted likewise.
	MemoryBytes int64
	// ReplayBudget bounds the time a replay takes, its cells together.
	ReplayBudget time.Duration
}

func (c Config) withDefaults() Config {
	if c.Idle <= 0 {
		c.Idle = DefaultIdle
	}
	if c.MaxLive <= 0 {
		c.MaxLive = DefaultMaxLive
	}
	if c.MemoryBytes <= 0 {
		c.MemoryBytes = DefaultMemoryBytes
	}
	if c.ReplayBudget <= 0 {
		c.ReplayBudget = DefaultReplayBudget
	}
	return c
}
