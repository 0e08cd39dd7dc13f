package procstat

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/internal/eventually"
)

// TestParse: the fields are counted past the last ')', whatever the
// command name holds, and a field that is cut off or no number is
// refused.
func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, text      string
		state           byte
		ppid, ticks     int64
		ppidOK, ticksOK bool
	}{
		{"plain", "42 (python3) S 7 42 42 0 -1 4194560 1 0 0 0 10 5 0 0", 'S', 7, 15, true, true},
		{"spaces and parentheses in the name", "42 (a (b) c) ) Z 9 1 1 0 -1 0 0 0 0 0 3 4 0 0", 'Z', 9, 7, true, true},
		{"init", "1 (runblock) S 0 1 1 0 -1", 'S', 0, 0, true, false},
		{"cut short", "42 (x) R 3", 'R', 3, 0, true, false},
		{"no name", "77 x S 1", 0, 0, 0, false, false},
		{"ticks no number", "77 (x) S 1 77 77 0 -1 0 0 0 0 0 five 1", 'S', 1, 0, true, false},
		{"parent no number", "77 (x) S one 1", 'S', 0, 0, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := Parse([]byte(tt.text))
			ppid, okP := s.Int(4)
			ticks, okT := s.CPUTicks()
			if s.State() != tt.state || okP != tt.ppidOK || ppid != tt.ppid || okT != tt.ticksOK || tt.ticksOK && ticks != tt.ticks {
				t.Errorf("state %q ppid %d (%v) ticks %d (%v), want %q %d (%v) %d (%v)",
					s.State(), ppid, okP, ticks, okT, tt.state, tt.ppid, tt.ppidOK, tt.ticks, tt.ticksOK)
			}
		})
	}
}

// TestRead: this process's own stat names its parent.
func TestRead(t *testing.T) {
	s, err := Read(filepath.Join("/proc", strconv.Itoa(os.Getpid())))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if ppid, ok := s.Int(4); !ok || ppid != int64(os.Getppid()) {
		t.Errorf("parent %d (%v), want %d", ppid, ok, os.Getppid())
	}
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("read a stat where there is none")
	}
}

// TestReadAllocates: reading a stat allocates its path (twice: as a C
// string too) and its text, no more (the service reads one at every
// cell's end of a session); the race detector's build moves its buffer
// to the heap too.
func TestReadAllocates(t *testing.T) {
	dir := filepath.Join("/proc", strconv.Itoa(os.Getpid()))
	if _, err := Read(dir); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = Read(dir) }); n > 4 {
		t.Errorf("a read allocates %.0f times, want at most 4", n)
	}
}

// TestFileReadsAgain: an open stat file follows its process, stopped
// and continued, and fails once the process is gone.
func TestFileReadsAgain(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to watch: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	f, err := Open(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid)))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	state := func() byte { s, _ := f.Read(); return s.State() }
	for _, step := range []struct {
		sig  syscall.Signal
		want byte
	}{{syscall.SIGSTOP, 'T'}, {syscall.SIGCONT, 'S'}} {
		if err := cmd.Process.Signal(step.sig); err != nil {
			t.Fatal(err)
		}
		if !eventually.Poll(ctx, func() bool { return state() == step.want }) {
			t.Fatalf("after %v the state stays %q, want %q", step.sig, state(), step.want)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if s, err := f.Read(); err == nil {
		t.Errorf("read the stat of a process gone: %q", s)
	}
}

func TestParseCPUTimes(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want CPUTimes
		ok   bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"a kernel's", "cpu  100 20 30 400 5 6 7 8 9 0\ncpu0 50 10 15 200 2 3 3 4 4 0\n", CPUTimes{Busy: 163, All: 576}, true},
		{"no guest fields", "cpu 1 2 3 4 5 6 7 8\n", CPUTimes{Busy: 19, All: 36}, true},
		{"a CPU's line first", "cpu0 1 2 3 4 5 6 7 8\n", CPUTimes{}, false},
		{"cut short", "cpu 1 2 3 4 5 6 7\n", CPUTimes{}, false},
		{"not a number", "cpu 1 2 x 4 5 6 7 8\n", CPUTimes{}, false},
		{"negative", "cpu 1 2 -3 4 5 6 7 8\n", CPUTimes{}, false},
		{"empty", "", CPUTimes{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseCPUTimes(tt.stat)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseCPUTimes = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestReadCPUTimes reads this machine's /proc/stat, where there is one.
func TestReadCPUTimes(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat here")
	}
	got, ok := ReadCPUTimes("/proc/stat")
	if !ok || got.Busy <= 0 || got.All < got.Busy {
		t.Errorf("ReadCPUTimes(/proc/stat) = %+v, %v; want busy > 0 and all >= busy", got, ok)
	}
	if _, ok := ReadCPUTimes(t.TempDir() + "/stat"); ok {
		t.Error("ReadCPUTimes of a missing file: ok")
	}
}
