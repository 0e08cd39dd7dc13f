package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/procstat"
)

// The idle-sessions row: what live sessions cost while they wait for a
// cell. One executor with the default settings opens N sessions (each a
// sandbox of its own, forked from the preloaded fork server); once its
// processes settle, the CPU time of the executor's whole process tree
// (the bench process and every process below it, from /proc) is read
// over a window, and the proportional memory (PSS) of the processes the
// sessions added is summed; then cells run one after another, each in a
// session drawn at random, timed from the request to the answer.

// IdleSessions is the idle-sessions row.
type IdleSessions struct {
	Sessions int `json:"sessions"`
	// OpenS is how long opening them took, one after another.
	OpenS float64 `json:"open_s"`
	// Processes are the executor's processes below the bench process.
	Processes int `json:"processes"`
	// WindowS is the window the CPU time was read over; CPUPercent the
	// share of one core the executor's process tree used in it, all its
	// processes together.
	WindowS    float64 `json:"window_s"`
	CPUTicks   int64   `json:"cpu_ticks"`
	CPUPercent float64 `json:"cpu_percent"`
	// PSSMiB is the proportional memory of the processes the executor
	// added (its fork servers, the sessions' sandboxes); ServicePSSMiB the
	// bench process's own, which holds the service's side of each session.
	PSSMiB        float64 `json:"pss_mib"`
	ServicePSSMiB float64 `json:"service_pss_mib"`
	// Cells ran in random sessions, one after another; OK answered.
	Cells     int     `json:"cells"`
	OK        int     `json:"ok"`
	CellP50MS float64 `json:"cell_p50_ms"`
	CellP99MS float64 `json:"cell_p99_ms"`
	Error     string  `json:"error,omitempty"`
}

// Defaults of the row: sessions opened, the CPU window, cells run.
const (
	idleSessionsDefault = 500
	idleWindowDefault   = 10 * time.Second
	idleCellsDefault    = 200
)

// idleSessions measures the idle-sessions row with n sessions.
func (b *benchmark) idleSessions(ctx context.Context, n int, window time.Duration, cells int) *IdleSessions {
	m := &IdleSessions{Sessions: n}
	b.log.Info("bench: idle sessions", "sessions", n)
	before, err := descendants("/proc", os.Getpid())
	if err != nil {
		m.Error = err.Error()
		return m
	}
	cfg := b.opts.Executor
	if cfg.Logger == nil {
		cfg.Logger = b.log
	}
	ex, _, err := newWarmExecutor(ctx, cfg)
	if err != nil {
		m.Error = err.Error()
		b.note("idle sessions not measured: %v", err)
		return m
	}
	defer ex.Close()
	began := time.Now()
	var live []executor.LiveSession
	defer func() {
		var wg sync.WaitGroup
		for _, s := range live {
			wg.Go(func() { _ = s.Close() })
		}
		wg.Wait()
	}()
	for range n {
		s, err := ex.StartSession(ctx)
		if err != nil {
			m.Error = fmt.Sprintf("session %d of %d: %v", len(live)+1, n, err)
			break
		}
		live = append(live, s)
	}
	m.Sessions, m.OpenS = len(live), time.Since(began).Seconds()
	if len(live) == 0 {
		return m
	}
	pids, err := settle(ctx, "/proc", os.Getpid())
	if err != nil {
		b.note("idle sessions: %v", err)
	}
	pids = slices.DeleteFunc(pids, func(pid int) bool { return slices.Contains(before, pid) })
	tree := append([]int{os.Getpid()}, pids...)
	first := ticksOf("/proc", tree)
	if !pause(ctx, window) {
		m.Error = ctx.Err().Error()
		return m
	}
	m.setCPU(first, ticksOf("/proc", tree), window)
	procs, pss, _ := memoryOf("/proc", pids)
	_, self, _ := memoryOf("/proc", []int{os.Getpid()})
	m.Processes, m.PSSMiB, m.ServicePSSMiB = procs, float64(pss)/1024, float64(self)/1024

	// The cells go one after another, timed as the launch rows time
	// theirs (launchPattern).
	rng := rand.New(rand.NewPCG(1, uint64(len(live))))
	cell := func(ctx context.Context, _ int) (bool, error) {
		res, err := live[rng.IntN(len(live))].Run(ctx, executor.Request{Code: helloCode})
		return err == nil && res.Stdout == helloOut, nil
	}
	got, err := launchPattern(ctx, patternSequential, cells, 0, cell)
	if err != nil {
		m.Error = err.Error()
	}
	m.setCells(got)
	return m
}

// setCPU sets the CPU figures from the ticks the tree used up to the start
// and the end of a window.
func (m *IdleSessions) setCPU(first, last map[int]int64, window time.Duration) {
	m.CPUTicks = 0
	for pid, t := range last {
		m.CPUTicks += t - first[pid] // a process born in the window: all its ticks
	}
	m.WindowS = window.Seconds()
	if window > 0 {
		m.CPUPercent = 100 * float64(m.CPUTicks) / procstat.ClockTicks / window.Seconds()
	}
}

// setCells sets the cells' figures from their outcome, the percentiles
// as a launch row's (launchStats): of the cells that answered.
func (m *IdleSessions) setCells(l launched) {
	s := launchStats("", "", patternSequential, l)
	m.Cells, m.OK, m.CellP50MS, m.CellP99MS = s.Runs, s.OK, s.P50MS, s.P99MS
}

// ticksOf reads the CPU time (user and system, of every thread, in clock
// ticks) each of pids used so far from proc/PID/stat; a process gone is
// left out.
func ticksOf(proc string, pids []int) map[int]int64 {
	ticks := map[int]int64{}
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		if t, ok := procstat.Parse(b).CPUTicks(); ok {
			ticks[pid] = t
		}
	}
	return ticks
}
