//go:build linux

package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/internal/eventually"
)

// TestForkServerReplacedAfterItsRuns: the hash secret is the fork server's
// (see forkServer); after maxRuns runs a new fork server, with a
// secret of its own, takes over, and the old one ends once its runs are
// gone.
func TestForkServerReplacedAfterItsRuns(t *testing.T) {
	e := newHardened(t, Config{})
	if e.fork == nil {
		t.Skipf("no fork server here: %s", e.report.ForkServer.Detail)
	}
	e.fork.maxRuns = 3
	// The canary was the first run of the first fork server.
	first := e.fork.current()
	hash := func() string {
		t.Helper()
		return runCode(t, e, executor.Request{Code: "print(hash('runblock'))"}).Stdout
	}
	a, b := hash(), hash()
	if a != b {
		t.Fatalf("two runs of one fork server hash differently: %q %q", a, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for e.fork.current() == first {
		select {
		case <-ctx.Done():
			t.Fatal("no new fork server after its runs")
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case <-first.done:
	case <-ctx.Done():
		t.Fatal("the replaced fork server did not end once its runs were gone")
	}
	if c := hash(); c == a {
		t.Fatalf("the next fork server hashes as the first: %q", c)
	}
}

// TestForkServerRotatesAfterAFailedStart: a replacement that fails to
// start is asked for again by the next run, not never again.
func TestForkServerRotatesAfterAFailedStart(t *testing.T) {
	e := newHardened(t, Config{})
	if e.fork == nil {
		t.Skipf("no fork server here: %s", e.report.ForkServer.Detail)
	}
	first := e.fork.current()
	e.fork.maxRuns = 2 // the canary was the first run
	failed := make(chan struct{})
	launch := e.fork.start
	e.fork.start = func(ctx context.Context) (*fsProc, error) {
		e.fork.start = launch // the next start is a real one
		close(failed)
		return nil, errors.New("a start that fails")
	}
	runCode(t, e, executor.Request{Code: "pass"}) // the second run asks for a replacement
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-failed:
	case <-ctx.Done():
		t.Fatal("no replacement asked for after maxRuns runs")
	}
	runCode(t, e, executor.Request{Code: "pass"}) // past the boundary: asks again
	if !eventually.Poll(ctx, func() bool { return e.fork.current() != first }) {
		t.Fatal("no new fork server after a replacement failed to start")
	}
}
