package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/procstat"
	"golang.org/x/sys/unix"
)

// TestMeasureSmoke runs the whole bench for real with tiny counts: bare
// python, the executor cold, pooled, forked and pre-forked (or the
// fallback, where the fork server cannot start), a few HumanEval programs,
// the idle memory and two short floods in a child process. It checks what
// ran, never how fast.
func TestMeasureSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes and a child service; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	opts := Options{
		Concurrency:       2,
		Pool:              2,
		HelloRuns:         3,
		IdleRuns:          2,
		IdleGap:           time.Millisecond,
		Warmup:            1,
		HumanEvalPrograms: 2,
		FloodTimeout:      500 * time.Millisecond,
		LaunchRuns:        3,
		LaunchGap:         time.Millisecond,
		IdleSessions:      3,
		IdleWindow:        100 * time.Millisecond,
		IdleCells:         4,
		SkipOriginal:      true,
		SkipPlot:          true, // TestPlotRows
		SkipStart:         true, // this test binary is no runblock: TestMeasureStart
		Executor:          sandbox.Config{KeepBytes: 4096},
		Logger:            slog.New(slog.NewTextHandler(t.Output(), nil)),
	}
	r, err := Measure(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range r.Notes {
		t.Logf("note: %s", n)
	}
	if r.Python == "" || r.Isolation == "" {
		t.Errorf("python %q, isolation %q: want both reported", r.Python, r.Isolation)
	}

	for _, name := range []string{rowBare, rowCold, rowPool, rowFork, rowPrefork} {
		row := r.row(name)
		if row == nil {
			t.Fatalf("no %s row", name)
		}
		if row.Error != "" {
			t.Fatalf("%s row: %s", name, row.Error)
		}
		if len(row.Hello) != 2 {
			t.Fatalf("%s row: %d hello phases, want c1 and c2", name, len(row.Hello))
		}
		for _, s := range row.Hello {
			if s.Runs != 3 || s.Passed != 3 {
				t.Errorf("%s hello c%d: %d/%d passed, want 3/3", name, s.Concurrency, s.Passed, s.Runs)
			}
			if s.P50MS <= 0 || s.P50MS > s.P99MS || s.RunsPerS <= 0 {
				t.Errorf("%s hello c%d: inconsistent figures %+v", name, s.Concurrency, s)
			}
		}
	}

	t.Run("humaneval", func(t *testing.T) {
		if r.HumanEvalPrograms == 0 {
			t.Skip("../shared/data/HumanEval.jsonl.gz not found beside the module root; HumanEval parts not measured")
		}
		for _, name := range []string{rowBare, rowCold, rowPool, rowFork, rowPrefork} {
			for _, s := range r.row(name).HumanEval {
				if s.Runs != 2 || s.Passed != 2 {
					t.Errorf("%s HumanEval c%d: %d/%d passed, want 2/2", name, s.Concurrency, s.Passed, s.Runs)
				}
			}
			if n := len(r.row(name).HumanEval); n != 2 {
				t.Errorf("%s: %d HumanEval phases, want 2", name, n)
			}
		}
	})

	t.Run("fork server", func(t *testing.T) {
		for _, name := range []string{rowCold, rowPool} {
			if fs := r.row(name).ForkServer; fs == nil || fs.Active {
				t.Errorf("%s row: fork server %+v, want reported and off", name, fs)
			}
		}
		for _, name := range []string{rowFork, rowPrefork} {
			row := r.row(name)
			if row.ForkServer == nil {
				t.Fatalf("%s row: fork server not reported", name)
			}
			if marked := strings.HasSuffix(row.Label, fallbackMark); marked == row.ForkServer.Active {
				t.Errorf("%s row labelled %q with the fork server %+v", name, row.Label, row.ForkServer)
			}
		}
	})

	t.Run("idle memory", func(t *testing.T) {
		var names []string
		for _, m := range r.IdleMemory {
			names = append(names, m.Row)
			if m.Error != "" {
				t.Errorf("%s: %s", m.Row, m.Error)
			}
		}
		if want := []string{rowPool, rowFork, rowPrefork}; !slices.Equal(names, want) {
			t.Fatalf("idle memory of %v, want %v", names, want)
		}
		// Two pooled sandboxes are two inits and two pythons at least.
		for _, name := range []string{rowPool, rowPrefork} {
			if m := r.idleMemory(name); m.Processes < 2 || m.PSSMiB <= 0 || m.RSSMiB < m.PSSMiB {
				t.Errorf("%s: %+v, want its pooled processes counted", name, m)
			}
		}
		if m := r.idleMemory(rowFork); r.row(rowFork).ForkServer.Active && (m.Processes < 1 || m.PSSMiB <= 0) {
			t.Errorf("fork: %+v, want the fork server counted", m)
		}
	})

	t.Run("flood", func(t *testing.T) {
		for _, f := range []*Flood{r.Flood, r.FloodPrefork} {
			if f == nil {
				t.Fatal("flood not measured")
			}
			if !f.Timeout || f.OutputLimit {
				t.Errorf("%s: flood ended with timeout=%v output_limit=%v, want a timeout only", f.Row, f.Timeout, f.OutputLimit)
			}
			if f.KeptBytes > 4096 || f.StdoutBytes <= int64(f.KeptBytes) {
				t.Errorf("%s: flood kept %d of %d bytes, want at most 4096 of more", f.Row, f.KeptBytes, f.StdoutBytes)
			}
			if f.PeakRSSMiB <= 0 || f.PeakRSSMiB < f.BaselineRSSMiB {
				t.Errorf("%s: flood RSS: peak %v MiB, baseline %v MiB", f.Row, f.PeakRSSMiB, f.BaselineRSSMiB)
			}
			if f.ForkServer == nil {
				t.Errorf("%s: the child did not report its fork server", f.Row)
			}
		}
	})

	t.Run("launches", func(t *testing.T) {
		if r.LaunchRuns != 3 || r.LaunchSequentialRuns != 30 {
			t.Errorf("%d launches a pattern, %d one after another; want 3, 30", r.LaunchRuns, r.LaunchSequentialRuns)
		}
		var got []string
		for _, l := range r.Launches {
			got = append(got, l.Name+" "+l.Pattern)
			n := 3 // LaunchRuns; ten times that one after another
			if l.Pattern == patternSequential {
				n = 30
			}
			if l.Error != "" || l.Runs != n || l.OK != n || l.P50MS <= 0 || l.P50MS > l.P99MS {
				t.Errorf("%s %s: %+v, want %d of %d launches, consistent figures", l.Name, l.Pattern, l, n, n)
			}
		}
		want := []string{"floor sequential", "floor staggered", "floor burst", "hello sequential", "hello staggered", "hello burst", "cell sequential", "cell staggered", "cell burst",
			"cell-script sequential", "cell-script staggered", "cell-script burst", "cell-value sequential", "cell-value staggered", "cell-value burst",
			"replay sequential", "replay staggered", "replay burst"}
		if !slices.Equal(got, want) {
			t.Errorf("launches %v, want %v (the floor first; no plot: skipped; a session's cell as it is, as a script, with a value; its replay)", got, want)
		}
	})

	var skipped []string
	for _, sk := range r.Skipped {
		skipped = append(skipped, sk.Part+": "+sk.Why)
	}
	if want := []string{"start: --skip-start", "original execute_code: --skip-original", "plot: --skip-plot"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}

	if m := r.IdleSessions; m == nil || m.Sessions != 3 || m.Processes < 6 || m.PSSMiB <= 0 || m.OK != 4 || m.CellP99MS <= 0 {
		t.Errorf("idle sessions: %+v; want 3 sessions (6 processes at least) with their memory and 4 cells answered", m)
	}
	if len(r.Targets) != 15 {
		t.Fatalf("%d targets, want 15", len(r.Targets))
	}
	for _, i := range []int{2, 7, 8, 14} { // the original; the plot; the preload off; the start
		if s := r.Targets[i].Status; s != statusNA {
			t.Errorf("target %q without its figures = %s, want n/a", r.Targets[i].Name, s)
		}
	}

	var text, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "executor pool (2)") || !strings.Contains(text.String(), "executor prefork (2)") {
		t.Errorf("text report lacks the pool row:\n%s", text.String())
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON report: %v", err)
	}
}

// TestPlotRows measures the plot snippet for real, cold, pooled and
// preloaded, and forked cold and pre-forked from a fork server with the
// preload, with the Debian interpreter that has numpy and matplotlib.
func TestPlotRows(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes; skipped with -short")
	}
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import numpy, matplotlib").CombinedOutput(); err != nil {
		t.Skipf("needs %s with numpy and matplotlib (apt-get install python3-numpy python3-matplotlib): %v %s", python, err, out)
	}
	b := newBenchmark(Options{PlotRuns: 2, PlotGap: 500 * time.Millisecond, Pool: 1,
		// 512 MiB until RLIMIT_AS becomes a loose backstop (issue 11).
		Executor: sandbox.Config{Python: python, Timeout: 30 * time.Second, MemoryBytes: 512 << 20}})
	b.report = &Report{}
	rows := b.plotRows(context.Background())
	var names []string
	for _, row := range rows {
		names = append(names, row.Name)
		if row.Error != "" || row.OK != 2 || row.P50MS <= 0 || row.ForkServer == nil {
			t.Errorf("%s: %+v", row.Label, row)
		}
	}
	if want := []string{plotCold, plotPoolPreload, plotFork, plotPrefork}; !slices.Equal(names, want) {
		t.Errorf("plot rows %v, want %v", names, want)
	}
}

// TestQuick: --quick sets small counts where none is given, and leaves
// those given alone.
func TestQuick(t *testing.T) {
	b := newBenchmark(Options{Quick: true, HelloRuns: 7})
	got := []int{b.helloRuns, b.idleRuns, b.warmup, b.opts.HumanEvalPrograms, b.plotRuns, b.launchRuns}
	if want := []int{7, quick.IdleRuns, quick.Warmup, quick.HumanEvalPrograms, quick.PlotRuns, quick.LaunchRuns}; !slices.Equal(got, want) {
		t.Errorf("quick counts %v, want %v", got, want)
	}
	if b.plotGap != quick.PlotGap || b.launchGap != quick.LaunchGap {
		t.Errorf("quick gaps %v and %v, want %v and %v", b.plotGap, b.launchGap, quick.PlotGap, quick.LaunchGap)
	}
	b.report = &Report{}
	if rows := b.plotConfigs(); len(rows) != 1 || rows[0].row.Name != plotPrefork || !rows[0].cfg.Preload.Auto {
		t.Errorf("quick plot rows %+v, want the pre-forked one with the default preload", rows)
	}
	full := newBenchmark(Options{})
	got = []int{full.helloRuns, full.idleRuns, full.warmup, full.opts.HumanEvalPrograms, full.plotRuns, full.launchRuns}
	if want := []int{200, 100, 10, 0, 10, 100}; !slices.Equal(got, want) {
		t.Errorf("full counts %v, want %v", got, want)
	}
	if full.launchGap != 200*time.Millisecond {
		t.Errorf("staggered launches %v apart, want 200ms as ComputeSDK's", full.launchGap)
	}
}

// TestPreloadOffRow: the pre-forked row is measured again without the
// preload where the configured preload imports something, and skipped with
// one line saying why where it would import nothing.
func TestPreloadOffRow(t *testing.T) {
	tests := []struct {
		name    string
		preload sandbox.Preload
		plot    string // "" when python has numpy and matplotlib
		want    bool
		skipped string
	}{
		{"default, python has them", sandbox.DefaultPreload, "", true, ""},
		{"default, python lacks them", sandbox.DefaultPreload, "no numpy", false, "prefork with RUNBLOCK_PRELOAD=off"},
		{"explicit", sandbox.Preload{Modules: []string{"json"}}, "no numpy", true, ""},
		{"off", sandbox.Preload{}, "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBenchmark(Options{Executor: sandbox.Config{Preload: tt.preload}})
			b.report = &Report{}
			rows := b.executorRows(tt.plot)
			last := rows[len(rows)-1]
			if got := last.row.Name == rowPreforkOff; got != tt.want {
				t.Fatalf("rows end with %q, want the preload-off row: %v", last.row.Name, tt.want)
			}
			if tt.want && (len(last.cfg.Preload.Modules) != 0 || last.cfg.Pool != b.pool || last.cfg.DisableForkServer) {
				t.Errorf("preload-off row config %+v, want the pre-forked one without a preload", last.cfg)
			}
			var skipped string
			for _, sk := range b.report.Skipped {
				skipped += sk.Part
			}
			if skipped != tt.skipped {
				t.Errorf("skipped %q, want %q", skipped, tt.skipped)
			}
			mem := b.memoryRows(tt.plot)
			last = mem[len(mem)-1]
			if got := last.row.Name == rowForkOff; got != tt.want {
				t.Fatalf("memory rows end with %q, want the fork row without the preload: %v", last.row.Name, tt.want)
			}
			if tt.want && (len(last.cfg.Preload.Modules) != 0 || last.cfg.Pool != 0 || last.cfg.DisableForkServer) {
				t.Errorf("fork preload-off memory row config %+v, want the fork one without a preload", last.cfg)
			}
		})
	}
}

// TestHumanEvalInTurn: HumanEval runs each concurrency in rounds, the rows
// in turn in each round (not one row's rounds back to back), and a program
// that failed in any round counts as failed, whichever round was fastest.
func TestHumanEvalInTurn(t *testing.T) {
	b := newBenchmark(Options{Concurrency: 2})
	b.report = &Report{}
	b.programs = []string{"p0", "p1", "p2"}
	var (
		mu    sync.Mutex
		order []string
		calls = map[string]int{}
	)
	row := func(name string, failsIn int) *contender {
		return &contender{row: Row{Name: name, Label: name}, run: func(_ context.Context, code string) (outcome, error) {
			mu.Lock()
			defer mu.Unlock()
			calls[name]++
			round := (calls[name]-1)/len(b.programs)%humanEvalRounds + 1
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			return outcome{ok: !(code == "p1" && round == failsIn)}, nil
		}}
	}
	// The machine's CPU, as each phase reads it before and after: 30
	// ticks busy of 40 in each phase.
	var reads int64
	b.cpu = func() (procstat.CPUTimes, bool) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return procstat.CPUTimes{Busy: reads / 2 * 30, All: reads / 2 * 40}, true
	}
	cs := []*contender{row("a", 2), row("b", 0)}
	b.humanEvalInTurn(context.Background(), cs)
	// Each concurrency: a, b, then a, b again.
	if want := []string{"a", "b", "a", "b", "a", "b", "a", "b"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	for _, c := range cs {
		if len(c.row.HumanEval) != 2 {
			t.Fatalf("row %s: %d figures, want one per concurrency", c.row.Name, len(c.row.HumanEval))
		}
		want := 3
		if c.row.Name == "a" {
			want = 2 // p1 failed in its second round
		}
		for _, s := range c.row.HumanEval {
			if s.Passed != want || s.Runs != 3 {
				t.Errorf("row %s at c%d: %d of %d passed, want %d of 3", c.row.Name, s.Concurrency, s.Passed, s.Runs, want)
			}
			// 30 ticks of 10 ms for 3 programs; 30 of 40 busy.
			if s.CPUMSPerRun != 100 || s.BusyPercent != 75 {
				t.Errorf("row %s at c%d: CPU %v ms a run, %v%% busy; want 100, 75", c.row.Name, s.Concurrency, s.CPUMSPerRun, s.BusyPercent)
			}
		}
	}
}

// TestNewWarmExecutorIsWarm: the executor a row measures has its
// preloaded fork server up when newWarmExecutor returns, not still
// starting behind sandbox.New (the idle-sessions row once measured
// sessions forked from the plain one).
func TestNewWarmExecutorIsWarm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes; skipped with -short")
	}
	ex, _, err := newWarmExecutor(t.Context(), sandbox.Config{Preload: sandbox.Preload{Modules: []string{"json"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ex.Close)
	fs := ex.Isolation().ForkServer
	if !fs.Active {
		t.Skipf("no fork server here, so nothing to warm: %s", fs.Detail)
	}
	if !slices.Equal(fs.Preloaded, []string{"json"}) {
		t.Errorf("preloaded %q (%s), want the preloaded fork server up", fs.Preloaded, fs.Detail)
	}
}

// TestMachine: the report names the first CPU's model and the kernel, and
// the kernel alone where the CPU cannot be read.
func TestMachine(t *testing.T) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	kernel := unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	cpuinfo := filepath.Join(t.TempDir(), "cpuinfo")
	if err := os.WriteFile(cpuinfo, []byte("processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: Other CPU\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := machine(cpuinfo), "Test CPU 9000, "+kernel; got != want {
		t.Errorf("machine = %q, want %q", got, want)
	}
	if got := machine(filepath.Join(t.TempDir(), "absent")); got != kernel {
		t.Errorf("machine without cpuinfo = %q, want %q", got, kernel)
	}
}
