package bench

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/procstat"
)

func durations(ms ...int) []time.Duration {
	d := make([]time.Duration, len(ms))
	for i, m := range ms {
		d[i] = time.Duration(m) * time.Millisecond
	}
	return d
}

func TestPercentile(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", durations(7), 99, 7 * time.Millisecond},
		{"p50 of two", durations(1, 2), 50, 1 * time.Millisecond},
		{"p50 of three", durations(1, 2, 3), 50, 2 * time.Millisecond},
		{"p90 of ten", durations(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{"p99 of ten", durations(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p100", durations(1, 2, 3), 100, 3 * time.Millisecond},
		{"p50 of 100", durations(hundred...), 50, 50 * time.Millisecond},
		{"p99 of 100", durations(hundred...), 99, 99 * time.Millisecond},
		{"tiny q", durations(4, 5), 0.1, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.q); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.q, got, tt.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	p := phase{
		Latencies: durations(30, 10, 20, 40),
		Wall:      2 * time.Second,
		Passed:    3,
		Failed:    []int{2},
	}
	tests := []struct {
		name string
		idle bool
		want Stats
	}{
		{"closed loop", false, Stats{Concurrency: 2, Runs: 4, Passed: 3, P50MS: 20, P90MS: 40, P99MS: 40, RunsPerS: 2, WallS: 2}},
		{"idle has no throughput", true, Stats{Concurrency: 2, Runs: 4, Passed: 3, P50MS: 20, P90MS: 40, P99MS: 40, WallS: 2}},
	}
	for _, tt := range tests {
		if got := summary(2, tt.idle, p); got != tt.want {
			t.Errorf("%s: summary = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if p.Latencies[0] != 30*time.Millisecond {
		t.Error("summary sorted the phase's own latencies")
	}
}

func TestMeasure(t *testing.T) {
	tests := []struct {
		name       string
		n, conc    int
		fail       map[int]bool
		wantPassed int
		wantFailed []int
	}{
		{"serial all pass", 5, 1, nil, 5, nil},
		{"parallel some fail", 9, 3, map[int]bool{0: true, 4: true, 8: true}, 6, []int{0, 4, 8}},
		{"more workers than programs", 2, 8, map[int]bool{1: true}, 1, []int{1}},
		{"zero concurrency means one", 3, 0, nil, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				inFlight, peak atomic.Int64
				mu             sync.Mutex
				seen           = map[int]int{}
			)
			p, err := measure(context.Background(), tt.n, tt.conc, nil, func(ctx context.Context, i int) (bool, error) {
				cur := inFlight.Add(1)
				defer inFlight.Add(-1)
				for {
					old := peak.Load()
					if cur <= old || peak.CompareAndSwap(old, cur) {
						break
					}
				}
				mu.Lock()
				seen[i]++
				mu.Unlock()
				return !tt.fail[i], nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if p.Passed != tt.wantPassed {
				t.Errorf("passed = %d, want %d", p.Passed, tt.wantPassed)
			}
			if len(p.Failed) != len(tt.wantFailed) {
				t.Fatalf("failed = %v, want %v", p.Failed, tt.wantFailed)
			}
			for i := range p.Failed {
				if p.Failed[i] != tt.wantFailed[i] {
					t.Errorf("failed = %v, want %v", p.Failed, tt.wantFailed)
				}
			}
			if len(p.Latencies) != tt.n {
				t.Errorf("%d latencies, want %d", len(p.Latencies), tt.n)
			}
			for i := range tt.n {
				if seen[i] != 1 {
					t.Errorf("program %d ran %d times, want once", i, seen[i])
				}
			}
			if limit := int64(max(tt.conc, 1)); peak.Load() > limit {
				t.Errorf("%d runs at once, want at most %d", peak.Load(), limit)
			}
		})
	}
}

func TestMeasureStopsOnError(t *testing.T) {
	boom := errors.New("boom")
	var ran atomic.Int64
	_, err := measure(context.Background(), 100, 1, nil, func(ctx context.Context, i int) (bool, error) {
		ran.Add(1)
		if i == 3 {
			return false, boom
		}
		return true, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if got := ran.Load(); got != 4 {
		t.Errorf("%d runs after an error at run 3, want 4", got)
	}
}

func TestMeasureCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, err := measure(ctx, 10, 2, nil, func(ctx context.Context, i int) (bool, error) {
		cancel()
		return true, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestMeasureGap(t *testing.T) {
	// With a gap, one worker's runs never overlap, and a canceled context
	// ends the wait before any run.
	var inFlight, peak atomic.Int64
	p, err := measure(context.Background(), 4, 1, spaced(time.Millisecond), func(ctx context.Context, i int) (bool, error) {
		if cur := inFlight.Add(1); cur > peak.Load() {
			peak.Store(cur)
		}
		defer inFlight.Add(-1)
		return true, nil
	})
	if err != nil || p.Passed != 4 || peak.Load() != 1 {
		t.Errorf("gap phase: err=%v passed=%d peak=%d, want nil, 4, 1", err, p.Passed, peak.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int64
	_, err = measure(ctx, 5, 1, spaced(time.Hour), func(ctx context.Context, i int) (bool, error) {
		ran.Add(1)
		return true, nil
	})
	if !errors.Is(err, context.Canceled) || ran.Load() != 0 {
		t.Errorf("canceled during a gap: err=%v after %d runs, want context.Canceled after none", err, ran.Load())
	}
}

func TestPhase(t *testing.T) {
	boom := errors.New("sandbox setup failed")
	tests := []struct {
		name       string
		run        snippetFunc
		wantPassed int
		wantErrors int
		wantNote   string
	}{
		{"all pass", func(ctx context.Context, code string) (outcome, error) {
			return outcome{ok: true, stdout: helloOut}, nil
		}, 4, 0, ""},
		{"wrong stdout fails", func(ctx context.Context, code string) (outcome, error) {
			return outcome{ok: true, stdout: "bye\n"}, nil
		}, 0, 0, `unexpected stdout "bye\n"`},
		{"error line noted", func(ctx context.Context, code string) (outcome, error) {
			return outcome{errLine: "NameError: name 'x' is not defined"}, nil
		}, 0, 0, "NameError"},
		{"service errors are failures, and the phase goes on", func() snippetFunc {
			var n atomic.Int64
			return func(ctx context.Context, code string) (outcome, error) {
				if n.Add(1) == 2 {
					return outcome{}, boom
				}
				return outcome{ok: true, stdout: helloOut}, nil
			}
		}(), 3, 1, "service error: sandbox setup failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBenchmark(Options{})
			b.report = &Report{}
			s, err := b.phase(context.Background(), "row", tt.run, b.hello(2, 4, 0))
			if err != nil {
				t.Fatal(err)
			}
			if s.Runs != 4 || s.Passed != tt.wantPassed || s.Errors != tt.wantErrors {
				t.Errorf("stats = %+v, want 4 runs, %d passed, %d errors", s, tt.wantPassed, tt.wantErrors)
			}
			notes := strings.Join(b.report.Notes, "\n")
			if tt.wantNote == "" && notes != "" || !strings.Contains(notes, tt.wantNote) {
				t.Errorf("notes = %q, want one containing %q", notes, tt.wantNote)
			}
		})
	}
}

func TestPhaseStopsWhenCanceled(t *testing.T) {
	b := newBenchmark(Options{})
	b.report = &Report{}
	ctx, cancel := context.WithCancel(context.Background())
	_, err := b.phase(ctx, "row", func(ctx context.Context, code string) (outcome, error) {
		cancel()
		return outcome{}, ctx.Err()
	}, b.hello(1, 10, 0))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestEvery(t *testing.T) {
	p := phase{
		Latencies: durations(1, 2, 3, 4, 5, 6),
		Wall:      time.Second,
		Passed:    4,
		Failed:    []int{1, 4},
	}
	why := map[int]failure{1: {why: "b0"}, 4: {why: "a2", service: true}}
	tests := []struct {
		j        int
		wantLat  []time.Duration
		wantFail []int
		wantWhy  map[int]failure
		wantPass int
	}{
		{0, durations(1, 3, 5), []int{2}, map[int]failure{2: {why: "a2", service: true}}, 2},
		{1, durations(2, 4, 6), []int{0}, map[int]failure{0: {why: "b0"}}, 2},
	}
	for _, tt := range tests {
		sub, subWhy := every(p, why, tt.j, 2)
		if !slices.Equal(sub.Latencies, tt.wantLat) || !slices.Equal(sub.Failed, tt.wantFail) || sub.Passed != tt.wantPass || sub.Wall != p.Wall {
			t.Errorf("every(j=%d) = %+v, want latencies %v, failed %v, %d passed", tt.j, sub, tt.wantLat, tt.wantFail, tt.wantPass)
		}
		if !maps.Equal(subWhy, tt.wantWhy) {
			t.Errorf("every(j=%d) failures = %v, want %v", tt.j, subWhy, tt.wantWhy)
		}
	}
	// m = 3 puts the service error (run 4) into contender 1 as its run 1.
	sub, subWhy := every(p, why, 1, 3)
	if !slices.Equal(sub.Failed, []int{0, 1}) || !subWhy[1].service {
		t.Errorf("every(j=1, m=3) = %+v %v, want runs 0 and 1 failed, 1 by the service", sub, subWhy)
	}
}

func TestIdleTakesContendersInTurn(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string
	)
	contend := func(name string, fail bool) *contender {
		return &contender{row: Row{Name: name, Label: name}, run: func(ctx context.Context, code string) (outcome, error) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			if fail {
				return outcome{errLine: "RuntimeError: no"}, nil
			}
			return outcome{ok: true, stdout: helloOut}, nil
		}}
	}
	b := newBenchmark(Options{IdleRuns: 3, IdleGap: time.Microsecond})
	b.report = &Report{}
	b.quiet = newFakeMachine().wait()
	cs := []*contender{contend("a", false), contend("b", true)}
	if err := b.idle(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "a", "b", "a", "b"}; !slices.Equal(order, want) {
		t.Errorf("run order %v, want %v", order, want)
	}
	a, bb := cs[0].row.Idle, cs[1].row.Idle
	if a == nil || bb == nil {
		t.Fatal("idle stats missing")
	}
	if a.Runs != 3 || a.Passed != 3 || bb.Runs != 3 || bb.Passed != 0 {
		t.Errorf("idle a = %+v, b = %+v; want 3/3 and 0/3", a, bb)
	}
	if a.RunsPerS != 0 {
		t.Errorf("idle phase has a throughput %v, want none", a.RunsPerS)
	}
	if notes := strings.Join(b.report.Notes, "\n"); !strings.Contains(notes, "b: idle hello at c1: 3 of 3 failed") || strings.Contains(notes, "a: ") {
		t.Errorf("notes = %q, want b's failures only", notes)
	}
}

func TestMeasureAllOrders(t *testing.T) {
	var (
		mu    sync.Mutex
		order []string
	)
	contend := func(name string) *contender {
		return &contender{row: Row{Name: name, Label: name}, run: func(ctx context.Context, code string) (outcome, error) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return outcome{ok: true, stdout: helloOut}, nil
		}}
	}
	b := newBenchmark(Options{Concurrency: 1, Warmup: 1, IdleRuns: 2, IdleGap: time.Microsecond, HelloRuns: 1})
	b.report = &Report{}
	b.quiet = newFakeMachine().wait()
	b.measureAll(context.Background(), []*contender{contend(rowBare), contend(rowCold), contend(rowPool), contend(rowFork), contend(rowPrefork)})
	want := []string{
		rowBare, rowCold, rowPool, rowFork, rowPrefork, // warm-up
		rowPool, rowPrefork, rowBare, rowFork, rowCold, // idle, the pooled rows first
		rowPool, rowPrefork, rowBare, rowFork, rowCold,
		rowBare, rowCold, rowPool, rowFork, rowPrefork, // closed loop c1
	}
	if !slices.Equal(order, want) {
		t.Errorf("run order\n%v, want\n%v", order, want)
	}
	b.sortRows()
	var rows []string
	for _, r := range b.report.Rows {
		rows = append(rows, r.Name)
	}
	if want := []string{rowBare, rowCold, rowPool, rowFork, rowPrefork}; !slices.Equal(rows, want) {
		t.Errorf("report rows %v, want %v", rows, want)
	}
}

func TestSetCPU(t *testing.T) {
	tests := []struct {
		name          string
		runs          int
		before, after procstat.CPUTimes
		cpu, busy     float64
	}{
		// 150 ticks of 10 ms over 300 ticks, for 50 runs: 30 ms a run.
		{"busy half the time", 50, procstat.CPUTimes{Busy: 1000, All: 5000}, procstat.CPUTimes{Busy: 1150, All: 5300}, 30, 50},
		{"no runs", 0, procstat.CPUTimes{}, procstat.CPUTimes{Busy: 10, All: 20}, 0, 0},
		{"no time passed", 10, procstat.CPUTimes{Busy: 5, All: 9}, procstat.CPUTimes{Busy: 5, All: 9}, 0, 0},
		{"counters went back", 10, procstat.CPUTimes{Busy: 50, All: 90}, procstat.CPUTimes{Busy: 40, All: 100}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Stats{Runs: tt.runs}
			s.setCPU(tt.before, tt.after)
			if s.CPUMSPerRun != tt.cpu || s.BusyPercent != tt.busy {
				t.Errorf("CPU %v ms a run, %v%% busy; want %v, %v", s.CPUMSPerRun, s.BusyPercent, tt.cpu, tt.busy)
			}
		})
	}
}
