package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor/sandbox"
)

// TestMeasureSmoke runs the whole bench for real with tiny counts: bare
// python, the executor cold and pooled, a few HumanEval programs and a short
// flood in a child process. It checks what ran, never how fast.
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
		SkipOriginal:      true,
		SkipPlot:          true, // TestPlotRows
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

	for _, name := range []string{rowBare, rowCold, rowPool} {
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
		for _, name := range []string{rowBare, rowCold, rowPool} {
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

	t.Run("flood", func(t *testing.T) {
		f := r.Flood
		if f == nil {
			t.Fatal("flood not measured")
		}
		if !f.Timeout || f.OutputLimit {
			t.Errorf("flood ended with timeout=%v output_limit=%v, want a timeout only", f.Timeout, f.OutputLimit)
		}
		if f.KeptBytes > 4096 || f.StdoutBytes <= int64(f.KeptBytes) {
			t.Errorf("flood kept %d of %d bytes, want at most 4096 of more", f.KeptBytes, f.StdoutBytes)
		}
		if f.PeakRSSMiB <= 0 || f.PeakRSSMiB < f.BaselineRSSMiB {
			t.Errorf("flood RSS: peak %v MiB, baseline %v MiB", f.PeakRSSMiB, f.BaselineRSSMiB)
		}
	})

	if len(r.Targets) != 4 {
		t.Fatalf("%d targets, want 4", len(r.Targets))
	}
	if s := r.Targets[2].Status; s != statusNA {
		t.Errorf("HumanEval target without the original = %s, want n/a", s)
	}

	var text, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "executor pool (2)") {
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
// preloaded, with the Debian interpreter that has numpy and matplotlib.
func TestPlotRows(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes; skipped with -short")
	}
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import numpy, matplotlib").CombinedOutput(); err != nil {
		t.Skipf("needs %s with numpy and matplotlib (apt-get install python3-numpy python3-matplotlib): %v %s", python, err, out)
	}
	b := newBenchmark(Options{PlotRuns: 2, PlotGap: 500 * time.Millisecond,
		// 512 MiB until RLIMIT_AS becomes a loose backstop (issue 11).
		Executor: sandbox.Config{Python: python, Timeout: 30 * time.Second, MemoryBytes: 512 << 20}})
	b.report = &Report{}
	rows := b.plotRows(context.Background())
	if len(rows) != 3 {
		t.Fatalf("%d plot rows, want 3", len(rows))
	}
	for _, row := range rows {
		if row.Error != "" || row.OK != 2 || row.P50MS <= 0 {
			t.Errorf("%s: %+v", row.Label, row)
		}
	}
}
