package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/bench"
)

// runBench is `runblock bench`: the side-by-side performance report.
func runBench(ctx context.Context, c *invocation, args []string) int {
	opts, err := benchOptions(c.cfg.Executor, c.logger, args, c.stderr)
	if err != nil {
		return 2
	}
	if err := bench.Run(ctx, opts, c.stdout); err != nil {
		fmt.Fprintf(c.stderr, "runblock bench: %v\n", err)
		return 1
	}
	return 0
}

// benchOptions reads bench's flags over the executor's settings; a bad
// flag is reported on stderr, with the usage.
func benchOptions(ex sandbox.Config, logger *slog.Logger, args []string, stderr io.Writer) (bench.Options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := bench.Options{Executor: ex, Logger: logger}
	fs.BoolVar(&opts.Quick, "quick", false, "a first look in under a minute: few runs per row; no original, idle memory or flood")
	fs.BoolVar(&opts.JSON, "json", false, "print the report as one JSON object")
	fs.IntVar(&opts.Concurrency, "concurrency", 0, "parallel level measured beside 1 (default NumCPU)")
	fs.IntVar(&opts.HelloRuns, "hello-runs", 0, "print('hello') runs per phase (default 200)")
	fs.IntVar(&opts.HumanEvalPrograms, "programs", 0, "HumanEval programs to run (default all)")
	fs.StringVar(&opts.SharedDir, "shared", "", "directory with reference/ and data/ (default ../shared)")
	fs.BoolVar(&opts.SkipOriginal, "skip-original", false, "do not run the original seed_bench.py")
	fs.BoolVar(&opts.SkipFlood, "skip-flood", false, "do not measure memory under an output flood")
	fs.BoolVar(&opts.SkipPlot, "skip-plot", false, "do not measure the numpy and matplotlib plot snippet")
	fs.IntVar(&opts.PlotRuns, "plot-runs", 0, "runs of the plot snippet per row (default 10)")
	fs.BoolVar(&opts.SkipLaunch, "skip-launch", false, "do not measure the launch section")
	fs.IntVar(&opts.LaunchRuns, "launch-runs", 0, "launches per pattern of the launch section (default 100)")
	fs.IntVar(&opts.IdleSessions, "idle-sessions", 0, "live sessions the idle-sessions row opens in one executor (default 500)")
	fs.BoolVar(&opts.SkipIdleSessions, "skip-idle-sessions", false, "do not measure what idle live sessions cost")
	fs.BoolVar(&opts.SkipStart, "skip-start", false, "do not measure runblock executor's start")
	fs.IntVar(&opts.StartRuns, "start-runs", 0, "starts of runblock executor, timed to ready and to a first run (default 10)")
	if err := fs.Parse(args); err != nil {
		return bench.Options{}, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintf(stderr, "runblock bench: %v\n", err)
		fs.Usage()
		return bench.Options{}, err
	}
	return opts, nil
}
