package sandbox

import (
	"runtime"
	"strings"
	"testing"
)

// TestCaptureBorrowsItsChunk: a capture reads through a chunk it
// borrows, not a 32 KiB one of its own, so a run leaves the service's
// collector little. (Under -race the pool drops a quarter of what is
// put back: about 8 KiB a capture, still under the bound.)
func TestCaptureBorrowsItsChunk(t *testing.T) {
	capture := func() {
		c := startCapture(strings.NewReader("hello\n"), 1<<10, newOutputBudget(1<<20), nil)
		<-c.done
		if s, cut := c.text(); s != "hello\n" || cut {
			t.Fatalf("captured %q (cut %v), want hello", s, cut)
		}
	}
	if per := bytesPerRun(capture); per > 16<<10 {
		t.Errorf("a capture allocates %d bytes, want under 16 KiB (its chunk borrowed)", per)
	}
}

// bytesPerRun is what f allocates on average over 100 calls, after one
// to warm it (testing.AllocsPerRun counts allocations, not bytes).
func bytesPerRun(f func()) uint64 {
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 100
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / n
}
