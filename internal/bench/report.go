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
)

// Report is everything one bench run measured. Run writes it as a table or,
// with Options.JSON, as one JSON object.
type Report struct {
	NumCPU        int    `json:"num_cpu"`
	Concurrency   []int  `json:"concurrency"`
	Python        string `json:"python"`
	PythonVersion string `json:"python_version"`
	// Isolation is the tier the executor rows ran with ("full", ...).
	Isolation string `json:"isolation"`
	HelloRuns int    `json:"hello_runs"`
	IdleRuns  int    `json:"idle_runs"`
	// IdleGapMS spaces the idle runs' arrivals.
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
	// plot, cold, pooled and pooled with preload, and forked from a fork
	// server with the preload, cold and pre-forked, runs PlotGapMS apart.
	Plot      []PlotRow `json:"plot,omitempty"`
	PlotGapMS float64   `json:"plot_gap_ms,omitempty"`
	Targets   []Target  `json:"targets"`
	Notes     []string  `json:"notes,omitempty"`
	ElapsedS  float64   `json:"elapsed_s"`
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
	// Idle is print('hello') arriving one at a time, Report.IdleGapMS apart:
	// the latency a chat user sees from an idle service.
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
	// P50VsOriginal and P50VsCold are latency ratios (lower is better), set on
	// hello phases when the reference was measured.
	P50VsOriginal float64 `json:"p50_vs_original,omitempty"`
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
	statusPass = "pass"
	statusFail = "fail"
	statusNA   = "n/a"
)

// Target is one goal of an issue (5: the executor; 15: the fork server)
// and whether this run met it.
type Target struct {
	Issue  int    `json:"issue"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
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

// Limits of issue 5.
const (
	targetPoolVsCold     = 0.5
	targetPoolP50MS      = 12.0
	targetSpeedVsOrig    = 1.5
	targetFloodPeakRSSMB = 64.0
)

// evaluate sets r.Targets from the figures; a target whose figures are
// missing is "n/a", never a pass. The latency targets are judged on idle
// arrivals (what a chat user meets); the closed loop at c1 is shown beside.
func (r *Report) evaluate() {
	pool, cold := r.row(rowPool), r.row(rowCold)
	var poolIdle, coldIdle *Stats
	if pool != nil {
		poolIdle = pool.Idle
	}
	if cold != nil {
		coldIdle = cold.Idle
	}
	loop := func() string {
		if pool == nil || cold == nil {
			return ""
		}
		p, c := at(pool.Hello, 1), at(cold.Hello, 1)
		if p == nil || c == nil || c.P50MS <= 0 {
			return ""
		}
		return fmt.Sprintf("; closed loop c1: %.2f ms / %.2f ms = %.2fx", p.P50MS, c.P50MS, p.P50MS/c.P50MS)
	}

	t := Target{Issue: 5, Name: fmt.Sprintf("pooled hello p50 <= %.1fx cold (idle)", targetPoolVsCold), Status: statusNA, Detail: "pool or cold row not measured"}
	if poolIdle != nil && coldIdle != nil && coldIdle.P50MS > 0 {
		x := poolIdle.P50MS / coldIdle.P50MS
		t.Status = status(x <= targetPoolVsCold)
		t.Detail = fmt.Sprintf("idle: %.2f ms / %.2f ms = %.2fx%s", poolIdle.P50MS, coldIdle.P50MS, x, loop())
	}
	r.Targets = []Target{t}

	t = Target{Issue: 5, Name: fmt.Sprintf("pooled hello p50 <= %g ms (idle)", targetPoolP50MS), Status: statusNA, Detail: "pool row not measured"}
	if poolIdle != nil {
		t.Status = status(poolIdle.P50MS <= targetPoolP50MS)
		t.Detail = fmt.Sprintf("idle: %.2f ms", poolIdle.P50MS)
		if p := at(pool.Hello, 1); p != nil {
			t.Detail += fmt.Sprintf("; closed loop c1: %.2f ms", p.P50MS)
		}
	}
	r.Targets = append(r.Targets, t)

	n := r.NumCPU
	t = Target{Issue: 5, Name: fmt.Sprintf("pooled HumanEval at c%d >= %.1fx original, all passing", n, targetSpeedVsOrig), Status: statusNA}
	var he, orig *Stats
	if pool != nil {
		he = at(pool.HumanEval, n)
	}
	if r.Original != nil {
		orig = at(r.Original.HumanEval, n)
	}
	switch {
	case he == nil:
		t.Detail = "HumanEval not measured with the pool"
	case orig == nil:
		t.Detail = "original not measured"
	default:
		x := ratio(orig.WallS, he.WallS)
		t.Status = status(x >= targetSpeedVsOrig && he.Passed == he.Runs && he.Runs > 0)
		t.Detail = fmt.Sprintf("%.2f s vs original %.2f s = %.2fx, %s passed", he.WallS, orig.WallS, x, passed(he))
	}
	r.Targets = append(r.Targets, t)

	t = Target{Issue: 5, Name: fmt.Sprintf("service peak RSS under a stdout flood <= %g MiB", targetFloodPeakRSSMB), Status: statusNA, Detail: "flood not measured"}
	if f := r.Flood; f != nil && f.PeakRSSMiB > 0 {
		t.Status = status(f.PeakRSSMiB <= targetFloodPeakRSSMB)
		t.Detail = fmt.Sprintf("%.1f MiB", f.PeakRSSMiB)
	}
	r.Targets = append(r.Targets, t)

	r.Targets = append(r.Targets, r.forkTargets()...)
}

// Limits of issue 15.
const (
	targetForkVsBare     = 1.0
	targetPreforkP50MS   = 3.0
	targetPlotP50MS      = 100.0
	targetFloodRSSVsPool = 1.1 // "unchanged", within the noise of a peak RSS
)

// check is one row's part of a target.
type check struct {
	measured, ok bool
	detail       string
}

// judgeAll sets t from its rows' checks: n/a when any row was not
// measured, else a pass when every row passes.
func judgeAll(t Target, checks ...check) Target {
	t.Status = statusPass
	var details []string
	for _, c := range checks {
		switch {
		case !c.measured:
			t.Status = statusNA
		case !c.ok && t.Status == statusPass:
			t.Status = statusFail
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

// forkTargets are the targets of issue 15, judged on the fork rows (the
// fallback's figures when the fork server was off, as labelled).
func (r *Report) forkTargets() []Target {
	n := r.NumCPU
	var bareHE *Stats
	if bare := r.row(rowBare); bare != nil {
		bareHE = at(bare.HumanEval, n)
	}
	var checks []check
	for _, name := range []string{rowFork, rowPrefork} {
		row := r.row(name)
		var s *Stats
		if row != nil {
			s = at(row.HumanEval, n)
		}
		switch {
		case s == nil:
			checks = append(checks, check{detail: name + " row's HumanEval not measured"})
		case bareHE == nil:
			checks = append(checks, check{detail: fmt.Sprintf("%s %.2f s, bare python not measured", name, s.WallS)})
		default:
			x := ratio(bareHE.WallS, s.WallS)
			checks = append(checks, check{measured: true, ok: x >= targetForkVsBare && s.Passed == s.Runs && s.Runs > 0,
				detail: fmt.Sprintf("%s %.2f s vs bare %.2f s = %.2fx, %s passed%s", name, s.WallS, bareHE.WallS, x, passed(s), fellBack(row.ForkServer))})
		}
	}
	targets := []Target{judgeAll(Target{Issue: 15, Name: fmt.Sprintf("fork rows' HumanEval at c%d >= %.1fx bare python, all passing", n, targetForkVsBare)}, checks...)}

	c := check{detail: "prefork row not measured"}
	if row := r.row(rowPrefork); row != nil && row.Idle != nil {
		c = check{measured: true, ok: row.Idle.P50MS <= targetPreforkP50MS, detail: fmt.Sprintf("idle: %.2f ms%s", row.Idle.P50MS, fellBack(row.ForkServer))}
		if p := at(row.Hello, 1); p != nil {
			c.detail += fmt.Sprintf("; closed loop c1: %.2f ms", p.P50MS)
		}
	}
	targets = append(targets, judgeAll(Target{Issue: 15, Name: fmt.Sprintf("prefork hello p50 <= %g ms (idle)", targetPreforkP50MS)}, c))

	checks = nil
	for _, name := range []string{plotForkPreload, plotPreforkPreload} {
		p := r.plotRow(name)
		if p == nil || p.OK == 0 {
			checks = append(checks, check{detail: name + " not measured"})
			continue
		}
		checks = append(checks, check{measured: true, ok: p.P50MS <= targetPlotP50MS && p.OK == p.Runs,
			detail: fmt.Sprintf("%s %.0f ms, %d/%d ok%s", name, p.P50MS, p.OK, p.Runs, fellBack(p.ForkServer))})
	}
	t := judgeAll(Target{Issue: 15, Name: fmt.Sprintf("plot p50 <= %g ms with the preload (fork rows)", targetPlotP50MS)}, checks...)
	for _, name := range []string{plotCold, plotPoolPreload} {
		if p := r.plotRow(name); p != nil && p.OK > 0 {
			t.Detail += fmt.Sprintf("; %s %.0f ms", name, p.P50MS)
		}
	}
	targets = append(targets, t)

	pool, prefork, fork := r.idleMemory(rowPool), r.idleMemory(rowPrefork), r.idleMemory(rowFork)
	c = check{detail: "idle memory of the pool or the pre-forked pool not measured"}
	if pool != nil && prefork != nil && pool.Error == "" && prefork.Error == "" && pool.PSSMiB > 0 && prefork.PSSMiB > 0 {
		var fs *sandbox.ForkServerReport
		if row := r.row(rowPrefork); row != nil {
			fs = row.ForkServer
		}
		c = check{measured: true, ok: prefork.PSSMiB <= pool.PSSMiB,
			detail: fmt.Sprintf("prefork %.1f MiB in %d processes vs pool %.1f MiB in %d%s", prefork.PSSMiB, prefork.Processes, pool.PSSMiB, pool.Processes, fellBack(fs))}
		if fork != nil && fork.Error == "" {
			c.detail += fmt.Sprintf("; the fork server alone %.1f MiB in %d", fork.PSSMiB, fork.Processes)
		}
	}
	targets = append(targets, judgeAll(Target{Issue: 15, Name: "idle PSS of the warm capacity, prefork <= pool"}, c))

	c = check{detail: "flood not measured on the pool and the pre-forked pool"}
	if f, p := r.Flood, r.FloodPrefork; f != nil && p != nil && f.PeakRSSMiB > 0 && p.PeakRSSMiB > 0 {
		c = check{measured: true, ok: p.PeakRSSMiB <= targetFloodRSSVsPool*f.PeakRSSMiB,
			detail: fmt.Sprintf("prefork %.1f MiB vs pool %.1f MiB = %.2fx%s", p.PeakRSSMiB, f.PeakRSSMiB, p.PeakRSSMiB/f.PeakRSSMiB, fellBack(p.ForkServer))}
	}
	targets = append(targets, judgeAll(Target{Issue: 15, Name: fmt.Sprintf("service peak RSS under a stdout flood, prefork <= %.1fx pool", targetFloodRSSVsPool)}, c))
	return targets
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

// idleMemory returns the idle memory of the row named name, or nil.
func (r *Report) idleMemory(name string) *IdleMemory {
	for i := range r.IdleMemory {
		if r.IdleMemory[i].Row == name {
			return &r.IdleMemory[i]
		}
	}
	return nil
}

func status(ok bool) string {
	if ok {
		return statusPass
	}
	return statusFail
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
	fmt.Fprintf(&b, "runblock bench: %d CPUs, python %s (%s), executor isolation %q, took %.1f s, load %s at start, %s at end\n",
		r.NumCPU, r.PythonVersion, r.Python, r.Isolation, r.ElapsedS, cmp.Or(r.LoadStart, "?"), cmp.Or(r.LoadEnd, "?"))
	fmt.Fprintf(&b, "print('hello') after %d warm-up runs per row: cN = %d runs in a closed loop at concurrency N;\n", r.Warmup, r.HelloRuns)
	fmt.Fprintf(&b, "idle = %d runs per row arriving one at a time %.0f ms apart, rows in turn (pooled rows first, so their refills finish before the unpooled rows run)\n",
		r.IdleRuns, r.IdleGapMS)
	b.WriteString("cold, pool: every sandbox started from scratch (RUNBLOCK_FORKSERVER=off); fork, prefork: each run a fork of the fork server, on demand or pre-forked\n")
	b.WriteString("p50/orig, p50/cold: latency ratios (lower is better); speed: throughput ratios (higher is better)\n\n")

	hello := table{head: []string{"print('hello')", "load", "p50 ms", "p90 ms", "p99 ms", "runs/s", "ok", "p50/orig", "p50/cold"}}
	if o := r.Original; o != nil {
		hello.add(o.label(), "c1", num(o.HelloP50MS, 2), num(o.HelloP90MS, 2), "-", "-", "-", "1.00x", "-")
	}
	for _, row := range r.Rows {
		if s := row.Idle; s != nil {
			hello.add(row.Label, "idle", num(s.P50MS, 2), num(s.P90MS, 2), num(s.P99MS, 2), "-",
				passed(s), times(s.P50VsOriginal), times(s.P50VsCold))
		}
	}
	for _, c := range r.Concurrency {
		for _, row := range r.Rows {
			s := at(row.Hello, c)
			if s == nil {
				continue
			}
			hello.add(row.Label, "c"+strconv.Itoa(c), num(s.P50MS, 2), num(s.P90MS, 2), num(s.P99MS, 2), num(s.RunsPerS, 1),
				passed(s), times(s.P50VsOriginal), times(s.P50VsCold))
		}
	}
	hello.write(&b)

	b.WriteString("\n")
	if r.HumanEvalPrograms == 0 {
		b.WriteString("HumanEval: not measured (data set not found)\n")
	} else {
		he := table{head: []string{fmt.Sprintf("HumanEval (%d programs)", r.HumanEvalPrograms), "load", "wall s", "runs/s", "passed", "speed vs orig", "speed vs bare", "speed vs cold"}}
		for _, c := range r.Concurrency {
			if r.Original != nil {
				if s := at(r.Original.HumanEval, c); s != nil {
					he.add(r.Original.label(), "c"+strconv.Itoa(c), num(s.WallS, 2), num(s.RunsPerS, 1), passed(s), "1.00x", "-", "-")
				}
			}
			for _, row := range r.Rows {
				s := at(row.HumanEval, c)
				if s == nil {
					continue
				}
				he.add(row.Label, "c"+strconv.Itoa(c), num(s.WallS, 2), num(s.RunsPerS, 1), passed(s),
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

	b.WriteString("\n")
	if r.Flood == nil && r.FloodPrefork == nil {
		b.WriteString("stdout flood: not measured\n")
	}
	for _, f := range []*Flood{r.Flood, r.FloodPrefork} {
		if f == nil {
			continue
		}
		fmt.Fprintf(&b, "stdout flood (%s, %q, timeout %.0f ms):\n", f.Row, f.Code, f.TimeoutMS)
		fmt.Fprintf(&b, "  service peak RSS %.1f MiB (%.1f MiB before the flood)\n", f.PeakRSSMiB, f.BaselineRSSMiB)
		fmt.Fprintf(&b, "  run ended after %.0f ms (%+.0f ms past the timeout), timeout=%t output_limit=%t, %s written, %s kept\n",
			f.DurationMS, f.OvershootMS, f.Timeout, f.OutputLimit, bytesText(f.StdoutBytes), bytesText(int64(f.KeptBytes)))
	}

	b.WriteString("\n")
	targets := table{head: []string{"target", "issue", "status", "figures"}, textLast: true}
	for _, t := range r.Targets {
		targets.add(t.Name, strconv.Itoa(t.Issue), strings.ToUpper(t.Status), t.Detail)
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
