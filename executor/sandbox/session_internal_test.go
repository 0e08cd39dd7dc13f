//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/internal/eventually"
	"github.com/runblock/runblock/internal/procstat"
)

// TestSessionReducedTiers: a session works on every tier the product
// falls back to (namespaces without Landlock, Landlock or seccomp alone
// without namespaces, and the guard alone), keeps its state and returns
// its files there, and Close removes its host work dir where it has one.
func TestSessionReducedTiers(t *testing.T) {
	for _, set := range append(tiers[1:], layerSet{}) {
		t.Run(set.String(), func(t *testing.T) {
			e := benchExecutor(t, set, 0, false)
			e.plan.caps = protocol.CollectLimits{MaxFiles: e.cfg.MaxFiles, MaxBytes: e.cfg.MaxFilesBytes}
			live, err := e.StartSession(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			s := live.(*sessionSandbox)
			for i, c := range []struct {
				code, stdout string
				files        int
				ok           bool
			}{
				{"x = 41\nopen('f.txt', 'w').write('F')", "", 1, true},
				{"print(x + 1)", "42\n", 0, true},
				{"1 / 0", "", 0, false},
				{"print(x)", "41\n", 0, true},
			} {
				res, err := s.Run(context.Background(), executor.Request{Code: c.code})
				if err != nil || res.Success != c.ok || res.Stdout != c.stdout || len(res.Files) != c.files {
					t.Fatalf("cell %d: %+v, %v", i+1, res, err)
				}
			}
			dir := s.p.hostDir
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); dir != "" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the session's work dir %s is left behind: %v", dir, err)
			}
			if s.Alive() {
				t.Error("a closed session is alive")
			}
		})
	}
}

// BenchmarkSessionCell: a hello cell in a live session (no fork, no
// sandbox start: python is there, waiting), beside a fresh run of the
// same snippet in a pre-forked sandbox of the pool, as Run takes it. The
// cell also reports the CPU its init (the fork server's) and the fork
// server's python (the session python's parent) spend on it.
func BenchmarkSessionCell(b *testing.B) {
	hello := executor.Request{Code: "print('hello')"}
	b.Run("session-cell", func(b *testing.B) {
		e := benchExecutor(b, tiers[0], 0, true)
		s, err := e.StartSession(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		live := e.fork.current()
		init := "/proc/" + strconv.Itoa(live.cmd.Process.Pid)
		zygote := "/proc/" + strconv.Itoa(forkServerPython(b, live.cmd.Process.Pid))
		before, zygoteBefore := cpuTicks(b, init), cpuTicks(b, zygote)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if res, err := s.Run(context.Background(), hello); err != nil || res.Stdout != "hello\n" {
				b.Fatalf("%+v %v", res, err)
			}
			lat = append(lat, time.Since(start))
		}
		reportLatency(b, lat)
		b.ReportMetric(float64(cpuTicks(b, init)-before)*1000/procstat.ClockTicks/float64(b.N), "init-cpu-ms/op")
		b.ReportMetric(float64(cpuTicks(b, zygote)-zygoteBefore)*1000/procstat.ClockTicks/float64(b.N), "forkserver-python-cpu-ms/op")
	})
	b.Run("fresh-prefork-run", func(b *testing.B) {
		e := benchExecutor(b, tiers[0], 1, true)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			// As a run that finds its pooled sandbox ready.
			p := <-e.pool.idle
			start := time.Now()
			if res, err := p.run(context.Background(), hello); err != nil || res.Stdout != "hello\n" {
				b.Fatalf("%+v %v", res, err)
			}
			lat = append(lat, time.Since(start))
		}
		reportLatency(b, lat)
	})
}

// BenchmarkSessionReplay: what rebuilding a session costs: a session
// started (a fork of the fork server) and ten small cells run in it, as
// a replay of ten earlier cells does.
func BenchmarkSessionReplay(b *testing.B) {
	e := benchExecutor(b, tiers[0], 0, true)
	cells := []string{
		"import math", "x = 1", "def f(n):\n    return n * 2", "y = f(x)", "xs = [f(i) for i in range(100)]",
		"total = sum(xs)", "import json", "doc = json.dumps({'total': total})", "data = {'a': 1, 'b': 2}", "print(total, y)",
	}
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		s, err := e.StartSession(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, code := range cells {
			if res, err := s.Run(context.Background(), executor.Request{Code: code}); err != nil || !res.Success {
				b.Fatalf("%q: %+v %v", code, res, err)
			}
		}
		lat = append(lat, time.Since(start))
		_ = s.Close()
	}
	reportLatency(b, lat)
}

// TestSessionForkServerKilled: a session whose fork server is killed,
// idle or in a cell, ends: the cell under it is the service's error,
// never a partial result, the session is no longer alive, its next cell
// is refused, and Close releases it.
func TestSessionForkServerKilled(t *testing.T) {
	for _, during := range []bool{false, true} {
		e := newForking(t, Config{})
		old := e.fork.current()
		live, err := e.StartSession(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res, err := live.Run(context.Background(), executor.Request{Code: "x = 1"}); err != nil || !res.Success {
			t.Fatalf("first cell: %+v %v", res, err)
		}
		type outcome struct {
			res executor.Result
			err error
		}
		done := make(chan outcome, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if during {
			marker := fmt.Sprintf("rbsess%d", time.Now().UnixNano()%1e6)
			go func() {
				res, err := live.Run(context.Background(), executor.Request{
					Code: fmt.Sprintf("import ctypes, time\nctypes.CDLL(None).prctl(15, b%q)\ntime.sleep(3)\nprint('done')", marker)})
				done <- outcome{res, err}
			}()
			if !eventually.Poll(ctx, func() bool { return len(leftoverPIDs(marker)) > 0 }) {
				t.Fatal("the cell never ran")
			}
		}
		if err := old.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if during {
			select {
			case o := <-done:
				if o.err == nil {
					t.Errorf("the cell under the killed fork server: a result %+v, want the service's error", o.res)
				}
			case <-ctx.Done():
				t.Fatal("the cell hangs after its fork server was killed")
			}
		}
		select {
		case <-old.done:
		case <-ctx.Done():
			t.Fatal("the killed fork server was never reaped")
		}
		cancel()
		if live.Alive() {
			t.Error("a session of a killed fork server is alive")
		}
		if _, err := live.Run(context.Background(), executor.Request{Code: "print(x)"}); err == nil {
			t.Error("a session of a killed fork server ran a cell")
		}
		if err := live.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMarkerHold: a cell's output is held back only where it could begin
// an end marker, so its live view lags by no more than a marker's start.
func TestMarkerHold(t *testing.T) {
	open := protocol.SessionMarkOpen
	for _, tc := range []struct {
		data string
		want int
	}{
		{"warned\n", 0},
		{"abc\x00", 1},
		{"abc\x00x", 0},
		{"abc" + open[:5], 5},
		{"abc" + open + "0a1f", len(open) + 4},
		{"abc" + open + "0a1g", 0},
		{"\x00\x00" + open[:3], 3},
	} {
		if got := markerHold([]byte(tc.data)); got != tc.want {
			t.Errorf("markerHold(%q) = %d, want %d", tc.data, got, tc.want)
		}
	}
}

// cpuTicks is the user and system CPU time of the process at dir
// (/proc/PID), all its threads', in ticks.
func cpuTicks(b *testing.B, dir string) int64 {
	b.Helper()
	st, err := procstat.Read(dir)
	if err != nil {
		b.Fatal(err)
	}
	ticks, ok := st.CPUTicks()
	if !ok {
		b.Fatalf("no CPU times in %s/stat: %q", dir, st)
	}
	return ticks
}
