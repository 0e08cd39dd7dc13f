package formatting

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPastedCodeCompiles checks the normalisation against Python itself:
// pasted code that Python rejects compiles once extracted, and code Python
// accepts, with the same characters inside strings and comments, comes out
// unchanged.
func TestPastedCodeCompiles(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	broken := []string{
		"print(\u201chello\u201d)",
		"print(\u2018hi\u2019)",
		"if True:\n\u00a0\u00a0\u00a0\u00a0print(1)",
		"x\u00a0=\u20031\u200b\nprint(x)\ufeff",
		"\ufeffprint(1)\u200d",
		"def f():\n\u2003return 1\u00ad\nprint(f())",
		"print(\u201ca \u2018b\u2019\u201d)",
	}
	valid := []string{
		"print('\u00a0', \"\u200b\", '\u201cq\u201d')  # \u00a0\u200b\u201c",
		"s = '''\n\u00a0\u201c\n'''\nprint(len(s))",
		"print(\"a\\\"\u00a0\", r'\\'\u200b')",
		"print(f\"{1}\u00a0\")",
		"print('👨\u200d👩\u200d👧')",
	}
	type check struct {
		Code     string `json:"code"`
		Original string `json:"original"`
	}
	var checks []check
	for _, src := range append(append([]string{}, broken...), valid...) {
		ext := Extract("```python\n"+src+"\n```", ExtractOptions{Platform: Discord})
		checks = append(checks, check{Code: ext.Code, Original: src})
	}
	in, err := json.Marshal(checks)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", `
import json, sys
def ok(src):
    try:
        compile(src, "<snippet>", "exec")
        return True
    except SyntaxError:
        return False
print(json.dumps([[ok(c["original"]), ok(c["code"])] for c in json.load(sys.stdin)]))
`)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var results [][2]bool
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("python said %q: %v", out, err)
	}
	for i, r := range results {
		c := checks[i]
		if i < len(broken) {
			if r[0] {
				t.Errorf("%q: Python accepts the pasted code, the case tests nothing", c.Original)
			}
			if !r[1] {
				t.Errorf("%q: normalised to %q, which Python still rejects", c.Original, c.Code)
			}
			continue
		}
		if !r[0] {
			t.Errorf("%q: Python rejects the valid case", c.Original)
		}
		if c.Code != c.Original {
			t.Errorf("valid code changed:\n%q\nbecame\n%q", c.Original, c.Code)
		}
	}
}

// TestTracebackFromPython trims tracebacks Python itself wrote for a snippet
// exec'd by a guard file, as the executor runs it: the guard's frames go,
// the snippet's and the standard library's stay.
func TestTracebackFromPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	dir := t.TempDir()
	guard := dir + "/guard.py"
	prelude := `import os, sys
def _denied(*a, **k):
    raise PermissionError("os.system is disabled")
os.system = _denied
code = sys.stdin.read()
exec(compile(code, "<snippet>", "exec"), {"__name__": "__main__"})
`
	if err := os.WriteFile(guard, []byte(prelude), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, code string
		want       []string // the lines of the trimmed traceback, in order
		gone       string
	}{
		{"zero division", "x = 1\nprint(x / 0)\n", []string{tracebackHeader, `  File "<snippet>", line 2, in <module>`, "ZeroDivisionError: division by zero"}, "guard.py"},
		{"library frame kept", "import json\njson.loads('')\n", []string{tracebackHeader, `  File "<snippet>", line 2, in <module>`, `json/__init__.py", line`, "json.decoder.JSONDecodeError"}, "guard.py"},
		{"guarded call", "import os\nos.system('ls')\n", []string{tracebackHeader, `  File "<snippet>", line 2, in <module>`, "PermissionError: os.system is disabled"}, "guard.py"},
		{"recursion", "def f():\n    f()\nf()\n", []string{tracebackHeader, `  File "<snippet>", line 3, in <module>`, `  File "<snippet>", line 2, in f`, "[Previous line repeated", "RecursionError"}, "guard.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, guard)
			cmd.Stdin = strings.NewReader(tt.code)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err == nil {
				t.Fatal("the snippet did not fail")
			}
			if !strings.Contains(stderr.String(), tt.gone) {
				t.Fatalf("Python's traceback names no %s, the case tests nothing:\n%s", tt.gone, stderr.String())
			}
			got := trimGuardFrames(stderr.String())
			if strings.Contains(got, tt.gone) {
				t.Errorf("%s left in:\n%s", tt.gone, got)
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q missing (in order) from:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}
