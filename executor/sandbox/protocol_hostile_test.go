//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox/internal/protocol"
	"github.com/runblock/runblock/internal/eventually"
)

// The tests of issue 20 on the messages between the sandbox and the
// service: what a hostile snippet sends through them must stay within
// their bounds, and its failure is a result, never the executor's.

// manyEscapedFiles leaves 3000 empty files with long names that JSON
// escapes six bytes a byte (control characters, invalid UTF-8), fifteen
// directories of such names deep: unbounded, their list is ~70 MB.
const manyEscapedFiles = `
import os
d = os.open(".", os.O_RDONLY)
for level in range(15):
    name = b"\x1b" * 240 + b"\xff" * 10 + b"%02d" % level
    os.mkdir(name, dir_fd=d)
    sub = os.open(name, os.O_RDONLY, dir_fd=d)
    os.close(d)
    d = sub
for i in range(3000):
    os.close(os.open(b"\x01" * 200 + b"\xfe" * 40 + b"%05d" % i, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=d))
print("left", 3000)
`

// TestReportOfManyEscapedNamesIsBounded: the report of a run that left
// thousands of long, heavily escaped names is a result (named as omitted
// within the report's bounds), not an internal error, and the fork
// server's init does not keep what it took to write it.
func TestReportOfManyEscapedNamesIsBounded(t *testing.T) {
	bothPaths(t, func(t *testing.T, path Config) {
		e := newHardened(t, path)
		var before int64
		if e.fork != nil {
			before = ownRSS(t, e.fork.current().cmd.Process.Pid)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := e.Run(ctx, executor.Request{Code: manyEscapedFiles, Timeout: 20 * time.Second})
		if e.fork != nil {
			after := ownRSS(t, e.fork.current().cmd.Process.Pid)
			t.Logf("fork server's init: %d MiB before the run, %d MiB after", before>>20, after>>20)
			// Unbounded, it grew by ~280 MiB; bounded, by ~4 MiB.
			if after-before > 16<<20 {
				t.Errorf("the fork server's init grew by %d MiB for one run's report", (after-before)>>20)
			}
		}
		if err != nil {
			t.Fatalf("a run that left many files is not a result: %v", err)
		}
		if !res.Success || strings.TrimSpace(res.Stdout) != "left 3000" {
			t.Fatalf("run: success %v, stdout %q, stderr %.300q", res.Success, res.Stdout, res.Stderr)
		}
		// The report names protocol.ReportMaxOmitted and counts the rest; the
		// service adds the files it collected past its caps.
		if bound := protocol.ReportMaxOmitted + 1 + e.plan.transfer().MaxFiles; len(res.FilesOmitted) > bound {
			t.Fatalf("%d omitted files named, over the bound of %d", len(res.FilesOmitted), bound)
		}
		last := res.FilesOmitted[len(res.FilesOmitted)-1]
		named := len(res.Files) + len(res.FilesOmitted) - 1
		if last.Reason != executor.OmitNotNamed || last.Path != protocol.NotNamedPath(3000-named) || last.Count != 3000-named {
			t.Fatalf("the excess is not named as omitted: last entry %+v of %d", last, len(res.FilesOmitted))
		}
		for _, f := range res.FilesOmitted {
			if len(f.Path) > 3*protocol.ReportMaxPath { // JSON reads a byte that is not UTF-8 as U+FFFD
				t.Fatalf("an omitted path of %d bytes, over the bound of %d", len(f.Path), protocol.ReportMaxPath)
			}
		}
	})
}

// appLimit is where the race detector's shadow memory begins on
// linux/amd64 (its map in the runtime's race_amd64 notes): the init's own
// memory, its heap included, lies below it.
const appLimit = 0x020000000000

// ownRSS is the resident memory of pid's own mappings, those below
// appLimit: a race-built init's shadow, which grows several times as
// much as what it shadows and by how much depends on the machine, is
// left out, so the bound holds the init's memory alone.
func ownRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	own := false
	for line := range strings.Lines(string(b)) {
		if start, _, ok := strings.Cut(line, "-"); ok && !strings.Contains(start, " ") {
			at, err := strconv.ParseUint(start, 16, 64)
			own = err == nil && at < appLimit
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Rss:"); ok && own {
			kB, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += kB << 10
		}
	}
	return total
}

// TestStoppedForkServer: a fork server that stops answering (SIGSTOP) does
// not block runs: the request is time-bound, the run starts from scratch,
// the executor says it is not ready while the fork server is started
// again, and forks resume.
func TestStoppedForkServer(t *testing.T) {
	e := newHardened(t, Config{})
	if e.fork == nil {
		t.Skipf("no fork server here: %s", e.report.ForkServer.Detail)
	}
	e.fork.answerTimeout = 500 * time.Millisecond
	live := e.fork.current()
	zygote := forkServerPython(t, live.cmd.Process.Pid)
	if err := syscall.Kill(zygote, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Readiness is watched throughout: the restart comes a second after.
	notReady := make(chan struct{})
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if e.Ready() != nil {
				close(notReady)
				return
			}
		}
	}()
	defer func() { close(stop); <-watched }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := e.Run(ctx, executor.Request{Code: "print('from scratch')"})
	if err != nil || res.Stdout != "from scratch\n" {
		t.Fatalf("run while the fork server is stopped: %+v, %v", res, err)
	}
	select {
	case <-notReady:
	case <-ctx.Done():
		t.Fatal("the executor stayed ready with its fork server stopped")
	}
	if !eventually.Poll(ctx, func() bool { c := e.fork.current(); return c != nil && c != live }) {
		t.Fatal("the stopped fork server was not started again")
	}
	if e.Ready() != nil {
		t.Fatalf("not ready with a new fork server: %v", e.Ready())
	}
	if res := runForked(t, e, executor.Request{Code: "print('forked again')"}); res.Stdout != "forked again\n" {
		t.Fatalf("run through the new fork server: %+v", res)
	}
}

// forkServerPython is the fork server's python: the one child of its
// init, pid, that is not the maker of its runs' PID 1s (a copy of the
// init, with its command line).
func forkServerPython(t testing.TB, pid int) int {
	t.Helper()
	kids, _ := forkServerKids(pid)
	if len(kids) != 1 {
		t.Fatalf("%d has python children %v, want one", pid, kids)
	}
	return kids[0]
}
