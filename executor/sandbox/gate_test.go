package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
)

// TestGuardWaitsForItsGate: where it holds a gate (protocol.FDGate, a
// cold run's init's), the guard goes on only once the gate's other end
// closes: a cold run's init that runs late after the fork still sets
// python's nice value and counts its memory before anything of the run.
// Started here as the tier without a stage starts python, with the gate
// added.
func TestGuardWaitsForItsGate(t *testing.T) {
	pl := guardPlan(t)
	cmd, err := pl.command(context.Background(), pl.spec(limits{Timeout: 10 * time.Second, Memory: 256 << 20}, t.TempDir()), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	pipe := func() (r, w *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	requestR, requestW := pipe()
	statusR, statusW := pipe()
	gateR, gateW := pipe()
	cmd.ExtraFiles = []*os.File{requestR, statusW, gateR}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	requestR.Close()
	statusW.Close()
	gateR.Close()
	if _, err := requestW.Write(pl.py.Code); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(statusR); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	// Python blocks reading the gate before its "ready".
	blocked := fmt.Sprintf("%d 0x%x ", unix.SYS_READ, protocol.FDGate)
	for {
		select {
		case line := <-lines:
			t.Fatalf("the guard said %q before its gate opened", line)
		default:
		}
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", cmd.Process.Pid)); strings.HasPrefix(string(b), blocked) {
			break
		}
		runtime.Gosched()
	}
	gateW.Close()
	if line := <-lines; !strings.HasPrefix(line, "ready") {
		t.Fatalf("once the gate opened, the guard said %q, want ready", line)
	}
}
