// Package bench measures, side by side in one run, how fast snippets run
// with bare python, the original execute_code (../shared/reference) and the
// executor: cold and pooled with every sandbox started from scratch, and as
// forks of the fork server, cold and pre-forked; how much memory a warm,
// idle executor holds; and how much the service holds while a snippet
// floods stdout. It backs `runblock bench`.
package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/procstat"
	"golang.org/x/sys/unix"
)

// Options configure a bench run. The zero value measures everything.
type Options struct {
	// JSON makes Run write one JSON object instead of tables.
	JSON bool
	// Quick is a first look in well under a minute: a few runs of every
	// row, the plot and launch sections small, and the original, the idle
	// memory and the flood left out. Counts set below still apply.
	Quick bool
	// Executor is the base configuration of the executor rows; bench sets
	// Pool and DisableForkServer per row. Its Python (python3 on PATH when
	// "") also runs the bare row and seed_bench.py, resolved to
	// sys.executable past any shim.
	Executor sandbox.Config
	// SharedDir holds reference/seed_bench.py and data/HumanEval.jsonl.gz;
	// "" means ../shared beside the module root above the working directory.
	SharedDir string
	// Concurrency is the parallel level measured beside 1; 0 = NumCPU.
	Concurrency int
	// Pool is the pool size of the pooled and pre-forked rows; 0 =
	// Executor.Pool, else Concurrency.
	Pool int
	// HelloRuns is the number of print('hello') runs per phase; 0 = 200.
	HelloRuns int
	// IdleRuns is the number of print('hello') runs that arrive one at a
	// time, as in a chat: each at least IdleGap after the last ends, once
	// the machine's CPUs are quiet (a pool has refilled); 0 = 100 runs,
	// 50ms.
	IdleRuns int
	IdleGap  time.Duration
	// Warmup is the number of untimed runs before each row; 0 = 10.
	Warmup int
	// HumanEvalPrograms limits HumanEval to its first n programs; 0 = all.
	HumanEvalPrograms int
	// FloodTimeout is the flooding snippet's timeout; 0 = Executor.Timeout,
	// else sandbox.DefaultTimeout.
	FloodTimeout time.Duration
	// PlotRuns is the number of runs of the plot snippet (numpy and
	// matplotlib, plt.show()) per row, arriving PlotGap apart; 0 = 10 runs,
	// 1 s.
	PlotRuns int
	PlotGap  time.Duration
	// LaunchRuns is the number of launches per pattern of the launch
	// section, LaunchGap apart in the staggered one; 0 = 100, 200 ms (as
	// ComputeSDK's benchmark).
	LaunchRuns int
	LaunchGap  time.Duration
	// StartRuns is the number of `runblock executor` starts of the start
	// section; 0 = 10. Binary is the runblock binary they start; "" =
	// this process's own.
	StartRuns int
	Binary    string
	// IdleSessions is how many live sessions the idle-sessions row opens
	// in one executor; 0 = 500. IdleWindow is the window their CPU time is
	// read over, 0 = 10 s; IdleCells the cells run in them, 0 = 200.
	IdleSessions int
	IdleWindow   time.Duration
	IdleCells    int
	// SkipOriginal skips seed_bench.py; SkipFlood skips the flood; SkipPlot
	// skips the plot rows; SkipLaunch the launch section; SkipIdleSessions
	// the idle-sessions row; SkipStart the start section.
	SkipOriginal     bool
	SkipFlood        bool
	SkipPlot         bool
	SkipLaunch       bool
	SkipIdleSessions bool
	SkipStart        bool
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

const (
	helloCode = "print('hello')"
	helloOut  = "hello\n"
	// bareTimeout bounds each bare run, as seed_bench.py does for HumanEval.
	bareTimeout = 10 * time.Second
)

// Run measures everything Options ask for and writes the report to w.
func Run(ctx context.Context, opts Options, w io.Writer) error {
	r, err := Measure(ctx, opts)
	if err != nil {
		return err
	}
	if opts.JSON {
		return r.WriteJSON(w)
	}
	return r.WriteText(w)
}

// Measure runs the bench and returns its report. Errors are kept for a
// failure that leaves nothing to compare (no python, context ended); a row
// or part that cannot be measured is noted in the report instead.
func Measure(ctx context.Context, opts Options) (*Report, error) {
	start := time.Now()
	b := newBenchmark(opts)
	opts = b.opts // with --quick's counts
	py, err := resolvePython(ctx, cmp.Or(opts.Executor.Python, "python3"))
	if err != nil {
		return nil, err
	}
	r := &Report{
		LoadStart:     loadAvg(),
		NumCPU:        runtime.NumCPU(),
		Machine:       machine("/proc/cpuinfo"),
		Concurrency:   b.conc,
		Python:        py.Path,
		PythonVersion: py.Version,
		HelloRuns:     b.helloRuns,
		IdleRuns:      b.idleRuns,
		IdleGapMS:     ms(b.idleGap),
		Warmup:        b.warmup,
	}
	b.report = r
	plot := b.plotModules(ctx, py.Path)
	if opts.SkipStart {
		b.skip("start", "--skip-start")
	} else {
		r.Start = b.starts(ctx, py.Path)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	shared := cmp.Or(opts.SharedDir, findShared())
	switch {
	case opts.SkipOriginal:
		b.skip("original execute_code", "--skip-original")
	case opts.Quick:
		b.skip("original execute_code", "--quick (it takes half a minute)")
	case shared == "":
		b.skip("original execute_code", "../shared/reference/seed_bench.py not found beside the module root (--shared DIR)")
	}
	var total int
	if progs, err := humanEval(bytes.NewReader(humanEvalData)); err != nil {
		b.note("HumanEval not measured: %v", err)
	} else {
		total = len(progs)
		if n := opts.HumanEvalPrograms; n > 0 && n < total {
			progs = progs[:n]
			b.note("HumanEval limited to %d of %d programs: the original's HumanEval figures (always all) are left out", n, total)
		}
		b.programs = progs
		r.HumanEvalPrograms = len(progs)
	}

	seed := shared != "" && !opts.SkipOriginal && !opts.Quick
	if seed {
		b.original(ctx, py.Path, filepath.Join(shared, "reference", "seed_bench.py"), total)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp("", "runblock-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bp := bare{python: py.Path, dir: dir}
	cs := []*contender{{row: Row{Name: rowBare, Label: "bare python3 -I -S -c"}, run: func(ctx context.Context, code string) (outcome, error) {
		ok, out, err := bp.run(ctx, code, bareTimeout)
		return outcome{ok: ok, stdout: out}, err
	}}}
	var started []*sandbox.Executor
	for _, c := range b.executorRows(plot) {
		ex, err := b.start(ctx, &c.row, c.cfg)
		if err != nil {
			b.report.Rows = append(b.report.Rows, c.row)
			continue
		}
		started = append(started, ex)
		cs = append(cs, &contender{row: c.row, run: executorRun(ex)})
	}
	b.measureAll(ctx, cs)
	for _, ex := range started {
		ex.Close()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.sortRows()

	if seed {
		b.original(ctx, py.Path, filepath.Join(shared, "reference", "seed_bench.py"), total)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Idle memory: one executor at a time, so that every process below
	// the bench is its own.
	if opts.Quick {
		b.skip("idle memory", "--quick")
	} else {
		for _, c := range b.memoryRows(plot) {
			r.IdleMemory = append(r.IdleMemory, b.idleMemory(ctx, c.row.Name, c.row.Label, c.cfg))
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}

	switch {
	case opts.SkipFlood:
		b.skip("stdout flood", "--skip-flood")
	case opts.Quick:
		b.skip("stdout flood", "--quick (it floods for the whole timeout, twice)")
	default:
		r.Flood = b.flood(ctx, b.poolConfig(), b.poolLabel())
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.FloodPrefork = b.flood(ctx, b.preforkConfig(), b.preforkLabel())
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	switch {
	case opts.SkipPlot:
		b.skip("plot", "--skip-plot")
	case plot != "":
		b.skip("plot", plot)
	default:
		r.Plot = b.plotRows(ctx)
		r.PlotGapMS = ms(b.plotGap)
		for _, row := range r.Plot {
			if row.Error != "" {
				b.note("plot: %s: %s", row.Label, row.Error)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	if opts.SkipLaunch {
		b.skip("launches", "--skip-launch")
	} else {
		if plot != "" && !opts.SkipPlot {
			b.skip("plot launches", plot)
		}
		r.Launches = b.launches(ctx, py.Path, plot == "" && !opts.SkipPlot)
		r.LaunchRuns, r.LaunchSequentialRuns, r.LaunchGapMS = b.launchRuns, sequentialScale*b.launchRuns, ms(b.launchGap)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	if opts.SkipIdleSessions {
		b.skip("idle sessions", "--skip-idle-sessions")
	} else {
		r.IdleSessions = b.idleSessions(ctx, cmp.Or(opts.IdleSessions, idleSessionsDefault),
			cmp.Or(opts.IdleWindow, idleWindowDefault), cmp.Or(opts.IdleCells, idleCellsDefault))
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}

	r.compare()
	r.evaluate()
	r.ElapsedS = time.Since(start).Seconds()
	r.LoadEnd = loadAvg()
	return r, nil
}

// executorRun runs snippets on ex, with no per-request limits: a pool only
// serves runs with the executor's default limits.
func executorRun(ex *sandbox.Executor) snippetFunc {
	return func(ctx context.Context, code string) (outcome, error) {
		res, err := ex.Run(ctx, executor.Request{Code: code})
		return outcome{ok: res.Success, stdout: res.Stdout, errLine: res.Error}, err
	}
}

// flood measures the service's memory under a stdout flood on an executor
// configured as cfg, in a child process.
func (b *benchmark) flood(ctx context.Context, cfg sandbox.Config, label string) *Flood {
	cfg.Timeout = cmp.Or(b.opts.FloodTimeout, b.opts.Executor.Timeout, sandbox.DefaultTimeout)
	// Lift the hard output cap so the snippet floods for its whole
	// timeout; only the kept prefix may stay in memory.
	cfg.MaxOutputBytes = 1 << 50
	b.log.Info("bench: stdout flood", "row", label, "timeout", cfg.Timeout)
	f, err := measureFlood(ctx, cfg, label)
	if err != nil {
		b.note("flood on %s not measured: %v", label, err)
		return nil
	}
	if !cfg.DisableForkServer && f.ForkServer != nil && !f.ForkServer.Active {
		b.fallback(*f.ForkServer)
		f.Row += fallbackMark
	}
	return f
}

// original runs seed_bench.py and merges its figures into the report's.
func (b *benchmark) original(ctx context.Context, python, script string, total int) {
	b.log.Info("bench: running the original", "script", script)
	o, err := runSeed(ctx, python, script, total)
	if err != nil {
		b.note("original not measured: %v", err)
		return
	}
	if len(b.programs) < total {
		// seed_bench.py always runs every program.
		o.HumanEval = nil
	}
	b.report.Original = best(b.report.Original, o)
}

// plotModules returns "" when python has numpy and matplotlib, else why
// the plot rows cannot run.
func (b *benchmark) plotModules(ctx context.Context, python string) string {
	if err := hasModules(ctx, python, "numpy", "matplotlib"); err != nil {
		return fmt.Sprintf("%s: %v; RUNBLOCK_PYTHON=/usr/bin/python3 with Debian's python3-numpy and python3-matplotlib measures it", python, err)
	}
	return ""
}

// loadAvg returns the 1-minute load average, or "" where /proc has none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	load, _, _ := strings.Cut(string(b), " ")
	return load
}

// machine is the model of the first CPU that cpuinfo (/proc/cpuinfo)
// names and the kernel with its release: "AMD EPYC, Linux 6.18.44";
// either is left out where it cannot be read.
func machine(cpuinfo string) string {
	var parts []string
	if b, err := os.ReadFile(cpuinfo); err == nil {
		for line := range strings.Lines(string(b)) {
			if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
				parts = append(parts, strings.TrimSpace(value))
				break
			}
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		parts = append(parts, unix.ByteSliceToString(u.Sysname[:])+" "+unix.ByteSliceToString(u.Release[:]))
	}
	return strings.Join(parts, ", ")
}

// benchmark is the state of one Measure call.
type benchmark struct {
	opts       Options
	conc       []int
	pool       int
	helloRuns  int
	idleRuns   int
	idleGap    time.Duration
	warmup     int
	plotRuns   int
	plotGap    time.Duration
	launchRuns int
	launchGap  time.Duration
	startRuns  int
	programs   []string
	report     *Report
	log        *slog.Logger
	// cpu reads the machine's CPU times (/proc/stat), around each
	// HumanEval phase and before each idle run (quiet).
	cpu   func() (procstat.CPUTimes, bool)
	quiet quietWait
	// fellBack is set once the report notes that the fork server is off.
	fellBack bool
}

// quick are the counts of a --quick run, where Options leave them 0.
var quick = Options{HelloRuns: 20, IdleRuns: 10, Warmup: 2, HumanEvalPrograms: 16, PlotRuns: 5, PlotGap: 300 * time.Millisecond, LaunchRuns: 20, LaunchGap: 50 * time.Millisecond,
	IdleSessions: 20, IdleWindow: 2 * time.Second, IdleCells: 40, StartRuns: 3}

func newBenchmark(opts Options) *benchmark {
	if opts.Quick {
		opts.HelloRuns = cmp.Or(opts.HelloRuns, quick.HelloRuns)
		opts.IdleRuns = cmp.Or(opts.IdleRuns, quick.IdleRuns)
		opts.Warmup = cmp.Or(opts.Warmup, quick.Warmup)
		opts.HumanEvalPrograms = cmp.Or(opts.HumanEvalPrograms, quick.HumanEvalPrograms)
		opts.PlotRuns = cmp.Or(opts.PlotRuns, quick.PlotRuns)
		opts.PlotGap = cmp.Or(opts.PlotGap, quick.PlotGap)
		opts.LaunchRuns = cmp.Or(opts.LaunchRuns, quick.LaunchRuns)
		opts.LaunchGap = cmp.Or(opts.LaunchGap, quick.LaunchGap)
		opts.IdleSessions = cmp.Or(opts.IdleSessions, quick.IdleSessions)
		opts.IdleWindow = cmp.Or(opts.IdleWindow, quick.IdleWindow)
		opts.IdleCells = cmp.Or(opts.IdleCells, quick.IdleCells)
		opts.StartRuns = cmp.Or(opts.StartRuns, quick.StartRuns)
	}
	n := cmp.Or(opts.Concurrency, runtime.NumCPU())
	b := &benchmark{
		opts:       opts,
		conc:       slices.Compact([]int{1, max(n, 1)}),
		pool:       cmp.Or(opts.Pool, opts.Executor.Pool, n),
		helloRuns:  cmp.Or(opts.HelloRuns, 200),
		idleRuns:   cmp.Or(opts.IdleRuns, 100),
		idleGap:    cmp.Or(opts.IdleGap, 50*time.Millisecond),
		warmup:     cmp.Or(opts.Warmup, 10),
		plotRuns:   cmp.Or(opts.PlotRuns, 10),
		plotGap:    cmp.Or(opts.PlotGap, time.Second),
		launchRuns: cmp.Or(opts.LaunchRuns, 100),
		launchGap:  cmp.Or(opts.LaunchGap, 200*time.Millisecond),
		startRuns:  cmp.Or(opts.StartRuns, 10),
		log:        opts.Logger,
		cpu:        func() (procstat.CPUTimes, bool) { return procstat.ReadCPUTimes("/proc/stat") },
	}
	b.quiet = quietWait{cpu: func() (procstat.CPUTimes, bool) { return b.cpu() }, now: time.Now, sleep: pause}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b
}

func (b *benchmark) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.log.Warn("bench: " + msg)
	b.report.Notes = append(b.report.Notes, msg)
}

// skip records that part of the bench did not run, and why, in one line.
func (b *benchmark) skip(part, why string) {
	b.log.Info("bench: skipped", "part", part, "why", why)
	b.report.Skipped = append(b.report.Skipped, Skip{Part: part, Why: why})
}

// executorConfig is one executor row.
type executorConfig struct {
	row Row
	cfg sandbox.Config
}

// coldConfig starts every sandbox from scratch, one per run: the path
// before the fork server (RUNBLOCK_FORKSERVER=off, RUNBLOCK_POOL=0).
func (b *benchmark) coldConfig() sandbox.Config {
	cfg := b.opts.Executor
	cfg.Pool = 0
	cfg.DisableForkServer = true
	if cfg.Logger == nil {
		cfg.Logger = b.log
	}
	return cfg
}

// poolConfig keeps b.pool sandboxes started from scratch waiting.
func (b *benchmark) poolConfig() sandbox.Config {
	cfg := b.coldConfig()
	cfg.Pool = b.pool
	return cfg
}

// forkConfig forks each run from the fork server when it comes.
func (b *benchmark) forkConfig() sandbox.Config {
	cfg := b.coldConfig()
	cfg.DisableForkServer = false
	return cfg
}

// preforkConfig keeps b.pool children of the fork server waiting.
func (b *benchmark) preforkConfig() sandbox.Config {
	cfg := b.forkConfig()
	cfg.Pool = b.pool
	return cfg
}

const (
	coldLabel = "executor cold (pool off)"
	forkLabel = "executor fork (pool off)"
)

func (b *benchmark) poolLabel() string    { return fmt.Sprintf("executor pool (%d)", b.pool) }
func (b *benchmark) preforkLabel() string { return fmt.Sprintf("executor prefork (%d)", b.pool) }

// executorRows are the executor's rows, with the preload configured
// (RUNBLOCK_PRELOAD, auto by default), and, where that preload imports
// something (plot is "" where python has numpy and matplotlib, else why
// not), the pre-forked row again without it: plain runs side by side with
// and without the preloaded heap.
func (b *benchmark) executorRows(plot string) []executorConfig {
	rows := []executorConfig{
		{Row{Name: rowCold, Label: coldLabel}, b.coldConfig()},
		{Row{Name: rowPool, Label: b.poolLabel()}, b.poolConfig()},
		{Row{Name: rowFork, Label: forkLabel}, b.forkConfig()},
		{Row{Name: rowPrefork, Label: b.preforkLabel()}, b.preforkConfig()},
	}
	switch {
	case b.preloads(plot):
		off := b.preforkConfig()
		off.Preload = sandbox.Preload{}
		rows = append(rows, executorConfig{Row{Name: rowPreforkOff, Label: b.preforkLabel() + ", preload off"}, off})
	case len(b.opts.Executor.Preload.Modules) > 0:
		b.skip("prefork with RUNBLOCK_PRELOAD=off", "the default preload imports nothing with this python, so it would be the prefork row again")
	}
	return rows
}

// preloads reports whether the configured preload imports something
// (plot as for executorRows).
func (b *benchmark) preloads(plot string) bool {
	pre := b.opts.Executor.Preload
	return len(pre.Modules) > 0 && !(pre.Auto && plot != "")
}

// memoryRows are the executors whose idle memory is measured: the warm
// capacity of the pool and of the pre-forked pool, and the fork servers
// alone, again without the preload where it imports something (plot as
// for executorRows): the difference is the preloaded fork server's cost.
func (b *benchmark) memoryRows(plot string) []executorConfig {
	rows := []executorConfig{
		{Row{Name: rowPool, Label: b.poolLabel()}, b.poolConfig()},
		{Row{Name: rowFork, Label: forkLabel}, b.forkConfig()},
		{Row{Name: rowPrefork, Label: b.preforkLabel()}, b.preforkConfig()},
	}
	if b.preloads(plot) {
		off := b.forkConfig()
		off.Preload = sandbox.Preload{}
		rows = append(rows, executorConfig{Row{Name: rowForkOff, Label: forkLabel + ", preload off"}, off})
	}
	return rows
}

// fallbackMark ends the label of a row meant for the fork server that ran
// without it.
const fallbackMark = " [no fork server]"

// forkServer returns ex's fork server report; when cfg asks for the fork
// server and ex runs without it, it marks label and notes why once.
func (b *benchmark) forkServer(label *string, cfg sandbox.Config, ex *sandbox.Executor) *sandbox.ForkServerReport {
	fs := ex.Isolation().ForkServer
	if !cfg.DisableForkServer && !fs.Active {
		b.fallback(fs)
		*label += fallbackMark
	}
	return &fs
}

// fallback notes, once, that the fork rows measure the fallback.
func (b *benchmark) fallback(fs sandbox.ForkServerReport) {
	if b.fellBack {
		return
	}
	b.fellBack = true
	b.note("no fork server: %s; the rows marked %q measure that fallback",
		cmp.Or(fs.Detail, "unavailable, each run starts a sandbox from scratch"), strings.TrimSpace(fallbackMark))
}

// newWarmExecutor starts an executor of cfg and waits until it is warm
// (sandbox.Executor.Warm: the preloaded fork server and the plots' pool
// up), so that every row measures the executor it names; took is how
// long sandbox.New took.
func newWarmExecutor(ctx context.Context, cfg sandbox.Config) (ex *sandbox.Executor, took time.Duration, err error) {
	t := time.Now()
	if ex, err = sandbox.New(ctx, cfg); err != nil {
		return nil, 0, err
	}
	took = time.Since(t)
	if err := ex.Warm(ctx); err != nil {
		ex.Close()
		return nil, 0, err
	}
	return ex, took, nil
}

// start starts an executor for row, or notes why it could not.
func (b *benchmark) start(ctx context.Context, row *Row, cfg sandbox.Config) (*sandbox.Executor, error) {
	b.log.Info("bench: starting executor", "row", row.Name, "pool", cfg.Pool)
	ex, took, err := newWarmExecutor(ctx, cfg)
	if err != nil {
		row.Error = err.Error()
		b.note("%s not measured: %v", row.Label, err)
		return nil, err
	}
	row.StartupMS = ms(took)
	row.ForkServer = b.forkServer(&row.Label, cfg, ex)
	if row.Name == rowCold || b.report.Isolation == "" {
		b.report.Isolation = ex.Isolation().Tier
	}
	return ex, nil
}

// contender is one row being measured, and how it runs a snippet.
type contender struct {
	row Row
	run snippetFunc
}

// measureAll warms every contender up, measures their idle latency taking
// them in turn (so all see the same machine), then each one's closed loops,
// and adds their rows to the report.
func (b *benchmark) measureAll(ctx context.Context, cs []*contender) {
	var ready []*contender
	for _, c := range cs {
		if b.warm(ctx, c) {
			ready = append(ready, c)
		}
	}
	// In the idle phase the pooled rows go first, the pool (whose refill
	// starts a whole sandbox) before the pre-forked one. Each run waits
	// for a quiet machine (quietWait), so no row's run shares the CPUs
	// with the refill the last one started.
	idleOrder := slices.Clone(ready)
	slices.SortStableFunc(idleOrder, func(x, y *contender) int {
		return cmp.Compare(idleRank[x.row.Name], idleRank[y.row.Name])
	})
	if err := b.idle(ctx, idleOrder); err == nil {
		for _, c := range ready {
			b.loops(ctx, c)
		}
		b.humanEvalInTurn(ctx, ready)
	}
	for _, c := range cs {
		b.report.Rows = append(b.report.Rows, c.row)
	}
}

// Orders of the rows: in the report, and in turn during the idle phase.
var (
	reportRank = map[string]int{rowBare: 0, rowCold: 1, rowPool: 2, rowFork: 3, rowPrefork: 4, rowPreforkOff: 5}
	idleRank   = map[string]int{rowPool: 0, rowPrefork: 1, rowPreforkOff: 2, rowBare: 3, rowFork: 4, rowCold: 5}
)

// sortRows puts the rows in the report's order: bare, cold, pool, fork,
// prefork, prefork without the preload.
func (b *benchmark) sortRows() {
	slices.SortStableFunc(b.report.Rows, func(x, y Row) int { return cmp.Compare(reportRank[x.Name], reportRank[y.Name]) })
}

// warm runs the untimed warm-up, and reports whether c can be measured.
func (b *benchmark) warm(ctx context.Context, c *contender) bool {
	b.log.Info("bench: warming up", "row", c.row.Name)
	for range b.warmup {
		if _, err := c.run(ctx, helloCode); err != nil {
			c.row.Error = err.Error()
			b.note("%s: warm-up: %v", c.row.Label, err)
			return false
		}
	}
	return true
}

// idle measures print('hello') arriving one at a time, at least b.idleGap
// apart and on a quiet machine, taking the contenders in turn.
func (b *benchmark) idle(ctx context.Context, cs []*contender) error {
	m := len(cs)
	if m == 0 {
		return nil
	}
	ps := b.hello(1, b.idleRuns*m, b.idleGap)
	b.log.Info("bench: phase", "phase", ps.what, "rows", m, "runs", ps.n)
	p, why, err := b.execute(ctx, ps, func(ctx context.Context, k int) (outcome, error) {
		return cs[k%m].run(ctx, helloCode)
	})
	if err != nil {
		for _, c := range cs {
			c.row.Error = err.Error()
		}
		b.note("%s stopped: %v", ps.what, err)
		return err
	}
	for j, c := range cs {
		sub, subWhy := every(p, why, j, m)
		s := b.judge(c.row.Label, b.hello(1, b.idleRuns, b.idleGap), sub, subWhy)
		c.row.Idle = &s
	}
	return nil
}

// loops measures c's closed loops of hello at each concurrency.
func (b *benchmark) loops(ctx context.Context, c *contender) {
	b.log.Info("bench: measuring", "row", c.row.Name)
	for _, conc := range b.conc {
		s, err := b.phase(ctx, c.row.Label, c.run, b.hello(conc, b.helloRuns, 0))
		if err != nil {
			c.row.Error = err.Error()
			return
		}
		c.row.Hello = append(c.row.Hello, s)
	}
}

// humanEvalRounds is how many times each row runs HumanEval at each
// concurrency; its figure is its fastest round.
const humanEvalRounds = 2

// humanEvalInTurn measures HumanEval at each concurrency on the rows of cs
// that measured hello, in rounds, the rows in turn in each round, and
// keeps each row's fastest round: the speed ratios compare rows measured
// side by side, not half a minute apart on a machine whose speed drifts
// (rows one after another, bare python's HumanEval at c2 took 0.94 s in
// one run and 1.23 s in the next, 2026-12-03), as the original's best of
// 2 does. A program that failed in any round counts as failed. The
// machine's CPU time over a round is kept with it (Stats.CPUMSPerRun).
func (b *benchmark) humanEvalInTurn(ctx context.Context, cs []*contender) {
	if len(b.programs) == 0 {
		return
	}
	for _, conc := range b.conc {
		best := make([]*Stats, len(cs))
		passed := make([]int, len(cs))
		for range humanEvalRounds {
			for i, c := range cs {
				if c.row.Error != "" {
					continue
				}
				before, readBefore := b.cpu()
				s, err := b.phase(ctx, c.row.Label, c.run, b.humanEval(conc))
				if err != nil {
					c.row.Error = err.Error()
					continue
				}
				if after, readAfter := b.cpu(); readBefore && readAfter {
					s.setCPU(before, after)
				}
				if best[i] == nil || s.Passed < passed[i] {
					passed[i] = s.Passed
				}
				if best[i] == nil || s.WallS < best[i].WallS {
					best[i] = &s
				}
			}
		}
		for i, c := range cs {
			if best[i] != nil && c.row.Error == "" {
				s := *best[i]
				s.Passed = passed[i]
				c.row.HumanEval = append(c.row.HumanEval, s)
			}
		}
	}
}

// outcome is what the bench needs to know of one run.
type outcome struct {
	ok      bool
	stdout  string
	errLine string
}

// snippetFunc runs one snippet.
type snippetFunc func(ctx context.Context, code string) (outcome, error)

// phaseSpec is one program set at one load.
type phaseSpec struct {
	what string
	conc int
	n    int
	gap  time.Duration // between arrivals; > 0 makes an idle phase
	code func(i int) string
	pass func(outcome) bool
	id   func(i int) string // names program i in notes
}

func (b *benchmark) hello(conc, n int, gap time.Duration) phaseSpec {
	what := "hello"
	if gap > 0 {
		what = "idle hello"
	}
	return phaseSpec{
		what: what, conc: conc, n: n, gap: gap,
		code: func(int) string { return helloCode },
		pass: func(o outcome) bool { return o.ok && o.stdout == helloOut },
		id:   func(i int) string { return fmt.Sprintf("run %d", i) },
	}
}

func (b *benchmark) humanEval(conc int) phaseSpec {
	return phaseSpec{
		what: "HumanEval", conc: conc, n: len(b.programs),
		code: func(i int) string { return b.programs[i] },
		pass: func(o outcome) bool { return o.ok },
		id:   func(i int) string { return fmt.Sprintf("HumanEval/%d", i) },
	}
}

// failure says why a run did not pass; service is set when the service
// itself failed it.
type failure struct {
	why     string
	service bool
}

// execute runs a phase and says why each failing run failed.
func (b *benchmark) execute(ctx context.Context, ps phaseSpec, run func(ctx context.Context, i int) (outcome, error)) (phase, map[int]failure, error) {
	var (
		mu  sync.Mutex
		why = map[int]failure{}
	)
	var arrive func(context.Context) bool
	var loud atomic.Int64 // idle runs that arrived before the machine was quiet
	if ps.gap > 0 {
		arrive = func(ctx context.Context) bool {
			quiet, alive := b.quiet.wait(ctx, ps.gap)
			if alive && !quiet {
				loud.Add(1)
			}
			return alive
		}
	}
	p, err := measure(ctx, ps.n, ps.conc, arrive, func(ctx context.Context, i int) (bool, error) {
		o, err := run(ctx, i)
		if err != nil && ctx.Err() != nil {
			return false, err
		}
		ok := err == nil && ps.pass(o)
		if !ok {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// The service failed this run: count it as failed and go on,
				// so one bad run shows in the figures instead of hiding them.
				why[i] = failure{why: "service error: " + err.Error(), service: true}
			} else {
				why[i] = failure{why: cmp.Or(o.errLine, fmt.Sprintf("unexpected stdout %.40q", o.stdout))}
			}
		}
		return ok, nil
	})
	if n := loud.Load(); n > 0 {
		b.note("%s: %d of %d runs arrived before the machine was quiet (its CPUs more than %.0f%% busy over each %v of %v)",
			ps.what, n, ps.n, quietShare*100, quietWindow, quietMax)
	}
	return p, why, err
}

// phase measures one phase of one contender and notes its failures.
func (b *benchmark) phase(ctx context.Context, label string, run snippetFunc, ps phaseSpec) (Stats, error) {
	b.log.Info("bench: phase", "row", label, "phase", ps.what, "concurrency", ps.conc, "runs", ps.n)
	p, why, err := b.execute(ctx, ps, func(ctx context.Context, i int) (outcome, error) { return run(ctx, ps.code(i)) })
	if err != nil {
		b.note("%s: %s at c%d stopped: %v", label, ps.what, ps.conc, err)
		return Stats{}, err
	}
	return b.judge(label, ps, p, why), nil
}

// judge notes the failures of a phase and returns its figures.
func (b *benchmark) judge(label string, ps phaseSpec, p phase, why map[int]failure) Stats {
	if len(p.Failed) > 0 {
		var ids []string
		for _, i := range p.Failed[:min(len(p.Failed), 5)] {
			ids = append(ids, fmt.Sprintf("%s (%s)", ps.id(i), why[i].why))
		}
		b.note("%s: %s at c%d: %d of %d failed: %s", label, ps.what, ps.conc, len(p.Failed), len(p.Latencies), strings.Join(ids, ", "))
	}
	s := summary(ps.conc, ps.gap > 0, p)
	for _, f := range why {
		if f.service {
			s.Errors++
		}
	}
	return s
}
