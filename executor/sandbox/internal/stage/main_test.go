package stage

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (childEnds's,
// which a test stops).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
