package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/bench"
)

// TestBenchOptions: bench's flags land in bench.Options over the
// executor's settings, and a bad flag or a stray argument is refused with
// the usage, never a run.
func TestBenchOptions(t *testing.T) {
	ex := sandbox.Config{Python: "/usr/bin/python3", Pool: 3}
	tests := []struct {
		name    string
		args    []string
		want    func(o bench.Options) bool
		wantErr string // in stderr
	}{
		{"none", nil, func(o bench.Options) bool {
			return !o.Quick && !o.JSON && !o.SkipPlot && !o.SkipLaunch && o.LaunchRuns == 0 && o.Executor.Python == "/usr/bin/python3" && o.Executor.Pool == 3
		}, ""},
		{"quick", []string{"--quick"}, func(o bench.Options) bool { return o.Quick && !o.JSON }, ""},
		{"quick json", []string{"-quick", "-json"}, func(o bench.Options) bool { return o.Quick && o.JSON }, ""},
		{"skips", []string{"--skip-original", "--skip-flood", "--skip-plot", "--skip-launch", "--skip-start"}, func(o bench.Options) bool {
			return o.SkipOriginal && o.SkipFlood && o.SkipPlot && o.SkipLaunch && o.SkipStart
		}, ""},
		{"counts", []string{"--concurrency", "4", "--hello-runs", "50", "--programs", "20", "--plot-runs", "3", "--launch-runs", "30", "--start-runs", "4", "--shared", "/tmp/s"}, func(o bench.Options) bool {
			return o.Concurrency == 4 && o.HelloRuns == 50 && o.HumanEvalPrograms == 20 && o.PlotRuns == 3 && o.LaunchRuns == 30 && o.StartRuns == 4 && o.SharedDir == "/tmp/s"
		}, ""},
		{"unknown flag", []string{"--fast"}, nil, "flag provided but not defined: -fast"},
		{"not a number", []string{"--launch-runs", "many"}, nil, "invalid value \"many\" for flag -launch-runs"},
		{"stray argument", []string{"--quick", "now"}, nil, "unexpected argument \"now\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := benchOptions(ex, slog.New(slog.DiscardHandler), tt.args, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(stderr.String(), tt.wantErr) || !strings.Contains(stderr.String(), "-quick") {
					t.Fatalf("err %v, stderr %q: want an error, %q and the usage", err, stderr.String(), tt.wantErr)
				}
				return
			}
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("err %v, stderr %q", err, stderr.String())
			}
			if !tt.want(o) {
				t.Errorf("options %+v", o)
			}
		})
	}
}
