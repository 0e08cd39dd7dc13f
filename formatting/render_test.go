package formatting

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runblock/runblock/executor"
)

var platforms = []Platform{Console, Slack, Discord}

const guardTraceback = `Traceback (most recent call last):
  File "/runblock/guard.py", line 88, in <module>
    _run(_code)
  File "/runblock/guard.py", line 61, in _run
    exec(compile(code, "<snippet>", "exec"), ns)
  File "<snippet>", line 4, in <module>
  File "<snippet>", line 2, in parse
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode
    raise JSONDecodeError("Expecting value", s, err.value) from None
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
`

func lines(n int, format string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format+"\n", i)
	}
	return b.String()
}

var renderCases = []struct {
	name string
	res  executor.Result
	opts RenderOptions
}{
	{"ok", executor.Result{Success: true, Stdout: "hello, world\n", Duration: 42 * time.Millisecond}, RenderOptions{}},
	{"ok_no_output", executor.Result{Success: true, DurationMS: 1500}, RenderOptions{}},
	{"ok_with_stderr", executor.Result{Success: true, Stdout: "3\n", Stderr: "<snippet>:1: DeprecationWarning: old\n", Duration: 2 * time.Second}, RenderOptions{}},
	{"error_traceback", executor.Result{
		Stdout: "parsing\n", Stderr: guardTraceback, ExitCode: 1,
		Error: "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
	}, RenderOptions{}},
	{"error_no_output", executor.Result{
		Stderr: "Traceback (most recent call last):\n  File \"<snippet>\", line 1, in <module>\nZeroDivisionError: division by zero\n",
		Error:  "ZeroDivisionError: division by zero", ExitCode: 1,
	}, RenderOptions{}},
	{"syntax_error", executor.Result{
		Stderr: "  File \"<snippet>\", line 1\n    print(\n         ^\nSyntaxError: '(' was never closed\n",
		Error:  "SyntaxError: '(' was never closed", ExitCode: 1,
	}, RenderOptions{}},
	{"killed_by_signal", executor.Result{Error: "Execution failed", Signal: "SIGSEGV", ExitCode: -11}, RenderOptions{}},
	{"exit_code", executor.Result{Stdout: "bye\n", Error: "Execution failed", ExitCode: 3}, RenderOptions{}},
	{"timeout", executor.Result{Timeout: true, TimeoutLimit: 5 * time.Second, Stdout: lines(3, "tick %d"), Error: "Execution timed out"}, RenderOptions{}},
	{"memory", executor.Result{MemoryExceeded: true, MemoryLimit: 256 << 20, Stderr: "Traceback (most recent call last):\n  File \"<snippet>\", line 1, in <module>\nMemoryError\n", Error: "MemoryError"}, RenderOptions{}},
	{"output_limit", executor.Result{OutputLimit: true, OutputTruncated: true, Stdout: lines(40, "spam %d"), StdoutBytes: 3 << 20}, RenderOptions{}},
	{"output_truncated", executor.Result{Success: true, OutputTruncated: true, Stdout: "x\n", StdoutBytes: 100 << 10, Duration: time.Second}, RenderOptions{}},
	{"long_output", executor.Result{Success: true, Stdout: lines(100, "line %d"), Duration: 300 * time.Millisecond}, RenderOptions{}},
	{"long_line", executor.Result{Success: true, Stdout: strings.Repeat("ab", 1000) + "\nnext\n", Duration: time.Millisecond}, RenderOptions{}},
	{"long_traceback", executor.Result{Stdout: lines(30, "out %d"), Stderr: "Traceback (most recent call last):\n" + strings.Repeat("  File \"<snippet>\", line 1, in f\n", 40) + "RecursionError: maximum recursion depth exceeded\n", Error: "RecursionError: maximum recursion depth exceeded"}, RenderOptions{MaxLines: 10, MaxChars: 600}},
	{"mentions_and_fences", executor.Result{Success: true, Duration: time.Millisecond, Stdout: "@everyone @here @Everyone <@123> <@!123> <@&456> <#789>\n<!channel> <!here> <!everyone> <@U0123> <!subteam^S1|@devs> @channel\n```\n``` js\n`````\nx``\n& &amp; <b>\n"}, RenderOptions{}},
	{"error_line_with_markup", executor.Result{Error: "ValueError: `x` is @everyone <@1> " + strings.Repeat("long ", 100), Stderr: "ValueError: bad\n", ExitCode: 1}, RenderOptions{}},
	{"terminal_output", executor.Result{Success: true, Duration: time.Millisecond, Stdout: "\x1b[31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07\n10%\r50%\r100%\nab\bc\x00\x07\x7f\u009b31mz\ncrlf\r\n\xff\xfe bad \xed\xa0\x80 surrogate\n\u202eevil\u202c\u2028sep\n"}, RenderOptions{}},
	{"escape_heavy", executor.Result{Success: true, Duration: time.Millisecond, Stdout: strings.Repeat("<&>", 500) + "\n" + strings.Repeat("`", 1000) + "\n"}, RenderOptions{}},
	{"files_omitted", executor.Result{Success: true, Stdout: "saved\n", Duration: time.Second, FilesOmitted: []executor.OmittedFile{
		{Path: "big.csv", Size: 12 << 20, Reason: "over the total size limit"}, {Path: "link`@everyone", Reason: "symbolic link, not followed"},
	}}, RenderOptions{Skipped: []executor.OmittedFile{{Path: "huge.bin", Size: 20 << 20, Reason: "over the 8 MiB total"}}}},
	{"files_omitted_many", executor.Result{Success: true, Duration: time.Second, FilesOmitted: []executor.OmittedFile{
		{Path: "a", Size: 1, Reason: "over the file count limit"}, {Path: "b", Size: 2, Reason: "over the file count limit"}, {Path: "c", Reason: "over the file count limit"},
		{Path: "d", Reason: "over the file count limit"}, {Path: "e", Reason: "over the file count limit"}, {Path: "f", Reason: "over the file count limit"}, {Path: "g", Reason: "over the file count limit"},
	}}, RenderOptions{}},
	{"custom_limits", executor.Result{Success: true, Stdout: lines(8, "row %d"), Duration: time.Millisecond}, RenderOptions{MaxLines: 3, MaxChars: 1000}},
	{"ansi_colours", executor.Result{Success: true, Duration: time.Millisecond, Stdout: ansiColours}, RenderOptions{}},
	{"coloured_traceback", executor.Result{Stdout: "parsing\n", Stderr: colouredTraceback, ExitCode: 1,
		Error: "\x1b[1;35mjson.decoder.JSONDecodeError\x1b[0m: \x1b[35mExpecting value: line 1 column 1 (char 0)\x1b[0m",
	}, RenderOptions{}},
	{"ansi_long", executor.Result{Success: true, Duration: time.Millisecond, Stdout: strings.Repeat("\x1b[1;31mr\x1b[0;4;42mg\x1b[0m", 900) + "\n" + lines(30, "\x1b[3%dmline\x1b[0m")}, RenderOptions{MaxLines: 100, MaxChars: 5000}},
}

// ansiColours is terminal output with the SGR codes Discord renders and
// the ones it does not, and other escape sequences.
var ansiColours = "\x1b[31mred\x1b[0m \x1b[1;32mbold green\x1b[22m green\x1b[39m plain\n" +
	"\x1b[4munder\x1b[24m \x1b[44;37mwhite on blue\x1b[49m white\x1b[0m\n" +
	"\x1b[91mbright red\x1b[0m \x1b[38;5;208m256 orange\x1b[0m \x1b[38;2;0;128;255mtruecolour\x1b[0m \x1b[38:2::0:200:0mcolon\x1b[m\n" +
	"\x1b[35mspans\nlines\x1b[0m \x1b[3mitalic\x1b[23m \x1b[7mreverse\x1b[27m \x1b[9mstrike\x1b[0m\n" +
	"\x1b[2K\x1b[1Gcursor \x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[?25lhidden cursor\x1b[?25h\n" +
	"\x1b[32m10%\r\x1b[33m50%\r\x1b[0m100%\n"

// colouredTraceback is stderr as Python 3.13+ writes it with colours on
// (CPython's Lib/traceback.py: File, line and function in magenta, the
// failing expression in red and bold red, the exception type in bold
// magenta and the message in magenta), the runner's frames included.
var colouredTraceback = "Traceback (most recent call last):\n" +
	"  File \x1b[35m\"/runblock/guard.py\"\x1b[0m, line \x1b[35m88\x1b[0m, in \x1b[35m<module>\x1b[0m\n" +
	"    \x1b[31m_run\x1b[0m\x1b[1;31m(_code)\x1b[0m\n" +
	"  File \x1b[35m\"<snippet>\"\x1b[0m, line \x1b[35m4\x1b[0m, in \x1b[35m<module>\x1b[0m\n" +
	"    \x1b[31mparse\x1b[0m\x1b[1;31m(\"\")\x1b[0m\n" +
	"  File \x1b[35m\"/usr/lib/python3.13/json/__init__.py\"\x1b[0m, line \x1b[35m346\x1b[0m, in \x1b[35mloads\x1b[0m\n" +
	"    return \x1b[31m_default_decoder.decode\x1b[0m\x1b[1;31m(s)\x1b[0m\n" +
	"\x1b[1;35mjson.decoder.JSONDecodeError\x1b[0m: \x1b[35mExpecting value: line 1 column 1 (char 0)\x1b[0m\n"

func TestRenderGolden(t *testing.T) {
	for _, tc := range renderCases {
		for _, p := range platforms {
			t.Run(tc.name+"/"+p.String(), func(t *testing.T) {
				reply := Render(p, tc.res, tc.opts)
				for _, prob := range append(replyProblems(p, reply.Text), fullProblems(reply.Full)...) {
					t.Error(prob)
				}
				got := reply.Text + "\n=== ok: " + strconv.FormatBool(reply.OK) + ", reaction: " + reply.Reaction(p) + "\n"
				if reply.Full != "" {
					got += "=== full ===\n" + reply.Full
				}
				golden(t, filepath.Join("render", tc.name+"."+p.String()+".golden"), got)
			})
		}
	}
}

func TestRenderOK(t *testing.T) {
	for _, tt := range []struct {
		res  executor.Result
		want bool
	}{
		{executor.Result{Success: true}, true},
		{executor.Result{}, false},
		{executor.Result{Success: true, Timeout: true}, false},
		{executor.Result{Success: true, MemoryExceeded: true}, false},
		{executor.Result{Success: true, OutputLimit: true}, false},
	} {
		if got := Render(Discord, tt.res, RenderOptions{}).OK; got != tt.want {
			t.Errorf("OK for %+v = %v, want %v", tt.res, got, tt.want)
		}
	}
}

// shown returns the output lines of a rendered Discord reply's first code
// block and the notes after it.
func shown(t *testing.T, text string) (out []string, notes []string) {
	t.Helper()
	_, block, ok := strings.Cut(text, "\n```\n")
	if !ok {
		return nil, strings.Split(text, "\n")[1:]
	}
	body, rest, _ := strings.Cut(block, "\n```")
	for _, n := range strings.Split(rest, "\n") {
		if n != "" {
			notes = append(notes, n)
		}
	}
	return strings.Split(body, "\n"), notes
}

func TestRenderBoundaries(t *testing.T) {
	const maxLines, maxChars = 5, 20
	opts := RenderOptions{MaxLines: maxLines, MaxChars: maxChars}
	tests := []struct {
		name     string
		stdout   string
		wantOut  []string
		wantNote string
		wantFull bool
	}{
		{"N lines fit", "1\n2\n3\n4\n5\n", []string{"1", "2", "3", "4", "5"}, "", false},
		{"N lines without final newline", "1\n2\n3\n4\n5", []string{"1", "2", "3", "4", "5"}, "", false},
		{"N+1 lines cut", "1\n2\n3\n4\n5\n6\n", []string{"1", "2", "3", "4", "5"}, "_… 1 more line_", true},
		{"exactly the character limit", strings.Repeat("x", 20) + "\n", []string{strings.Repeat("x", 20)}, "", false},
		{"one character over", strings.Repeat("x", 21) + "\n", []string{strings.Repeat("x", 20)}, "_… 1 more character_", true},
		{"limit reached across lines", "0123456789\n0123456789\nz\n", []string{"0123456789", "0123456789"}, "_… 1 more line_", true},
		{"line breaks are not counted", "0123456789\n0123456789\n\n\n\n", []string{"0123456789", "0123456789", "", "", ""}, "", false},
		{"line cut and lines left", "0123456789\n0123456789abc\nz\ny\n", []string{"0123456789", "0123456789"}, "_… 3 more characters and 2 more lines_", true},
		{"multi-byte at the cut", strings.Repeat("é", 19) + "日本\n", []string{strings.Repeat("é", 19) + "日"}, "_… 1 more character_", true},
		{"four-byte runes at the cut", strings.Repeat("😀", 21) + "\n", []string{strings.Repeat("😀", 20)}, "_… 1 more character_", true},
		{"combining mark not split", strings.Repeat("x", 19) + "e\u0301\n", []string{strings.Repeat("x", 19)}, "_… 2 more characters_", true},
		{"ZWJ sequence not split", strings.Repeat("x", 18) + "👩\u200d👩\u200d👧\n", []string{strings.Repeat("x", 18)}, "_… 5 more characters_", true},
		{"flag pair not split", strings.Repeat("x", 19) + "🇫🇷\n", []string{strings.Repeat("x", 19)}, "_… 2 more characters_", true},
		{"second flag kept whole", strings.Repeat("x", 17) + "🇫🇷🇩🇪\n", []string{strings.Repeat("x", 17) + "🇫🇷"}, "_… 2 more characters_", true},
		{"variation selector not split", strings.Repeat("x", 19) + "❤\ufe0f\n", []string{strings.Repeat("x", 19)}, "_… 2 more characters_", true},
		{"skin tone not split", strings.Repeat("x", 19) + "👍🏽\n", []string{strings.Repeat("x", 19)}, "_… 2 more characters_", true},
		{"one grapheme longer than the limit is cut at a code point", "e" + strings.Repeat("\u0301", 30) + "\n", []string{"e" + strings.Repeat("\u0301", 19)}, "_… 11 more characters_", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := Render(Discord, executor.Result{Success: true, Stdout: tt.stdout}, opts)
			out, notes := shown(t, reply.Text)
			if strings.Join(out, "\n") != strings.Join(tt.wantOut, "\n") {
				t.Errorf("shown %q, want %q", out, tt.wantOut)
			}
			note := strings.Join(notes, "\n")
			if note != tt.wantNote {
				t.Errorf("note %q, want %q", note, tt.wantNote)
			}
			if (reply.Full != "") != tt.wantFull {
				t.Errorf("full = %q, want it set: %v", reply.Full, tt.wantFull)
			}
			if tt.wantFull && reply.Full != strings.TrimSuffix(tt.stdout, "\n")+"\n" {
				t.Errorf("full = %q, want the whole output", reply.Full)
			}
		})
	}
}

func TestRenderDefaults(t *testing.T) {
	for _, opts := range []RenderOptions{{}, {MaxLines: -1, MaxChars: -5}} {
		reply := Render(Console, executor.Result{Success: true, Stdout: lines(DefaultMaxLines+1, "%d")}, opts)
		if !strings.Contains(reply.Text, "\n15\n… 1 more line") {
			t.Errorf("%+v: defaults not applied:\n%s", opts, reply.Text)
		}
	}
	reply := Render(Console, executor.Result{Success: true, Stdout: strings.Repeat("x", DefaultMaxChars+1)}, RenderOptions{})
	if !strings.HasSuffix(reply.Text, "… 1 more character") {
		t.Errorf("default character limit not applied:\n%s", reply.Text)
	}
}

// TestRenderPlatformLimit: whatever the options, the text fits the platform.
func TestRenderPlatformLimit(t *testing.T) {
	big := RenderOptions{MaxLines: 100000, MaxChars: 100000}
	for _, stdout := range []string{
		lines(5000, "%d"),
		strings.Repeat("\n", 5000) + "x",
		strings.Repeat("😀", 5000),
		strings.Repeat("<>&@", 3000),
		strings.Repeat("`", 5000),
	} {
		for _, p := range []Platform{Slack, Discord} {
			reply := Render(p, executor.Result{Stdout: stdout, Stderr: stdout, Error: strings.Repeat("E", 5000)}, big)
			for _, prob := range replyProblems(p, reply.Text) {
				t.Errorf("%s %.20q: %s", p, stdout, prob)
			}
			if n := utf16Len(reply.Text); n < p.MaxText()/2 {
				t.Errorf("%s %.20q: only %d of %d units used", p, stdout, n, p.MaxText())
			}
			if reply.Full == "" {
				t.Errorf("%s %.20q: full output missing", p, stdout)
			}
		}
	}
}

func TestRenderStderrTail(t *testing.T) {
	stderr := lines(30, "frame %d")
	reply := Render(Discord, executor.Result{Stderr: stderr, Error: "X"}, RenderOptions{MaxLines: 4, MaxChars: 1000})
	if !strings.Contains(reply.Text, "_stderr, last 4 lines of 30_\n```\nframe 27\nframe 28\nframe 29\nframe 30\n```") {
		t.Errorf("tail not kept:\n%s", reply.Text)
	}
	// Stdout and stderr share the budget; the failing stream gets the odd line.
	reply = Render(Console, executor.Result{Stdout: lines(10, "out %d"), Stderr: lines(10, "err %d"), Error: "X"}, RenderOptions{MaxLines: 5, MaxChars: 1000})
	want := "Error · X\nout 1\nout 2\n… 8 more lines\n--- stderr, last 3 lines of 10 ---\nerr 8\nerr 9\nerr 10"
	if reply.Text != want {
		t.Errorf("got\n%s\nwant\n%s", reply.Text, want)
	}
	// Nothing of stderr fits.
	reply = Render(Console, executor.Result{Stdout: lines(10, "out %d"), Stderr: lines(10, "err %d"), Error: "X"}, RenderOptions{MaxLines: 1, MaxChars: 1000})
	if want := "Error · X\n… 10 more lines\n--- stderr, last 1 line of 10 ---\nerr 10"; reply.Text != want {
		t.Errorf("got\n%s\nwant\n%s", reply.Text, want)
	}
	reply = Render(Console, executor.Result{Success: true, Stdout: "out\n", Stderr: lines(10, "err %d")}, RenderOptions{MaxLines: 1, MaxChars: 100})
	if want := "OK · <1 ms\nout\n--- stderr, 10 lines not shown ---"; reply.Text != want {
		t.Errorf("got\n%s\nwant\n%s", reply.Text, want)
	}
	// A short stdout leaves its share to stderr.
	reply = Render(Console, executor.Result{Stdout: "out\n", Stderr: lines(10, "err %d"), Error: "X"}, RenderOptions{MaxLines: 5, MaxChars: 1000})
	if !strings.Contains(reply.Text, "stderr, last 4 lines of 10") {
		t.Errorf("stdout's unused share not given to stderr:\n%s", reply.Text)
	}
}

func TestTrimGuardFrames(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"guard frames dropped, deeper frames kept", guardTraceback, `Traceback (most recent call last):
  File "<snippet>", line 4, in <module>
  File "<snippet>", line 2, in parse
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode
    raise JSONDecodeError("Expecting value", s, err.value) from None
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
`},
		{"no snippet frame: kept whole", "Traceback (most recent call last):\n  File \"/x.py\", line 1, in <module>\nKeyboardInterrupt\n", "Traceback (most recent call last):\n  File \"/x.py\", line 1, in <module>\nKeyboardInterrupt\n"},
		{"chained tracebacks each trimmed", "Traceback (most recent call last):\n  File \"/g.py\", line 1, in <module>\n  File \"<snippet>\", line 2, in <module>\nKeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"/g.py\", line 1, in <module>\n  File \"<snippet>\", line 4, in <module>\nValueError: b\n",
			"Traceback (most recent call last):\n  File \"<snippet>\", line 2, in <module>\nKeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"<snippet>\", line 4, in <module>\nValueError: b\n"},
		{"no traceback", "warning: x\n", "warning: x\n"},
		{"guard frames deeper in the stack dropped too", "Traceback (most recent call last):\n  File \"/runblock/guard.py\", line 9, in <module>\n    exec(code)\n  File \"<snippet>\", line 1, in <module>\n  File \"/runblock/guard.py\", line 30, in _denied\n    raise PermissionError(name)\nPermissionError: os.system is disabled\n",
			"Traceback (most recent call last):\n  File \"<snippet>\", line 1, in <module>\nPermissionError: os.system is disabled\n"},
		{"lines before the first snippet frame dropped", "Traceback (most recent call last):\n  [odd]\n  File \"<snippet>\", line 1, in <module>\nE\n", "Traceback (most recent call last):\n  File \"<snippet>\", line 1, in <module>\nE\n"},
		{"repeated-frame note kept", "Traceback (most recent call last):\n  File \"/g.py\", line 1, in <module>\n  File \"<snippet>\", line 1, in f\n  [Previous line repeated 996 more times]\nRecursionError: x\n", "Traceback (most recent call last):\n  File \"<snippet>\", line 1, in f\n  [Previous line repeated 996 more times]\nRecursionError: x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trimGuardFrames(tt.in); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestCleanOutput(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "a\tb\n", "a\tb\n"},
		{"SGR colours", "\x1b[1;31mred\x1b[0m", "red"},
		{"cursor movement", "a\x1b[2Kb\x1b[10;20Hc", "abc"},
		{"OSC hyperlink with BEL", "\x1b]8;;http://x\x07link\x1b]8;;\x07", "link"},
		{"OSC with ST", "\x1b]0;title\x1b\\text", "text"},
		{"unterminated OSC stops at the line end", "\x1b]0;title\nnext", "\nnext"},
		{"charset designation", "\x1b(Bx", "x"},
		{"lone ESC at the end", "x\x1b", "x"},
		{"C1 CSI", "\u009b31mred", "red"},
		{"NUL and other controls", "a\x00b\x07c\x7fd\u0085e", "abcd\ne"},
		{"carriage return overwrites", "10%\r50%\r100%\n", "100%\n"},
		{"shorter overwrite leaves the rest", "abcdef\rXY\n", "XYcdef\n"},
		{"CRLF", "a\r\nb\r\n", "a\nb\n"},
		{"backspace", "abc\b\bX\n", "aXc\n"},
		{"invalid UTF-8", "a\xffb\xc3", "a\ufffdb\ufffd"},
		{"lone surrogate", "a\xed\xa0\x80b", "a\ufffdb"},
		{"bidi override", "\u202eabc\u202c \u2066x\u2069", "abc x"},
		{"line separators", "a\u2028b\u2029c", "a\nb\nc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cleanOutput(tt.in); got != tt.want {
				t.Errorf("cleanOutput(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNeutralize(t *testing.T) {
	tests := []struct {
		p       Platform
		in      string
		want    string
		comment string
	}{
		{Discord, "@everyone @HERE <@1> <@!2> <@&3> <#4>", "@everyone @HERE <@1> <@!2> <@&3> <#4>", "mentions kept exactly: the adapters disable them"},
		{Discord, "a@b.c <b> & `x` ``y``", "a@b.c <b> & `x` ``y``", "harmless text kept"},
		{Discord, "```", "``\u200b`", "fence broken"},
		{Discord, "x``````y", "x``\u200b``\u200b``y", "long fence broken"},
		{Slack, "<!channel> <@U1> & @here", "&lt;!channel&gt; &lt;@U1&gt; &amp; @here", "escaped, no invisible character"},
		{Slack, "`` ```", "`` ``\u200b`", "only a run that could close the block is broken"},
		{Console, "@everyone ```", "@everyone ```", "console unchanged"},
	}
	for _, tt := range tests {
		if got := neutralize(tt.p, tt.in); got != tt.want {
			t.Errorf("%s %s: neutralize(%q) = %q, want %q", tt.p, tt.comment, tt.in, got, tt.want)
		}
	}
}

func TestRenderError(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&executor.Error{Code: executor.ErrBusy, RetryAfter: 1500 * time.Millisecond}, "**Busy** · too many snippets are waiting; try again in 2 s."},
		{&executor.Error{Code: executor.ErrBusy}, "**Busy** · too many snippets are waiting; try again in a moment."},
		{fmt.Errorf("submit: %w", &executor.Error{Code: executor.ErrRateLimited, RetryAfter: 12 * time.Second}), "**Slow down** · you are running snippets faster than allowed; try again in 12 s."},
		{&executor.Error{Code: executor.ErrRateLimited, RetryAfter: 3 * time.Minute}, "**Slow down** · you are running snippets faster than allowed; try again in 3 min."},
		{executor.Errorf(executor.ErrTooLarge, "code is 2000000 bytes"), "**Too large** · the snippet or its input is over the size limit."},
		{executor.Errorf(executor.ErrShutdown, "closing"), "**Restarting** · the runner is shutting down; try again in a minute."},
		{executor.Errorf(executor.ErrCanceled, ""), "**Canceled** · the run was canceled."},
		{executor.Errorf(executor.ErrUnavailable, "no tier"), "**Unavailable** · running code is switched off here for now."},
		{&executor.Error{Code: executor.ErrUnavailable, Message: "executor unavailable, try again", RetryAfter: 5 * time.Second}, "**Unavailable** · no executor could take the run; try again in 5 s."},
		{executor.Errorf(executor.ErrInternal, "secret path /root/x"), "**Something went wrong** · the run failed on our side; it has been logged."},
		{errors.New("open /etc/secret: denied"), "**Something went wrong** · the run failed on our side; it has been logged."},
	}
	for _, tt := range tests {
		if got := RenderError(Discord, tt.err); got != tt.want {
			t.Errorf("RenderError(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if got := RenderError(Slack, executor.Errorf(executor.ErrBusy, "")); !strings.HasPrefix(got, "*Busy* ·") {
		t.Errorf("slack: %q", got)
	}
	if got := RenderError(Console, executor.Errorf(executor.ErrBusy, "")); !strings.HasPrefix(got, "Busy ·") {
		t.Errorf("console: %q", got)
	}
}

func TestRenderNotice(t *testing.T) {
	for _, p := range platforms {
		for n, name := range map[Notice]string{NoticeNoCode: "no_code", NoticeNotPython: "not_python", NoticeChannelNotAllowed: "channel_not_allowed"} {
			got := RenderNotice(p, n)
			golden(t, filepath.Join("notice", name+"."+p.String()+".golden"), got+"\n")
			if probs := replyProblems(p, got); len(probs) > 0 {
				t.Errorf("%s notice %d: %v", p, n, probs)
			}
		}
	}
}

func TestRenderProgress(t *testing.T) {
	tests := []struct {
		p    Platform
		pr   executor.Progress
		want string
	}{
		{Discord, executor.Progress{State: executor.StateQueued, Ahead: 2}, "_Queued, 2 ahead…_"},
		{Slack, executor.Progress{State: executor.StateQueued}, "_Queued, next up…_"},
		{Console, executor.Progress{State: executor.StateRunning, Ahead: 3}, "Running…"},
	}
	for _, tt := range tests {
		if got := RenderProgress(tt.p, tt.pr); got != tt.want {
			t.Errorf("RenderProgress(%s, %+v) = %q, want %q", tt.p, tt.pr, got, tt.want)
		}
	}
}

func TestReactions(t *testing.T) {
	if got := (Reply{OK: true}).Reaction(Slack); got != "white_check_mark" {
		t.Error(got)
	}
	if got := (Reply{}).Reaction(Slack); got != "x" {
		t.Error(got)
	}
	if got := (Reply{OK: true}).Reaction(Discord); got != "✅" {
		t.Error(got)
	}
	if got := (Reply{}).Reaction(Discord); got != "❌" {
		t.Error(got)
	}
	if RunningReaction(Slack) != "hourglass_flowing_sand" || RunningReaction(Discord) != "⏳" {
		t.Error("running reaction")
	}
}

func TestDurationText(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "<1 ms"},
		{400 * time.Microsecond, "<1 ms"},
		{time.Millisecond, "1 ms"},
		{999 * time.Millisecond, "999 ms"},
		{time.Second, "1 s"},
		{1500 * time.Millisecond, "1.5 s"},
	}
	for _, tt := range tests {
		if got := DurationText(tt.d); got != tt.want {
			t.Errorf("DurationText(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestSubMillisecondRunOnEveryPlatform: a run under a millisecond reads
// "<1 ms" in the reply of each platform, not "0 ms".
func TestSubMillisecondRunOnEveryPlatform(t *testing.T) {
	res := executor.Result{Success: true, Stdout: "2\n", Duration: 400 * time.Microsecond}
	for p, want := range map[Platform]string{Console: "OK · <1 ms", Discord: "**OK** · <1 ms", Slack: "*OK* · &lt;1 ms"} {
		if got := Render(p, res, RenderOptions{MaxLines: 5, MaxChars: 100}).Text; !strings.HasPrefix(got, want+"\n") {
			t.Errorf("%s reply %q, want it to start %q", p, got, want)
		}
	}
}
