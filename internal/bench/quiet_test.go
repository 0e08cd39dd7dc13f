package bench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/procstat"
)

// fakeMachine is a 2-CPU machine on a fake clock: /proc/stat's ticks (10
// ms) as its CPUs spend them, one CPU busy while busyTill is past now.
type fakeMachine struct {
	mu       sync.Mutex
	now      time.Time
	busyTill time.Time
	busy     time.Duration // CPU time spent busy so far
	all      time.Duration // CPU time of both CPUs so far
	readable bool
}

func newFakeMachine() *fakeMachine {
	return &fakeMachine{now: time.Unix(1_000_000, 0), readable: true}
}

func (m *fakeMachine) advance(d time.Duration) {
	busy := min(d, max(m.busyTill.Sub(m.now), 0))
	m.busy += busy
	m.all += 2 * d
	m.now = m.now.Add(d)
}

// busyFor keeps one CPU busy for d from now: what a pool's refill does.
func (m *fakeMachine) busyFor(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.busyTill = m.now.Add(d)
}

// busyAt says whether a CPU is busy now.
func (m *fakeMachine) busyAt() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now.Before(m.busyTill)
}

func (m *fakeMachine) clock() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *fakeMachine) wait() quietWait {
	return quietWait{
		cpu: func() (procstat.CPUTimes, bool) {
			m.mu.Lock()
			defer m.mu.Unlock()
			tick := 10 * time.Millisecond
			return procstat.CPUTimes{Busy: int64(m.busy / tick), All: int64(m.all / tick)}, m.readable
		},
		now: m.clock,
		sleep: func(ctx context.Context, d time.Duration) bool {
			if ctx.Err() != nil {
				return false
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			m.advance(d)
			return true
		},
	}
}

func TestQuietWait(t *testing.T) {
	const gap = 50 * time.Millisecond
	tests := []struct {
		name     string
		busy     time.Duration // one CPU busy for this long from the start
		readable bool
		canceled bool
		// Want: quiet, alive, and the time waited at least and at most.
		quiet, alive    bool
		atLeast, atMost time.Duration
	}{
		{name: "idle machine: the gap and one window", readable: true, quiet: true, alive: true,
			atLeast: quietWindow, atMost: quietWindow + quietPoll},
		{name: "a refill longer than the gap: a window after it ends", busy: 300 * time.Millisecond, readable: true, quiet: true, alive: true,
			atLeast: 300*time.Millisecond + quietWindow - quietPoll, atMost: 300*time.Millisecond + quietWindow + 2*quietPoll},
		{name: "busy for good: goes ahead after quietMax", busy: time.Hour, readable: true, quiet: false, alive: true,
			atLeast: gap + quietMax, atMost: gap + quietMax + quietPoll},
		{name: "no /proc/stat: the gap alone", readable: false, quiet: true, alive: true, atLeast: gap, atMost: gap},
		{name: "canceled", readable: true, canceled: true, quiet: false, alive: false, atMost: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFakeMachine()
			m.readable = tt.readable
			m.busyFor(tt.busy)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.canceled {
				cancel()
			}
			start := m.clock()
			quiet, alive := m.wait().wait(ctx, gap)
			waited := m.clock().Sub(start)
			if quiet != tt.quiet || alive != tt.alive || waited < tt.atLeast || waited > tt.atMost {
				t.Errorf("wait = quiet %v, alive %v after %v; want %v, %v after %v to %v", quiet, alive, waited, tt.quiet, tt.alive, tt.atLeast, tt.atMost)
			}
		})
	}
}

// TestIdleRunsWaitForQuiet: a pooled row's run starts a refill that
// keeps a CPU busy longer than the idle gap; the next row's run waits
// until the machine has been quiet for a window, and so never shares the
// CPUs with it. Before, it came the gap after the last run, in the middle
// of the refill.
func TestIdleRunsWaitForQuiet(t *testing.T) {
	const refill = 200 * time.Millisecond
	m := newFakeMachine()
	var (
		mu     sync.Mutex
		busyAt []bool // per run: whether a CPU was busy as it began
	)
	contend := func(name string) *contender {
		return &contender{row: Row{Name: name, Label: name}, run: func(ctx context.Context, code string) (outcome, error) {
			mu.Lock()
			busyAt = append(busyAt, m.busyAt())
			mu.Unlock()
			m.busyFor(refill)
			return outcome{ok: true, stdout: helloOut}, nil
		}}
	}
	b := newBenchmark(Options{IdleRuns: 3, IdleGap: 50 * time.Millisecond})
	b.report = &Report{}
	b.quiet = m.wait()
	if err := b.idle(context.Background(), []*contender{contend("pool"), contend("prefork")}); err != nil {
		t.Fatal(err)
	}
	if len(busyAt) != 6 {
		t.Fatalf("%d runs, want 6", len(busyAt))
	}
	for i, busy := range busyAt {
		if busy {
			t.Errorf("run %d began while the last run's refill ran", i)
		}
	}
	if notes := strings.Join(b.report.Notes, "\n"); notes != "" {
		t.Errorf("notes = %q, want none (every run found the machine quiet)", notes)
	}

	// A machine that never quiets: each run goes ahead after quietMax,
	// and the phase says so.
	m.busyFor(time.Hour)
	b.report = &Report{}
	contendBusy := &contender{row: Row{Name: "bare", Label: "bare"}, run: func(ctx context.Context, code string) (outcome, error) {
		return outcome{ok: true, stdout: helloOut}, nil
	}}
	if err := b.idle(context.Background(), []*contender{contendBusy}); err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(b.report.Notes, "\n"); !strings.Contains(notes, "idle hello: 3 of 3 runs arrived before the machine was quiet") {
		t.Errorf("notes = %q, want the 3 runs that found it busy", notes)
	}
}
