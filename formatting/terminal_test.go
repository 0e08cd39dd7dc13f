package formatting

import (
	"strings"
	"testing"

	"github.com/runblock/runblock/executor"
)

func TestEscapeControls(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "plot.png", "plot.png"},
		{"unicode and joiners kept", "données 👩\u200d👩\u200d👧.csv", "données 👩\u200d👩\u200d👧.csv"},
		{"backslash kept", `a\x1b`, `a\x1b`},
		{"OSC title and CSI", "\x1b]0;pwned\x07\x1b[2J.txt", `\x1b]0;pwned\a\x1b[2J.txt`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"C1 NEL", "a\u0085b", `a\u0085b`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"forged line", "a.txt\n2 files not attached", `a.txt\n2 files not attached`},
		{"carriage return and tab", "x\rover\tz", `x\rover\tz`},
		{"right-to-left override", "invoice\u202etxt.exe", `invoice\u202etxt.exe`},
		{"bidi isolates", "a\u2066b\u2069", `a\u2066b\u2069`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := escapeControls(tt.in); got != tt.want {
				t.Errorf("escapeControls(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got := terminalSafe("a\tb\nc\x1b[31md\u202e"); got != "a\tb\nc\\x1b[31md\\u202e" {
		t.Errorf("terminalSafe keeps only newline and tab: %q", got)
	}
}

// TestRenderConsoleNoControls: whatever a snippet puts in its output, its
// error, the names of the files it wrote and the reasons they were left
// out, the console's text (which the console adapter and runblock exec
// print) holds no escape sequence, control character or bidirectional
// override; a name is shown with them escaped.
func TestRenderConsoleNoControls(t *testing.T) {
	hostile := "\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eexe.txt\nforged line\x00\u2028"
	res := executor.Result{
		Stdout: hostile + "\n", Stderr: hostile, Error: "ValueError: " + hostile, ExitCode: 1,
		FilesOmitted: []executor.OmittedFile{{Path: hostile, Size: 10, Reason: "reason " + hostile}},
	}
	opts := RenderOptions{Skipped: []executor.OmittedFile{{Path: "upload" + hostile, Reason: hostile}}}
	for _, p := range platforms {
		text := Render(p, res, opts).Text
		for _, prob := range replyProblems(p, text) {
			t.Errorf("%s: %s\n%s", p, prob, text)
		}
		if p == Console && !strings.Contains(text, `\x1b]0;pwned\a\x1b[2J\u009b31m\u202eexe.txt\nforged line\x00\u2028`) {
			t.Errorf("console: the file name is not shown escaped:\n%s", text)
		}
	}
}
