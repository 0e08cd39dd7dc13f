package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets this test binary become the flood child when the
// benchmark re-executes it, and checks that no test leaves a
// goroutine behind.
func TestMain(m *testing.M) {
	Main()
	goleak.VerifyTestMain(m)
}
