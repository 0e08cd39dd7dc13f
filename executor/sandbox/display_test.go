package sandbox_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
	"github.com/runblock/runblock/executor/sandbox"
)

// shown is a display as the tests compare it: its text/plain, whether it
// is the value, its stdout offset.
type shown struct {
	Plain string
	Value bool
	At    int64
}

func shownOf(res executor.Result) []shown {
	var out []shown
	for _, d := range res.Results {
		out = append(out, shown{d.Data["text/plain"], d.Value, d.At})
	}
	return out
}

func sameShown(a, b []shown) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCellShowsValueAndDisplays: a run that is not a script shows its
// last expression's value and what it passes to display(), in order among
// what it prints, as IPython does; a script shows nothing but its output.
func TestCellShowsValueAndDisplays(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		tests := []struct {
			name, code string
			script     bool
			want       []shown
			stdout     string
			fails      string // the error line of a failed run
			traceback  string // in its stderr
		}{
			{name: "value after output", code: "x = 41\nprint('hi')\nx + 1", stdout: "hi\n", want: []shown{{"42", true, 3}}},
			{name: "trailing semicolon hides it", code: "x = 1\nx + 1;  # hidden"},
			{name: "print returns None", code: "print(1)", stdout: "1\n"},
			{name: "assignment shows nothing", code: "x = 5"},
			{name: "two statements on a line", code: "1; 2", want: []shown{{"2", true, 0}}},
			{name: "old Mac line ends", code: "x = 1\r\r\rx + 1", want: []shown{{"2", true, 0}}},
			{name: "old Mac line ends, hidden", code: "x = 1\r\r\rx + 1;"},
			{name: "Windows line ends", code: "x = 1\r\nx\r\n", want: []shown{{"1", true, 0}}},
			{name: "a form feed", code: "x = 1\n\f\nx;"},
			{name: "raising expression", code: "1 / 0", fails: "ZeroDivisionError: division by zero"},
			{name: "display in order", code: "display(1, 'a')\nprint('ab')\ndisplay([2])\n{'k': 3}",
				stdout: "ab\n", want: []shown{{"1", false, 0}, {"'a'", false, 0}, {"[2]", false, 3}, {"{'k': 3}", true, 3}}},
			{name: "top-level await", code: "import asyncio\nawait asyncio.sleep(0)\nawait asyncio.sleep(0, result=7)", want: []shown{{"7", true, 0}}},
			{name: "a repr that raises", code: "class Bad:\n    def __repr__(self):\n        raise ValueError('nope')\nBad()",
				want: []shown{{"<repr of Bad failed: ValueError: nope>", true, 0}}},
			{name: "a class", code: "int", want: []shown{{"<class 'int'>", true, 0}}},
			{name: "a call over two lines", code: "max(1,\n2)", want: []shown{{"2", true, 0}}},
			{name: "a value after a loop", code: "for i in range(3):\n    pass\ni", want: []shown{{"2", true, 0}}},
			{name: "an else clause ends the cell", code: "if False:\n    1\nelse:\n    2"},
			{name: "a line in a string", code: "s = \"\"\"\nx\n\"\"\""},
			{name: "a backslash's continuation", code: "1 + \\\n2", want: []shown{{"3", true, 0}}},
			{name: "a comment after the value", code: "x = 3\nx\n# done\n", want: []shown{{"3", true, 0}}},
			{name: "a future import", code: "from __future__ import annotations\ndef f(a: Undefined): pass\nf.__annotations__", want: []shown{{"{'a': 'Undefined'}", true, 0}}},
			{name: "a semicolon in a string", code: "'a;b'", want: []shown{{"'a;b'", true, 0}}},
			{name: "an annotated name", code: "x: int = 1"},
			{name: "an error's line", code: "x = 1\n\nx / 0", fails: "ZeroDivisionError: division by zero", traceback: `File "<snippet>", line 3`},
			{name: "script: no value", code: "print('s')\n1 + 1", script: true, stdout: "s\n"},
			{name: "script: no display", code: "display(1)", script: true, fails: "NameError: name 'display' is not defined"},
			{name: "script: python's own stdout", code: "import sys\nprint(type(sys.stdout.buffer).__name__)", script: true, stdout: "FileIO\n"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res := run(t, e, executor.Request{Code: tt.code, Script: tt.script})
				if tt.fails != "" {
					if res.Success || res.Error != tt.fails || !strings.Contains(res.Stderr, tt.traceback) {
						t.Fatalf("success=%v error %q, want %q; stderr %s", res.Success, res.Error, tt.fails, res.Stderr)
					}
				} else if !res.Success {
					t.Fatalf("failed: %s", res.Stderr)
				}
				if res.Stdout != tt.stdout {
					t.Errorf("stdout %q, want %q", res.Stdout, tt.stdout)
				}
				if got := shownOf(res); !sameShown(got, tt.want) {
					t.Errorf("results %+v, want %+v", got, tt.want)
				}
			})
		}
	})
}

// TestCellAwaitTraceback: an exception in an awaited coroutine reports
// the snippet's frames, not the event loop's that ran the cell.
func TestCellAwaitTraceback(t *testing.T) {
	e := newExecutor(t, sandbox.Config{})
	res := run(t, e, executor.Request{Code: "async def f():\n    raise ValueError('x')\nawait f()"})
	if res.Success || res.Error != "ValueError: x" {
		t.Fatalf("success=%v error %q", res.Success, res.Error)
	}
	if strings.Contains(res.Stderr, "asyncio") || !strings.Contains(res.Stderr, `File "<snippet>", line 3`) {
		t.Errorf("traceback:\n%s", res.Stderr)
	}
}

// TestCellDisplaysAreBounded: a huge repr is cut with a note, a flood of
// displays is counted past the limit, and neither fails the run.
func TestCellDisplaysAreBounded(t *testing.T) {
	e := newExecutor(t, sandbox.Config{})
	res := run(t, e, executor.Request{Code: "'x' * 200000"})
	if !res.Success || len(res.Results) != 1 {
		t.Fatalf("success=%v results %d: %s", res.Success, len(res.Results), res.Stderr)
	}
	plain := res.Results[0].Data["text/plain"]
	if len(plain) > 70000 || !strings.HasSuffix(plain, "more characters not shown)") {
		t.Errorf("text/plain of %d bytes ending %q", len(plain), plain[max(len(plain)-60, 0):])
	}
	res = run(t, e, executor.Request{Code: "for i in range(150):\n    display(i)\n'end'"})
	if !res.Success || len(res.Results) != 102 {
		t.Fatalf("success=%v results %d: %s", res.Success, len(res.Results), res.Stderr)
	}
	if got := res.Results[100].Data["text/plain"]; got != "'end'" || !res.Results[100].Value {
		t.Errorf("the value is %q (value %v)", got, res.Results[100].Value)
	}
	if got := res.Results[101].Data["text/plain"]; !strings.Contains(got, "50 more displays not shown") {
		t.Errorf("the last display is %q", got)
	}
}

// TestCellDisplaysAreNotTrusted: what the snippet leaves in the displays'
// file is parsed within bounds: garbage is dropped with a note on stderr,
// an offset past the output is placed at its end.
func TestCellDisplaysAreNotTrusted(t *testing.T) {
	bothPaths(t, func(t *testing.T, cold bool) {
		e := newExecutor(t, sandbox.Config{DisableForkServer: cold})
		tests := []struct {
			name, content, stderr string
			want                  []shown
		}{
			{name: "garbage", content: `1\n9999 0 0\n`, stderr: "runblock: the run's displays are not shown"},
			{name: "huge count", content: `99999999\n`, stderr: "runblock: the run's displays are not shown"},
			{name: "bad MIME type", content: `1\n1 0 0\n3 1\n../x`, stderr: "runblock: the run's displays are not shown"},
			{name: "forged offset", content: `1\n1 1 999999\n10 2\ntext/plain42`, want: []shown{{"42", true, 0}}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				code := "with open('.runblock-results', 'w') as f:\n    f.write('" + tt.content + "')"
				res := run(t, e, executor.Request{Code: code})
				if !res.Success || !strings.Contains(res.Stderr, tt.stderr) {
					t.Fatalf("success=%v stderr %q, want %q", res.Success, res.Stderr, tt.stderr)
				}
				if got := shownOf(res); !sameShown(got, tt.want) {
					t.Errorf("results %+v, want %+v", got, tt.want)
				}
			})
		}
	})
}

// TestSessionCellShowsValue: each cell of a session shows its own value
// and displays, placed within its own output.
func TestSessionCellShowsValue(t *testing.T) {
	e := newExecutor(t, sandbox.Config{})
	s := startSession(t, e)
	for _, c := range []struct {
		code string
		want []shown
	}{
		{"x = 41\nprint('before')", nil},
		{"print('abc')\ndisplay(x)\nx + 1", []shown{{"41", false, 4}, {"42", true, 4}}},
		{"x;", nil},
		{"import asyncio\nawait asyncio.sleep(0)\nx", []shown{{"41", true, 0}}},
	} {
		res := cell(t, s, executor.Request{Code: c.code})
		if !res.Success {
			t.Fatalf("cell %q: %s", c.code, res.Stderr)
		}
		if got := shownOf(res); !sameShown(got, c.want) {
			t.Errorf("cell %q: results %+v, want %+v", c.code, got, c.want)
		}
	}
}

// TestCellRichForms: pandas, PIL and sympy objects come with the forms
// Jupyter would show, plus a capped Table Schema of a DataFrame.
func TestCellRichForms(t *testing.T) {
	requireModules(t, "pandas", "sympy", "PIL", "matplotlib")
	e := newExecutor(t, sandbox.Config{Python: debianPython})
	code := `import pandas as pd, sympy
from PIL import Image
display(pd.DataFrame({"n": range(150), **{f"c{i}": range(150) for i in range(24)}}))
display(Image.new("RGB", (3, 2)))
x = sympy.Symbol("x")
sympy.integrate(x**2, x)`
	res := run(t, e, executor.Request{Code: code})
	if !res.Success || len(res.Results) != 3 {
		t.Fatalf("success=%v results %d: %s", res.Success, len(res.Results), res.Stderr)
	}
	table, image, expr := res.Results[0].Data, res.Results[1].Data, res.Results[2].Data
	schema := table["application/vnd.dataresource+json"]
	var doc struct {
		Schema struct {
			Fields []struct{ Name string } `json:"fields"`
		} `json:"schema"`
		Data         []map[string]any `json:"data"`
		TotalRows    int              `json:"total_rows"`
		TotalColumns int              `json:"total_columns"`
	}
	if err := json.Unmarshal([]byte(schema), &doc); err != nil {
		t.Fatalf("table schema %.200q: %v", schema, err)
	}
	if len(doc.Data) != 100 || len(doc.Schema.Fields) != 21 || doc.TotalRows != 150 || doc.TotalColumns != 25 {
		t.Errorf("table of %d rows, %d fields, totals %d × %d", len(doc.Data), len(doc.Schema.Fields), doc.TotalRows, doc.TotalColumns)
	}
	if !strings.Contains(table["text/plain"], "[150 rows x 25 columns]") {
		t.Errorf("DataFrame text/plain %q", table["text/plain"])
	}
	if png, err := base64.StdEncoding.DecodeString(image["image/png"]); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("PIL image/png %.40q: %v", image["image/png"], err)
	}
	if expr["text/plain"] != " 3\nx \n──\n3 " || expr["text/latex"] != `$\displaystyle \frac{x^{3}}{3}$` || !res.Results[2].Value {
		t.Errorf("sympy forms %q %q", expr["text/plain"], expr["text/latex"])
	}
	if png, err := base64.StdEncoding.DecodeString(expr["image/png"]); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("sympy image/png %.40q: %v", expr["image/png"], err)
	}
}
