package sandbox_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
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
	t.Cleanup(func() { _ = s.Close() })
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

// files maps the paths of res's files to their content.
func files(res executor.Result) map[string]string {
	m := map[string]string{}
	for _, f := range res.Files {
		m[f.Path] = string(f.Content)
	}
	return m
}

// TestSessionFilesPerCell: files persist in the work dir across cells,
// and each cell returns only those it created or changed, even a file
// written again to the same size in the same clock tick; input files come in before
// their cell and come back only when changed.
func TestSessionFilesPerCell(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		s := startSession(t, e)
		for i, c := range []struct {
			req  executor.Request
			want map[string]string
		}{
			{executor.Request{Code: "open('a.txt', 'w').write('A1')"}, map[string]string{"a.txt": "A1"}},
			{executor.Request{Code: "import os\nos.mkdir('d')\nopen('d/b.txt', 'w').write('B')"}, map[string]string{"d/b.txt": "B"}},
			{executor.Request{Code: "print(open('a.txt').read(), open('d/b.txt').read())"}, map[string]string{}},
			{executor.Request{Code: "open('a.txt', 'w').write('A2')"}, map[string]string{"a.txt": "A2"}},
			// Again to the same size, with the same times: as written in
			// the same tick of a coarse clock (kernels before 6.13).
			{executor.Request{Code: "import os\nst = os.stat('a.txt')\nopen('a.txt', 'w').write('A3')\nos.utime('a.txt', ns=(st.st_atime_ns, st.st_mtime_ns))"}, map[string]string{"a.txt": "A3"}},
			{executor.Request{Code: "print(open('in.csv').read())", Files: []executor.File{{Path: "in.csv", Content: []byte("x,y\n")}}}, map[string]string{}},
			{executor.Request{Code: "open('in.csv', 'a').write('1,2\\n')\nopen('_scratch', 'w').write('s')"}, map[string]string{"in.csv": "x,y\n1,2\n"}},
			{executor.Request{Code: "import os\nos.remove('a.txt')"}, map[string]string{}},
		} {
			res := cell(t, s, c.req)
			if !res.Success {
				t.Fatalf("cell %d: %+v", i+1, res)
			}
			if got := files(res); !maps.Equal(got, c.want) || len(res.FilesOmitted) > 0 {
				t.Errorf("cell %d: files %q (omitted %v), want %q", i+1, got, res.FilesOmitted, c.want)
			}
		}
		res := cell(t, s, executor.Request{Code: "import os\nprint(sorted(set(os.listdir('.')) - {'.config', '.shm'}), os.listdir('d'))"})
		if want := "['_scratch', 'd', 'in.csv'] ['b.txt']\n"; res.Stdout != want {
			t.Errorf("work dir %q, want %q", res.Stdout, want)
		}
	})
}

// TestSessionPlotComesWithItsCell: a notebook's three cells, data, frame
// and plot: the plot comes back with the third, as figure-1.png, and not
// again with the next.
func TestSessionPlotComesWithItsCell(t *testing.T) {
	requireModules(t, "numpy", "pandas", "matplotlib")
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{Python: debianPython, DisableForkServer: cold, Timeout: 20 * time.Second})
		s := startSession(t, e)
		cells := []string{
			"import pandas as pd\nimport matplotlib.pyplot as plt\nvisits = [120, 135, 160, 150, 190]",
			"df = pd.DataFrame({'day': ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'], 'visits': visits})\nprint(df['visits'].mean())",
			"df.plot(x='day', y='visits', title='Visits')\nplt.show()",
			"print(len(df))",
		}
		for i, code := range cells {
			res := cell(t, s, executor.Request{Code: code})
			if !res.Success {
				t.Fatalf("cell %d: %+v", i+1, res)
			}
			var names []string
			for _, f := range res.Files {
				names = append(names, f.Path)
			}
			if want := map[bool][]string{true: {"figure-1.png"}}[i == 2]; !slices.Equal(names, want) {
				t.Errorf("cell %d: files %q, want %q", i+1, names, want)
			}
			if i == 2 && (res.Files[0].MIME != "image/png" || !bytes.HasPrefix(res.Files[0].Content, []byte("\x89PNG"))) {
				t.Errorf("the plot is not a PNG: %s", res.Files[0].MIME)
			}
		}
	})
}

// TestSessionOutputPerCell: each cell keeps its own first bytes of
// output and its own count; what a thread prints after its cell ended
// belongs to the next cell; a cell past the output cap ends the session
// as a run is stopped.
func TestSessionOutputPerCell(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold, KeepBytes: 1 << 10, MaxOutputBytes: 64 << 10})
		s := startSession(t, e)
		res := cell(t, s, executor.Request{Code: "print('x' * 5000)"})
		if !res.Success || !res.OutputTruncated || len(res.Stdout) != 1<<10 || res.StdoutBytes != 5001 {
			t.Fatalf("long cell: truncated %v, kept %d, counted %d", res.OutputTruncated, len(res.Stdout), res.StdoutBytes)
		}
		res = cell(t, s, executor.Request{Code: "import sys, threading\nlate = threading.Event()\n" +
			"threading.Thread(target=lambda: (late.wait(), print('late', flush=True), print('late err', file=sys.stderr))).start()\nprint('short')"})
		if !res.Success || res.OutputTruncated || res.Stdout != "short\n" || res.StdoutBytes != 6 {
			t.Fatalf("short cell: %+v", res)
		}
		res = cell(t, s, executor.Request{Code: "late.set()\nimport threading\nfor th in threading.enumerate():\n    if th is not threading.main_thread(): th.join()\nprint('third')"})
		if !res.Success || res.Stdout != "late\nthird\n" || res.Stderr != "late err\n" {
			t.Fatalf("the cell after a thread's late output: %+v", res)
		}
		res = cell(t, s, executor.Request{Code: "import sys\nfor _ in range(100): sys.stdout.write('y' * 1000 + '\\n')"})
		if !res.OutputLimit || res.Success || s.Alive() {
			t.Fatalf("a cell past the output cap: %+v, alive %v", res, s.Alive())
		}
	})
}

// TestSessionCancelAndBadInput: a cell whose context ends kills its
// session, as it kills a run; a cell refused for its size leaves the
// session as it was.
func TestSessionCancelAndBadInput(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold, MaxCodeBytes: 1 << 10})
		s := startSession(t, e)
		cell(t, s, executor.Request{Code: "x = 7"})
		_, err := s.Run(context.Background(), executor.Request{Code: strings.Repeat("#", 2<<10)})
		if executor.ErrorCode(err) != executor.ErrTooLarge || !s.Alive() {
			t.Fatalf("too large a cell: %v, alive %v", err, s.Alive())
		}
		if res := cell(t, s, executor.Request{Code: "print(x)"}); res.Stdout != "7\n" {
			t.Fatalf("after a refused cell: %+v", res)
		}
		// Ends while the cell sleeps (the cell starts in microseconds).
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err = s.Run(ctx, executor.Request{Code: "import time\ntime.sleep(30)"})
		if executor.ErrorCode(err) != executor.ErrCanceled || s.Alive() {
			t.Fatalf("canceled cell: %v, alive %v", err, s.Alive())
		}
	})
}
