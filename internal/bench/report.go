package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/runblock/runblock/executor/sandbox"
)

// Row names, used as keys by the targets.
const (
	rowBare    = "bare"
	rowCold    = "cold"    // a sandbox started from scratch per run
	rowPool    = "pool"    // sandboxes started from scratch, waiting
	rowFork    = "fork"    // a fork of the fork server per run
	rowPrefork = "prefork" // forks of the fork server, waiting
	// rowPreforkOff is prefork without the preload, where the configured
	// preload imports something.
	rowPreforkOff = "prefork-off"
	// rowForkOff is fork without the preload, in the idle memory only:
	// the fork server without the preloaded one.
	rowForkOff = "fork-off"
)

// Report is everything one bench run measured. Run writes it as a table or,
// with Options.JSON, as one JSON object.
type Report struct {
	NumCPU int `json:"num_cpu"`
	// Machine names the CPU and the kernel ("AMD EPYC, Linux 6.18.44"):
	// the ratios to bare python move with them (forks and page faults
	// against an interpreter's start), so runs on two machines compare
	// only when both are named. "" where they cannot be read.
	Machine       string `json:"machine,omitempty"`
	Concurrency   []int  `json:"concurrency"`
	Python        string `json:"python"`
	PythonVersion string `json:"python_version"`
	// Isolation is the tier the executor rows ran with ("full", ...).
	Isolation string `json:"isolation"`
	HelloRuns int    `json:"hello_runs"`
	IdleRuns  int    `json:"idle_runs"`
	// IdleGapMS is the least time between an idle run's end and the next
	// one's arrival, which also waits for a quiet machine.
	IdleGapMS float64 `json:"idle_gap_ms"`
	Warmup    int     `json:"warmup_runs"`
	// HumanEvalPrograms is how many programs each HumanEval phase ran, 0 when
	// the data set was not found.
	HumanEvalPrograms int       `json:"humaneval_programs"`
	Rows              []Row     `json:"rows"`
	Original          *Original `json:"original,omitempty"`
	// IdleMemory is what the pool, the fork server alone and the
	// pre-forked pool hold while warm and idle.
	IdleMemory []IdleMemory `json:"idle_memory,omitempty"`
	// Flood is on the pool, FloodPrefork on the pre-forked pool.
	Flood        *Flood `json:"flood,omitempty"`
	FloodPrefork *Flood `json:"flood_prefork,omitempty"`
	// Plot is the snippet that imports numpy and matplotlib and shows a
	// plot: cold without a preload, pre-started with the preload, and with
	// the default preload forked on demand and pre-forked, runs PlotGapMS
	// apart.
	Plot      []PlotRow `json:"plot,omitempty"`
	PlotGapMS float64   `json:"plot_gap_ms,omitempty"`
	// Launches are the launch section: each kind of launch in each
	// pattern, LaunchRuns launches (LaunchSequentialRuns one after
	// another), LaunchGapMS apart when staggered.
	Launches             []LaunchStats `json:"launches,omitempty"`
	LaunchRuns           int           `json:"launch_runs,omitempty"`
	LaunchSequentialRuns int           `json:"launch_sequential_runs,omitempty"`
	LaunchGapMS          float64       `json:"launch_gap_ms,omitempty"`
	// IdleSessions is what live sessions cost while idle (idle.go).
	IdleSessions *IdleSessions `json:"idle_sessions,omitempty"`
	// Start is the start section: `runblock executor` to ready and to
	// its first answer.
	Start   *StartStats `json:"start,omitempty"`
	Targets []Target    `json:"targets"`
	// Skipped are the parts that did not run, each with why.
	Skipped  []Skip   `json:"skipped,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	ElapsedS float64  `json:"elapsed_s"`
	// LoadStart and LoadEnd are /proc/loadavg's 1-minute load at the start
	// and the end: figures drift when other work shares the machine.
	LoadStart string `json:"load_start,omitempty"`
	LoadEnd   string `json:"load_end,omitempty"`
}

// Row is one way of running snippets: bare python, the executor cold, ...
type Row struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// StartupMS is how long sandbox.New took (layer detection and canary
	// runs; a pool fills in the background after it); 0 for bare python.
	StartupMS float64 `json:"startup_ms,omitempty"`
	// Idle is print('hello') arriving one at a time, at least
	// Report.IdleGapMS apart, on a quiet machine: the latency a chat user
	// sees from an idle service.
	Idle *Stats `json:"hello_idle,omitempty"`
	// Hello is print('hello') in a closed loop at each concurrency.
	Hello     []Stats `json:"hello"`
	HumanEval []Stats `json:"humaneval,omitempty"`
	// Error says why the row is incomplete.
	Error string `json:"error,omitempty"`
	// ForkServer is the executor's fork server; nil for bare python.
	ForkServer *sandbox.ForkServerReport `json:"fork_server,omitempty"`
}

// Stats are the figures of one phase: one program set at one concurrency.
type Stats struct {
	Concurrency int `json:"concurrency"`
	Runs        int `json:"runs"`
	Passed      int `json:"passed"`
	// Errors counts runs the service itself failed (Run returned an error);
	// they are not passed.
	Errors   int     `json:"errors,omitempty"`
	P50MS    float64 `json:"p50_ms"`
	P90MS    float64 `json:"p90_ms"`
	P99MS    float64 `json:"p99_ms"`
	RunsPerS float64 `json:"runs_per_s"`
	WallS    float64 `json:"wall_s"`
	// CPUMSPerRun is the CPU time the whole machine spent per run over the
	// phase (every process's, the kernel workers' that tear namespaces
	// down, the bench's own), in ms; BusyPercent how busy its CPUs were.
	// Set on HumanEval phases where /proc/stat can be read. With every CPU
	// busy, runs/s is the CPUs over the CPU a run costs, so two rows'
	// ratio of CPU per run bounds the ratio of their speeds.
	CPUMSPerRun float64 `json:"cpu_ms_per_run,omitempty"`
	BusyPercent float64 `json:"busy_percent,omitempty"`
	// P50VsOriginal and P50VsCold are latency ratios (lower is better), set on
	// hello phases when the reference was measured.
	P50VsOriginal float64 `json:"p50_vs_original,omitempty"`
	P50VsBare     float64 `json:"p50_vs_bare,omitempty"`
	P50VsCold     float64 `json:"p50_vs_cold,omitempty"`
	// SpeedVsOriginal, SpeedVsBare and SpeedVsCold are throughput ratios
	// (higher is better), set on HumanEval phases when the reference was
	// measured.
	SpeedVsOriginal float64 `json:"speed_vs_original,omitempty"`
	SpeedVsBare     float64 `json:"speed_vs_bare,omitempty"`
	SpeedVsCold     float64 `json:"speed_vs_cold,omitempty"`
}

// Original holds the figures of ../shared/reference/seed_bench.py, run in the
// same bench run: once at the start and once at the end, keeping the better
// figure of the two for each, so the comparison is against its best.
type Original struct {
	HelloP50MS float64 `json:"hello_p50_ms"`
	HelloP90MS float64 `json:"hello_p90_ms"`
	HumanEval  []Stats `json:"humaneval"`
	// Raw holds each run's JSON object as seed_bench.py printed it.
	Raw []map[string]float64 `json:"raw"`
}

// best merges two runs of the original, keeping the better of each figure.
func best(a, b *Original) *Original {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	o := &Original{
		HelloP50MS: min(a.HelloP50MS, b.HelloP50MS),
		HelloP90MS: min(a.HelloP90MS, b.HelloP90MS),
		Raw:        append(slices.Clone(a.Raw), b.Raw...),
	}
	for _, s := range a.HumanEval {
		if t := at(b.HumanEval, s.Concurrency); t != nil && t.WallS < s.WallS {
			s = *t
		}
		o.HumanEval = append(o.HumanEval, s)
	}
	return o
}

// Flood is the service's memory while one snippet floods stdout.
type Flood struct {
	Row            string  `json:"row"`
	Code           string  `json:"code"`
	TimeoutMS      float64 `json:"timeout_ms"`
	DurationMS     float64 `json:"duration_ms"`
	Timeout        bool    `json:"timeout"`
	OutputLimit    bool    `json:"output_limit"`
	StdoutBytes    int64   `json:"stdout_bytes"`
	KeptBytes      int     `json:"kept_bytes"`
	BaselineRSSMiB float64 `json:"baseline_rss_mib"`
	PeakRSSMiB     float64 `json:"peak_rss_mib"`
	OvershootMS    float64 `json:"overshoot_ms"`
	// ForkServer is the flooded executor's fork server.
	ForkServer *sandbox.ForkServerReport `json:"fork_server,omitempty"`
}

// Target statuses.
const (
	statusMet    = "met"
	statusNotMet = "not met"
	statusNA     = "n/a"
)

// Target is one goal set for the executor's speed or memory, judged on this
// run's figures: a measurement, not a test (a loaded machine misses some).
type Target struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// Skip is a part of the bench that did not run, and why.
type Skip struct {
	Part string `json:"part"`
	Why  string `json:"why"`
}

// row returns the row named name, or nil.
func (r *Report) row(name string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Name == name {
			return &r.Rows[i]
		}
	}
	return nil
}

// at returns the phase at concurrency conc, or nil.
func at(stats []Stats, conc int) *Stats {
	for i := range stats {
		if stats[i].Concurrency == conc {
			return &stats[i]
		}
	}
	return nil
}

// ratio returns a/b, or 0 when either is not a positive figure.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

// compare fills in the ratios against the original, bare python and the
// cold executor.
func (r *Report) compare() {
	cold, bare := r.row(rowCold), r.row(rowBare)
	for i := range r.Rows {
		row := &r.Rows[i]
		if s := row.Idle; s != nil {
			if r.Original != nil {
				s.P50VsOriginal = ratio(s.P50MS, r.Original.HelloP50MS)
			}
			if cold != nil && cold.Idle != nil {
				s.P50VsCold = ratio(s.P50MS, cold.Idle.P50MS)
			}
			if bare != nil && bare.Idle != nil {
				s.P50VsBare = ratio(s.P50MS, bare.Idle.P50MS)
			}
		}
		for j := range row.Hello {
			s := &row.Hello[j]
			if r.Original != nil && s.Concurrency == 1 {
				s.P50VsOriginal = ratio(s.P50MS, r.Original.HelloP50MS)
			}
			if cold != nil {
				if c := at(cold.Hello, s.Concurrency); c != nil {
					s.P50VsCold = ratio(s.P50MS, c.P50MS)
				}
			}
			if bare != nil {
				if c := at(bare.Hello, s.Concurrency); c != nil {
					s.P50VsBare = ratio(s.P50MS, c.P50MS)
				}
			}
		}
		for j := range row.HumanEval {
			s := &row.HumanEval[j]
			if r.Original != nil {
				if o := at(r.Original.HumanEval, s.Concurrency); o != nil {
					s.SpeedVsOriginal = ratio(o.WallS, s.WallS)
				}
			}
			if bare != nil {
				if b := at(bare.HumanEval, s.Concurrency); b != nil {
					s.SpeedVsBare = ratio(b.WallS, s.WallS)
				}
			}
			if cold != nil {
				if c := at(cold.HumanEval, s.Concurrency); c != nil {
					s.SpeedVsCold = ratio(c.WallS, s.WallS)
				}
			}
		}
	}
}

// Targets, each judged on idle arrivals where it is a latency (what a chat
// user meets; the closed loop at c1 is shown beside).
const (
	targetPoolVsCold      = 0.5  // pooled hello p50, against cold
	targetPoolP50MS       = 12.0 // pooled hello p50
	targetSpeedVsOrig     = 1.5  // pooled HumanEval at NumCPU, against the original
	targetFloodPeakRSSMB  = 64.0 // the service's peak RSS under a stdout flood
	targetIdleVsBare      = 0.25 // pre-forked hello p50, against bare python (issue 36)
	targetSpeedVsBare     = 1.5  // HumanEval at NumCPU, pre-forked, against bare python (issue 36)
	targetForkSpeedVsBare = 1.2  // HumanEval at NumCPU, forked on demand (RUNBLOCK_POOL=0), against bare python
	targetPlotP50MS       = 70.0 // pre-forked plot p50, default preload
	targetValueCostMS     = 1.0  // a cell's shown value over a script cell, p50 (issue 34)
	targetPreloadCost     = 1.05 // plain runs with the default preload against without it: the noise of one run
	targetFloodRSSVsPool  = 1.1  // "unchanged", within the noise of a peak RSS
	// 500 idle live sessions in one executor (issue 36): the CPU of the
	// executor's process tree, in % of a core; the PSS of their processes;
	// a cell's p99 in one of them.
	targetIdleSessions          = 500
	targetIdleSessionsCPU       = 2.0
	targetIdleSessionsPSSMiB    = 1536.0
	targetIdleSessionsCellP99MS = 10.0
	targetReadyMS               = 1500 // `runblock executor` to /readyz 200, every start (issue 36)
	targetTailVsP50             = 2.0  // a launch row's p99 over its p50, sequential and staggered (issue 36)
)

// check is one row's part of a target.
type check struct {
	measured, ok bool
	detail       string
}

// judgeAll returns the target name from its rows' checks: n/a when any row
// was not measured, else met when every row meets it.
func judgeAll(name string, checks ...check) Target {
	t := Target{Name: name, Status: statusMet}
	var details []string
	for _, c := range checks {
		switch {
		case !c.measured:
			t.Status = statusNA
		case !c.ok && t.Status == statusMet:
			t.Status = statusNotMet
		}
		details = append(details, c.detail)
	}
	t.Detail = strings.Join(details, "; ")
	return t
}

// fellBack says when a row meant for the fork server ran without it.
func fellBack(fs *sandbox.ForkServerReport) string {
	if fs != nil && !fs.Active {
		return " (no fork server: the fallback)"
	}
	return ""
}

// closedLoop is a row's closed-loop hello p50 at c1, for beside an idle
// figure, or "".
func closedLoop(row *Row) string {
	if p := at(row.Hello, 1); p != nil {
		return fmt.Sprintf("; closed loop c1: %.2f ms", p.P50MS)
	}
	return ""
}

// evaluate sets r.Targets from the figures; a target whose figures are
// missing is "n/a", never met.
func (r *Report) evaluate() {
	n := r.NumCPU
	pool, cold, bare := r.row(rowPool), r.row(rowCold), r.row(rowBare)
	prefork, preforkOff := r.row(rowPrefork), r.row(rowPreforkOff)

	c := check{detail: "pool or cold row not measured"}
	if pool != nil && cold != nil && pool.Idle != nil && cold.Idle != nil && cold.Idle.P50MS > 0 {
		x := pool.Idle.P50MS / cold.Idle.P50MS
		c = check{measured: true, ok: x <= targetPoolVsCold, detail: fmt.Sprintf("idle: %.2f ms / %.2f ms = %.2fx", pool.Idle.P50MS, cold.Idle.P50MS, x)}
		if p, q := at(pool.Hello, 1), at(cold.Hello, 1); p != nil && q != nil && q.P50MS > 0 {
			c.detail += fmt.Sprintf("; closed loop c1: %.2f ms / %.2f ms = %.2fx", p.P50MS, q.P50MS, p.P50MS/q.P50MS)
		}
	}
	r.Targets = []Target{judgeAll(fmt.Sprintf("pooled hello p50 <= %.1fx cold (idle)", targetPoolVsCold), c)}

	c = check{detail: "pool row not measured"}
	if pool != nil && pool.Idle != nil {
		c = check{measured: true, ok: pool.Idle.P50MS <= targetPoolP50MS, detail: fmt.Sprintf("idle: %.2f ms%s", pool.Idle.P50MS, closedLoop(pool))}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("pooled hello p50 <= %g ms (idle)", targetPoolP50MS), c))

	var he, orig *Stats
	if pool != nil {
		he = at(pool.HumanEval, n)
	}
	if r.Original != nil {
		orig = at(r.Original.HumanEval, n)
	}
	switch {
	case he == nil:
		c = check{detail: "HumanEval not measured with the pool"}
	case orig == nil:
		c = check{detail: "original not measured"}
	default:
		x := ratio(orig.WallS, he.WallS)
		c = check{measured: true, ok: x >= targetSpeedVsOrig && he.Passed == he.Runs && he.Runs > 0,
			detail: fmt.Sprintf("%.2f s vs original %.2f s = %.2fx, %s passed", he.WallS, orig.WallS, x, passed(he))}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("pooled HumanEval at c%d >= %.1fx original, all passing", n, targetSpeedVsOrig), c))

	c = check{detail: "flood not measured"}
	if f := r.Flood; f != nil && f.PeakRSSMiB > 0 {
		c = check{measured: true, ok: f.PeakRSSMiB <= targetFloodPeakRSSMB, detail: fmt.Sprintf("%.1f MiB", f.PeakRSSMiB)}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("service peak RSS under a stdout flood <= %g MiB", targetFloodPeakRSSMB), c))

	c = check{detail: "prefork or bare row not measured"}
	if prefork != nil && bare != nil && prefork.Idle != nil && bare.Idle != nil && bare.Idle.P50MS > 0 {
		x := prefork.Idle.P50MS / bare.Idle.P50MS
		c = check{measured: true, ok: x <= targetIdleVsBare,
			detail: fmt.Sprintf("idle: %.2f ms / %.2f ms = %.2fx%s", prefork.Idle.P50MS, bare.Idle.P50MS, x, fellBack(prefork.ForkServer))}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("pre-forked hello p50 <= %gx bare python's (idle)", targetIdleVsBare), c))

	var bareHE *Stats
	if bare != nil {
		bareHE = at(bare.HumanEval, n)
	}
	// Pre-forked is the default (RUNBLOCK_POOL); forked on demand is
	// RUNBLOCK_POOL=0, judged apart.
	speed := func(name string, target float64) check {
		row := r.row(name)
		var s *Stats
		if row != nil {
			s = at(row.HumanEval, n)
		}
		switch {
		case s == nil:
			return check{detail: name + " row's HumanEval not measured"}
		case bareHE == nil:
			return check{detail: fmt.Sprintf("%s %.2f s, bare python not measured", name, s.WallS)}
		}
		x := ratio(bareHE.WallS, s.WallS)
		return check{measured: true, ok: x >= target && s.Passed == s.Runs && s.Runs > 0,
			detail: fmt.Sprintf("%s %.2f s vs bare %.2f s = %.2fx, %s passed%s%s", name, s.WallS, bareHE.WallS, x, passed(s), cpuDetail(s, bareHE), fellBack(row.ForkServer))}
	}
	r.Targets = append(r.Targets,
		judgeAll(fmt.Sprintf("pre-forked HumanEval at c%d >= %.1fx bare python, all passing", n, targetSpeedVsBare), speed(rowPrefork, targetSpeedVsBare)),
		judgeAll(fmt.Sprintf("forked-on-demand HumanEval at c%d >= %.1fx bare python, all passing", n, targetForkSpeedVsBare), speed(rowFork, targetForkSpeedVsBare)))

	c = check{detail: "plot not measured pre-forked"}
	if p := r.plotRow(plotPrefork); p != nil && p.OK > 0 {
		c = check{measured: true, ok: p.P50MS <= targetPlotP50MS && p.OK == p.Runs,
			detail: fmt.Sprintf("prefork %.0f ms, %d/%d ok%s", p.P50MS, p.OK, p.Runs, fellBack(p.ForkServer))}
		for _, name := range []string{plotFork, plotPoolPreload, plotCold} {
			if q := r.plotRow(name); q != nil && q.OK > 0 {
				c.detail += fmt.Sprintf("; %s %.0f ms", name, q.P50MS)
			}
		}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("plot p50 <= %g ms, pre-forked with the default preload", targetPlotP50MS), c))

	checks := []check{{detail: "prefork without the preload not measured (nothing to preload)"}}
	if prefork != nil && preforkOff != nil {
		checks = nil
		if prefork.Idle != nil && preforkOff.Idle != nil && preforkOff.Idle.P50MS > 0 {
			x := prefork.Idle.P50MS / preforkOff.Idle.P50MS
			checks = append(checks, check{measured: true, ok: x <= targetPreloadCost,
				detail: fmt.Sprintf("idle hello %.2f ms vs %.2f ms off = %.2fx", prefork.Idle.P50MS, preforkOff.Idle.P50MS, x)})
		}
		if s, o := at(prefork.HumanEval, n), at(preforkOff.HumanEval, n); s != nil && o != nil {
			x := ratio(o.WallS, s.WallS)
			checks = append(checks, check{measured: true, ok: x >= 1/targetPreloadCost,
				detail: fmt.Sprintf("HumanEval c%d %.2f s vs %.2f s off = %.2fx the speed", n, s.WallS, o.WallS, x)})
		}
		if len(checks) == 0 {
			checks = []check{{detail: "prefork rows' figures missing"}}
		}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("plain runs with the default preload within %.0f%% of without (pre-forked)", (targetPreloadCost-1)*100), checks...))

	pm, prm, fm := r.idleMemory(rowPool), r.idleMemory(rowPrefork), r.idleMemory(rowFork)
	c = check{detail: "idle memory of the pool or the pre-forked pool not measured"}
	if pm != nil && prm != nil && pm.Error == "" && prm.Error == "" && pm.PSSMiB > 0 && prm.PSSMiB > 0 {
		var fs *sandbox.ForkServerReport
		if prefork != nil {
			fs = prefork.ForkServer
		}
		c = check{measured: true, ok: prm.PSSMiB <= pm.PSSMiB,
			detail: fmt.Sprintf("prefork %.1f MiB in %d processes vs pool %.1f MiB in %d%s", prm.PSSMiB, prm.Processes, pm.PSSMiB, pm.Processes, fellBack(fs))}
		if fm != nil && fm.Error == "" {
			c.detail += fmt.Sprintf("; the fork server alone %.1f MiB in %d", fm.PSSMiB, fm.Processes)
		}
	}
	r.Targets = append(r.Targets, judgeAll("idle PSS of the warm capacity, prefork <= pool", c))

	c = check{detail: "flood not measured on the pool and the pre-forked pool"}
	if f, p := r.Flood, r.FloodPrefork; f != nil && p != nil && f.PeakRSSMiB > 0 && p.PeakRSSMiB > 0 {
		c = check{measured: true, ok: p.PeakRSSMiB <= targetFloodRSSVsPool*f.PeakRSSMiB,
			detail: fmt.Sprintf("prefork %.1f MiB vs pool %.1f MiB = %.2fx%s", p.PeakRSSMiB, f.PeakRSSMiB, p.PeakRSSMiB/f.PeakRSSMiB, fellBack(p.ForkServer))}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("service peak RSS under a stdout flood, prefork <= %.1fx pool", targetFloodRSSVsPool), c))

	c = check{detail: "the live session's script and value cells not measured sequentially"}
	if v, s := r.launch(launchCellValue, patternSequential), r.launch(launchCellScript, patternSequential); v != nil && s != nil && v.OK > 0 && s.OK > 0 {
		d := v.P50MS - s.P50MS
		c = check{measured: true, ok: d <= targetValueCostMS && v.OK == v.Runs,
			detail: fmt.Sprintf("value %.2f ms - script %.2f ms = %.2f ms, %d/%d ok", v.P50MS, s.P50MS, d, v.OK, v.Runs)}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("a shown value costs <= %g ms p50 over a script cell (live session)", targetValueCostMS), c))

	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("%d idle live sessions: <= %g%% of a core, <= %g GiB PSS, a cell p99 <= %g ms",
		targetIdleSessions, targetIdleSessionsCPU, targetIdleSessionsPSSMiB/1024, targetIdleSessionsCellP99MS), r.IdleSessions.check()))

	var tails []check
	var floor []string
	for _, l := range r.Launches {
		if l.Pattern == patternBurst || l.Error != "" || l.OK == 0 || l.P50MS <= 0 {
			continue
		}
		x := l.P99MS / l.P50MS
		if l.Name == launchFloor {
			floor = append(floor, fmt.Sprintf("%s %.2f/%.2f ms = %.1fx", l.Pattern, l.P99MS, l.P50MS, x))
			continue
		}
		tails = append(tails, check{measured: true, ok: x <= targetTailVsP50,
			detail: fmt.Sprintf("%s %s %.1f/%.1f ms = %.1fx", l.Name, l.Pattern, l.P99MS, l.P50MS, x)})
	}
	if len(tails) == 0 {
		tails = []check{{detail: "no launch row measured sequentially or staggered"}}
	}
	if len(floor) > 0 {
		tails = append(tails, check{measured: true, ok: true, detail: "the machine's floor (not judged): " + strings.Join(floor, ", ")})
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("launch p99 <= %gx p50, sequential and staggered", targetTailVsP50), tails...))

	c = check{detail: "start not measured"}
	if s := r.Start; s != nil && s.OK > 0 {
		c = check{measured: true, ok: s.ReadyMaxMS <= targetReadyMS && s.OK == s.Runs,
			detail: fmt.Sprintf("ready p50 %.0f ms, max %.0f ms; first run p50 %.0f ms, max %.0f ms; %d/%d started", s.ReadyP50MS, s.ReadyMaxMS, s.FirstRunP50MS, s.FirstRunMaxMS, s.OK, s.Runs)}
	}
	r.Targets = append(r.Targets, judgeAll(fmt.Sprintf("runblock executor ready <= %g s after its start, every start", targetReadyMS/1000.0), c))
}

// check judges the idle-sessions row against its targets; the PSS target
// scales with the sessions measured where fewer than the target's were.
func (m *IdleSessions) check() check {
	switch {
	case m == nil:
		return check{detail: "idle sessions not measured"}
	case m.Sessions == 0 || m.OK == 0:
		return check{detail: "no idle session measured: " + m.Error}
	}
	pss := targetIdleSessionsPSSMiB * float64(m.Sessions) / targetIdleSessions
	c := check{measured: true,
		ok: m.Sessions >= targetIdleSessions && m.CPUPercent <= targetIdleSessionsCPU && m.PSSMiB+m.ServicePSSMiB <= pss &&
			m.CellP99MS <= targetIdleSessionsCellP99MS && m.OK == m.Cells,
		detail: fmt.Sprintf("%d sessions: %.2f%% of a core over %.0f s, %.0f MiB PSS (%.0f MiB sandboxes + %.0f MiB service), cell p50 %.2f ms p99 %.2f ms, %d/%d ok",
			m.Sessions, m.CPUPercent, m.WindowS, m.PSSMiB+m.ServicePSSMiB, m.PSSMiB, m.ServicePSSMiB, m.CellP50MS, m.CellP99MS, m.OK, m.Cells)}
	if m.Sessions < targetIdleSessions {
		c.detail += fmt.Sprintf(" (fewer than %d: not met)", targetIdleSessions)
	}
	return c
}

// launch returns the launch stats of row name in pattern, or nil.
func (r *Report) launch(name, pattern string) *LaunchStats {
	for i := range r.Launches {
		if r.Launches[i].Name == name && r.Launches[i].Pattern == pattern {
			return &r.Launches[i]
		}
	}
	return nil
}

// plotRow returns the plot row named name, or nil.
func (r *Report) plotRow(name string) *PlotRow {
	for i := range r.Plot {
		if r.Plot[i].Name == name {
			return &r.Plot[i]
		}
	}
	return nil
}

// preloaded names the modules the pre-forked row's fork server imported,
// or "".
func (r *Report) preloaded() string {
	if row := r.row(rowPrefork); row != nil && row.ForkServer != nil {
		return strings.Join(row.ForkServer.Preloaded, ", ")
	}
	return ""
}

// idleMemory returns the idle memory of the row named name, or nil.
func (r *Report) idleMemory(name string) *IdleMemory {
	for i := range r.IdleMemory {
		if r.IdleMemory[i].Row == name {
			return &r.IdleMemory[i]
		}
	}
	return nil
}

// WriteJSON writes r as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r as aligned tables.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	machine := ""
	if r.Machine != "" {
		machine = " (" + r.Machine + ")"
	}
	fmt.Fprintf(&b, "runblock bench: %d CPUs%s, python %s (%s), executor isolation %q, took %.1f s, load %s at start, %s at end\n",
		r.NumCPU, machine, r.PythonVersion, r.Python, r.Isolation, r.ElapsedS, cmp.Or(r.LoadStart, "?"), cmp.Or(r.LoadEnd, "?"))
	fmt.Fprintf(&b, "print('hello') after %d warm-up runs per row: cN = %d runs in a closed loop at concurrency N;\n", r.Warmup, r.HelloRuns)
	fmt.Fprintf(&b, "idle = %d runs per row arriving one at a time, rows in turn, each at least %.0f ms after the last ends, once the CPUs have been quiet for %.0f ms\n",
		r.IdleRuns, r.IdleGapMS, ms(quietWindow))
	b.WriteString("cold, pool: every sandbox started from scratch (RUNBLOCK_FORKSERVER=off); fork, prefork: each run a fork of the fork server, on demand or pre-forked\n")
	if pre := r.preloaded(); pre != "" {
		fmt.Fprintf(&b, "a second fork server preloads %s (RUNBLOCK_PRELOAD) for the snippets that import them; \"preload off\" is the same row without it\n", pre)
	}
	b.WriteString("p50/orig, p50/bare, p50/cold: latency ratios (lower is better); speed: throughput ratios (higher is better)\n")
	for _, sk := range r.Skipped {
		fmt.Fprintf(&b, "skipped: %s: %s\n", sk.Part, sk.Why)
	}
	b.WriteString("\n")

	hello := table{head: []string{"print('hello')", "load", "p50 ms", "p90 ms", "p99 ms", "runs/s", "ok", "p50/orig", "p50/bare", "p50/cold"}}
	if o := r.Original; o != nil {
		hello.add(o.label(), "c1", num(o.HelloP50MS, 2), num(o.HelloP90MS, 2), "-", "-", "-", "1.00x", "-", "-")
	}
	for _, row := range r.Rows {
		if s := row.Idle; s != nil {
			hello.add(row.Label, "idle", num(s.P50MS, 2), num(s.P90MS, 2), num(s.P99MS, 2), "-",
				passed(s), times(s.P50VsOriginal), times(s.P50VsBare), times(s.P50VsCold))
		}
	}
	for _, c := range r.Concurrency {
		for _, row := range r.Rows {
			s := at(row.Hello, c)
			if s == nil {
				continue
			}
			hello.add(row.Label, "c"+strconv.Itoa(c), num(s.P50MS, 2), num(s.P90MS, 2), num(s.P99MS, 2), num(s.RunsPerS, 1),
				passed(s), times(s.P50VsOriginal), times(s.P50VsBare), times(s.P50VsCold))
		}
	}
	hello.write(&b)

	b.WriteString("\n")
	if r.HumanEvalPrograms == 0 {
		b.WriteString("HumanEval: not measured (data set not found)\n")
	} else {
		he := table{head: []string{fmt.Sprintf("HumanEval (%d programs; rows in turn, best of %d)", r.HumanEvalPrograms, humanEvalRounds), "load", "wall s", "runs/s", "CPU ms/run", "busy", "passed", "speed vs orig", "speed vs bare", "speed vs cold"}}
		for _, c := range r.Concurrency {
			if r.Original != nil {
				if s := at(r.Original.HumanEval, c); s != nil {
					he.add(r.Original.label(), "c"+strconv.Itoa(c), num(s.WallS, 2), num(s.RunsPerS, 1), "-", "-", passed(s), "1.00x", "-", "-")
				}
			}
			for _, row := range r.Rows {
				s := at(row.HumanEval, c)
				if s == nil {
					continue
				}
				cpu, busy := cpuCells(s)
				he.add(row.Label, "c"+strconv.Itoa(c), num(s.WallS, 2), num(s.RunsPerS, 1), cpu, busy, passed(s),
					times(s.SpeedVsOriginal), times(s.SpeedVsBare), times(s.SpeedVsCold))
			}
		}
		he.write(&b)
	}

	if len(r.Plot) > 0 {
		b.WriteString("\n")
		pt := table{head: []string{fmt.Sprintf("import numpy, matplotlib; plt.show() (one at a time, %.0f ms apart)", r.PlotGapMS), "p50 ms", "p90 ms", "ok"}}
		for _, row := range r.Plot {
			if row.Error != "" && row.OK == 0 {
				pt.add(row.Label, "-", "-", "not measured")
				continue
			}
			pt.add(row.Label, num(row.P50MS, 0), num(row.P90MS, 0), fmt.Sprintf("%d/%d", row.OK, row.Runs))
		}
		pt.write(&b)
	}

	if len(r.Launches) > 0 {
		b.WriteString("\n")
		fmt.Fprintf(&b, "launches, through the scheduler (%d at once, the rest queued): %d one after another, %d one every %.0f ms, %d at once;\n",
			r.Concurrency[len(r.Concurrency)-1], r.LaunchSequentialRuns, r.LaunchRuns, r.LaunchGapMS, r.LaunchRuns)
		b.WriteString("from the request to the answer, percentiles of the launches that worked\n")
		lt := table{head: []string{"launch", "pattern", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "success"}}
		for _, l := range r.Launches {
			if l.Error != "" {
				lt.add(l.Label, l.Pattern, "-", "-", "-", "-", "stopped: "+l.Error)
				continue
			}
			// More decimals where the launch answers within a millisecond.
			d := 1
			switch {
			case l.P50MS < 0.1:
				d = 3
			case l.P50MS < 1:
				d = 2
			}
			lt.add(l.Label, l.Pattern, num(l.P50MS, d), num(l.P95MS, d), num(l.P99MS, d), num(l.P999MS, d), fmt.Sprintf("%.0f%% (%d/%d)", 100*l.SuccessRate(), l.OK, l.Runs))
		}
		lt.write(&b)
	}

	if len(r.IdleMemory) > 0 {
		b.WriteString("\n")
		mt := table{head: []string{"warm, idle executor (its processes)", "processes", "PSS MiB", "RSS MiB"}}
		for _, m := range r.IdleMemory {
			if m.Error != "" && m.Processes == 0 {
				mt.add(m.Label, "-", "-", "not measured")
				continue
			}
			mt.add(m.Label, strconv.Itoa(m.Processes), num(m.PSSMiB, 1), num(m.RSSMiB, 1))
		}
		mt.write(&b)
	}

	if m := r.IdleSessions; m != nil {
		fmt.Fprintf(&b, "\nidle live sessions, one executor with the default settings (%d opened in %.1f s):\n", m.Sessions, m.OpenS)
		if m.Error != "" {
			fmt.Fprintf(&b, "  stopped: %s\n", m.Error)
		}
		if m.Processes > 0 {
			fmt.Fprintf(&b, "  CPU of the executor's process tree over %.0f s: %d ticks, %.2f%% of a core\n", m.WindowS, m.CPUTicks, m.CPUPercent)
			fmt.Fprintf(&b, "  PSS: %.1f MiB in %d sandbox processes, %.1f MiB the service\n", m.PSSMiB, m.Processes, m.ServicePSSMiB)
		}
		if m.Cells > 0 {
			fmt.Fprintf(&b, "  %d cells in random sessions, one after another: p50 %.2f ms, p99 %.2f ms, %d ok\n", m.Cells, m.CellP50MS, m.CellP99MS, m.OK)
		}
	}

	if s := r.Start; s != nil {
		b.WriteString("\n")
		st := table{head: []string{fmt.Sprintf("runblock executor, from its start (%d starts)", s.Runs), "p50 ms", "max ms", "ok"}}
		if s.OK == 0 {
			st.add("to /readyz 200", "-", "-", "not measured: "+s.Error)
		} else {
			ok := fmt.Sprintf("%d/%d", s.OK, s.Runs)
			st.add("to /readyz 200", num(s.ReadyP50MS, 0), num(s.ReadyMaxMS, 0), ok)
			st.add("to its first run's answer", num(s.FirstRunP50MS, 0), num(s.FirstRunMaxMS, 0), ok)
		}
		st.write(&b)
	}

	startup := table{head: []string{"sandbox.New (probe and canaries)", "ms"}}
	for _, row := range r.Rows {
		if row.StartupMS > 0 {
			startup.add(row.Label, num(row.StartupMS, 1))
		}
	}
	if len(startup.rows) > 0 {
		b.WriteString("\n")
		startup.write(&b)
	}

	for _, f := range []*Flood{r.Flood, r.FloodPrefork} {
		if f == nil {
			continue
		}
		fmt.Fprintf(&b, "\nstdout flood (%s, %q, timeout %.0f ms):\n", f.Row, f.Code, f.TimeoutMS)
		fmt.Fprintf(&b, "  service peak RSS %.1f MiB (%.1f MiB before the flood)\n", f.PeakRSSMiB, f.BaselineRSSMiB)
		fmt.Fprintf(&b, "  run ended after %.0f ms (%+.0f ms past the timeout), timeout=%t output_limit=%t, %s written, %s kept\n",
			f.DurationMS, f.OvershootMS, f.Timeout, f.OutputLimit, bytesText(f.StdoutBytes), bytesText(int64(f.KeptBytes)))
	}

	b.WriteString("\n")
	b.WriteString("targets: goals for the executor, judged on this run's figures (a measurement, not a test)\n")
	targets := table{head: []string{"target", "met", "figures"}, textLast: true}
	for _, t := range r.Targets {
		targets.add(t.Name, t.Status, t.Detail)
	}
	targets.write(&b)

	if len(r.Notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// label names the original's rows, with how many runs it is the
// best of.
func (o *Original) label() string {
	if len(o.Raw) > 1 {
		return fmt.Sprintf("original execute_code (seed_bench.py, best of %d)", len(o.Raw))
	}
	return "original execute_code (seed_bench.py)"
}

// passed renders "passed/runs", with the service's own errors if any.
func passed(s *Stats) string {
	switch s.Errors {
	case 0:
	case 1:
		return fmt.Sprintf("%d/%d (1 error)", s.Passed, s.Runs)
	default:
		return fmt.Sprintf("%d/%d (%d errors)", s.Passed, s.Runs, s.Errors)
	}
	return fmt.Sprintf("%d/%d", s.Passed, s.Runs)
}

func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

func times(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

// table renders rows of cells, two spaces apart, with the first column
// left-aligned and the others right-aligned, except a last column of free
// text (textLast) which is left-aligned too.
type table struct {
	head     []string
	textLast bool
	rows     [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(b *strings.Builder) {
	width := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range append([][]string{t.head}, t.rows...) {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			switch {
			case i == 0:
				line.WriteString(c + pad)
			case i == len(r)-1 && t.textLast:
				line.WriteString("  " + c)
			default:
				line.WriteString("  " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// cpuCells are a phase's CPU per run and busy share as the HumanEval table
// shows them, "-" where not measured.
func cpuCells(s *Stats) (cpu, busy string) {
	if s.CPUMSPerRun == 0 {
		return "-", "-"
	}
	return num(s.CPUMSPerRun, 1), fmt.Sprintf("%.0f%%", s.BusyPercent)
}

// cpuDetail compares the CPU a run of s cost with a run of bare's: their
// ratio bounds s's speed against bare's with every CPU busy, and how busy
// the CPUs were says how close s came to that bound.
func cpuDetail(s, bare *Stats) string {
	if s.CPUMSPerRun == 0 || bare.CPUMSPerRun == 0 {
		return ""
	}
	return fmt.Sprintf("; CPU a run %.1f vs %.1f ms = %.2fx, %.0f%% busy", s.CPUMSPerRun, bare.CPUMSPerRun, bare.CPUMSPerRun/s.CPUMSPerRun, s.BusyPercent)
}
