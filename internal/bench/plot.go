package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

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

// plotPreload is RUNBLOCK_PRELOAD of the preloaded row.
var plotPreload = []string{"numpy", "matplotlib.pyplot"}

// Plot row names, used as keys by the targets.
const (
	plotCold           = "cold"
	plotPool           = "pool"
	plotPoolPreload    = "pool+preload"
	plotForkPreload    = "fork+preload"
	plotPreforkPreload = "prefork+preload"
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

// plotRows measures the plot snippet cold, pooled, and pooled with
// numpy and matplotlib.pyplot preloaded, every sandbox started from
// scratch; and with the fork server preloading them, forked cold and
// pre-forked.
func (b *benchmark) plotRows(ctx context.Context) []PlotRow {
	pooled := b.coldConfig()
	pooled.Pool = 1
	preloaded := pooled
	preloaded.Preload = plotPreload
	fork := b.forkConfig()
	fork.Preload = plotPreload
	prefork := fork
	prefork.Pool = 1
	preload := ", RUNBLOCK_PRELOAD=" + strings.Join(plotPreload, ",")
	rows := []struct {
		name, label string
		cfg         sandbox.Config
	}{
		{plotCold, coldLabel, b.coldConfig()},
		{plotPool, "executor pool (1)", pooled},
		{plotPoolPreload, "executor pool (1)" + preload, preloaded},
		{plotForkPreload, forkLabel + preload, fork},
		{plotPreforkPreload, "executor prefork (1)" + preload, prefork},
	}
	var out []PlotRow
	for _, r := range rows {
		row := PlotRow{Name: r.name, Label: r.label, Runs: b.plotRuns}
		b.log.Info("bench: plot", "row", r.label, "runs", b.plotRuns)
		ex, err := sandbox.New(ctx, r.cfg)
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
			ok := res.Success && res.Stdout == "ok\n" && len(res.Files) == 1 && bytes.HasPrefix(res.Files[0].Content, []byte("\x89PNG"))
			if !ok && why == "" {
				why = cmp.Or(res.Error, fmt.Sprintf("stdout %.40q, %d files", res.Stdout, len(res.Files)))
			}
			return ok, nil
		}
		// Warm-up: the pool's first sandbox, the page cache.
		if _, err = run(ctx, 0); err == nil {
			select {
			case <-time.After(b.plotGap):
			case <-ctx.Done():
			}
			var p phase
			if p, err = measure(ctx, b.plotRuns, 1, b.plotGap, run); err == nil {
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
