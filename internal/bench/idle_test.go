package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTicksOf reads each process's ticks from a proc tree and leaves out
// one that is gone.
func TestTicksOf(t *testing.T) {
	proc := t.TempDir()
	for pid, stat := range map[string]string{
		"10": "10 (runblock) S 1 10 10 0 -1 0 0 0 0 0 40 2 0 0",
		"11": "11 (python3) S 10 11 11 0 -1 0 0 0 0 0 3 4 0 0",
	} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := ticksOf(proc, []int{10, 11, 12})
	if len(got) != 2 || got[10] != 42 || got[11] != 7 {
		t.Errorf("ticksOf = %v, want map[10:42 11:7]", got)
	}
}

// TestIdleSessionsFigures: the CPU share is the ticks the tree used in
// the window (a process born in it counts all its ticks, one gone counts
// none) over the window, in % of one core at 100 ticks a second; the
// cells' figures are their outcome's, the percentiles nearest-rank of
// those that answered.
func TestIdleSessionsFigures(t *testing.T) {
	var m IdleSessions
	m.setCPU(map[int]int64{1: 100, 2: 50, 3: 9}, map[int]int64{1: 110, 2: 55, 4: 5}, 10*time.Second)
	if m.CPUTicks != 20 || m.CPUPercent != 2 || m.WindowS != 10 {
		t.Errorf("setCPU: %d ticks, %g%% over %g s; want 20 ticks, 2%% over 10 s", m.CPUTicks, m.CPUPercent, m.WindowS)
	}
	cells := launched{runs: 101, ok: 100}
	for i := 100; i >= 1; i-- { // unsorted; the cell that failed has none
		cells.latencies = append(cells.latencies, time.Duration(i)*time.Millisecond)
	}
	m.setCells(cells)
	if m.Cells != 101 || m.OK != 100 || m.CellP50MS != 50 || m.CellP99MS != 99 {
		t.Errorf("setCells: %d/%d ok, p50 %g ms, p99 %g ms; want 100/101 ok, 50 and 99", m.OK, m.Cells, m.CellP50MS, m.CellP99MS)
	}
}

// TestIdleSessionsCheck: the row meets its target only with at least 500
// sessions, every figure within its bound (the PSS of the sandboxes and
// the service together) and every cell answered.
func TestIdleSessionsCheck(t *testing.T) {
	met := IdleSessions{Sessions: 500, CPUPercent: 1.5, PSSMiB: 1400, ServicePSSMiB: 100, Cells: 200, OK: 200, CellP99MS: 8}
	for _, c := range []struct {
		name   string
		change func(m *IdleSessions)
		ok     bool
		detail string
	}{
		{"met", func(*IdleSessions) {}, true, "500 sessions: 1.50% of a core"},
		{"too much CPU", func(m *IdleSessions) { m.CPUPercent = 2.5 }, false, "2.50% of a core"},
		{"too much memory with the service's", func(m *IdleSessions) { m.ServicePSSMiB = 200 }, false, "1600 MiB PSS"},
		{"a slow tail", func(m *IdleSessions) { m.CellP99MS = 12 }, false, "p99 12.00 ms"},
		{"a cell failed", func(m *IdleSessions) { m.OK = 199 }, false, "199/200 ok"},
		{"fewer sessions", func(m *IdleSessions) { m.Sessions, m.PSSMiB = 100, 200 }, false, "fewer than 500"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := met
			c.change(&m)
			got := m.check()
			if !got.measured || got.ok != c.ok || !strings.Contains(got.detail, c.detail) {
				t.Errorf("check = %+v; want ok %v with %q", got, c.ok, c.detail)
			}
		})
	}
	var none *IdleSessions
	if got := none.check(); got.measured {
		t.Errorf("an unmeasured row is judged: %+v", got)
	}
}
