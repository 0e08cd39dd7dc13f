package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/internal/procstat"
)

// IdleMemory is what one executor holds while warm and idle: the summed
// proportional set size (PSS, shared pages split between the processes
// sharing them) and RSS of the processes it added below the bench process:
// its pre-started sandboxes, the fork server, pre-forked children. Processes
// in the sandboxes' PID namespaces are found on the host's /proc.
type IdleMemory struct {
	Row       string  `json:"row"`
	Label     string  `json:"label"`
	Processes int     `json:"processes"`
	PSSMiB    float64 `json:"pss_mib"`
	RSSMiB    float64 `json:"rss_mib"`
	Error     string  `json:"error,omitempty"`
}

// How long the process tree below the bench must stay the same before an
// executor counts as idle (its pool refilled), and the most to wait for it.
const (
	settlePoll   = 50 * time.Millisecond
	settleStable = 500 * time.Millisecond
	settleMax    = 20 * time.Second
)

// idleMemory starts an executor with cfg alone, warms it up, waits until
// its processes settle and sums their memory. Processes already below the
// bench process before it started (another executor's, still exiting) are
// not counted.
func (b *benchmark) idleMemory(ctx context.Context, name, label string, cfg sandbox.Config) IdleMemory {
	m := IdleMemory{Row: name, Label: label}
	b.log.Info("bench: idle memory", "row", name, "pool", cfg.Pool)
	before, err := descendants("/proc", os.Getpid())
	if err != nil {
		m.Error = err.Error()
		return m
	}
	ex, _, err := newWarmExecutor(ctx, cfg)
	if err != nil {
		m.Error = err.Error()
		b.note("%s: idle memory not measured: %v", label, err)
		return m
	}
	defer ex.Close()
	b.forkServer(&m.Label, cfg, ex)
	c := &contender{row: Row{Name: name, Label: m.Label}, run: executorRun(ex)}
	if !b.warm(ctx, c) {
		m.Error = c.row.Error
		return m
	}
	pids, err := settle(ctx, "/proc", os.Getpid())
	if err != nil {
		m.Error = err.Error()
		if ctx.Err() != nil {
			return m
		}
		b.note("%s: idle memory: %v", m.Label, err)
	}
	pids = slices.DeleteFunc(pids, func(pid int) bool { return slices.Contains(before, pid) })
	n, pss, rss := memoryOf("/proc", pids)
	m.Processes, m.PSSMiB, m.RSSMiB = n, float64(pss)/1024, float64(rss)/1024
	return m
}

// settle polls the descendants of root until they have been the same for
// settleStable, and returns them; past settleMax it returns the last set
// with an error saying so.
func settle(ctx context.Context, proc string, root int) ([]int, error) {
	deadline := time.Now().Add(settleMax)
	var (
		last  []int
		since time.Time
	)
	for {
		pids, err := descendants(proc, root)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		if !slices.Equal(pids, last) {
			last, since = pids, now
		}
		switch {
		case now.Sub(since) >= settleStable:
			return last, nil
		case now.After(deadline):
			return last, fmt.Errorf("processes still changing after %v; measured as they were", settleMax)
		}
		if !pause(ctx, settlePoll) {
			return last, ctx.Err()
		}
	}
}

// descendants returns the pids of every process below root, sorted, read
// from the parent pids in proc/*/stat.
func descendants(proc string, root int) ([]int, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	parents := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		ppid, err := parseStatPPID(string(stat))
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		parents[pid] = ppid
	}
	return below(parents, root), nil
}

// below returns the processes below root in the tree given by each
// process's parent, sorted.
func below(parents map[int]int, root int) []int {
	children := map[int][]int{}
	for _, pid := range slices.Sorted(maps.Keys(parents)) {
		children[parents[pid]] = append(children[parents[pid]], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	slices.Sort(out)
	return out
}

// parseStatPPID reads the parent pid from a /proc/PID/stat text.
func parseStatPPID(stat string) (int, error) {
	ppid, ok := procstat.Parse([]byte(stat)).Int(4)
	if !ok {
		return 0, fmt.Errorf("odd stat %.60q", stat)
	}
	return int(ppid), nil
}

// memoryOf sums the Pss and Rss (kB) of pids from proc/PID/smaps_rollup,
// counting the processes that have memory: one that exited meanwhile or is
// a zombie has none.
func memoryOf(proc string, pids []int) (n int, pssKB, rssKB int64) {
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "smaps_rollup"))
		if err != nil {
			continue
		}
		pss, rss, err := parseRollup(string(b))
		if err != nil {
			continue
		}
		n++
		pssKB += pss
		rssKB += rss
	}
	return n, pssKB, rssKB
}

// errNoRollup is a smaps_rollup text without a Pss line: a zombie's, or a
// kernel thread's.
var errNoRollup = errors.New("no Pss line")

// parseRollup reads the Pss and Rss lines of a smaps_rollup text, in kB.
func parseRollup(s string) (pssKB, rssKB int64, err error) {
	found := false
	for line := range strings.Lines(s) {
		key, rest, ok := strings.Cut(line, ":")
		if !ok || (key != "Pss" && key != "Rss") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("odd line %q", strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("odd line %q: %w", strings.TrimSpace(line), err)
		}
		if key == "Pss" {
			pssKB, found = kb, true
		} else {
			rssKB = kb
		}
	}
	if !found {
		return 0, 0, errNoRollup
	}
	return pssKB, rssKB, nil
}
