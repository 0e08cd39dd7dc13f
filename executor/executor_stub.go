package executor

// STUB — replaced by the executor helper. Signatures are the contract.

import (
	"context"
	"log/slog"
	"time"
)

// Config holds the executor's limits.
type Config struct {
	Python          string        // RUNBLOCK_PYTHON; "" = python3 on PATH
	Timeout         time.Duration // RUNBLOCK_TIMEOUT, default 5s
	MemoryBytes     int64         // RUNBLOCK_MEMORY_MB, default 256 MiB
	MaxOutputBytes  int64         // RUNBLOCK_MAX_OUTPUT_BYTES, default 1 MiB total, run stopped past it
	KeepBytes       int64         // bytes kept per stream, default 64 KiB
	MaxCodeBytes    int64         // RUNBLOCK_MAX_CODE_BYTES, default 1 MiB (code + stdin)
	AllowUnisolated bool          // RUNBLOCK_ALLOW_UNISOLATED
	Pool            int           // RUNBLOCK_POOL, pre-started sandboxes, 0 = off
	Logger          *slog.Logger
}

// Executor runs snippets.
type Executor struct{}

// New detects and verifies the isolation layers (canary runs) and returns a
// ready executor, or an error when no allowed tier works.
func New(ctx context.Context, cfg Config) (*Executor, error) { panic("stub") }

// Run runs one snippet. Cancelling ctx kills the run. The error is non-nil only
// when the service could not run the snippet (a failing snippet is a Result).
func (e *Executor) Run(ctx context.Context, req Request) (Result, error) { panic("stub") }

// Close stops the pool, if any.
func (e *Executor) Close() error { return nil }

// Isolation reports the active tier and layers.
func (e *Executor) Isolation() Report { return Report{} }

// Report describes the isolation in force.
type Report struct {
	Tier   string  `json:"tier"` // "full", "reduced", "unisolated"
	Python string  `json:"python"`
	Layers []Layer `json:"layers"`
}

// Layer is one isolation layer.
type Layer struct {
	Name     string `json:"name"`
	Active   bool   `json:"active"`
	Verified bool   `json:"verified"`
	Detail   string `json:"detail,omitempty"`
}
