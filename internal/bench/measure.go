package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/internal/procstat"
)

// runFunc runs program i of a phase and reports whether it passed. A non-nil
// error means the runner itself failed, which stops the phase.
type runFunc func(ctx context.Context, i int) (bool, error)

// phase is the raw outcome of running n programs with conc workers.
type phase struct {
	Latencies []time.Duration // one per program, in program order
	Wall      time.Duration
	Passed    int
	Failed    []int // indexes of programs that did not pass
}

// measure runs n programs with conc workers, each taking the next program
// when it is done with one (a closed loop, arrive nil), or once arrive
// returns after that (spacing the arrivals out, as in a chat where snippets
// come one at a time to an idle service; arrive false ends the phase), and
// times every run and the whole phase.
func measure(ctx context.Context, n, conc int, arrive func(context.Context) bool, run runFunc) (phase, error) {
	if conc < 1 {
		conc = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lat := make([]time.Duration, n)
	ok := make([]bool, n)
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	for range min(conc, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if arrive != nil && !arrive(ctx) {
					return
				}
				t := time.Now()
				passed, err := run(ctx, i)
				lat[i] = time.Since(t)
				if err != nil {
					errOnce.Do(func() {
						firstErr = fmt.Errorf("run %d: %w", i, err)
						cancel()
					})
					return
				}
				ok[i] = passed
			}
		})
	}
	wg.Wait()
	p := phase{Latencies: lat, Wall: time.Since(start)}
	if firstErr != nil {
		return p, firstErr
	}
	if err := ctx.Err(); err != nil {
		return p, err
	}
	for i, passed := range ok {
		if passed {
			p.Passed++
		} else {
			p.Failed = append(p.Failed, i)
		}
	}
	return p, nil
}

// every returns the runs j, j+m, j+2m, ... of p as a phase of their own
// (renumbered 0, 1, 2, ...), with their failures; the wall time stays p's.
func every(p phase, why map[int]failure, j, m int) (phase, map[int]failure) {
	sub := phase{Wall: p.Wall}
	subWhy := map[int]failure{}
	failed := map[int]bool{}
	for _, k := range p.Failed {
		failed[k] = true
	}
	for k := j; k < len(p.Latencies); k += m {
		i := len(sub.Latencies)
		sub.Latencies = append(sub.Latencies, p.Latencies[k])
		if failed[k] {
			sub.Failed = append(sub.Failed, i)
			subWhy[i] = why[k]
		} else {
			sub.Passed++
		}
	}
	return sub, subWhy
}

// pause waits d, and reports false if ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// spaced is an arrival gap after the last run ends.
func spaced(gap time.Duration) func(context.Context) bool {
	return func(ctx context.Context) bool { return pause(ctx, gap) }
}

// percentile returns the nearest-rank q-th percentile (0 < q <= 100) of
// sorted, or 0 when sorted is empty. The rank is rounded up from
// q×n/100 less a rounding error's worth: 99.9/100×1000 is
// 999.0000000000001 in floating point, whose ceiling would be the
// slowest of 1,000 rather than the 999th.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(len(sorted))/100 - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// summary turns a phase into the figures the report shows; an idle phase
// (spaced arrivals) has no throughput.
func summary(conc int, idle bool, p phase) Stats {
	sorted := slices.Clone(p.Latencies)
	slices.Sort(sorted)
	s := Stats{
		Concurrency: conc,
		Runs:        len(p.Latencies),
		Passed:      p.Passed,
		P50MS:       ms(percentile(sorted, 50)),
		P90MS:       ms(percentile(sorted, 90)),
		P99MS:       ms(percentile(sorted, 99)),
		WallS:       p.Wall.Seconds(),
	}
	if p.Wall > 0 && !idle {
		s.RunsPerS = float64(len(p.Latencies)) / p.Wall.Seconds()
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// setCPU sets s's machine CPU figures from the machine's CPU times before
// and after its phase.
func (s *Stats) setCPU(before, after procstat.CPUTimes) {
	busy, all := after.Busy-before.Busy, after.All-before.All
	if s.Runs == 0 || all <= 0 || busy < 0 {
		return
	}
	s.CPUMSPerRun = float64(busy) * 1000 / procstat.ClockTicks / float64(s.Runs)
	s.BusyPercent = 100 * float64(busy) / float64(all)
}
