package formatting

import (
	"context"
	"encoding/json"
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
