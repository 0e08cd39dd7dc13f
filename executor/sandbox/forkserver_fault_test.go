//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/internal/eventually"
	"github.com/runblock/runblock/internal/syncbuf"
)

// childrenOf are the host's processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	for _, dir := range processes("/proc", func(dir string) bool { return parentOf(dir) == pid }) {
		if n, err := strconv.Atoi(dir[len("/proc/"):]); err == nil {
			kids = append(kids, n)
		}
	}
	return kids
}

// forkServerKids are the children of a fork server's init, pid: its
// python, and the maker of its runs' PID 1s (a copy of the init, with its
// command line).
func forkServerKids(pid int) (pythons, makers []int) {
	for _, child := range childrenOf(pid) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child))
		switch {
		case err != nil:
		case bytes.HasPrefix(cmdline, []byte(protocol.ForkServerMarker+"\x00")):
			makers = append(makers, child)
		default:
			pythons = append(pythons, child)
		}
	}
	return pythons, makers
}

// TestKilledForkServerPythonRetriesTheRun: a run in progress when its
// fork server's python is killed is run again from scratch and gets the
// verdict of its own code (here a timeout), never an error of the
// executor's nor a verdict of the kill ("Execution failed", SIGKILL).
// Before, the fork server's init reported the run's python killed, or
// failed to read its end (a 500: "open /proc/N/stat: no such file").
func TestKilledForkServerPythonRetriesTheRun(t *testing.T) {
	e := newForking(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for round := range 3 {
		old := e.fork.current()
		if old == nil {
			t.Fatal("no fork server")
		}
		marker := fmt.Sprintf("rbfsp%d", time.Now().UnixNano()%1e6)
		type outcome struct {
			res executor.Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := e.Run(ctx, executor.Request{Timeout: 2 * time.Second,
				Code: fmt.Sprintf("import ctypes\nctypes.CDLL(None).prctl(15, b%q)\nwhile True:\n    pass", marker)})
			done <- outcome{res, err}
		}()
		if !eventually.Poll(ctx, func() bool {
			return slices.ContainsFunc(leftoverPIDs(marker), func(pid int) bool { return descends(fmt.Sprintf("/proc/%d", pid), old.cmd.Process.Pid) })
		}) {
			t.Fatal("the snippet never ran in a fork")
		}
		// The fork server's python, and the maker of its runs' PID 1s,
		// are its init's children.
		for _, pid := range childrenOf(old.cmd.Process.Pid) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Signal(syscall.SIGKILL)
			}
		}
		o := <-done
		if o.err != nil || !o.res.Timeout || o.res.Error != "Execution timed out after 2s (process killed)" {
			t.Fatalf("round %d: the run under the killed fork server: %+v, %v", round+1, o.res, o.err)
		}
		if !eventually.Poll(ctx, func() bool { now := e.fork.current(); return now != nil && now != old }) {
			t.Fatal("no new fork server")
		}
	}
}

// TestStoppedForkServerFoundOut: a fork server whose python is stopped
// (SIGSTOP) is found out without waiting for a request's answerTimeout:
// the executor says not ready, takes it for stuck (the log says why),
// runs start from scratch meanwhile, and a new fork server takes over.
// Before, Ready stayed true, and the first run after the stop waited 10 s.
func TestStoppedForkServerFoundOut(t *testing.T) {
	var log syncbuf.Buffer
	e := newForking(t, Config{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := e.fork.current()
	if old == nil || e.Ready() != nil {
		t.Fatal("no ready fork server")
	}
	for _, pid := range childrenOf(old.cmd.Process.Pid) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Signal(syscall.SIGSTOP)
		}
	}
	if !eventually.Poll(ctx, func() bool { return e.Ready() != nil }) {
		t.Fatal("the executor says ready with its fork server's python stopped")
	}
	if !strings.Contains(log.String(), "stopped (SIGSTOP)") {
		t.Errorf("the log does not say the fork server is stopped:\n%s", log.String())
	}
	res, err := e.Run(ctx, executor.Request{Code: "print('ran')"})
	if err != nil || res.Stdout != "ran\n" {
		t.Fatalf("a run with the fork server stopped: %+v, %v", res, err)
	}
	if !eventually.Poll(ctx, func() bool { now := e.fork.current(); return now != nil && now != old && e.Ready() == nil }) {
		t.Fatal("no new fork server")
	}
}

// TestKilledMakerStartsAnotherForkServer: where the maker of a fork
// server's PID 1s dies (killed by the host), the fork server's init
// ends with it, a new fork server takes over, and runs go on, each with
// its own verdict.
func TestKilledMakerStartsAnotherForkServer(t *testing.T) {
	e := newForking(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := e.fork.current()
	if old == nil {
		t.Fatal("no fork server")
	}
	_, makers := forkServerKids(old.cmd.Process.Pid)
	if len(makers) != 1 {
		t.Fatalf("the fork server's init has makers %v, want one", makers)
	}
	if err := syscall.Kill(makers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !eventually.Poll(ctx, func() bool { now := e.fork.current(); return now != nil && now != old }) {
		t.Fatal("no new fork server")
	}
	for _, code := range []string{"print('hello')", "raise SystemExit(3)"} {
		res, err := e.Run(ctx, executor.Request{Code: code})
		if err != nil || res.Stdout != "hello\n" && res.ExitCode != 3 {
			t.Fatalf("%s under the new fork server: %+v, %v", code, res, err)
		}
	}
}
