package sandbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
)

// TestSessionReportsMemory: a live session reports what its sandbox
// holds, not its limit: an idle one far below it, one whose cell keeps
// 60 MiB about that much more; a closed one, which cannot be read, its
// limit.
func TestSessionReportsMemory(t *testing.T) {
	const mib = 1 << 20
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		s := startSession(t, e)
		r, ok := s.(session.MemoryReporter)
		if !ok {
			t.Fatalf("the sandbox's session %T is no session.MemoryReporter", s)
		}
		limit := int64(sandbox.DefaultMemoryBytes)
		cell(t, s, executor.Request{Code: "x = 1"})
		began := time.Now()
		idle := r.MemoryBytes()
		t.Logf("idle session: %.1f MiB, counted in %s", float64(idle)/mib, time.Since(began))
		if idle <= 0 || idle > limit/4 {
			t.Fatalf("idle session reports %d bytes, want (0, %d]", idle, limit/4)
		}
		if res := cell(t, s, executor.Request{Code: "big = bytearray(60 << 20)\nfor i in range(0, len(big), 4096):\n    big[i] = 1"}); !res.Success {
			t.Fatalf("allocating cell: %+v", res)
		}
		began = time.Now()
		held := r.MemoryBytes()
		t.Logf("with 60 MiB: %.1f MiB, counted in %s", float64(held)/mib, time.Since(began))
		if grew := held - idle; grew < 50*mib || grew > 90*mib {
			t.Fatalf("after a cell that keeps 60 MiB the session reports %d bytes more than idle, want 50 to 90 MiB", grew)
		}
		_ = s.Close()
		if got := r.MemoryBytes(); got != limit {
			t.Fatalf("a closed session reports %d bytes, want its limit %d", got, limit)
		}
	})
}

// TestDefaultSessionBoundsKeepManyIdleSessions: with the default bounds
// (256 sessions, 1 GiB) and the executor's memory limit as the count of a
// session that could not report, 8 idle sessions on the real sandbox all
// stay live: counted at their limit, only 4 would.
func TestDefaultSessionBoundsKeepManyIdleSessions(t *testing.T) {
	e := newExecutor(t, sandbox.Config{})
	m := session.New(e, e, session.Options{SessionBytes: sandbox.DefaultMemoryBytes})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	const n = 8
	for round := range 2 {
		for i := range n {
			res, err := m.Run(context.Background(), executor.Request{Code: fmt.Sprintf("x = %d", i), Session: &executor.Session{ID: fmt.Sprint(i)}})
			if err != nil || !res.Success {
				t.Fatalf("session %d cell %d: %+v, %v", i, round+1, res, err)
			}
			if res.Session.Restored != 0 {
				t.Fatalf("session %d was evicted: its cell %d replayed %d cells", i, round+1, res.Session.Restored)
			}
		}
	}
	if got := m.Live(); got != n {
		t.Fatalf("%d sessions live, want %d", got, n)
	}
}
