package sandbox_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
)

// BenchmarkCellValue: a hello run and a hello cell of a live session,
// as a script, as a cell that prints, and as a cell whose value is shown:
// the difference between value and script is what showing a value costs
// (issue 34: at most 1 ms in a live session).
func BenchmarkCellValue(b *testing.B) {
	e := newExecutor(b, sandbox.Config{})
	for _, c := range []struct {
		name string
		req  executor.Request
	}{
		{"script", executor.Request{Code: "print('hello')", Script: true}},
		{"cell", executor.Request{Code: "print('hello')"}},
		{"value", executor.Request{Code: "'hello'"}},
	} {
		b.Run("run-"+c.name, func(b *testing.B) {
			for b.Loop() {
				if res, err := e.Run(context.Background(), c.req); err != nil || !res.Success {
					b.Fatal(err, res.Stderr)
				}
			}
		})
		b.Run("session-"+c.name, func(b *testing.B) {
			s := startSession(b, e)
			cell(b, s, c.req)
			for b.Loop() {
				if res := cell(b, s, c.req); !res.Success {
					b.Fatal(res.Stderr)
				}
			}
		})
	}
}

// BenchmarkDisplayDataFrame: display() of a 100×20 DataFrame in a live
// session; display-cpu-ms/op is the CPU time the display takes in python
// (its forms made: text/plain, the Table Schema), which the machine's
// load does not inflate as it does the wall time (issue 34: at most
// 20 ms).
func BenchmarkDisplayDataFrame(b *testing.B) {
	if err := exec.Command(debianPython, "-c", "import pandas, numpy").Run(); err != nil {
		b.Skipf("needs %s with pandas and numpy: %v", debianPython, err)
	}
	e := newExecutor(b, sandbox.Config{Python: debianPython})
	s := startSession(b, e)
	cell(b, s, executor.Request{Code: "import time, numpy as np, pandas as pd\ndf = pd.DataFrame(np.arange(2000).reshape(100, 20))\ndisplay(df)"})
	var total float64
	for b.Loop() {
		res := cell(b, s, executor.Request{Code: "t = time.process_time()\ndisplay(df)\nprint(time.process_time() - t)"})
		took, err := strconv.ParseFloat(strings.TrimSpace(res.Stdout), 64)
		if err != nil || len(res.Results) != 1 {
			b.Fatalf("stdout %q, %d results: %s", res.Stdout, len(res.Results), res.Stderr)
		}
		total += took
	}
	b.ReportMetric(total*1000/float64(b.N), "display-cpu-ms/op")
}
