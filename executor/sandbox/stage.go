package sandbox

import (
	"sync/atomic"

	"github.com/runblock/runblock/executor/sandbox/internal/stage"
)

// mainCalled is set by Main: only a binary that calls Main first thing can
// become a sandbox stage when a sandbox re-executes it (see package
// protocol).
var mainCalled atomic.Bool

// Main runs the sandbox stage this process was started as (package
// stage), and exits; in any other process it returns at once. A sandbox
// re-executes the running binary (/proc/self/exe) as its init, so call
// Main first thing in main, and in the TestMain of every test binary that
// starts sandboxes, the way os/exec's tests start their helper processes.
// New and Doctor refuse to start sandboxes in a process that has not
// called it.
func Main() {
	mainCalled.Store(true)
	stage.Main()
}
