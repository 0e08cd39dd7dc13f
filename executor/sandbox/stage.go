package sandbox

import "sync/atomic"

// mainCalled is set by Main: only a binary that calls Main first thing can
// become a sandbox stage when a sandbox re-executes it (see protocol.go).
var mainCalled atomic.Bool
