package sandbox_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
	"github.com/runblock/runblock/executor/sandbox/sandboxtest"
)

// colourCases are snippets that fail, with the last line of their
// traceback (Result.Error) and what their stderr shows of it in colour,
// as Python 3.13 writes it.
var colourCases = []struct {
	name, code, errLine, coloured string
}{
	{"exception", "def f():\n    return 1/0\nf()\n", "ZeroDivisionError: division by zero", "\x1b[1;35mZeroDivisionError\x1b[0m: \x1b[35mdivision by zero\x1b[0m"},
	{"syntax error", "print((\n", "SyntaxError: '(' was never closed", "\x1b[1;35mSyntaxError\x1b[0m: \x1b[35m'(' was never closed\x1b[0m"},
	{"chained", "try:\n    {}['k']\nexcept KeyError as e:\n    raise ValueError('v') from e\n", "ValueError: v", "\x1b[1;35mKeyError\x1b[0m: \x1b[35m'k'\x1b[0m"},
}

// checkColour checks res, a run of c's code with Request.Colour set to
// colour on Python 3.13: a traceback with SGR sequences when asked and
// none when not, and a plain Result.Error either way.
func checkColour(t *testing.T, res executor.Result, errLine, coloured string, colour bool) {
	t.Helper()
	if res.Success || res.ExitCode != 1 || res.Error != errLine {
		t.Errorf("exit %d, error %q; want exit 1 and %q", res.ExitCode, res.Error, errLine)
	}
	switch {
	case colour && !strings.Contains(res.Stderr, coloured):
		t.Errorf("asked for colour, the traceback lacks %q:\n%q", coloured, res.Stderr)
	case !colour && strings.Contains(res.Stderr, "\x1b"):
		t.Errorf("not asked for colour, the traceback has escape sequences:\n%q", res.Stderr)
	case !strings.Contains(res.Stderr, "Traceback (most recent call last):") && !strings.Contains(errLine, "SyntaxError"):
		t.Errorf("no traceback:\n%q", res.Stderr)
	}
}

// TestColouredTraceback: on Python 3.13 a run whose Request asks for
// colour gets its traceback (a syntax error's too) with SGR sequences,
// and a run that does not ask gets none, from a fork of the fork server
// and from a cold start; its Error is plain text either way.
func TestColouredTraceback(t *testing.T) {
	py := sandboxtest.Python313(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold, Python: py})
		if v := e.Isolation().Python; !strings.Contains(v, "3.13") {
			t.Fatalf("the executor runs %q, not python 3.13", v)
		}
		for _, c := range colourCases {
			for _, colour := range []bool{true, false} {
				t.Run(c.name+map[bool]string{true: "/colour", false: "/plain"}[colour], func(t *testing.T) {
					checkColour(t, run(t, e, executor.Request{Code: c.code, Colour: colour}), c.errLine, c.coloured, colour)
				})
			}
		}
		// The snippet's own escape sequences are its output, kept either way.
		for _, colour := range []bool{true, false} {
			if res := run(t, e, executor.Request{Code: `print("\x1b[31mred\x1b[0m")`, Colour: colour}); res.Stdout != "\x1b[31mred\x1b[0m\n" {
				t.Errorf("colour %v: stdout %q, want the snippet's escape sequences as written", colour, res.Stdout)
			}
		}
	})
}

// TestColouredTracebackSession: in a session on Python 3.13 each cell
// asks for colour on its own: a coloured cell, a plain one, then a
// coloured syntax error, in one live python.
func TestColouredTracebackSession(t *testing.T) {
	py := sandboxtest.Python313(t)
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold, Python: py})
		s := startSession(t, e)
		cell(t, s, executor.Request{Code: "def f():\n    return 1/0"})
		for i, colour := range []bool{true, false, true} {
			c := colourCases[0]
			if i == 2 {
				c = colourCases[1]
			}
			res := cell(t, s, executor.Request{Code: c.code, Colour: colour})
			checkColour(t, res, c.errLine, c.coloured, colour)
			if !s.Alive() {
				t.Fatalf("cell %d ended the session", i+2)
			}
		}
	})
}

var cellName = regexp.MustCompile(`<cell \d+>`)

// TestColourIgnoredBefore313: on the default python (3.11 or 3.12, which
// cannot colour tracebacks) asking for colour changes nothing: the same
// plain traceback, byte for byte, on both paths and in a session.
func TestColourIgnoredBefore313(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		if v := e.Isolation().Python; strings.Contains(v, " 3.13") || strings.Contains(v, " 3.14") {
			t.Skipf("the default python is %q, which colours tracebacks", v)
		}
		s := startSession(t, e)
		for _, c := range colourCases {
			plain, coloured := run(t, e, executor.Request{Code: c.code}), run(t, e, executor.Request{Code: c.code, Colour: true})
			if coloured.Stderr != plain.Stderr || coloured.Error != c.errLine || strings.Contains(coloured.Stderr, "\x1b") {
				t.Errorf("%s: asked for colour: stderr %q, error %q; without: stderr %q", c.name, coloured.Stderr, coloured.Error, plain.Stderr)
			}
			plain, coloured = cell(t, s, executor.Request{Code: c.code}), cell(t, s, executor.Request{Code: c.code, Colour: true})
			// The cells' tracebacks differ in their cells' names only.
			if cellName.ReplaceAllString(coloured.Stderr, "<cell>") != cellName.ReplaceAllString(plain.Stderr, "<cell>") || coloured.Error != c.errLine || !s.Alive() {
				t.Errorf("%s: a session cell asked for colour: stderr %q, error %q; without: stderr %q", c.name, coloured.Stderr, coloured.Error, plain.Stderr)
			}
		}
	})
}
