package eventually

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestPollWaitsForTheCondition proves Poll returns true once a condition
// that starts false holds, having checked it more than once.
func TestPollWaitsForTheCondition(t *testing.T) {
	var checks atomic.Int32
	if !Poll(context.Background(), func() bool { return checks.Add(1) >= 3 }) {
		t.Fatal("Poll gave up on a condition that held at its third check")
	}
	if n := checks.Load(); n != 3 {
		t.Errorf("checked %d times, want 3", n)
	}
}

// TestPollEndsWithItsContext proves Poll returns false, and does not
// hang, when the condition never holds and the context ends.
func TestPollEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var checks atomic.Int32
	got := Poll(ctx, func() bool {
		if checks.Add(1) == 2 {
			cancel()
		}
		return false
	})
	if got {
		t.Fatal("Poll reported a condition that never held")
	}
}
