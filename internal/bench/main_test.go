package bench

import (
	"testing"

	"github.com/runblock/runblock/executor/sandbox"

	"go.uber.org/goleak"
)

// TestMain lets this test binary become a sandbox stage or the flood child
// when the benchmark re-executes it, and checks that no test leaves a
// goroutine behind.
func TestMain(m *testing.M) {
	sandbox.Main()
	Main()
	goleak.VerifyTestMain(m)
}
