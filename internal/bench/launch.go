package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/session"
)

// The launch section: the time from a request to its answer in the form the
// hosted sandboxes publish theirs (ComputeSDK's time-to-first-command
// benchmark): n launches one after another, n started one every
// launchGap whether or not the last has answered, and n at once; p50, p95,
// p99 and the success rate of each. The launches go through the scheduler,
// as the service's do (NumCPU at once, the rest waiting in its queue), to
// an executor with the default settings.

// Launch patterns.
const (
	patternSequential = "sequential"
	patternStaggered  = "staggered"
	patternBurst      = "burst"
)

// Launch rows.
const (
	launchHello = "hello" // print('hello'), pre-forked
	launchPlot  = "plot"  // the plot snippet, pre-forked with the default preload
	launchCell  = "cell"  // print('hello') as a cell of a live session
	// launchCellScript is print('hello') as a script in a live session:
	// no value, no display(); launchCellValue is 'hello' as a cell whose
	// value is shown. Their difference is what showing a value costs.
	launchCellScript = "cell-script"
	launchCellValue  = "cell-value"
	// launchReplay is print('hello') as the first cell of a new session
	// whose state is rebuilt from replayCells earlier cells: a session's
	// start and its replay.
	launchReplay = "replay"
	// launchFloor is not a launch but the machine's floor: one byte through
	// a pipe to a bare python that writes it back, nothing of runblock
	// between. A launch wakes several processes in turn; where this one
	// round trip's p99 is past twice its p50, the machine's scheduling
	// alone puts every launch's tail there.
	launchFloor = "floor"
)

// replayCells is how many cells a replay launch rebuilds.
const replayCells = 10

// LaunchStats are one pattern of launches of one kind.
type LaunchStats struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Pattern string `json:"pattern"`
	Runs    int    `json:"runs"`
	OK      int    `json:"ok"`
	// Errors counts launches the service itself failed (not ok either).
	Errors int `json:"errors,omitempty"`
	// The percentiles are of the successful launches.
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
	// P999MS is p99.9: the slowest launch of fewer than 1,000.
	P999MS float64 `json:"p999_ms"`
	WallS  float64 `json:"wall_s"`
	// Error says why the pattern could not be measured.
	Error string `json:"error,omitempty"`
}

// SuccessRate is the share of launches that worked, 0 to 1.
func (s LaunchStats) SuccessRate() float64 {
	if s.Runs == 0 {
		return 0
	}
	return float64(s.OK) / float64(s.Runs)
}

// launchFunc launches one thing (a run of a snippet; a cell of a live
// session) for launch i and reports whether it worked. An error is the
// service failing it: the launch counts as failed and the pattern goes on.
type launchFunc func(ctx context.Context, i int) (bool, error)

// launcher is one row of the launch section: what is launched, and how.
type launcher struct {
	name, label string
	launch      launchFunc
}

// launched is the raw outcome of one pattern.
type launched struct {
	latencies []time.Duration // of the launches that worked
	runs, ok  int
	errors    int
	wall      time.Duration
}

// launchPattern runs n launches: one after another (sequential), one every
// gap (staggered), or all at once (burst, gap 0).
func launchPattern(ctx context.Context, pattern string, n int, gap time.Duration, launch launchFunc) (launched, error) {
	var (
		mu  sync.Mutex
		out = launched{runs: n}
	)
	one := func(i int) {
		t := time.Now()
		ok, err := launch(ctx, i)
		d := time.Since(t)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			out.errors++
		case ok:
			out.ok++
			out.latencies = append(out.latencies, d)
		}
	}
	start := time.Now()
	switch pattern {
	case patternSequential:
		for i := range n {
			if ctx.Err() != nil {
				break
			}
			one(i)
		}
	case patternStaggered, patternBurst:
		if pattern == patternBurst {
			gap = 0
		}
		var wg sync.WaitGroup
		for i := range n {
			if i > 0 && gap > 0 && !pause(ctx, gap) {
				break
			}
			wg.Go(func() { one(i) })
		}
		wg.Wait()
	default:
		return out, fmt.Errorf("unknown launch pattern %q", pattern)
	}
	out.wall = time.Since(start)
	return out, ctx.Err()
}

// launchStats turns one pattern's outcome into its figures.
func launchStats(name, label, pattern string, l launched) LaunchStats {
	sorted := slices.Clone(l.latencies)
	slices.Sort(sorted)
	return LaunchStats{
		Name: name, Label: label, Pattern: pattern,
		Runs: l.runs, OK: l.ok, Errors: l.errors,
		P50MS: ms(percentile(sorted, 50)), P95MS: ms(percentile(sorted, 95)), P99MS: ms(percentile(sorted, 99)),
		P999MS: ms(percentile(sorted, 99.9)),
		WallS:  l.wall.Seconds(),
	}
}

// sequentialScale is how many times b.launchRuns the sequential pattern
// launches. Of a hundred launches p99 is the second slowest, and one
// after another the first launches after the pattern's settle pause
// decided it: they find the caches cold, as each of the staggered
// pattern's launches does (in 2,000 cells one after another, the first
// four took 2x to 3x the p50, as the floor's first round trips do). A
// thousand launches one after another take little time (a cell 0.3 ms,
// a hello 3 ms), and of them p99 is the tenth slowest, p99.9 the second.
const sequentialScale = 10

// launchRows measures every launcher in every pattern, b.launchRuns
// launches each (sequentialScale times that one after another), and
// notes the failures. Each pattern starts once the processes below the
// bench settle: what the last one left (a burst's hundred sandboxes
// ending, the pool refilling) is not the next one's.
func (b *benchmark) launchRows(ctx context.Context, ls []launcher) []LaunchStats {
	var out []LaunchStats
	for _, l := range ls {
		for _, pattern := range []string{patternSequential, patternStaggered, patternBurst} {
			if _, err := settle(ctx, "/proc", os.Getpid()); err != nil && ctx.Err() == nil {
				b.note("launch %s, %s: %v", l.label, pattern, err)
			}
			n := b.launchRuns
			if pattern == patternSequential {
				n *= sequentialScale
			}
			b.log.Info("bench: launches", "row", l.name, "pattern", pattern, "runs", n)
			got, err := launchPattern(ctx, pattern, n, b.launchGap, l.launch)
			s := launchStats(l.name, l.label, pattern, got)
			if err != nil {
				s.Error = err.Error()
				out = append(out, s)
				return out
			}
			if s.OK < s.Runs {
				b.note("launch %s, %s: %d of %d failed (%d by the service)", l.label, pattern, s.Runs-s.OK, s.Runs, s.Errors)
			}
			out = append(out, s)
		}
	}
	return out
}

// launches measures the launch section on an executor with the default
// settings (pre-forked, RUNBLOCK_PRELOAD=auto) behind a scheduler as the
// service's: print('hello'), and the plot snippet where python has numpy
// and matplotlib.
func (b *benchmark) launches(ctx context.Context, python string, plot bool) []LaunchStats {
	cfg := b.preforkConfig()
	cfg.Preload = sandbox.DefaultPreload
	ex, _, err := newWarmExecutor(ctx, cfg)
	if err != nil {
		b.note("launches not measured: %v", err)
		return nil
	}
	defer ex.Close()
	label := b.preforkLabel()
	b.forkServer(&label, cfg, ex)
	conc := b.conc[len(b.conc)-1]
	// The sessions behind the cell and replay rows: as many live ones as
	// runs at once for the cells, each replay launch a session of its own
	// (the least recently used evicted).
	sessions := session.New(ex, ex, session.Options{Config: session.Config{MaxLive: 2 * conc}, SessionBytes: cfg.MemoryBytes, Logger: b.log})
	defer func() {
		if err := sessions.Close(context.WithoutCancel(ctx)); err != nil {
			b.note("launches: close the sessions: %v", err)
		}
	}()
	sched := executor.NewScheduler(sessions, executor.Config{
		Concurrency: conc,
		QueueSize:   b.launchRuns,
		MaxPerUser:  1,
		Logger:      b.log,
	})
	defer func() {
		if err := sched.Close(context.WithoutCancel(ctx)); err != nil {
			b.note("launches: close the scheduler: %v", err)
		}
	}()
	// Warm-up: the pool's first children, the page cache.
	c := &contender{row: Row{Name: launchHello, Label: label}, run: executorRun(ex)}
	if !b.warm(ctx, c) {
		return nil
	}
	hello := func(res executor.Result) bool { return res.Success && res.Stdout == helloOut }
	var ls []launcher
	if floor, stop, err := echo(python); err != nil {
		b.note("launches: the machine's floor not measured: %v", err)
	} else {
		defer stop()
		ls = append(ls, launcher{launchFloor, "a pipe round trip to a bare python (floor)", floor})
	}
	ls = append(ls, launcher{launchHello, "print('hello'), " + label, b.submit(sched, executor.Request{Code: helloCode}, nil, hello)})
	if plot {
		ls = append(ls, launcher{launchPlot, "plot, " + label, b.submit(sched, executor.Request{Code: plotCode}, nil, plotOK)})
	}
	// The cells go to conc sessions, started (and warmed) before the
	// patterns, so that a launch is a cell of a live session.
	cell := func(i int) *executor.Session { return &executor.Session{ID: fmt.Sprintf("bench-cell-%d", i%conc)} }
	for i := range conc {
		if ok, err := b.submit(sched, executor.Request{Code: helloCode}, cell, hello)(ctx, i); !ok || err != nil {
			b.note("launches: a session for the cell row did not start (%v): no session rows", err)
			return b.launchRows(ctx, ls)
		}
	}
	replay := make([]executor.Request, replayCells)
	for i := range replay {
		replay[i] = executor.Request{Code: fmt.Sprintf("x%d = %d", i, i)}
	}
	fresh := func(i int) *executor.Session {
		return &executor.Session{ID: fmt.Sprintf("bench-replay-%d", i), Replay: replay}
	}
	ls = append(ls,
		launcher{launchCell, "print('hello'), a cell of a live session", b.submit(sched, executor.Request{Code: helloCode}, cell, hello)},
		launcher{launchCellScript, "print('hello'), a script in a live session", b.submit(sched, executor.Request{Code: helloCode, Script: true}, cell, hello)},
		launcher{launchCellValue, "'hello' shown as a cell's value, live session", b.submit(sched, executor.Request{Code: valueCode}, cell, shownValue)},
		launcher{launchReplay, fmt.Sprintf("print('hello') in a new session, after a replay of %d cells", replayCells), b.submit(sched, executor.Request{Code: helloCode}, fresh,
			func(res executor.Result) bool {
				return hello(res) && res.Session != nil && res.Session.Restored == replayCells
			})})
	return b.launchRows(ctx, ls)
}

// echo starts a bare python that writes back each byte it reads, and
// returns one round trip through it (launches at once take turns) and
// what ends it.
func echo(python string) (launchFunc, func(), error) {
	cmd := exec.Command(python, "-I", "-S", "-c", "import os\nwhile b := os.read(0, 1):\n    os.write(1, b)\n")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	trip := func(_ context.Context, _ int) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		var b [1]byte
		if _, err := in.Write([]byte{'x'}); err != nil {
			return false, err
		}
		if _, err := io.ReadFull(out, b[:]); err != nil {
			return false, err
		}
		return b[0] == 'x', nil
	}
	return trip, func() {
		in.Close()
		_ = cmd.Wait()
	}, nil
}

// valueCode is a cell whose value is shown, the value's hello.
const valueCode = "'hello'"

// shownValue reports whether res shows valueCode's value, and nothing else.
func shownValue(res executor.Result) bool {
	return res.Success && res.Stdout == "" && len(res.Results) == 1 && res.Results[0].Value && res.Results[0].Data["text/plain"] == "'hello'"
}

// submit launches req through sched, each launch as a user of its own
// (one waiting job per user is the service's default), as a cell of
// session(i) when session is set, and judges its result with ok.
func (b *benchmark) submit(sched *executor.Scheduler, req executor.Request, session func(i int) *executor.Session, ok func(executor.Result) bool) launchFunc {
	return func(ctx context.Context, i int) (bool, error) {
		req := req // launches run at once: each its own copy
		if session != nil {
			req.Session = session(i)
		}
		res, err := sched.Submit(ctx, executor.Job{User: fmt.Sprintf("bench:launch-%d", i), Request: req})
		if err != nil {
			return false, err
		}
		return ok(res), nil
	}
}
