package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
)

// plotCode imports numpy and matplotlib and shows a small plot: what a
// teacher's first snippet does.
const plotCode = `import numpy as np
import matplotlib.pyplot as plt
x = np.linspace(0, 2 * np.pi, 100)
plt.plot(x, np.sin(x))
plt.title("sin")
plt.show()
print("ok")
`

// plotPreload is RUNBLOCK_PRELOAD of the pre-started row.
var plotPreload = sandbox.Preload{Modules: []string{"numpy", "matplotlib.pyplot"}}

// plotOK says whether a run of plotCode worked: "ok" and one PNG.
func plotOK(res executor.Result) bool {
	return res.Success && res.Stdout == "ok\n" && len(res.Files) == 1 && bytes.HasPrefix(res.Files[0].Content, []byte("\x89PNG"))
}

// Plot row names, used as keys by the targets.
const (
	plotCold        = "cold"
	plotPoolPreload = "pool+preload"
	plotFork        = "fork"
	plotPrefork     = "prefork"
)

// PlotRow is the plot snippet on one executor: runs arriving one at a
// time, PlotGapMS apart, so a pool has refilled before each.
type PlotRow struct {
	Name  string  `json:"name"`
	Label string  `json:"label"`
	Runs  int     `json:"runs"`
	OK    int     `json:"ok"`
	P50MS float64 `json:"p50_ms"`
	P90MS float64 `json:"p90_ms"`
	Error string  `json:"error,omitempty"`
	// ForkServer is the executor's fork server.
	ForkServer *sandbox.ForkServerReport `json:"fork_server,omitempty"`
}

// plotConfigs are the plot rows: with no preload, every sandbox started
// from scratch (what the imports cost); pre-started with numpy and
// matplotlib.pyplot imported (the floor a pre-forked run is held to); and
// with the default settings, forked on demand and pre-forked. Quick runs
// measure only the default.
func (b *benchmark) plotConfigs() []executorConfig {
	cold := b.coldConfig()
	cold.Preload = sandbox.Preload{}
	pooled := cold
	pooled.Pool = 1
	pooled.Preload = plotPreload
	fork := b.forkConfig()
	fork.Preload = sandbox.DefaultPreload
	prefork := b.preforkConfig()
	prefork.Preload = sandbox.DefaultPreload
	rows := []executorConfig{
		{Row{Name: plotCold, Label: coldLabel + ", preload off"}, cold},
		{Row{Name: plotPoolPreload, Label: "executor pool (1), RUNBLOCK_PRELOAD=" + strings.Join(plotPreload.Modules, ",")}, pooled},
		{Row{Name: plotFork, Label: forkLabel + ", default preload"}, fork},
		{Row{Name: plotPrefork, Label: b.preforkLabel() + ", default preload"}, prefork},
	}
	if b.opts.Quick {
		return rows[len(rows)-1:]
	}
	return rows
}

// plotRows measures the plot snippet on each of plotConfigs.
func (b *benchmark) plotRows(ctx context.Context) []PlotRow {
	var out []PlotRow
	for _, r := range b.plotConfigs() {
		row := PlotRow{Name: r.row.Name, Label: r.row.Label, Runs: b.plotRuns}
		b.log.Info("bench: plot", "row", row.Label, "runs", b.plotRuns)
		ex, _, err := newWarmExecutor(ctx, r.cfg)
		if err != nil {
			row.Error = err.Error()
			out = append(out, row)
			continue
		}
		row.ForkServer = b.forkServer(&row.Label, r.cfg, ex)
		var why string
		run := func(ctx context.Context, _ int) (bool, error) {
			res, err := ex.Run(ctx, executor.Request{Code: plotCode})
			if err != nil {
				return false, err
			}
			ok := plotOK(res)
			if !ok && why == "" {
				why = cmp.Or(res.Error, fmt.Sprintf("stdout %.40q, %d files", res.Stdout, len(res.Files)))
			}
			return ok, nil
		}
		// Warm-up: the pool's first sandbox, the page cache.
		if _, err = run(ctx, 0); err == nil {
			pause(ctx, b.plotGap)
			var p phase
			if p, err = measure(ctx, b.plotRuns, 1, spaced(b.plotGap), run); err == nil {
				s := summary(1, true, p)
				row.OK, row.P50MS, row.P90MS = s.Passed, s.P50MS, s.P90MS
			}
		}
		if err != nil {
			row.Error = err.Error()
		} else if why != "" {
			row.Error = why
		}
		ex.Close()
		out = append(out, row)
	}
	return out
}
