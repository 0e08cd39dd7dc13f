package sandbox_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
)

// TestLiveOutput: a running snippet's output so far reaches the context's
// OutputFunc while the snippet still runs (it then waits until the test
// cancels it), and the func is not called once Run has returned.
func TestLiveOutput(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		seen := make(chan [2]string, 1)
		var returned atomic.Bool
		ctx = executor.WithOutput(ctx, func(stdout, stderr string) {
			if returned.Load() {
				t.Error("output func called after Run returned")
			}
			if stdout == "first ✓\n" && stderr == "warned\n" {
				select {
				case seen <- [2]string{stdout, stderr}:
				default:
				}
				cancel() // the snippet would wait a minute: end it here
			}
		})
		code := "import sys, time\nprint('first ✓', flush=True)\nprint('warned', file=sys.stderr, flush=True)\ntime.sleep(60)\nprint('never')"
		_, err := e.Run(ctx, executor.Request{Code: code, Timeout: 60e9})
		returned.Store(true)
		select {
		case got := <-seen:
			t.Logf("seen while running: %q", got)
		default:
			t.Fatalf("the output so far never reached the output func (Run: %v)", err)
		}
		if executor.ErrorCode(err) != executor.ErrCanceled {
			t.Errorf("Run = %v, want canceled by the test once the output was seen", err)
		}
	})
}

// TestLiveOutputOfASessionCell: a cell of a live session shows its own
// output so far (not an earlier cell's) while it runs, as a run does.
func TestLiveOutputOfASessionCell(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		s := startSession(t, e)
		if res := cell(t, s, executor.Request{Code: "print('earlier')"}); res.Stdout != "earlier\n" {
			t.Fatalf("first cell: %+v", res)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		seen := make(chan string, 1)
		var returned atomic.Bool
		ctx = executor.WithOutput(ctx, func(stdout, stderr string) {
			if returned.Load() {
				t.Error("output func called after Run returned")
			}
			if stdout == "first ✓\n" && stderr == "warned\n" {
				select {
				case seen <- stdout:
				default:
				}
				cancel()
			}
		})
		code := "import sys, time\nprint('first ✓', flush=True)\nprint('warned', file=sys.stderr, flush=True)\ntime.sleep(60)"
		_, err := s.Run(ctx, executor.Request{Code: code, Timeout: 60e9})
		returned.Store(true)
		select {
		case <-seen:
		default:
			t.Fatalf("the cell's output so far never reached the output func (Run: %v)", err)
		}
	})
}
