package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestBelow(t *testing.T) {
	// 10 is the bench; 11 a pooled init with its python 12; 13 the fork
	// server with a child 14 that has a child 15; 20 is unrelated, with 21.
	parents := map[int]int{1: 0, 10: 1, 11: 10, 12: 11, 13: 10, 14: 13, 15: 14, 20: 1, 21: 20}
	tests := []struct {
		root int
		want []int
	}{
		{10, []int{11, 12, 13, 14, 15}},
		{13, []int{14, 15}},
		{15, nil},
		{99, nil},
	}
	for _, tt := range tests {
		if got := below(parents, tt.root); !slices.Equal(got, tt.want) {
			t.Errorf("below(%d) = %v, want %v", tt.root, got, tt.want)
		}
	}
}

func TestParseRollup(t *testing.T) {
	const real = "55d5c3a9c000-7ffd4b7f5000 ---p 00000000 00:00 0                          [rollup]\n" +
		"Rss:               10404 kB\nPss:                3921 kB\nPss_Dirty:          1712 kB\nPss_Anon:           1660 kB\n" +
		"Shared_Clean:       6560 kB\nSwap:                  0 kB\nSwapPss:               0 kB\n"
	tests := []struct {
		name     string
		text     string
		pss, rss int64
		wantErr  bool
	}{
		{"real layout", real, 3921, 10404, false},
		{"zombie: empty", "", 0, 0, true},
		{"odd unit", "Rss: 10 MB\nPss: 3 kB\n", 0, 0, true},
		{"not a number", "Pss: lots kB\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pss, rss, err := parseRollup(tt.text)
			if (err != nil) != tt.wantErr || pss != tt.pss || rss != tt.rss {
				t.Errorf("parseRollup = %d, %d, %v; want %d, %d, error %v", pss, rss, err, tt.pss, tt.rss, tt.wantErr)
			}
		})
	}
}

// TestDescendantsAndMemory starts a shell that starts a sleep, and expects
// both found below this process with memory of their own; gone once killed.
func TestDescendantsAndMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		t.Skipf("no /proc/self/smaps_rollup here: %v", err)
	}
	before, err := descendants("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "sleep 60 >/dev/null & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	sleeper, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(sleeper); err == nil {
			_ = p.Kill()
		}
	})

	got, err := settle(context.Background(), "/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	got = slices.DeleteFunc(got, func(pid int) bool { return slices.Contains(before, pid) })
	if want := []int{cmd.Process.Pid, sleeper}; !slices.Equal(got, want) {
		t.Fatalf("descendants = %v, want the shell and its sleep %v", got, want)
	}
	n, pss, rss := memoryOf("/proc", got)
	if n != 2 || pss <= 0 || rss < pss {
		t.Errorf("memory of %v: %d processes, Pss %d kB, Rss %d kB", got, n, pss, rss)
	}
	if n, _, _ := memoryOf("/proc", []int{1 << 30}); n != 0 {
		t.Errorf("a process that does not exist counted: %d", n)
	}
}
