//go:build linux

package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// TestForkServerReplacedAfterItsRuns: the hash secret is the fork server's
// (see forkServer); after forkServerRuns runs a new fork server, with a
// secret of its own, takes over, and the old one ends once its runs are
// gone.
func TestForkServerReplacedAfterItsRuns(t *testing.T) {
	defer func(n int64) { forkServerRuns = n }(forkServerRuns)
	forkServerRuns = 3
	e := newHardened(t, Config{})
	if e.fork == nil {
		t.Skipf("no fork server here: %s", e.report.ForkServer.Detail)
	}
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
