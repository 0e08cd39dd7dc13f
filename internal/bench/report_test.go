package bench

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// sample is a report as Measure builds it, before compare and evaluate.
func sample() *Report {
	return &Report{
		NumCPU:            2,
		Machine:           "AMD EPYC, Linux 6.18.44",
		Concurrency:       []int{1, 2},
		Python:            "/usr/bin/python3",
		PythonVersion:     "3.11.7",
		Isolation:         "full",
		HelloRuns:         200,
		IdleRuns:          100,
		IdleGapMS:         50,
		Warmup:            10,
		HumanEvalPrograms: 164,
		Rows: []Row{
			{Name: rowBare, Label: "bare python3 -I -S -c",
				Idle: &Stats{Concurrency: 1, Runs: 100, Passed: 100, P50MS: 6.5, P90MS: 7, P99MS: 8, WallS: 6},
				Hello: []Stats{
					{Concurrency: 1, Runs: 200, Passed: 200, P50MS: 7, P90MS: 8, P99MS: 9, RunsPerS: 140, WallS: 1.43},
					{Concurrency: 2, Runs: 200, Passed: 200, P50MS: 8, P90MS: 9, P99MS: 12, RunsPerS: 250, WallS: 0.8},
				},
				HumanEval: []Stats{
					{Concurrency: 1, Runs: 164, Passed: 164, WallS: 1.64, RunsPerS: 100},
					{Concurrency: 2, Runs: 164, Passed: 164, WallS: 0.82, RunsPerS: 200, CPUMSPerRun: 9.8, BusyPercent: 99},
				}},
			{Name: rowCold, Label: "executor cold (pool off)", StartupMS: 120,
				Idle: &Stats{Concurrency: 1, Runs: 100, Passed: 100, P50MS: 19, P90MS: 22, P99MS: 28, WallS: 7},
				Hello: []Stats{
					{Concurrency: 1, Runs: 200, Passed: 200, P50MS: 20, P90MS: 24, P99MS: 30, RunsPerS: 50, WallS: 4},
					{Concurrency: 2, Runs: 200, Passed: 200, P50MS: 22, P90MS: 26, P99MS: 35, RunsPerS: 90, WallS: 2.2},
				},
				HumanEval: []Stats{
					{Concurrency: 1, Runs: 164, Passed: 164, WallS: 4, RunsPerS: 41},
					{Concurrency: 2, Runs: 164, Passed: 164, WallS: 2, RunsPerS: 82},
				}},
			{Name: rowPool, Label: "executor pool (2)", StartupMS: 150,
				Idle: &Stats{Concurrency: 1, Runs: 100, Passed: 100, P50MS: 4, P90MS: 5, P99MS: 7, WallS: 5.4},
				Hello: []Stats{
					{Concurrency: 1, Runs: 200, Passed: 200, P50MS: 5, P90MS: 6, P99MS: 9, RunsPerS: 60, WallS: 3.3},
					{Concurrency: 2, Runs: 200, Passed: 199, Errors: 1, P50MS: 11, P90MS: 14, P99MS: 20, RunsPerS: 100, WallS: 2},
				},
				HumanEval: []Stats{
					{Concurrency: 1, Runs: 164, Passed: 164, WallS: 2.5, RunsPerS: 65.6},
					{Concurrency: 2, Runs: 164, Passed: 164, WallS: 1.1, RunsPerS: 149},
				}},
			{Name: rowFork, Label: "executor fork (pool off)", StartupMS: 180, ForkServer: &sandbox.ForkServerReport{Active: true},
				Idle: &Stats{Concurrency: 1, Runs: 100, Passed: 100, P50MS: 2.5, P90MS: 3, P99MS: 4, WallS: 5.3},
				Hello: []Stats{
					{Concurrency: 1, Runs: 200, Passed: 200, P50MS: 3, P90MS: 3.5, P99MS: 5, RunsPerS: 300, WallS: 0.67},
					{Concurrency: 2, Runs: 200, Passed: 200, P50MS: 4, P90MS: 5, P99MS: 7, RunsPerS: 450, WallS: 0.44},
				},
				HumanEval: []Stats{
					{Concurrency: 1, Runs: 164, Passed: 164, WallS: 1.5, RunsPerS: 109},
					{Concurrency: 2, Runs: 164, Passed: 164, WallS: 0.6, RunsPerS: 273, CPUMSPerRun: 7.1, BusyPercent: 97},
				}},
			{Name: rowPrefork, Label: "executor prefork (2)", StartupMS: 190, ForkServer: &sandbox.ForkServerReport{Active: true, Preloaded: []string{"numpy", "matplotlib.pyplot"}},
				Idle: &Stats{Concurrency: 1, Runs: 100, Passed: 100, P50MS: 1.5, P90MS: 2, P99MS: 3, WallS: 5.2},
				Hello: []Stats{
					{Concurrency: 1, Runs: 200, Passed: 200, P50MS: 2, P90MS: 2.5, P99MS: 4, RunsPerS: 450, WallS: 0.44},
					{Concurrency: 2, Runs: 200, Passed: 200, P50MS: 3, P90MS: 4, P99MS: 6, RunsPerS: 600, WallS: 0.33},
				},
				HumanEval: []Stats{
					{Concurrency: 1, Runs: 164, Passed: 164, WallS: 1.4, RunsPerS: 117},
					{Concurrency: 2, Runs: 164, Passed: 164, WallS: 0.52, RunsPerS: 315, CPUMSPerRun: 6.2, BusyPercent: 98},
				}},
			{Name: rowPreforkOff, Label: "executor prefork (2), preload off", StartupMS: 150, ForkServer: &sandbox.ForkServerReport{Active: true},
				Idle: &Stats{Concurrency: 1, Runs: 100, Passed: 100, P50MS: 1.5, P90MS: 2, P99MS: 3, WallS: 5.2},
				Hello: []Stats{
					{Concurrency: 1, Runs: 200, Passed: 200, P50MS: 2, P90MS: 2.5, P99MS: 4, RunsPerS: 450, WallS: 0.44},
					{Concurrency: 2, Runs: 200, Passed: 200, P50MS: 3, P90MS: 4, P99MS: 6, RunsPerS: 600, WallS: 0.33},
				},
				HumanEval: []Stats{
					{Concurrency: 1, Runs: 164, Passed: 164, WallS: 1.4, RunsPerS: 117},
					{Concurrency: 2, Runs: 164, Passed: 164, WallS: 0.5, RunsPerS: 328},
				}},
		},
		Original: &Original{
			HelloP50MS: 25, HelloP90MS: 30,
			HumanEval: []Stats{
				{Concurrency: 1, Runs: 164, Passed: 164, WallS: 4.4, RunsPerS: 37.3},
				{Concurrency: 2, Runs: 164, Passed: 164, WallS: 2.2, RunsPerS: 74.5},
			},
			Raw: []map[string]float64{{"hello_p50_ms": 25, "hello_p90_ms": 30, "humaneval_c1_s": 4.4, "humaneval_c1_passed": 164, "humaneval_c2_s": 2.2, "humaneval_c2_passed": 164}, {"hello_p50_ms": 27}},
		},
		IdleMemory: []IdleMemory{
			{Row: rowPool, Label: "executor pool (2)", Processes: 4, PSSMiB: 22, RSSMiB: 60},
			{Row: rowFork, Label: "executor fork (pool off)", Processes: 1, PSSMiB: 9.5, RSSMiB: 14},
			{Row: rowPrefork, Label: "executor prefork (2)", Processes: 3, PSSMiB: 14, RSSMiB: 40},
		},
		Flood: &Flood{Row: "executor pool (2)", Code: floodCode, TimeoutMS: 5000, DurationMS: 5040, Timeout: true,
			StdoutBytes: 9 << 30, KeptBytes: 64 << 10, BaselineRSSMiB: 12.5, PeakRSSMiB: 20.25, OvershootMS: 40},
		FloodPrefork: &Flood{Row: "executor prefork (2)", Code: floodCode, TimeoutMS: 5000, DurationMS: 5030, Timeout: true,
			StdoutBytes: 9 << 30, KeptBytes: 64 << 10, BaselineRSSMiB: 12.75, PeakRSSMiB: 20.5, OvershootMS: 30,
			ForkServer: &sandbox.ForkServerReport{Active: true}},
		Plot: []PlotRow{
			{Name: plotCold, Label: "executor cold (pool off), preload off", Runs: 10, OK: 10, P50MS: 900, P90MS: 950},
			{Name: plotPoolPreload, Label: "executor pool (1), RUNBLOCK_PRELOAD=numpy,matplotlib.pyplot", Runs: 10, OK: 10, P50MS: 140, P90MS: 187},
			{Name: plotFork, Label: "executor fork (pool off), default preload", Runs: 10, OK: 10, P50MS: 60, P90MS: 70},
			{Name: plotPrefork, Label: "executor prefork (2), default preload", Runs: 10, OK: 10, P50MS: 40, P90MS: 45},
		},
		PlotGapMS: 1000,
		IdleSessions: &IdleSessions{Sessions: 500, Processes: 1002, WindowS: 10, CPUTicks: 3, CPUPercent: 0.3, PSSMiB: 1300, ServicePSSMiB: 110,
			Cells: 200, OK: 200, CellP50MS: 1.2, CellP99MS: 5},
		Launches: []LaunchStats{
			{Name: launchHello, Label: "print('hello'), executor prefork (2)", Pattern: patternSequential, Runs: 100, OK: 100, P50MS: 2.5, P95MS: 4, P99MS: 4.5, P999MS: 6, WallS: 0.3},
			{Name: launchHello, Label: "print('hello'), executor prefork (2)", Pattern: patternStaggered, Runs: 100, OK: 100, P50MS: 2.6, P95MS: 4.5, P99MS: 5, P999MS: 9, WallS: 5},
			{Name: launchHello, Label: "print('hello'), executor prefork (2)", Pattern: patternBurst, Runs: 100, OK: 99, Errors: 1, P50MS: 80, P95MS: 150, P99MS: 160, P999MS: 170, WallS: 0.2},
			{Name: launchPlot, Label: "plot, executor prefork (2)", Pattern: patternSequential, Runs: 100, OK: 100, P50MS: 40, P95MS: 50, P99MS: 60, P999MS: 70, WallS: 4},
			{Name: launchPlot, Label: "plot, executor prefork (2)", Pattern: patternStaggered, Error: "context canceled"},
			{Name: launchCellScript, Label: "print('hello'), a script in a live session", Pattern: patternSequential, Runs: 100, OK: 100, P50MS: 0.6, P95MS: 1, P99MS: 1.2, P999MS: 2, WallS: 0.1},
			{Name: launchCellValue, Label: "'hello' shown as a cell's value, live session", Pattern: patternSequential, Runs: 100, OK: 100, P50MS: 0.9, P95MS: 1.5, P99MS: 1.7, P999MS: 3, WallS: 0.1},
			{Name: launchFloor, Label: "a pipe round trip to a bare python (floor)", Pattern: patternSequential, Runs: 100, OK: 100, P50MS: 0.021, P95MS: 0.05, P99MS: 0.17, P999MS: 1.2, WallS: 0.01},
		},
		LaunchRuns:           100,
		LaunchSequentialRuns: 1000,
		LaunchGapMS:          50,
		Start:                &StartStats{Runs: 10, OK: 10, ReadyP50MS: 450, ReadyMaxMS: 900, FirstRunP50MS: 470, FirstRunMaxMS: 930},
		Skipped:              []Skip{{Part: "original execute_code", Why: "--quick (it takes half a minute)"}},
		Notes:                []string{"launch plot, executor prefork (2), burst: 1 of 100 failed (1 by the service)"},
		ElapsedS:             95.5,
		LoadStart:            "0.91",
		LoadEnd:              "2.43",
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCompare(t *testing.T) {
	r := sample()
	r.compare()
	tests := []struct {
		name      string
		got, want float64
	}{
		{"pool idle vs original", r.row(rowPool).Idle.P50VsOriginal, 4.0 / 25},
		{"pool idle vs cold idle", r.row(rowPool).Idle.P50VsCold, 4.0 / 19},
		{"pool hello c1 vs original", r.row(rowPool).Hello[0].P50VsOriginal, 5.0 / 25},
		{"pool hello c1 vs cold", r.row(rowPool).Hello[0].P50VsCold, 5.0 / 20},
		{"pool hello c2 vs original (serial only)", r.row(rowPool).Hello[1].P50VsOriginal, 0},
		{"pool hello c2 vs cold", r.row(rowPool).Hello[1].P50VsCold, 11.0 / 22},
		{"cold hello c1 vs cold", r.row(rowCold).Hello[0].P50VsCold, 1},
		{"pool HumanEval c2 vs original", r.row(rowPool).HumanEval[1].SpeedVsOriginal, 2.2 / 1.1},
		{"pool HumanEval c1 vs cold", r.row(rowPool).HumanEval[0].SpeedVsCold, 4 / 2.5},
		{"bare HumanEval c1 vs original", r.row(rowBare).HumanEval[0].SpeedVsOriginal, 4.4 / 1.64},
		{"bare HumanEval c2 vs bare", r.row(rowBare).HumanEval[1].SpeedVsBare, 1},
		{"prefork HumanEval c2 vs bare", r.row(rowPrefork).HumanEval[1].SpeedVsBare, 0.82 / 0.52},
		{"prefork idle vs bare idle", r.row(rowPrefork).Idle.P50VsBare, 1.5 / 6.5},
		{"pool hello c2 vs bare", r.row(rowPool).Hello[1].P50VsBare, 11.0 / 8},
		{"fork HumanEval c1 vs cold", r.row(rowFork).HumanEval[0].SpeedVsCold, 4 / 1.5},
		{"prefork idle vs cold idle", r.row(rowPrefork).Idle.P50VsCold, 1.5 / 19},
	}
	for _, tt := range tests {
		if !near(tt.got, tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// without removes the row named name from r.
func without(r *Report, name string) {
	r.Rows = slices.DeleteFunc(r.Rows, func(row Row) bool { return row.Name == name })
}

func TestEvaluate(t *testing.T) {
	const M, X, N = statusMet, statusNotMet, statusNA
	// The targets, in order.
	const (
		poolVsCold = iota
		poolMS
		poolVsOrig
		flood
		idleVsBare
		speedVsBare
		forkSpeedVsBare
		plot
		preloadCost
		pss
		floodVsPool
		valueCost
		idleSessions
		tails
		ready
		targets
	)
	tests := []struct {
		name   string
		change func(r *Report)
		want   map[int]string // the targets not met; every other is met
	}{
		{"all met", func(r *Report) {}, nil},
		{"pool not faster than half of cold", func(r *Report) { r.row(rowPool).Idle.P50MS = 10 }, map[int]string{poolVsCold: X}},
		{"closed loop does not decide the latency targets", func(r *Report) {
			r.row(rowPool).Hello[0].P50MS = 30
			r.row(rowPrefork).Hello[0].P50MS = 30
		}, nil},
		{"pool over 12 ms", func(r *Report) {
			r.row(rowPool).Idle.P50MS = 13
			r.row(rowCold).Idle.P50MS = 40
		}, map[int]string{poolMS: X}},
		{"no idle phase", func(r *Report) { r.row(rowPool).Idle, r.row(rowPrefork).Idle = nil, nil },
			map[int]string{poolVsCold: N, poolMS: N, idleVsBare: N}},
		{"HumanEval too slow", func(r *Report) { r.row(rowPool).HumanEval[1].WallS = 1.6 }, map[int]string{poolVsOrig: X}},
		{"HumanEval fast but one failing", func(r *Report) { r.row(rowPool).HumanEval[1].Passed = 163 }, map[int]string{poolVsOrig: X}},
		{"flood too big", func(r *Report) { r.Flood.PeakRSSMiB = 64.5 }, map[int]string{flood: X}},
		{"flood at the limit", func(r *Report) { r.Flood.PeakRSSMiB, r.FloodPrefork.PeakRSSMiB = 64, 64 }, nil},
		{"no original", func(r *Report) { r.Original = nil }, map[int]string{poolVsOrig: N}},
		{"no flood", func(r *Report) { r.Flood = nil }, map[int]string{flood: N, floodVsPool: N}},
		{"no pool row", func(r *Report) { without(r, rowPool) }, map[int]string{poolVsCold: N, poolMS: N, poolVsOrig: N}},
		{"no HumanEval", func(r *Report) {
			for i := range r.Rows {
				r.Rows[i].HumanEval = nil
			}
		}, map[int]string{poolVsOrig: N, speedVsBare: N, forkSpeedVsBare: N}},
		{"pre-forked hello over 0.25x bare", func(r *Report) { r.row(rowPrefork).Idle.P50MS, r.row(rowPreforkOff).Idle.P50MS = 1.7, 1.7 }, map[int]string{idleVsBare: X}},
		{"pre-forked hello at 0.25x bare", func(r *Report) { r.row(rowPrefork).Idle.P50MS, r.row(rowPreforkOff).Idle.P50MS = 1.6, 1.6 }, nil},
		{"fork under 1.2x bare", func(r *Report) { r.row(rowFork).HumanEval[1].WallS = 0.7 }, map[int]string{forkSpeedVsBare: X}},
		{"prefork under 1.5x bare", func(r *Report) {
			r.row(rowPrefork).HumanEval[1].WallS, r.row(rowPreforkOff).HumanEval[1].WallS = 0.56, 0.56
		}, map[int]string{speedVsBare: X}},
		{"prefork at 1.5x bare", func(r *Report) {
			r.row(rowPrefork).HumanEval[1].WallS, r.row(rowPreforkOff).HumanEval[1].WallS = 0.54, 0.54
		}, nil},
		{"fork at 1.2x bare, under prefork's 1.5x", func(r *Report) { r.row(rowFork).HumanEval[1].WallS = 0.68 }, nil},
		{"prefork fast but one failing", func(r *Report) { r.row(rowPrefork).HumanEval[1].Passed = 163 }, map[int]string{speedVsBare: X}},
		{"no fork row", func(r *Report) { without(r, rowFork) }, map[int]string{forkSpeedVsBare: N}},
		{"no bare row", func(r *Report) { without(r, rowBare) }, map[int]string{idleVsBare: N, speedVsBare: N, forkSpeedVsBare: N}},
		{"a missing prefork row beside a slow fork row", func(r *Report) {
			r.row(rowFork).HumanEval[1].WallS = 2
			without(r, rowPrefork)
		}, map[int]string{idleVsBare: N, speedVsBare: N, forkSpeedVsBare: X, preloadCost: N}},
		{"plot over 70 ms", func(r *Report) { r.plotRow(plotPrefork).P50MS = 71 }, map[int]string{plot: X}},
		{"plot fast but one failing", func(r *Report) { r.plotRow(plotPrefork).OK = 9 }, map[int]string{plot: X}},
		{"the other plot rows do not decide", func(r *Report) { r.plotRow(plotCold).P50MS, r.plotRow(plotFork).P50MS = 2000, 200 }, nil},
		{"plot not measured", func(r *Report) { r.Plot = nil }, map[int]string{plot: N}},
		{"plot row failed every run", func(r *Report) { r.plotRow(plotPrefork).OK = 0 }, map[int]string{plot: N}},
		{"preload makes HumanEval slower", func(r *Report) { r.row(rowPrefork).HumanEval[1].WallS = 0.54 }, map[int]string{preloadCost: X}},
		{"preload makes hello slower", func(r *Report) { r.row(rowPrefork).Idle.P50MS = 1.6 }, map[int]string{preloadCost: X}},
		{"preload within the noise", func(r *Report) { r.row(rowPrefork).Idle.P50MS = 1.55 }, nil},
		{"nothing preloaded", func(r *Report) { without(r, rowPreforkOff) }, map[int]string{preloadCost: N}},
		{"prefork holds more than the pool", func(r *Report) { r.idleMemory(rowPrefork).PSSMiB = 22.5 }, map[int]string{pss: X}},
		{"prefork holds as much as the pool", func(r *Report) { r.idleMemory(rowPrefork).PSSMiB = 22 }, nil},
		{"pool memory not read", func(r *Report) { r.idleMemory(rowPool).Error = "permission denied" }, map[int]string{pss: N}},
		{"no idle memory", func(r *Report) { r.IdleMemory = nil }, map[int]string{pss: N}},
		{"the fork server alone does not decide", func(r *Report) { r.IdleMemory = r.IdleMemory[:1] }, map[int]string{pss: N}},
		{"prefork flood within 10%", func(r *Report) { r.FloodPrefork.PeakRSSMiB = 22.2 }, nil},
		{"prefork flood over 10%", func(r *Report) { r.FloodPrefork.PeakRSSMiB = 22.3 }, map[int]string{floodVsPool: X}},
		{"no prefork flood", func(r *Report) { r.FloodPrefork = nil }, map[int]string{floodVsPool: N}},
		{"a shown value costs over 1 ms", func(r *Report) { r.launch(launchCellValue, patternSequential).P50MS = 1.7 }, map[int]string{valueCost: X}},
		{"a shown value costs 1 ms", func(r *Report) { r.launch(launchCellValue, patternSequential).P50MS = 1.6 }, nil},
		{"a shown value failing", func(r *Report) { r.launch(launchCellValue, patternSequential).OK = 99 }, map[int]string{valueCost: X}},
		{"no script cell row", func(r *Report) { r.Launches = r.Launches[:5] }, map[int]string{valueCost: N}},
		{"idle sessions over 1.5 GiB", func(r *Report) { r.IdleSessions.PSSMiB = 1500 }, map[int]string{idleSessions: X}},
		{"idle sessions not measured", func(r *Report) { r.IdleSessions = nil }, map[int]string{idleSessions: N}},
		{"a launch p99 over 2x its p50", func(r *Report) { r.launch(launchHello, patternStaggered).P99MS = 5.3 }, map[int]string{tails: X}},
		{"a launch p99 at 2x its p50", func(r *Report) { r.launch(launchHello, patternStaggered).P99MS = 5.2 }, nil},
		{"the machine's floor is not judged", func(r *Report) { r.launch(launchFloor, patternSequential).P99MS = 10 }, nil},
		{"a burst's tail is not judged", func(r *Report) { r.launch(launchHello, patternBurst).P99MS = 1000 }, nil},
		{"no launches", func(r *Report) { r.Launches = nil }, map[int]string{tails: N, valueCost: N}},
		{"a start over 1.5 s", func(r *Report) { r.Start.ReadyMaxMS = 1600 }, map[int]string{ready: X}},
		{"a start at 1.5 s", func(r *Report) { r.Start.ReadyMaxMS = 1500 }, nil},
		{"a start failed", func(r *Report) { r.Start.OK = 9 }, map[int]string{ready: X}},
		{"no start", func(r *Report) { r.Start = nil }, map[int]string{ready: N}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			tt.change(r)
			r.compare()
			r.evaluate()
			if len(r.Targets) != targets {
				t.Fatalf("%d targets, want %d", len(r.Targets), targets)
			}
			for i, target := range r.Targets {
				want := cmp.Or(tt.want[i], M)
				if target.Status != want {
					t.Errorf("target %q = %s (%s), want %s", target.Name, target.Status, target.Detail, want)
				}
			}
		})
	}
}

// TestEvaluateFallback: when the fork server was off, the fork rows
// measured the fallback; the targets are judged on those figures and say
// so.
func TestEvaluateFallback(t *testing.T) {
	r := sample()
	off := &sandbox.ForkServerReport{Detail: "user namespaces unavailable"}
	r.row(rowFork).ForkServer, r.row(rowPrefork).ForkServer = off, off
	r.plotRow(plotPrefork).ForkServer = off
	r.FloodPrefork.ForkServer = off
	r.row(rowPrefork).Idle.P50MS = 4.5
	r.compare()
	r.evaluate()
	for _, i := range []int{4, 5, 6, 7, 9, 10} { // the targets on the fork rows
		if target := r.Targets[i]; !strings.Contains(target.Detail, "(no fork server: the fallback)") {
			t.Errorf("target %q: detail %q does not say the fallback was measured", target.Name, target.Detail)
		}
	}
	if s := r.Targets[4].Status; s != statusNotMet {
		t.Errorf("pre-forked latency target = %s on the fallback's 4.5 ms, want not met", s)
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestWriteText(t *testing.T) {
	tests := []struct {
		name   string
		change func(r *Report)
	}{
		{"full", func(r *Report) {}},
		{"no shared", func(r *Report) {
			r.Original, r.HumanEvalPrograms = nil, 0
			for i := range r.Rows {
				r.Rows[i].HumanEval = nil
			}
			r.Flood, r.FloodPrefork = nil, nil
		}},
		{"python without numpy", func(r *Report) {
			without(r, rowPreforkOff)
			r.row(rowPrefork).ForkServer.Preloaded = nil
			r.Plot, r.Launches = nil, r.Launches[:3]
			r.Skipped = append(r.Skipped,
				Skip{Part: "prefork with RUNBLOCK_PRELOAD=off", Why: "the default preload imports nothing with this python, so it would be the prefork row again"},
				Skip{Part: "plot", Why: "/usr/local/bin/python3: ModuleNotFoundError: No module named 'numpy'; RUNBLOCK_PYTHON=/usr/bin/python3 with Debian's python3-numpy and python3-matplotlib measures it"},
				Skip{Part: "plot launches", Why: "/usr/local/bin/python3: ModuleNotFoundError: No module named 'numpy'"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			tt.change(r)
			r.compare()
			r.evaluate()
			var buf bytes.Buffer
			if err := r.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			golden(t, "text_"+strings.ReplaceAll(tt.name, " ", "_")+".golden", buf.Bytes())
		})
	}
}

func TestTableAlignment(t *testing.T) {
	tb := table{head: []string{"name", "n", "figures"}, textLast: true}
	tb.add("a", "1", "left")
	tb.add("longer name", "1234", "x")
	var b strings.Builder
	tb.write(&b)
	want := "" +
		"name            n  figures\n" +
		"a               1  left\n" +
		"longer name  1234  x\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteJSON(t *testing.T) {
	r := sample()
	r.compare()
	r.evaluate()
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(bytes.TrimSpace(buf.Bytes()), []byte("\n}")); n != 1 {
		t.Errorf("want exactly one top-level JSON object, found %d closings", n)
	}
	var back Report
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("more than one JSON value written")
	}
	if back.row(rowPool).Hello[0].P50VsCold != r.row(rowPool).Hello[0].P50VsCold || back.Flood.PeakRSSMiB != r.Flood.PeakRSSMiB {
		t.Errorf("round trip lost figures: %+v", back)
	}
	if len(back.Targets) != 15 || back.IdleSessions.CPUTicks != 3 || back.Start == nil || back.Start.ReadyMaxMS != 900 || back.Targets[0].Status != statusMet || back.Launches[2].Errors != 1 || back.Skipped[0].Part != "original execute_code" {
		t.Errorf("targets = %+v", back.Targets)
	}
}

func TestBest(t *testing.T) {
	a := &Original{HelloP50MS: 30, HelloP90MS: 31, Raw: []map[string]float64{{"x": 1}}, HumanEval: []Stats{
		{Concurrency: 1, Runs: 164, Passed: 164, WallS: 4},
		{Concurrency: 2, Runs: 164, Passed: 164, WallS: 3},
	}}
	b := &Original{HelloP50MS: 25, HelloP90MS: 40, Raw: []map[string]float64{{"x": 2}}, HumanEval: []Stats{
		{Concurrency: 1, Runs: 164, Passed: 164, WallS: 5},
		{Concurrency: 2, Runs: 164, Passed: 163, WallS: 2},
	}}
	got := best(a, b)
	if got.HelloP50MS != 25 || got.HelloP90MS != 31 || len(got.Raw) != 2 {
		t.Errorf("best hello = %v/%v with %d raw runs, want 25/31 with 2", got.HelloP50MS, got.HelloP90MS, len(got.Raw))
	}
	if got.HumanEval[0].WallS != 4 || got.HumanEval[1].WallS != 2 || got.HumanEval[1].Passed != 163 {
		t.Errorf("best HumanEval = %+v, want c1 from a, c2 from b", got.HumanEval)
	}
	if best(nil, b) != b || best(a, nil) != a {
		t.Error("best with one run missing must return the other")
	}
}

func TestParseSeed(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		wantErr bool
		want    Original
	}{
		{
			name: "two cores",
			out:  `{"hello_p50_ms": 23.5, "hello_p90_ms": 27.25, "humaneval_c1_s": 4.1, "humaneval_c1_passed": 164, "humaneval_c2_s": 2.05, "humaneval_c2_passed": 163}` + "\n",
			want: Original{HelloP50MS: 23.5, HelloP90MS: 27.25, HumanEval: []Stats{
				{Concurrency: 1, Runs: 164, Passed: 164, WallS: 4.1, RunsPerS: 164 / 4.1},
				{Concurrency: 2, Runs: 164, Passed: 163, WallS: 2.05, RunsPerS: 164 / 2.05},
			}},
		},
		{
			name: "one core, after a stray line",
			out:  "warming up\n" + `{"hello_p50_ms": 30, "hello_p90_ms": 31, "humaneval_c1_s": 5, "humaneval_c1_passed": 164}`,
			want: Original{HelloP50MS: 30, HelloP90MS: 31, HumanEval: []Stats{
				{Concurrency: 1, Runs: 164, Passed: 164, WallS: 5, RunsPerS: 164.0 / 5},
			}},
		},
		{name: "not JSON", out: "Traceback (most recent call last):\n", wantErr: true},
		{name: "no hello", out: `{"humaneval_c1_s": 5}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSeed([]byte(tt.out), 164)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseSeed = %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.HelloP50MS != tt.want.HelloP50MS || got.HelloP90MS != tt.want.HelloP90MS || len(got.HumanEval) != len(tt.want.HumanEval) {
				t.Fatalf("parseSeed = %+v, want %+v", got, tt.want)
			}
			for i, s := range got.HumanEval {
				w := tt.want.HumanEval[i]
				if s.Concurrency != w.Concurrency || s.Runs != w.Runs || s.Passed != w.Passed || !near(s.WallS, w.WallS) || !near(s.RunsPerS, w.RunsPerS) {
					t.Errorf("HumanEval[%d] = %+v, want %+v", i, s, w)
				}
			}
		})
	}
}

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    float64
		wantErr bool
	}{
		{"real layout", "Name:\tbench\nVmPeak:\t 1234 kB\nVmHWM:\t   20480 kB\nVmRSS:\t 10240 kB\n", 20, false},
		{"fraction", "VmHWM:\t1536 kB\n", 1.5, false},
		{"missing", "Name:\tbench\nVmRSS:\t 10240 kB\n", 0, true},
		{"odd unit", "VmHWM:\t20 MB\n", 0, true},
		{"not a number", "VmHWM:\tlots kB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmHWM(tt.status)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseVmHWM err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseVmHWM = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPeakRSSOfSelf(t *testing.T) {
	mib, err := peakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if mib <= 0 {
		t.Errorf("peak RSS of the test process = %v MiB, want > 0", mib)
	}
}
