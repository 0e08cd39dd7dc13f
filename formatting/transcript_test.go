package formatting

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

// llmSession is an LLM's claimed REPL session: two of its outputs are not
// what Python prints.
const llmSession = "Sure! Floating point in Python is exact for these:\n\n```pycon\n>>> 0.1 + 0.2\n0.3\n>>> sorted({3, 1, 2})\n[1, 2, 3]\n>>> \"abc\".upper()\n'ABC'\n>>> class Point:\n...     def __init__(self, x):\n...         self.x = x\n...\n>>> Point(1)\n<__main__.Point object at 0x7f3a2c1b9d90>\n>>> int(\"42abc\")\n42\n>>> for i in range(2):\n...     print(i)\n...\n0\n1\n>>> print(\"done\", end=\"\")\ndone\n```"

// runPython runs code as the guard does (compiled as <snippet> in a fresh
// __main__), without a sandbox: the transcript code is ordinary Python.
func runPython(t *testing.T, code string) executor.Result {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-c", `import sys
src = sys.stdin.read()
exec(compile(src, "<snippet>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})`)
	cmd.Stdin = strings.NewReader(code)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return executor.Result{Stdout: stdout.String(), Stderr: stderr.String(), Success: err == nil, Duration: 20 * time.Millisecond}
}

// TestTranscriptCheckWithPython runs an LLM's claimed session in Python and
// checks that the reply names exactly the statements whose output differs.
func TestTranscriptCheckWithPython(t *testing.T) {
	ext := Extract(llmSession, ExtractOptions{Platform: Discord})
	if ext.Transcript == nil {
		t.Fatal("no transcript")
	}
	res := runPython(t, ext.Code)
	if !res.Success {
		t.Fatalf("the transcript program failed:\n%s", res.Stderr)
	}
	plain, check := CheckTranscript(ext.Transcript, res.Stdout)
	if strings.Contains(plain, "runblock:") || strings.ContainsRune(plain, '\x1e') {
		t.Errorf("marker left in the output:\n%q", plain)
	}
	if want := "0.30000000000000004\n[1, 2, 3]\n'ABC'\n<__main__.Point object at "; !strings.HasPrefix(plain, want) {
		t.Errorf("output %q, want it to start with %q", plain, want)
	}
	if !strings.HasSuffix(plain, "0\n1\ndone") {
		t.Errorf("output %q does not end with the loop's and the last print's output", plain)
	}
	var differ []string
	for _, d := range check.Differences {
		differ = append(differ, strings.TrimSpace(d.Source))
	}
	if want := []string{"0.1 + 0.2", `int("42abc")`}; !reflect.DeepEqual(differ, want) {
		t.Errorf("differences %q, want %q", differ, want)
	}
	if check.Checked != 8 || check.NotReached != 0 {
		t.Errorf("checked %d, not reached %d; want 8, 0", check.Checked, check.NotReached)
	}
	if got := check.Differences[1].Got; len(got) != 1 || !strings.HasPrefix(got[0], "ValueError: invalid literal for int()") {
		t.Errorf("the exception is not what was got: %q", got)
	}
	for _, p := range platforms {
		reply := RenderRun(p, ext, res, RenderOptions{})
		// The object's address changes from run to run.
		golden(t, filepath.Join("render", "transcript_check."+p.String()+".golden"), hexAddress().ReplaceAllString(reply.Text, "0x…")+"\n")
		if probs := replyProblems(p, reply.Text); len(probs) > 0 {
			t.Errorf("%s: %v\n%s", p, probs, reply.Text)
		}
		if strings.Contains(reply.Text, "runblock:") {
			t.Errorf("%s: marker in the reply:\n%s", p, reply.Text)
		}
	}
}

// TestTranscriptBlocksShareState: code and several transcript blocks run as
// one program in one namespace, the statements numbered on across blocks.
func TestTranscriptBlocksShareState(t *testing.T) {
	text := "```python\ndef double(x):\n    return 2 * x\n```\nThen:\n```pycon\n>>> n = double(21)\n>>> n\n42\n```\nand later\n```pycon\n>>> n + 1\n44\n>>> _\n43\n```"
	ext := Extract(text, ExtractOptions{Platform: Slack})
	if ext.Blocks != 3 || ext.Transcript == nil || len(ext.Transcript.Statements) != 4 {
		t.Fatalf("extraction %#v", ext)
	}
	res := runPython(t, ext.Code)
	if !res.Success {
		t.Fatalf("failed:\n%s", res.Stderr)
	}
	plain, c := CheckTranscript(ext.Transcript, res.Stdout)
	if plain != "42\n43\n43\n" {
		t.Errorf("output %q", plain)
	}
	if c.Checked != 4 || len(c.Differences) != 1 || c.Differences[0].Statement != 2 {
		t.Errorf("check %+v, want statement 2 (n + 1) to differ", c)
	}
}

func TestCheckTranscript(t *testing.T) {
	tr := &Transcript{Marker: "\x1erunblock:m", Statements: []Statement{
		{Source: "x\n", Expected: "1", Check: true},
		{Source: "y\n", Expected: "2", Check: true},
		{Source: "z\n", Expected: "3", Check: true},
	}}
	m := "\n\x1erunblock:m "
	tests := []struct {
		name       string
		stdout     string
		plain      string
		differ     []int
		notReached int
	}{
		{"all match", "before" + m + "begin 0\n1\n" + m + "end 0 \n" + m + "begin 1\n2" + m + "end 1 \n" + m + "begin 2\n3\n" + m + "end 2 \nafter", "before1\n23\nafter", nil, 0},
		{"one differs", m + "begin 0\n1\n" + m + "end 0 \n" + m + "begin 1\n5\n" + m + "end 1 \n" + m + "begin 2\n3\n" + m + "end 2 \n", "1\n5\n3\n", []int{1}, 0},
		{"exception differs", m + "begin 0\n" + m + "end 0 NameError: name 'x' is not defined\n" + m + "begin 1\n2\n" + m + "end 1 \n" + m + "begin 2\n3\n" + m + "end 2 \n", "2\n3\n", []int{0}, 0},
		{"cut by the output limit", m + "begin 0\n1\n" + m + "end 0 \n" + m + "begin 1\n2\n" + m[:5], "1\n2\n", nil, 2},
		{"cut inside a marker line", m + "begin 0\n1\n" + m + "end 0 \n" + m + "beg", "1\n", nil, 2},
		{"forged marker index ignored", m + "begin 9\n" + m + "begin 0\n1\n" + m + "end 0 \n", "1\n", nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain, c := CheckTranscript(tr, tt.stdout)
			if plain != tt.plain {
				t.Errorf("plain %q, want %q", plain, tt.plain)
			}
			var differ []int
			for _, d := range c.Differences {
				differ = append(differ, d.Statement)
			}
			if !reflect.DeepEqual(differ, tt.differ) || c.NotReached != tt.notReached {
				t.Errorf("differences %v, not reached %d; want %v, %d", differ, c.NotReached, tt.differ, tt.notReached)
			}
		})
	}
}

func TestComparable(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1  \n\n", "1"},
		{"<A object at 0x7f00aa11>", "<A object at 0x…>"},
		{"a\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nZeroDivisionError: division by zero", "a\nZeroDivisionError: division by zero"},
		{"  File \"<stdin>\", line 1\n    1 +\n       ^\nSyntaxError: invalid syntax", "SyntaxError: invalid syntax"},
	}
	for _, tt := range tests {
		if got := strings.Join(comparable(tt.in), "\n"); got != tt.want {
			t.Errorf("comparable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestTranscriptNoteFits: many long differences stay within the platform's
// limit, the note bounded and the output shrunk to make room.
func TestTranscriptNoteFits(t *testing.T) {
	var stmts []Statement
	var out strings.Builder
	marker := "\x1erunblock:x"
	for i := range 40 {
		stmts = append(stmts, Statement{Source: strings.Repeat("`<&", 40) + "\n", Expected: strings.Repeat("<`@everyone", 30) + "\nline2\nline3", Check: true})
		out.WriteString("\n" + marker + " begin " + strconv.Itoa(i) + "\n" + strings.Repeat("&>`", 300) + "\n\n" + marker + " end " + strconv.Itoa(i) + " \n")
	}
	ext := Extraction{Found: true, Code: "x", Blocks: 1, Transcript: &Transcript{Statements: stmts, Marker: marker}}
	for _, p := range platforms {
		reply := RenderRun(p, ext, executor.Result{Stdout: out.String(), Success: true}, RenderOptions{})
		if probs := replyProblems(p, reply.Text); len(probs) > 0 {
			t.Errorf("%s: %v\n%s", p, probs, reply.Text)
		}
		if !strings.Contains(reply.Text, "40 of 40 statements") || !strings.Contains(reply.Text, "more differences") {
			t.Errorf("%s: the note does not count the differences:\n%s", p, reply.Text)
		}
	}
}
