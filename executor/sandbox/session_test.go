package sandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
)

// startSession starts a live session of e, closed at the test's end.
func startSession(t testing.TB, e *sandbox.Executor) executor.LiveSession {
	t.Helper()
	s, err := e.StartSession(context.Background())
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// cell runs code as the session's next cell and fails the test on the
// service's error.
func cell(t testing.TB, s executor.LiveSession, req executor.Request) executor.Result {
	t.Helper()
	res, err := s.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("cell %.60q: %v", req.Code, err)
	}
	return res
}

// TestSessionKeepsState: variables, imports and functions of a cell are
// there in the next ones, and each cell's reply holds its own output
// only.
func TestSessionKeepsState(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		s := startSession(t, e)
		for i, c := range []struct{ code, stdout string }{
			{"import math\nx = 6\ndef area(r):\n    return math.pi * r * r\nprint('one')", "one\n"},
			{"x *= 7\nprint(x)", "42\n"},
			{"print(round(area(1), 2), x)", "3.14 42\n"},
			{"import sys\nprint(input(), sys.argv[1:])", "typed ['a1']\n"},
		} {
			req := executor.Request{Code: c.code}
			if i == 3 {
				req.Stdin, req.Args = "typed\n", []string{"a1"}
			}
			res := cell(t, s, req)
			if !res.Success || res.Stdout != c.stdout || res.Stderr != "" {
				t.Fatalf("cell %d: %+v, want stdout %q", i+1, res, c.stdout)
			}
		}
		if !s.Alive() {
			t.Error("the session died after four good cells")
		}
	})
}

// TestSessionRaiseKeepsState: a cell that raises fails as a run does
// (exit code 1, the last line of its traceback, which names the cell) and
// the session goes on with its state.
func TestSessionRaiseKeepsState(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		s := startSession(t, e)
		cell(t, s, executor.Request{Code: "def f(x):\n    return 1 / x\ny = 5"})
		res := cell(t, s, executor.Request{Code: "print('before')\nf(0)"})
		if res.Success || res.ExitCode != 1 || res.Error != "ZeroDivisionError: division by zero" || res.Stdout != "before\n" || !s.Alive() {
			t.Fatalf("raising cell: %+v, alive %v", res, s.Alive())
		}
		for _, want := range []string{`File "<cell 2>", line 2`, `File "<cell 1>", line 2, in f`, "return 1 / x"} {
			if !strings.Contains(res.Stderr, want) {
				t.Errorf("traceback lacks %q:\n%s", want, res.Stderr)
			}
		}
		if res := cell(t, s, executor.Request{Code: "print(y)"}); !res.Success || res.Stdout != "5\n" {
			t.Fatalf("cell after the raise: %+v", res)
		}
		res = cell(t, s, executor.Request{Code: "print(("})
		if res.Success || !strings.Contains(res.Error, "SyntaxError") || !s.Alive() {
			t.Fatalf("syntax error: %+v", res)
		}
	})
}

// TestSessionExit: SystemExit(N) in a cell is its exit code N, and ends
// the session; its output comes back.
func TestSessionExit(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		s := startSession(t, e)
		cell(t, s, executor.Request{Code: "x = 1"})
		res := cell(t, s, executor.Request{Code: "import sys\nprint('bye')\nsys.exit(3)"})
		if res.Success || res.ExitCode != 3 || res.Stdout != "bye\n" || res.Timeout || s.Alive() {
			t.Fatalf("exiting cell: %+v, alive %v", res, s.Alive())
		}
		if _, err := s.Run(context.Background(), executor.Request{Code: "print(x)"}); err == nil {
			t.Error("a cell ran in an ended session")
		}
	})
}

// TestSessionTimeout: a cell past its own timeout ends the session, with
// the timeout verdict and what it printed before.
func TestSessionTimeout(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		s := startSession(t, e)
		cell(t, s, executor.Request{Code: "x = 1"})
		res := cell(t, s, executor.Request{Code: "print('spinning', flush=True)\nwhile True: pass", Timeout: 500 * time.Millisecond})
		if !res.Timeout || res.Success || res.Stdout != "spinning\n" || s.Alive() {
			t.Fatalf("timed out cell: %+v, alive %v", res, s.Alive())
		}
	})
}
