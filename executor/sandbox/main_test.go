package sandbox

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets this test binary become a sandbox stage when a sandbox
// re-executes it, and checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	Main()
	goleak.VerifyTestMain(m)
}
