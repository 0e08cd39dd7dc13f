package formatting

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/runblock/runblock/executor"
)

// fuzzSeeds are outputs that once broke, or nearly broke, a chat renderer.
var fuzzSeeds = []string{
	"",
	"hello\n",
	"```\n@everyone\n```",
	"`` ` ```` `````",
	"<@123> <@!123> <@&123> <#123> @here @everyone",
	"<!channel> <!here> <!everyone> <@U123> <!subteam^S1|@team> &amp; &lt;",
	"\x1b[31mred\x1b[0m\r\n\x00\x07\b\u009b1m",
	"\xff\xfe\xed\xa0\x80",
	"e\u0301\u0301👩\u200d👩\u200d👧🇫🇷❤\ufe0f👍🏽",
	"\u202eevil\u2028\u2029",
	strings.Repeat("<", 800),
	strings.Repeat("`", 700),
	guardTraceback,
	colouredTraceback,
	ansiColours,
	"\x1b[38;5;196;48;2;1;2;3;1;4mx\x1b[22;24;39;49m\x1b[38:2::9:9:9my\x1b[",
}

func fuzzResult(stdout, stderr, errLine string, flags uint8, lines, chars int) (executor.Result, RenderOptions) {
	res := executor.Result{
		Stdout:          stdout,
		Stderr:          stderr,
		Error:           errLine,
		Success:         flags&1 != 0,
		Timeout:         flags&2 != 0,
		MemoryExceeded:  flags&4 != 0,
		OutputLimit:     flags&8 != 0,
		OutputTruncated: flags&16 != 0,
		StdoutBytes:     int64(len(stdout)) * int64(flags>>5),
		StderrBytes:     int64(len(stderr)),
		TimeoutLimit:    time.Duration(flags) * 100 * time.Millisecond,
		MemoryLimit:     int64(flags) << 20,
		Duration:        time.Duration(lines) * time.Microsecond,
	}
	if lines%2 != 0 {
		// The error line doubles as the name of a file left out: the
		// files note shows at most maxNameShown characters of a name, so
		// the reply fits the platform's limit however long the path.
		res.FilesOmitted = []executor.OmittedFile{{Path: errLine, Size: int64(chars), Reason: "over the file count limit"}}
	}
	return res, RenderOptions{MaxLines: lines, MaxChars: chars}
}

func fuzzRender(f *testing.F, p Platform) {
	for i, s := range fuzzSeeds {
		f.Add(s, fuzzSeeds[len(fuzzSeeds)-1-i], s, uint8(i*37), i, i*100)
	}
	f.Fuzz(func(t *testing.T, stdout, stderr, errLine string, flags uint8, lines, chars int) {
		res, opts := fuzzResult(stdout, stderr, errLine, flags, lines, chars)
		reply := Render(p, res, opts)
		for _, prob := range append(replyProblems(p, reply.Text), fullProblems(reply.Full)...) {
			t.Errorf("%s\ntext:\n%s", prob, reply.Text)
		}
		if reply.OK != (res.Outcome() == "ok") {
			t.Errorf("OK = %v for outcome %s", reply.OK, res.Outcome())
		}
	})
}

// FuzzRenderDiscord: for any result the reply stays within 2000 units,
// keeps output inside its code blocks and pings no one.
func FuzzRenderDiscord(f *testing.F) { fuzzRender(f, Discord) }

// FuzzRenderSlack: the same for Slack (3000 units, & < > escaped).
func FuzzRenderSlack(f *testing.F) { fuzzRender(f, Slack) }

// FuzzRenderConsole: no control character reaches the terminal.
func FuzzRenderConsole(f *testing.F) { fuzzRender(f, Console) }

// FuzzExtract: any message yields a consistent extraction, the code of a
// single block survives being fenced again, an info string's attributes
// never run, and an untagged block labelled as output never runs.
func FuzzExtract(f *testing.F) {
	for _, r := range extractRules {
		f.Add(r.text, uint8(r.p), true, false)
	}
	for _, s := range []string{
		"```python\nprint(1)\n```",
		"```py print(1)```",
		"```\n  x = 1\n  print(x)\n```\n```stdin\n5\n```",
		"```js\n1\n```",
		"~~~\nprint(1)\n~~~",
		"`print(1)`",
		"```print(&lt;<http://x|x>&gt;, <@U1>, <!here>)```",
		"```\nprint(\u201chi\u201d)\u00a0\u200b\nprint('\u00a0')\n",
		"````py\n```\n````",
		"```py\r\nx = '''\r\n\u00a0'''\r\n```",
		">>> 1 + 1\n2\n>>> for i in range(2):\n...     print(i)\n...\n0\n1",
		"`` ``` `` and ` `` `\n```py\nprint(1)\n```",
		"   ~~~\n   x = 1\n   ~~~",
		"Output:\n```\n1\n```",
	} {
		for p := range 3 {
			f.Add(s, uint8(p), true, false)
		}
	}
	f.Fuzz(func(t *testing.T, text string, platform uint8, triggered, raw bool) {
		p := Platform(platform % 3)
		ext := Extract(text, ExtractOptions{Platform: p, Triggered: triggered, Raw: raw})
		if ext.Found != (ext.Code != "") {
			t.Fatalf("Found %v with code %q", ext.Found, ext.Code)
		}
		if ext.Found != (ext.Blocks > 0) {
			t.Fatalf("Found %v with %d blocks", ext.Found, ext.Blocks)
		}
		if !ext.Found && ext.Stdin != "" {
			t.Fatalf("stdin %q without code", ext.Stdin)
		}
		if ext.Stdin != "" && !strings.HasSuffix(ext.Stdin, "\n") {
			t.Fatalf("stdin %q does not end with a newline", ext.Stdin)
		}
		if strings.ContainsRune(ext.Code, '\r') || strings.ContainsRune(ext.Stdin, '\r') {
			t.Fatalf("carriage return left in %q / %q", ext.Code, ext.Stdin)
		}
		if ext.Code != strings.TrimRight(ext.Code, " \t\f\v\n") {
			t.Fatalf("trailing whitespace left in %q", ext.Code)
		}
		if first, _, _ := strings.Cut(ext.Code, "\n"); ext.Found && strings.TrimLeft(first, " \t\f\v") == "" {
			t.Fatalf("leading blank line left in %q", ext.Code)
		}
		if utf8.ValidString(text) && (!utf8.ValidString(ext.Code) || !utf8.ValidString(ext.Stdin)) {
			t.Fatalf("valid message gave invalid UTF-8: %q / %q", ext.Code, ext.Stdin)
		}
		seen := map[string]bool{}
		for _, tag := range ext.OtherLanguages {
			if seen[tag] || classify(tag) != kindOther {
				t.Fatalf("bad other languages %q", ext.OtherLanguages)
			}
			seen[tag] = true
		}
		if p != Slack && ext.Blocks == 1 && !strings.Contains(ext.Code, "```") {
			again := Extract("```python\n"+ext.Code+"\n```", ExtractOptions{Platform: p})
			if again.Code != ext.Code {
				t.Fatalf("fenced again:\n%q\nbecame\n%q", ext.Code, again.Code)
			}
		}

		// The text as the body of a block: no fence inside it.
		body := strings.NewReplacer("`", "", "~", "").Replace(text)
		opts := ExtractOptions{Platform: p, Triggered: triggered}
		plain := Extract("```python\n"+body+"\n```", opts)
		for _, info := range []string{` title="fib.py"`, ":src/app.py", " {linenos=true}", " showLineNumbers"} {
			if got := Extract("```python"+info+"\n"+body+"\n```", opts); !reflect.DeepEqual(got, plain) {
				t.Fatalf("info string %q ran or changed the code:\n%#v\nwant\n%#v", info, got, plain)
			}
		}
		untagged := Extract("```\n"+body+"\n```", opts)
		for _, label := range []string{"Output:", "Expected output:", "**Result:**", "You should see:"} {
			msg := "```\n" + body + "\n```\n" + label + "\n```\n=> 42\n" + body + "\n```"
			if got := Extract(msg, opts); !reflect.DeepEqual(got, untagged) {
				t.Fatalf("the block after %q ran or changed the code:\n%#v\nwant\n%#v", label, got, untagged)
			}
		}
	})
}

// FuzzCheckTranscript: whatever the program printed (forged or cut
// markers included), the check does not panic, no marker is left in the
// output, and the reply keeps the renderer's promises.
func FuzzCheckTranscript(f *testing.F) {
	const marker = "\x1erunblock:0123456789abcdef"
	m := "\n" + marker + " "
	for _, s := range []string{"", m + "begin 0\n1\n" + m + "end 0 \n", m + "begin 0\n" + m + "end 0 ValueError: x\n" + m + "begin 1\n```\n@everyone" + m[:9], m + "begin 7\n" + m + "end -1\n" + m} {
		f.Add(s, "1", "@here\n```")
	}
	f.Fuzz(func(t *testing.T, stdout, want0, want1 string) {
		ext := Extraction{Found: true, Code: "x", Blocks: 1, Transcript: &Transcript{Marker: marker, Statements: []Statement{
			{Source: "a\n", Expected: want0, Check: true},
			{Source: want1 + "\n", Expected: want1, Check: true},
		}}}
		plain, c := CheckTranscript(ext.Transcript, stdout)
		if strings.Contains(plain, m) || len(plain) > len(stdout) {
			t.Fatalf("marker left in %q", plain)
		}
		if c.Checked+c.NotReached != 2 || len(c.Differences) > c.Checked {
			t.Fatalf("inconsistent check %+v", c)
		}
		for _, p := range []Platform{Console, Slack, Discord} {
			reply := RenderRun(p, ext, executor.Result{Stdout: stdout, Success: true}, RenderOptions{})
			for _, prob := range replyProblems(p, reply.Text) {
				t.Errorf("%s: %s\ntext:\n%s", p, prob, reply.Text)
			}
		}
	})
}
