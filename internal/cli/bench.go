package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/runblock/runblock/internal/bench"
)

// runBench is `runblock bench`: the side-by-side performance report.
func runBench(ctx context.Context, c *invocation, args []string) int {
	cfg, logger, stdout, stderr := c.cfg, c.logger, c.stdout, c.stderr
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := bench.Options{Executor: cfg.Executor, Logger: logger}
	fs.BoolVar(&opts.JSON, "json", false, "print the report as one JSON object")
	fs.IntVar(&opts.Concurrency, "concurrency", 0, "parallel level measured beside 1 (default NumCPU)")
	fs.IntVar(&opts.HelloRuns, "hello-runs", 0, "print('hello') runs per phase (default 200)")
	fs.IntVar(&opts.HumanEvalPrograms, "programs", 0, "HumanEval programs to run (default all)")
	fs.StringVar(&opts.SharedDir, "shared", "", "directory with reference/ and data/ (default ../shared)")
	fs.BoolVar(&opts.SkipOriginal, "skip-original", false, "do not run the original seed_bench.py")
	fs.BoolVar(&opts.SkipFlood, "skip-flood", false, "do not measure memory under an output flood")
	fs.BoolVar(&opts.SkipPlot, "skip-plot", false, "do not measure the numpy and matplotlib plot snippet")
	fs.IntVar(&opts.PlotRuns, "plot-runs", 0, "runs of the plot snippet per row (default 10)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := bench.Run(ctx, opts, stdout); err != nil {
		fmt.Fprintf(stderr, "runblock bench: %v\n", err)
		return 1
	}
	return 0
}
